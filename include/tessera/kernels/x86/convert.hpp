// x86 bodies of the row conversions of kernels/convert.hpp: SSE4.2 with integer
// arithmetic on 4 lanes, AVX2 and AVX-512 with F16C for f16 and integer lanes for bf16;
// each hands its tail to the level below and finally to the scalar reference. And
// load_wide's bodies: one vector of an f16 (F16C) or bf16 (16-bit shift) row as f32.
// Part of kernels/convert.hpp, which includes it after the scalar references.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "tessera/core/f16.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace detail {

// ---- SSE4.2: integer arithmetic on 4 lanes ----------------------------------------
// f16 bits (zero-extended to 32) -> f32 bits.
template <class A>
TESSERA_ALWAYS_INLINE __m128i f16_to_f32_bits_sse(__m128i h) {
    const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
    const __m128i em = _mm_and_si128(h, _mm_set1_epi32(0x7fff));
    __m128i o = _mm_add_epi32(_mm_slli_epi32(em, 13), _mm_set1_epi32((127 - 15) << 23));
    const __m128i exp = _mm_and_si128(em, _mm_set1_epi32(0x7c00));
    // inf/NaN: exponent all ones -> move to 255, and quiet the NaNs
    const __m128i is_special = _mm_cmpeq_epi32(exp, _mm_set1_epi32(0x7c00));
    const __m128i is_nan = _mm_andnot_si128(_mm_cmpeq_epi32(em, _mm_set1_epi32(0x7c00)), is_special);
    o = _mm_add_epi32(o, _mm_and_si128(is_special, _mm_set1_epi32((128 - 16) << 23)));
    o = _mm_or_si128(o, _mm_and_si128(is_nan, _mm_set1_epi32(0x400000)));
    // zero/subnormal: renormalise through a float subtraction (exact)
    const __m128i is_sub = _mm_cmpeq_epi32(exp, _mm_setzero_si128());
    const __m128 magic = _mm_castsi128_ps(_mm_set1_epi32(113 << 23));
    const __m128 sub = _mm_sub_ps(_mm_castsi128_ps(_mm_add_epi32(o, _mm_set1_epi32(1 << 23))), magic);
    o = _mm_blendv_epi8(o, _mm_castps_si128(sub), is_sub);
    return _mm_or_si128(o, sign);
}

// f32 bits -> f16 bits in the low 16 of each lane.
template <class A>
TESSERA_ALWAYS_INLINE __m128i f32_to_f16_bits_sse(__m128i x) {
    const __m128i sign = _mm_and_si128(x, _mm_set1_epi32(static_cast<int>(0x80000000u)));
    const __m128i ax = _mm_xor_si128(x, sign);
    // normal range: add rounding bias (0xfff + lowest kept bit), shift down
    const __m128i odd = _mm_and_si128(_mm_srli_epi32(ax, 13), _mm_set1_epi32(1));
    __m128i nrm = _mm_add_epi32(ax, _mm_set1_epi32(static_cast<int>((15u - 127u) << 23) + 0xfff));
    nrm = _mm_srli_epi32(_mm_add_epi32(nrm, odd), 13);
    // subnormal range: a float add aligns the bits and rounds to nearest even
    const __m128i magic_i = _mm_set1_epi32(((127 - 15) + (23 - 10) + 1) << 23);
    const __m128i sub =
        _mm_sub_epi32(_mm_castps_si128(_mm_add_ps(_mm_castsi128_ps(ax), _mm_castsi128_ps(magic_i))), magic_i);
    // overflow and NaN
    const __m128i nan = _mm_or_si128(_mm_set1_epi32(0x7e00), _mm_and_si128(_mm_srli_epi32(ax, 13), _mm_set1_epi32(0x3ff)));
    const __m128i is_nan = _mm_cmpgt_epi32(ax, _mm_set1_epi32(0x7f800000));
    const __m128i is_big = _mm_cmpgt_epi32(ax, _mm_set1_epi32(0x477fefff));
    const __m128i is_sub = _mm_cmplt_epi32(ax, _mm_set1_epi32(0x38800000));
    __m128i o = _mm_blendv_epi8(nrm, sub, is_sub);
    o = _mm_blendv_epi8(o, _mm_set1_epi32(0x7c00), is_big);
    o = _mm_blendv_epi8(o, nan, is_nan);
    return _mm_or_si128(o, _mm_srli_epi32(sign, 16));
}

// f32 bits -> bf16 bits (low 16 of each lane): round to nearest even, NaN quiet.
template <class A>
TESSERA_ALWAYS_INLINE __m128i f32_to_bf16_bits_sse(__m128i x) {
    const __m128i lsb = _mm_and_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(1));
    const __m128i r = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(x, _mm_set1_epi32(0x7fff)), lsb), 16);
    const __m128i ax = _mm_and_si128(x, _mm_set1_epi32(0x7fffffff));
    const __m128i is_nan = _mm_cmpgt_epi32(ax, _mm_set1_epi32(0x7f800000));
    const __m128i q = _mm_or_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(0x40));
    return _mm_blendv_epi8(r, q, is_nan);
}

template <class A>
TESSERA_ALWAYS_INLINE __m128i pack_low16_sse(__m128i lo, __m128i hi) {  // 2x4 u32 (< 65536) -> 8 u16
    return _mm_packus_epi32(lo, hi);
}

template <class A>
void f16_to_f32(const f16* x, float* y, std::size_t n, simd::requires_arch<simd::sse4_2>) {
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m128i h = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
        _mm_storeu_ps(y + i, _mm_castsi128_ps(f16_to_f32_bits_sse<A>(h)));
    }
    f16_to_f32<A>(x + i, y + i, n - i, simd::scalar{});
}
template <class A>
void f32_to_f16(const float* x, f16* y, std::size_t n, simd::requires_arch<simd::sse4_2>) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i a = f32_to_f16_bits_sse<A>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        const __m128i b = f32_to_f16_bits_sse<A>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 4)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), pack_low16_sse<A>(a, b));
    }
    f32_to_f16<A>(x + i, y + i, n - i, simd::scalar{});
}
template <class A>
void bf16_to_f32(const bf16* x, float* y, std::size_t n, simd::requires_arch<simd::sse4_2>) {
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m128i h = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_slli_epi32(h, 16));
    }
    bf16_to_f32<A>(x + i, y + i, n - i, simd::scalar{});
}
template <class A>
void f32_to_bf16(const float* x, bf16* y, std::size_t n, simd::requires_arch<simd::sse4_2>) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i a = f32_to_bf16_bits_sse<A>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        const __m128i b = f32_to_bf16_bits_sse<A>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 4)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), pack_low16_sse<A>(a, b));
    }
    f32_to_bf16<A>(x + i, y + i, n - i, simd::scalar{});
}

// ---- AVX2: F16C for f16; 8-lane integer arithmetic for bf16 -----------------------
template <class A>
void f16_to_f32(const f16* x, float* y, std::size_t n, simd::requires_arch<simd::avx2>) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
    f16_to_f32<A>(x + i, y + i, n - i, simd::sse4_2{});
}
template <class A>
void f32_to_f16(const float* x, f16* y, std::size_t n, simd::requires_arch<simd::avx2>) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    f32_to_f16<A>(x + i, y + i, n - i, simd::sse4_2{});
}
template <class A>
void bf16_to_f32(const bf16* x, float* y, std::size_t n, simd::requires_arch<simd::avx2>) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_slli_epi32(h, 16));
    }
    bf16_to_f32<A>(x + i, y + i, n - i, simd::sse4_2{});
}

// ---- AVX-512: 16 lanes -------------------------------------------------------------
template <class A>
void f16_to_f32(const f16* x, float* y, std::size_t n, simd::requires_arch<simd::avx512bw>) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
    f16_to_f32<A>(x + i, y + i, n - i, simd::avx2{});
}
template <class A>
void f32_to_f16(const float* x, f16* y, std::size_t n, simd::requires_arch<simd::avx512bw>) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    f32_to_f16<A>(x + i, y + i, n - i, simd::avx2{});
}
template <class A>
void bf16_to_f32(const bf16* x, float* y, std::size_t n, simd::requires_arch<simd::avx512bw>) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
        _mm512_storeu_si512(y + i, _mm512_slli_epi32(h, 16));
    }
    bf16_to_f32<A>(x + i, y + i, n - i, simd::avx2{});
}
template <class A>
void f32_to_bf16(const float* x, bf16* y, std::size_t n, simd::requires_arch<simd::avx512bw>) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i v = _mm512_loadu_si512(x + i);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(v, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(v, _mm512_set1_epi32(0x7fff)), lsb), 16);
        const __m512i ax = _mm512_and_si512(v, _mm512_set1_epi32(0x7fffffff));
        const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(ax, _mm512_set1_epi32(0x7f800000));
        const __m512i q = _mm512_or_si512(_mm512_srli_epi32(v, 16), _mm512_set1_epi32(0x40));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, r, q)));
    }
    f32_to_bf16<A>(x + i, y + i, n - i, simd::sse4_2{});
}

// ---- load_wide: one vector of a 16-bit row as f32 ---------------------------------
template <class A, class T>
    requires(std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
TESSERA_ALWAYS_INLINE xsimd::batch<float, typename A::xsimd_arch> load_wide(const T* p, simd::requires_arch<simd::avx2>) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same_v<T, f16>)
        return _mm256_cvtph_ps(v);
    else
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}
template <class A, class T>
    requires(std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
TESSERA_ALWAYS_INLINE xsimd::batch<float, typename A::xsimd_arch> load_wide(const T* p,
                                                                          simd::requires_arch<simd::avx512bw>) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (std::is_same_v<T, f16>)
        return _mm512_cvtph_ps(v);
    else
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

}  // namespace detail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
