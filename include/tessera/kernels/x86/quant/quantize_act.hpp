// x86 bodies of the activation quantizers of kernels/quant/quantize_act.hpp (q8_0, q8_1,
// q8_K on AVX2 and AVX-512), producing the same bytes as the scalar bodies there.
// Part of kernels/quant/quantize_act.hpp, which includes it after the scalar bodies.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

using quant::block_q8_0;
using quant::block_q8_1;
using quant::block_q8_K;

// ---- AVX2 ------------------------------------------------------------------------------
// roundf on 8 lanes: truncate |v|, add one where the fraction is at least 1/2, put
// the sign back. Exact, unlike adding 0.5 before truncation.
template <class A>
TESSERA_ALWAYS_INLINE __m256i round_away_epi32_256(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 a = _mm256_andnot_ps(sign, v);
    __m256 t = _mm256_round_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 ge = _mm256_cmp_ps(_mm256_sub_ps(a, t), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    t = _mm256_add_ps(t, _mm256_and_ps(ge, _mm256_set1_ps(1.0f)));
    return _mm256_cvttps_epi32(_mm256_or_ps(t, _mm256_and_ps(sign, v)));
}

// 32 i32 (four vectors) -> 32 i8 in order.
template <class A>
TESSERA_ALWAYS_INLINE __m256i pack_i32x32_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <class A, class B>
void quantize_q8_01_avx2(const float* x, B* y, std::int64_t n) {
    const std::int64_t nb = n / 32;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (std::int64_t i = 0; i < nb; ++i, x += 32) {
        __m256 v[4];
        for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
        const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                       _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
        const float amax = hmax256<A>(m);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f2h<A>(d);
        const __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int k = 0; k < 4; ++k) q[k] = round_away_epi32_256<A>(_mm256_mul_ps(v[k], vid));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), pack_i32x32_i8<A>(q[0], q[1], q[2], q[3]));
        if constexpr (std::is_same_v<B, block_q8_1>) {
            const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
            y[i].s = f2h<A>(static_cast<float>(hsum256_i32<A>(s)) * d);
        }
    }
}

template <class A>
void quantize_q8_0(const float* x, block_q8_0* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    quantize_q8_01_avx2<A>(x, y, n);
}
template <class A>
void quantize_q8_1(const float* x, block_q8_1* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    quantize_q8_01_avx2<A>(x, y, n);
}

template <class A>
void quantize_q8_K(const float* x, block_q8_K* y, std::int64_t n, simd::requires_arch<simd::avx2>) {
    const std::int64_t nb = n / quant::qk_k;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (std::int64_t i = 0; i < nb; ++i, x += quant::qk_k) {
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < 32; ++k) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
        const float amax = hmax256<A>(m);
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        float max = 0.0f;
        const __m256 vam = _mm256_set1_ps(amax);
        for (int k = 0; k < 32; ++k) {
            const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), vam, _CMP_EQ_OQ));
            if (mask) {
                max = x[8 * k + __builtin_ctz(static_cast<unsigned>(mask))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vis = _mm256_set1_ps(iscale);
        const __m256i hi = _mm256_set1_epi32(127);
        for (int g = 0; g < 8; ++g) {  // 32 values per group
            __m256i q[4];
            for (int k = 0; k < 4; ++k)
                q[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vis, _mm256_loadu_ps(x + 32 * g + 8 * k))), hi);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + 32 * g), pack_i32x32_i8<A>(q[0], q[1], q[2], q[3]));
            y[i].bsums[2 * g] = static_cast<std::int16_t>(hsum256_i32<A>(_mm256_add_epi32(q[0], q[1])));
            y[i].bsums[2 * g + 1] = static_cast<std::int16_t>(hsum256_i32<A>(_mm256_add_epi32(q[2], q[3])));
        }
        y[i].d = 1.0f / iscale;
    }
}

// ---- AVX-512 ---------------------------------------------------------------------------
template <class A>
TESSERA_ALWAYS_INLINE __m512i round_away_epi32_512(__m512 v) {
    const __m512 a = _mm512_abs_ps(v);
    __m512 t = _mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 ge = _mm512_cmp_ps_mask(_mm512_sub_ps(a, t), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    t = _mm512_mask_add_ps(t, ge, t, _mm512_set1_ps(1.0f));
    const __m512i s = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    return _mm512_cvttps_epi32(_mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), s)));
}

template <class A, class B>
void quantize_q8_01_avx512(const float* x, B* y, std::int64_t n) {
    const std::int64_t nb = n / 32;
    for (std::int64_t i = 0; i < nb; ++i, x += 32) {
        const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        const __m512 m = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1));
        const float amax = hmax512<A>(m);
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f2h<A>(d);
        const __m512 vid = _mm512_set1_ps(id);
        const __m512i q0 = round_away_epi32_512<A>(_mm512_mul_ps(v0, vid));
        const __m512i q1 = round_away_epi32_512<A>(_mm512_mul_ps(v1, vid));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs), _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs + 16), _mm512_cvtepi32_epi8(q1));
        if constexpr (std::is_same_v<B, block_q8_1>)
            y[i].s = f2h<A>(static_cast<float>(hsum512_i32<A>(_mm512_add_epi32(q0, q1))) * d);
    }
}

template <class A>
void quantize_q8_0(const float* x, block_q8_0* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    quantize_q8_01_avx512<A>(x, y, n);
}
template <class A>
void quantize_q8_1(const float* x, block_q8_1* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    quantize_q8_01_avx512<A>(x, y, n);
}

template <class A>
void quantize_q8_K(const float* x, block_q8_K* y, std::int64_t n, simd::requires_arch<simd::avx512bw>) {
    const std::int64_t nb = n / quant::qk_k;
    for (std::int64_t i = 0; i < nb; ++i, x += quant::qk_k) {
        __m512 m = _mm512_setzero_ps();
        for (int k = 0; k < 16; ++k) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)));
        const float amax = hmax512<A>(m);
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        float max = 0.0f;
        const __m512 vam = _mm512_set1_ps(amax);
        for (int k = 0; k < 16; ++k) {
            const __mmask16 mask = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * k)), vam, _CMP_EQ_OQ);
            if (mask) {
                max = x[16 * k + __builtin_ctz(static_cast<unsigned>(mask))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 vis = _mm512_set1_ps(iscale);
        const __m512i hi = _mm512_set1_epi32(127);
        alignas(64) std::int32_t bs[16];
        for (int k = 0; k < 16; ++k) {
            const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vis, _mm512_loadu_ps(x + 16 * k))), hi);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs + 16 * k), _mm512_cvtepi32_epi8(q));
            bs[k] = hsum512_i32<A>(q);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].bsums),
                            _mm512_cvtepi32_epi16(_mm512_load_si512(bs)));
        y[i].d = 1.0f / iscale;
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
