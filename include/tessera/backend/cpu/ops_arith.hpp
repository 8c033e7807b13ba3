// CPU implementations of add1, add_id, acc, set, diag, tri, solve_tri, cumsum,
// repeat_back, group_norm and the xielu unary (builders in graph/ops/arith.hpp,
// graph/ops/norm.hpp, graph/ops/elementwise.hpp). Each computes on f32 rows (rows.hpp
// converts f16/bf16 and gathers strided operands) and splits its rows between the
// node's threads; acc and set first copy a into the result (unless they run in place),
// then, after a barrier, write b's rows into the view.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

namespace arith_detail {
inline std::size_t pad16(std::int64_t n) noexcept { return (static_cast<std::size_t>(n) + 15) / 16 * 16; }
}  // namespace arith_detail

// Empty when supported (see unsupported_reason in backend/cpu/ops.hpp).
inline std::string arith_unsupported_reason(const node& n) {
    const node& a = *n.src[0];
    const std::string name(op_name(n.op));
    if (!is_float(a.lay.type) && n.op != op_kind::set)
        return name + " on " + std::string(type_name(a.lay.type));
    if (n.op == op_kind::add1 || n.op == op_kind::acc) {
        if (!is_float(n.src[1]->lay.type)) return name + " with b of " + std::string(type_name(n.src[1]->lay.type));
    }
    if (n.op == op_kind::solve_tri) {
        const auto& sp = n.param<solve_tri_params>();
        if (!sp.left || !sp.lower || sp.uni)
            return "solve_tri other than left, lower, non-unit diagonal (ggml's CPU solves only that form)";
    }
    if (n.op == op_kind::set) {
        const type_id ta = a.lay.type, tb = n.src[1]->lay.type;
        if (!(is_float(ta) && is_float(tb)) && !(ta == tb && block_size(ta) == 1))
            return "set of " + std::string(type_name(tb)) + " into " + std::string(type_name(ta));
    }
    return {};
}

namespace impl {

inline void add1(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& k = *p.k;
    const float s = read_scalar(b.lay.type, b.bytes());
    map_rows(d, a, p, [&](const float* x, float* z, std::int64_t, std::int64_t, std::int64_t) {
        k.scale(x, z, static_cast<std::size_t>(d.lay.ne[0]), 1.f, s);
    });
}

// out[:, i1, i2] = a[:, i1, i2] + b[:, ids[i1, i2]]
inline void add_id(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const node& ids = *d.src[2];
    const auto& k = *p.k;
    float* bufb = reinterpret_cast<float*>(p.scratch) + 2 * arith_detail::pad16(d.lay.ne[0]);  // after map_rows' two rows
    map_rows(d, a, p, [&](const float* x, float* z, std::int64_t i1, std::int64_t i2, std::int64_t) {
        std::int32_t e;
        std::memcpy(&e, ids.bytes() + static_cast<std::size_t>(i1) * ids.lay.nb[0] + static_cast<std::size_t>(i2) * ids.lay.nb[1], 4);
        if (e < 0 || e >= b.lay.ne[1])
            fail(errc::invalid_argument, "add_id: expert id " + std::to_string(e) + " at (" + std::to_string(i1) + ", " + std::to_string(i2) +
                                             ") is outside the " + std::to_string(b.lay.ne[1]) + " rows of b");
        k.binary(kernels::binary_kind::add, x, load_row(k, b, e, 0, 0, bufb), z, static_cast<std::size_t>(d.lay.ne[0]), false);
    });
}

// xielu with the factors the builder stored (unary_params): a scalar loop, as the unary
// kernels carry two parameters and this op has four.
inline void xielu(const node& d, const exec_params& p) {
    const auto& up = d.param<unary_params>();
    map_rows(d, *d.src[0], p, [&](const float* x, float* z, std::int64_t, std::int64_t, std::int64_t) {
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) {
            const float v = x[i];
            z[i] = v > 0.f ? up.alpha_p * v * v + up.beta * v : (std::expm1(std::min(v, up.eps)) - v) * up.alpha_n + up.beta * v;
        }
    });
}

// Forward substitution for A X = B, A lower triangular: row i of X is
// (B[i] - sum_{t<i} A[i][t] X[t]) / A[i][i]. Work items are (batch, block of up to 16
// right-hand sides); each block walks the rows in order, accumulating in double and
// reading the rows of X it already wrote.
inline constexpr std::int64_t solve_tri_block = 16;
inline void solve_tri(const node& d, const exec_params& p) {
    const node& A = *d.src[0];
    const node& B = *d.src[1];
    const std::int64_t k = d.lay.ne[0], n = d.lay.ne[1];
    const std::int64_t blocks = (k + solve_tri_block - 1) / solve_tri_block;
    const auto f32 = [](const node& t, std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) -> float& {
        return *reinterpret_cast<float*>(row_ptr(t, i1, i2, i3) + static_cast<std::size_t>(i0) * t.lay.nb[0]);
    };
    const auto [w0, w1] = p.split(blocks * d.lay.ne[2] * d.lay.ne[3]);
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t blk = w % blocks, i2 = (w / blocks) % d.lay.ne[2], i3 = w / blocks / d.lay.ne[2];
        const std::int64_t c0 = blk * solve_tri_block, nc = std::min(solve_tri_block, k - c0);
        double acc[solve_tri_block];
        for (std::int64_t i = 0; i < n; ++i) {
            for (std::int64_t c = 0; c < nc; ++c) acc[c] = f32(B, c0 + c, i, i2, i3);
            for (std::int64_t t = 0; t < i; ++t) {
                const double a = f32(A, t, i, i2, i3);
                for (std::int64_t c = 0; c < nc; ++c) acc[c] -= a * f32(d, c0 + c, t, i2, i3);
            }
            const double diag = f32(A, i, i, i2, i3);
            for (std::int64_t c = 0; c < nc; ++c) f32(d, c0 + c, i, i2, i3) = static_cast<float>(acc[c] / diag);
        }
    }
}

// acc and set. Both a and the result are contiguous with one layout.
inline void acc_set(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& sp = d.param<set_params>();
    if (d.bytes() != a.bytes()) {  // not in place: the result starts as a copy of a
        const auto total = static_cast<std::int64_t>(d.lay.nbytes());
        const auto [c0, c1] = p.split(total);
        if (c1 > c0) std::memcpy(d.bytes() + c0, a.bytes() + c0, static_cast<std::size_t>(c1 - c0));
        p.barrier();
    }
    const type_id td = d.lay.type, tb = b.lay.type;
    const auto es = static_cast<std::size_t>(type_size(td));
    const bool acc = d.op == op_kind::acc;
    const auto [r0, r1] = p.split(b.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(b.lay, r);
        const std::byte* src = row_ptr(b, i1, i2, i3);
        std::byte* dst = d.bytes() + sp.offset + static_cast<std::size_t>(i1) * sp.nb1 + static_cast<std::size_t>(i2) * sp.nb2 +
                         static_cast<std::size_t>(i3) * sp.nb3;
        for (std::int64_t i = 0; i < b.lay.ne[0]; ++i) {
            const std::byte* s = src + static_cast<std::size_t>(i) * b.lay.nb[0];
            std::byte* o = dst + static_cast<std::size_t>(i) * es;
            if (acc) write_scalar(td, o, read_scalar(td, o) + read_scalar(tb, s));
            else if (td == tb) std::memcpy(o, s, es);
            else write_scalar(td, o, read_scalar(tb, s));
        }
    }
}

inline void diag(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    float* bufd = reinterpret_cast<float*>(p.scratch);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        std::fill(z, z + d.lay.ne[0], 0.f);
        z[i1] = read_scalar(a.lay.type, a.bytes() + a.lay.offset_of(i1, 0, i2, i3));
        store_f32(k, d.lay.type, drow, d.lay.nb[0], d.lay.ne[0], z);
    }
}

inline void tri(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const tri_type t = d.param<tri_params>().type;
    map_rows(d, a, p, [&](const float* x, float* z, std::int64_t i1, std::int64_t, std::int64_t) {
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) {
            const bool keep = t == tri_type::upper_diag ? i >= i1 : t == tri_type::upper ? i > i1 : t == tri_type::lower_diag ? i <= i1 : i < i1;
            z[i] = keep ? x[i] : 0.f;
        }
    });
}

inline void cumsum(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    map_rows(d, a, p, [&](const float* x, float* z, std::int64_t, std::int64_t, std::int64_t) {
        double s = 0;
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) z[i] = static_cast<float>(s += static_cast<double>(x[i]));
    });
}

// Each result row sums the rows of a that tile onto it, in double.
inline void repeat_back(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    const std::int64_t n0 = d.lay.ne[0];
    const std::int64_t t0 = a.lay.ne[0] / n0, t1 = a.lay.ne[1] / d.lay.ne[1], t2 = a.lay.ne[2] / d.lay.ne[2],
                       t3 = a.lay.ne[3] / d.lay.ne[3];
    auto* acc = reinterpret_cast<double*>(p.scratch);                         // [n0] doubles = 2 rows of floats
    float* bufa = reinterpret_cast<float*>(p.scratch) + 2 * arith_detail::pad16(n0);  // [a.ne0]
    float* bufd = bufa + arith_detail::pad16(a.lay.ne[0]);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [j1, j2, j3] = unravel_row(d.lay, r);
        std::fill(acc, acc + n0, 0.0);
        for (std::int64_t k3 = 0; k3 < t3; ++k3)
            for (std::int64_t k2 = 0; k2 < t2; ++k2)
                for (std::int64_t k1 = 0; k1 < t1; ++k1) {
                    const float* x = load_row(k, a, j1 + k1 * d.lay.ne[1], j2 + k2 * d.lay.ne[2], j3 + k3 * d.lay.ne[3], bufa);
                    for (std::int64_t k0 = 0; k0 < t0; ++k0)
                        for (std::int64_t i = 0; i < n0; ++i) acc[i] += static_cast<double>(x[k0 * n0 + i]);
                }
        std::byte* drow = row_ptr(d, j1, j2, j3);
        float* z = out_f32(d, drow, bufd);
        for (std::int64_t i = 0; i < n0; ++i) z[i] = static_cast<float>(acc[i]);
        store_f32(k, d.lay.type, drow, d.lay.nb[0], n0, z);
    }
}

// Work items are (group, ne3 slice) pairs; three passes over the group's rows: mean,
// variance of x - mean, then (x - mean)/sqrt(var + eps) written out.
inline void group_norm(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    const auto& gp = d.param<group_norm_params>();
    const std::int64_t ne0 = a.lay.ne[0], ne1 = a.lay.ne[1], ne2 = a.lay.ne[2];
    const auto n = static_cast<std::size_t>(ne0);
    const std::int64_t per_group = (ne2 + gp.n_groups - 1) / gp.n_groups;
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufd = bufa + arith_detail::pad16(ne0);
    const auto [w0, w1] = p.split(static_cast<std::int64_t>(gp.n_groups) * a.lay.ne[3]);
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t g = w % gp.n_groups, i3 = w / gp.n_groups;
        const std::int64_t c0 = g * per_group, c1 = std::min(ne2, c0 + per_group);
        if (c1 <= c0) continue;
        const double count = static_cast<double>(ne0 * ne1 * (c1 - c0));
        double sum = 0;
        for (std::int64_t i2 = c0; i2 < c1; ++i2)
            for (std::int64_t i1 = 0; i1 < ne1; ++i1) sum += k.sum(load_row(k, a, i1, i2, i3, bufa), n);
        const auto mean = static_cast<float>(sum / count);
        double sq = 0;
        for (std::int64_t i2 = c0; i2 < c1; ++i2)
            for (std::int64_t i1 = 0; i1 < ne1; ++i1) {
                k.scale(load_row(k, a, i1, i2, i3, bufa), bufd, n, 1.f, -mean);
                sq += k.sumsq(bufd, n);
            }
        const auto scale = static_cast<float>(1.0 / std::sqrt(sq / count + static_cast<double>(gp.eps)));
        for (std::int64_t i2 = c0; i2 < c1; ++i2)
            for (std::int64_t i1 = 0; i1 < ne1; ++i1) {
                const float* x = load_row(k, a, i1, i2, i3, bufa);
                std::byte* drow = row_ptr(d, i1, i2, i3);
                float* z = out_f32(d, drow, bufd);
                k.scale(x, z, n, 1.f, -mean);
                k.scale(z, z, n, scale, 0.f);
                store_f32(k, d.lay.type, drow, d.lay.nb[0], ne0, z);
            }
    }
}

}  // namespace impl
}  // namespace backend::cpu
TESSERA_END_NAMESPACE
