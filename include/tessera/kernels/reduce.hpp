// f32 row reductions: sum, max, argmax. Sums accumulate in several f32 lanes and are
// returned in double, as ggml's ggml_float sums are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "tessera/config.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

namespace detail {

template <class A>
double sum_f32(const float* x, std::size_t n, simd::requires_arch<simd::scalar>) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
    return s;
}
template <class A>
double sum_f32(const float* x, std::size_t n, simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    B s0(0.f), s1(0.f);
    std::size_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
        s0 += B::load_unaligned(x + i);
        s1 += B::load_unaligned(x + i + w);
    }
    for (; i + w <= n; i += w) s0 += B::load_unaligned(x + i);
    double s = static_cast<double>(xsimd::hadd(s0 + s1));
    for (; i < n; ++i) s += static_cast<double>(x[i]);
    return s;
}

template <class A>
float max_f32(const float* x, std::size_t n, simd::requires_arch<simd::scalar>) {
    float m = -std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    return m;
}
template <class A>
float max_f32(const float* x, std::size_t n, simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    B m(-std::numeric_limits<float>::infinity());
    std::size_t i = 0;
    for (; i + w <= n; i += w) m = xsimd::max(m, B::load_unaligned(x + i));
    alignas(64) float buf[w];
    m.store_aligned(buf);
    float r = buf[0];
    for (std::size_t j = 1; j < w; ++j) r = buf[j] > r ? buf[j] : r;
    for (; i < n; ++i) r = x[i] > r ? x[i] : r;
    return r;
}

template <class A>
std::int64_t argmax_f32(const float* x, std::size_t n, simd::requires_arch<simd::scalar>) {
    std::int64_t best = 0;
    for (std::size_t i = 1; i < n; ++i)
        if (x[i] > x[best]) best = static_cast<std::int64_t>(i);
    return best;
}

// sum of x[i]^2 and, if mean_out, the plain sum (for norm)
template <class A>
double sumsq_f32(const float* x, std::size_t n, simd::requires_arch<simd::scalar>) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    return s;
}
template <class A>
double sumsq_f32(const float* x, std::size_t n, simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    B s0(0.f), s1(0.f);
    std::size_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
        const B a = B::load_unaligned(x + i), b = B::load_unaligned(x + i + w);
        s0 = xsimd::fma(a, a, s0);
        s1 = xsimd::fma(b, b, s1);
    }
    for (; i + w <= n; i += w) {
        const B a = B::load_unaligned(x + i);
        s0 = xsimd::fma(a, a, s0);
    }
    double s = static_cast<double>(xsimd::hadd(s0 + s1));
    for (; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    return s;
}

}  // namespace detail

template <class A>
struct sum_f32 {
    double operator()(const float* x, std::size_t n) const;
};
template <class A>
double sum_f32<A>::operator()(const float* x, std::size_t n) const {
    return detail::sum_f32<A>(x, n, A{});
}
TESSERA_KERNEL(sum_f32);

template <class A>
struct sumsq_f32 {
    double operator()(const float* x, std::size_t n) const;
};
template <class A>
double sumsq_f32<A>::operator()(const float* x, std::size_t n) const {
    return detail::sumsq_f32<A>(x, n, A{});
}
TESSERA_KERNEL(sumsq_f32);

// the largest element (-inf for n == 0)
template <class A>
struct max_f32 {
    float operator()(const float* x, std::size_t n) const;
};
template <class A>
float max_f32<A>::operator()(const float* x, std::size_t n) const {
    return detail::max_f32<A>(x, n, A{});
}
TESSERA_KERNEL(max_f32);

// index of the first largest element
template <class A>
struct argmax_f32 {
    std::int64_t operator()(const float* x, std::size_t n) const;
};
template <class A>
std::int64_t argmax_f32<A>::operator()(const float* x, std::size_t n) const {
    return detail::argmax_f32<A>(x, n, A{});
}
TESSERA_KERNEL(argmax_f32);

}  // namespace kernels
TESSERA_END_NAMESPACE
