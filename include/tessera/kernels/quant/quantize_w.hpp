// SIMD quantizers for weight types whose reference algorithm is a plain per-block
// formula, producing the same bytes as the reference (quant::quantize_row_ref):
//   quantize_row_q4_0<A>(const float* x, block_q4_0* y, int64_t n)
// q4_0: max = the value of largest magnitude (first on ties), d = max / -8,
// q = min(15, trunc(x / d + 8.5)), stored as nibbles (element j low, j + 16 high).
// The product and the add are separate roundings, as in the reference (never fused).
// Bodies: AVX2 and AVX-512 (kernels/x86/quant/quantize_w.hpp), Advanced SIMD for every
// ARM level (kernels/arm/quant/quantize_w.hpp).
#pragma once

#include <cstdint>

#include "tessera/config.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/q4_q5.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

// The scalar body is the reference's (quant::quantize_row_unchecked, quantize_row_ref
// after its check of n), instantiated with this unit's arch as its tag.
template <class A>
void quantize_q4_0(const float* x, quant::block_q4_0* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    quant::quantize_row_unchecked<A>(x, y, n);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/quantize_w.hpp"
#include "tessera/kernels/arm/quant/quantize_w.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

template <class A>
struct quantize_row_q4_0 {
    void operator()(const float* x, quant::block_q4_0* y, std::int64_t n) const;
};
template <class A>
void quantize_row_q4_0<A>::operator()(const float* x, quant::block_q4_0* y, std::int64_t n) const {
    qdetail::quantize_q4_0<A>(x, y, n, A{});
}
TESSERA_KERNEL(quantize_row_q4_0);

}  // namespace kernels
TESSERA_END_NAMESPACE
