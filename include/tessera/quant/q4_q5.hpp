// Reference quantize / dequantize / dot for the legacy 32-element formats q4_0, q4_1,
// q5_0 and q5_1. Without importance weights the bytes equal ggml's reference
// quantizers exactly:
//   q4_0: d = max/-8 (max = the signed value of largest magnitude), q = min(15, trunc(x/d + 8.5))
//   q4_1: d = (max-min)/15, m = min,                                q = min(15, trunc((x-m)/d + 0.5))
//   q5_0: d = max/-16,                                              q = min(31, trunc(x/d + 16.5))
//   q5_1: d = (max-min)/31, m = min,                                q = trunc((x-m)/d + 0.5)
// Nibble order: byte j holds element j (low nibble) and j+16 (high nibble); q5's
// fifth bits sit in a little-endian u32, bit j for element j.
// With importance weights (quantize_row_ref(x, y, n, imatrix) with imatrix non-null)
// the scale is fitted as ggml's quantize_q4_0 etc. do; the weights of a row are then
// qw[j] * sqrt(sigma2 + x[j]^2), sigma2 = mean of x^2 over the row.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

namespace detail {
inline void store_q5_high_bits(std::uint8_t* qh, const std::uint8_t* q) noexcept {  // q[32] in [0,31]
    std::uint32_t h = 0;
    for (int j = 0; j < 32; ++j) h |= static_cast<std::uint32_t>((q[j] >> 4) & 1u) << j;
    std::memcpy(qh, &h, 4);  // little-endian host (x86)
}
TESSERA_ALWAYS_INLINE std::uint32_t load_u32(const std::uint8_t* p) noexcept {
    std::uint32_t h;
    std::memcpy(&h, p, 4);
    return h;
}
TESSERA_ALWAYS_INLINE void store_nibbles32(std::uint8_t* qs, const std::uint8_t* q) noexcept {  // q[32], low 4 bits used
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<std::uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
}
inline float row_sigma2(const float* x, std::int64_t n) noexcept {
    float s = 0;
    for (std::int64_t j = 0; j < n; ++j) s += x[j] * x[j];
    return n > 0 ? s / static_cast<float>(n) : 0.0f;
}
struct min_max {
    float min = FLT_MAX, max = -FLT_MAX;
};
inline min_max find_min_max(const float* x, int n) noexcept {
    min_max r;
    for (int j = 0; j < n; ++j) {
        if (x[j] < r.min) r.min = x[j];
        if (x[j] > r.max) r.max = x[j];
    }
    return r;
}
}  // namespace detail

// ---- q4_0 ----------------------------------------------------------------------------
template <class Tag = void>
void quantize_row_unchecked(const float* x, block_q4_0* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk4_0; ++b, x += qk4_0) {
        const float max = detail::find_signed_max(x, qk4_0).value;
        const float d = max / -8;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        std::uint8_t q[qk4_0];
        for (int j = 0; j < qk4_0; ++j) {
            const int v = detail::trunc_i8(detail::rounded(x[j] * id) + 8.5f);  // product rounded, never fused
            q[j] = static_cast<std::uint8_t>(v < 15 ? v : 15);
        }
        detail::store_nibbles32(y[b].qs, q);
    }
}
inline void quantize_row_ref(const float* x, block_q4_0* y, std::int64_t n) {
    detail::check_row<block_q4_0>(n, "quantize_row_ref(q4_0)");
    quantize_row_unchecked(x, y, n);
}
inline void quantize_row_ref(const float* x, block_q4_0* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q4_0>(n, "quantize_row_ref(q4_0)");
    const float sigma2 = detail::row_sigma2(x, n);
    for (std::int64_t b = 0; b < n / qk4_0; ++b, x += qk4_0, imatrix += qk4_0) {
        float w[qk4_0];
        for (int j = 0; j < qk4_0; ++j) w[j] = imatrix[j] * std::sqrt(sigma2 + x[j] * x[j]);
        std::int8_t L[qk4_0];
        y[b].d = f16::from_float(detail::make_qx_quants(qk4_0, 8, x, L, 1, w));
        detail::store_nibbles32(y[b].qs, reinterpret_cast<const std::uint8_t*>(L));
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q4_0* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk4_0; ++b, y += qk4_0) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>((x[b].qs[j] & 0xF) - 8) * d;
            y[j + 16] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q4_0* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk4_0; ++b) {
        int s = 0;
        for (int j = 0; j < 16; ++j) {
            s += ((x[b].qs[j] & 0xF) - 8) * y[b].qs[j];
            s += ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + 16];
        }
        sum += static_cast<float>(s) * detail::widen<Tag>(x[b].d) * detail::widen<Tag>(y[b].d);
    }
    return sum;
}

// ---- q4_1 ----------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_q4_1* y, std::int64_t n) {
    detail::check_row<block_q4_1>(n, "quantize_row_ref(q4_1)");
    for (std::int64_t b = 0; b < n / qk4_1; ++b, x += qk4_1) {
        const detail::min_max mm = detail::find_min_max(x, qk4_1);
        const float d = (mm.max - mm.min) / 15;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        y[b].m = f16::from_float(mm.min);
        std::uint8_t q[qk4_1];
        for (int j = 0; j < qk4_1; ++j) {
            const int v = detail::trunc_i8(detail::rounded((x[j] - mm.min) * id) + 0.5f);
            q[j] = static_cast<std::uint8_t>(v < 15 ? v : 15);
        }
        detail::store_nibbles32(y[b].qs, q);
    }
}
inline void quantize_row_ref(const float* x, block_q4_1* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q4_1>(n, "quantize_row_ref(q4_1)");
    const float sigma2 = detail::row_sigma2(x, n);
    for (std::int64_t b = 0; b < n / qk4_1; ++b, x += qk4_1, imatrix += qk4_1) {
        float w[qk4_1];
        for (int j = 0; j < qk4_1; ++j) w[j] = imatrix[j] * std::sqrt(sigma2 + x[j] * x[j]);
        std::uint8_t L[qk4_1], Laux[qk4_1];
        float min = 0;
        const float d = detail::make_qkx_quants(qk4_1, 15, x, w, L, &min, Laux, -0.9f, 0.05f, 36, false);
        y[b].d = f16::from_float(d);
        y[b].m = f16::from_float(-min);
        detail::store_nibbles32(y[b].qs, L);
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q4_1* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk4_1; ++b, y += qk4_1) {
        const float d = detail::widen<Tag>(x[b].d), m = detail::widen<Tag>(x[b].m);
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>(x[b].qs[j] & 0xF) * d + m;
            y[j + 16] = static_cast<float>(x[b].qs[j] >> 4) * d + m;
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q4_1* x, const block_q8_1* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk4_1; ++b) {
        int s = 0;
        for (int j = 0; j < 16; ++j) {
            s += (x[b].qs[j] & 0xF) * y[b].qs[j];
            s += (x[b].qs[j] >> 4) * y[b].qs[j + 16];
        }
        sum += (detail::widen<Tag>(x[b].d) * detail::widen<Tag>(y[b].d)) * static_cast<float>(s) +
               detail::widen<Tag>(x[b].m) * detail::widen<Tag>(y[b].s);
    }
    return sum;
}

// ---- q5_0 ----------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_q5_0* y, std::int64_t n) {
    detail::check_row<block_q5_0>(n, "quantize_row_ref(q5_0)");
    for (std::int64_t b = 0; b < n / qk5_0; ++b, x += qk5_0) {
        const float max = detail::find_signed_max(x, qk5_0).value;
        const float d = max / -16;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        std::uint8_t q[qk5_0];
        for (int j = 0; j < qk5_0; ++j) {
            const int v = detail::trunc_i8(detail::rounded(x[j] * id) + 16.5f);
            q[j] = static_cast<std::uint8_t>(v < 31 ? v : 31);
        }
        detail::store_nibbles32(y[b].qs, q);
        detail::store_q5_high_bits(y[b].qh, q);
    }
}
inline void quantize_row_ref(const float* x, block_q5_0* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q5_0>(n, "quantize_row_ref(q5_0)");
    const float sigma2 = detail::row_sigma2(x, n);
    for (std::int64_t b = 0; b < n / qk5_0; ++b, x += qk5_0, imatrix += qk5_0) {
        float w[qk5_0];
        for (int j = 0; j < qk5_0; ++j) w[j] = imatrix[j] * std::sqrt(sigma2 + x[j] * x[j]);
        std::int8_t L[qk5_0];
        y[b].d = f16::from_float(detail::make_qx_quants(qk5_0, 16, x, L, 1, w));
        const auto* q = reinterpret_cast<const std::uint8_t*>(L);
        detail::store_nibbles32(y[b].qs, q);
        detail::store_q5_high_bits(y[b].qh, q);
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q5_0* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk5_0; ++b, y += qk5_0) {
        const float d = detail::widen<Tag>(x[b].d);
        const std::uint32_t h = detail::load_u32(x[b].qh);
        for (int j = 0; j < 16; ++j) {
            const int v0 = static_cast<int>((x[b].qs[j] & 0xFu) | (((h >> j) & 1u) << 4)) - 16;
            const int v1 = static_cast<int>((x[b].qs[j] >> 4) | (((h >> (j + 16)) & 1u) << 4)) - 16;
            y[j] = static_cast<float>(v0) * d;
            y[j + 16] = static_cast<float>(v1) * d;
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q5_0* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk5_0; ++b) {
        const std::uint32_t h = detail::load_u32(x[b].qh);
        int s = 0;
        for (int j = 0; j < 16; ++j) {
            const int v0 = static_cast<int>((x[b].qs[j] & 0xFu) | (((h >> j) & 1u) << 4)) - 16;
            const int v1 = static_cast<int>((x[b].qs[j] >> 4) | (((h >> (j + 16)) & 1u) << 4)) - 16;
            s += v0 * y[b].qs[j] + v1 * y[b].qs[j + 16];
        }
        sum += (detail::widen<Tag>(x[b].d) * detail::widen<Tag>(y[b].d)) * static_cast<float>(s);
    }
    return sum;
}

// ---- q5_1 ----------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_q5_1* y, std::int64_t n) {
    detail::check_row<block_q5_1>(n, "quantize_row_ref(q5_1)");
    for (std::int64_t b = 0; b < n / qk5_1; ++b, x += qk5_1) {
        const detail::min_max mm = detail::find_min_max(x, qk5_1);
        const float d = (mm.max - mm.min) / 31;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        y[b].m = f16::from_float(mm.min);
        std::uint8_t q[qk5_1];
        for (int j = 0; j < qk5_1; ++j) q[j] = detail::trunc_u8(detail::rounded((x[j] - mm.min) * id) + 0.5f);
        detail::store_nibbles32(y[b].qs, q);
        detail::store_q5_high_bits(y[b].qh, q);
    }
}
inline void quantize_row_ref(const float* x, block_q5_1* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q5_1>(n, "quantize_row_ref(q5_1)");
    const float sigma2 = detail::row_sigma2(x, n);
    for (std::int64_t b = 0; b < n / qk5_1; ++b, x += qk5_1, imatrix += qk5_1) {
        float w[qk5_1];
        for (int j = 0; j < qk5_1; ++j) w[j] = imatrix[j] * std::sqrt(sigma2 + x[j] * x[j]);
        std::uint8_t L[qk5_1], Laux[qk5_1];
        float min = 0;
        const float d = detail::make_qkx_quants(qk5_1, 31, x, w, L, &min, Laux, -0.9f, 0.05f, 36, false);
        y[b].d = f16::from_float(d);
        y[b].m = f16::from_float(-min);
        detail::store_nibbles32(y[b].qs, L);
        detail::store_q5_high_bits(y[b].qh, L);
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q5_1* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk5_1; ++b, y += qk5_1) {
        const float d = detail::widen<Tag>(x[b].d), m = detail::widen<Tag>(x[b].m);
        const std::uint32_t h = detail::load_u32(x[b].qh);
        for (int j = 0; j < 16; ++j) {
            const unsigned v0 = (x[b].qs[j] & 0xFu) | (((h >> j) & 1u) << 4);
            const unsigned v1 = (x[b].qs[j] >> 4) | (((h >> (j + 16)) & 1u) << 4);
            y[j] = static_cast<float>(v0) * d + m;
            y[j + 16] = static_cast<float>(v1) * d + m;
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q5_1* x, const block_q8_1* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk5_1; ++b) {
        const std::uint32_t h = detail::load_u32(x[b].qh);
        int s = 0;
        for (int j = 0; j < 16; ++j) {
            const int v0 = static_cast<int>((x[b].qs[j] & 0xFu) | (((h >> j) & 1u) << 4));
            const int v1 = static_cast<int>((x[b].qs[j] >> 4) | (((h >> (j + 16)) & 1u) << 4));
            s += v0 * y[b].qs[j] + v1 * y[b].qs[j + 16];
        }
        sum += (detail::widen<Tag>(x[b].d) * detail::widen<Tag>(y[b].d)) * static_cast<float>(s) +
               detail::widen<Tag>(x[b].m) * detail::widen<Tag>(y[b].s);
    }
    return sum;
}

}  // namespace quant
TESSERA_END_NAMESPACE
