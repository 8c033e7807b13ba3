// SIMD quantizers for weight types whose reference algorithm is a plain per-block
// formula, producing the same bytes as the reference (quant::quantize_row_ref):
//   quantize_row_q4_0<A>(const float* x, block_q4_0* y, int64_t n)
// q4_0: max = the value of largest magnitude (first on ties), d = max / -8,
// q = min(15, trunc(x / d + 8.5)), stored as nibbles (element j low, j + 16 high).
// The product and the add are separate roundings, as in the reference (never fused).
#pragma once

#include <cstdint>

#include "tessera/config.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

template <class A>
void quantize_q4_0(const float* x, quant::block_q4_0* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; ++j)
            if (amax < __builtin_fabsf(x[j])) {
                amax = __builtin_fabsf(x[j]);
                max = x[j];
            }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f2h<A>(d);
        for (int j = 0; j < 16; ++j) {
            const float t0 = x[j] * id, t1 = x[j + 16] * id;
            const int a = static_cast<std::int8_t>(t0 + 8.5f), b = static_cast<std::int8_t>(t1 + 8.5f);
            y[i].qs[j] = static_cast<std::uint8_t>((a < 15 ? a : 15) | ((b < 15 ? b : 15) << 4));
        }
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/quantize_w.hpp"

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
