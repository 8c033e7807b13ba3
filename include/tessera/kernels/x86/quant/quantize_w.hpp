// x86 bodies of the q4_0 weight quantizer of kernels/quant/quantize_w.hpp (AVX2, 8 lanes;
// AVX-512, 16 lanes), byte-identical with the scalar body there.
// Part of kernels/quant/quantize_w.hpp, which includes it after the scalar body.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstdint>

#include <immintrin.h>

#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

template <class A>
void quantize_q4_0(const float* x, quant::block_q4_0* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
        __m256 v[4], a[4];
        for (int k = 0; k < 4; ++k) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            a[k] = _mm256_andnot_ps(sign, v[k]);
        }
        const float amax = hmax256<A>(_mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3])));
        float max = 0.0f;
        if (amax > 0.0f) {
            const __m256 m = _mm256_set1_ps(amax);
            unsigned bits = 0;
            for (int k = 0; k < 4; ++k)
                bits |= static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a[k], m, _CMP_EQ_OQ))) << (8 * k);
            max = x[__builtin_ctz(bits)];
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f2h<A>(d);
        const __m256 vid = _mm256_set1_ps(id), h = _mm256_set1_ps(8.5f);
        const __m256i k15 = _mm256_set1_epi32(15);
        __m256i q[4];
        for (int k = 0; k < 4; ++k)
            q[k] = _mm256_min_epi32(_mm256_cvttps_epi32(_mm256_add_ps(rounded<A>(_mm256_mul_ps(v[k], vid)), h)), k15);
        const __m256i lo = _mm256_or_si256(q[0], _mm256_slli_epi32(q[2], 4));  // elements 0-7 | 16-23
        const __m256i hi = _mm256_or_si256(q[1], _mm256_slli_epi32(q[3], 4));  // elements 8-15 | 24-31
        const __m256i p16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
        const __m128i p8 = _mm_packus_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs), p8);
    }
}

template <class A>
void quantize_q4_0(const float* x, quant::block_q4_0* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
        const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
        const float amax = hmax512<A>(_mm512_max_ps(a0, a1));
        float max = 0.0f;
        if (amax > 0.0f) {
            const __m512 m = _mm512_set1_ps(amax);
            const unsigned bits = static_cast<unsigned>(_mm512_cmp_ps_mask(a0, m, _CMP_EQ_OQ)) |
                                  (static_cast<unsigned>(_mm512_cmp_ps_mask(a1, m, _CMP_EQ_OQ)) << 16);
            max = x[__builtin_ctz(bits)];
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f2h<A>(d);
        const __m512 vid = _mm512_set1_ps(id), h = _mm512_set1_ps(8.5f);
        const __m512i k15 = _mm512_set1_epi32(15);
        const __m512i q0 = _mm512_min_epi32(_mm512_cvttps_epi32(_mm512_add_ps(rounded<A>(_mm512_mul_ps(v0, vid)), h)), k15);
        const __m512i q1 = _mm512_min_epi32(_mm512_cvttps_epi32(_mm512_add_ps(rounded<A>(_mm512_mul_ps(v1, vid)), h)), k15);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs),
                         _mm512_cvtepi32_epi8(_mm512_or_si512(q0, _mm512_slli_epi32(q1, 4))));
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
