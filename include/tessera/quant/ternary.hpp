// Reference quantize / dequantize / dot for the ternary formats (BitNet b1.58, TriLMs):
// x = d * t, t in {-1, 0, 1}, d = the block's absolute max (f16), t = round(x/d)
// with halves away from zero (as ggml's lroundf), 256 per block.
//   tq2_0: t + 1 in 2 bits; in each 32-byte chunk c, byte m holds elements
//          128c + m + 32l in bits 2l..2l+1.
//   tq1_0: five trits per byte as a base-3 fixed-point fraction: the byte is
//          ceil(v * 256 / 243) for the 5-digit base-3 number v (first element most
//          significant), so trit k is ((byte * 3^k mod 256) * 3) >> 8. Bytes 0..31
//          hold elements m + 32k (k = 0..4), bytes 32..47 elements 160 + m + 16k, and
//          the four qh bytes elements 240 + j + 4k (k = 0..3, a fifth trit 0).
#pragma once

#include <cmath>
#include <cstdint>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

namespace detail {
inline float block_amax(const float* x, int n) noexcept {
    float amax = 0;
    for (int j = 0; j < n; ++j) amax = max_keep_nan(amax, std::fabs(x[j]));
    return amax;
}
// t + 1 in {0, 1, 2}.
inline int trit_of(float v) noexcept {
    const int t = trunc_i32(std::round(v)) + 1;
    return t < 0 ? 0 : (t > 2 ? 2 : t);
}
inline std::uint8_t pack_trits(int v) noexcept {  // v = 5-digit base-3 number, < 243
    return static_cast<std::uint8_t>((v * 256 + 242) / 243);
}
inline int unpack_trit(std::uint8_t byte, int k) noexcept {  // t + 1 of digit k (0 = most significant)
    static constexpr std::uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const auto q = static_cast<std::uint8_t>(byte * pow3[k]);
    return (q * 3) >> 8;
}
// Element index of trit k of tq1_0 byte i (i < 48 in qs, 48..51 for qh[i-48]).
inline int tq1_element(int i, int k) noexcept {
    if (i < 32) return i + 32 * k;
    if (i < 48) return 160 + (i - 32) + 16 * k;
    return 240 + (i - 48) + 4 * k;
}
}  // namespace detail

// ---- tq1_0 -------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_tq1_0* y, std::int64_t n) {
    detail::check_row<block_tq1_0>(n, "quantize_row_ref(tq1_0)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        const float d = detail::block_amax(x, qk_k);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        for (int i = 0; i < 52; ++i) {
            const int ntrits = i < 48 ? 5 : 4;
            int v = 0;
            for (int k = 0; k < ntrits; ++k) v = 3 * v + detail::trit_of(x[detail::tq1_element(i, k)] * id);
            if (ntrits == 4) v *= 3;
            if (i < 48) y[b].qs[i] = detail::pack_trits(v);
            else y[b].qh[i - 48] = detail::pack_trits(v);
        }
    }
}
inline void quantize_row_ref(const float* x, block_tq1_0* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
inline void dequantize_row_ref(const block_tq1_0* x, float* y, std::int64_t n) {
    detail::check_row<block_tq1_0>(n, "dequantize_row_ref(tq1_0)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, y += qk_k) {
        const float d = x[b].d.to_float();
        for (int i = 0; i < 52; ++i) {
            const std::uint8_t byte = i < 48 ? x[b].qs[i] : x[b].qh[i - 48];
            for (int k = 0; k < (i < 48 ? 5 : 4); ++k)
                y[detail::tq1_element(i, k)] = static_cast<float>(detail::unpack_trit(byte, k) - 1) * d;
        }
    }
}
inline float vec_dot_ref(std::int64_t n, const block_tq1_0* x, const block_q8_K* y) {
    detail::check_row<block_tq1_0>(n, "vec_dot_ref(tq1_0)");
    float sumf = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        int sum = 0;
        for (int i = 0; i < 52; ++i) {
            const std::uint8_t byte = i < 48 ? x[b].qs[i] : x[b].qh[i - 48];
            for (int k = 0; k < (i < 48 ? 5 : 4); ++k)
                sum += (detail::unpack_trit(byte, k) - 1) * y[b].qs[detail::tq1_element(i, k)];
        }
        sumf += static_cast<float>(sum) * (x[b].d.to_float() * y[b].d);
    }
    return sumf;
}

// ---- tq2_0 -------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_tq2_0* y, std::int64_t n) {
    detail::check_row<block_tq2_0>(n, "quantize_row_ref(tq2_0)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        const float d = detail::block_amax(x, qk_k);
        const float id = d != 0 ? 1.0f / d : 0.0f;
        y[b].d = f16::from_float(d);
        for (int c = 0; c < 2; ++c)
            for (int m = 0; m < 32; ++m) {
                int q = 0;
                for (int l = 0; l < 4; ++l) q |= detail::trit_of(x[128 * c + 32 * l + m] * id) << (2 * l);
                y[b].qs[32 * c + m] = static_cast<std::uint8_t>(q);
            }
    }
}
inline void quantize_row_ref(const float* x, block_tq2_0* y, std::int64_t n, const float* /*imatrix*/) {
    quantize_row_ref(x, y, n);
}
inline void dequantize_row_ref(const block_tq2_0* x, float* y, std::int64_t n) {
    detail::check_row<block_tq2_0>(n, "dequantize_row_ref(tq2_0)");
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = x[b].d.to_float();
        for (int e = 0; e < qk_k; ++e) {
            const int c = e / 128, l = (e % 128) / 32, m = e % 32;
            *y++ = static_cast<float>(((x[b].qs[32 * c + m] >> (2 * l)) & 3) - 1) * d;
        }
    }
}
inline float vec_dot_ref(std::int64_t n, const block_tq2_0* x, const block_q8_K* y) {
    detail::check_row<block_tq2_0>(n, "vec_dot_ref(tq2_0)");
    float sumf = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        int sum = 0;
        for (int e = 0; e < qk_k; ++e) {
            const int c = e / 128, l = (e % 128) / 32, m = e % 32;
            sum += y[b].qs[e] * (((x[b].qs[32 * c + m] >> (2 * l)) & 3) - 1);
        }
        sumf += static_cast<float>(sum) * (y[b].d * x[b].d.to_float());
    }
    return sumf;
}

}  // namespace quant
TESSERA_END_NAMESPACE
