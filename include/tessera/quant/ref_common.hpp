// Shared pieces of the reference (scalar) quantizers: argument checks, the exact
// float->int conversions ggml's reference code relies on, and the scale searches the
// K-quants and i-quants use (least squares fits over a few candidate scales).
//
// Everything here is plain scalar C++ meant for the reference paths and tests; SIMD
// kernels must not call it from wide-arch bodies.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/quant/blocks.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {
namespace detail {
// f16 -> f32 in the unchecked reference bodies. Tag is the arch a body is instantiated
// for (void outside the kernels); the kernels specialize this for their arch tags with
// the arch's conversion instruction (the same value: the conversion is exact).
template <class Tag>
struct f16_widen {
    TESSERA_ALWAYS_INLINE static float apply(f16 h) noexcept { return h.to_float(); }
};
template <class Tag>
TESSERA_ALWAYS_INLINE float widen(f16 h) noexcept {
    return f16_widen<Tag>::apply(h);
}

// Throws shape_mismatch unless n is a non-negative whole number of B blocks.
template <class B>
void check_row(std::int64_t n, const char* what) {
    constexpr std::int64_t bs = block_traits<B>::block_size;
    if (n < 0 || n % bs != 0) [[unlikely]]
        fail(errc::shape_mismatch, std::string(what) + ": row of " + std::to_string(n) +
                                       " elements is not a multiple of the " +
                                       std::string(type_name(block_traits<B>::id)) + " block size " +
                                       std::to_string(bs));
}

// v as a rounded float. The rounding helpers below take the product the caller computed
// (x * iscale) and add to it or subtract from it; where the target has FMA (the base ISA
// on AArch64; x86 from x86-64-v3), GCC's default -ffp-contract=fast would fuse that
// multiply into the add, which sees the unrounded product and rounds ties differently
// from the baseline x86 build and from ggml's outputs. The empty asm makes the rounded
// value the only input; without fast FMA (baseline x86-64) there is nothing to fuse and
// the code is as before. The quantizers' x * id + 8.5 / 16.5 / 0.5 (q4_0, q5_0, q4_1,
// q5_1) and q4_K's dequantizer (d * q - m) use it directly for the same reason. The
// other dequantizers (q4_1, q5_1, q2_K, q5_K) do not: the empty asm stops the loop from
// vectorizing (1.3x to 2.9x the instructions in an AVX2 unit), and a fused d * q + m is
// the more exact value, not a different integer.
TESSERA_ALWAYS_INLINE float rounded(float v) noexcept {
#if defined(__GNUC__) && defined(__FP_FAST_FMAF) && defined(__aarch64__)
    __asm__("" : "+w"(v));
#elif defined(__GNUC__) && defined(__FP_FAST_FMAF) && defined(__x86_64__)
    __asm__("" : "+x"(v));
#endif
    return v;
}

// Round to nearest, ties to even, for |v| < 2^22 (what every caller passes): adding
// 1.5 * 2^23 puts the integer into the low mantissa bits. Defined for any input
// (NaN or huge values give some int, never undefined behaviour).
TESSERA_ALWAYS_INLINE int nearest_int(float v) noexcept {
    const float shifted = rounded(v) + 12582912.0f;
    const auto bits = std::bit_cast<std::int32_t>(shifted);
    return (bits & 0x007fffff) - 0x00400000;
}

// float -> int32 by truncation, as a C cast does for in-range values; NaN and values
// outside int32 give INT32_MIN, which is what x86's cvttss2si returns. ggml's
// reference quantizers cast floats straight to int8/uint8, which compilers lower to
// that instruction plus taking the low byte; low_byte() below reproduces it.
TESSERA_ALWAYS_INLINE std::int32_t trunc_i32(float v) noexcept {
    if (!(v >= -2147483648.0f && v < 2147483648.0f)) return INT32_MIN;
    return static_cast<std::int32_t>(v);
}
TESSERA_ALWAYS_INLINE std::int8_t trunc_i8(float v) noexcept {
    return static_cast<std::int8_t>(static_cast<std::uint8_t>(static_cast<std::uint32_t>(trunc_i32(v)) & 0xffu));
}
inline std::uint8_t trunc_u8(float v) noexcept {
    return static_cast<std::uint8_t>(static_cast<std::uint32_t>(trunc_i32(v)) & 0xffu);
}

// a > b ? a : b, as ggml's MAX macro: a NaN in b propagates.
TESSERA_ALWAYS_INLINE float max_keep_nan(float a, float b) noexcept { return a > b ? a : b; }

// roundf (halves away from zero) to int8 as ggml's (int8_t)roundf(v): for |v| < 2^23
// the fraction v - trunc(v) is exact, so comparing it with 0.5 is roundf exactly,
// without a libm call; NaN and huge values take the general path.
TESSERA_ALWAYS_INLINE std::int8_t round_away_i8(float v) noexcept {
    v = rounded(v);
    if (!(std::fabs(v) < 8388608.0f)) return trunc_i8(std::round(v));
    const auto t = static_cast<std::int32_t>(v);
    const float frac = v - static_cast<float>(t);
    const std::int32_t i = t + static_cast<std::int32_t>(frac >= 0.5f) - static_cast<std::int32_t>(frac <= -0.5f);
    return static_cast<std::int8_t>(static_cast<std::uint8_t>(static_cast<std::uint32_t>(i) & 0xffu));
}

inline float f16_round(float v) noexcept { return f16::from_float(v).to_float(); }

// The signed value of largest magnitude (first one on ties) and its magnitude.
struct signed_max {
    float value = 0.0f;
    float magnitude = 0.0f;
};
TESSERA_ALWAYS_INLINE signed_max find_signed_max(const float* x, int n) noexcept {
    signed_max m;
    for (int i = 0; i < n; ++i) {
        const float a = std::fabs(x[i]);
        if (a > m.magnitude) {
            m.magnitude = a;
            m.value = x[i];
        }
    }
    return m;
}

inline constexpr float group_max_eps = 1e-15f;  // below this a group counts as all zero

// ---- symmetric scale search (ggml make_qx_quants) ---------------------------------
// Quantizes n values to integers in [-nmax, nmax-1] stored biased (+nmax) in L and
// returns the scale. weight_mode picks the weights of the least squares fit when qw is
// null: 0 = no fit (plain rounding at -nmax/max), 1 = x^2, 2 = 1, 3 = |x|, 4 = sqrt|x|;
// a negative mode fits once and returns the mean of the fitted and the plain scale.
// With a fit, 18 more candidate scales -(nmax + 0.1 k)/max, k = -9..9, are tried and
// the one with the best weighted error kept.
inline float make_qx_quants(int n, int nmax, const float* x, std::int8_t* L, int weight_mode,
                            const float* qw) noexcept {
    const signed_max sm = find_signed_max(x, n);
    if (sm.magnitude < group_max_eps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    const float max = sm.value;
    float iscale = -static_cast<float>(nmax) / max;
    const auto clamp_l = [nmax](int l) { return l < -nmax ? -nmax : (l > nmax - 1 ? nmax - 1 : l); };
    if (weight_mode == 0) {
        for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(nmax + clamp_l(nearest_int(iscale * x[i])));
        return 1 / iscale;
    }
    bool average_only = false;
    if (weight_mode < 0) {
        weight_mode = -weight_mode;
        average_only = true;
    }
    const auto weight = [&](int i) -> float {
        if (qw) return qw[i];
        switch (weight_mode) {
            case 1: return x[i] * x[i];
            case 2: return 1.0f;
            case 3: return std::fabs(x[i]);
            default: return std::sqrt(std::fabs(x[i]));
        }
    };
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_l(nearest_int(iscale * x[i]));
        L[i] = static_cast<std::int8_t>(l + nmax);
        const float w = weight(i);
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    if (average_only) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; ++k) {
        if (k == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_l(nearest_int(iscale * x[i]));
            const float w = weight(i);
            sumlx += w * x[i] * static_cast<float>(l);
            suml2 += w * static_cast<float>(l) * static_cast<float>(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(nmax + clamp_l(nearest_int(iscale * x[i])));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// ---- symmetric 3-bit search with coordinate descent (ggml make_q3_quants) ---------
// L gets values in [0, 2 nmax) (biased by nmax). With do_rmse, each quant is moved in
// turn to the value that improves the x^2-weighted fit, up to 5 sweeps.
inline float make_q3_quants(int n, int nmax, const float* x, std::int8_t* L, bool do_rmse) noexcept {
    const signed_max sm = find_signed_max(x, n);
    if (sm.magnitude < group_max_eps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    const float iscale = -static_cast<float>(nmax) / sm.value;
    const auto clamp_l = [nmax](int l) { return l < -nmax ? -nmax : (l > nmax - 1 ? nmax - 1 : l); };
    if (!do_rmse) {
        for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(clamp_l(nearest_int(iscale * x[i])) + nmax);
        return 1 / iscale;
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_l(nearest_int(iscale * x[i]));
        L[i] = static_cast<std::int8_t>(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int sweep = 0; sweep < 5; ++sweep) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            const float li = static_cast<float>(L[i]);
            float slx = sumlx - w * x[i] * li;
            if (slx > 0) {
                float sl2 = suml2 - w * li * li;
                const int nl = clamp_l(nearest_int(x[i] * sl2 / slx));
                if (nl != L[i]) {
                    slx += w * x[i] * static_cast<float>(nl);
                    sl2 += w * static_cast<float>(nl) * static_cast<float>(nl);
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<std::int8_t>(nl);
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<std::int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// ---- asymmetric (scale + min) search (ggml make_qkx2_quants / make_qkx3_quants) ----
// Fits x ~ scale * L - the_min with L in [0, nmax] and the_min >= 0, minimising the
// weighted squared (or, with use_mad, absolute) error over nstep+1 candidate scales
// (rmin + rdelta k + nmax) / (max - min). weights null means x^2 (the qkx3 variant).
template <bool HasWeights, bool UseMad>
float make_qkx_quants_impl(int n, int nmax, const float* x, const float* weights, std::uint8_t* L, float* the_min,
                           std::uint8_t* Laux, float rmin, float rdelta, int nstep) noexcept {
    constexpr bool use_mad = UseMad;
    const auto weight = [&](int i) {
        if constexpr (HasWeights) return weights[i];
        else return x[i] * x[i];
    };
    float min = x[0], max = x[0];
    float sum_w = weight(0);
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weight(i);
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (!(max > min)) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.0f;
    }
    const auto clamp_l = [nmax](int l) { return l < 0 ? 0 : (l > nmax ? nmax : l); };
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<std::uint8_t>(clamp_l(nearest_int(iscale * (x[i] - min))));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weight(i) * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int k = 0; k <= nstep; ++k) {
        iscale = (rmin + rdelta * static_cast<float>(k) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_l(nearest_int(iscale * (x[i] - min)));
            Laux[i] = static_cast<std::uint8_t>(l);
            const float w = weight(i);
            const float fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                err += weight(i) * diff;
            }
            if (err < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

inline float make_qkx_quants(int n, int nmax, const float* x, const float* weights, std::uint8_t* L,
                             float* the_min, std::uint8_t* Laux, float rmin, float rdelta, int nstep,
                             bool use_mad) noexcept {
    if (weights) {
        return use_mad ? make_qkx_quants_impl<true, true>(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep)
                       : make_qkx_quants_impl<true, false>(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep);
    }
    return use_mad ? make_qkx_quants_impl<false, true>(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep)
                   : make_qkx_quants_impl<false, false>(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep);
}

// ---- positive scale search for the sub-block scales (ggml make_qp_quants) ---------
// Quantizes n non-negative values to [0, nmax] with weights, trying 8 scales around
// nmax/max and then refining each quant by coordinate descent (5 sweeps).
inline float make_qp_quants(int n, int nmax, const float* x, std::uint8_t* L, const float* w) noexcept {
    float max = 0;
    for (int i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
    if (max < group_max_eps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.0f;
    }
    const auto cap = [nmax](int l) { return l > nmax ? nmax : l; };
    float iscale = static_cast<float>(nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = static_cast<std::uint8_t>(nearest_int(iscale * x[i]));
    const float scale0 = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale0 * static_cast<float>(L[i]);
        best_mse += w[i] * diff * diff;
    }
    for (int k = -4; k <= 4; ++k) {
        if (k == 0) continue;
        const float is = (0.1f * static_cast<float>(k) + static_cast<float>(nmax)) / max;
        const float s = 1 / is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = cap(nearest_int(is * x[i]));
            const float diff = x[i] - s * static_cast<float>(l);
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = cap(nearest_int(iscale * x[i]));
        L[i] = static_cast<std::uint8_t>(l);
        sumlx += w[i] * x[i] * static_cast<float>(l);
        suml2 += w[i] * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int sweep = 0; sweep < 5; ++sweep) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float li = static_cast<float>(L[i]);
            float slx = sumlx - w[i] * x[i] * li;
            float sl2 = suml2 - w[i] * li * li;
            if (slx > 0 && sl2 > 0) {
                const int nl = cap(nearest_int(x[i] * sl2 / slx));
                if (nl != L[i]) {
                    slx += w[i] * x[i] * static_cast<float>(nl);
                    sl2 += w[i] * static_cast<float>(nl) * static_cast<float>(nl);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<std::uint8_t>(nl);
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Index of the level in the sorted table val[0..n) nearest to v (ties to the lower).
inline int nearest_level(int n, const std::int8_t* val, float v) noexcept {
    if (!(v > val[0])) return 0;  // also NaN
    if (v >= val[n - 1]) return n - 1;
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < val[mid]) hi = mid;
        else lo = mid;
    }
    return v - val[hi - 1] < val[hi] - v ? hi - 1 : hi;
}

// ---- the 12-byte packing of eight 6-bit scales and mins (q4_K, q5_K) --------------
TESSERA_ALWAYS_INLINE void get_scale_min_k4(int j, const std::uint8_t* q, std::uint8_t& d, std::uint8_t& m) noexcept {
    if (j < 4) {
        d = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        d = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}
// Packs ls/lm (6 bits each) of sub-block j; call for j = 0..7 in order.
inline void set_scale_min_k4(int j, std::uint8_t* q, std::uint8_t ls, std::uint8_t lm) noexcept {
    if (j < 4) {
        q[j] = ls;
        q[j + 4] = lm;
    } else {
        q[j + 4] = static_cast<std::uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        q[j - 4] = static_cast<std::uint8_t>(q[j - 4] | ((ls >> 4) << 6));
        q[j] = static_cast<std::uint8_t>(q[j] | ((lm >> 4) << 6));
    }
}

// ---- q3_K's twelve bytes of sixteen 6-bit scales (biased by 32) -------------------
TESSERA_ALWAYS_INLINE int get_scale_q3k(int j, const std::uint8_t* s) noexcept {
    const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return low | (high << 4);
}
inline void pack_scales_q3k(const int* l, std::uint8_t* s) noexcept {  // l[16] in [0, 63]
    std::memset(s, 0, 12);
    for (int j = 0; j < 16; ++j) {
        if (j < 8) s[j] = static_cast<std::uint8_t>(l[j] & 0xF);
        else s[j - 8] = static_cast<std::uint8_t>(s[j - 8] | ((l[j] & 0xF) << 4));
        s[8 + j % 4] = static_cast<std::uint8_t>(s[8 + j % 4] | ((l[j] >> 4) << (2 * (j / 4))));
    }
}

}  // namespace detail

// The dot of two f16 or bf16 rows: products in f32, accumulated in double (ggml's generic
// f16 / bf16 dot). The float-row vec_dot_ref and the kernels' scalar vec_dot_f16 /
// vec_dot_bf16 are this body; Tag as for the block types' unchecked bodies.
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const f16* x, const f16* y) noexcept {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(detail::widen<Tag>(x[i]) * detail::widen<Tag>(y[i]));
    return static_cast<float>(s);
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const bf16* x, const bf16* y) noexcept {
    const auto bf = [](bf16 v) { return std::bit_cast<float>(static_cast<std::uint32_t>(v.bits) << 16); };
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(bf(x[i]) * bf(y[i]));
    return static_cast<float>(s);
}

// dequantize_row_ref and vec_dot_ref of every block type: the check of n, then the type's
// unchecked body (dequantize_row_unchecked / vec_dot_unchecked in the type's header, found
// by argument-dependent lookup). The message names the function and the type, e.g.
// "dequantize_row_ref(q4_0): row of 31 elements is not a multiple of the q4_0 block size 32".
template <quant_block B>
    requires requires(const B* x, float* y, std::int64_t n) { dequantize_row_unchecked(x, y, n); }
void dequantize_row_ref(const B* x, float* y, std::int64_t n) {
    constexpr std::string_view name = type_name(block_traits<B>::id);
    if (n < 0 || n % block_traits<B>::block_size != 0) [[unlikely]]
        fail_cat(errc::shape_mismatch, "dequantize_row_ref(", name, "): row of ", n,
                 " elements is not a multiple of the ", name, " block size ", block_traits<B>::block_size);
    dequantize_row_unchecked(x, y, n);
}
template <quant_block B, class P>
    requires requires(std::int64_t n, const B* x, const P* y) { vec_dot_unchecked(n, x, y); }
float vec_dot_ref(std::int64_t n, const B* x, const P* y) {
    constexpr std::string_view name = type_name(block_traits<B>::id);
    if (n < 0 || n % block_traits<B>::block_size != 0) [[unlikely]]
        fail_cat(errc::shape_mismatch, "vec_dot_ref(", name, "): row of ", n, " elements is not a multiple of the ",
                 name, " block size ", block_traits<B>::block_size);
    return vec_dot_unchecked(n, x, y);
}

}  // namespace quant
TESSERA_END_NAMESPACE
