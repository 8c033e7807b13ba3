// Quantization of f32 activations into the dot-product partner blocks: q8_0, q8_1
// and q8_K. Every arch produces the same bytes as ggml's reference quantizers
// (quantize_row_q8_0_ref and friends): the same scale, the same rounding (roundf for
// q8_0/q8_1, round-to-nearest-even for q8_K), the same f16 conversion of the scale.
//
// Kernels (n is a multiple of the block size; validated by the caller):
//   quantize_row_q8_0<A>(const float* x, block_q8_0* y, int64_t n)
//   quantize_row_q8_1<A>(const float* x, block_q8_1* y, int64_t n)
//   quantize_row_q8_K<A>(const float* x, block_q8_K* y, int64_t n)
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/q8.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

using quant::block_q8_0;
using quant::block_q8_1;
using quant::block_q8_K;

// ---- scalar: quant/'s reference quantizers -----------------------------------------------
// The scalar body of each is the reference's (quant::quantize_row_unchecked, the part of
// quantize_row_ref after its check of n), instantiated with this unit's arch as its tag.
template <class A>
void quantize_q8_0(const float* x, block_q8_0* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    quant::quantize_row_unchecked<A>(x, y, n);
}
template <class A>
void quantize_q8_1(const float* x, block_q8_1* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    quant::quantize_row_unchecked<A>(x, y, n);
}
template <class A>
void quantize_q8_K(const float* x, block_q8_K* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    quant::quantize_row_unchecked<A>(x, y, n);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/quantize_act.hpp"
#include "tessera/kernels/arm/quant/quantize_act.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

#define TESSERA_QUANTIZE_ACT_KERNEL_(T)                                                              \
    template <class A>                                                                               \
    struct quantize_row_##T {                                                                        \
        void operator()(const float* x, quant::block_##T* y, std::int64_t n) const;                  \
    };                                                                                               \
    template <class A>                                                                               \
    void quantize_row_##T<A>::operator()(const float* x, quant::block_##T* y, std::int64_t n) const { \
        qdetail::quantize_##T<A>(x, y, n, A{});                                                      \
    }                                                                                                \
    TESSERA_KERNEL(quantize_row_##T)

TESSERA_QUANTIZE_ACT_KERNEL_(q8_0);
TESSERA_QUANTIZE_ACT_KERNEL_(q8_1);
TESSERA_QUANTIZE_ACT_KERNEL_(q8_K);
#undef TESSERA_QUANTIZE_ACT_KERNEL_

}  // namespace kernels
TESSERA_END_NAMESPACE
