// Reference quantize / dequantize / dot for the two FP4 formats, both E2M1 values
// (sign, 2 exponent bits, 1 mantissa bit) stored as doubled levels kvalues_mxfp4 with a
// halved scale, q4_0 nibble order within each scaled group, q8_0 activations as partner.
//   mxfp4 (OCP microscaling FP4): 32 values sharing a power-of-two scale byte e (E8M0):
//     x = e8m0_half[e] * kvalues_mxfp4[nibble]. Quantizer (ggml's): e = floor(log2(amax))
//     - 2 + 127, so amax lands in [4, 8) times the unit 2^(e-127); each value takes the
//     nearest level (first on ties). e is clamped to [0, 254] for inputs whose exponent
//     falls outside (ggml's cast is undefined there).
//   nvfp4 (NVIDIA FP4): 64 values in four groups of 16, each with a UE4M3 scale byte:
//     x = ue4m3_half[d[g]] * kvalues_mxfp4[nibble]; group g's 16 values are in bytes
//     8g..8g+7 (low nibbles the first 8). Quantizer (ggml's): d = UE4M3 of amax / 6 (the
//     largest E2M1 level), rounded half up on the mantissa, saturating at 448; then the
//     nearest level of each value against the decoded scale.
// Neither reads importance weights.
#pragma once

#include <cmath>
#include <bit>
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

// ggml's ggml_fp32_to_ue4m3: 0 for non-positive and NaN, saturated at 448 (0x7E),
// subnormals (below 2^-6) as round(x * 2^9) in 1..7, otherwise the top three mantissa
// bits rounded up on the fourth.
inline std::uint8_t to_ue4m3(float x) noexcept {
    if (!(x > 0.0f)) return 0;
    if (x > 448.0f) x = 448.0f;
    const auto bits = std::bit_cast<std::uint32_t>(x);
    int e = static_cast<int>((bits >> 23) & 0xFF) - 127 + 7;
    if (e <= 0) {
        const int m = static_cast<int>(x * 512.0f + 0.5f);
        return static_cast<std::uint8_t>(m > 7 ? 7 : (m < 1 ? 0 : m));
    }
    if (e >= 15) return 0x7E;
    int m = static_cast<int>((bits >> 20) & 7) + static_cast<int>((bits >> 19) & 1);
    if (m > 7) {
        m = 0;
        if (++e >= 15) return 0x7E;
    }
    return static_cast<std::uint8_t>((e << 3) | m);
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

// ---- nvfp4 -----------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_nvfp4* y, std::int64_t n) {
    detail::check_row<block_nvfp4>(n, "quantize_row_ref(nvfp4)");
    for (std::int64_t b = 0; b < n / 64; ++b) {
        for (int g = 0; g < 4; ++g) {
            const float* xg = x + 64 * b + 16 * g;
            float amax = 0;
            for (int j = 0; j < 16; ++j)
                if (amax < std::fabs(xg[j])) amax = std::fabs(xg[j]);
            const std::uint8_t e = detail::to_ue4m3(amax / 6.0f);
            y[b].d[g] = e;
            const float d = ue4m3_half[e];
            for (int j = 0; j < 8; ++j)
                y[b].qs[8 * g + j] = static_cast<std::uint8_t>(detail::nearest_mxfp4(xg[j], d) |
                                                               (detail::nearest_mxfp4(xg[j + 8], d) << 4));
        }
    }
}
inline void quantize_row_ref(const float* x, block_nvfp4* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_nvfp4* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / 64; ++b)
        for (int g = 0; g < 4; ++g, y += 16) {
            const float d = ue4m3_half[x[b].d[g]];
            for (int j = 0; j < 8; ++j) {
                y[j] = static_cast<float>(kvalues_mxfp4[x[b].qs[8 * g + j] & 0xF]) * d;
                y[j + 8] = static_cast<float>(kvalues_mxfp4[x[b].qs[8 * g + j] >> 4]) * d;
            }
        }
}
// Per group of 16: the activation's d (of the q8_0 block holding the group) times the
// group's scale, times the exact integer sum, summed in f32 in group order (ggml's order).
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_nvfp4* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / 64; ++b)
        for (int g = 0; g < 4; ++g) {
            const block_q8_0& yb = y[2 * b + g / 2];
            const std::int8_t* q8 = yb.qs + 16 * (g % 2);
            int s1 = 0, s2 = 0;
            for (int j = 0; j < 8; ++j) {
                s1 += q8[j] * kvalues_mxfp4[x[b].qs[8 * g + j] & 0xF];
                s2 += q8[j + 8] * kvalues_mxfp4[x[b].qs[8 * g + j] >> 4];
            }
            sum += detail::widen<Tag>(yb.d) * ue4m3_half[x[b].d[g]] * static_cast<float>(s1 + s2);
        }
    return sum;
}

}  // namespace quant
TESSERA_END_NAMESPACE
