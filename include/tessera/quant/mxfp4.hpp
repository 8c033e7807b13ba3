// Reference quantize / dequantize / dot for mxfp4 (OCP microscaling FP4): 32 E2M1
// values (sign, 2 exponent bits, 1 mantissa bit) sharing a power-of-two scale byte
// e (E8M0). Stored as ggml does: x = e8m0_half[e] * kvalues_mxfp4[nibble] (doubled
// E2M1 levels, halved scale), q4_0 nibble order.
// Quantizer (ggml's): e = floor(log2(amax)) - 2 + 127, so amax lands in [4, 8) times
// the unit 2^(e-127); each value takes the nearest level (first on ties). e is
// clamped to [0, 254] for inputs whose exponent falls outside (ggml's cast is
// undefined there).
#pragma once

#include <cmath>
#include <cstdint>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"
#include "tessera/quant/tables.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

namespace detail {
inline std::uint8_t nearest_mxfp4(float v, float d) noexcept {
    int best = 0;
    float best_err = std::fabs(static_cast<float>(kvalues_mxfp4[0]) * d - v);
    for (int i = 1; i < 16; ++i) {
        const float err = std::fabs(static_cast<float>(kvalues_mxfp4[i]) * d - v);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return static_cast<std::uint8_t>(best);
}
}  // namespace detail

inline void quantize_row_ref(const float* x, block_mxfp4* y, std::int64_t n) {
    detail::check_row<block_mxfp4>(n, "quantize_row_ref(mxfp4)");
    for (std::int64_t b = 0; b < n / 32; ++b, x += 32) {
        float amax = 0;
        for (int j = 0; j < 32; ++j)
            if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
        std::uint8_t e = 0;
        if (amax > 0.0f) {
            const float ef = std::floor(std::log2(amax)) - 2 + 127;
            e = static_cast<std::uint8_t>(ef < 0 ? 0 : (ef > 254 ? 254 : ef));
        }
        const float d = e8m0_half[e];
        y[b].e = e;
        for (int j = 0; j < 16; ++j)
            y[b].qs[j] = static_cast<std::uint8_t>(detail::nearest_mxfp4(x[j], d) |
                                                   (detail::nearest_mxfp4(x[j + 16], d) << 4));
    }
}
inline void quantize_row_ref(const float* x, block_mxfp4* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_mxfp4* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / 32; ++b, y += 32) {
        const float d = e8m0_half[x[b].e];
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>(kvalues_mxfp4[x[b].qs[j] & 0xF]) * d;
            y[j + 16] = static_cast<float>(kvalues_mxfp4[x[b].qs[j] >> 4]) * d;
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_mxfp4* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / 32; ++b) {
        const float d = detail::widen<Tag>(y[b].d) * e8m0_half[x[b].e];
        int s1 = 0, s2 = 0;
        for (int j = 0; j < 16; ++j) {
            s1 += y[b].qs[j] * kvalues_mxfp4[x[b].qs[j] & 0xF];
            s2 += y[b].qs[j + 16] * kvalues_mxfp4[x[b].qs[j] >> 4];
        }
        sum += d * static_cast<float>(s1 + s2);
    }
    return sum;
}

}  // namespace quant
TESSERA_END_NAMESPACE
