// x86 bodies of the quantized GEMM of kernels/quant/gemm.hpp: the vector traits its
// width-generic tiles run on (qv512: 16 lanes per vector, AVX-512 BW and VNNI; qv256: 8
// lanes, two halves per group, AVX2), the AVX2 nibble decoders of the lane panels (one
// 256-bit vector per 32-element block), the AVX-512 16 x w word transpose into the x16
// order (two-source permutes), and the overloads that bind each arch to its traits. Part
// of kernels/quant/gemm.hpp, which includes it after its forward declarations.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "tessera/kernels/quant/common.hpp"
#include "tessera/kernels/quant/repack.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

// ---- vector traits -------------------------------------------------------------------
// Vector traits: 512-bit (16 blocks per vector) and 256-bit (8 blocks, two halves per group).
template <class A>
struct qv512 {
    using arch = A;
    using vi = __m512i;
    using vf = __m512;
    static constexpr int halves = 1;
    static constexpr bool vnni = at_least<A, simd::avx512vnni>;  // dpbusd is vpdpbusd (no i16 saturation)
    static TESSERA_ALWAYS_INLINE vi load(const void* p) { return _mm512_loadu_si512(p); }
    static TESSERA_ALWAYS_INLINE vf loadf(const void* p) { return _mm512_loadu_ps(p); }
    static TESSERA_ALWAYS_INLINE vi zero() { return _mm512_setzero_si512(); }
    static TESSERA_ALWAYS_INLINE vf zerof() { return _mm512_setzero_ps(); }
    static TESSERA_ALWAYS_INLINE vi dpbusd(vi acc, vi u, vi s) { return dpbusd512<A>(acc, u, s); }
    static TESSERA_ALWAYS_INLINE vi neg_shl(vi v, int sh) { return _mm512_sub_epi32(zero(), _mm512_sll_epi32(v, _mm_cvtsi32_si128(sh))); }
    static TESSERA_ALWAYS_INLINE vi flip(vi v) { return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80))); }
    static TESSERA_ALWAYS_INLINE vi abs8(vi v) { return _mm512_abs_epi8(v); }
    static TESSERA_ALWAYS_INLINE vi sign8(vi y, vi x) {
        return _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), zero(), y);  // x == 0 meets |x| == 0
    }
    static TESSERA_ALWAYS_INLINE vf fma(vi p, vf s, vf acc) { return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc); }
    static TESSERA_ALWAYS_INLINE vf mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
    static TESSERA_ALWAYS_INLINE float hsum(vf v) { return hsum512<A>(v); }
    static TESSERA_ALWAYS_INLINE vi lo4(vi v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0F)); }
    static TESSERA_ALWAYS_INLINE vi hi4(vi v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F)); }
    static TESSERA_ALWAYS_INLINE vf load_h(const void* p) {  // 16 f16
        return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
    }
    static TESSERA_ALWAYS_INLINE vf fnmadd(vf a, vf b, vf acc) { return _mm512_fnmadd_ps(a, b, acc); }  // acc - a*b
    static TESSERA_ALWAYS_INLINE vf fmadd(vf a, vf b, vf acc) { return _mm512_fmadd_ps(a, b, acc); }    // acc + a*b
    static TESSERA_ALWAYS_INLINE vi blend_odd(vi a, vi b) { return _mm512_mask_blend_epi32(0xAAAA, a, b); }  // odd slots of b
    static TESSERA_ALWAYS_INLINE vi swap_pairs(vi v) { return _mm512_shuffle_epi32(v, static_cast<_MM_PERM_ENUM>(0xB1)); }
    static TESSERA_ALWAYS_INLINE vf load_u8(const void* p) {  // 16 u8 as f32
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))));
    }
    static TESSERA_ALWAYS_INLINE vf pair(float a, float b, int) {  // lanes 0..7 a, 8..15 b
        return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
    }
};
template <class A>
struct qv256 {
    using arch = A;
    using vi = __m256i;
    using vf = __m256;
    static constexpr int halves = 2;
    static constexpr bool vnni = false;
    static TESSERA_ALWAYS_INLINE vi load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
    static TESSERA_ALWAYS_INLINE vf loadf(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }
    static TESSERA_ALWAYS_INLINE vi zero() { return _mm256_setzero_si256(); }
    static TESSERA_ALWAYS_INLINE vf zerof() { return _mm256_setzero_ps(); }
    static TESSERA_ALWAYS_INLINE vi dpbusd(vi acc, vi u, vi s) { return dpbusd256<A>(acc, u, s); }
    static TESSERA_ALWAYS_INLINE vi neg_shl(vi v, int sh) { return _mm256_sub_epi32(zero(), _mm256_sll_epi32(v, _mm_cvtsi32_si128(sh))); }
    static TESSERA_ALWAYS_INLINE vi flip(vi v) { return _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))); }
    static TESSERA_ALWAYS_INLINE vi abs8(vi v) { return _mm256_abs_epi8(v); }
    static TESSERA_ALWAYS_INLINE vi sign8(vi y, vi x) { return _mm256_sign_epi8(y, x); }
    static TESSERA_ALWAYS_INLINE vf fma(vi p, vf s, vf acc) { return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, acc); }
    static TESSERA_ALWAYS_INLINE vf mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
    static TESSERA_ALWAYS_INLINE float hsum(vf v) { return hsum256<A>(v); }
    static TESSERA_ALWAYS_INLINE vi lo4(vi v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0F)); }
    static TESSERA_ALWAYS_INLINE vi hi4(vi v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F)); }
    static TESSERA_ALWAYS_INLINE vf load_h(const void* p) {  // 8 f16
        return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    }
    static TESSERA_ALWAYS_INLINE vf fnmadd(vf a, vf b, vf acc) { return _mm256_fnmadd_ps(a, b, acc); }
    static TESSERA_ALWAYS_INLINE vf fmadd(vf a, vf b, vf acc) { return _mm256_fmadd_ps(a, b, acc); }
    static TESSERA_ALWAYS_INLINE vi blend_odd(vi a, vi b) { return _mm256_blend_epi32(a, b, 0xAA); }
    static TESSERA_ALWAYS_INLINE vi swap_pairs(vi v) { return _mm256_shuffle_epi32(v, 0xB1); }
    static TESSERA_ALWAYS_INLINE vf load_u8(const void* p) {  // 8 u8 as f32
        return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(static_cast<const __m128i*>(p))));
    }
    static TESSERA_ALWAYS_INLINE vf pair(float a, float b, int h) { return _mm256_set1_ps(h ? b : a); }  // half h's
};

// ---- decoders ---------------------------------------------------------------------------
// (nibbles32 and fifth_bits32 are in x86/quant/common.hpp, shared with vec_dot)
template <class A>
TESSERA_ALWAYS_INLINE void store32(std::uint8_t* u, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(u), v);
}
template <class A>
TESSERA_ALWAYS_INLINE void split_nibbles(const std::uint8_t* qs, std::uint8_t* u, bool fifth, const std::uint8_t* qh,
                                         simd::requires_arch<simd::avx2>) {
    const __m256i v = nibbles32<A>(qs);
    store32<A>(u, fifth ? _mm256_or_si256(v, fifth_bits32<A>(qh)) : v);
}
template <class A>
TESSERA_ALWAYS_INLINE void lookup_nibbles(const std::uint8_t* qs, const std::int8_t* table, int bias, std::uint8_t* u,
                                          simd::requires_arch<simd::avx2>) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
    const __m256i v = _mm256_shuffle_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(t), t, 1), nibbles32<A>(qs));
    store32<A>(u, _mm256_add_epi8(v, _mm256_set1_epi8(static_cast<char>(bias))));
}

// ---- the x16 transpose with two-source permutes ------------------------------------------
template <class A, int W>
TESSERA_ALWAYS_INLINE void lanes_to_x16(const std::uint8_t* in, std::byte* out, std::uint32_t flip,
                                        simd::requires_arch<simd::avx512bw>) {
    const __m512i fx = _mm512_set1_epi32(static_cast<int>(flip));
    const auto ld = [&](int i) { return _mm512_loadu_si512(in + 64 * i); };
    const auto st = [&](int t, __m512i v) { _mm512_storeu_si512(out + 64 * t, _mm512_xor_si512(v, fx)); };
    if constexpr (W == 4) {  // vector i: lanes 4i..4i+3; pairs -> [t: 8 lanes | t+1: 8 lanes]
        const __m512i i01 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
        const __m512i i23 = _mm512_add_epi32(i01, _mm512_set1_epi32(2));
        const __m512i a0 = ld(0), a1 = ld(1), a2 = ld(2), a3 = ld(3);
        const __m512i p01 = _mm512_permutex2var_epi32(a0, i01, a1), q01 = _mm512_permutex2var_epi32(a2, i01, a3);
        const __m512i p23 = _mm512_permutex2var_epi32(a0, i23, a1), q23 = _mm512_permutex2var_epi32(a2, i23, a3);
        st(0, _mm512_shuffle_i64x2(p01, q01, 0x44));
        st(1, _mm512_shuffle_i64x2(p01, q01, 0xEE));
        st(2, _mm512_shuffle_i64x2(p23, q23, 0x44));
        st(3, _mm512_shuffle_i64x2(p23, q23, 0xEE));
    } else {  // vector i: lanes 2i, 2i+1; quads of lanes -> [t: 4 lanes] x 4, pairs of quads -> [t: 8 | t+1: 8]
        const __m512i lo = _mm512_setr_epi32(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
        const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(4));
        const __m512i c01 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), c23 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
        __m512i p[4][2];  // p[q][h]: lanes 4q..4q+3, words 4h..4h+3, [t][lane]
        for (int q = 0; q < 4; ++q) {
            const __m512i a = ld(2 * q), b = ld(2 * q + 1);
            p[q][0] = _mm512_permutex2var_epi32(a, lo, b);
            p[q][1] = _mm512_permutex2var_epi32(a, hi, b);
        }
        for (int h = 0; h < 2; ++h) {
            const __m512i l01 = _mm512_permutex2var_epi64(p[0][h], c01, p[1][h]), l23 = _mm512_permutex2var_epi64(p[0][h], c23, p[1][h]);
            const __m512i r01 = _mm512_permutex2var_epi64(p[2][h], c01, p[3][h]), r23 = _mm512_permutex2var_epi64(p[2][h], c23, p[3][h]);
            st(4 * h + 0, _mm512_shuffle_i64x2(l01, r01, 0x44));
            st(4 * h + 1, _mm512_shuffle_i64x2(l01, r01, 0xEE));
            st(4 * h + 2, _mm512_shuffle_i64x2(l23, r23, 0x44));
            st(4 * h + 3, _mm512_shuffle_i64x2(l23, r23, 0xEE));
        }
    }
}

// ---- each arch on its traits ------------------------------------------------------------
template <class A, class B>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
           float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::avx2>) {
    qgemm_wide<A, qv256<A>>(k, m, n, x, xs, y, ys, out, ldo, work);
}
template <class A, class B>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
           float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::avx512bw>) {
    qgemm_wide<A, qv512<A>>(k, m, n, x, xs, y, ys, out, ldo, work);
}
template <class A, class B>
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, repack_layout lay, const std::byte* y,
              std::size_t ys, float* out, std::size_t ldo, simd::requires_arch<simd::avx2>) {
    if constexpr (repack_layout_has(repack_layout::rows4_x16, quant::block_traits<B>::id))
        if (lay == repack_layout::rows4_x16) return qgemm_rows4_wide<A, qv256<A>, B>(k, m, n, x, y, ys, out, ldo);
    qgemm_r4_unpacked<A, B>(k, m, n, x, lay, y, ys, out, ldo);  // the ARM layouts
}
template <class A, class B>
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, repack_layout lay, const std::byte* y,
              std::size_t ys, float* out, std::size_t ldo, simd::requires_arch<simd::avx512bw>) {
    if constexpr (repack_layout_has(repack_layout::rows4_x16, quant::block_traits<B>::id))
        if (lay == repack_layout::rows4_x16) return qgemm_rows4_wide<A, qv512<A>, B>(k, m, n, x, y, ys, out, ldo);
    qgemm_r4_unpacked<A, B>(k, m, n, x, lay, y, ys, out, ldo);  // the ARM layouts
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
