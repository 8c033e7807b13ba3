// x86 bodies of the f32 GEMM of kernels/gemm.hpp: the in-register 8 x 8 (AVX2) and
// 16 x 16 (AVX-512) transposes that pack a's rows into [k][MR] panels; the tails go to
// the scalar transpose there. Part of kernels/gemm.hpp, which includes it after that.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstddef>

#include <immintrin.h>

#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace detail {

// AVX2 and up transpose a vector's width of rows at once.
template <class A>
constexpr std::size_t fgemm_transpose_rows(simd::requires_arch<simd::avx2>) {
    return A::xsimd_arch::alignment() / sizeof(float);  // fgemm_shape<A>::w
}
template <class A, std::size_t G>
TESSERA_ALWAYS_INLINE void fgemm_transpose(const float* const* src, std::size_t n, float* dst, std::size_t ld,
                                           simd::requires_arch<simd::avx2>) {
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256 r[8], t[8], u[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src[i] + k);
        for (int j = 0; j < 4; ++j) {
            t[2 * j] = _mm256_unpacklo_ps(r[2 * j], r[2 * j + 1]);
            t[2 * j + 1] = _mm256_unpackhi_ps(r[2 * j], r[2 * j + 1]);
        }
        for (int j = 0; j < 2; ++j) {  // u[4j + e], 128-bit lane L: rows 4j..4j+3 of column 4L + e
            u[4 * j] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0x44);
            u[4 * j + 1] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0xEE);
            u[4 * j + 2] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0x44);
            u[4 * j + 3] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0xEE);
        }
        for (int e = 0; e < 4; ++e) {
            _mm256_store_ps(dst + (k + e) * ld, _mm256_permute2f128_ps(u[e], u[4 + e], 0x20));
            _mm256_store_ps(dst + (k + 4 + e) * ld, _mm256_permute2f128_ps(u[e], u[4 + e], 0x31));
        }
    }
    fgemm_transpose<A, G>(src, k, n, dst, ld);
}
template <class A, std::size_t G>
TESSERA_ALWAYS_INLINE void fgemm_transpose(const float* const* src, std::size_t n, float* dst, std::size_t ld,
                                           simd::requires_arch<simd::avx512bw>) {
    std::size_t k = 0;
    for (; k + 16 <= n; k += 16) {
        __m512 r[16], t[16], u[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src[i] + k);
        for (int j = 0; j < 8; ++j) {
            t[2 * j] = _mm512_unpacklo_ps(r[2 * j], r[2 * j + 1]);
            t[2 * j + 1] = _mm512_unpackhi_ps(r[2 * j], r[2 * j + 1]);
        }
        for (int j = 0; j < 4; ++j) {  // u[4j + e], 128-bit lane L: rows 4j..4j+3 of column 4L + e
            u[4 * j] = _mm512_shuffle_ps(t[4 * j], t[4 * j + 2], 0x44);
            u[4 * j + 1] = _mm512_shuffle_ps(t[4 * j], t[4 * j + 2], 0xEE);
            u[4 * j + 2] = _mm512_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0x44);
            u[4 * j + 3] = _mm512_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0xEE);
        }
        for (int e = 0; e < 4; ++e) {
            const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88), v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xDD);
            const __m512 w0 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88), w1 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xDD);
            _mm512_store_ps(dst + (k + e) * ld, _mm512_shuffle_f32x4(v0, w0, 0x88));
            _mm512_store_ps(dst + (k + 4 + e) * ld, _mm512_shuffle_f32x4(v1, w1, 0x88));
            _mm512_store_ps(dst + (k + 8 + e) * ld, _mm512_shuffle_f32x4(v0, w0, 0xDD));
            _mm512_store_ps(dst + (k + 12 + e) * ld, _mm512_shuffle_f32x4(v1, w1, 0xDD));
        }
    }
    fgemm_transpose<A, G>(src, k, n, dst, ld);
}

}  // namespace detail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
