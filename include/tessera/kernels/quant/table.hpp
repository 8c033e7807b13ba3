// The quant kernels of a block type, looked up by type:
//   row_kernels<B>::dequantize<A>  dequantize_row_<B>
//   row_kernels<B>::vec_dot<A>     vec_dot_<B> (with block_traits<B>::dot_partner)
//   row_kernels<B>::gemv<A>        gemv_<B>: several rows against one partner row
//   row_kernels<P>::quantize<A>    quantize_row_<P> for q8_0, q8_1, q8_K (activations) and q4_0
// so generic code can write `simd::kernel_for<row_kernels<B>::template vec_dot>(arch)`.
#pragma once

#include "tessera/config.hpp"
#include "tessera/kernels/quant/dequant.hpp"
#include "tessera/kernels/quant/quantize_act.hpp"
#include "tessera/kernels/quant/quantize_w.hpp"
#include "tessera/kernels/quant/vec_dot.hpp"
#include "tessera/quant/blocks.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

// Undefined for types without kernels.
template <class B>
struct row_kernels;

#define TESSERA_ROW_KERNELS_(T)                       \
    template <>                                       \
    struct row_kernels<quant::block_##T> {            \
        template <class A>                            \
        using dequantize = dequantize_row_##T<A>;     \
        template <class A>                            \
        using vec_dot = vec_dot_##T<A>;               \
        template <class A>                            \
        using gemv = gemv_##T<A>;                     \
    }
#define TESSERA_ROW_KERNELS_Q_(T)                     \
    template <>                                       \
    struct row_kernels<quant::block_##T> {            \
        template <class A>                            \
        using dequantize = dequantize_row_##T<A>;     \
        template <class A>                            \
        using vec_dot = vec_dot_##T<A>;               \
        template <class A>                            \
        using gemv = gemv_##T<A>;                     \
        template <class A>                            \
        using quantize = quantize_row_##T<A>;         \
    }

TESSERA_ROW_KERNELS_Q_(q4_0);
TESSERA_ROW_KERNELS_(q4_1);
TESSERA_ROW_KERNELS_(q5_0);
TESSERA_ROW_KERNELS_(q5_1);
TESSERA_ROW_KERNELS_Q_(q8_0);
TESSERA_ROW_KERNELS_Q_(q8_1);
TESSERA_ROW_KERNELS_(iq4_nl);
TESSERA_ROW_KERNELS_(mxfp4);
TESSERA_ROW_KERNELS_(q2_K);
TESSERA_ROW_KERNELS_(q3_K);
TESSERA_ROW_KERNELS_(q4_K);
TESSERA_ROW_KERNELS_(q5_K);
TESSERA_ROW_KERNELS_(q6_K);
TESSERA_ROW_KERNELS_(iq4_xs);
TESSERA_ROW_KERNELS_(tq1_0);
TESSERA_ROW_KERNELS_(tq2_0);
#undef TESSERA_ROW_KERNELS_
#undef TESSERA_ROW_KERNELS_Q_

// q8_K is an activation type only: it has a quantizer and a dequantizer, no vec_dot.
template <>
struct row_kernels<quant::block_q8_K> {
    template <class A>
    using dequantize = dequantize_row_q8_K<A>;
    template <class A>
    using quantize = quantize_row_q8_K<A>;
};

}  // namespace kernels
TESSERA_END_NAMESPACE
