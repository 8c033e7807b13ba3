// x86 bodies of the dequantizers of kernels/quant/dequant.hpp: q4_0, q8_0, q4_K and q6_K,
// one body each for AVX2 and AVX-512, equal to the scalar bodies there (the same
// products, rounded the same way). Part of kernels/quant/dequant.hpp, which includes it after the scalar bodies.
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

// ---- one body for both widths -----------------------------------------------------------
// Each block is widened 16 bytes at a time; the two stores of those 16 floats are what
// differs between the widths: two 8-lane vectors (dq8, AVX2) or one 16-lane vector
// (dq16, AVX-512).
template <class A>
struct dq8 {
    // y[0..16) = float(b - sub) * d for 16 bytes b (signed or unsigned)
    static TESSERA_ALWAYS_INLINE void scaled(float* y, __m128i b, int sub, float d, bool is_signed) {
        const __m256 vd = _mm256_set1_ps(d);
        const __m256i vs = _mm256_set1_epi32(sub);
        const auto one = [&](float* o, __m128i b8) {
            const __m256i v = is_signed ? _mm256_cvtepi8_epi32(b8) : _mm256_cvtepu8_epi32(b8);
            _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, vs)), vd));
        };
        one(y, b);
        one(y + 8, _mm_srli_si128(b, 8));
    }
    // y[0..16) = (d * float(b)) - m for 16 unsigned bytes b, the product rounded first
    static TESSERA_ALWAYS_INLINE void scaled_min(float* y, __m128i b, float d, float m) {
        const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
        const auto one = [&](float* o, __m128i b8) {
            const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b8));
            _mm256_storeu_ps(o, _mm256_sub_ps(rounded<A>(_mm256_mul_ps(vd, f)), vm));
        };
        one(y, b);
        one(y + 8, _mm_srli_si128(b, 8));
    }
};
template <class A>
struct dq16 {
    static TESSERA_ALWAYS_INLINE void scaled(float* y, __m128i b, int sub, float d, bool is_signed) {
        const __m512i v = is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, _mm512_set1_epi32(sub))), _mm512_set1_ps(d)));
    }
    static TESSERA_ALWAYS_INLINE void scaled_min(float* y, __m128i b, float d, float m) {
        const __m512 f = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b));
        _mm512_storeu_ps(y, _mm512_sub_ps(rounded<A>(_mm512_mul_ps(_mm512_set1_ps(d), f)), _mm512_set1_ps(m)));
    }
};

template <class A, class V>
void dequant_wide(const q::block_q4_0* x, float* y, std::int64_t n) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d);
        const __m128i qv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs));
        V::scaled(y, _mm_and_si128(qv, m4), 8, d, false);
        V::scaled(y + 16, _mm_and_si128(_mm_srli_epi16(qv, 4), m4), 8, d, false);
    }
}
template <class A, class V>
void dequant_wide(const q::block_q8_0* x, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d);
        V::scaled(y, _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs)), 0, d, true);
        V::scaled(y + 16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 16)), 0, d, true);
    }
}
template <class A, class V>
void dequant_wide(const q::block_q4_K* x, float* y, std::int64_t n) {
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i, y += q::qk_k) {
        const float d = h2f<A>(x[i].d), mn = h2f<A>(x[i].dmin);
        for (int j = 0; j < 4; ++j) {
            std::uint8_t s1, m1, s2, m2;
            scale_min_k4<A>(2 * j, x[i].scales, s1, m1);
            scale_min_k4<A>(2 * j + 1, x[i].scales, s2, m2);
            for (int h = 0; h < 2; ++h) {
                const __m128i qv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 32 * j + 16 * h));
                V::scaled_min(y + 64 * j + 16 * h, _mm_and_si128(qv, m4), d * s1, mn * m1);
                V::scaled_min(y + 64 * j + 32 + 16 * h, _mm_and_si128(_mm_srli_epi16(qv, 4), m4), d * s2, mn * m2);
            }
        }
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
template <class A, class V>
void dequant_wide(const q::block_q6_K* x, float* y, std::int64_t n) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i, y += q::qk_k) {
        const float d = h2f<A>(x[i].d);
        for (int half = 0; half < 2; ++half) {
            for (int g = 0; g < 2; ++g) {
                __m128i v[4];
                q6k_unpack16<A>(x[i].ql + 64 * half + 16 * g, x[i].qh + 32 * half + 16 * g, v);
                for (int k = 0; k < 4; ++k)
                    V::scaled(y + 128 * half + 32 * k + 16 * g, v[k], 32, d * static_cast<float>(x[i].scales[8 * half + g + 2 * k]), false);
            }
        }
    }
}

// ---- each width on its arches -----------------------------------------------------------------
template <class B>
concept wide_dequant = requires(const B* x, float* y) { dequant_wide<simd::avx2, dq8<simd::avx2>>(x, y, std::int64_t{}); };

template <class A, wide_dequant B>
void dequant(const B* x, float* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    dequant_wide<A, dq8<A>>(x, y, n);
}
template <class A, wide_dequant B>
void dequant(const B* x, float* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    dequant_wide<A, dq16<A>>(x, y, n);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
