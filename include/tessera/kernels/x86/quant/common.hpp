// x86 bodies of the quantized-kernel helpers of kernels/quant/common.hpp: the F16C
// conversions (AVX2 and up), horizontal reductions, 512-bit broadcasts and the u8 x s8 /
// i16 x i16 dot products (VNNI where present), the AVX2 nibble and fifth-bit decoders of a
// 32-element block. Compiled only for x86 targets.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "tessera/core/f16.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

using simd::at_least;

// ---- f16 <-> f32 with F16C ----------------------------------------------------------
template <class A>
TESSERA_ALWAYS_INLINE float h2f_bits(std::uint16_t h, simd::requires_arch<simd::avx2>) noexcept {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}
template <class A>
TESSERA_ALWAYS_INLINE f16 f2h(float v, simd::requires_arch<simd::avx2>) noexcept {
    const __m128i h = _mm_cvtps_ph(_mm_set_ss(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return f16::from_bits(static_cast<std::uint16_t>(_mm_extract_epi16(h, 0)));
}

// GCC contracts a*b + c written with AVX2 intrinsics into an FMA in -march=x86-64-v3
// units (its _mm256_mul_ps is plain vector arithmetic). Where the reference rounds the
// product before adding, pass the product through this empty asm, which forces it to
// be materialized.
template <class A, class V>
TESSERA_ALWAYS_INLINE V rounded(V v) noexcept {
    __asm__("" : "+x"(v));
    return v;
}

// ---- vector reductions ---------------------------------------------------------------
template <class A>
TESSERA_ALWAYS_INLINE float hsum256(__m256 v) noexcept {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
template <class A>
TESSERA_ALWAYS_INLINE float hmax256(__m256 v) noexcept {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
template <class A>
TESSERA_ALWAYS_INLINE int hsum256_i32(__m256i v) noexcept {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}
template <class A>
TESSERA_ALWAYS_INLINE float hsum512(__m512 v) noexcept {
    return hsum256<A>(_mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1)));
}

// (GCC 12's _mm512_reduce_*, _mm512_castps512_ps256 and _mm512_extracti64x4_epi64 trip -Wuninitialized on
// their own _mm256_undefined_*: these go through extractf32x8, which does not.)
template <class A>
TESSERA_ALWAYS_INLINE float hmax512(__m512 v) noexcept {
    return hmax256<A>(_mm256_max_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1)));
}
template <class A>
TESSERA_ALWAYS_INLINE int hsum512_i32(__m512i v) noexcept {
    return hsum256_i32<A>(_mm256_add_epi32(_mm512_extracti32x8_epi32(v, 0), _mm512_extracti32x8_epi32(v, 1)));
}

// 128- and 256-bit broadcasts to 512 bits through the masked forms, whose unmasked
// siblings trip the same GCC 12 warning.
template <class A>
TESSERA_ALWAYS_INLINE __m512i bcast128(__m128i v) noexcept {
    return _mm512_mask_broadcast_i32x4(_mm512_setzero_si512(), 0xFFFF, v);
}
template <class A>
TESSERA_ALWAYS_INLINE __m512i bcast256(__m256i v) noexcept {
    return _mm512_mask_broadcast_i64x4(_mm512_setzero_si512(), 0xFF, v);
}

// Four f16 values -> four floats in one conversion.
template <class A>
TESSERA_ALWAYS_INLINE __m128 h2f_x4(std::uint16_t a, std::uint16_t b, std::uint16_t c, std::uint16_t d) noexcept {
    const std::uint64_t w = static_cast<std::uint64_t>(a) | (static_cast<std::uint64_t>(b) << 16) |
                            (static_cast<std::uint64_t>(c) << 32) | (static_cast<std::uint64_t>(d) << 48);
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(w)));
}

// u8 x s8 dot product of groups of four bytes into i32 lanes, added to acc:
// vpdpbusd with AVX-512 VNNI, vpmaddubsw + vpmaddwd otherwise. The pairwise i16
// sums of vpmaddubsw saturate only if both products exceed 16383: the callers keep
// the unsigned operand below 128 or the signed one away from -128.
template <class A>
TESSERA_ALWAYS_INLINE __m512i dpbusd512(__m512i acc, __m512i u, __m512i s) noexcept {
    if constexpr (at_least<A, simd::avx512vnni>) {
        return _mm512_dpbusd_epi32(acc, u, s);
    } else {
        const __m512i p = _mm512_maddubs_epi16(u, s);
        return _mm512_add_epi32(acc, _mm512_madd_epi16(p, _mm512_set1_epi16(1)));
    }
}
// i16 x i16 pairs into i32 lanes, added to acc (vpdpwssd with VNNI).
template <class A>
TESSERA_ALWAYS_INLINE __m512i dpwssd512(__m512i acc, __m512i a, __m512i b) noexcept {
    if constexpr (at_least<A, simd::avx512vnni>) {
        return _mm512_dpwssd_epi32(acc, a, b);
    } else {
        return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
    }
}
template <class A>
TESSERA_ALWAYS_INLINE __m256i dpbusd256(__m256i acc, __m256i u, __m256i s) noexcept {
    if constexpr (at_least<A, simd::avx512vnni>) {
        return _mm256_dpbusd_epi32(acc, u, s);
    } else {
        const __m256i p = _mm256_maddubs_epi16(u, s);
        return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
    }
}

// ---- 32-element blocks in one 256-bit vector (AVX2) ----------------------------------------
// The 32 nibbles of 16 bytes (q4_0 order: low nibbles elements 0..15, high 16..31) as
// bytes in element order; and the fifth bits of q5_0 / q5_1 (bit j of the u32 at qh) as
// byte j = 16 where set.
template <class A>
TESSERA_ALWAYS_INLINE __m256i nibbles32(const std::uint8_t* qs) {  // elements 0..31 as bytes 0..31
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)), m = _mm_set1_epi8(15);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, m)), _mm_and_si128(_mm_srli_epi16(v, 4), m), 1);
}
template <class A>
TESSERA_ALWAYS_INLINE __m256i fifth_bits32(const std::uint8_t* qh) {  // byte j = 16 if bit j of the u32 at qh is set
    std::uint32_t h;
    std::memcpy(&h, qh, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(h)),
                                               _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
