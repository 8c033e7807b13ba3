// Softmax and rope row kernels.
//  - softmax_exp_f32: y = exp(x - max), returns the sum of y (in double).
//  - scale_add_f32:   y = x*s + slope*m (the logits of soft_max; m may be null), returns
//                     the largest y (-inf for n = 0; NaNs are not propagated).
//  - rope_f32:        rotates pairs of x by the angles whose cos/sin are given; pairs are
//                     (2i, 2i+1) in normal mode and (i, i + n/2) in neox mode. neox: c[i],
//                     s[i] per pair (n/2 each). normal: per element, so that a vector of
//                     pairs needs no shuffle of the tables: c[2i] = c[2i+1] = cos, s[2i] =
//                     -sin, s[2i+1] = sin, and y = x*c + swap_pairs(x)*s.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "tessera/config.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

namespace detail {

template <class A>
double softmax_exp_f32(const float* x, float* y, std::size_t n, float max, simd::requires_arch<simd::scalar>) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) {
        y[i] = std::exp(x[i] - max);
        s += static_cast<double>(y[i]);
    }
    return s;
}
template <class A>
double softmax_exp_f32(const float* x, float* y, std::size_t n, float max, simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    const B m(max);
    B acc(0.f);
    std::size_t i = 0;
    for (; i + w <= n; i += w) {
        const B e = xsimd::exp(B::load_unaligned(x + i) - m);
        e.store_unaligned(y + i);
        acc += e;
    }
    double s = static_cast<double>(xsimd::hadd(acc));
    for (; i < n; ++i) {
        y[i] = std::exp(x[i] - max);
        s += static_cast<double>(y[i]);
    }
    return s;
}

template <class A>
float scale_add_f32(const float* x, float s, const float* m, float slope, float* y, std::size_t n,
                    simd::requires_arch<simd::scalar>) {
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
        y[i] = m ? x[i] * s + slope * m[i] : x[i] * s;
        mx = y[i] > mx ? y[i] : mx;
    }
    return mx;
}
template <class A>
float scale_add_f32(const float* x, float s, const float* m, float slope, float* y, std::size_t n,
                    simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    const B vs(s), vp(slope);
    B vmax(-std::numeric_limits<float>::infinity());
    std::size_t i = 0;
    if (m) {
        for (; i + w <= n; i += w) {
            const B v = xsimd::fma(B::load_unaligned(x + i), vs, B::load_unaligned(m + i) * vp);
            v.store_unaligned(y + i);
            vmax = xsimd::max(vmax, v);
        }
    } else {
        for (; i + w <= n; i += w) {
            const B v = B::load_unaligned(x + i) * vs;
            v.store_unaligned(y + i);
            vmax = xsimd::max(vmax, v);
        }
    }
    alignas(64) float lanes[w];
    vmax.store_aligned(lanes);
    float mx = lanes[0];
    for (std::size_t j = 1; j < w; ++j) mx = std::max(mx, lanes[j]);
    for (; i < n; ++i) {
        y[i] = m ? x[i] * s + slope * m[i] : x[i] * s;
        mx = std::max(mx, y[i]);
    }
    return mx;
}

template <class A>
void rope_f32(const float* x, float* y, const float* c, const float* s, std::size_t n_dims, bool neox,
              simd::requires_arch<simd::scalar>) {
    if (neox) {
        const std::size_t h = n_dims / 2;
        for (std::size_t i = 0; i < h; ++i) {
            const float x0 = x[i], x1 = x[i + h];
            y[i] = x0 * c[i] - x1 * s[i];
            y[i + h] = x0 * s[i] + x1 * c[i];
        }
    } else {
        for (std::size_t i = 0; i + 1 < n_dims; i += 2) {
            const float x0 = x[i], x1 = x[i + 1];
            y[i] = x0 * c[i] + x1 * s[i];
            y[i + 1] = x1 * c[i + 1] + x0 * s[i + 1];
        }
    }
}

// Lane i of the result is lane i ^ 1 of x.
struct swap_pairs_index {
    static constexpr unsigned get(unsigned i, unsigned) { return i ^ 1u; }
};

template <class A>
void rope_f32(const float* x, float* y, const float* c, const float* s, std::size_t n_dims, bool neox,
              simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    std::size_t i = 0;
    if (!neox) {
        using U = xsimd::batch<std::uint32_t, typename A::xsimd_arch>;
        constexpr auto swap = xsimd::make_batch_constant<U, swap_pairs_index>();
        for (; i + w <= n_dims; i += w) {
            const B xv = B::load_unaligned(x + i);
            xsimd::fma(xv, B::load_unaligned(c + i), xsimd::swizzle(xv, swap) * B::load_unaligned(s + i)).store_unaligned(y + i);
        }
        for (; i + 1 < n_dims; i += 2) {
            const float x0 = x[i], x1 = x[i + 1];
            y[i] = x0 * c[i] + x1 * s[i];
            y[i + 1] = x1 * c[i + 1] + x0 * s[i + 1];
        }
        return;
    }
    const std::size_t h = n_dims / 2;
    for (; i + w <= h; i += w) {
        const B x0 = B::load_unaligned(x + i), x1 = B::load_unaligned(x + i + h);
        const B cv = B::load_unaligned(c + i), sv = B::load_unaligned(s + i);
        xsimd::fms(x0, cv, x1 * sv).store_unaligned(y + i);
        xsimd::fma(x0, sv, x1 * cv).store_unaligned(y + i + h);
    }
    for (; i < h; ++i) {
        const float x0 = x[i], x1 = x[i + h];
        y[i] = x0 * c[i] - x1 * s[i];
        y[i + h] = x0 * s[i] + x1 * c[i];
    }
}

}  // namespace detail

template <class A>
struct softmax_exp_f32 {
    double operator()(const float* x, float* y, std::size_t n, float max) const;
};
template <class A>
double softmax_exp_f32<A>::operator()(const float* x, float* y, std::size_t n, float max) const {
    return detail::softmax_exp_f32<A>(x, y, n, max, A{});
}
TESSERA_KERNEL(softmax_exp_f32);

template <class A>
struct scale_add_f32 {
    float operator()(const float* x, float s, const float* m, float slope, float* y, std::size_t n) const;
};
template <class A>
float scale_add_f32<A>::operator()(const float* x, float s, const float* m, float slope, float* y, std::size_t n) const {
    return detail::scale_add_f32<A>(x, s, m, slope, y, n, A{});
}
TESSERA_KERNEL(scale_add_f32);

template <class A>
struct rope_f32 {
    void operator()(const float* x, float* y, const float* c, const float* s, std::size_t n_dims, bool neox) const;
};
template <class A>
void rope_f32<A>::operator()(const float* x, float* y, const float* c, const float* s, std::size_t n_dims,
                             bool neox) const {
    detail::rope_f32<A>(x, y, c, s, n_dims, neox, A{});
}
TESSERA_KERNEL(rope_f32);

}  // namespace kernels
TESSERA_END_NAMESPACE
