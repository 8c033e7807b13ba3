// f32 GEMM in the dot-product form mul_mat needs: both operands are row-major with
// K contiguous, c[n*ldc + m] = sum_k a[m*lda + k] * b[n*ldb + k]. Two kernels:
//
// gemm_f32 (few columns): RM x RN tiles of dot products (4 x 6 with 32 vector
// registers, 3 x 4 with 16): per step of one vector of k it loads RM rows of a and RN
// rows of b and issues RM*RN FMAs. Rows need no packing, which is what one or a few
// columns want (the weights are read once, straight from memory). gemm_h16_f32 is the
// same tiles over f16 or bf16 rows of a, widened in registers (kernels/convert.hpp's
// load_wide): a matrix-vector product of 16-bit weights streams RM rows at once.
//
// gemm_f32_pb (many columns): the outer-product form of BLIS. b is packed once per
// mul_mat into panels of NR columns ([panel][k][NR], `gemm_f32_pack_b_panel`); a is
// packed per thread, MC rows x KC at a time, into panels of MR rows ([k][MR]). The
// micro-kernel keeps an MR x NR tile of c in registers (32 x 12 with AVX-512: 24 zmm
// accumulators; 16 x 6 with AVX2) and per k loads MR/W vectors of a and broadcasts NR
// values of b: no horizontal sums, and every load is sequential. The b micro-panel
// (KC x NR, 12 KiB) stays in L1 across the MC/MR a panels, the a block (MC x KC) in L2
// across all the b panels. a rows may be f32, f16 or bf16 (converted while packing).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/kernels/convert.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

namespace detail {

template <class A, class T>
void gemm_rows(const T* a, std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc, std::size_t M,
               std::size_t N, std::size_t K, simd::requires_arch<simd::scalar>) {
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t m = 0; m < M; ++m) {
            float s = 0.f;
            const T* x = a + m * lda;
            const float* y = b + n * ldb;
            for (std::size_t k = 0; k < K; ++k) s += to_float(x[k]) * y[k];
            c[n * ldc + m] = s;
        }
}

// The 16-bit tiles prefetch (into L2) the next tile's rows at the column they read: the
// hardware prefetchers alone left a matrix-vector product of f16 / bf16 rows at 0.6 of the
// DRAM read rate where f32 rows reach it, 0.55 at 768-wide rows (bench_matmul,
// docs/kernels.md).

template <class A, int TM, int TN, class T>
TESSERA_ALWAYS_INLINE void gemm_tile(const T* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                                     std::size_t ldc, std::size_t K, bool accumulate) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    B acc[TM][TN];
    for (int m = 0; m < TM; ++m)
        for (int n = 0; n < TN; ++n) acc[m][n] = B(0.f);
    std::size_t k = 0;
    for (; k + w <= K; k += w) {
        B av[TM];
        for (int m = 0; m < TM; ++m) av[m] = load_wide<A>(a + static_cast<std::size_t>(m) * lda + k, A{});
        if constexpr (!std::is_same_v<T, float>)  // 16-bit rows: fetch the next tile's rows into L2, once a cache line
            if (k % (64 / sizeof(T)) == 0)
                for (int m = 0; m < TM; ++m) __builtin_prefetch(a + static_cast<std::size_t>(TM + m) * lda + k, 0, 2);
        for (int n = 0; n < TN; ++n) {
            const B bv = B::load_unaligned(b + static_cast<std::size_t>(n) * ldb + k);
            for (int m = 0; m < TM; ++m) acc[m][n] = xsimd::fma(av[m], bv, acc[m][n]);
        }
    }
    if (k < K) {  // the last K % w: one more step on zero-padded copies (short rows, e.g. 8-wide heads)
        const std::size_t rem = K - k;
        alignas(64) T ta[TM][w] = {};
        alignas(64) float tb[TN][w] = {};
        for (int m = 0; m < TM; ++m) std::memcpy(ta[m], a + static_cast<std::size_t>(m) * lda + k, rem * sizeof(T));
        for (int n = 0; n < TN; ++n) std::memcpy(tb[n], b + static_cast<std::size_t>(n) * ldb + k, rem * sizeof(float));
        for (int m = 0; m < TM; ++m) {
            const B av = load_wide<A>(&ta[m][0], A{});
            for (int n = 0; n < TN; ++n) acc[m][n] = xsimd::fma(av, B::load_aligned(tb[n]), acc[m][n]);
        }
    }
    for (int n = 0; n < TN; ++n)
        for (int m = 0; m < TM; ++m) {
            const float v = xsimd::hadd(acc[m][n]);
            float& o = c[static_cast<std::size_t>(n) * ldc + static_cast<std::size_t>(m)];
            o = accumulate ? o + v : v;
        }
}

// Runs the tile of size (tm, tn) <= (TM, TN), chosen at run time.
template <class A, int TM, int TN, class T>
TESSERA_ALWAYS_INLINE void gemm_tile_n(int tn, const T* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                                       std::size_t ldc, std::size_t K, bool acc) {
    if constexpr (TN > 1) {
        if (tn < TN) return gemm_tile_n<A, TM, TN - 1>(tn, a, lda, b, ldb, c, ldc, K, acc);
    }
    gemm_tile<A, TM, TN>(a, lda, b, ldb, c, ldc, K, acc);
}
template <class A, int TM, int TN, class T>
void gemm_tile_mn(int tm, int tn, const T* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                  std::size_t ldc, std::size_t K, bool acc) {
    if constexpr (TM > 1) {
        if (tm < TM) return gemm_tile_mn<A, TM - 1, TN>(tm, tn, a, lda, b, ldb, c, ldc, K, acc);
    }
    gemm_tile_n<A, TM, TN>(tn, a, lda, b, ldb, c, ldc, K, acc);
}

// lda in elements of T. Each tile reads TM rows of a side by side: for one column (a
// matrix-vector product) that is TM streams from memory at once.
template <class A, class T>
void gemm_rows(const T* a, std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc, std::size_t M,
               std::size_t N, std::size_t K, simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    // 16-bit rows are for few columns (weights times one or a few activations): taller
    // tiles (more rows streaming at once) and K blocks as long as a 4096-wide row.
    constexpr bool h16 = !std::is_same_v<T, float>;
    constexpr int RM = B::size >= 16 ? (h16 ? 8 : 4) : (h16 ? 4 : 3);
    constexpr int RN = B::size >= 16 ? (h16 ? 2 : 6) : (h16 ? 2 : 4);
    constexpr std::size_t kc_max = h16 ? 4096 : 2048;
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
                const T* ap = a + m0 * lda + k0;
                for (std::size_t n1 = n0; n1 < n_end; n1 += RN) {
                    const int tn = static_cast<int>(std::min<std::size_t>(RN, n_end - n1));
                    gemm_tile_mn<A, RM, RN>(tm, tn, ap, lda, b + n1 * ldb + k0, ldb, c + n1 * ldc + m0, ldc, kl, acc);
                }
            }
        }
    }
}

// ---- packed GEMM for many columns ------------------------------------------------------

// The element type of a's rows in gemm_f32_pb.
enum class gemm_a_type : std::uint8_t { f32, f16, bf16 };

}  // namespace detail

// The register tile of gemm_f32_pb per arch: MR rows of a (two vectors of w floats) x NR
// columns. w comes from the xsimd arch's register size, not from xsimd::batch, so that
// code built for another arch (the executor asks fgemm_nr) never instantiates a wide
// batch type.
template <class A>
struct fgemm_shape {
    static constexpr std::size_t w = [] {
        if constexpr (requires { typename A::xsimd_arch; })
            return A::xsimd_arch::alignment() / sizeof(float);
        else
            return std::size_t{1};
    }();
    static constexpr std::size_t mr = w == 1 ? 4 : 2 * w;
    static constexpr std::size_t nr = w >= 16 ? 12 : w == 1 ? 4 : 6;
};
inline constexpr std::size_t fgemm_kc = 256;     // k per packed block of a
inline constexpr std::size_t fgemm_mc = 512;     // rows of a packed at once (a multiple of every mr)
inline constexpr std::size_t fgemm_nr_max = 12;  // every arch's nr divides it
// Floats of the per-thread work buffer of gemm_f32_pb (64-byte aligned): the packed a
// block, up to 16 converted row segments and one of zeros.
inline constexpr std::size_t fgemm_work_floats = fgemm_mc * fgemm_kc + 17 * fgemm_kc;

// NR of an arch, and the floats of b packed for it (at most fgemm_packed_b_floats_max).
constexpr std::size_t fgemm_nr(simd::arch_id a) {
    return simd::with_arch_tag(a, []<class A>(A) { return fgemm_shape<A>::nr; });
}
constexpr std::size_t fgemm_packed_b_floats(simd::arch_id a, std::size_t N, std::size_t K) {
    const std::size_t nr = fgemm_nr(a);
    return (N + nr - 1) / nr * nr * K;
}
constexpr std::size_t fgemm_packed_b_floats_max(std::size_t N, std::size_t K) {
    return (N + fgemm_nr_max - 1) / fgemm_nr_max * fgemm_nr_max * K;
}

namespace detail {

// Segment [k0, k0 + n) of an a row of type t as f32: the row itself or tmp.
template <class A>
TESSERA_ALWAYS_INLINE const float* fgemm_a_segment(gemm_a_type t, const std::byte* row, std::size_t k0, std::size_t n,
                                                   float* tmp) {
    switch (t) {
        case gemm_a_type::f16: f16_to_f32<A>(reinterpret_cast<const f16*>(row) + k0, tmp, n, A{}); return tmp;
        case gemm_a_type::bf16: bf16_to_f32<A>(reinterpret_cast<const bf16*>(row) + k0, tmp, n, A{}); return tmp;
        default: return reinterpret_cast<const float*>(row) + k0;
    }
}

// dst[k * ld + r] = src[r][k] for r < G, k < n: a G-row transpose, G = the arch's
// vector width (1 for the scalar body); the x86 bodies (kernels/x86/gemm.hpp) transpose
// 16 x 16 / 8 x 8 blocks in registers.
template <class A, std::size_t G>
TESSERA_ALWAYS_INLINE void fgemm_transpose(const float* const* src, std::size_t k0, std::size_t n, float* dst,
                                           std::size_t ld) {
    for (std::size_t r = 0; r < G; ++r) {
        const float* x = src[r];
        for (std::size_t k = k0; k < n; ++k) dst[k * ld + r] = x[k];
    }
}
template <class A, std::size_t G>
TESSERA_ALWAYS_INLINE void fgemm_transpose(const float* const* src, std::size_t n, float* dst, std::size_t ld,
                                           simd::requires_arch<simd::scalar>) {
    fgemm_transpose<A, G>(src, 0, n, dst, ld);
}
// Rows a pack step transposes at once: 1 where the arch has no transpose body of its own.
template <class A>
constexpr std::size_t fgemm_transpose_rows(simd::requires_arch<simd::scalar>) {
    return 1;
}
}  // namespace detail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/gemm.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace detail {

// Packs rows [0, ml) x [k0, k0 + kl) of a into ceil(ml / MR) panels of [kl][MR], zero rows
// past ml, G rows at a time. tmp: G * fgemm_kc floats for converted segments, then
// fgemm_kc zeros.
template <class A, std::size_t MR>
void fgemm_pack_a(gemm_a_type t, const std::byte* a, std::size_t lda, std::size_t ml, std::size_t k0, std::size_t kl,
                  float* out, float* tmp) {
    constexpr std::size_t G = fgemm_transpose_rows<A>(A{});
    static_assert(MR % G == 0);
    float* zeros = tmp + G * fgemm_kc;
    std::fill(zeros, zeros + kl, 0.f);
    const std::size_t rows = (ml + MR - 1) / MR * MR;
    for (std::size_t i0 = 0; i0 < rows; i0 += G) {
        const float* src[G];
        for (std::size_t r = 0; r < G; ++r)
            src[r] = i0 + r < ml ? fgemm_a_segment<A>(t, a + (i0 + r) * lda, k0, kl, tmp + r * fgemm_kc) : zeros;
        fgemm_transpose<A, G>(src, kl, out + i0 / MR * kl * MR + i0 % MR, MR, A{});
    }
}

// c tile (tm x tn valid of MR x NR) (+)= a panel [kl][MR] x b micro-panel [kl][NR].
template <class A, std::size_t MV, std::size_t NR>
TESSERA_ALWAYS_INLINE void fgemm_micro(std::size_t kl, const float* ap, const float* bp, float* c, std::size_t ldc,
                                       std::size_t tm, std::size_t tn, bool acc) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t W = B::size, MR = MV * W;
    B r[NR][MV];
    for (std::size_t j = 0; j < NR; ++j)
        for (std::size_t v = 0; v < MV; ++v) r[j][v] = B(0.f);
    for (std::size_t k = 0; k < kl; ++k) {
        B av[MV];
        for (std::size_t v = 0; v < MV; ++v) av[v] = B::load_aligned(ap + k * MR + v * W);
        for (std::size_t j = 0; j < NR; ++j) {
            const B bv(bp[k * NR + j]);
            for (std::size_t v = 0; v < MV; ++v) r[j][v] = xsimd::fma(av[v], bv, r[j][v]);
        }
    }
    if (tm == MR && tn == NR) {
        for (std::size_t j = 0; j < NR; ++j)
            for (std::size_t v = 0; v < MV; ++v) {
                float* o = c + j * ldc + v * W;
                (acc ? r[j][v] + B::load_unaligned(o) : r[j][v]).store_unaligned(o);
            }
        return;
    }
    alignas(64) float t[NR][MR];
    for (std::size_t j = 0; j < NR; ++j)
        for (std::size_t v = 0; v < MV; ++v) r[j][v].store_aligned(&t[j][v * W]);
    for (std::size_t j = 0; j < tn; ++j)
        for (std::size_t i = 0; i < tm; ++i) c[j * ldc + i] = acc ? c[j * ldc + i] + t[j][i] : t[j][i];
}

template <class A>
void gemm_f32_pb(gemm_a_type at, const std::byte* a, std::size_t lda, const float* bp, float* c, std::size_t ldc,
                 std::size_t M, std::size_t N, std::size_t K, float* work, simd::requires_arch<simd::scalar>) {
    constexpr std::size_t NR = fgemm_shape<A>::nr;
    float* tmp = work;
    for (std::size_t m = 0; m < M; ++m) {
        const float* x = fgemm_a_segment<A>(at, a + m * lda, 0, K, tmp);
        for (std::size_t n = 0; n < N; ++n) {
            const float* y = bp + n / NR * K * NR + n % NR;
            float s = 0.f;
            for (std::size_t k = 0; k < K; ++k) s += x[k] * y[k * NR];
            c[n * ldc + m] = s;
        }
    }
}

template <class A>
void gemm_f32_pb(gemm_a_type at, const std::byte* a, std::size_t lda, const float* bp, float* c, std::size_t ldc,
                 std::size_t M, std::size_t N, std::size_t K, float* work, simd::requires_arch<simd::xsimd_common>) {
    constexpr std::size_t MR = fgemm_shape<A>::mr, NR = fgemm_shape<A>::nr, MV = MR / fgemm_shape<A>::w;
    static_assert(fgemm_mc % MR == 0 && fgemm_nr_max % NR == 0);
    static_assert(fgemm_shape<A>::w == xsimd::batch<float, typename A::xsimd_arch>::size);
    if (K == 0) {
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t m = 0; m < M; ++m) c[n * ldc + m] = 0.f;
        return;
    }
    // Local copies: std::min binds references, and an ODR-used namespace constant would be
    // emitted (untagged) into this arch's unit.
    constexpr std::size_t MC = fgemm_mc, KC = fgemm_kc;
    float* ablock = work;
    float* tmp = work + MC * KC;  // fgemm_pack_a's
    const std::size_t esize = at == gemm_a_type::f32 ? 4 : 2;
    const std::size_t panels = (N + NR - 1) / NR;
    for (std::size_t m0 = 0; m0 < M; m0 += MC) {
        const std::size_t ml = std::min(MC, M - m0), mp = (ml + MR - 1) / MR;
        for (std::size_t k0 = 0; k0 < K; k0 += KC) {
            const std::size_t kl = std::min(KC, K - k0);
            fgemm_pack_a<A, MR>(at, a + m0 * lda, lda, ml, k0, kl, ablock, tmp);
            // a is read from memory once per block, in row segments lda apart that the hardware
            // prefetcher does not follow: fetch the next segment of every row while this one is
            // multiplied, a share of the rows before each panel.
            const std::size_t next = std::min(KC, K - std::min(K, k0 + kl)) * esize;
            for (std::size_t p = 0; p < panels; ++p) {
                for (std::size_t i = p * ml / panels; next && i < (p + 1) * ml / panels; ++i)
                    for (std::size_t off = 0; off < next; off += 64) __builtin_prefetch(a + (m0 + i) * lda + (k0 + kl) * esize + off, 0, 2);
                const float* bpp = bp + p * K * NR + k0 * NR;
                const std::size_t tn = std::min(NR, N - p * NR);
                float* cp = c + p * NR * ldc + m0;
                for (std::size_t q = 0; q < mp; ++q)
                    fgemm_micro<A, MV, NR>(kl, ablock + q * kl * MR, bpp, cp + q * MR, ldc, std::min(MR, ml - q * MR), tn,
                                           k0 > 0);
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
    detail::gemm_rows<A>(a, lda, b, ldb, c, ldc, M, N, K, A{});
}
TESSERA_KERNEL(gemm_f32);

// gemm_f32 with a's rows in f16 or bf16 (at; lda in elements), widened in registers: the
// few-columns product of 16-bit weights (a matrix-vector product streams TM rows at once
// and never writes an f32 copy).
template <class A>
struct gemm_h16_f32 {
    void operator()(detail::gemm_a_type at, const void* a, std::size_t lda, const float* b, std::size_t ldb, float* c,
                    std::size_t ldc, std::size_t M, std::size_t N, std::size_t K) const;
};
template <class A>
void gemm_h16_f32<A>::operator()(detail::gemm_a_type at, const void* a, std::size_t lda, const float* b,
                                 std::size_t ldb, float* c, std::size_t ldc, std::size_t M, std::size_t N,
                                 std::size_t K) const {
    if (at == detail::gemm_a_type::bf16)
        detail::gemm_rows<A>(static_cast<const bf16*>(a), lda, b, ldb, c, ldc, M, N, K, A{});
    else
        detail::gemm_rows<A>(static_cast<const f16*>(a), lda, b, ldb, c, ldc, M, N, K, A{});
}
TESSERA_KERNEL(gemm_h16_f32);

// c[n*ldc + m] = dot(a row m, b column n) for m < M, n < N over K, with b packed by
// gemm_f32_pack_b_panel for this arch (fgemm_nr columns a panel); a's rows (f32, f16 or
// bf16, contiguous, lda bytes apart) are packed into work (fgemm_work_floats floats,
// 64-byte aligned).
template <class A>
struct gemm_f32_pb {
    void operator()(detail::gemm_a_type at, const std::byte* a, std::size_t lda, const float* bp, float* c,
                    std::size_t ldc, std::size_t M, std::size_t N, std::size_t K, float* work) const;
};
template <class A>
void gemm_f32_pb<A>::operator()(detail::gemm_a_type at, const std::byte* a, std::size_t lda, const float* bp, float* c,
                                std::size_t ldc, std::size_t M, std::size_t N, std::size_t K, float* work) const {
    detail::gemm_f32_pb<A>(at, a, lda, bp, c, ldc, M, N, K, work, A{});
}
TESSERA_KERNEL(gemm_f32_pb);

// Packs columns (rows of b) [0, n) of one panel, n <= nr, into out[k * nr + j] over K,
// zero columns past n. Not arch-specific: a transposing copy.
template <class RowAt>
void gemm_f32_pack_b_panel(std::size_t nr, std::size_t n, std::size_t K, RowAt&& row, float* out) {
    for (std::size_t j = 0; j < nr; ++j) {
        if (j >= n) {
            for (std::size_t k = 0; k < K; ++k) out[k * nr + j] = 0.f;
            continue;
        }
        const float* x = row(j);
        for (std::size_t k = 0; k < K; ++k) out[k * nr + j] = x[k];
    }
}

}  // namespace kernels
TESSERA_END_NAMESPACE
