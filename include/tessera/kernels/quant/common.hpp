// Helpers shared by the quantized-block kernels (kernels/quant/*.hpp).
//
// Everything here is a template on the arch tag A, so that a copy compiled with wide
// flags in a per-arch unit carries that arch in its symbol name (see
// tests/simd/check_odr.py): f16 conversions, the 6-bit K-quant scale unpacking, the
// lookup tables of iq4_nl and mxfp4, and a few vector reductions.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

template <class A, class B>
inline constexpr bool at_least = std::is_base_of_v<B, A>;

// ---- f16 <-> f32 ------------------------------------------------------------------
// The bit-exact conversions of core/f16.hpp, restated as arch templates; from AVX2 on
// the F16C instructions do the same thing.
template <class A>
TESSERA_ALWAYS_INLINE float h2f_bits(std::uint16_t h) noexcept {
    if constexpr (at_least<A, simd::avx2>) {
        return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
    } else {
        const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
        std::uint32_t e = (h >> 10) & 0x1fu;
        std::uint32_t m = h & 0x3ffu;
        std::uint32_t bits;
        if (e == 0x1fu) {
            bits = m == 0 ? (sign | 0x7f800000u) : (sign | 0x7fc00000u | (m << 13));
        } else if (e == 0) {
            if (m == 0) {
                bits = sign;
            } else {
                e = 1;
                while ((m & 0x400u) == 0) {
                    m <<= 1;
                    --e;
                }
                bits = sign | ((e + 112u) << 23) | ((m & 0x3ffu) << 13);
            }
        } else {
            bits = sign | ((e + 112u) << 23) | (m << 13);
        }
        return __builtin_bit_cast(float, bits);
    }
}
template <class A>
TESSERA_ALWAYS_INLINE float h2f(f16 h) noexcept {
    return h2f_bits<A>(h.bits);
}

template <class A>
TESSERA_ALWAYS_INLINE f16 f2h(float v) noexcept {
    if constexpr (at_least<A, simd::avx2>) {
        const __m128i h = _mm_cvtps_ph(_mm_set_ss(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        return f16::from_bits(static_cast<std::uint16_t>(_mm_extract_epi16(h, 0)));
    } else {
        const std::uint32_t x = __builtin_bit_cast(std::uint32_t, v);
        const std::uint32_t sign = (x >> 16) & 0x8000u;
        const std::uint32_t ax = x & 0x7fffffffu;
        std::uint32_t h;
        if (ax > 0x7f800000u) {
            h = sign | 0x7e00u | ((ax >> 13) & 0x3ffu);
        } else if (ax >= 0x477ff000u) {
            h = sign | 0x7c00u;
        } else if (ax < 0x38800000u) {
            const std::uint32_t e = ax >> 23;
            const std::uint32_t shift = 126u - e;
            if (e == 0 || shift > 24u) {
                h = sign;
            } else {
                const std::uint32_t mm = (ax & 0x7fffffu) | 0x800000u;
                std::uint32_t r = mm >> shift;
                const std::uint32_t rem = mm & ((1u << shift) - 1u);
                const std::uint32_t half = 1u << (shift - 1u);
                if (rem > half || (rem == half && (r & 1u))) ++r;
                h = sign | r;
            }
        } else {
            h = (ax >> 13) - ((127u - 15u) << 10);
            const std::uint32_t rem = ax & 0x1fffu;
            if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
            h |= sign;
        }
        return f16::from_bits(static_cast<std::uint16_t>(h));
    }
}

// ggml's nearest_int: round to nearest, ties to even, for |x| < 2^22.
template <class A>
TESSERA_ALWAYS_INLINE int nearest_int(float x) noexcept {
    const float v = x + 12582912.f;
    std::int32_t i;
    std::memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

// C's roundf: round half away from zero.
template <class A>
TESSERA_ALWAYS_INLINE float round_away(float x) noexcept {
    return __builtin_roundf(x);
}

// 2^(e-128) as a float (mxfp4's E8M0 scale, halved because its table is doubled).
template <class A>
TESSERA_ALWAYS_INLINE float e8m0_half(std::uint8_t e) noexcept {
    const std::uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<std::uint32_t>(e - 1) << 23);
    return __builtin_bit_cast(float, bits);
}

// The 6-bit scale and min number j (0..7) of a q4_K / q5_K super-block.
template <class A>
TESSERA_ALWAYS_INLINE void scale_min_k4(int j, const std::uint8_t* q, std::uint8_t& d, std::uint8_t& m) noexcept {
    if (j < 4) {
        d = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        d = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// All sixteen 6-bit scales of a q3_K super-block, unbiased (-32..31).
template <class A>
TESSERA_ALWAYS_INLINE void q3k_scales(const std::uint8_t* s, std::int8_t out[16]) noexcept {
    for (int j = 0; j < 16; ++j) {
        const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
        const int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = static_cast<std::int8_t>((lo | (hi << 4)) - 32);
    }
}

// Lookup tables, as static members so each arch gets its own tagged copy.
template <class A>
struct tables {
    static constexpr std::int8_t iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                              1,    13,   25,  38,  53,  69,  89,  113};
    static constexpr std::int8_t mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    static constexpr std::uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
};

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

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE
