// The kernels of a block type, in one table looked up by type (quant_kernels<B>):
//   dequantize<A>  dequantize_row_<B>                        (dequant.hpp)
//   vec_dot<A>     vec_dot_<B> against block_traits<B>::dot_partner (vec_dot.hpp)
//   gemv<A>        gemv_<B>: several rows against one partner row      (vec_dot.hpp)
//   gemm<A>        gemm_<B>: the packed GEMM for many columns  (gemm.hpp)
//   gemm_rows4<A>  gemm_<B>_rows4: the same on weights repacked by CPU_REPACK
//                  (q4_0, q8_0, q4_K; iq4_nl in the ARM layouts)                                   (gemm.hpp)
//   quantize<A>    quantize_row_<B>: q8_0, q8_1, q8_K (activations) and q4_0
//                  (quantize_act.hpp, quantize_w.hpp)
// A member is absent where the type has no such kernel, so generic code asks
// `simd::kernel_for<quant_kernels<B>::template vec_dot>(arch)` and tests for a member
// with the concepts below.
#pragma once

#include "tessera/config.hpp"
#include "tessera/kernels/quant/dequant.hpp"
#include "tessera/kernels/quant/gemm.hpp"
#include "tessera/kernels/quant/quantize_act.hpp"
#include "tessera/kernels/quant/quantize_w.hpp"
#include "tessera/kernels/quant/vec_dot.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

// Undefined for types without kernels.
template <class B>
struct quant_kernels;

#define TESSERA_ROWS_(T)                      \
    template <class A>                        \
    using dequantize = dequantize_row_##T<A>; \
    template <class A>                        \
    using vec_dot = vec_dot_##T<A>;           \
    template <class A>                        \
    using gemv = gemv_##T<A>;                 \
    template <class A>                        \
    using gemm = gemm_##T<A>;
#define TESSERA_QUANTIZE_(T) \
    template <class A>       \
    using quantize = quantize_row_##T<A>;
#define TESSERA_ROWS4_(T) \
    template <class A>    \
    using gemm_rows4 = gemm_##T##_rows4<A>;

// clang-format off
template <> struct quant_kernels<quant::block_q4_0> { TESSERA_ROWS_(q4_0) TESSERA_QUANTIZE_(q4_0) TESSERA_ROWS4_(q4_0) };
template <> struct quant_kernels<quant::block_q4_1> { TESSERA_ROWS_(q4_1) };
template <> struct quant_kernels<quant::block_q5_0> { TESSERA_ROWS_(q5_0) };
template <> struct quant_kernels<quant::block_q5_1> { TESSERA_ROWS_(q5_1) };
template <> struct quant_kernels<quant::block_q8_0> { TESSERA_ROWS_(q8_0) TESSERA_QUANTIZE_(q8_0) TESSERA_ROWS4_(q8_0) };
template <> struct quant_kernels<quant::block_q8_1> { TESSERA_ROWS_(q8_1) TESSERA_QUANTIZE_(q8_1) };
template <> struct quant_kernels<quant::block_iq4_nl> { TESSERA_ROWS_(iq4_nl) TESSERA_ROWS4_(iq4_nl) };
template <> struct quant_kernels<quant::block_mxfp4> { TESSERA_ROWS_(mxfp4) };
template <> struct quant_kernels<quant::block_q2_K> { TESSERA_ROWS_(q2_K) };
template <> struct quant_kernels<quant::block_q3_K> { TESSERA_ROWS_(q3_K) };
template <> struct quant_kernels<quant::block_q4_K> { TESSERA_ROWS_(q4_K) TESSERA_ROWS4_(q4_K) };
template <> struct quant_kernels<quant::block_q5_K> { TESSERA_ROWS_(q5_K) };
template <> struct quant_kernels<quant::block_q6_K> { TESSERA_ROWS_(q6_K) };
template <> struct quant_kernels<quant::block_iq4_xs> { TESSERA_ROWS_(iq4_xs) };
template <> struct quant_kernels<quant::block_tq1_0> { TESSERA_ROWS_(tq1_0) };
template <> struct quant_kernels<quant::block_tq2_0> { TESSERA_ROWS_(tq2_0) };
template <> struct quant_kernels<quant::block_nvfp4> { TESSERA_ROWS_(nvfp4) };
template <> struct quant_kernels<quant::block_q1_0> { TESSERA_ROWS_(q1_0) };
template <> struct quant_kernels<quant::block_q2_0> { TESSERA_ROWS_(q2_0) };
template <> struct quant_kernels<quant::block_iq2_xxs> { TESSERA_ROWS_(iq2_xxs) };
template <> struct quant_kernels<quant::block_iq2_xs> { TESSERA_ROWS_(iq2_xs) };
template <> struct quant_kernels<quant::block_iq2_s> { TESSERA_ROWS_(iq2_s) };
template <> struct quant_kernels<quant::block_iq3_xxs> { TESSERA_ROWS_(iq3_xxs) };
template <> struct quant_kernels<quant::block_iq3_s> { TESSERA_ROWS_(iq3_s) };
template <> struct quant_kernels<quant::block_iq1_s> { TESSERA_ROWS_(iq1_s) };
template <> struct quant_kernels<quant::block_iq1_m> { TESSERA_ROWS_(iq1_m) };
// q8_K is an activation type only: a quantizer and a dequantizer, no dot product.
template <> struct quant_kernels<quant::block_q8_K> {
    template <class A>
    using dequantize = dequantize_row_q8_K<A>;
    TESSERA_QUANTIZE_(q8_K)
};
// clang-format on
#undef TESSERA_ROWS_
#undef TESSERA_QUANTIZE_
#undef TESSERA_ROWS4_

template <class B>
concept has_gemv = requires { sizeof(typename quant_kernels<B>::template gemv<simd::scalar>); };
template <class B>
concept has_qgemm = requires { sizeof(typename quant_kernels<B>::template gemm<simd::scalar>); };
template <class B>
concept has_qgemm_rows4 = requires { sizeof(typename quant_kernels<B>::template gemm_rows4<simd::scalar>); };
template <class B>
concept has_quantize = requires { sizeof(typename quant_kernels<B>::template quantize<simd::scalar>); };

}  // namespace kernels
TESSERA_END_NAMESPACE
