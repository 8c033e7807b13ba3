// CPU implementations of out_prod and mul_mat_id (builders in graph/ops/matmul.hpp and
// graph/ops/products.hpp).
//
// out_prod: each result row n is sum_k b[n, k] * (row k of a), accumulated with axpy
// over a's rows as f32 (f16/bf16 converted, block types dequantized).
//
// mul_mat_id runs the kernels of mul_mat on the columns grouped by expert: thread 0
// sorts the (u, t) slots by expert id (a counting sort, so the grouping is stable);
// then every slot's b row is converted once, in grouped order, to what the weights need
// (packed f32 rows for f32/f16/bf16 weights, rows of the dot-partner blocks for block
// types, as mul_mat does; for an expert with at least kernels::qgemm_min_cols slots and a block
// type with a packed GEMM, also packed as kernels/quant/gemm.hpp reads them); then the
// work is (expert, chunk of 64 weight rows) items: float weights go through the f32 GEMM
// against up to 64 grouped columns at a time (the weight chunk converted to f32 once per
// item), block weights through the packed quantized GEMM (experts with enough slots) or
// the type's SIMD gemv kernel per column (the scalar vec_dot reference for types without
// kernels).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/kernels/quant/table.hpp"
#include "tessera/quant/reference.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

namespace products_detail {
inline std::size_t align64(std::size_t x) noexcept { return (x + 63) / 64 * 64; }
inline constexpr std::int64_t id_rows = 64;  // weight rows per work item
inline constexpr std::int64_t id_cols = 64;  // columns per f32 GEMM call

// Bytes of one converted b row of mul_mat_id.
inline std::size_t id_row_bytes(const node& as) {
    const std::int64_t K = as.lay.ne[0];
    if (is_quantized(as.lay.type)) return static_cast<std::size_t>(row_size(quant::dot_partner_type(as.lay.type), K));
    return static_cast<std::size_t>(K) * 4;
}
struct id_shared {
    std::int64_t* off;     // [n_expert + 1] start of each expert's slots in grouped order
    std::int64_t* next;    // [n_expert] fill positions while grouping
    std::int32_t* slots;   // [n_used * T] slot t * n_used + u, grouped by expert
    std::byte* rows;       // [n_used * T] converted b rows, grouped order
    std::byte* packed;     // [n_used * T] rows packed for the quantized GEMM, grouped order (null: no GEMM for the type)
};
// Bytes of one row packed for the quantized GEMM (0: the weights' type has none).
inline std::size_t id_packed_row_bytes(const node& as) {
    return kernels::qgemm_supported(as.lay.type) ? kernels::qgemm_act_row_bytes(as.lay.type, as.lay.ne[0]) : 0;
}
inline std::size_t id_shared_bytes(const node& d, id_shared* out, std::byte* base) {
    const node& as = *d.src[0];
    const node& ids = *d.src[2];
    const auto n_exp = static_cast<std::size_t>(as.lay.ne[2]);
    const auto total = static_cast<std::size_t>(ids.lay.ne[0] * ids.lay.ne[1]);
    const std::size_t a = align64((2 * n_exp + 1) * 8), b = align64(total * 4), c = align64(total * id_row_bytes(as));
    const std::size_t e = align64(total * id_packed_row_bytes(as));
    if (out)
        *out = {reinterpret_cast<std::int64_t*>(base), reinterpret_cast<std::int64_t*>(base) + n_exp + 1,
                reinterpret_cast<std::int32_t*>(base + a), base + a + b, e ? base + a + b + c : nullptr};
    return a + b + c + e;
}
}  // namespace products_detail

inline std::string products_unsupported_reason(const node& n) {
    const type_id ta = n.src[0]->lay.type;
    const std::string name(op_name(n.op));
    if (n.op == op_kind::out_prod) {
        if (is_float(ta) || (is_quantized(ta) && quant::can_dequantize(ta))) return {};
        return "out_prod with " + std::string(type_name(ta)) + " a (no dequantize kernel for this type yet)";
    }
    if (is_float(ta)) return {};
    if (is_quantized(ta) && quant::can_dequantize(ta) && quant::can_quantize(quant::dot_partner_type(ta))) return {};
    return name + " with " + std::string(type_name(ta)) + " weights (no vec_dot kernel for this type yet)";
}

// {per-thread, shared} scratch bytes of mul_mat_id.
inline std::pair<std::size_t, std::size_t> mul_mat_id_scratch(const node& d) {
    using namespace products_detail;
    const node& as = *d.src[0];
    const auto K = static_cast<std::size_t>(as.lay.ne[0]);
    std::size_t per_thread = align64((K + 16) * 4);  // one f32 row (block weights: b rows before quantizing)
    if (kernels::qgemm_supported(as.lay.type))  // the quantized GEMM's output block and decoded weight panel
        per_thread += align64(static_cast<std::size_t>(id_cols * id_rows) * 4) + align64(kernels::qgemm_work_bytes(as.lay.type, as.lay.ne[0]));
    if (!is_quantized(as.lay.type)) {
        per_thread = align64(static_cast<std::size_t>(id_cols * id_rows) * 4);  // GEMM output block
        if (as.lay.type != type_id::f32 || as.lay.nb[0] != 4) per_thread += align64(static_cast<std::size_t>(id_rows) * K * 4);
    }
    return {per_thread, id_shared_bytes(d, nullptr, nullptr)};
}

namespace impl {

inline void out_prod(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& k = *p.k;
    const std::int64_t M = a.lay.ne[0], K = a.lay.ne[1];
    const std::int64_t r2 = b.lay.ne[2] / a.lay.ne[2], r3 = b.lay.ne[3] / a.lay.ne[3];
    const bool blocks = is_quantized(a.lay.type);
    float* buf = reinterpret_cast<float*>(p.scratch);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [n, i2, i3] = unravel_row(d.lay, r);
        auto* z = reinterpret_cast<float*>(row_ptr(d, n, i2, i3));
        std::fill(z, z + M, 0.f);
        for (std::int64_t kk = 0; kk < K; ++kk) {
            const float bv = read_scalar(type_id::f32, b.bytes() + b.lay.offset_of(n, kk, i2, i3));
            const float* x;
            if (blocks) {
                quant::dequantize_row(a.lay.type, row_ptr(a, kk, i2 / r2, i3 / r3), buf, M);
                x = buf;
            } else {
                x = load_row(k, a, kk, i2 / r2, i3 / r3, buf);
            }
            k.axpy(bv, x, z, static_cast<std::size_t>(M));
        }
    }
}

namespace products_impl {

// Phase 2 of mul_mat_id for block-type weights B: out[m0 .. m0+ml, slot] for every slot of expert e.
template <class B>
void id_block_item(const node& d, const exec_params& p, const products_detail::id_shared& sh, std::int64_t e, std::int64_t m0,
                   std::int64_t ml) {
    using P = typename quant::block_traits<B>::dot_partner;
    const node& as = *d.src[0];
    const std::int64_t K = as.lay.ne[0], n_used = d.lay.ne[1];
    const std::size_t qrow = products_detail::id_row_bytes(as);
    const auto* x = reinterpret_cast<const B*>(row_ptr(as, m0, e, 0));
    if constexpr (kernels::has_qgemm<B>) {
        if (sh.off[e + 1] - sh.off[e] >= kernels::qgemm_min_cols) {  // the packed GEMM, id_cols slots at a time
            using products_detail::align64, products_detail::id_cols, products_detail::id_rows;
            const auto gemm = simd::kernel_for<kernels::quant_kernels<B>::template gemm>(p.k->arch);
            const std::size_t prow = products_detail::id_packed_row_bytes(as);
            auto* cbuf = reinterpret_cast<float*>(p.scratch + align64(static_cast<std::size_t>(K + 16) * 4));
            std::byte* work = reinterpret_cast<std::byte*>(cbuf) + align64(static_cast<std::size_t>(id_cols * id_rows) * 4);
            for (std::int64_t j0 = sh.off[e]; j0 < sh.off[e + 1]; j0 += id_cols) {
                const std::int64_t nc = std::min(id_cols, sh.off[e + 1] - j0);
                gemm(K, ml, nc, x, as.lay.nb[1], sh.packed + static_cast<std::size_t>(j0) * prow, prow, cbuf, static_cast<std::size_t>(ml), work);
                for (std::int64_t jj = 0; jj < nc; ++jj) {  // column jj of the block is slot j0 + jj's output rows m0 ..
                    const std::int32_t s = sh.slots[j0 + jj];
                    float* o = reinterpret_cast<float*>(row_ptr(d, s % n_used, s / n_used, 0)) + m0;
                    std::memcpy(o, cbuf + jj * ml, static_cast<std::size_t>(ml) * 4);
                }
            }
            return;
        }
    }
    for (std::int64_t j = sh.off[e]; j < sh.off[e + 1]; ++j) {
        const std::int32_t s = sh.slots[j];
        float* o = reinterpret_cast<float*>(row_ptr(d, s % n_used, s / n_used, 0)) + m0;
        const auto* y = reinterpret_cast<const P*>(sh.rows + static_cast<std::size_t>(j) * qrow);
        if constexpr (kernels::has_gemv<B>) {
            const auto gemv = simd::kernel_for<kernels::quant_kernels<B>::template gemv>(p.k->arch);
            gemv(K, ml, x, as.lay.nb[1], y, o);
        } else {
            for (std::int64_t m = 0; m < ml; ++m)
                o[m] = quant::vec_dot_ref(K, reinterpret_cast<const B*>(row_ptr(as, m0 + m, e, 0)), y);
        }
    }
}

}  // namespace products_impl

inline void mul_mat_id(const node& d, const exec_params& p) {
    using namespace products_detail;
    const node& as = *d.src[0];
    const node& b = *d.src[1];
    const node& ids = *d.src[2];
    const auto& k = *p.k;
    const std::int64_t K = as.lay.ne[0], M = as.lay.ne[1], n_exp = as.lay.ne[2];
    const std::int64_t n_used = ids.lay.ne[0], T = ids.lay.ne[1], n_b = b.lay.ne[1];
    const std::int64_t total = n_used * T;
    const type_id ta = as.lay.type;
    const bool blocks = is_quantized(ta);
    const auto id_at = [&](std::int64_t u, std::int64_t t) {
        std::int32_t v;
        std::memcpy(&v, ids.bytes() + static_cast<std::size_t>(u) * ids.lay.nb[0] + static_cast<std::size_t>(t) * ids.lay.nb[1], 4);
        return v;
    };
    // Every thread checks the ids (the same data), so all throw before the first barrier or none does.
    for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t u = 0; u < n_used; ++u)
            if (const std::int32_t v = id_at(u, t); v < 0 || v >= n_exp)
                fail(errc::invalid_argument, "mul_mat_id '" + d.name + "': expert id " + std::to_string(v) + " at ids[" + std::to_string(u) +
                                                 ", " + std::to_string(t) + "] is outside [0, " + std::to_string(n_exp) + ")");
    id_shared sh{};
    id_shared_bytes(d, &sh, p.shared);
    if (p.ith == 0) {  // counting sort of the slots by expert
        std::fill(sh.off, sh.off + n_exp + 1, 0);
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t u = 0; u < n_used; ++u) ++sh.off[id_at(u, t) + 1];
        for (std::int64_t e = 0; e < n_exp; ++e) sh.off[e + 1] += sh.off[e];
        std::copy(sh.off, sh.off + n_exp, sh.next);
        for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t u = 0; u < n_used; ++u) sh.slots[sh.next[id_at(u, t)]++] = static_cast<std::int32_t>(t * n_used + u);
    }
    p.barrier();
    // phase 1: b's row of every slot, converted, in grouped order
    {
        const std::size_t rb = id_row_bytes(as);
        const type_id tp = blocks ? quant::dot_partner_type(ta) : type_id::f32;
        float* buf = reinterpret_cast<float*>(p.scratch);
        const auto [j0, j1] = p.split(total);
        for (std::int64_t j = j0; j < j1; ++j) {
            const std::int32_t s = sh.slots[j];
            const std::int64_t u = s % n_used, t = s / n_used;
            std::byte* dst = sh.rows + static_cast<std::size_t>(j) * rb;
            if (blocks) {
                const float* x = load_row(k, b, u % n_b, t, 0, buf);
                bool done = false;
                quant::visit_block_type(tp, [&]<class P>() {
                    if constexpr (kernels::has_quantize<P>) {
                        simd::kernel_for<kernels::quant_kernels<P>::template quantize>(k.arch)(x, reinterpret_cast<P*>(dst), K);
                        done = true;
                    }
                });
                if (!done) quant::quantize(tp, x, dst, 1, K);
                const std::int32_t ex = id_at(u, t);
                if (sh.packed && sh.off[ex + 1] - sh.off[ex] >= kernels::qgemm_min_cols)  // and packed if its expert runs the GEMM
                    quant::visit_block_type(ta, [&]<class B>() {
                        if constexpr (kernels::has_qgemm<B>)
                            kernels::qgemm_pack_act<B>(K, reinterpret_cast<const typename quant::block_traits<B>::dot_partner*>(dst),
                                                       sh.packed + static_cast<std::size_t>(j) * id_packed_row_bytes(as));
                    });
            } else {
                auto* f = reinterpret_cast<float*>(dst);
                const float* x = load_row(k, b, u % n_b, t, 0, f);
                if (x != f) std::memcpy(f, x, static_cast<std::size_t>(K) * 4);
            }
        }
    }
    p.barrier();
    // phase 2: (expert, chunk of weight rows) items
    const std::int64_t chunks = (M + id_rows - 1) / id_rows;
    const auto [c0, c1] = p.split(n_exp * chunks);
    float* cbuf = reinterpret_cast<float*>(p.scratch);
    float* abuf = cbuf + id_cols * id_rows;
    const bool a_direct = ta == type_id::f32 && as.lay.nb[0] == 4;
    for (std::int64_t c = c0; c < c1; ++c) {
        const std::int64_t e = c / chunks, m0 = (c % chunks) * id_rows, ml = std::min(id_rows, M - m0);
        if (sh.off[e + 1] == sh.off[e]) continue;
        if (blocks) {
            quant::visit_block_type(ta, [&]<class B>() {
                if constexpr (quant::block_traits<B>::supported) products_impl::id_block_item<B>(d, p, sh, e, m0, ml);
            });
            continue;
        }
        const float* ap;
        std::size_t lda;
        if (a_direct) {
            ap = reinterpret_cast<const float*>(row_ptr(as, m0, e, 0));
            lda = as.lay.nb[1] / 4;
        } else {
            for (std::int64_t m = 0; m < ml; ++m) {
                float* dst = abuf + static_cast<std::size_t>(m * K);
                const float* x = load_row(k, as, m0 + m, e, 0, dst);
                if (x != dst) std::memcpy(dst, x, static_cast<std::size_t>(K) * 4);
            }
            ap = abuf;
            lda = static_cast<std::size_t>(K);
        }
        for (std::int64_t j0 = sh.off[e]; j0 < sh.off[e + 1]; j0 += id_cols) {
            const std::int64_t nc = std::min(id_cols, sh.off[e + 1] - j0);
            const auto* bp = reinterpret_cast<const float*>(sh.rows) + static_cast<std::size_t>(j0 * K);
            k.gemm(ap, lda, bp, static_cast<std::size_t>(K), cbuf, static_cast<std::size_t>(ml), static_cast<std::size_t>(ml),
                   static_cast<std::size_t>(nc), static_cast<std::size_t>(K));
            for (std::int64_t jj = 0; jj < nc; ++jj) {
                const std::int32_t s = sh.slots[j0 + jj];
                float* o = reinterpret_cast<float*>(row_ptr(d, s % n_used, s / n_used, 0)) + m0;
                std::memcpy(o, cbuf + jj * ml, static_cast<std::size_t>(ml) * 4);
            }
        }
    }
}

}  // namespace impl
}  // namespace backend::cpu
TESSERA_END_NAMESPACE
