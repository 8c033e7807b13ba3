// Dequantization of rows of quantized blocks into f32, for every supported type.
//
// Every arch is bit-exact with ggml's dequantize_row_* (the same float operations in
// the same order: one product, then one add or subtract, never fused). The scalar
// bodies are quant/'s reference definitions (quant::dequantize_row_unchecked<A>, the
// reference without its check of n); SSE4.2 uses them. Types with AVX2 and AVX-512
// bodies (kernels/x86/quant/dequant.hpp) and Advanced SIMD bodies for every ARM level
// (kernels/arm/quant/dequant.hpp): q4_0, q8_0, q4_K, q6_K; the rest run the scalar body
// in every unit.
//
// Kernels: dequantize_row_<type><A>(const block_<type>* x, float* y, int64_t n),
// n a multiple of the block size.
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
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
// The scalar body of every type is the reference's (quant::dequantize_row_unchecked, the
// part of dequantize_row_ref after its check of n), instantiated with this unit's arch as
// its tag so that no inline code is shared between units built with different flags.
template <class A, class B>
    requires requires(const B* x, float* y, std::int64_t n) { q::dequantize_row_unchecked<A>(x, y, n); }
void dequant(const B* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    q::dequantize_row_unchecked<A>(x, y, n);
}

// A trit of a tq1_0 byte: the byte times 3^k (mod 256), times 3, over 256.
template <class A>
TESSERA_ALWAYS_INLINE int trit(std::uint8_t b, int k) noexcept {
    const std::uint8_t q = static_cast<std::uint8_t>(b * tables<A>::pow3[k]);
    return (static_cast<std::uint16_t>(q) * 3) >> 8;
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/dequant.hpp"
#include "tessera/kernels/arm/quant/dequant.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

#define TESSERA_DEQUANT_KERNEL_(T)                                                                   \
    template <class A>                                                                               \
    struct dequantize_row_##T {                                                                      \
        void operator()(const quant::block_##T* x, float* y, std::int64_t n) const;                  \
    };                                                                                               \
    template <class A>                                                                               \
    void dequantize_row_##T<A>::operator()(const quant::block_##T* x, float* y, std::int64_t n) const { \
        qdetail::dequant<A>(x, y, n, A{});                                                           \
    }                                                                                                \
    TESSERA_KERNEL(dequantize_row_##T)

TESSERA_DEQUANT_KERNEL_(q4_0);
TESSERA_DEQUANT_KERNEL_(q4_1);
TESSERA_DEQUANT_KERNEL_(q5_0);
TESSERA_DEQUANT_KERNEL_(q5_1);
TESSERA_DEQUANT_KERNEL_(q8_0);
TESSERA_DEQUANT_KERNEL_(q8_1);
TESSERA_DEQUANT_KERNEL_(iq4_nl);
TESSERA_DEQUANT_KERNEL_(mxfp4);
TESSERA_DEQUANT_KERNEL_(q2_K);
TESSERA_DEQUANT_KERNEL_(q3_K);
TESSERA_DEQUANT_KERNEL_(q4_K);
TESSERA_DEQUANT_KERNEL_(q5_K);
TESSERA_DEQUANT_KERNEL_(q6_K);
TESSERA_DEQUANT_KERNEL_(q8_K);
TESSERA_DEQUANT_KERNEL_(iq4_xs);
TESSERA_DEQUANT_KERNEL_(tq1_0);
TESSERA_DEQUANT_KERNEL_(tq2_0);
TESSERA_DEQUANT_KERNEL_(nvfp4);
TESSERA_DEQUANT_KERNEL_(q1_0);
TESSERA_DEQUANT_KERNEL_(q2_0);
TESSERA_DEQUANT_KERNEL_(iq2_xxs);
TESSERA_DEQUANT_KERNEL_(iq2_xs);
TESSERA_DEQUANT_KERNEL_(iq2_s);
TESSERA_DEQUANT_KERNEL_(iq3_xxs);
TESSERA_DEQUANT_KERNEL_(iq3_s);
TESSERA_DEQUANT_KERNEL_(iq1_s);
TESSERA_DEQUANT_KERNEL_(iq1_m);
#undef TESSERA_DEQUANT_KERNEL_

}  // namespace kernels
TESSERA_END_NAMESPACE
