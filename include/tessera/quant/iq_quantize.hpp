// Reference quantizers of the lattice i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s,
// iq1_s, iq1_m), giving ggml's bytes (ggml's quantize_iq*; the formats are in
// iquants.hpp).
//
// The search. Each group of 8 (iq2, iq1) or 4 (iq3) values is quantized to a point of the
// type's grid: the values' magnitudes (the iq2/iq3 types store signs apart) are rounded at
// a trial scale to levels l (positions 2l + 1 in grid units), and when that code is not a
// grid point, the nearest grid points are tried and the one with the least weighted
// squared error kept. "Nearest" is fixed per code: the grid points whose squared distance
// in positions is among the `nwant` smallest distinct distances, in order of (distance,
// index) - the lists ggml builds at ggml_quantize_init. Here they are built once per grid,
// on first use (lattice_for), for the codes the quantizers can produce.
//
// Per type (weights w = imatrix[j] sqrt(sigma2 + x^2) with sigma2 the mean square (iq2_xxs,
// iq2_xs) or twice it (the others); without an imatrix x^2, or sigma2 / 4 + x^2 for iq2_s):
//   iq2_xxs, iq2_xs, iq3_xxs: the signs of each 8 are stored as 7 bits, so an odd number of
//     negative values flips the sign of the one with the least w x^2. 13 (iq2_xxs), 19
//     (iq2_xs) or 31 (iq3_xxs) trial scales around the group's max, the best weighted fit
//     kept, groups off the grid re-fitted at that scale; the super-block scale d is the
//     largest group scale / 31, each group's scale stored as round((s/d - 1) / 2).
//   iq2_s, iq3_s: the same with free sign bytes (no parity flip), 19 trial scales.
//   iq1_s, iq1_m: the values -1, 0, 1 shifted by +-1/8; the split of the sorted group into
//     three levels is searched exhaustively, then mapped to the grid.
// iq2_xxs, iq2_xs and iq1_s need importance weights (ggml asserts; tessera refuses with an
// error); the others take them if given.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/iq_grids.hpp"
#include "tessera/quant/iquants.hpp"
#include "tessera/quant/ref_common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {
namespace detail {

// One grid with its code map and neighbour lists.
struct iq_lattice {
    int dim = 8, bits = 2, size = 0;
    std::vector<std::int8_t> pos;          // size * dim positions 2l + 1
    std::vector<std::int32_t> map;         // code -> grid index, or -(offset + 1) into neighbours
    std::vector<std::uint16_t> neighbours;  // at an offset: count, then that many grid indices

    const std::int8_t* point(int i) const noexcept { return pos.data() + static_cast<std::size_t>(i) * dim; }
};

// codes: the grid's 16-bit codes (dim values of `bits` bits); levels: the largest level l a
// quantizer produces (codes with larger digits get no neighbour list).
inline iq_lattice make_iq_lattice(const std::uint16_t* codes, int size, int dim, int bits, int max_level, int nwant) {
    iq_lattice g;
    g.dim = dim;
    g.bits = bits;
    g.size = size;
    g.pos.resize(static_cast<std::size_t>(size) * dim);
    const std::uint32_t mask = (1u << bits) - 1;
    for (int k = 0; k < size; ++k)
        for (int i = 0; i < dim; ++i) g.pos[static_cast<std::size_t>(k) * dim + i] = static_cast<std::int8_t>(2 * ((codes[k] >> (bits * i)) & mask) + 1);
    const std::size_t ncodes = std::size_t{1} << (bits * dim);
    g.map.assign(ncodes, std::numeric_limits<std::int32_t>::min());
    for (int k = 0; k < size; ++k) g.map[codes[k]] = k;
    std::vector<std::pair<int, int>> d2(static_cast<std::size_t>(size));
    std::int8_t p[8];
    for (std::size_t c = 0; c < ncodes; ++c) {
        if (g.map[c] >= 0) continue;
        bool producible = true;
        for (int i = 0; i < dim; ++i) {
            const int l = static_cast<int>((c >> (bits * i)) & mask);
            producible = producible && l <= max_level;
            p[i] = static_cast<std::int8_t>(2 * l + 1);
        }
        if (!producible) continue;
        for (int j = 0; j < size; ++j) {
            int s = 0;
            for (int i = 0; i < dim; ++i) {
                const int diff = g.point(j)[i] - p[i];
                s += diff * diff;
            }
            d2[static_cast<std::size_t>(j)] = {s, j};
        }
        std::sort(d2.begin(), d2.end());
        const std::size_t at = g.neighbours.size();
        g.map[c] = -static_cast<std::int32_t>(at) - 1;
        g.neighbours.push_back(0);
        int distinct = 1, last = d2[0].first;
        for (const auto& [s, j] : d2) {
            if (s > last) {
                if (distinct == nwant) break;
                last = s;
                ++distinct;
            }
            g.neighbours.push_back(static_cast<std::uint16_t>(j));
        }
        g.neighbours[at] = static_cast<std::uint16_t>(g.neighbours.size() - at - 1);
    }
    return g;
}

enum class iq_grid_id { iq2xxs, iq2xs, iq2s, iq1s, iq3xxs, iq3s };

// Built on first use (thread-safe static initialization), then shared.
inline const iq_lattice& lattice_for(iq_grid_id id) {
    switch (id) {
        case iq_grid_id::iq2xxs: {
            static const iq_lattice g = make_iq_lattice(iq2xxs_codes, 256, 8, 2, 2, 2);
            return g;
        }
        case iq_grid_id::iq2xs: {
            static const iq_lattice g = make_iq_lattice(iq2xs_codes, 512, 8, 2, 2, 2);
            return g;
        }
        case iq_grid_id::iq2s: {
            static const iq_lattice g = make_iq_lattice(iq2s_codes, 1024, 8, 2, 2, 1);
            return g;
        }
        case iq_grid_id::iq1s: {
            static const iq_lattice g = make_iq_lattice(iq1s_codes, 2048, 8, 2, 2, 3);
            return g;
        }
        case iq_grid_id::iq3xxs: {
            static const iq_lattice g = make_iq_lattice(iq3xxs_codes, 256, 4, 3, 7, 2);
            return g;
        }
        case iq_grid_id::iq3s:
        default: {
            static const iq_lattice g = make_iq_lattice(iq3s_codes, 512, 4, 3, 7, 3);
            return g;
        }
    }
}

// The code of levels L[0..dim).
inline std::uint32_t iq_code(const iq_lattice& g, const std::int8_t* L) noexcept {
    std::uint32_t u = 0;
    for (int i = 0; i < g.dim; ++i) u |= static_cast<std::uint32_t>(L[i]) << (g.bits * i);
    return u;
}

// The grid point for code u: u itself when on the grid, else the neighbour with the least
// sum waux^2 (scale q - xval)^2 (first on ties); writes its levels into L.
inline int iq_snap(const iq_lattice& g, std::uint32_t u, const float* xval, const float* waux, float scale, std::int8_t* L) {
    const std::int32_t m = g.map[u];
    int best = m;
    if (m < 0) {
        if (m == std::numeric_limits<std::int32_t>::min())
            fail(errc::invalid_argument, "i-quant quantizer: code " + std::to_string(u) + " has no neighbour list");
        const std::uint16_t* nb = g.neighbours.data() + (-m - 1);
        float best_d2 = std::numeric_limits<float>::max();
        best = nb[1];
        for (int j = 1; j <= nb[0]; ++j) {
            const std::int8_t* pg = g.point(nb[j]);
            float d2 = 0;
            for (int i = 0; i < g.dim; ++i) {
                const float diff = scale * static_cast<float>(pg[i]) - xval[i];
                d2 += waux[i] * diff * diff;
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                best = nb[j];
            }
        }
    }
    const std::int8_t* pg = g.point(best);
    for (int i = 0; i < g.dim; ++i) L[i] = static_cast<std::int8_t>((pg[i] - 1) / 2);
    return best;
}

// |x| of 8 values and their sign bits; with `parity`, an odd count of negatives flips the
// value with the least w x^2 (first on ties) back, so the 8th sign bit is implied.
inline std::uint8_t iq_split_signs(const float* x, const float* w, float* xval, bool parity) noexcept {
    std::uint8_t s = 0;
    int neg = 0;
    for (int i = 0; i < 8; ++i) {
        if (x[i] >= 0) {
            xval[i] = x[i];
        } else {
            xval[i] = -x[i];
            ++neg;
            s = static_cast<std::uint8_t>(s | (1u << i));
        }
    }
    if (parity && neg % 2) {
        int imin = 0;
        float min = w[0] * x[0] * x[0];
        for (int i = 1; i < 8; ++i) {
            const float a = w[i] * x[i] * x[i];
            if (a < min) {
                min = a;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s = static_cast<std::uint8_t>(s ^ (1u << imin));
    }
    return parity ? static_cast<std::uint8_t>(s & 127) : s;
}

// sum w xval q and sum w q^2 over n values with q = 2 L + 1.
inline void iq_fit(int n, const float* w, const float* xval, const std::int8_t* L, float& sumqx, float& sumq2) noexcept {
    sumqx = sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        const float q = static_cast<float>(2 * L[i] + 1);
        sumqx += w[i] * xval[i] * q;
        sumq2 += w[i] * q * q;
    }
}

// The scale search of the iq2 / iq3 types over one group of n values (n / dim lattice
// points): trial scales id = (2 kmax - 1 + is * step) / max for is in [-ntry, ntry], each
// point rounded and snapped, the best fit kept (starting from `scale`); then the points
// are re-snapped at the fitted scale and the scale re-fitted: only the off-grid ones when
// some are (off_grid), all when some are (all_if_off), or all whenever the scale is
// positive (always). Returns the group scale; L holds the levels.
enum class iq_refit { off_grid, all_if_off, always };
struct iq_search {
    const iq_lattice& g;
    int kmax;     // levels 0 .. kmax - 1
    int ntry;     // trial scales on each side
    float step;   // between trial scales
    iq_refit refit;
};
inline float iq_search_scale(const iq_search& s, int n, const float* xval, const float* w, const float* waux, float max,
                             float scale, std::int8_t* L) {
    const iq_lattice& g = s.g;
    const int npts = n / g.dim;
    std::int8_t Laux[32];
    bool on[8], on_aux[8];
    float best = 0;
    for (int k = 0; k < npts; ++k) on[k] = s.refit != iq_refit::all_if_off;
    for (int is = -s.ntry; is <= s.ntry; ++is) {
        const float id = (static_cast<float>(2 * s.kmax - 1) + static_cast<float>(is) * s.step) / max;
        const float this_scale = 1 / id;
        for (int k = 0; k < npts; ++k) {
            std::int8_t* La = Laux + g.dim * k;
            for (int i = 0; i < g.dim; ++i) {
                const int l = nearest_int(0.5f * (id * xval[g.dim * k + i] - 1));
                La[i] = static_cast<std::int8_t>(std::max(0, std::min(s.kmax - 1, l)));
            }
            const std::uint32_t u = iq_code(g, La);
            on_aux[k] = g.map[u] >= 0;
            if (!on_aux[k]) iq_snap(g, u, xval + g.dim * k, waux + g.dim * k, this_scale, La);
        }
        float sumqx, sumq2;
        iq_fit(n, w, xval, Laux, sumqx, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(L, Laux, static_cast<std::size_t>(n));
            for (int k = 0; k < npts; ++k) on[k] = on_aux[k];
        }
    }
    int off_grid = 0;
    for (int k = 0; k < npts; ++k) off_grid += !on[k];
    if ((off_grid > 0 || s.refit == iq_refit::always) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < npts; ++k) {
            if (on[k] && s.refit == iq_refit::off_grid) continue;
            std::int8_t* Lk = L + g.dim * k;
            for (int i = 0; i < g.dim; ++i) {
                const int l = nearest_int(0.5f * (id * xval[g.dim * k + i] - 1));
                Lk[i] = static_cast<std::int8_t>(std::max(0, std::min(s.kmax - 1, l)));
            }
            iq_snap(g, iq_code(g, Lk), xval + g.dim * k, waux + g.dim * k, scale, Lk);
        }
        float sumqx, sumq2;
        iq_fit(n, w, xval, L, sumqx, sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    return scale;
}

// The stored 4-bit group scale: round((s / d - 1) / 2) in [0, 15] (3 bits, [0, 7], for iq1).
inline int iq_scale_code(float s, float id, int max_code) noexcept {
    const int l = nearest_int(0.5f * (id * s - 1));
    return std::max(0, std::min(max_code, l));
}

inline void iq_weights(const float* x, const float* qw, float sigma2, int n, float* w) noexcept {
    for (int i = 0; i < n; ++i) w[i] = qw[i] * std::sqrt(sigma2 + x[i] * x[i]);
}
// One group of n values of the iq2 / iq3 searches: its weights w (with importance weights
// iq_weights', else extra + x^2: extra is sigma2 / 4 for iq2_s, 0 for the others), their
// square roots waux, and per 8 the magnitudes xval and the sign byte (iq_split_signs, with
// parity for the 7-bit sign codes). Returns the largest magnitude.
inline float iq_prepare_group(const float* xb, const float* qw, float sigma2, float extra, int n, bool parity, float* w,
                              float* waux, float* xval, std::uint8_t* signs) noexcept {
    if (qw) iq_weights(xb, qw, sigma2, n, w);
    else
        for (int i = 0; i < n; ++i) w[i] = extra + xb[i] * xb[i];
    for (int i = 0; i < n; ++i) waux[i] = std::sqrt(w[i]);
    for (int k = 0; k < n / 8; ++k) signs[k] = iq_split_signs(xb + 8 * k, w + 8 * k, xval + 8 * k, parity);
    float max = xval[0];
    for (int i = 1; i < n; ++i) max = max_keep_nan(max, xval[i]);
    return max;
}
inline float iq_sum_squares(const float* x) noexcept {
    float s = 0;
    for (int i = 0; i < qk_k; ++i) s += x[i] * x[i];
    return s;
}
inline void iq_require_weights(const float* imatrix, const char* type) {
    if (!imatrix)
        fail(errc::invalid_argument, std::string("quantize_row_ref(") + type +
                                         "): this type needs importance weights (an imatrix), as in ggml");
}

// The grid index of group k's levels (they are on the grid after a search).
inline std::uint32_t iq_index(const iq_lattice& g, const std::int8_t* L) noexcept {
    const std::int32_t gi = g.map[iq_code(g, L)];
    return gi < 0 ? 0u : static_cast<std::uint32_t>(gi);
}

// A group whose largest |x| is below eps, or whose search found no positive scale,
// keeps index 0, no signs and scale 0 (ggml leaves those bytes at zero).
inline void quantize_iq2_xxs_block(const float* x, const float* qw, block_iq2_xxs& y) {
    const iq_lattice& g = lattice_for(iq_grid_id::iq2xxs);
    float gscale[8], w[32], waux[32], xval[32];
    std::int8_t L[32];
    std::uint32_t q2[16] = {};
    float max_scale = 0;
    const float sigma2 = iq_sum_squares(x) / qk_k;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        std::uint8_t signs[4];
        const float max = iq_prepare_group(xb, qw + 32 * ib, sigma2, 0, 32, true, w, waux, xval, signs);
        gscale[ib] = 0;
        if (max < group_max_eps) continue;
        std::uint8_t Lqp[32];
        const float s0 = make_qp_quants(32, 4, xval, Lqp, w);
        const float eff_max = s0 * 3;
        if (!(eff_max > 0)) continue;
        std::memset(L, 0, sizeof(L));
        float scale = iq_search_scale({g, 3, 6, 0.1f, iq_refit::always}, 32, xval, w, waux, eff_max, s0, L);
        if (scale < 0) {
            scale = -scale;
            for (auto& sg : signs) sg = static_cast<std::uint8_t>(~sg & 127);
        }
        for (int k = 0; k < 4; ++k) {
            q2[2 * ib] |= iq_index(g, L + 8 * k) << (8 * k);
            q2[2 * ib + 1] |= static_cast<std::uint32_t>(signs[k]) << (7 * k);
        }
        gscale[ib] = scale;
        max_scale = std::max(max_scale, scale);
    }
    y.d = f16::from_float(0.f);
    if (!(max_scale > 0)) {
        std::memset(y.qs, 0, sizeof(y.qs));
        return;
    }
    const float d = max_scale / 31;
    y.d = f16::from_float(d);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) q2[2 * ib + 1] |= static_cast<std::uint32_t>(iq_scale_code(gscale[ib], id, 15)) << 28;
    std::memcpy(y.qs, q2, sizeof(y.qs));
}

inline void quantize_iq2_xs_block(const float* x, const float* qw, block_iq2_xs& y) {
    const iq_lattice& g = lattice_for(iq_grid_id::iq2xs);
    float gscale[16], w[16], waux[16], xval[16];
    std::int8_t L[16];
    std::uint16_t q2[32] = {};
    float max_scale = 0;
    const float sigma2 = iq_sum_squares(x) / qk_k;
    for (int ib = 0; ib < 16; ++ib) {
        const float* xb = x + 16 * ib;
        std::uint8_t signs[2];
        const float max = iq_prepare_group(xb, qw + 16 * ib, sigma2, 0, 16, true, w, waux, xval, signs);
        gscale[ib] = 0;
        if (max < group_max_eps) continue;
        std::memset(L, 0, sizeof(L));
        float scale = iq_search_scale({g, 3, 9, 0.1f, iq_refit::off_grid}, 16, xval, w, waux, max, max / 5, L);
        if (scale < 0) {
            scale = -scale;
            for (auto& sg : signs) sg = static_cast<std::uint8_t>(~sg & 127);
        }
        for (int k = 0; k < 2; ++k) q2[2 * ib + k] = static_cast<std::uint16_t>(iq_index(g, L + 8 * k) | (signs[k] << 9));
        gscale[ib] = scale;
        max_scale = std::max(max_scale, scale);
    }
    y.d = f16::from_float(0.f);
    std::memset(y.scales, 0, sizeof(y.scales));
    if (!(max_scale > 0)) {
        std::memset(y.qs, 0, sizeof(y.qs));
        return;
    }
    const float d = max_scale / 31;
    y.d = f16::from_float(d);
    const float id = 1 / d;
    for (int ib = 0; ib < 16; ++ib) {
        const int l = iq_scale_code(gscale[ib], id, 15);
        y.scales[ib / 2] = static_cast<std::uint8_t>(ib % 2 == 0 ? l : (y.scales[ib / 2] | (l << 4)));
    }
    std::memcpy(y.qs, q2, sizeof(y.qs));
}

// iq3_xxs (grid 256, signs with parity, groups of 32) and iq3_s (grid 512, free sign
// bytes): 3-bit levels 0..7, positions 1..15.
inline void quantize_iq3_xxs_block(const float* x, const float* qw, block_iq3_xxs& y) {
    const iq_lattice& g = lattice_for(iq_grid_id::iq3xxs);
    float gscale[8], w[32], waux[32], xval[32];
    std::int8_t L[32];
    std::uint8_t q3[96] = {};
    float max_scale = 0;
    const float sigma2 = 2 * iq_sum_squares(x) / qk_k;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        std::uint8_t signs[4];
        const float max = iq_prepare_group(xb, qw ? qw + 32 * ib : nullptr, sigma2, 0, 32, true, w, waux, xval, signs);
        gscale[ib] = 0;
        if (max < 1e-8f) continue;
        std::memset(L, 0, sizeof(L));
        float scale = iq_search_scale({g, 8, 15, 0.2f, iq_refit::off_grid}, 32, xval, w, waux, max, max / 15, L);
        if (scale < 0) {
            scale = -scale;
            for (auto& sg : signs) sg = static_cast<std::uint8_t>(~sg & 127);
        }
        for (int k = 0; k < 8; ++k) q3[8 * ib + k] = static_cast<std::uint8_t>(iq_index(g, L + 4 * k));
        const std::uint32_t ss = signs[0] | (signs[1] << 7) | (signs[2] << 14) | (static_cast<std::uint32_t>(signs[3]) << 21);
        std::memcpy(q3 + 64 + 4 * ib, &ss, 4);
        gscale[ib] = scale;
        max_scale = std::max(max_scale, scale);
    }
    y.d = f16::from_float(0.f);
    if (!(max_scale > 0)) {
        std::memset(y.qs, 0, sizeof(y.qs));
        return;
    }
    const float d = max_scale / 31;
    y.d = f16::from_float(d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) {
        std::uint32_t ss;
        std::memcpy(&ss, q3 + 64 + 4 * ib, 4);
        ss |= static_cast<std::uint32_t>(iq_scale_code(gscale[ib], id, 15)) << 28;
        std::memcpy(q3 + 64 + 4 * ib, &ss, 4);
    }
    std::memcpy(y.qs, q3, sizeof(y.qs));
}

inline void quantize_iq3_s_block(const float* x, const float* qw, block_iq3_s& y) {
    const iq_lattice& g = lattice_for(iq_grid_id::iq3s);
    float gscale[8], w[32], waux[32], xval[32];
    std::int8_t L[32];
    std::memset(&y, 0, sizeof(y));
    float max_scale = 0;
    const float sigma2 = 2 * iq_sum_squares(x) / qk_k;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        std::uint8_t signs[4];
        const float max = iq_prepare_group(xb, qw ? qw + 32 * ib : nullptr, sigma2, 0, 32, false, w, waux, xval, signs);
        gscale[ib] = 0;
        if (max == 0) continue;
        std::memset(L, 0, sizeof(L));
        float scale = iq_search_scale({g, 8, 9, 0.2f, iq_refit::all_if_off}, 32, xval, w, waux, max, max / 15, L);
        if (scale < 0) {
            scale = -scale;
            for (auto& sg : signs) sg = static_cast<std::uint8_t>(~sg);
        }
        for (int k = 0; k < 8; ++k) {
            const std::uint32_t gi = iq_index(g, L + 4 * k);
            y.qs[8 * ib + k] = static_cast<std::uint8_t>(gi & 255);
            y.qh[ib] = static_cast<std::uint8_t>(y.qh[ib] | ((gi >> 8) << k));
        }
        std::memcpy(y.signs + 4 * ib, signs, 4);
        gscale[ib] = scale;
        max_scale = std::max(max_scale, scale);
    }
    if (!(max_scale > 0)) return;
    const float d = max_scale / 31;
    y.d = f16::from_float(d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib += 2)
        y.scales[ib / 2] = static_cast<std::uint8_t>(iq_scale_code(gscale[ib], id, 15) | (iq_scale_code(gscale[ib + 1], id, 15) << 4));
}

// iq2_s: grid 1024, groups of 16 with free sign bytes.
inline void quantize_iq2_s_block(const float* x, const float* qw, block_iq2_s& y) {
    const iq_lattice& g = lattice_for(iq_grid_id::iq2s);
    float gscale[16], w[16], waux[16], xval[16];
    std::int8_t L[16];
    std::memset(&y, 0, sizeof(y));
    float max_scale = 0;
    const float sigma2 = 2 * iq_sum_squares(x) / qk_k;
    for (int ib = 0; ib < 16; ++ib) {
        const float* xb = x + 16 * ib;
        std::uint8_t signs[2];
        const float max = iq_prepare_group(xb, qw ? qw + 16 * ib : nullptr, sigma2, 0.25f * sigma2, 16, false, w, waux, xval,
                                           signs);
        gscale[ib] = 0;
        if (max < 1e-8f) continue;
        std::memset(L, 0, sizeof(L));
        float scale = iq_search_scale({g, 3, 9, 0.1f, iq_refit::off_grid}, 16, xval, w, waux, max, max / 5, L);
        if (scale < 0) {
            scale = -scale;
            for (auto& sg : signs) sg = static_cast<std::uint8_t>(~sg);
        }
        for (int k = 0; k < 2; ++k) {
            const std::uint32_t gi = iq_index(g, L + 8 * k);
            const int i8 = 2 * ib + k;
            y.qs[i8] = static_cast<std::uint8_t>(gi & 255);
            y.qh[i8 / 4] = static_cast<std::uint8_t>(y.qh[i8 / 4] | ((gi >> 8) << (2 * (i8 % 4))));
            y.qs[qk_k / 8 + i8] = signs[k];
        }
        gscale[ib] = scale;
        max_scale = std::max(max_scale, scale);
    }
    if (!(max_scale > 0)) return;
    const float d = max_scale / 31;
    y.d = f16::from_float(d * 0.9875f);
    const float id = 1 / d;
    for (int ib = 0; ib < 16; ++ib) {
        const int l = iq_scale_code(gscale[ib], id, 15);
        y.scales[ib / 2] = static_cast<std::uint8_t>(ib % 2 == 0 ? l : (y.scales[ib / 2] | (l << 4)));
    }
}

// ---- iq1_s, iq1_m ----------------------------------------------------------------------
// Values -1, 0, 1 shifted by +delta (shift +1) or -delta (shift -1).
inline constexpr float iq1_xp[3] = {-1 + iq1_delta, iq1_delta, 1 + iq1_delta};
inline constexpr float iq1_xm[3] = {-1 - iq1_delta, -iq1_delta, 1 - iq1_delta};

// Group order by value (stable: equal values keep their positions' order; NaN after
// everything, so that the order is a strict weak one on any data).
inline void iq1_sorted_order(const float* xb, int n, int* order) {
    for (int j = 0; j < n; ++j) order[j] = j;
    std::stable_sort(order, order + n, [xb](int a, int b) {
        return !std::isnan(xb[a]) && (std::isnan(xb[b]) || xb[a] < xb[b]);
    });
}

// The grid point for 8 levels L (written back) at `scale` with shifted values xx: the code
// itself when on the grid, else the neighbour with the least sum w (scale xx[l] - x)^2.
inline int iq1_snap(const iq_lattice& g, const float* xb, const float* w, float scale, const float* xx, std::int8_t* L) {
    const std::uint32_t u = iq_code(g, L);
    const std::int32_t m = g.map[u];
    int best = m;
    if (m < 0) {
        const std::uint16_t* nb = g.neighbours.data() + (-m - 1);
        float best_d2 = std::numeric_limits<float>::max();
        best = nb[1];
        for (int j = 1; j <= nb[0]; ++j) {
            const std::int8_t* pg = g.point(nb[j]);
            float d2 = 0;
            for (int i = 0; i < 8; ++i) {
                const float diff = scale * xx[(pg[i] - 1) / 2] - xb[i];
                d2 += w[i] * diff * diff;
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                best = nb[j];
            }
        }
    }
    const std::int8_t* pg = g.point(best);
    for (int i = 0; i < 8; ++i) L[i] = static_cast<std::int8_t>((pg[i] - 1) / 2);
    return best;
}

inline void quantize_iq1_s_block(const float* x, const float* qw, block_iq1_s& y) {
    const iq_lattice& g = lattice_for(iq_grid_id::iq1s);
    float gscale[8], w[32], sumx[33], sumw[33];
    int order[32];
    std::int8_t L[32], shifts[8];
    y.d = f16::from_float(0.f);
    std::memset(y.qs, 0, sizeof(y.qs));
    std::memset(y.qh, 0, sizeof(y.qh));
    float max_scale = 0;
    const float sigma2 = 2 * iq_sum_squares(x) / qk_k;
    for (int ib = 0; ib < 8; ++ib) {
        const float* xb = x + 32 * ib;
        iq_weights(xb, qw + 32 * ib, sigma2, 32, w);
        gscale[ib] = 0;
        shifts[ib] = 1;
        float max = std::fabs(xb[0]);
        for (int i = 1; i < 32; ++i) max = max_keep_nan(max, std::fabs(xb[i]));
        if (max < 1e-12f) continue;
        iq1_sorted_order(xb, 32, order);
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < 32; ++j) {
            sumx[j + 1] = sumx[j] + w[order[j]] * xb[order[j]];
            sumw[j + 1] = sumw[j] + w[order[j]];
        }
        float best = -std::numeric_limits<float>::max(), scale = max;
        int b1 = -1, b2 = -1, shift = 0;
        for (int i1 = 0; i1 <= 32; ++i1)
            for (int i2 = i1; i2 <= 32; ++i2)
                for (int sgn = 0; sgn < 2; ++sgn) {
                    const float* xx = sgn == 0 ? iq1_xp : iq1_xm;
                    const float sqx = (sumx[i1] - sumx[0]) * xx[0] + (sumx[i2] - sumx[i1]) * xx[1] + (sumx[32] - sumx[i2]) * xx[2];
                    const float sq2 = (sumw[i1] - sumw[0]) * xx[0] * xx[0] + (sumw[i2] - sumw[i1]) * xx[1] * xx[1] +
                                      (sumw[32] - sumw[i2]) * xx[2] * xx[2];
                    if (sq2 > 0 && sqx * sqx > best * sq2) {
                        scale = sqx / sq2;
                        best = scale * sqx;
                        b1 = i1;
                        b2 = i2;
                        shift = sgn == 0 ? 1 : -1;
                    }
                }
        if (b1 < 0 || b2 < 0 || shift == 0) continue;
        for (int j = 0; j < 32; ++j) L[order[j]] = static_cast<std::int8_t>(j < b1 ? 0 : (j < b2 ? 1 : 2));
        if (scale < 0) {
            for (auto& l : L) l = static_cast<std::int8_t>(2 - l);
            scale = -scale;
            shift = -shift;
        }
        const float* xx = shift == 1 ? iq1_xp : iq1_xm;
        bool all_on = true;
        int index[4];
        for (int k = 0; k < 4; ++k) {
            all_on = all_on && g.map[iq_code(g, L + 8 * k)] >= 0;
            index[k] = iq1_snap(g, xb + 8 * k, w + 8 * k, scale, xx, L + 8 * k);
        }
        if (!all_on) {
            float sqx = 0, sq2 = 0;
            for (int k = 0; k < 4; ++k) {
                const std::int8_t* pg = g.point(index[k]);
                for (int j = 0; j < 8; ++j) {
                    const float wj = w[8 * k + j], q = xx[(pg[j] - 1) / 2];
                    sqx += wj * q * xb[8 * k + j];
                    sq2 += wj * q * q;
                }
            }
            if (sqx > 0 && sq2 > 0) scale = sqx / sq2;
        }
        std::uint16_t h = 0;
        for (int k = 0; k < 4; ++k) {
            y.qs[4 * ib + k] = static_cast<std::uint8_t>(index[k] & 255);
            h = static_cast<std::uint16_t>(h | ((index[k] >> 8) << (3 * k)));
        }
        y.qh[ib] = h;
        gscale[ib] = scale;
        shifts[ib] = static_cast<std::int8_t>(shift);
        max_scale = std::max(max_scale, scale);
    }
    if (!(max_scale > 0)) return;
    const float d = max_scale / 15;
    y.d = f16::from_float(d * 1.125f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) {
        int l = iq_scale_code(gscale[ib], id, 7);
        if (shifts[ib] == -1) l |= 8;
        y.qh[ib] = static_cast<std::uint16_t>(y.qh[ib] | (l << 12));
    }
}

inline void quantize_iq1_m_block(const float* x, const float* qw, block_iq1_m& y) {
    const iq_lattice& g = lattice_for(iq_grid_id::iq1s);
    constexpr std::uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
    float gscale[16], w[16];
    int order[16];
    std::int8_t L[16], shifts[16];
    std::memset(y.qs, 0, sizeof(y.qs));
    std::memset(y.qh, 0, sizeof(y.qh));
    std::memset(y.scales, 0, sizeof(y.scales));
    float max_scale = 0;
    const float sigma2 = 2 * iq_sum_squares(x) / qk_k;
    const auto weights = [&](const float* xb, int ib) {
        if (qw) iq_weights(xb, qw + 16 * ib, sigma2, 16, w);
        else
            for (int i = 0; i < 16; ++i) w[i] = xb[i] * xb[i];
    };
    // xx of point k (0, 1) for a shift choice c: 0 (+, +), 1 (+, -), 2 (-, +), 3 (-, -)
    const auto xx_of = [](int c, int k) { return (k == 0 ? c < 2 : c % 2 == 0) ? iq1_xp : iq1_xm; };
    for (int ib = 0; ib < 16; ++ib) {
        const float* xb = x + 16 * ib;
        weights(xb, ib);
        gscale[ib] = 0;
        shifts[ib] = 0;
        float max = std::fabs(xb[0]);
        for (int i = 1; i < 16; ++i) max = max_keep_nan(max, std::fabs(xb[i]));
        if (max < 1e-7f) continue;
        iq1_sorted_order(xb, 16, order);
        float best = -std::numeric_limits<float>::max(), scale = max;
        int b1 = -1, b2 = -1, bk = -1;
        for (int i1 = 0; i1 <= 16; ++i1)
            for (int i2 = i1; i2 <= 16; ++i2) {
                float sqx[4] = {0, 0, 0, 0}, sq2[4] = {0, 0, 0, 0};
                for (int j = 0; j < 16; ++j) {
                    const int lev = j < i1 ? 0 : (j < i2 ? 1 : 2);
                    const int i = order[j];
                    const float p = iq1_xp[lev], m = iq1_xm[lev];
                    // the first 8 take the first shift, the last 8 the second
                    const float a = w[i] * p * xb[i], b = w[i] * m * xb[i], a2 = w[i] * p * p, b2v = w[i] * m * m;
                    if (i < 8) {
                        sqx[0] += a; sqx[1] += a; sqx[2] += b; sqx[3] += b;
                        sq2[0] += a2; sq2[1] += a2; sq2[2] += b2v; sq2[3] += b2v;
                    } else {
                        sqx[0] += a; sqx[2] += a; sqx[1] += b; sqx[3] += b;
                        sq2[0] += a2; sq2[2] += a2; sq2[1] += b2v; sq2[3] += b2v;
                    }
                }
                for (int k = 0; k < 4; ++k)
                    if (sq2[k] > 0 && sqx[k] * sqx[k] > best * sq2[k]) {
                        scale = sqx[k] / sq2[k];
                        best = scale * sqx[k];
                        b1 = i1;
                        b2 = i2;
                        bk = k;
                    }
            }
        if (b1 < 0 || b2 < 0 || bk < 0) continue;
        for (int j = 0; j < 16; ++j) L[order[j]] = static_cast<std::int8_t>(j < b1 ? 0 : (j < b2 ? 1 : 2));
        if (scale < 0) {
            for (auto& l : L) l = static_cast<std::int8_t>(2 - l);
            scale = -scale;
            bk = 3 - bk;
        }
        bool all_on = true;
        int index[2];
        for (int k = 0; k < 2; ++k) {
            all_on = all_on && g.map[iq_code(g, L + 8 * k)] >= 0;
            index[k] = iq1_snap(g, xb + 8 * k, w + 8 * k, scale, xx_of(bk, k), L + 8 * k);
        }
        if (!all_on) {
            float sqx = 0, sq2 = 0;
            for (int k = 0; k < 2; ++k) {
                const float* xx = xx_of(bk, k);
                const std::int8_t* pg = g.point(index[k]);
                for (int j = 0; j < 8; ++j) {
                    const float wj = w[8 * k + j], q = xx[(pg[j] - 1) / 2];
                    sqx += wj * q * xb[8 * k + j];
                    sq2 += wj * q * q;
                }
            }
            if (sqx > 0 && sq2 > 0) scale = sqx / sq2;
        }
        y.qs[2 * ib] = static_cast<std::uint8_t>(index[0] & 255);
        y.qs[2 * ib + 1] = static_cast<std::uint8_t>(index[1] & 255);
        y.qh[ib] = static_cast<std::uint8_t>((index[0] >> 8) | ((index[1] >> 8) << 4));
        gscale[ib] = scale;
        shifts[ib] = static_cast<std::int8_t>(bk);
        max_scale = std::max(max_scale, scale);
    }
    if (!(max_scale > 0)) return;
    std::uint16_t sc[4] = {0, 0, 0, 0};
    float d = max_scale / 15;
    const float id = 1 / d;
    float sqx = 0, sq2 = 0;
    for (int ib = 0; ib < 16; ++ib) {
        const int l = iq_scale_code(gscale[ib], id, 7);
        sc[ib / 4] = static_cast<std::uint16_t>(sc[ib / 4] | (l << (3 * (ib % 4))));
        y.qh[ib] = static_cast<std::uint8_t>(y.qh[ib] | masks[shifts[ib]]);
        const float* xb = x + 16 * ib;
        weights(xb, ib);
        for (int k = 0; k < 2; ++k) {
            const float* xx = xx_of(shifts[ib], k);
            const std::int8_t* pg = g.point(y.qs[2 * ib + k] + ((y.qh[ib] << (8 - 4 * k)) & 0x700));
            for (int j = 0; j < 8; ++j) {
                const float wj = w[8 * k + j], q = xx[(pg[j] - 1) / 2] * static_cast<float>(2 * l + 1);
                sqx += wj * q * xb[8 * k + j];
                sq2 += wj * q * q;
            }
        }
    }
    if (sq2 > 0) d = sqx / sq2;
    const std::uint16_t u = f16::from_float(d * 1.1125f).bits;
    sc[0] = static_cast<std::uint16_t>(sc[0] | ((u & 0x000f) << 12));
    sc[1] = static_cast<std::uint16_t>(sc[1] | ((u & 0x00f0) << 8));
    sc[2] = static_cast<std::uint16_t>(sc[2] | ((u & 0x0f00) << 4));
    sc[3] = static_cast<std::uint16_t>(sc[3] | (u & 0xf000));
    std::memcpy(y.scales, sc, sizeof(sc));
}

}  // namespace detail

// ---- iq2_xxs, iq2_xs ---------------------------------------------------------------------
inline void quantize_row_ref(const float* x, block_iq2_xxs* y, std::int64_t n, const float* imatrix) {
    detail::check_row<block_iq2_xxs>(n, "quantize_row_ref(iq2_xxs)");
    detail::iq_require_weights(imatrix, "iq2_xxs");
    for (std::int64_t b = 0; b < n / qk_k; ++b) detail::quantize_iq2_xxs_block(x + qk_k * b, imatrix + qk_k * b, y[b]);
}
inline void quantize_row_ref(const float* x, block_iq2_xs* y, std::int64_t n, const float* imatrix) {
    detail::check_row<block_iq2_xs>(n, "quantize_row_ref(iq2_xs)");
    detail::iq_require_weights(imatrix, "iq2_xs");
    for (std::int64_t b = 0; b < n / qk_k; ++b) detail::quantize_iq2_xs_block(x + qk_k * b, imatrix + qk_k * b, y[b]);
}

// ---- iq3_xxs, iq3_s, iq2_s, iq1_m (imatrix optional), iq1_s (imatrix required) ----------
#define TESSERA_IQ_QUANTIZER_(T)                                                                       \
    inline void quantize_row_ref(const float* x, block_##T* y, std::int64_t n, const float* imatrix) { \
        detail::check_row<block_##T>(n, "quantize_row_ref(" #T ")");                                  \
        for (std::int64_t b = 0; b < n / qk_k; ++b)                                                    \
            detail::quantize_##T##_block(x + qk_k * b, imatrix ? imatrix + qk_k * b : nullptr, y[b]);   \
    }                                                                                                  \
    inline void quantize_row_ref(const float* x, block_##T* y, std::int64_t n) { quantize_row_ref(x, y, n, nullptr); }
TESSERA_IQ_QUANTIZER_(iq3_xxs)
TESSERA_IQ_QUANTIZER_(iq3_s)
TESSERA_IQ_QUANTIZER_(iq2_s)
TESSERA_IQ_QUANTIZER_(iq1_m)
#undef TESSERA_IQ_QUANTIZER_
inline void quantize_row_ref(const float* x, block_iq1_s* y, std::int64_t n, const float* imatrix) {
    detail::check_row<block_iq1_s>(n, "quantize_row_ref(iq1_s)");
    detail::iq_require_weights(imatrix, "iq1_s");
    for (std::int64_t b = 0; b < n / qk_k; ++b) detail::quantize_iq1_s_block(x + qk_k * b, imatrix + qk_k * b, y[b]);
}

}  // namespace quant
TESSERA_END_NAMESPACE
