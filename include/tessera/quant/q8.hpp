// Reference quantize / dequantize / dot for the 8-bit formats: q8_0 and q8_1 (32 per
// block, f16 scale) and q8_K (256 per block, f32 scale, per-16 sums), the activation
// ("dot partner") formats of every weight type. Byte-identical to ggml's reference
// quantizers: q8_0/q8_1 scale d = amax/127 and q = round-half-away(x/d); q8_K scale
// max/-127 with the signed max and q = nearest-even, capped at 127.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

// ---- q8_0 ----------------------------------------------------------------------------
template <class Tag = void>
void quantize_row_unchecked(const float* x, block_q8_0* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk8_0; ++b, x += qk8_0) {
        float amax = 0.0f;
        for (int j = 0; j < qk8_0; ++j) amax = detail::max_keep_nan(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        for (int j = 0; j < qk8_0; ++j) y[b].qs[j] = detail::round_away_i8(x[j] * id);
    }
}
inline void quantize_row_ref(const float* x, block_q8_0* y, std::int64_t n) {
    detail::check_row<block_q8_0>(n, "quantize_row_ref(q8_0)");
    quantize_row_unchecked(x, y, n);
}
inline void quantize_row_ref(const float* x, block_q8_0* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q8_0* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk8_0; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int j = 0; j < qk8_0; ++j) *y++ = static_cast<float>(x[b].qs[j]) * d;
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q8_0* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk8_0; ++b) {
        int s = 0;
        for (int j = 0; j < qk8_0; ++j) s += x[b].qs[j] * y[b].qs[j];
        sum += static_cast<float>(s) * (detail::widen<Tag>(x[b].d) * detail::widen<Tag>(y[b].d));
    }
    return sum;
}

// ---- q8_1 ----------------------------------------------------------------------------
template <class Tag = void>
void quantize_row_unchecked(const float* x, block_q8_1* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk8_1; ++b, x += qk8_1) {
        float amax = 0.0f;
        for (int j = 0; j < qk8_1; ++j) amax = detail::max_keep_nan(amax, std::fabs(x[j]));
        const float d = amax / 127;
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        int sum = 0;
        for (int j = 0; j < qk8_1; ++j) {
            y[b].qs[j] = detail::round_away_i8(x[j] * id);
            sum += y[b].qs[j];
        }
        y[b].s = f16::from_float(static_cast<float>(sum) * d);  // d before f16 rounding, as ggml
    }
}
inline void quantize_row_ref(const float* x, block_q8_1* y, std::int64_t n) {
    detail::check_row<block_q8_1>(n, "quantize_row_ref(q8_1)");
    quantize_row_unchecked(x, y, n);
}
inline void quantize_row_ref(const float* x, block_q8_1* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q8_1* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk8_1; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int j = 0; j < qk8_1; ++j) *y++ = static_cast<float>(x[b].qs[j]) * d;
    }
}
// q8_1 . q8_1 (ggml has no such kernel; given so every block type has a dot).
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q8_1* x, const block_q8_1* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk8_1; ++b) {
        int s = 0;
        for (int j = 0; j < qk8_1; ++j) s += x[b].qs[j] * y[b].qs[j];
        sum += static_cast<float>(s) * (detail::widen<Tag>(x[b].d) * detail::widen<Tag>(y[b].d));
    }
    return sum;
}

// ---- q8_K ----------------------------------------------------------------------------
template <class Tag = void>
void quantize_row_unchecked(const float* x, block_q8_K* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        const detail::signed_max sm = detail::find_signed_max(x, qk_k);
        if (sm.magnitude == 0) {
            y[b].d = 0;
            std::memset(y[b].qs, 0, sizeof(y[b].qs));
            std::memset(y[b].bsums, 0, sizeof(y[b].bsums));
            continue;
        }
        const float iscale = -127.0f / sm.value;
        for (int j = 0; j < qk_k; ++j) {
            const int v = detail::nearest_int(iscale * x[j]);
            y[b].qs[j] = static_cast<std::int8_t>(v < 127 ? v : 127);
        }
        for (int g = 0; g < qk_k / 16; ++g) {
            int s = 0;
            for (int j = 0; j < 16; ++j) s += y[b].qs[16 * g + j];
            y[b].bsums[g] = static_cast<std::int16_t>(s);
        }
        y[b].d = 1 / iscale;
    }
}
inline void quantize_row_ref(const float* x, block_q8_K* y, std::int64_t n) {
    detail::check_row<block_q8_K>(n, "quantize_row_ref(q8_K)");
    quantize_row_unchecked(x, y, n);
}
inline void quantize_row_ref(const float* x, block_q8_K* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q8_K* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b)
        for (int j = 0; j < qk_k; ++j) *y++ = x[b].d * static_cast<float>(x[b].qs[j]);
}
// q8_K . q8_K (ggml has no such kernel; given so every block type has a dot).
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q8_K* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        int s = 0;
        for (int j = 0; j < qk_k; ++j) s += x[b].qs[j] * y[b].qs[j];
        sum += static_cast<float>(s) * (x[b].d * y[b].d);
    }
    return sum;
}

}  // namespace quant
TESSERA_END_NAMESPACE
