// Tiled GEMM of q4_0 / q8_0 weights with q8_0 activations, and of q4_K weights with q8_K
// activations (mul_mat with many columns):
// out[n*ldo + m] = sum over blocks b of (dx[m,b] * dy[n,b]) * sum_t wq[m,b,t] * yq[n,b,t]
// (q4_K: see the q4_K section below; its lanes are 32-element sub-blocks).
//
// Both sides are repacked so that one 512-bit vector holds four bytes of each of 16
// consecutive blocks ("x16" layout): after the 8 vpdpbusd of a group of 16 blocks,
// lane i holds the whole integer dot of block i, so the f32 work (convert, scale
// product, FMA) is done once per 16 blocks per output instead of once per block.
// The activations are packed once per mul_mat (qgemm_pack_act, after quantizing to
// q8_0); the weights are packed inside the kernel, 16 rows at a time, into the
// caller's work buffer and reused across every column. RM x RN = 4 x 4 outputs per
// tile; rows past M are zero padding, columns past N use narrower tiles.
//
// u8 x s8: q4_0 weights enter vpdpbusd as their nibbles 0..15 with -8 * sum(y) folded
// into the accumulator start; q8_0 weights as q + 128 (VNNI, no saturation) with
// -128 * sum(y), or without VNNI as |q| against sign(y, q) (vpmaddubsw cannot
// saturate then: |q| <= 128, |y| <= 127).
//
// Paths: scalar (the definition, block order, f32 sum), avx2 (256-bit, half a group
// per vector), avx512bw and avx512vnni (512-bit; dpbusd512 picks vpdpbusd on VNNI);
// their vector traits are in kernels/x86/quant/gemm.hpp.
// Integer parts are exact everywhere; the f32 sum order differs.
//
// Kernels (k a multiple of 32, for q4_K of 256, validated by the caller):
//   gemm_q4_0<A>(k, m, n, const block_q4_0* x, size_t x_stride_bytes,
//                const std::byte* y_packed, size_t y_stride_bytes, float* out, size_t ldo,
//                std::byte* work)   // work: qgemm_work_bytes(k), 64-byte aligned
//   gemm_q8_0<A>(same with block_q8_0 weights), gemm_q4_K<A>(block_q4_K weights, q8_K activations)
//   gemm_q4_0_rows4 / gemm_q8_0_rows4 / gemm_q4_K_rows4: the same on repacked weights
// Layout helpers (plain functions, used outside the arch units):
//   qgemm_act_row_bytes(k), qgemm_work_bytes(k),
//   qgemm_pack_act(k, const block_q8_0*, std::byte*), qgemm_pack_act(k, const block_q8_K*, std::byte*)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/kernels/quant/repack.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

// ---- layout ----------------------------------------------------------------------------
// A lane is a run of elements that shares one weight scale: 32 (a q4_0-like block, or a
// 32-element sub-block of a super-block) or 16 (the 16-element scale groups of q2_K,
// q3_K, q6_K). A group is 16 lanes; one 512-bit vector holds four bytes of each lane.
inline constexpr std::int64_t qgemm_group = 16;  // lanes per packed group
inline constexpr std::int64_t qgemm_panel = 16;  // weight rows packed at a time
// Tiles are qgemm_rm x qgemm_rn outputs: 2 x 4 (4 x 4 has 16 i32 and 16 f32 accumulators,
// and GCC, out of vector registers, reloads the weights for every vpdpbusd: 2 x 4 is 9-15 %
// faster). Fewer than qgemm_rn columns take 4-row tiles (one pass over each quad record
// group in memory order, for the repacked matrix x vector).
inline constexpr int qgemm_rm = 2, qgemm_rn = 4, qgemm_rm_narrow = 4;

// Elements per lane of t's packed GEMM (gemm.hpp, gemm_lanes.hpp); 0 when t has none.
constexpr int qgemm_lane(type_id t) noexcept {
    switch (t) {
        case type_id::q2_K:
        case type_id::q3_K:
        case type_id::q6_K: return 16;
        case type_id::q4_0:
        case type_id::q4_1:
        case type_id::q5_0:
        case type_id::q5_1:
        case type_id::q8_0:
        case type_id::q8_1:
        case type_id::iq4_nl:
        case type_id::mxfp4:
        case type_id::q4_K:
        case type_id::q5_K:
        case type_id::iq4_xs:
        case type_id::tq1_0:
        case type_id::tq2_0: return 32;
        default: return 0;
    }
}
constexpr bool qgemm_supported(type_id t) noexcept { return qgemm_lane(t) != 0; }
// Columns from which mul_mat and mul_mat_id (per expert) take the packed GEMM instead of gemv.
inline constexpr std::int64_t qgemm_min_cols = 4;

// One group of packed activations, lanes of `lane` elements: the quants in the x16 order
// (byte t*64 + l*4 + i = element 4t + i of lane l; 16 * lane bytes), then per lane f32
// dy (the lane's activation scale), i32 isum (the sum of its quants) and f32 bs (dy * isum,
// for q8_1 its stored s): the kernels start a lane's integer dot at -offset * isum and
// add the weights' min term as b * bs.
struct qgemm_act_layout {
    std::size_t dy, isum, bs, bytes;
};
constexpr qgemm_act_layout qgemm_act(int lane) noexcept {
    const auto q = static_cast<std::size_t>(16 * lane);
    return {q, q + 64, q + 128, q + 192};
}
inline constexpr qgemm_act_layout qgemm_act32 = qgemm_act(32);
inline constexpr std::size_t qgemm_act_group_bytes = qgemm_act32.bytes;  // 32-element lanes (q4_0, q8_0, q4_K)

inline constexpr std::int64_t qgemm_groups(std::int64_t k, int lane = 32) noexcept {
    return (k / lane + qgemm_group - 1) / qgemm_group;
}
// Bytes of one packed activation row of k elements for weights of type t.
constexpr std::size_t qgemm_act_row_bytes(type_id t, std::int64_t k) noexcept {
    const int lane = qgemm_lane(t);
    return lane == 0 ? 0 : static_cast<std::size_t>(qgemm_groups(k, lane)) * qgemm_act(lane).bytes;
}
// The per-thread work buffer of the plain-layout kernels: one panel of qgemm_panel weight
// rows, a group record at most 16 * lane bytes of quants and two f32 per lane.
constexpr std::size_t qgemm_work_bytes(type_id t, std::int64_t k) noexcept {
    const int lane = qgemm_lane(t);
    return static_cast<std::size_t>(qgemm_panel * qgemm_groups(k, lane > 0 ? lane : 32)) *
           static_cast<std::size_t>(16 * (lane > 0 ? lane : 32) + 128);
}

// q4_K's lanes (32-element sub-blocks) take their elements in the order in which its
// repacked nibbles come out (see k4_split): byte t*64 + l*4 + i of a group holds element
// qgemm_k4_elem(l, t, i) of lane l, i.e. chunks t = 2s, 2s+1 take elements 8s..8s+7 with
// the two halves traded in odd lanes. Every other type takes element 4t + i.
inline constexpr int qgemm_k4_elem(int l, int t, int i) noexcept { return 8 * (t / 2) + 4 * ((t % 2) ^ (l % 2)) + i; }
inline constexpr std::size_t qgemm_k4_w_group_bytes = 256 + 64 + 64;  // panel record: nibbles, d*sc, dmin*m (f32)

// One row of activations, already quantized to B's dot partner (k elements), into the
// packed layout of B's GEMM; lanes past k / lane are zero. Run once per activation row,
// outside the arch units.
template <class B>
void qgemm_pack_act(std::int64_t k, const typename quant::block_traits<B>::dot_partner* y, std::byte* out) {
    using P = typename quant::block_traits<B>::dot_partner;
    constexpr int lane = qgemm_lane(quant::block_traits<B>::id);
    constexpr auto qp = static_cast<int>(quant::block_traits<P>::block_size);
    static_assert(lane != 0, "B has a packed GEMM");
    constexpr bool k4 = std::is_same_v<B, quant::block_q4_K>;
    constexpr qgemm_act_layout lay = qgemm_act(lane);
    const std::int64_t nl = k / lane;
    std::memset(out, 0, static_cast<std::size_t>(qgemm_groups(k, lane)) * lay.bytes);
    for (std::int64_t j = 0; j < nl; ++j) {
        std::byte* g = out + static_cast<std::size_t>(j / qgemm_group) * lay.bytes;
        const int l = static_cast<int>(j % qgemm_group);
        const P& blk = y[j * lane / qp];
        const std::int8_t* q = blk.qs + (j * lane) % qp;
        int s = 0;
        for (int p = 0; p < lane; ++p) {
            const std::int8_t v = q[k4 ? qgemm_k4_elem(l, p / 4, p % 4) : p];
            std::memcpy(g + (p / 4) * 64 + l * 4 + p % 4, &v, 1);
            s += v;
        }
        float dy, bs;
        if constexpr (std::is_same_v<P, quant::block_q8_K>) {
            dy = blk.d;
            bs = dy * static_cast<float>(s);
        } else if constexpr (std::is_same_v<P, quant::block_q8_1>) {
            dy = blk.d.to_float();
            bs = blk.s.to_float();
        } else {
            dy = blk.d.to_float();
            bs = dy * static_cast<float>(s);
        }
        std::memcpy(g + lay.dy + 4 * static_cast<std::size_t>(l), &dy, 4);
        std::memcpy(g + lay.isum + 4 * static_cast<std::size_t>(l), &s, 4);
        std::memcpy(g + lay.bs + 4 * static_cast<std::size_t>(l), &bs, 4);
    }
}

namespace qdetail {

namespace qg = ::tessera::quant;

template <class A>
TESSERA_ALWAYS_INLINE int wq(const qg::block_q4_0& b, int e) noexcept {
    return e < 16 ? (b.qs[e] & 15) : (b.qs[e - 16] >> 4);  // stored value, the weight is this - 8
}
template <class A>
TESSERA_ALWAYS_INLINE int wq(const qg::block_q8_0& b, int e) noexcept {
    return b.qs[e];
}
template <class B>
inline constexpr int qgemm_offset = std::is_same_v<B, qg::block_q4_0> ? 8 : 0;

// ---- scalar: the definition ------------------------------------------------------------
template <class A, class B>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
           float* out, std::size_t ldo, std::byte*, simd::requires_arch<simd::scalar>) {
    const std::int64_t nb = k / 32;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t c = 0; c < n; ++c) {
        const auto* yr = reinterpret_cast<const unsigned char*>(y) + static_cast<std::size_t>(c) * ys;
        for (std::int64_t r = 0; r < m; ++r) {
            const B* xr = reinterpret_cast<const B*>(xb + static_cast<std::size_t>(r) * xs);
            float sum = 0.0f;
            for (std::int64_t b = 0; b < nb; ++b) {
                const unsigned char* g = yr + static_cast<std::size_t>(b / qgemm_group) * qgemm_act_group_bytes;
                const auto l = static_cast<std::size_t>(b % qgemm_group);
                int isum = 0;
                for (int e = 0; e < 32; ++e) {
                    const auto yq = static_cast<std::int8_t>(g[static_cast<std::size_t>(e / 4) * 64 + l * 4 + static_cast<std::size_t>(e % 4)]);
                    isum += (wq<A>(xr[b], e) - qgemm_offset<B>) * yq;
                }
                float dy;
                std::memcpy(&dy, g + qgemm_act32.dy + 4 * l, 4);
                sum += (h2f<A>(xr[b].d) * dy) * static_cast<float>(isum);
            }
            out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)] = sum;
        }
    }
}

// ---- wide bodies -----------------------------------------------------------------------
// One body for every vector width: the tiles below are templates on V, the vector traits
// of an ISA (load, dpbusd, fma, hsum, nibble split, ... on V::vi / V::vf; V::halves
// vectors per group of 16 blocks). The x86 traits (qv512, qv256) and the overloads that
// bind each arch to its traits are in kernels/x86/quant/gemm.hpp.

// Where a tile finds the weights of row i (< qgemm_rm), group g, and how it loads them.
// One quad of a repacked matrix (kernels/quant/repack.hpp): records of four rows in
// order; q4_0 keeps two weights per byte, the scales stay f16.
template <class B>
struct w_rows4 {
    static constexpr bool q4 = std::is_same_v<B, qg::block_q4_0>;
    static constexpr std::size_t rec_bytes = q4 ? 288 : 544, qbytes = q4 ? 256 : 512;
    const std::byte* quad;
    int first = 0;  // the tile's first row in the quad
    TESSERA_ALWAYS_INLINE const std::byte* rec(int i, std::int64_t g) const {
        return quad + (static_cast<std::size_t>(g) * 4 + static_cast<std::size_t>(first + i)) * rec_bytes;
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE typename V::vi q(const std::byte* r, int t, int h) {
        const std::size_t half = static_cast<std::size_t>(h * (64 / V::halves));
        if constexpr (q4) {
            const typename V::vi v = V::load(r + static_cast<std::size_t>((t & 3) * 64) + half);
            return t < 4 ? V::lo4(v) : V::hi4(v);
        } else {
            return V::load(r + static_cast<std::size_t>(t * 64) + half);
        }
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE typename V::vf d(const std::byte* r, int h) {
        return V::load_h(r + qbytes + static_cast<std::size_t>(h * (32 / V::halves)));
    }
};

// Rows [0, rows) of x (rows <= qgemm_panel) as the quads of a repacked matrix
// (repack.hpp's records: the nibble or byte words of 16 blocks of a row, then their f16
// scales), so the plain-layout GEMM runs the repacked one's tiles on the work buffer.
// It moves whole 4-byte words, the cost that keeps packing a panel per call cheap next
// to the tiles' work for a few dozen columns. Lanes past k / 32 and the rows up to the
// next multiple of 4 are zero.
template <class A, class B>
void qgemm_pack_w(std::int64_t k, std::int64_t rows, const B* x, std::size_t xs, std::byte* w) {
    using W = w_rows4<B>;
    constexpr int words = static_cast<int>(W::qbytes / 64);
    const std::int64_t nb = k / 32, ng = qgemm_groups(k);
    const std::size_t quad = static_cast<std::size_t>(4 * ng) * W::rec_bytes;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    const int tail = static_cast<int>(nb % qgemm_group);  // lanes of the last group in use (0: all)
    for (std::int64_t r = 0; r < (rows + 3) / 4 * 4; ++r) {
        std::byte* row = w + static_cast<std::size_t>(r / 4) * quad + static_cast<std::size_t>(r % 4) * W::rec_bytes;
        if (r >= rows) {
            for (std::int64_t g = 0; g < ng; ++g) std::memset(row + static_cast<std::size_t>(4 * g) * W::rec_bytes, 0, W::rec_bytes);
            continue;
        }
        const B* xr = reinterpret_cast<const B*>(xb + static_cast<std::size_t>(r) * xs);
        for (std::int64_t b = 0; b < nb; ++b) {
            std::byte* rec = row + static_cast<std::size_t>(4 * (b / qgemm_group)) * W::rec_bytes;
            const auto l = static_cast<std::size_t>(b % qgemm_group);
            for (int s = 0; s < words; ++s) std::memcpy(rec + 64 * static_cast<std::size_t>(s) + 4 * l, xr[b].qs + 4 * s, 4);
            std::memcpy(rec + W::qbytes + 2 * l, &xr[b].d, 2);
        }
        if (tail != 0) {
            std::byte* rec = row + static_cast<std::size_t>(4 * (ng - 1)) * W::rec_bytes;
            for (int s = 0; s < words; ++s)
                std::memset(rec + 64 * s + 4 * tail, 0, static_cast<std::size_t>(4 * (qgemm_group - tail)));
            std::memset(rec + W::qbytes + 2 * tail, 0, static_cast<std::size_t>(2 * (qgemm_group - tail)));
        }
    }
}

// One RM x RN tile: rows w[0..RM) of a packed panel (row_bytes apart) x RN packed
// activation rows.
template <class A, class V, class B, int RM, int RN, class W>
TESSERA_ALWAYS_INLINE void qgemm_tile(std::int64_t ng, W w, const std::byte* y, std::size_t ys, float* out, std::size_t ldo,
                                      std::int64_t rows) {
    constexpr bool q8 = std::is_same_v<B, qg::block_q8_0>;
    constexpr bool vnni = V::vnni;
    constexpr bool sign_path = q8 && !vnni;
    constexpr int shift = q8 ? 7 : 3;
    using vi = typename V::vi;
    using vf = typename V::vf;
    constexpr int step = 64 / V::halves;  // bytes per vector
    vf f[RM][RN];
    for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) f[i][j] = V::zerof();
    for (std::int64_t g = 0; g < ng; ++g) {
        const std::byte* wr[RM];
        for (int i = 0; i < RM; ++i) wr[i] = w.rec(i, g);
        const std::byte* yg = y + static_cast<std::size_t>(g) * qgemm_act_group_bytes;
        for (int h = 0; h < V::halves; ++h) {
            vi acc[RM][RN];
            for (int j = 0; j < RN; ++j) {
                vi c = V::zero();
                if constexpr (!sign_path) c = V::neg_shl(V::load(yg + static_cast<std::size_t>(j) * ys + qgemm_act32.isum + h * step), shift);
                for (int i = 0; i < RM; ++i) acc[i][j] = c;
            }
#pragma GCC unroll 8
            for (int t = 0; t < 8; ++t) {
                vi xv[RM];
                for (int i = 0; i < RM; ++i) {
                    xv[i] = W::template q<V>(wr[i], t, h);
                    if constexpr (q8 && vnni) xv[i] = V::flip(xv[i]);
                }
                for (int j = 0; j < RN; ++j) {
                    const vi yv = V::load(yg + static_cast<std::size_t>(j) * ys + static_cast<std::size_t>(t * 64 + h * step));
                    for (int i = 0; i < RM; ++i) {
                        if constexpr (sign_path)
                            acc[i][j] = V::dpbusd(acc[i][j], V::abs8(xv[i]), V::sign8(yv, xv[i]));
                        else
                            acc[i][j] = V::dpbusd(acc[i][j], xv[i], yv);
                    }
                }
            }
            vf xd[RM];
            for (int i = 0; i < RM; ++i) xd[i] = W::template d<V>(wr[i], h);
            for (int j = 0; j < RN; ++j) {
                const vf yd = V::loadf(yg + static_cast<std::size_t>(j) * ys + qgemm_act32.dy + h * step);
                for (int i = 0; i < RM; ++i) f[i][j] = V::fma(acc[i][j], V::mul(xd[i], yd), f[i][j]);
            }
        }
    }
    for (int j = 0; j < RN; ++j)
        for (int i = 0; i < RM; ++i)
            if (i < rows) out[static_cast<std::size_t>(j) * ldo + static_cast<std::size_t>(i)] = V::hsum(f[i][j]);
}

// A tile of min(4, cols) columns.
template <class A, class V, class B, int RM, class W>
TESSERA_ALWAYS_INLINE void qgemm_tile_n(std::int64_t cols, std::int64_t ng, W w, const std::byte* y, std::size_t ys,
                                        float* out, std::size_t ldo, std::int64_t rows) {
    switch (cols) {
        case 1: qgemm_tile<A, V, B, RM, 1>(ng, w, y, ys, out, ldo, rows); break;
        case 2: qgemm_tile<A, V, B, RM, 2>(ng, w, y, ys, out, ldo, rows); break;
        case 3: qgemm_tile<A, V, B, RM, 3>(ng, w, y, ys, out, ldo, rows); break;
        default: qgemm_tile<A, V, B, RM, 4>(ng, w, y, ys, out, ldo, rows); break;
    }
}

// Rows [0, pr) of a panel in repacked quads (quad bytes apart, from x) times n columns:
// the column tiles outside, so the panel's records stay in L1/L2 across the columns.
template <class A, class V, class B, int RM>
TESSERA_ALWAYS_INLINE void qgemm_r4_sweep(std::int64_t ng, const std::byte* x, std::size_t quad, std::int64_t pr, std::int64_t n,
                                          const std::byte* y, std::size_t ys, float* out, std::size_t ldo) {
    for (std::int64_t c = 0; c < n; c += qgemm_rn) {
        const std::byte* yc = y + static_cast<std::size_t>(c) * ys;
        for (std::int64_t r = 0; r < pr; r += RM) {
            const w_rows4<B> wr{x + static_cast<std::size_t>(r / 4) * quad, static_cast<int>(r % 4)};
            qgemm_tile_n<A, V, B, RM>(n - c, ng, wr, yc, ys, out + static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r), ldo,
                                      pr - r);
        }
    }
}
template <class A, class V, class B>
TESSERA_ALWAYS_INLINE void qgemm_r4_panel(std::int64_t ng, const std::byte* x, std::size_t quad, std::int64_t pr, std::int64_t n,
                                          const std::byte* y, std::size_t ys, float* out, std::size_t ldo) {
    if (n < qgemm_rn)
        qgemm_r4_sweep<A, V, B, qgemm_rm_narrow>(ng, x, quad, pr, n, y, ys, out, ldo);
    else
        qgemm_r4_sweep<A, V, B, qgemm_rm>(ng, x, quad, pr, n, y, ys, out, ldo);
}

// Plain rows: each panel of 16 rows is repacked into the work buffer, then swept.
template <class A, class V, class B>
void qgemm_wide(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
                float* out, std::size_t ldo, std::byte* work) {
    const std::int64_t ng = qgemm_groups(k);
    const std::size_t quad = static_cast<std::size_t>(4 * ng) * w_rows4<B>::rec_bytes;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t p0 = 0; p0 < m; p0 += qgemm_panel) {
        const std::int64_t pr = m - p0 < qgemm_panel ? m - p0 : qgemm_panel;
        qgemm_pack_w<A>(k, pr, reinterpret_cast<const B*>(xb + static_cast<std::size_t>(p0) * xs), xs, work);
        qgemm_r4_panel<A, V, B>(ng, work, quad, pr, n, y, ys, out + p0, ldo);
    }
}

// m rows (m % 4 == 0) of a repacked matrix, 16 rows (four quads) per sweep over the columns.
template <class A, class V, class B>
void qgemm_rows4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
                 float* out, std::size_t ldo) {
    const std::int64_t ng = qgemm_groups(k);
    const std::size_t quad = static_cast<std::size_t>(4 * ng) * w_rows4<B>::rec_bytes;
    for (std::int64_t p0 = 0; p0 < m; p0 += qgemm_panel) {
        const std::int64_t pr = m - p0 < qgemm_panel ? m - p0 : qgemm_panel;
        qgemm_r4_panel<A, V, B>(ng, x + static_cast<std::size_t>(p0 / 4) * quad, quad, pr, n, y, ys, out + p0, ldo);
    }
}

// Repacked weights (rows4_x16): the scalar definition reads the records element by element.
template <class A, class B>
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
              float* out, std::size_t ldo, simd::requires_arch<simd::scalar>) {
    using W = w_rows4<B>;
    const std::int64_t nb = k / 32;
    const std::size_t quad = static_cast<std::size_t>(4 * qgemm_groups(k)) * W::rec_bytes;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t c = 0; c < n; ++c) {
        const auto* yr = reinterpret_cast<const unsigned char*>(y) + static_cast<std::size_t>(c) * ys;
        for (std::int64_t r = 0; r < m; ++r) {
            float sum = 0.0f;
            for (std::int64_t b = 0; b < nb; ++b) {
                const unsigned char* rec = xb + static_cast<std::size_t>(r / 4) * quad +
                                           static_cast<std::size_t>((b / qgemm_group) * 4 + r % 4) * W::rec_bytes;
                const unsigned char* g = yr + static_cast<std::size_t>(b / qgemm_group) * qgemm_act_group_bytes;
                const auto l = static_cast<std::size_t>(b % qgemm_group);
                int isum = 0;
                for (int e = 0; e < 32; ++e) {
                    const auto yq = static_cast<std::int8_t>(g[static_cast<std::size_t>(e / 4) * 64 + l * 4 + static_cast<std::size_t>(e % 4)]);
                    int xq;
                    if constexpr (W::q4) {
                        const unsigned char v = rec[static_cast<std::size_t>(e % 16 / 4) * 64 + l * 4 + static_cast<std::size_t>(e % 4)];
                        xq = (e < 16 ? v & 15 : v >> 4) - 8;
                    } else {
                        xq = static_cast<std::int8_t>(rec[static_cast<std::size_t>(e / 4) * 64 + l * 4 + static_cast<std::size_t>(e % 4)]);
                    }
                    isum += xq * yq;
                }
                std::uint16_t dx;
                std::memcpy(&dx, rec + W::qbytes + 2 * l, 2);
                float dy;
                std::memcpy(&dy, g + qgemm_act32.dy + 4 * l, 4);
                sum += (h2f_bits<A>(dx) * dy) * static_cast<float>(isum);
            }
            out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)] = sum;
        }
    }
}

// ---- q4_K x q8_K ------------------------------------------------------------------------
// Per lane (sub-block j of a super-block with scales d, dmin, 6-bit sc_j, m_j) and column
// (activation scale dy, quants yq, bsum_j = sum of the lane's 32 yq):
//   term = float(s_j) * ((d * sc_j) * dy)  -  (dmin * m_j) * (dy * bsum_j),
//   s_j = sum_e q_e * yq_e  (nibbles q in 0..15: exact in i32, one vpdpbusd chain),
// d * sc_j and dmin * m_j being exact in f32 (11 x 6 significant bits). The output is the
// f32 sum of the terms of every lane; the scalar kernels add them lane by lane in row
// order, the wide ones lane-parallel (per-lane FMAs, a horizontal sum at the end).
//
// Weight access, as w_panel / w_rows4 for q4_0: rec(i, g) is row i's record of group g;
// q<V>(rec, s, h) the nibble chunk s (bytes s*64.., half h); scales<V>(rec, h, sf, mf) the
// f32 lanes d * sc and dmin * m. Both layouts share the nibble order of repack.hpp.
struct w_k4_panel {  // qgemm_pack_w_k4's panel: nibbles, then d*sc and dmin*m as f32 lanes
    const std::byte* w;
    std::size_t w_row;
    TESSERA_ALWAYS_INLINE const std::byte* rec(int i, std::int64_t g) const {
        return w + static_cast<std::size_t>(i) * w_row + static_cast<std::size_t>(g) * qgemm_k4_w_group_bytes;
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE void scales(const std::byte* r, int h, typename V::vf& sf, typename V::vf& mf) {
        sf = V::loadf(r + 256 + static_cast<std::size_t>(h * (64 / V::halves)));
        mf = V::loadf(r + 320 + static_cast<std::size_t>(h * (64 / V::halves)));
    }
};
struct w_k4_rows4 {  // one quad of a repacked q4_K matrix (296-byte records)
    static constexpr std::size_t rec_bytes = 296;
    const std::byte* quad;
    int first = 0;  // the tile's first row in the quad
    TESSERA_ALWAYS_INLINE const std::byte* rec(int i, std::int64_t g) const {
        return quad + (static_cast<std::size_t>(g) * 4 + static_cast<std::size_t>(first + i)) * rec_bytes;
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE void scales(const std::byte* r, int h, typename V::vf& sf, typename V::vf& mf) {
        using A = typename V::arch;
        std::uint16_t d[4];
        std::memcpy(d, r + 288, 8);
        const auto lane0 = static_cast<std::size_t>(h * (16 / V::halves));
        sf = V::mul(V::load_u8(r + 256 + lane0), V::pair(h2f_bits<A>(d[0]), h2f_bits<A>(d[1]), h));
        mf = V::mul(V::load_u8(r + 272 + lane0), V::pair(h2f_bits<A>(d[2]), h2f_bits<A>(d[3]), h));
    }
};
// The nibble chunk s of a record (either layout) as the two x16 vectors of chunks t = 2s
// (xa) and 2s + 1 (xb): slot 2p holds the pair's bytes e = 8s..8s+3, slot 2p + 1 bytes
// 8s+4..8s+7; lane 2p's elements are their low nibbles, lane 2p + 1's the high ones.
//   xa = slot 2p: low nibbles of slot 2p, slot 2p+1: high nibbles of slot 2p+1
//   xb = the other two, swapped into their lanes' slots
template <class V>
TESSERA_ALWAYS_INLINE void k4_split(const std::byte* r, int s, int h, typename V::vi& xa, typename V::vi& xb) {
    const typename V::vi v = V::load(r + static_cast<std::size_t>(s * 64 + h * (64 / V::halves)));
    const typename V::vi lo = V::lo4(v), hi = V::hi4(v);
    xa = V::blend_odd(lo, hi);
    xb = V::swap_pairs(V::blend_odd(hi, lo));
}

// Rows [0, rows) of q4_K x (rows <= qgemm_panel) into the panel layout; rows past `rows`
// and lanes past k / 32 are zero.
template <class A>
void qgemm_pack_w_k4(std::int64_t k, std::int64_t rows, const qg::block_q4_K* x, std::size_t xs, std::byte* w) {
    const std::int64_t nsb = k / 256, ng = qgemm_groups(k);
    const std::size_t row_bytes = static_cast<std::size_t>(ng) * qgemm_k4_w_group_bytes;
    std::memset(w, 0, static_cast<std::size_t>(qgemm_panel) * row_bytes);
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto* xr = reinterpret_cast<const qg::block_q4_K*>(xb + static_cast<std::size_t>(r) * xs);
        std::byte* wr = w + static_cast<std::size_t>(r) * row_bytes;
        for (std::int64_t b = 0; b < nsb; ++b) {
            std::byte* g = wr + static_cast<std::size_t>(b / 2) * qgemm_k4_w_group_bytes;
            const int h = static_cast<int>(b % 2);
            for (int c = 0; c < 4; ++c)
                for (int s = 0; s < 4; ++s) std::memcpy(g + s * 64 + 8 * (4 * h + c), xr[b].qs + 32 * c + 8 * s, 8);
            const float d = h2f<A>(xr[b].d), dmin = h2f<A>(xr[b].dmin);
            for (int j = 0; j < 8; ++j) {
                std::uint8_t sc, mn;
                scale_min_k4<A>(j, xr[b].scales, sc, mn);
                const float sf = d * static_cast<float>(sc), mf = dmin * static_cast<float>(mn);
                std::memcpy(g + 256 + 4 * (8 * h + j), &sf, 4);
                std::memcpy(g + 320 + 4 * (8 * h + j), &mf, 4);
            }
        }
    }
}

template <class A, class V, int RM, int RN, class W>
TESSERA_ALWAYS_INLINE void qgemm_tile_k4(std::int64_t ng, W w, const std::byte* y, std::size_t ys, float* out, std::size_t ldo,
                                         std::int64_t rows) {
    using vi = typename V::vi;
    using vf = typename V::vf;
    constexpr int step = 64 / V::halves;
    vf f[RM][RN];
    for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) f[i][j] = V::zerof();
    for (std::int64_t g = 0; g < ng; ++g) {
        const std::byte* wr[RM];
        for (int i = 0; i < RM; ++i) wr[i] = w.rec(i, g);
        const std::byte* yg = y + static_cast<std::size_t>(g) * qgemm_act_group_bytes;
        for (int h = 0; h < V::halves; ++h) {
            vi acc[RM][RN];
            for (int i = 0; i < RM; ++i)
                for (int j = 0; j < RN; ++j) acc[i][j] = V::zero();
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {
                vi xa[RM], xb[RM];
                for (int i = 0; i < RM; ++i) k4_split<V>(wr[i], s, h, xa[i], xb[i]);
                for (int j = 0; j < RN; ++j) {
                    const std::byte* yj = yg + static_cast<std::size_t>(j) * ys + static_cast<std::size_t>(h * step);
                    const vi ya = V::load(yj + static_cast<std::size_t>(2 * s * 64));
                    const vi yb = V::load(yj + static_cast<std::size_t>((2 * s + 1) * 64));
                    for (int i = 0; i < RM; ++i) acc[i][j] = V::dpbusd(V::dpbusd(acc[i][j], xa[i], ya), xb[i], yb);
                }
            }
            vf sf[RM], mf[RM];
            for (int i = 0; i < RM; ++i) W::template scales<V>(wr[i], h, sf[i], mf[i]);
            for (int j = 0; j < RN; ++j) {
                const std::byte* yj = yg + static_cast<std::size_t>(j) * ys + static_cast<std::size_t>(h * step);
                const vf yd = V::loadf(yj + qgemm_act32.dy), yb = V::loadf(yj + qgemm_act32.bs);
                for (int i = 0; i < RM; ++i) f[i][j] = V::fnmadd(mf[i], yb, V::fma(acc[i][j], V::mul(sf[i], yd), f[i][j]));
            }
        }
    }
    for (int j = 0; j < RN; ++j)
        for (int i = 0; i < RM; ++i)
            if (i < rows) out[static_cast<std::size_t>(j) * ldo + static_cast<std::size_t>(i)] = V::hsum(f[i][j]);
}
template <class A, class V, int RM, class W>
TESSERA_ALWAYS_INLINE void qgemm_tile_k4_n(std::int64_t cols, std::int64_t ng, W w, const std::byte* y, std::size_t ys,
                                           float* out, std::size_t ldo, std::int64_t rows) {
    switch (cols) {
        case 1: qgemm_tile_k4<A, V, RM, 1>(ng, w, y, ys, out, ldo, rows); break;
        case 2: qgemm_tile_k4<A, V, RM, 2>(ng, w, y, ys, out, ldo, rows); break;
        case 3: qgemm_tile_k4<A, V, RM, 3>(ng, w, y, ys, out, ldo, rows); break;
        default: qgemm_tile_k4<A, V, RM, 4>(ng, w, y, ys, out, ldo, rows); break;
    }
}

// Rows [0, pr) of a panel times n columns; w_at(r) gives row r's weight access.
template <class A, class V, int RM, class F>
TESSERA_ALWAYS_INLINE void qgemm_k4_sweep(std::int64_t ng, F w_at, std::int64_t pr, std::int64_t n, const std::byte* y, std::size_t ys,
                                          float* out, std::size_t ldo) {
    for (std::int64_t c = 0; c < n; c += qgemm_rn) {
        const std::byte* yc = y + static_cast<std::size_t>(c) * ys;
        for (std::int64_t r = 0; r < pr; r += RM)
            qgemm_tile_k4_n<A, V, RM>(n - c, ng, w_at(r), yc, ys, out + static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r), ldo,
                                      pr - r);
    }
}
template <class A, class V, class F>
TESSERA_ALWAYS_INLINE void qgemm_k4_panel(std::int64_t ng, F w_at, std::int64_t pr, std::int64_t n, const std::byte* y, std::size_t ys,
                                          float* out, std::size_t ldo) {
    if (n < qgemm_rn)
        qgemm_k4_sweep<A, V, qgemm_rm_narrow>(ng, w_at, pr, n, y, ys, out, ldo);
    else
        qgemm_k4_sweep<A, V, qgemm_rm>(ng, w_at, pr, n, y, ys, out, ldo);
}

template <class A, class V>
void qgemm_k4_wide(std::int64_t k, std::int64_t m, std::int64_t n, const qg::block_q4_K* x, std::size_t xs,
                   const std::byte* y, std::size_t ys, float* out, std::size_t ldo, std::byte* work) {
    const std::int64_t ng = qgemm_groups(k);
    const std::size_t w_row = static_cast<std::size_t>(ng) * qgemm_k4_w_group_bytes;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t p0 = 0; p0 < m; p0 += qgemm_panel) {
        const std::int64_t pr = m - p0 < qgemm_panel ? m - p0 : qgemm_panel;
        qgemm_pack_w_k4<A>(k, pr, reinterpret_cast<const qg::block_q4_K*>(xb + static_cast<std::size_t>(p0) * xs), xs, work);
        const auto w_at = [&](std::int64_t r) { return w_k4_panel{work + static_cast<std::size_t>(r) * w_row, w_row}; };
        qgemm_k4_panel<A, V>(ng, w_at, pr, n, y, ys, out + p0, ldo);
    }
}
template <class A, class V>
void qgemm_k4_rows4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
                    float* out, std::size_t ldo) {
    const std::int64_t ng = qgemm_groups(k);
    const std::size_t quad = static_cast<std::size_t>(4 * ng) * w_k4_rows4::rec_bytes;
    for (std::int64_t p0 = 0; p0 < m; p0 += qgemm_panel) {
        const std::int64_t pr = m - p0 < qgemm_panel ? m - p0 : qgemm_panel;
        const auto w_at = [&](std::int64_t r) {
            return w_k4_rows4{x + static_cast<std::size_t>((p0 + r) / 4) * quad, static_cast<int>(r % 4)};
        };
        qgemm_k4_panel<A, V>(ng, w_at, pr, n, y, ys, out + p0, ldo);
    }
}

// The scalar definitions: plain blocks, and the repacked records read byte by byte. Both
// add the same f32 terms in the same order, so they give the same bits.
template <class A>
TESSERA_ALWAYS_INLINE float k4_term(int isum, float sf, float mf, const unsigned char* g, std::size_t l) {
    float dy, bs;
    std::memcpy(&dy, g + qgemm_act32.dy + 4 * l, 4);
    std::memcpy(&bs, g + qgemm_act32.bs + 4 * l, 4);
    return static_cast<float>(isum) * (sf * dy) - mf * bs;
}
template <class A>
TESSERA_ALWAYS_INLINE int k4_act(const unsigned char* g, int l, int e) {  // element e of lane l
    const int t = 2 * (e / 8) + (((e / 4) % 2) ^ (l % 2));
    return static_cast<std::int8_t>(g[t * 64 + l * 4 + e % 4]);
}
template <class A>
void qgemm_k4(std::int64_t k, std::int64_t m, std::int64_t n, const qg::block_q4_K* x, std::size_t xs, const std::byte* y,
              std::size_t ys, float* out, std::size_t ldo, std::byte*, simd::requires_arch<simd::scalar>) {
    const std::int64_t nsb = k / 256;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t c = 0; c < n; ++c) {
        const auto* yr = reinterpret_cast<const unsigned char*>(y) + static_cast<std::size_t>(c) * ys;
        for (std::int64_t r = 0; r < m; ++r) {
            const auto* xr = reinterpret_cast<const qg::block_q4_K*>(xb + static_cast<std::size_t>(r) * xs);
            float sum = 0.0f;
            for (std::int64_t b = 0; b < nsb; ++b) {
                const unsigned char* g = yr + static_cast<std::size_t>(b / 2) * qgemm_act_group_bytes;
                for (int j = 0; j < 8; ++j) {
                    const int l = 8 * static_cast<int>(b % 2) + j;
                    int isum = 0;
                    for (int e = 0; e < 32; ++e) isum += ((xr[b].qs[32 * (j / 2) + e] >> (4 * (j % 2))) & 15) * k4_act<A>(g, l, e);
                    std::uint8_t sc, mn;
                    scale_min_k4<A>(j, xr[b].scales, sc, mn);
                    sum += k4_term<A>(isum, h2f<A>(xr[b].d) * static_cast<float>(sc), h2f<A>(xr[b].dmin) * static_cast<float>(mn), g,
                                      static_cast<std::size_t>(l));
                }
            }
            out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)] = sum;
        }
    }
}
template <class A>
void qgemm_k4_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
                 float* out, std::size_t ldo, simd::requires_arch<simd::scalar>) {
    const std::int64_t nsb = k / 256;
    const std::size_t quad = static_cast<std::size_t>(4 * qgemm_groups(k)) * w_k4_rows4::rec_bytes;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t c = 0; c < n; ++c) {
        const auto* yr = reinterpret_cast<const unsigned char*>(y) + static_cast<std::size_t>(c) * ys;
        for (std::int64_t r = 0; r < m; ++r) {
            float sum = 0.0f;
            for (std::int64_t b = 0; b < nsb; ++b) {
                const unsigned char* rec = xb + static_cast<std::size_t>(r / 4) * quad +
                                           static_cast<std::size_t>((b / 2) * 4 + r % 4) * w_k4_rows4::rec_bytes;
                const unsigned char* g = yr + static_cast<std::size_t>(b / 2) * qgemm_act_group_bytes;
                const auto h = static_cast<std::size_t>(b % 2);
                std::uint16_t d, dmin;
                std::memcpy(&d, rec + 288 + 2 * h, 2);
                std::memcpy(&dmin, rec + 292 + 2 * h, 2);
                for (int j = 0; j < 8; ++j) {
                    const int l = 8 * static_cast<int>(h) + j;
                    int isum = 0;
                    for (int e = 0; e < 32; ++e)
                        isum += ((rec[(e / 8) * 64 + 8 * (l / 2) + e % 8] >> (4 * (l % 2))) & 15) *
                                k4_act<A>(g, l, e);
                    sum += k4_term<A>(isum, h2f_bits<A>(d) * static_cast<float>(rec[256 + l]),
                                      h2f_bits<A>(dmin) * static_cast<float>(rec[272 + l]), g, static_cast<std::size_t>(l));
                }
            }
            out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)] = sum;
        }
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/gemm.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

// Repacked weights: gemm_<T>_rows4<A>(k, m, const std::byte* x_repacked (the quads of the
// m rows, m % 4 == 0), n, y_packed, y_stride, out, ldo); no work buffer.
#define TESSERA_QGEMM_R4_KERNEL_(T, ...)                                                                       \
    template <class A>                                                                                       \
    struct gemm_##T##_rows4 {                                                                                \
        void operator()(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, \
                        std::size_t y_stride, float* out, std::size_t ldo) const;                            \
    };                                                                                                       \
    template <class A>                                                                                       \
    void gemm_##T##_rows4<A>::operator()(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, \
                                         const std::byte* y, std::size_t y_stride, float* out, std::size_t ldo) const { \
        qdetail::__VA_ARGS__(k, m, n, x, y, y_stride, out, ldo, A{});                                        \
    }                                                                                                        \
    TESSERA_KERNEL(gemm_##T##_rows4)

TESSERA_QGEMM_R4_KERNEL_(q4_0, qgemm_r4<A, quant::block_q4_0>);
TESSERA_QGEMM_R4_KERNEL_(q8_0, qgemm_r4<A, quant::block_q8_0>);
TESSERA_QGEMM_R4_KERNEL_(q4_K, qgemm_k4_r4<A>);
#undef TESSERA_QGEMM_R4_KERNEL_

// gemm_<T>: the kernel struct of block type T over qdetail::F (also used by gemm_lanes.hpp).
#define TESSERA_QGEMM_KERNEL(T, F)                                                                           \
    template <class A>                                                                                       \
    struct gemm_##T {                                                                                        \
        void operator()(std::int64_t k, std::int64_t m, std::int64_t n, const quant::block_##T* x,           \
                        std::size_t x_stride, const std::byte* y, std::size_t y_stride, float* out,          \
                        std::size_t ldo, std::byte* work) const;                                             \
    };                                                                                                       \
    template <class A>                                                                                       \
    void gemm_##T<A>::operator()(std::int64_t k, std::int64_t m, std::int64_t n, const quant::block_##T* x,  \
                                 std::size_t x_stride, const std::byte* y, std::size_t y_stride, float* out, \
                                 std::size_t ldo, std::byte* work) const {                                   \
        qdetail::F<A>(k, m, n, x, x_stride, y, y_stride, out, ldo, work, A{});                               \
    }                                                                                                        \
    TESSERA_KERNEL(gemm_##T)

TESSERA_QGEMM_KERNEL(q4_0, qgemm);
TESSERA_QGEMM_KERNEL(q8_0, qgemm);
TESSERA_QGEMM_KERNEL(q4_K, qgemm_k4);

}  // namespace kernels
TESSERA_END_NAMESPACE
