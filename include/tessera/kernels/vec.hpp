// Vector kernels: dot product and axpy on f32 rows, with the scalar reference beside the
// portable xsimd body (one body for every SIMD level); and the same two with an f16 or
// bf16 x (converted in registers; the x86 bodies are in kernels/x86/vec.hpp), for
// attention over an f16 KV cache without a conversion pass.
#pragma once

#include <cstddef>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

namespace detail {

template <class A>
float dot_f32(const float* x, const float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
}

template <class A>
float dot_f32(const float* x, const float* y, std::size_t n, simd::requires_arch<simd::xsimd_common>) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = batch::size;
    batch s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
    std::size_t i = 0;
    for (; i + 4 * w <= n; i += 4 * w) {
        s0 = xsimd::fma(batch::load_unaligned(x + i), batch::load_unaligned(y + i), s0);
        s1 = xsimd::fma(batch::load_unaligned(x + i + w), batch::load_unaligned(y + i + w), s1);
        s2 = xsimd::fma(batch::load_unaligned(x + i + 2 * w), batch::load_unaligned(y + i + 2 * w), s2);
        s3 = xsimd::fma(batch::load_unaligned(x + i + 3 * w), batch::load_unaligned(y + i + 3 * w), s3);
    }
    for (; i + w <= n; i += w) s0 = xsimd::fma(batch::load_unaligned(x + i), batch::load_unaligned(y + i), s0);
    float s = xsimd::hadd((s0 + s1) + (s2 + s3));
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

template <class A>
void axpy_f32(float a, const float* x, float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <class A>
void axpy_f32(float a, const float* x, float* y, std::size_t n, simd::requires_arch<simd::xsimd_common>) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = batch::size;
    const batch va(a);
    std::size_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
        xsimd::fma(va, batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(y + i);
        xsimd::fma(va, batch::load_unaligned(x + i + w), batch::load_unaligned(y + i + w))
            .store_unaligned(y + i + w);
    }
    for (; i + w <= n; i += w)
        xsimd::fma(va, batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
}

template <class A>
float dot_f16_f32(const f16* x, const float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += x[i].to_float() * y[i];
    return s;
}
template <class A>
void axpy_f16_f32(float a, const f16* x, float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i].to_float();
}
template <class A>
float dot_bf16_f32(const bf16* x, const float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += x[i].to_float() * y[i];
    return s;
}
}  // namespace detail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/vec.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

// sum_i x[i] * y[i]
template <class A>
struct dot_f32 {
    float operator()(const float* x, const float* y, std::size_t n) const;
};
template <class A>
float dot_f32<A>::operator()(const float* x, const float* y, std::size_t n) const {
    return detail::dot_f32<A>(x, y, n, A{});
}
TESSERA_KERNEL(dot_f32);

// y[i] += a * x[i]
template <class A>
struct axpy_f32 {
    void operator()(float a, const float* x, float* y, std::size_t n) const;
};
template <class A>
void axpy_f32<A>::operator()(float a, const float* x, float* y, std::size_t n) const {
    detail::axpy_f32<A>(a, x, y, n, A{});
}
TESSERA_KERNEL(axpy_f32);

// sum_i float(x[i]) * y[i], x in f16
template <class A>
struct dot_f16_f32 {
    float operator()(const f16* x, const float* y, std::size_t n) const;
};
template <class A>
float dot_f16_f32<A>::operator()(const f16* x, const float* y, std::size_t n) const {
    return detail::dot_f16_f32<A>(x, y, n, A{});
}
TESSERA_KERNEL(dot_f16_f32);

// sum_i float(x[i]) * y[i], x in bf16
template <class A>
struct dot_bf16_f32 {
    float operator()(const bf16* x, const float* y, std::size_t n) const;
};
template <class A>
float dot_bf16_f32<A>::operator()(const bf16* x, const float* y, std::size_t n) const {
    return detail::dot_bf16_f32<A>(x, y, n, A{});
}
TESSERA_KERNEL(dot_bf16_f32);

// y[i] += a * float(x[i]), x in f16
template <class A>
struct axpy_f16_f32 {
    void operator()(float a, const f16* x, float* y, std::size_t n) const;
};
template <class A>
void axpy_f16_f32<A>::operator()(float a, const f16* x, float* y, std::size_t n) const {
    detail::axpy_f16_f32<A>(a, x, y, n, A{});
}
TESSERA_KERNEL(axpy_f16_f32);

}  // namespace kernels
TESSERA_END_NAMESPACE
