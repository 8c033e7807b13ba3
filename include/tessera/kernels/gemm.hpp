// f32 GEMM in the dot-product form mul_mat needs: both operands are row-major with
// K contiguous, c[n*ldc + m] = sum_k a[m*lda + k] * b[n*ldb + k].
//
// The xsimd body computes RM x RN tiles of dot products at once (4 x 6 with 32 vector
// registers, 3 x 4 with 16): per step of one vector of k it loads RM rows of a and
// RN rows of b and issues RM*RN FMAs, so it is FMA-bound rather than load-bound. K is
// cut into blocks of at most 2048 (a's tile stays in L1) and b's rows into groups of
// 96 (they stay in L2 while every tile of a streams past). Rows need no packing: they
// are already contiguous in K.
#pragma once

#include <algorithm>
#include <cstddef>

#include "tessera/config.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

namespace detail {

template <class A>
void gemm_f32(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc,
              std::size_t M, std::size_t N, std::size_t K, simd::requires_arch<simd::scalar>) {
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t m = 0; m < M; ++m) {
            float s = 0.f;
            const float* x = a + m * lda;
            const float* y = b + n * ldb;
            for (std::size_t k = 0; k < K; ++k) s += x[k] * y[k];
            c[n * ldc + m] = s;
        }
}

template <class A, int TM, int TN>
TESSERA_ALWAYS_INLINE void gemm_tile(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                                     std::size_t ldc, std::size_t K, bool accumulate) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    B acc[TM][TN];
    for (int m = 0; m < TM; ++m)
        for (int n = 0; n < TN; ++n) acc[m][n] = B(0.f);
    std::size_t k = 0;
    for (; k + w <= K; k += w) {
        B av[TM];
        for (int m = 0; m < TM; ++m) av[m] = B::load_unaligned(a + static_cast<std::size_t>(m) * lda + k);
        for (int n = 0; n < TN; ++n) {
            const B bv = B::load_unaligned(b + static_cast<std::size_t>(n) * ldb + k);
            for (int m = 0; m < TM; ++m) acc[m][n] = xsimd::fma(av[m], bv, acc[m][n]);
        }
    }
    float tail[TM][TN] = {};
    for (; k < K; ++k)
        for (int m = 0; m < TM; ++m)
            for (int n = 0; n < TN; ++n)
                tail[m][n] += a[static_cast<std::size_t>(m) * lda + k] * b[static_cast<std::size_t>(n) * ldb + k];
    for (int n = 0; n < TN; ++n)
        for (int m = 0; m < TM; ++m) {
            const float v = xsimd::hadd(acc[m][n]) + tail[m][n];
            float& o = c[static_cast<std::size_t>(n) * ldc + static_cast<std::size_t>(m)];
            o = accumulate ? o + v : v;
        }
}

// Runs the tile of size (tm, tn) <= (TM, TN), chosen at run time.
template <class A, int TM, int TN>
TESSERA_ALWAYS_INLINE void gemm_tile_n(int tn, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                       float* c, std::size_t ldc, std::size_t K, bool acc) {
    if constexpr (TN > 1) {
        if (tn < TN) return gemm_tile_n<A, TM, TN - 1>(tn, a, lda, b, ldb, c, ldc, K, acc);
    }
    gemm_tile<A, TM, TN>(a, lda, b, ldb, c, ldc, K, acc);
}
template <class A, int TM, int TN>
void gemm_tile_mn(int tm, int tn, const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                  std::size_t ldc, std::size_t K, bool acc) {
    if constexpr (TM > 1) {
        if (tm < TM) return gemm_tile_mn<A, TM - 1, TN>(tm, tn, a, lda, b, ldb, c, ldc, K, acc);
    }
    gemm_tile_n<A, TM, TN>(tn, a, lda, b, ldb, c, ldc, K, acc);
}

template <class A>
void gemm_f32(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc,
              std::size_t M, std::size_t N, std::size_t K, simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr int RM = B::size >= 16 ? 4 : 3;
    constexpr int RN = B::size >= 16 ? 6 : 4;
    constexpr std::size_t kc_max = 2048;
    constexpr std::size_t nc = 16 * RN;
    const std::size_t n_kb = (K + kc_max - 1) / kc_max;
    std::size_t kc = n_kb ? (K + n_kb - 1) / n_kb : 0;
    kc = (kc + B::size - 1) / B::size * B::size;
    if (K == 0) {
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t m = 0; m < M; ++m) c[n * ldc + m] = 0.f;
        return;
    }
    for (std::size_t k0 = 0; k0 < K; k0 += kc) {
        const std::size_t kl = std::min(kc, K - k0);
        const bool acc = k0 > 0;
        for (std::size_t n0 = 0; n0 < N; n0 += nc) {
            const std::size_t n_end = std::min(N, n0 + nc);
            for (std::size_t m0 = 0; m0 < M; m0 += RM) {
                const int tm = static_cast<int>(std::min<std::size_t>(RM, M - m0));
                const float* ap = a + m0 * lda + k0;
                for (std::size_t n1 = n0; n1 < n_end; n1 += RN) {
                    const int tn = static_cast<int>(std::min<std::size_t>(RN, n_end - n1));
                    gemm_tile_mn<A, RM, RN>(tm, tn, ap, lda, b + n1 * ldb + k0, ldb, c + n1 * ldc + m0, ldc, kl, acc);
                }
            }
        }
    }
}

}  // namespace detail

// c[n*ldc + m] = dot(a row m, b row n) for m < M, n < N over K (strides in floats)
template <class A>
struct gemm_f32 {
    void operator()(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc,
                    std::size_t M, std::size_t N, std::size_t K) const;
};
template <class A>
void gemm_f32<A>::operator()(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                             std::size_t ldc, std::size_t M, std::size_t N, std::size_t K) const {
    detail::gemm_f32<A>(a, lda, b, ldb, c, ldc, M, N, K, A{});
}
TESSERA_KERNEL(gemm_f32);

}  // namespace kernels
TESSERA_END_NAMESPACE
