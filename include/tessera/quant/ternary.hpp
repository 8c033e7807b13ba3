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
TESSERA_ALWAYS_INLINE int unpack_trit(std::uint8_t byte, int k) noexcept {  // t + 1 of digit k (0 = most significant)
    static constexpr std::uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const auto q = static_cast<std::uint8_t>(byte * pow3[k]);
    return (q * 3) >> 8;
}
// Element index of trit k of tq1_0 byte i (i < 48 in qs, 48..51 for qh[i-48]).
TESSERA_ALWAYS_INLINE int tq1_element(int i, int k) noexcept {
    if (i < 32) return i + 32 * k;
    if (i < 48) return 160 + (i - 32) + 16 * k;
    return 240 + (i - 48) + 4 * k;
}
// The 256 trits t + 1 of a tq1_0 block in element order (tq1_element's layout).
TESSERA_ALWAYS_INLINE void unpack_tq1_trits(const block_tq1_0& b, std::uint8_t* t) noexcept {
    for (int k = 0; k < 5; ++k)
        for (int m = 0; m < 32; ++m) *t++ = static_cast<std::uint8_t>(unpack_trit(b.qs[m], k));
    for (int k = 0; k < 5; ++k)
        for (int m = 0; m < 16; ++m) *t++ = static_cast<std::uint8_t>(unpack_trit(b.qs[32 + m], k));
    for (int k = 0; k < 4; ++k)
        for (int m = 0; m < 4; ++m) *t++ = static_cast<std::uint8_t>(unpack_trit(b.qh[m], k));
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
template <class Tag = void>
void dequantize_row_unchecked(const block_tq1_0* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        std::uint8_t t[qk_k];
        detail::unpack_tq1_trits(x[b], t);
        for (int e = 0; e < qk_k; ++e) *y++ = static_cast<float>(t[e] - 1) * d;
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_tq1_0* x, const block_q8_K* y) noexcept {
    float sumf = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        // sum (t - 1) y as sum t y - sum y, t in {0, 1, 2}: the same integer, and the form
        // GCC 12 vectorizes correctly with -mavx512vnni (see docs/kernels.md, pitfalls)
        std::uint8_t t[qk_k];
        detail::unpack_tq1_trits(x[b], t);
        int sum = 0, sumy = 0;
        for (int e = 0; e < qk_k; ++e) sum += t[e] * y[b].qs[e];
        for (int j = 0; j < qk_k / 16; ++j) sumy += y[b].bsums[j];  // q8_K keeps the sums of 16
        sumf += static_cast<float>(sum - sumy) * (detail::widen<Tag>(x[b].d) * y[b].d);
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
template <class Tag = void>
void dequantize_row_unchecked(const block_tq2_0* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        // element 128 c + 32 l + m: bits 2 l of qs[32 c + m]
        for (int c = 0; c < 2; ++c)
            for (int l = 0; l < 4; ++l)
                for (int m = 0; m < 32; ++m) *y++ = static_cast<float>(((x[b].qs[32 * c + m] >> (2 * l)) & 3) - 1) * d;
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_tq2_0* x, const block_q8_K* y) noexcept {
    float sumf = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        int sum = 0, sumy = 0, e = 0;  // sum (q - 1) y as sum q y - sum y, as tq1_0
        for (int c = 0; c < 2; ++c)
            for (int l = 0; l < 4; ++l)
                for (int m = 0; m < 32; ++m, ++e) sum += ((x[b].qs[32 * c + m] >> (2 * l)) & 3) * y[b].qs[e];
        for (int j = 0; j < qk_k / 16; ++j) sumy += y[b].bsums[j];
        sumf += static_cast<float>(sum - sumy) * (y[b].d * detail::widen<Tag>(x[b].d));
    }
    return sumf;
}

}  // namespace quant
TESSERA_END_NAMESPACE
