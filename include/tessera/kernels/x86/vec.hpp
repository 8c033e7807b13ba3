// x86 bodies of the f16 / bf16 row kernels of kernels/vec.hpp. SSE4.2 has no f16
// conversion instruction and keeps the scalar bodies; AVX2 and up widen 8 at a time with
// F16C (f16) or a 16-bit shift (bf16). 512-bit vcvtph2ps is no faster on the Zen
// machines here.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstddef>

#include <immintrin.h>

#include "tessera/core/f16.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace detail {

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

template <class A>
float dot_bf16_f32(const bf16* x, const float* y, std::size_t n, simd::requires_arch<simd::avx2>) {
    return dot_wide8_f32<A>(x, y, n, [x](std::size_t i) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
    });
}

}  // namespace detail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
