// Reference quantize / dequantize / dot for ggml's K-quants: q2_K, q3_K, q4_K, q5_K,
// q6_K (256-element super-blocks of 16- or 32-element sub-blocks, each with a small
// integer scale, and an f16 super-block scale).
//
// quantize_row_ref(x, y, n) follows ggml's quantize_row_<type>_ref, which is also what
// ggml (and llama-quantize) use when no importance matrix is given.
// quantize_row_ref(x, y, n, imatrix) with imatrix non-null follows ggml's imatrix
// quantizers (quantize_<type>): per-element weights imatrix[j] * sqrt(sigma2 + x[j]^2)
// (sigma2 = the super-block's mean square, doubled for q3_K..q5_K), least squares
// fits for the sub-block scales and mins, and a weighted fit of those into 4/6 bits.
// n is one row: the imatrix holds n weights, one per column.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

namespace detail {

// 2-bit packing of q2_K/q3_K: in each 128-element half, byte l holds elements l,
// l+32, l+64, l+96 in bits 0-1, 2-3, 4-5, 6-7.
inline void pack_2bit_256(std::uint8_t* qs, const std::uint8_t* L) noexcept {
    for (int h = 0; h < qk_k; h += 128)
        for (int l = 0; l < 32; ++l)
            qs[h / 4 + l] = static_cast<std::uint8_t>(L[h + l] | (L[h + l + 32] << 2) | (L[h + l + 64] << 4) |
                                                      (L[h + l + 96] << 6));
}

// q4_K/q5_K nibble packing: in each 64-element chunk, byte l holds element l (low
// nibble) and l+32 (high nibble). q5_K's fifth bits go to qh[l], bit 2c / 2c+1 for
// the low / high half of chunk c.
inline void pack_4bit_256(std::uint8_t* qs, const std::uint8_t* L) noexcept {
    for (int c = 0; c < qk_k / 64; ++c)
        for (int l = 0; l < 32; ++l)
            qs[32 * c + l] = static_cast<std::uint8_t>((L[64 * c + l] & 0xF) | ((L[64 * c + l + 32] & 0xF) << 4));
}
inline void pack_5th_bits_256(std::uint8_t* qh, const std::uint8_t* L) noexcept {
    std::memset(qh, 0, qk_k / 8);
    for (int c = 0; c < qk_k / 64; ++c)
        for (int l = 0; l < 32; ++l) {
            if (L[64 * c + l] > 15) qh[l] = static_cast<std::uint8_t>(qh[l] | (1u << (2 * c)));
            if (L[64 * c + l + 32] > 15) qh[l] = static_cast<std::uint8_t>(qh[l] | (2u << (2 * c)));
        }
}

inline float sum_squares(const float* x, int n) noexcept {
    float s = 0;
    for (int i = 0; i < n; ++i) s += x[i] * x[i];
    return s;
}

// Final pass shared by q4_K and q5_K: with the stored (f16) scales, requantize every
// element to [0, nmax].
inline void requantize_k4(const float* x, const std::uint8_t* scales, float d, float dmin, int nmax,
                          std::uint8_t* L) noexcept {
    for (int j = 0; j < qk_k / 32; ++j) {
        std::uint8_t sc, m;
        get_scale_min_k4(j, scales, sc, m);
        const float dj = d * sc;
        if (dj == 0) continue;
        const float mj = dmin * m;
        for (int i = 0; i < 32; ++i) {
            const int l = nearest_int((x[32 * j + i] + mj) / dj);
            L[32 * j + i] = static_cast<std::uint8_t>(l < 0 ? 0 : (l > nmax ? nmax : l));
        }
    }
}

// q4_K / q5_K without weights (ggml's _ref): per sub-block a (scale, min) fit weighted
// by rms + |x|, then both quantized to 6 bits against their maxima.
inline void quantize_k4_block_ref(const float* x, std::uint8_t* scales_out, f16& d_out, f16& dmin_out, int nmax,
                                  float rmin, float rdelta, int nstep, std::uint8_t* L) noexcept {
    float scales[8], mins[8], weights[32];
    std::uint8_t Laux[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float av_x = std::sqrt(sum_squares(x + 32 * j, 32) / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] = make_qkx_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep,
                                    false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
        auto ls = static_cast<std::uint8_t>(nearest_int(inv_scale * scales[j]));
        auto lm = static_cast<std::uint8_t>(nearest_int(inv_min * mins[j]));
        set_scale_min_k4(j, scales_out, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
    }
    d_out = f16::from_float(max_scale / 63.f);
    dmin_out = f16::from_float(max_min / 63.f);
    requantize_k4(x, scales_out, d_out.to_float(), dmin_out.to_float(), nmax, L);
}

// q4_K / q5_K with importance weights (ggml's quantize_row_q4_K_impl).
inline void quantize_k4_block_w(const float* x, const float* qw, std::uint8_t* scales_out, f16& d_out,
                                f16& dmin_out, int nmax, std::uint8_t* L) noexcept {
    float scales[8], mins[8], sw[8], weights[32];
    std::uint8_t Laux[32], Ls[8], Lm[8];
    const float sigma2 = 2 * sum_squares(x, qk_k) / qk_k;
    for (int j = 0; j < 8; ++j) {
        float sumw = 0;
        for (int l = 0; l < 32; ++l) {
            weights[l] = qw[32 * j + l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
            sumw += weights[l];
        }
        sw[j] = sumw;
        scales[j] = make_qkx_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36,
                                    false);
    }
    const float d_block = make_qp_quants(8, 63, scales, Ls, sw);
    const float m_block = make_qp_quants(8, 63, mins, Lm, sw);
    for (int j = 0; j < 8; ++j)
        set_scale_min_k4(j, scales_out, Ls[j] < 63 ? Ls[j] : 63, Lm[j] < 63 ? Lm[j] : 63);
    d_out = f16::from_float(d_block);
    dmin_out = f16::from_float(m_block);
    requantize_k4(x, scales_out, d_out.to_float(), dmin_out.to_float(), nmax, L);
}

// The 2-bit/3-bit quants of a 256 block, unpacked to one value per element.
TESSERA_ALWAYS_INLINE void unpack_q3k_values(const block_q3_K& b, std::int8_t* a) noexcept {  // a[256] in [-4, 3]
    // element 128 h + 32 (shift / 2) + l: bits shift of qs[32 h + l], high bit e / 32 of hmask[l]
    std::uint8_t m = 1;
    for (int h = 0; h < 2; ++h)
        for (int shift = 0; shift < 8; shift += 2, m = static_cast<std::uint8_t>(m << 1))
            for (int l = 0; l < 32; ++l)
                *a++ = static_cast<std::int8_t>(((b.qs[32 * h + l] >> shift) & 3) - ((b.hmask[l] & m) ? 0 : 4));
}
TESSERA_ALWAYS_INLINE void unpack_q6k_values(const block_q6_K& b, std::int8_t* a) noexcept {  // a[256] in [-32, 31]
    for (int h = 0; h < 2; ++h) {
        const std::uint8_t* ql = b.ql + 64 * h;
        const std::uint8_t* qh = b.qh + 32 * h;
        std::int8_t* o = a + 128 * h;
        for (int l = 0; l < 32; ++l) {
            o[l] = static_cast<std::int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            o[l + 32] = static_cast<std::int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            o[l + 64] = static_cast<std::int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            o[l + 96] = static_cast<std::int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}
TESSERA_ALWAYS_INLINE void unpack_q4k_values(const block_q4_K& b, std::int8_t* a) noexcept {  // a[256] in [0, 15]
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            a[64 * c + l] = static_cast<std::int8_t>(b.qs[32 * c + l] & 0xF);
            a[64 * c + l + 32] = static_cast<std::int8_t>(b.qs[32 * c + l] >> 4);
        }
}
TESSERA_ALWAYS_INLINE void unpack_q5k_values(const block_q5_K& b, std::int8_t* a) noexcept {  // a[256] in [0, 31]
    for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
            a[64 * c + l] = static_cast<std::int8_t>((b.qs[32 * c + l] & 0xF) + ((b.qh[l] >> (2 * c)) & 1) * 16);
            a[64 * c + l + 32] =
                static_cast<std::int8_t>((b.qs[32 * c + l] >> 4) + ((b.qh[l] >> (2 * c + 1)) & 1) * 16);
        }
}

// ggml's generic K-quant dot: the integer products of each group of 8 are scaled by
// the sub-block scale and kept in 8 int32 lanes per super-block; the lanes are
// scaled by d and accumulated in 8 float lanes over the whole row, summed at the end.
struct lane_sums {
    float sums[8] = {};
    TESSERA_ALWAYS_INLINE void add_block(float d, const std::int32_t* aux32) noexcept {
        for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(aux32[l]);
    }
    TESSERA_ALWAYS_INLINE float total(float init) const noexcept {
        for (int l = 0; l < 8; ++l) init += sums[l];
        return init;
    }
};
// aux32[l] += scale * (q8[l] * a[l]) over n/8 groups of 8, scale per group of `group`.
TESSERA_ALWAYS_INLINE void accumulate_lanes(const std::int8_t* q8, const std::int8_t* a, const int* scale, int group,
                             std::int32_t* aux32) noexcept {
    for (int g = 0; g < qk_k / 8; ++g) {
        const int s = scale[(8 * g) / group];
        for (int l = 0; l < 8; ++l) {
            const auto p = static_cast<std::int16_t>(q8[8 * g + l] * a[8 * g + l]);
            aux32[l] += s * p;
        }
    }
}

}  // namespace detail

// ---- q2_K: x = d * sc * q - dmin * m, q in [0,3], 16 sub-blocks of 16 --------------
inline void quantize_row_ref(const float* x, block_q2_K* y, std::int64_t n) {
    detail::check_row<block_q2_K>(n, "quantize_row_ref(q2_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        std::uint8_t L[qk_k], Laux[16];
        float weights[16], mins[16], scales[16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
            scales[j] = detail::make_qkx_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f,
                                                15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<std::uint8_t>(detail::nearest_int(iscale * scales[j]));
            y[b].d = f16::from_float(max_scale / 15.f);
        } else {
            for (int j = 0; j < 16; ++j) y[b].scales[j] = 0;
            y[b].d = f16::from_float(0.f);
        }
        if (max_min > 0) {
            const float iscale = 15.f / max_min;
            for (int j = 0; j < 16; ++j)
                y[b].scales[j] = static_cast<std::uint8_t>(y[b].scales[j] | (detail::nearest_int(iscale * mins[j]) << 4));
            y[b].dmin = f16::from_float(max_min / 15.f);
        } else {
            y[b].dmin = f16::from_float(0.f);
        }
        const float dd = y[b].d.to_float(), dm = y[b].dmin.to_float();
        for (int j = 0; j < 16; ++j) {
            const float d = dd * static_cast<float>(y[b].scales[j] & 0xF);
            if (d == 0) continue;
            const float m = dm * static_cast<float>(y[b].scales[j] >> 4);
            for (int i = 0; i < 16; ++i) {
                const int l = detail::nearest_int((x[16 * j + i] + m) / d);
                L[16 * j + i] = static_cast<std::uint8_t>(l < 0 ? 0 : (l > 3 ? 3 : l));
            }
        }
        detail::pack_2bit_256(y[b].qs, L);
    }
}
inline void quantize_row_ref(const float* x, block_q2_K* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q2_K>(n, "quantize_row_ref(q2_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k, imatrix += qk_k) {
        std::uint8_t L[qk_k], Laux[16], Ls[16], Lm[16];
        float mins[16], scales[16], sw[16], weight[16];
        const float sigma2 = detail::sum_squares(x, qk_k) / qk_k;
        for (int j = 0; j < 16; ++j) {
            sw[j] = 0;
            for (int l = 0; l < 16; ++l) {
                weight[l] = imatrix[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
                sw[j] += weight[l];
            }
            scales[j] = detail::make_qkx_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f,
                                                36, false);
        }
        const float dm = detail::make_qp_quants(16, 15, scales, Ls, sw);
        const float mm = detail::make_qp_quants(16, 15, mins, Lm, sw);
        y[b].d = f16::from_float(dm);
        y[b].dmin = f16::from_float(mm);
        for (int j = 0; j < 16; ++j) y[b].scales[j] = static_cast<std::uint8_t>(Ls[j] | (Lm[j] << 4));
        const float dd = y[b].d.to_float(), dmn = y[b].dmin.to_float();
        for (int j = 0; j < 16; ++j) {
            const float d = dd * static_cast<float>(y[b].scales[j] & 0xF);
            if (d == 0) continue;
            const float m = dmn * static_cast<float>(y[b].scales[j] >> 4);
            for (int i = 0; i < 16; ++i) {
                const int l = detail::nearest_int((x[16 * j + i] + m) / d);
                L[16 * j + i] = static_cast<std::uint8_t>(l < 0 ? 0 : (l > 3 ? 3 : l));
            }
        }
        detail::pack_2bit_256(y[b].qs, L);
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q2_K* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d), dmin = detail::widen<Tag>(x[b].dmin);
        const std::uint8_t* qs = x[b].qs;
        int is = 0;
        for (int h = 0; h < 2; ++h, qs += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int part = 0; part < 2; ++part) {  // 16 elements per scale
                    const std::uint8_t sc = x[b].scales[is++];
                    const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        const float v = dl * static_cast<float>((qs[16 * part + l] >> shift) & 3);
                        *y++ = v - ml;
                    }
                }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q2_K* x, const block_q8_K* y) noexcept {
    float sumf = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        int summs = 0;
        for (int j = 0; j < 16; ++j) summs += y[b].bsums[j] * (x[b].scales[j] >> 4);
        const float dall = y[b].d * detail::widen<Tag>(x[b].d);
        const float dmin = y[b].d * detail::widen<Tag>(x[b].dmin);
        std::int8_t a[qk_k];  // the 2-bit values in element order
        int k = 0;
        for (int h = 0; h < 2; ++h)
            for (int shift = 0; shift < 8; shift += 2)
                for (int l = 0; l < 32; ++l) a[k++] = static_cast<std::int8_t>((x[b].qs[32 * h + l] >> shift) & 3);
        int isum = 0;
        for (int j = 0; j < 16; ++j) {  // sub-block of 16 elements
            int s16 = 0;
            for (int l = 0; l < 16; ++l) s16 += y[b].qs[16 * j + l] * a[16 * j + l];
            isum += (x[b].scales[j] & 0xF) * s16;
        }
        sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
    }
    return sumf;
}

// ---- q3_K: x = d * (sc - 32) * (q - 4 * !hbit), 16 sub-blocks of 16 ----------------
namespace detail {
inline void finish_q3k(const float* x, block_q3_K& y, std::int8_t* Ls) noexcept {
    // Ls: the 16 quants (already sub-block-quantized); requantize elements, pack.
    std::uint8_t L[qk_k];
    const float dd = y.d.to_float();
    for (int j = 0; j < 16; ++j) {
        const float d = dd * static_cast<float>(get_scale_q3k(j, y.scales) - 32);
        if (d == 0) {
            for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<std::uint8_t>(Ls[16 * j + i]);
            continue;
        }
        for (int i = 0; i < 16; ++i) {
            const int l = nearest_int(x[16 * j + i] / d);
            L[16 * j + i] = static_cast<std::uint8_t>((l < -4 ? -4 : (l > 3 ? 3 : l)) + 4);
        }
    }
    std::memset(y.hmask, 0, sizeof(y.hmask));
    for (int e = 0; e < qk_k; ++e) {
        if (L[e] > 3) {
            y.hmask[e % 32] = static_cast<std::uint8_t>(y.hmask[e % 32] | (1u << (e / 32)));
            L[e] = static_cast<std::uint8_t>(L[e] - 4);
        }
    }
    pack_2bit_256(y.qs, L);
}
}  // namespace detail

inline void quantize_row_ref(const float* x, block_q3_K* y, std::int64_t n) {
    detail::check_row<block_q3_K>(n, "quantize_row_ref(q3_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        std::int8_t L[qk_k];
        float scales[16];
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = detail::make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
            const float a = std::fabs(scales[j]);
            if (a > amax) {
                amax = a;
                max_scale = scales[j];
            }
        }
        std::memset(y[b].scales, 0, 12);
        if (max_scale != 0) {
            const float iscale = -32.f / max_scale;
            int ls[16];
            for (int j = 0; j < 16; ++j) {
                const int l = static_cast<std::int8_t>(detail::nearest_int(iscale * scales[j]));
                ls[j] = (l < -32 ? -32 : (l > 31 ? 31 : l)) + 32;
            }
            detail::pack_scales_q3k(ls, y[b].scales);
            y[b].d = f16::from_float(1 / iscale);
        } else {
            y[b].d = f16::from_float(0.f);
        }
        detail::finish_q3k(x, y[b], L);
    }
}
inline void quantize_row_ref(const float* x, block_q3_K* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q3_K>(n, "quantize_row_ref(q3_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k, imatrix += qk_k) {
        std::int8_t L[qk_k], Ls[16];
        float scales[16], weight[16], sw[16];
        const float sigma2 = 2 * detail::sum_squares(x, qk_k) / qk_k;
        for (int j = 0; j < 16; ++j) {
            float sumw = 0;
            for (int l = 0; l < 16; ++l) {
                weight[l] = imatrix[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
                sumw += weight[l];
            }
            sw[j] = sumw;
            scales[j] = detail::make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
        }
        const float d_block = detail::make_qx_quants(16, 32, scales, Ls, 1, sw);
        int ls[16];
        for (int j = 0; j < 16; ++j) ls[j] = Ls[j];
        detail::pack_scales_q3k(ls, y[b].scales);
        y[b].d = f16::from_float(d_block);
        detail::finish_q3k(x, y[b], L);
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q3_K* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        std::int8_t a[qk_k];
        detail::unpack_q3k_values(x[b], a);
        for (int j = 0; j < 16; ++j) {
            const float dl = d * static_cast<float>(detail::get_scale_q3k(j, x[b].scales) - 32);
            for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>(a[16 * j + l]);
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q3_K* x, const block_q8_K* y) noexcept {
    detail::lane_sums acc;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        std::int8_t a[qk_k];
        detail::unpack_q3k_values(x[b], a);
        int sc[16];
        for (int j = 0; j < 16; ++j) sc[j] = detail::get_scale_q3k(j, x[b].scales) - 32;
        std::int32_t aux32[8] = {};
        detail::accumulate_lanes(y[b].qs, a, sc, 16, aux32);
        acc.add_block(detail::widen<Tag>(x[b].d) * y[b].d, aux32);
    }
    return acc.total(0.0f);
}

// ---- q4_K: x = d * sc * q - dmin * m, q in [0,15], 8 sub-blocks of 32 --------------
inline void quantize_row_ref(const float* x, block_q4_K* y, std::int64_t n) {
    detail::check_row<block_q4_K>(n, "quantize_row_ref(q4_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        std::uint8_t L[qk_k];
        detail::quantize_k4_block_ref(x, y[b].scales, y[b].d, y[b].dmin, 15, -1.f, 0.1f, 20, L);
        detail::pack_4bit_256(y[b].qs, L);
    }
}
inline void quantize_row_ref(const float* x, block_q4_K* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q4_K>(n, "quantize_row_ref(q4_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k, imatrix += qk_k) {
        std::uint8_t L[qk_k];
        detail::quantize_k4_block_w(x, imatrix, y[b].scales, y[b].d, y[b].dmin, 15, L);
        detail::pack_4bit_256(y[b].qs, L);
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q4_K* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d), dmin = detail::widen<Tag>(x[b].dmin);
        std::int8_t a[qk_k];
        detail::unpack_q4k_values(x[b], a);
        for (int j = 0; j < 8; ++j) {
            std::uint8_t sc, m;
            detail::get_scale_min_k4(j, x[b].scales, sc, m);
            const float dj = d * sc, mj = dmin * m;
            // the product rounded before the subtraction, as ggml's x86 build (never fused)
            for (int l = 0; l < 32; ++l) *y++ = detail::rounded(dj * static_cast<float>(a[32 * j + l])) - mj;
        }
    }
}

namespace detail {
template <class Tag, class BK>
TESSERA_ALWAYS_INLINE float vec_dot_k4_ref(std::int64_t n, const BK* x, const block_q8_K* y) {
    lane_sums acc;
    float sumf = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        std::int8_t a[qk_k];
        if constexpr (std::is_same_v<BK, block_q4_K>) unpack_q4k_values(x[b], a);
        else unpack_q5k_values(x[b], a);
        int sc[8], mn[8];
        for (int j = 0; j < 8; ++j) {
            std::uint8_t s, m;
            get_scale_min_k4(j, x[b].scales, s, m);
            sc[j] = s;
            mn[j] = m;
        }
        int sumi = 0;
        for (int j = 0; j < 16; ++j) sumi += y[b].bsums[j] * mn[j / 2];
        std::int32_t aux32[8] = {};
        accumulate_lanes(y[b].qs, a, sc, 32, aux32);
        acc.add_block(widen<Tag>(x[b].d) * y[b].d, aux32);
        sumf -= widen<Tag>(x[b].dmin) * y[b].d * static_cast<float>(sumi);
    }
    return acc.total(sumf);
}
}  // namespace detail

template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q4_K* x, const block_q8_K* y) noexcept {
    return detail::vec_dot_k4_ref<Tag>(n, x, y);
}

// ---- q5_K: as q4_K with a fifth bit, q in [0,31] -----------------------------------
inline void quantize_row_ref(const float* x, block_q5_K* y, std::int64_t n) {
    detail::check_row<block_q5_K>(n, "quantize_row_ref(q5_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        std::uint8_t L[qk_k];
        detail::quantize_k4_block_ref(x, y[b].scales, y[b].d, y[b].dmin, 31, -0.5f, 0.1f, 15, L);
        detail::pack_5th_bits_256(y[b].qh, L);
        detail::pack_4bit_256(y[b].qs, L);
    }
}
inline void quantize_row_ref(const float* x, block_q5_K* y, std::int64_t n, const float* imatrix) {
    if (!imatrix) return quantize_row_ref(x, y, n);
    detail::check_row<block_q5_K>(n, "quantize_row_ref(q5_K)");
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k, imatrix += qk_k) {
        std::uint8_t L[qk_k];
        detail::quantize_k4_block_w(x, imatrix, y[b].scales, y[b].d, y[b].dmin, 31, L);
        detail::pack_5th_bits_256(y[b].qh, L);
        detail::pack_4bit_256(y[b].qs, L);
    }
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q5_K* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d), dmin = detail::widen<Tag>(x[b].dmin);
        std::int8_t a[qk_k];
        detail::unpack_q5k_values(x[b], a);
        for (int j = 0; j < 8; ++j) {
            std::uint8_t sc, m;
            detail::get_scale_min_k4(j, x[b].scales, sc, m);
            const float dj = d * sc, mj = dmin * m;
            for (int l = 0; l < 32; ++l) *y++ = dj * static_cast<float>(a[32 * j + l]) - mj;
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q5_K* x, const block_q8_K* y) noexcept {
    return detail::vec_dot_k4_ref<Tag>(n, x, y);
}

// ---- q6_K: x = d * sc * (q - 32), q in [0,63], 16 sub-blocks of 16, int8 scales ----
namespace detail {
// L: the sub-block fits (biased by 32), kept where a sub-block's scale rounds to 0.
inline void finish_q6k(const float* x, block_q6_K& y, const float* scales, float max_scale,
                       const std::int8_t* Lfit) noexcept {
    const float iscale = -128.f / max_scale;
    y.d = f16::from_float(1 / iscale);
    for (int j = 0; j < 16; ++j) {
        const int s = nearest_int(iscale * scales[j]);
        y.scales[j] = static_cast<std::int8_t>(s < 127 ? s : 127);
    }
    std::uint8_t L[qk_k];
    const float dd = y.d.to_float();
    for (int j = 0; j < 16; ++j) {
        const float d = dd * static_cast<float>(y.scales[j]);
        if (d == 0) {
            for (int i = 0; i < 16; ++i) L[16 * j + i] = static_cast<std::uint8_t>(Lfit[16 * j + i]);
            continue;
        }
        for (int i = 0; i < 16; ++i) {
            const int l = nearest_int(x[16 * j + i] / d);
            L[16 * j + i] = static_cast<std::uint8_t>((l < -32 ? -32 : (l > 31 ? 31 : l)) + 32);
        }
    }
    for (int h = 0; h < 2; ++h) {
        const std::uint8_t* Lh = L + 128 * h;
        std::uint8_t* ql = y.ql + 64 * h;
        std::uint8_t* qh = y.qh + 32 * h;
        for (int l = 0; l < 32; ++l) {
            ql[l] = static_cast<std::uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
            ql[l + 32] = static_cast<std::uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
            qh[l] = static_cast<std::uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                              ((Lh[l + 96] >> 4) << 6));
        }
    }
}
inline void quantize_q6k_row(const float* x, block_q6_K* y, std::int64_t n, const float* imatrix) {
    for (std::int64_t b = 0; b < n / qk_k; ++b, x += qk_k) {
        std::int8_t L[qk_k];
        float scales[16];
        float max_scale = 0, max_abs_scale = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = make_qx_quants(16, 32, x + 16 * j, L + 16 * j, 1, imatrix ? imatrix + qk_k * b + 16 * j : nullptr);
            const float a = std::fabs(scales[j]);
            if (a > max_abs_scale) {
                max_abs_scale = a;
                max_scale = scales[j];
            }
        }
        if (max_abs_scale < group_max_eps) {
            std::memset(&y[b], 0, sizeof(block_q6_K));
            continue;
        }
        finish_q6k(x, y[b], scales, max_scale, L);
    }
}
}  // namespace detail

inline void quantize_row_ref(const float* x, block_q6_K* y, std::int64_t n) {
    detail::check_row<block_q6_K>(n, "quantize_row_ref(q6_K)");
    detail::quantize_q6k_row(x, y, n, nullptr);
}
// q6_K's imatrix variant uses the importance weights directly as the fit weights.
inline void quantize_row_ref(const float* x, block_q6_K* y, std::int64_t n, const float* imatrix) {
    detail::check_row<block_q6_K>(n, "quantize_row_ref(q6_K)");
    detail::quantize_q6k_row(x, y, n, imatrix);
}
template <class Tag = void>
void dequantize_row_unchecked(const block_q6_K* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        std::int8_t a[qk_k];
        detail::unpack_q6k_values(x[b], a);
        for (int e = 0; e < qk_k; ++e)
            *y++ = d * static_cast<float>(x[b].scales[e / 16]) * static_cast<float>(a[e]);
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_q6_K* x, const block_q8_K* y) noexcept {
    detail::lane_sums acc;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        std::int8_t a[qk_k];
        detail::unpack_q6k_values(x[b], a);
        int sc[16];
        for (int j = 0; j < 16; ++j) sc[j] = x[b].scales[j];
        std::int32_t aux32[8] = {};
        detail::accumulate_lanes(y[b].qs, a, sc, 16, aux32);
        acc.add_block(detail::widen<Tag>(x[b].d) * y[b].d, aux32);
    }
    return acc.total(0.0f);
}

}  // namespace quant
TESSERA_END_NAMESPACE
