// x86 bodies of the dequantizers of kernels/quant/dequant.hpp: q4_0, q8_0, q4_K and q6_K
// on AVX2 and AVX-512, equal to the scalar bodies there (the same products, rounded the
// same way). Part of kernels/quant/dequant.hpp, which includes it after the scalar bodies.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace q = ::tessera::quant;

// ---- AVX2 ------------------------------------------------------------------------------------
template <class A>
TESSERA_ALWAYS_INLINE void store_i8x8_scaled(float* y, __m128i b8, __m256i sub, __m256 d, bool is_signed) {
    const __m256i v = is_signed ? _mm256_cvtepi8_epi32(b8) : _mm256_cvtepu8_epi32(b8);
    _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, sub)), d));
}

template <class A>
void dequant(const q::block_q4_0* x, float* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m256i k8 = _mm256_set1_epi32(8);
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const __m256 d = _mm256_set1_ps(h2f<A>(x[i].d));
        const __m128i qv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m128i lo = _mm_and_si128(qv, m4), hi = _mm_and_si128(_mm_srli_epi16(qv, 4), m4);
        store_i8x8_scaled<A>(y, lo, k8, d, false);
        store_i8x8_scaled<A>(y + 8, _mm_srli_si128(lo, 8), k8, d, false);
        store_i8x8_scaled<A>(y + 16, hi, k8, d, false);
        store_i8x8_scaled<A>(y + 24, _mm_srli_si128(hi, 8), k8, d, false);
    }
}
template <class A>
void dequant(const q::block_q8_0* x, float* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    const __m256i z = _mm256_setzero_si256();
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const __m256 d = _mm256_set1_ps(h2f<A>(x[i].d));
        for (int k = 0; k < 4; ++k)
            store_i8x8_scaled<A>(y + 8 * k, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[i].qs + 8 * k)), z, d, true);
    }
}
template <class A>
void dequant(const q::block_q4_K* x, float* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d), mn = h2f<A>(x[i].dmin);
        for (int j = 0; j < 4; ++j) {
            std::uint8_t s1, m1, s2, m2;
            scale_min_k4<A>(2 * j, x[i].scales, s1, m1);
            scale_min_k4<A>(2 * j + 1, x[i].scales, s2, m2);
            const __m256 d1 = _mm256_set1_ps(d * s1), n1 = _mm256_set1_ps(mn * m1);
            const __m256 d2 = _mm256_set1_ps(d * s2), n2 = _mm256_set1_ps(mn * m2);
            for (int h = 0; h < 2; ++h) {
                const __m128i qv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 32 * j + 16 * h));
                const __m128i lo = _mm_and_si128(qv, m4), hi = _mm_and_si128(_mm_srli_epi16(qv, 4), m4);
                for (int k = 0; k < 2; ++k) {
                    const __m128i l8 = k ? _mm_srli_si128(lo, 8) : lo, h8 = k ? _mm_srli_si128(hi, 8) : hi;
                    const __m256 fl = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(l8));
                    const __m256 fh = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(h8));
                    _mm256_storeu_ps(y + 64 * j + 16 * h + 8 * k, _mm256_sub_ps(rounded<A>(_mm256_mul_ps(d1, fl)), n1));
                    _mm256_storeu_ps(y + 64 * j + 32 + 16 * h + 8 * k, _mm256_sub_ps(rounded<A>(_mm256_mul_ps(d2, fh)), n2));
                }
            }
        }
        y += q::qk_k;
    }
}
// The four 6-bit values of q6_K for 16 consecutive l, as bytes (0..63).
template <class A>
TESSERA_ALWAYS_INLINE void q6k_unpack16(const std::uint8_t* ql, const std::uint8_t* qh, __m128i out[4]) {
    const __m128i m4 = _mm_set1_epi8(0x0F), m3 = _mm_set1_epi8(0x30);
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ql));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ql + 32));
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh));
    out[0] = _mm_or_si128(_mm_and_si128(a, m4), _mm_and_si128(_mm_slli_epi16(h, 4), m3));
    out[1] = _mm_or_si128(_mm_and_si128(b, m4), _mm_and_si128(_mm_slli_epi16(h, 2), m3));
    out[2] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), m4), _mm_and_si128(h, m3));
    out[3] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(b, 4), m4), _mm_and_si128(_mm_srli_epi16(h, 2), m3));
}
template <class A>
void dequant(const q::block_q6_K* x, float* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    const __m256i k32 = _mm256_set1_epi32(32);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d);
        for (int half = 0; half < 2; ++half) {
            for (int g = 0; g < 2; ++g) {
                __m128i v[4];
                q6k_unpack16<A>(x[i].ql + 64 * half + 16 * g, x[i].qh + 32 * half + 16 * g, v);
                for (int k = 0; k < 4; ++k) {
                    const __m256 s = _mm256_set1_ps(d * static_cast<float>(x[i].scales[8 * half + g + 2 * k]));
                    float* o = y + 128 * half + 32 * k + 16 * g;
                    store_i8x8_scaled<A>(o, v[k], k32, s, false);
                    store_i8x8_scaled<A>(o + 8, _mm_srli_si128(v[k], 8), k32, s, false);
                }
            }
        }
        y += q::qk_k;
    }
}

// ---- AVX-512 -----------------------------------------------------------------------------------
template <class A>
void dequant(const q::block_q4_0* x, float* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m512i k8 = _mm512_set1_epi32(8);
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const __m512 d = _mm512_set1_ps(h2f<A>(x[i].d));
        const __m128i qv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        const __m512i lo = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(qv, m4)), k8);
        const __m512i hi = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(qv, 4), m4)), k8);
        _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
    }
}
template <class A>
void dequant(const q::block_q8_0* x, float* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const __m512 d = _mm512_set1_ps(h2f<A>(x[i].d));
        const __m512i a = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs)));
        const __m512i b = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 16)));
        _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(a), d));
        _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(b), d));
    }
}
template <class A>
void dequant(const q::block_q4_K* x, float* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d), mn = h2f<A>(x[i].dmin);
        for (int j = 0; j < 4; ++j) {
            std::uint8_t s1, m1, s2, m2;
            scale_min_k4<A>(2 * j, x[i].scales, s1, m1);
            scale_min_k4<A>(2 * j + 1, x[i].scales, s2, m2);
            const __m512 d1 = _mm512_set1_ps(d * s1), n1 = _mm512_set1_ps(mn * m1);
            const __m512 d2 = _mm512_set1_ps(d * s2), n2 = _mm512_set1_ps(mn * m2);
            for (int h = 0; h < 2; ++h) {
                const __m128i qv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 32 * j + 16 * h));
                const __m512 fl = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(qv, m4)));
                const __m512 fh = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(qv, 4), m4)));
                _mm512_storeu_ps(y + 64 * j + 16 * h, _mm512_sub_ps(rounded<A>(_mm512_mul_ps(d1, fl)), n1));
                _mm512_storeu_ps(y + 64 * j + 32 + 16 * h, _mm512_sub_ps(rounded<A>(_mm512_mul_ps(d2, fh)), n2));
            }
        }
        y += q::qk_k;
    }
}
template <class A>
void dequant(const q::block_q6_K* x, float* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    const __m512i k32 = _mm512_set1_epi32(32);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d);
        for (int half = 0; half < 2; ++half) {
            for (int g = 0; g < 2; ++g) {
                __m128i v[4];
                q6k_unpack16<A>(x[i].ql + 64 * half + 16 * g, x[i].qh + 32 * half + 16 * g, v);
                for (int k = 0; k < 4; ++k) {
                    const __m512 s = _mm512_set1_ps(d * static_cast<float>(x[i].scales[8 * half + g + 2 * k]));
                    const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(v[k]), k32));
                    _mm512_storeu_ps(y + 128 * half + 32 * k + 16 * g, _mm512_mul_ps(s, f));
                }
            }
        }
        y += q::qk_k;
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
