// x86 bodies of the quantized GEMM of kernels/quant/gemm.hpp: the vector traits the
// width-generic tiles there run on (qv512: 16 blocks per vector, AVX-512 BW and VNNI;
// qv256: 8 blocks, two halves per group, AVX2) and the overloads that bind each arch to
// its traits. Part of kernels/quant/gemm.hpp, which includes it after the tiles.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstddef>
#include <cstdint>

#include <immintrin.h>

#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace qg = ::tessera::quant;

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
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
              float* out, std::size_t ldo, simd::requires_arch<simd::avx2>) {
    qgemm_rows4<A, qv256<A>, B>(k, m, n, x, y, ys, out, ldo);
}

template <class A, class B>
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
              float* out, std::size_t ldo, simd::requires_arch<simd::avx512bw>) {
    qgemm_rows4<A, qv512<A>, B>(k, m, n, x, y, ys, out, ldo);
}

template <class A>
void qgemm_k4(std::int64_t k, std::int64_t m, std::int64_t n, const qg::block_q4_K* x, std::size_t xs, const std::byte* y,
              std::size_t ys, float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::avx2>) {
    qgemm_k4_wide<A, qv256<A>>(k, m, n, x, xs, y, ys, out, ldo, work);
}

template <class A>
void qgemm_k4(std::int64_t k, std::int64_t m, std::int64_t n, const qg::block_q4_K* x, std::size_t xs, const std::byte* y,
              std::size_t ys, float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::avx512bw>) {
    qgemm_k4_wide<A, qv512<A>>(k, m, n, x, xs, y, ys, out, ldo, work);
}

template <class A>
void qgemm_k4_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
                 float* out, std::size_t ldo, simd::requires_arch<simd::avx2>) {
    qgemm_k4_rows4<A, qv256<A>>(k, m, n, x, y, ys, out, ldo);
}

template <class A>
void qgemm_k4_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
                 float* out, std::size_t ldo, simd::requires_arch<simd::avx512bw>) {
    qgemm_k4_rows4<A, qv512<A>>(k, m, n, x, y, ys, out, ldo);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
