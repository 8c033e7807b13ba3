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
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

using quant::block_q8_0;
using quant::block_q8_1;
using quant::block_q8_K;

// ---- scalar ----------------------------------------------------------------------------
// q8_0 and q8_1: d = amax / 127, q = roundf(x / d); q8_1 also stores s = d * sum(q).
template <class A, class B>
void quantize_q8_01_scalar(const float* x, B* y, std::int64_t n) {
    const std::int64_t nb = n / 32;
    for (std::int64_t i = 0; i < nb; ++i, x += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) {
            const float ax = __builtin_fabsf(x[j]);
            amax = amax > ax ? amax : ax;
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f2h<A>(d);
        int sum = 0;
        for (int j = 0; j < 32; ++j) {
            const float v = x[j] * id;
            y[i].qs[j] = static_cast<std::int8_t>(round_away<A>(v));
            sum += y[i].qs[j];
        }
        if constexpr (std::is_same_v<B, block_q8_1>) y[i].s = f2h<A>(static_cast<float>(sum) * d);
    }
}

template <class A>
void quantize_q8_0(const float* x, block_q8_0* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    quantize_q8_01_scalar<A>(x, y, n);
}
template <class A>
void quantize_q8_1(const float* x, block_q8_1* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    quantize_q8_01_scalar<A>(x, y, n);
}

// q8_K: the signed value of largest magnitude (first one on ties) maps to -127;
// q = min(127, nearest_int(-127 / max * x)); d = 1 / iscale; bsums of each 16.
template <class A>
void quantize_q8_K(const float* x, block_q8_K* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    const std::int64_t nb = n / quant::qk_k;
    for (std::int64_t i = 0; i < nb; ++i, x += quant::qk_k) {
        float max = 0.0f, amax = 0.0f;
        for (int j = 0; j < quant::qk_k; ++j) {
            const float ax = __builtin_fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof(block_q8_K));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < quant::qk_k; ++j) {
            const int v = nearest_int<A>(iscale * x[j]);
            y[i].qs[j] = static_cast<std::int8_t>(v < 127 ? v : 127);
        }
        for (int j = 0; j < quant::qk_k / 16; ++j) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * j + l];
            y[i].bsums[j] = static_cast<std::int16_t>(sum);
        }
        y[i].d = 1.0f / iscale;
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/quantize_act.hpp"

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
