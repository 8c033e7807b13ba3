// Reference quantize / dequantize / dot for ggml's two smallest linear formats, both
// with one f16 scale d per block and the q8_0 activations as dot partner:
//   q1_0: 128 elements, one bit each (bit j % 8 of byte j / 8): x = +d if set, else -d.
//         The quantizer takes d = mean |x| over the block and stores each sign (x >= 0
//         sets the bit; -0 and NaN-free zeros count as positive).
//   q2_0: 64 elements, two bits each (bits 2 (j % 4) of byte j / 4): x = (q - 1) d,
//         q in 0..3, so the levels are -d, 0, d, 2d. The quantizer takes d = max |x|
//         and q = roundf(x / d) + 1 clamped to [0, 3].
// Neither reads importance weights (ggml's quantize_q1_0 / quantize_q2_0 take them and
// run the reference row by row). The dot products follow ggml's portable kernels: per
// 32-element q8_0 block an exact integer sum, scaled by the activation's d and summed in
// f32 over the block, then times the weight's d.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

// ---- q1_0 ------------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_q1_0* y, std::int64_t n) {
    detail::check_row<block_q1_0>(n, "quantize_row_ref(q1_0)");
    for (std::int64_t b = 0; b < n / 128; ++b, x += 128) {
        float sum_abs = 0;
        for (int j = 0; j < 128; ++j) sum_abs += std::fabs(x[j]);
        y[b].d = f16::from_float(sum_abs / 128);
        std::memset(y[b].qs, 0, sizeof(y[b].qs));
        for (int j = 0; j < 128; ++j)
            if (x[j] >= 0.0f) y[b].qs[j / 8] = static_cast<std::uint8_t>(y[b].qs[j / 8] | (1u << (j % 8)));
    }
}
inline void quantize_row_ref(const float* x, block_q1_0* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q1_0* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / 128; ++b, y += 128) {
        const float d = detail::widen<Tag>(x[b].d), nd = -d;
        for (int j = 0; j < 128; ++j) y[j] = (x[b].qs[j / 8] >> (j % 8)) & 1 ? d : nd;
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q1_0* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / 128; ++b) {
        float sb = 0;
        for (int k = 0; k < 4; ++k) {
            const block_q8_0& yb = y[4 * b + k];
            int s = 0;
            for (int j = 0; j < 32; ++j) s += (x[b].qs[4 * k + j / 8] >> (j % 8)) & 1 ? yb.qs[j] : -yb.qs[j];
            sb += detail::widen<Tag>(yb.d) * static_cast<float>(s);
        }
        sum += detail::widen<Tag>(x[b].d) * sb;
    }
    return sum;
}

// ---- q2_0 ------------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_q2_0* y, std::int64_t n) {
    detail::check_row<block_q2_0>(n, "quantize_row_ref(q2_0)");
    for (std::int64_t b = 0; b < n / 64; ++b, x += 64) {
        float amax = 0;
        for (int j = 0; j < 64; ++j) amax = std::fabs(x[j]) > amax ? std::fabs(x[j]) : amax;
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        y[b].d = f16::from_float(amax);
        std::memset(y[b].qs, 0, sizeof(y[b].qs));
        for (int j = 0; j < 64; ++j) {
            // roundf(x / d) + 1 clamped to [0, 3]; NaN and infinite quotients (infinite
            // data, or a subnormal max whose inverse overflows) convert as x86 does, to
            // INT32_MIN, and so store 0
            const std::int32_t r = detail::trunc_i32(std::round(x[j] * id));
            const int q = r < -1 ? 0 : (r > 2 ? 3 : r + 1);
            y[b].qs[j / 4] = static_cast<std::uint8_t>(y[b].qs[j / 4] | (q << (2 * (j % 4))));
        }
    }
}
inline void quantize_row_ref(const float* x, block_q2_0* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q2_0* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / 64; ++b, y += 64) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int j = 0; j < 64; ++j)
            y[j] = static_cast<float>(((x[b].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q2_0* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / 64; ++b) {
        float sb = 0;
        for (int k = 0; k < 2; ++k) {
            const block_q8_0& yb = y[2 * b + k];
            const std::uint8_t* qs = x[b].qs + 8 * k;
            int s = 0;
            for (int j = 0; j < 32; ++j) s += (((qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * yb.qs[j];
            sb += detail::widen<Tag>(yb.d) * static_cast<float>(s);
        }
        sum += detail::widen<Tag>(x[b].d) * sb;
    }
    return sum;
}

}  // namespace quant
TESSERA_END_NAMESPACE
