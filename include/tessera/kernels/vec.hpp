// Vector kernels: dot product and axpy on f32 rows, with the scalar reference beside the
// portable xsimd body (one body for every SIMD level); and the same two with an f16 x
// (converted in registers, F16C), for attention over an f16 KV cache without a
// conversion pass.
#pragma once

#include <cstddef>

#include <immintrin.h>

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
// SSE4.2 has no f16 conversion instruction: the scalar bodies. AVX2 and up: F16C, 256-bit
// (512-bit vcvtph2ps is no faster on the Zen machines here).
// sum of float(x[i]) * y[i] for 16-bit x widened 8 at a time by wide(i) (AVX2 and up).
template <class A, class T, class Wide>
TESSERA_ALWAYS_INLINE float dot_wide8_f32(const T* x, const float* y, std::size_t n, Wide wide) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(wide(i), _mm256_loadu_ps(y + i), s0);
        s1 = _mm256_fmadd_ps(wide(i + 8), _mm256_loadu_ps(y + i + 8), s1);
    }
    if (i + 8 <= n) {
        s0 = _mm256_fmadd_ps(wide(i), _mm256_loadu_ps(y + i), s0);
        i += 8;
    }
    alignas(32) float t[8];
    _mm256_store_ps(t, _mm256_add_ps(s0, s1));
    float s = ((t[0] + t[4]) + (t[1] + t[5])) + ((t[2] + t[6]) + (t[3] + t[7]));
    for (; i < n; ++i) s += x[i].to_float() * y[i];
    return s;
}
template <class A>
float dot_f16_f32(const f16* x, const float* y, std::size_t n, simd::requires_arch<simd::avx2>) {
    return dot_wide8_f32<A>(x, y, n, [x](std::size_t i) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))); });
}
template <class A>
void axpy_f16_f32(float a, const f16* x, float* y, std::size_t n, simd::requires_arch<simd::avx2>) {
    const __m256 va = _mm256_set1_ps(a);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 h = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, h, _mm256_loadu_ps(y + i)));
    }
    for (; i < n; ++i) y[i] += a * x[i].to_float();
}

// bf16 -> f32 is a 16-bit shift; AVX2 widens 8 at a time (512-bit is no faster here, as for f16).
template <class A>
float dot_bf16_f32(const bf16* x, const float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += x[i].to_float() * y[i];
    return s;
}
template <class A>
float dot_bf16_f32(const bf16* x, const float* y, std::size_t n, simd::requires_arch<simd::avx2>) {
    return dot_wide8_f32<A>(x, y, n, [x](std::size_t i) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
    });
}

}  // namespace detail

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
