// Dot products of a row of quantized blocks with a row of its partner blocks
// (block_traits<B>::dot_partner), and of f16 / bf16 rows.
//
// The integer parts are exact on every arch; only the order of the f32 sums of the
// per-block terms differs from the scalar definition, which is quant/'s reference
// (quant::vec_dot_unchecked<A>: vec_dot_ref without its check of n, in ggml's order). Paths (the x86 bodies are in
// kernels/x86/quant/vec_dot.hpp, the AArch64 ones in kernels/arm/quant/vec_dot.hpp):
//   scalar     every type (the reference definitions);
//   avx2       q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4, q2_K, q3_K, q4_K, q5_K, q6_K,
//              iq4_xs, tq1_0, tq2_0 (vpmaddubsw / vpmaddwd), f16 (F16C), bf16; nvfp4, q1_0,
//              q2_0 and the lattice i-quants (which the AVX-512 levels run too);
//   avx512bw   q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4, q2_K, q3_K, q4_K, q5_K, q6_K,
//              iq4_xs, tq2_0 (vpmaddubsw/vpmaddwd on 512 bits), bf16 (f16 and tq1_0 use
//              AVX2's);
//   avx512vnni the same bodies with vpdpbusd / vpdpwssd;
//   neon       the avx512bw types, tq1_0, nvfp4, q1_0, q2_0 and the lattice i-quants
//              (SMULL + SADALP), f16, bf16;
//   dotprod    the same bodies with SDOT; i8mm: bf16 with BFMLALB / BFMLALT;
//   sve        q8_0, q4_0 length-agnostic (SVE SDOT), the rest as i8mm.
// q8_1 x q8_1 runs the scalar body everywhere.
// Types without a wide body run the scalar body in every unit.
//
// Kernels: vec_dot_<type><A>(int64_t n, const block_<type>* x, const partner* y)
// -> float, n a multiple of the block size; gemv_<type><A>(n, nrows, x, row_stride_bytes,
// y, out) -> out[r] = vec_dot(row r, y) (q4_0 has a 4-row AVX-512 body, the other types
// loop over vec_dot); vec_dot_f16 / vec_dot_bf16 on
// (int64_t n, const f16* x, const f16* y).
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/iq4.hpp"
#include "tessera/quant/iquants.hpp"
#include "tessera/quant/k_quants.hpp"
#include "tessera/quant/mxfp4.hpp"
#include "tessera/quant/q1_q2.hpp"
#include "tessera/quant/q4_q5.hpp"
#include "tessera/quant/q8.hpp"
#include "tessera/quant/ternary.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace q = ::tessera::quant;

// ---- scalar: quant/'s reference definitions --------------------------------------------
// The scalar body of every block type is the reference's (quant::vec_dot_unchecked, the
// part of vec_dot_ref after its check of n), instantiated with this unit's arch as its tag.
template <class A, class B, class P>
    requires requires(std::int64_t n, const B* x, const P* y) { q::vec_dot_unchecked<A>(n, x, y); }
float vdot(std::int64_t n, const B* x, const P* y, simd::requires_arch<simd::scalar>) {
    return q::vec_dot_unchecked<A>(n, x, y);
}
template <class A>
float vdot_f16(std::int64_t n, const f16* x, const f16* y, simd::requires_arch<simd::scalar>) {
    return q::vec_dot_unchecked<A>(n, x, y);
}
template <class A>
TESSERA_ALWAYS_INLINE float bf2f(bf16 v) noexcept {  // for the wide bodies' tails
    return __builtin_bit_cast(float, static_cast<std::uint32_t>(v.bits) << 16);
}
template <class A>
float vdot_bf16(std::int64_t n, const bf16* x, const bf16* y, simd::requires_arch<simd::scalar>) {
    return q::vec_dot_unchecked<A>(n, x, y);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/vec_dot.hpp"
#include "tessera/kernels/arm/quant/vec_dot.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

// ---- several rows against one activation row (matrix x vector) --------------------------
// out[r] = vec_dot(row r of x, y) for r < nrows; rows are row_stride bytes apart.
// Before each row it prefetches (into L2) the cache lines one row's length further on,
// gemv_prefetch_ahead bytes ahead: one read stream alone left the hardware prefetchers
// well short of the DRAM rate (bench_matmul N = 1 on the Xeon of docs/kernels.md: q4_K
// 0.35 -> 0.59 of DRAM, q5_K 0.36 -> 0.59, iq4_xs 0.30 -> 0.53, q8_0 0.55 -> 0.69).
inline constexpr std::size_t gemv_prefetch_ahead = 4096;
template <class A, class B, class P>
void gemv(std::int64_t n, std::int64_t nrows, const B* x, std::size_t row_stride, const P* y, float* out,
          simd::requires_arch<simd::scalar>) {
    const auto* base = reinterpret_cast<const unsigned char*>(x);
    const std::size_t end = static_cast<std::size_t>(nrows) * row_stride;
    for (std::int64_t r = 0; r < nrows; ++r) {
        // one row's worth of cache lines, gemv_prefetch_ahead bytes past this row
        const std::size_t from = (static_cast<std::size_t>(r) * row_stride + gemv_prefetch_ahead) & ~std::size_t{63};
        const std::size_t to = std::min(end, static_cast<std::size_t>(r + 1) * row_stride + gemv_prefetch_ahead);
        for (std::size_t off = from; off < to; off += 64) __builtin_prefetch(base + off, 0, 2);
        out[r] = vdot<A>(n, reinterpret_cast<const B*>(base + static_cast<std::size_t>(r) * row_stride), y, A{});
    }
}

}  // namespace qdetail

#define TESSERA_VEC_DOT_KERNEL_(T, P)                                                                     \
    template <class A>                                                                                    \
    struct gemv_##T {                                                                                     \
        void operator()(std::int64_t n, std::int64_t nrows, const quant::block_##T* x, std::size_t row_stride, \
                        const quant::block_##P* y, float* out) const;                                     \
    };                                                                                                    \
    template <class A>                                                                                    \
    void gemv_##T<A>::operator()(std::int64_t n, std::int64_t nrows, const quant::block_##T* x,           \
                                 std::size_t row_stride, const quant::block_##P* y, float* out) const {   \
        qdetail::gemv<A>(n, nrows, x, row_stride, y, out, A{});                                           \
    }                                                                                                     \
    TESSERA_KERNEL(gemv_##T);                                                                             \
    template <class A>                                                                                    \
    struct vec_dot_##T {                                                                                  \
        float operator()(std::int64_t n, const quant::block_##T* x, const quant::block_##P* y) const;     \
    };                                                                                                    \
    template <class A>                                                                                    \
    float vec_dot_##T<A>::operator()(std::int64_t n, const quant::block_##T* x, const quant::block_##P* y) \
        const {                                                                                           \
        return qdetail::vdot<A>(n, x, y, A{});                                                            \
    }                                                                                                     \
    TESSERA_KERNEL(vec_dot_##T)

TESSERA_VEC_DOT_KERNEL_(q4_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(q4_1, q8_1);
TESSERA_VEC_DOT_KERNEL_(q5_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(q5_1, q8_1);
TESSERA_VEC_DOT_KERNEL_(q8_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(q8_1, q8_1);
TESSERA_VEC_DOT_KERNEL_(iq4_nl, q8_0);
TESSERA_VEC_DOT_KERNEL_(mxfp4, q8_0);
TESSERA_VEC_DOT_KERNEL_(q2_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q3_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q4_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q5_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q6_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq4_xs, q8_K);
TESSERA_VEC_DOT_KERNEL_(tq1_0, q8_K);
TESSERA_VEC_DOT_KERNEL_(tq2_0, q8_K);
TESSERA_VEC_DOT_KERNEL_(nvfp4, q8_0);
TESSERA_VEC_DOT_KERNEL_(q1_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(q2_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(iq2_xxs, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq2_xs, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq2_s, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq3_xxs, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq3_s, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq1_s, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq1_m, q8_K);
#undef TESSERA_VEC_DOT_KERNEL_

// sum x[i] * y[i] over f16 rows (products exact in f32, summed in f32 by the SIMD paths).
template <class A>
struct vec_dot_f16 {
    float operator()(std::int64_t n, const f16* x, const f16* y) const;
};
template <class A>
float vec_dot_f16<A>::operator()(std::int64_t n, const f16* x, const f16* y) const {
    return qdetail::vdot_f16<A>(n, x, y, A{});
}
TESSERA_KERNEL(vec_dot_f16);

template <class A>
struct vec_dot_bf16 {
    float operator()(std::int64_t n, const bf16* x, const bf16* y) const;
};
template <class A>
float vec_dot_bf16<A>::operator()(std::int64_t n, const bf16* x, const bf16* y) const {
    return qdetail::vdot_bf16<A>(n, x, y, A{});
}
TESSERA_KERNEL(vec_dot_bf16);

}  // namespace kernels
TESSERA_END_NAMESPACE
