// CPU implementations of the training ops (builders in graph/ops/backward.hpp and
// graph/ops/optimizer.hpp): the gradients silu_back, rms_norm_back, soft_max_back,
// get_rows_back, cross_entropy_loss_back, im2col_back, pool_2d_back, and the optimizer
// steps opt_step_adamw, opt_step_sgd.
//
// Row-wise ops split the rows between threads and compute on f32 rows (rows.hpp converts
// f16/bf16 and gathers strided operands); they tolerate a result that aliases dy exactly
// (ggml's allocator may run them in place). The scatter-adds are computed so that every
// thread owns its destination rows (get_rows_back) or planes (pool_2d_back) and adds in
// the source's order, so the result does not depend on the thread count.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/backend/cpu/gather.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

// Types and shapes are checked by the builders; what is left is what ggml's CPU refuses.
inline std::string training_unsupported_reason(const node& n) {
    if (n.op == op_kind::soft_max_back && n.param<soft_max_params>().max_bias != 0.0f)
        return "soft_max_back with max_bias != 0 (ALiBi): not implemented on the CPU (as in ggml)";
    return {};
}

namespace impl {

namespace training_detail {
inline std::size_t pad16(std::int64_t n) noexcept { return (static_cast<std::size_t>(n) + 15) / 16 * 16; }

// The row loop of the ops whose result row is a function of the same row of two
// operands of one shape (dy and x): f(dy, x, z, n) with z the result row.
template <class F>
void map_rows2(const node& d, const node& a, const node& b, const exec_params& p, F&& f) {
    float* bufb = reinterpret_cast<float*>(p.scratch) + 2 * pad16(d.lay.ne[0]);  // after map_rows' two rows
    const auto& k = *p.k;
    map_rows(d, a, p, [&](const float* x, float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        f(x, load_row(k, b, i1, i2, i3, bufb), z, static_cast<std::size_t>(d.lay.ne[0]));
    });
}
}  // namespace training_detail

// dx = dy * s (1 + x (1 - s)), s = sigmoid(x)
inline void silu_back(const node& d, const exec_params& p) {
    training_detail::map_rows2(d, *d.src[0], *d.src[1], p, [](const float* dy, const float* x, float* z, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            const float s = 1.f / (1.f + std::exp(-x[i]));
            z[i] = dy[i] * s * (1.f + x[i] * (1.f - s));
        }
    });
}

// y = x r with r = (mean(x^2) + eps)^-1/2: dx = r (dy - x sum(x dy) / (n (mean(x^2) + eps)))
inline void rms_norm_back(const node& d, const exec_params& p) {
    const auto& k = *p.k;
    const double eps = d.param<norm_params>().eps;
    training_detail::map_rows2(d, *d.src[0], *d.src[1], p, [&](const float* dy, const float* x, float* z, std::size_t n) {
        double sxx = 0, sxdy = 0;
        for (std::size_t i = 0; i < n; ++i) {
            sxx += static_cast<double>(x[i]) * x[i];
            sxdy += static_cast<double>(x[i]) * dy[i];
        }
        const double ms = sxx / static_cast<double>(n) + eps;
        const auto r = static_cast<float>(1.0 / std::sqrt(ms));
        const auto c = static_cast<float>(-sxdy / (static_cast<double>(n) * ms));
        for (std::size_t i = 0; i < n; ++i) z[i] = dy[i] + x[i] * c;
        k.scale(z, z, n, r, 0.f);
    });
}

// dx = scale y (dy - dot(y, dy))
inline void soft_max_back(const node& d, const exec_params& p) {
    const auto& k = *p.k;
    const float scale = d.param<soft_max_params>().scale;
    training_detail::map_rows2(d, *d.src[0], *d.src[1], p, [&](const float* dy, const float* y, float* z, std::size_t n) {
        const float dot = k.dot(y, dy, n);
        for (std::size_t i = 0; i < n; ++i) z[i] = scale * y[i] * (dy[i] - dot);
    });
}

// Each thread zeroes its share of the result rows, then adds the rows of dy whose index
// falls in it, in dy's order.
inline void get_rows_back(const node& d, const exec_params& p) {
    const node& dy = *d.src[0];
    const node& idx = *d.src[1];
    const auto& k = *p.k;
    const std::int64_t E = d.lay.ne[0], R = d.lay.ne[1], n = dy.lay.ne[1];
    float* buf = reinterpret_cast<float*>(p.scratch);
    const auto [r0, r1] = p.split(R);
    for (std::int64_t r = r0; r < r1; ++r) std::fill_n(reinterpret_cast<float*>(row_ptr(d, r, 0, 0)), E, 0.f);
    for (std::int64_t i = 0; i < n; ++i) {
        std::int32_t r;
        std::memcpy(&r, idx.bytes() + static_cast<std::size_t>(i) * idx.lay.nb[0], 4);
        if (r < 0 || r >= R)
            fail(errc::invalid_argument, "get_rows_back: index " + std::to_string(r) + " at position " + std::to_string(i) +
                                             " is outside the " + std::to_string(R) + " rows of the result");
        if (r < r0 || r >= r1) continue;
        k.axpy(1.f, load_row(k, dy, i, 0, 0, buf), reinterpret_cast<float*>(row_ptr(d, r, 0, 0)), static_cast<std::size_t>(E));
    }
}

// dx = (softmax(logits) - labels) * grad / rows
inline void cross_entropy_loss_back(const node& d, const exec_params& p) {
    const node& logits = *d.src[1];
    const node& labels = *d.src[2];
    const auto& k = *p.k;
    const float g = read_scalar(type_id::f32, d.src[0]->bytes()) / static_cast<float>(logits.lay.nrows());
    const std::size_t n = static_cast<std::size_t>(d.lay.ne[0]);
    float* bufx = reinterpret_cast<float*>(p.scratch);
    float* bufl = bufx + training_detail::pad16(d.lay.ne[0]);
    float* bufd = bufl + training_detail::pad16(d.lay.ne[0]);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const float* x = load_row(k, logits, i1, i2, i3, bufx);
        const float* l = load_row(k, labels, i1, i2, i3, bufl);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        const float mx = k.max(x, n);
        const double sum = k.softmax_exp(x, z, n, mx);  // z = exp(x - max)
        const auto inv = static_cast<float>(1.0 / sum);
        for (std::size_t i = 0; i < n; ++i) z[i] = (z[i] * inv - l[i]) * g;
        store_f32(k, d.lay.type, drow, d.lay.nb[0], d.lay.ne[0], z);
    }
}

// The adjoint of im2col as a gather: each input element (ix, iy, ic, n) sums the
// columns (ox, oy) x taps (kx, ky) that im2col copied it to.
inline void im2col_back(const node& d, const exec_params& p) {
    const node& dy = *d.src[0];
    const node& kernel = *d.src[1];
    const auto& cp = d.param<conv_params>();
    const bool two = cp.is_2d;
    const std::int64_t KW = kernel.lay.ne[0], KH = two ? kernel.lay.ne[1] : 1;
    const std::int64_t OW = dy.lay.ne[1], OH = two ? dy.lay.ne[2] : 1;
    if (dy.lay.type == type_id::f32 && two) {  // f32 gradient: read the floats in place, taps in (ky, kx) order
        const auto& nb = dy.lay.nb;
        const std::byte* base = dy.bytes();
        fill_rows(d, p, [&](float* z, std::int64_t iy, std::int64_t ic, std::int64_t nn) {
            std::fill_n(z, d.lay.ne[0], 0.f);
            for (std::int64_t ky = 0; ky < KH; ++ky) {
                const std::int64_t ty = iy + cp.p[1] - ky * cp.d[1];
                if (ty < 0 || ty % cp.s[1] != 0 || ty / cp.s[1] >= OH) continue;
                const std::byte* plane = base + static_cast<std::size_t>(ty / cp.s[1]) * nb[2] + static_cast<std::size_t>(nn) * nb[3];
                for (std::int64_t kx = 0; kx < KW; ++kx) {
                    const std::byte* col = plane + static_cast<std::size_t>((ic * KH + ky) * KW + kx) * nb[0];
                    for (std::int64_t ix = 0; ix < d.lay.ne[0]; ++ix) {
                        const std::int64_t tx = ix + cp.p[0] - kx * cp.d[0];
                        if (tx < 0 || tx % cp.s[0] != 0 || tx / cp.s[0] >= OW) continue;
                        float v;
                        std::memcpy(&v, col + static_cast<std::size_t>(tx / cp.s[0]) * nb[1], 4);
                        z[ix] += v;
                    }
                }
            }
        });
        return;
    }
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        // 2-D: row (iy, ic, n); 1-D: row (ic, n)
        const std::int64_t iy = two ? i1 : 0, ic = two ? i2 : i1, nn = two ? i3 : i2;
        for (std::int64_t ix = 0; ix < d.lay.ne[0]; ++ix) {
            float g = 0.f;
            for (std::int64_t ky = 0; ky < KH; ++ky) {
                const std::int64_t ty = iy + cp.p[1] - ky * cp.d[1];
                if (two && (ty < 0 || ty % cp.s[1] != 0 || ty / cp.s[1] >= OH)) continue;
                const std::int64_t oy = two ? ty / cp.s[1] : 0;
                for (std::int64_t kx = 0; kx < KW; ++kx) {
                    const std::int64_t tx = ix + cp.p[0] - kx * cp.d[0];
                    if (tx < 0 || tx % cp.s[0] != 0 || tx / cp.s[0] >= OW) continue;
                    const std::int64_t col = (ic * KH + ky) * KW + kx;
                    g += two ? elem(dy, col, tx / cp.s[0], oy, nn) : elem(dy, col, tx / cp.s[0], nn);
                }
            }
            z[ix] = g;
        }
    });
}

// Work items are the (channel, batch) planes: each thread zeroes its planes, then walks
// the pooled cells of each in order: avg adds dy / (k0 k1) to every tap inside x, max
// adds dy to the window's first largest element of x (as ggml).
inline void pool_2d_back(const node& d, const exec_params& p) {
    const node& dy = *d.src[0];
    const node& x = *d.src[1];
    const auto& pp = d.param<pool_params>();
    const std::int64_t W = d.lay.ne[0], H = d.lay.ne[1], OW = dy.lay.ne[0], OH = dy.lay.ne[1];
    const float ka = static_cast<float>(pp.k[0] * pp.k[1]);
    const auto [w0, w1] = p.split(d.lay.ne[2] * d.lay.ne[3]);
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t i2 = w % d.lay.ne[2], i3 = w / d.lay.ne[2];
        for (std::int64_t y = 0; y < H; ++y) std::fill_n(reinterpret_cast<float*>(row_ptr(d, y, i2, i3)), W, 0.f);
        const auto at = [&](std::int64_t ix, std::int64_t iy) -> float& {
            return reinterpret_cast<float*>(row_ptr(d, iy, i2, i3))[ix];
        };
        for (std::int64_t oy = 0; oy < OH; ++oy)
            for (std::int64_t ox = 0; ox < OW; ++ox) {
                const float g = elem(dy, ox, oy, i2, i3);
                const std::int64_t x0 = ox * pp.s[0] - pp.p[0], y0 = oy * pp.s[1] - pp.p[1];
                if (pp.op == pool_op::avg) {
                    for (std::int64_t ky = std::max<std::int64_t>(0, -y0); ky < pp.k[1] && y0 + ky < H; ++ky)
                        for (std::int64_t kx = std::max<std::int64_t>(0, -x0); kx < pp.k[0] && x0 + kx < W; ++kx)
                            at(x0 + kx, y0 + ky) += g / ka;
                    continue;
                }
                float best = -FLT_MAX;
                std::int64_t bx = -1, by = -1;
                for (std::int64_t ky = std::max<std::int64_t>(0, -y0); ky < pp.k[1] && y0 + ky < H; ++ky)
                    for (std::int64_t kx = std::max<std::int64_t>(0, -x0); kx < pp.k[0] && x0 + kx < W; ++kx) {
                        const float v = elem(x, x0 + kx, y0 + ky, i2, i3);
                        if (v > best) {
                            best = v;
                            bx = x0 + kx;
                            by = y0 + ky;
                        }
                    }
                if (bx >= 0) at(bx, by) += g;
            }
    }
}

// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, w = w (1 - alpha wd) - alpha (m b1h) / (sqrt(v b2h) + eps)
inline void opt_step_adamw(const node& d, const exec_params& p) {
    const node& grad = *d.src[1];
    const node& m = *d.src[2];
    const node& v = *d.src[3];
    float hp[7];
    std::memcpy(hp, d.src[4]->bytes(), sizeof hp);
    const float alpha = hp[0], b1 = hp[1], b2 = hp[2], eps = hp[3], wd = hp[4], b1h = hp[5], b2h = hp[6];
    const float keep = 1.f - alpha * wd;
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        auto* w = reinterpret_cast<float*>(row_ptr(d, i1, i2, i3));
        const auto* g = reinterpret_cast<const float*>(row_ptr(grad, i1, i2, i3));
        auto* mr = reinterpret_cast<float*>(row_ptr(m, i1, i2, i3));
        auto* vr = reinterpret_cast<float*>(row_ptr(v, i1, i2, i3));
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) {
            mr[i] = mr[i] * b1 + g[i] * (1.f - b1);
            vr[i] = vr[i] * b2 + g[i] * g[i] * (1.f - b2);
            const float mh = mr[i] * b1h;
            const float vh = std::sqrt(vr[i] * b2h) + eps;
            w[i] = w[i] * keep - alpha * mh / vh;
        }
    }
}

// w = w (1 - alpha wd) - alpha g
inline void opt_step_sgd(const node& d, const exec_params& p) {
    const node& grad = *d.src[1];
    float hp[2];
    std::memcpy(hp, d.src[2]->bytes(), sizeof hp);
    const float alpha = hp[0], keep = 1.f - hp[0] * hp[1];
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        auto* w = reinterpret_cast<float*>(row_ptr(d, i1, i2, i3));
        const auto* g = reinterpret_cast<const float*>(row_ptr(grad, i1, i2, i3));
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) w[i] = w[i] * keep - alpha * g[i];
    }
}

}  // namespace impl

inline void training_compute(const node& n, const exec_params& p) {
    switch (n.op) {
        case op_kind::silu_back: return impl::silu_back(n, p);
        case op_kind::rms_norm_back: return impl::rms_norm_back(n, p);
        case op_kind::soft_max_back: return impl::soft_max_back(n, p);
        case op_kind::get_rows_back: return impl::get_rows_back(n, p);
        case op_kind::cross_entropy_loss_back: return impl::cross_entropy_loss_back(n, p);
        case op_kind::im2col_back: return impl::im2col_back(n, p);
        case op_kind::pool_2d_back: return impl::pool_2d_back(n, p);
        case op_kind::opt_step_adamw: return impl::opt_step_adamw(n, p);
        case op_kind::opt_step_sgd: return impl::opt_step_sgd(n, p);
        default: return;
    }
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
