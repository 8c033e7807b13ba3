// Reference quantize / dequantize / dot for the non-linear 4-bit formats iq4_nl (32 per
// block, f16 scale) and iq4_xs (256 per block: f16 scale and a 6-bit scale per 32).
// Each nibble selects one of the 16 levels kvalues_iq4nl; q4_0 nibble order per 32.
//
// The quantizer follows ggml's quantize_row_iq4_nl_impl: per 32 values, start from the
// scale that maps the signed max onto the first level, refit the scale by weighted
// least squares, and (unless the reference mode for iq4_nl) try 15 further scales
// (itry - 127) / max, itry = -7..7, keeping the best weighted fit. Weights are x^2, or
// imatrix[j] * sqrt(sigma2 + x^2) (sigma2 = twice the block's mean square) with an
// importance matrix.
//   iq4_nl: quantize_row_ref(x, y, n) is ggml's quantize_row_iq4_nl_ref (no extra
//           scales tried); quantize_row_ref(x, y, n, imatrix) is ggml's quantize_iq4_nl
//           (15 scales tried; imatrix may be null).
//   iq4_xs: both overloads are ggml's quantize_iq4_xs (the reference is the same).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"
#include "tessera/quant/tables.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

namespace detail {

// One super-block of `nsub` sub-blocks of 32. Writes the f16 scale, the nibbles, and
// for nsub > 1 the 6-bit sub-block scales. ntry < 0: single fit, no search.
inline void quantize_iq4_superblock(const float* x, int nsub, f16& dh, std::uint8_t* q4, std::uint16_t* scales_h,
                                    std::uint8_t* scales_l, const float* qw, int ntry) noexcept {
    const std::int8_t* values = kvalues_iq4nl;
    const int n = 32 * nsub;
    float sigma2 = 0;
    for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
    sigma2 *= 2.f / static_cast<float>(n);

    std::uint8_t L[qk_k];
    std::memset(L, 8, sizeof(L));  // level 8 (= +1) is the one nearest 0
    float scales[qk_k / 32];
    float weight[32];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < nsub; ++ib) {
        const float* xb = x + 32 * ib;
        std::uint8_t* Lb = L + 32 * ib;
        for (int j = 0; j < 32; ++j)
            weight[j] = qw ? qw[32 * ib + j] * std::sqrt(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
        const signed_max sm = find_signed_max(xb, 32);
        if (sm.magnitude < group_max_eps) {
            scales[ib] = 0;
            continue;
        }
        const float max = sm.value;
        float d = ntry > 0 ? -max / values[0] : max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const int l = nearest_level(16, values, id * xb[j]);
            Lb[j] = static_cast<std::uint8_t>(l);
            const float q = values[l];
            sumqx += weight[j] * q * xb[j];
            sumq2 += weight[j] * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; ++itry) {
            id = (static_cast<float>(itry) + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < 32; ++j) {
                const float q = values[nearest_level(16, values, id * xb[j])];
                sumqx += weight[j] * q * xb[j];
                sumq2 += weight[j] * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if (std::fabs(d) > amax_scale) {
            amax_scale = std::fabs(d);
            max_scale = d;
        }
    }

    if (nsub > 1) {
        *scales_h = 0;
        std::memset(scales_l, 0, static_cast<std::size_t>(nsub / 2));
        const float d = -max_scale / 32;
        dh = f16::from_float(d);
        const float id = d != 0 ? 1 / d : 0.f;
        for (int ib = 0; ib < nsub; ++ib) {
            int l = nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * static_cast<float>(l);
            const float idl = dl != 0 ? 1 / dl : 0.f;
            for (int j = 0; j < 32; ++j)
                L[32 * ib + j] = static_cast<std::uint8_t>(nearest_level(16, values, idl * x[32 * ib + j]));
            l += 32;
            scales_l[ib / 2] = static_cast<std::uint8_t>(scales_l[ib / 2] | ((l & 0xF) << (4 * (ib % 2))));
            *scales_h = static_cast<std::uint16_t>(*scales_h | ((l >> 4) << (2 * ib)));
        }
    } else {
        dh = f16::from_float(scales[0]);
        if (ntry > 0) {
            const float id = scales[0] != 0 ? 1 / scales[0] : 0.f;
            for (int j = 0; j < 32; ++j) L[j] = static_cast<std::uint8_t>(nearest_level(16, values, id * x[j]));
        }
    }
    for (int i = 0; i < nsub; ++i)
        for (int j = 0; j < 16; ++j)
            q4[16 * i + j] = static_cast<std::uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

TESSERA_ALWAYS_INLINE int iq4_xs_scale(const block_iq4_xs& b, int ib) noexcept {
    return ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b.scales_h >> (2 * ib)) & 3) << 4);
}

}  // namespace detail

// ---- iq4_nl ----------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_iq4_nl* y, std::int64_t n) {
    detail::check_row<block_iq4_nl>(n, "quantize_row_ref(iq4_nl)");
    for (std::int64_t b = 0; b < n / 32; ++b)
        detail::quantize_iq4_superblock(x + 32 * b, 1, y[b].d, y[b].qs, nullptr, nullptr, nullptr, -1);
}
inline void quantize_row_ref(const float* x, block_iq4_nl* y, std::int64_t n, const float* imatrix) {
    detail::check_row<block_iq4_nl>(n, "quantize_row_ref(iq4_nl)");
    for (std::int64_t b = 0; b < n / 32; ++b)
        detail::quantize_iq4_superblock(x + 32 * b, 1, y[b].d, y[b].qs, nullptr, nullptr,
                                        imatrix ? imatrix + 32 * b : nullptr, 7);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_iq4_nl* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / 32; ++b, y += 32) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * static_cast<float>(kvalues_iq4nl[x[b].qs[j] & 0xF]);
            y[j + 16] = d * static_cast<float>(kvalues_iq4nl[x[b].qs[j] >> 4]);
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq4_nl* x, const block_q8_0* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / 32; ++b) {
        const float d = detail::widen<Tag>(y[b].d) * detail::widen<Tag>(x[b].d);
        int s1 = 0, s2 = 0;
        for (int j = 0; j < 16; ++j) {
            s1 += y[b].qs[j] * kvalues_iq4nl[x[b].qs[j] & 0xF];
            s2 += y[b].qs[j + 16] * kvalues_iq4nl[x[b].qs[j] >> 4];
        }
        sum += d * static_cast<float>(s1 + s2);
    }
    return sum;
}

// ---- iq4_xs ----------------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_iq4_xs* y, std::int64_t n, const float* imatrix) {
    detail::check_row<block_iq4_xs>(n, "quantize_row_ref(iq4_xs)");
    for (std::int64_t b = 0; b < n / qk_k; ++b)
        detail::quantize_iq4_superblock(x + qk_k * b, qk_k / 32, y[b].d, y[b].qs, &y[b].scales_h, y[b].scales_l,
                                        imatrix ? imatrix + qk_k * b : nullptr, 7);
}
inline void quantize_row_ref(const float* x, block_iq4_xs* y, std::int64_t n) {
    quantize_row_ref(x, y, n, nullptr);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_iq4_xs* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int ib = 0; ib < qk_k / 32; ++ib, y += 32) {
            const float dl = d * static_cast<float>(detail::iq4_xs_scale(x[b], ib) - 32);
            const std::uint8_t* qs = x[b].qs + 16 * ib;
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kvalues_iq4nl[qs[j] & 0xF]);
                y[j + 16] = dl * static_cast<float>(kvalues_iq4nl[qs[j] >> 4]);
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq4_xs* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d4d8 = detail::widen<Tag>(x[b].d) * y[b].d;
        for (int ib = 0; ib < qk_k / 32; ++ib) {
            const float dl = d4d8 * static_cast<float>(detail::iq4_xs_scale(x[b], ib) - 32);
            const std::uint8_t* qs = x[b].qs + 16 * ib;
            const std::int8_t* q8 = y[b].qs + 32 * ib;
            int s1 = 0, s2 = 0;
            for (int j = 0; j < 16; ++j) {
                s1 += q8[j] * kvalues_iq4nl[qs[j] & 0xF];
                s2 += q8[j + 16] * kvalues_iq4nl[qs[j] >> 4];
            }
            sum += dl * static_cast<float>(s1 + s2);
        }
    }
    return sum;
}

}  // namespace quant
TESSERA_END_NAMESPACE
