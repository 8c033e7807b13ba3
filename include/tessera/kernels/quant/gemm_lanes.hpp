// The packed GEMM of every other block type with a vec_dot (mul_mat with many columns):
// q4_1, q5_0, q5_1, q8_1, iq4_nl, mxfp4 (x q8_0 / q8_1), q2_K, q3_K, q5_K, q6_K, iq4_xs,
// tq1_0, tq2_0 (x q8_K), through one tile kernel (table.hpp lists them by type with
// gemm.hpp's q4_0 / q8_0 / q4_K).
//
// The lane scheme. A block type is described by its lane codec (lane_codec<B>): a lane
// is a run of `lane` (32 or 16) elements with one scale; a block decodes into unsigned
// bytes u = w + off (w the integer weight) plus f32 coefficients a (the scale) and, for
// types with a min, b per lane, such that the type's dot product with its partner is
//
//   sum over lanes j of  a_j * dy_j * S_j  +  b_j * bs_j,
//   S_j = sum_e u_e * y_e  -  off * isum_j       (exact in i32)
//
// with dy_j, isum_j (the sum of the lane's activation quants) and bs_j (dy_j * isum_j, or
// q8_1's stored s) from the packed activations (gemm.hpp's qgemm_pack_act). S_j is one
// vpdpbusd chain per lane in the x16 layout (16 lanes per vector), started at
// -off * isum_j; a * dy and b * bs are two FMAs per 16 lanes. Products a = d * sc are
// exact in f32 (an f16 times a scale of at most 8 bits).
//
// Weights are decoded one 16-row panel at a time into the work buffer (a record per group
// of 16 lanes: the u bytes in x16 order, then a[16], then b[16] for types with a min) and
// reused for every column; the decoders are plain loops over one block, vectorized by the
// compiler in each arch unit.
//
// Saturation: without VNNI, vpmaddubsw adds two u8 x s8 products in i16; the activations
// are within +-127 and the offset types keep u <= 63 (2 * 63 * 127 < 2^15). The types
// whose values need all of int8 (iq4_nl, iq4_xs: table values -127..113; q8_1) are `wide`:
// with VNNI their panel holds w ^ 0x80 = w + 128 (off = 128); without, it holds w and the
// tile moves w's sign onto the activations (|w| <= 128 against |y| <= 127).
//
// Paths: scalar (the definition: lane terms in row order), avx2 (256-bit, half a group
// per vector), avx512bw / avx512vnni (512-bit, dpbusd512); the x86 decoders, transpose
// and arch bindings are in kernels/x86/quant/gemm_lanes.hpp. Integer parts are exact on
// every arch; only the order of the f32 sums of the lane terms differs.
//
// Kernels: gemm_<T><A>(k, m, n, const block_T* x, x_stride_bytes, y_packed, y_stride,
// out, ldo, work), work: qgemm_work_bytes(T, k) bytes, 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/kernels/quant/dequant.hpp"
#include "tessera/kernels/quant/gemm.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

// ---- lane codecs -----------------------------------------------------------------------
// lane_codec<B>: lane (elements per lane), off (u = w + off; 0: u = w >= 0), wide (w
// needs all of int8, see above), min (lanes have a second coefficient b), and
// decode<A>(block, u[block_size], a[block_size / lane], b[...]) writing the block's
// elements in order.
template <class B>
struct lane_codec;

// Decoding helpers of the 32-element blocks (16 bytes of nibbles in q4_0 order: byte j
// holds element j low, j + 16 high), and the transpose of a group of lanes into the x16
// order. These are the scalar bodies; the x86 file (kernels/x86/quant/gemm_lanes.hpp)
// adds AVX2 decoders (one 256-bit vector per block: one store, which the panel packer's
// word loads are forwarded from) and an AVX-512 transpose.
template <class A>
TESSERA_ALWAYS_INLINE void split_nibbles(const std::uint8_t* qs, std::uint8_t* u, bool fifth, const std::uint8_t* qh,
                                         simd::requires_arch<simd::scalar>) {
    for (int j = 0; j < 16; ++j) {
        u[j] = qs[j] & 15;
        u[j + 16] = static_cast<std::uint8_t>(qs[j] >> 4);
    }
    if (fifth) {
        std::uint32_t h;
        std::memcpy(&h, qh, 4);
        for (int j = 0; j < 32; ++j) u[j] = static_cast<std::uint8_t>(u[j] | (((h >> j) & 1) << 4));
    }
}
template <class A>
TESSERA_ALWAYS_INLINE void lookup_nibbles(const std::uint8_t* qs, const std::int8_t* table, int bias, std::uint8_t* u,
                                          simd::requires_arch<simd::scalar>) {
    for (int j = 0; j < 16; ++j) {
        u[j] = static_cast<std::uint8_t>(table[qs[j] & 15] + bias);
        u[j + 16] = static_cast<std::uint8_t>(table[qs[j] >> 4] + bias);
    }
}
// 16 lanes of 4w bytes each, lane after lane (in), into the x16 order (out: w chunks of
// 64 bytes, chunk t = word t of every lane), each word xor `flip`: a 16 x w transpose of
// 32-bit words, word by word.
template <class A, int W>
TESSERA_ALWAYS_INLINE void lanes_to_x16(const std::uint8_t* in, std::byte* out, std::uint32_t flip,
                                        simd::requires_arch<simd::scalar>) {
    for (int l = 0; l < 16; ++l)
        for (int t = 0; t < W; ++t) {
            std::uint32_t v;
            std::memcpy(&v, in + 4 * (W * l + t), 4);
            v ^= flip;
            std::memcpy(out + 64 * t + 4 * l, &v, 4);
        }
}

// The wide GEMM over the vector traits V (defined below), which the ISA files bind to
// their arches.
template <class A, class V, class B>
void lane_gemm_wide(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
                    float* out, std::size_t ldo, std::byte* work);

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/gemm_lanes.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

template <class A>
TESSERA_ALWAYS_INLINE void split_nibbles(const std::uint8_t* qs, std::uint8_t* u, bool fifth = false, const std::uint8_t* qh = nullptr) {
    split_nibbles<A>(qs, u, fifth, qh, A{});
}
template <class A>
TESSERA_ALWAYS_INLINE void lookup_nibbles(const std::uint8_t* qs, const std::int8_t* table, int bias, std::uint8_t* u) {
    lookup_nibbles<A>(qs, table, bias, u, A{});
}
template <class A, int W>
TESSERA_ALWAYS_INLINE void lanes_to_x16(const std::uint8_t* in, std::byte* out, std::uint32_t flip) {
    static_assert(W == 4 || W == 8);
    lanes_to_x16<A, W>(in, out, flip, A{});
}

template <>
struct lane_codec<quant::block_q4_1> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q4_1& x, std::uint8_t* u, float* a, float* b) {
        split_nibbles<A>(x.qs, u);
        a[0] = h2f<A>(x.d);
        b[0] = h2f<A>(x.m);
    }
};
template <>
struct lane_codec<quant::block_q5_0> {
    static constexpr int lane = 32, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q5_0& x, std::uint8_t* u, float* a, float*) {
        split_nibbles<A>(x.qs, u, true, x.qh);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<quant::block_q5_1> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q5_1& x, std::uint8_t* u, float* a, float* b) {
        split_nibbles<A>(x.qs, u, true, x.qh);
        a[0] = h2f<A>(x.d);
        b[0] = h2f<A>(x.m);
    }
};
template <>
struct lane_codec<quant::block_q8_1> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q8_1& x, std::uint8_t* u, float* a, float*) {
        std::memcpy(u, x.qs, 32);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<quant::block_iq4_nl> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_iq4_nl& x, std::uint8_t* u, float* a, float*) {
        lookup_nibbles<A>(x.qs, tables<A>::iq4nl, 0, u);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<quant::block_mxfp4> {  // doubled e2m1 values -12..12, + 16
    static constexpr int lane = 32, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_mxfp4& x, std::uint8_t* u, float* a, float*) {
        lookup_nibbles<A>(x.qs, tables<A>::mxfp4, off, u);
        a[0] = e8m0_half<A>(x.e);
    }
};
template <>
struct lane_codec<quant::block_q2_K> {  // 16 lanes of 16: 2-bit q, scale and min nibbles
    static constexpr int lane = 16, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q2_K& x, std::uint8_t* u, float* a, float* b) {
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 4; ++s)
                for (int l = 0; l < 32; ++l) u[128 * h + 32 * s + l] = (x.qs[32 * h + l] >> (2 * s)) & 3;
        const float d = h2f<A>(x.d), dmin = h2f<A>(x.dmin);
        for (int j = 0; j < 16; ++j) {
            a[j] = d * static_cast<float>(x.scales[j] & 15);
            b[j] = -(dmin * static_cast<float>(x.scales[j] >> 4));
        }
    }
};
template <>
struct lane_codec<quant::block_q3_K> {  // 16 lanes of 16: w = q2 + 4 * hbit - 4
    static constexpr int lane = 16, off = 4;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q3_K& x, std::uint8_t* u, float* a, float*) {
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 4; ++s)
                for (int l = 0; l < 32; ++l)
                    u[128 * h + 32 * s + l] =
                        static_cast<std::uint8_t>(((x.qs[32 * h + l] >> (2 * s)) & 3) | (((x.hmask[l] >> (4 * h + s)) & 1) << 2));
        std::int8_t sc[16];
        q3k_scales<A>(x.scales, sc);
        const float d = h2f<A>(x.d);
        for (int j = 0; j < 16; ++j) a[j] = d * static_cast<float>(sc[j]);
    }
};
template <>
struct lane_codec<quant::block_q5_K> {  // 8 lanes of 32: 5-bit q, 6-bit scales and mins
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q5_K& x, std::uint8_t* u, float* a, float* b) {
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) {
                u[64 * j + l] = static_cast<std::uint8_t>((x.qs[32 * j + l] & 15) | (((x.qh[l] >> (2 * j)) & 1) << 4));
                u[64 * j + 32 + l] = static_cast<std::uint8_t>((x.qs[32 * j + l] >> 4) | (((x.qh[l] >> (2 * j + 1)) & 1) << 4));
            }
        const float d = h2f<A>(x.d), dmin = h2f<A>(x.dmin);
        for (int j = 0; j < 8; ++j) {
            std::uint8_t sc, mn;
            scale_min_k4<A>(j, x.scales, sc, mn);
            a[j] = d * static_cast<float>(sc);
            b[j] = -(dmin * static_cast<float>(mn));
        }
    }
};
template <>
struct lane_codec<quant::block_q6_K> {  // 16 lanes of 16: 6-bit q - 32, int8 scales
    static constexpr int lane = 16, off = 32;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_q6_K& x, std::uint8_t* u, float* a, float*) {
        for (int h = 0; h < 2; ++h) {
            const std::uint8_t* ql = x.ql + 64 * h;
            const std::uint8_t* qh = x.qh + 32 * h;
            std::uint8_t* o = u + 128 * h;
            for (int l = 0; l < 32; ++l) {
                o[l] = static_cast<std::uint8_t>((ql[l] & 15) | ((qh[l] & 3) << 4));
                o[l + 32] = static_cast<std::uint8_t>((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
                o[l + 64] = static_cast<std::uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
                o[l + 96] = static_cast<std::uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
            }
        }
        const float d = h2f<A>(x.d);
        for (int j = 0; j < 16; ++j) a[j] = d * static_cast<float>(x.scales[j]);
    }
};
template <>
struct lane_codec<quant::block_iq4_xs> {  // 8 lanes of 32: iq4_nl values, 6-bit scales - 32
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_iq4_xs& x, std::uint8_t* u, float* a, float*) {
        for (int ib = 0; ib < 8; ++ib) lookup_nibbles<A>(x.qs + 16 * ib, tables<A>::iq4nl, 0, u + 32 * ib);
        const float d = h2f<A>(x.d);
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((x.scales_h >> (2 * ib)) & 3) << 4);
            a[ib] = d * static_cast<float>(ls - 32);
        }
    }
};
template <>
struct lane_codec<quant::block_tq1_0> {  // 8 lanes of 32: trits 0..2, w = trit - 1
    static constexpr int lane = 32, off = 1;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_tq1_0& x, std::uint8_t* u, float* a, float*) {
        int k = 0;
        for (int t = 0; t < 5; ++t)
            for (int m = 0; m < 32; ++m) u[k++] = static_cast<std::uint8_t>(trit<A>(x.qs[m], t));
        for (int t = 0; t < 5; ++t)
            for (int m = 0; m < 16; ++m) u[k++] = static_cast<std::uint8_t>(trit<A>(x.qs[32 + m], t));
        for (int t = 0; t < 4; ++t)
            for (int m = 0; m < 4; ++m) u[k++] = static_cast<std::uint8_t>(trit<A>(x.qh[m], t));
        const float d = h2f<A>(x.d);
        for (int j = 0; j < 8; ++j) a[j] = d;
    }
};
template <>
struct lane_codec<quant::block_tq2_0> {  // 8 lanes of 32: 2-bit q, w = q - 1
    static constexpr int lane = 32, off = 1;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const quant::block_tq2_0& x, std::uint8_t* u, float* a, float*) {
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 4; ++s)
                for (int m = 0; m < 32; ++m) u[128 * h + 32 * s + m] = (x.qs[32 * h + m] >> (2 * s)) & 3;
        const float d = h2f<A>(x.d);
        for (int j = 0; j < 8; ++j) a[j] = d;
    }
};

// Record of one group of 16 lanes in the panel: u bytes (x16 order), a[16], b[16] if min.
template <class C>
inline constexpr std::size_t lane_rec_bytes = static_cast<std::size_t>(16 * C::lane) + 64 + (C::min ? 64 : 0);
// Whether the 512-bit VNNI tile runs (wide types then hold w + 128 and use offset 128).
template <class A, class V>
inline constexpr bool lane_vnni = V::vnni;
template <class C, bool vnni>
inline constexpr int lane_offset = C::wide ? (vnni ? 128 : 0) : C::off;
constexpr int lane_log2(int v) { return v <= 1 ? 0 : 1 + lane_log2(v / 2); }

// ---- scalar: the definition --------------------------------------------------------------
template <class A, class B>
void lane_gemm(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
               float* out, std::size_t ldo, std::byte*, simd::requires_arch<simd::scalar>) {
    using C = lane_codec<B>;
    constexpr int qk = static_cast<int>(quant::block_traits<B>::block_size), per = qk / C::lane;
    constexpr qgemm_act_layout lay = qgemm_act(C::lane);
    const std::int64_t nb = k / qk;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t c = 0; c < n; ++c) {
        const auto* yr = reinterpret_cast<const unsigned char*>(y) + static_cast<std::size_t>(c) * ys;
        for (std::int64_t r = 0; r < m; ++r) {
            const B* xr = reinterpret_cast<const B*>(xb + static_cast<std::size_t>(r) * xs);
            float sum = 0.0f;
            for (std::int64_t b = 0; b < nb; ++b) {
                std::uint8_t u[qk];
                float ca[per], cb[per] = {};
                C::template decode<A>(xr[b], u, ca, cb);
                for (int j = 0; j < per; ++j) {
                    const std::int64_t ln = b * per + j;
                    const unsigned char* g = yr + static_cast<std::size_t>(ln / qgemm_group) * lay.bytes;
                    const auto l = static_cast<std::size_t>(ln % qgemm_group);
                    int s = 0, isum;
                    for (int e = 0; e < C::lane; ++e) {
                        const auto yq = static_cast<std::int8_t>(g[static_cast<std::size_t>(e / 4) * 64 + l * 4 + static_cast<std::size_t>(e % 4)]);
                        const int w = C::wide ? static_cast<std::int8_t>(u[C::lane * j + e]) : u[C::lane * j + e];
                        s += w * yq;
                    }
                    float dy, bs;
                    std::memcpy(&dy, g + lay.dy + 4 * l, 4);
                    std::memcpy(&isum, g + lay.isum + 4 * l, 4);
                    std::memcpy(&bs, g + lay.bs + 4 * l, 4);
                    s -= C::off * isum;
                    sum += static_cast<float>(s) * (ca[j] * dy);
                    if constexpr (C::min) sum += cb[j] * bs;
                }
            }
            out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)] = sum;
        }
    }
}

// ---- wide bodies ---------------------------------------------------------------------------
// Rows [0, rows) of x (rows <= qgemm_panel) decoded into panel rows w_row bytes apart, a
// group (16 lanes: 16 blocks of 32, or one or two super-blocks) at a time; lanes past
// k / lane and the rows up to the next multiple of qgemm_rm are zero.
template <class A, class V, class B>
void lane_pack_w(std::int64_t k, std::int64_t rows, const B* x, std::size_t xs, std::byte* w, std::size_t w_row) {
    using C = lane_codec<B>;
    constexpr int qk = static_cast<int>(quant::block_traits<B>::block_size), per = qk / C::lane, blocks = qgemm_group / per;
    constexpr std::size_t rec = lane_rec_bytes<C>, qb = static_cast<std::size_t>(16 * C::lane);
    constexpr std::uint32_t flip = C::wide && lane_vnni<A, V> ? 0x80808080u : 0u;
    const std::int64_t nb = k / qk, ng = qgemm_groups(k, C::lane);
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t r = 0; r < (rows + qgemm_rm - 1) / qgemm_rm * qgemm_rm; ++r) {
        std::byte* row = w + static_cast<std::size_t>(r) * w_row;
        if (r >= rows) {
            std::memset(row, 0, w_row);
            continue;
        }
        const B* xr = reinterpret_cast<const B*>(xb + static_cast<std::size_t>(r) * xs);
        for (std::int64_t g = 0; g < ng; ++g) {
            alignas(64) std::uint8_t u[16 * C::lane];
            alignas(64) float ca[16], cb[16];
            const std::int64_t b0 = g * blocks;
            const int nbg = static_cast<int>(nb - b0 < blocks ? nb - b0 : blocks);
            for (int i = 0; i < nbg; ++i) C::template decode<A>(xr[b0 + i], u + qk * i, ca + per * i, cb + per * i);
            if (nbg < blocks) {  // padding lanes: zero bytes (w ^ flip for wide types: zero after the flip) and coefficients
                std::memset(u + qk * nbg, static_cast<int>(flip & 0xFF), static_cast<std::size_t>(qk * (blocks - nbg)));
                for (int l = per * nbg; l < 16; ++l) ca[l] = cb[l] = 0.0f;
            }
            std::byte* gr = row + static_cast<std::size_t>(g) * rec;
            lanes_to_x16<A, C::lane / 4>(u, gr, flip);
            std::memcpy(gr + qb, ca, 64);
            if constexpr (C::min) std::memcpy(gr + qb + 64, cb, 64);
        }
    }
}

// One RM x RN tile: panel rows w, w + w_row, ... (RM of them) x RN packed activation rows.
template <class A, class V, class C, int RN>
TESSERA_ALWAYS_INLINE void lane_tile(std::int64_t ng, const std::byte* w, std::size_t w_row, const std::byte* y, std::size_t ys,
                                     float* out, std::size_t ldo, std::int64_t rows) {
    constexpr int RM = qgemm_rm, T = C::lane / 4;
    constexpr bool vnni = lane_vnni<A, V>;
    constexpr bool sign_path = C::wide && !vnni;
    constexpr int off = lane_offset<C, vnni>, shift = lane_log2(off);
    static_assert(off == 0 || (1 << shift) == off, "offsets are powers of two");
    constexpr qgemm_act_layout lay = qgemm_act(C::lane);
    constexpr std::size_t rec = lane_rec_bytes<C>, qb = static_cast<std::size_t>(16 * C::lane);
    using vi = typename V::vi;
    using vf = typename V::vf;
    constexpr int step = 64 / V::halves;  // bytes per vector
    vf f[RM][RN];
    for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) f[i][j] = V::zerof();
    for (std::int64_t g = 0; g < ng; ++g) {
        const std::byte* wg = w + static_cast<std::size_t>(g) * rec;
        const std::byte* yg = y + static_cast<std::size_t>(g) * lay.bytes;
        for (int h = 0; h < V::halves; ++h) {
            const auto hs = static_cast<std::size_t>(h * step);
            vi acc[RM][RN];
            for (int j = 0; j < RN; ++j) {
                vi c0 = V::zero();
                if constexpr (off != 0) c0 = V::neg_shl(V::load(yg + static_cast<std::size_t>(j) * ys + lay.isum + hs), shift);
                for (int i = 0; i < RM; ++i) acc[i][j] = c0;
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                vi xv[RM];
                for (int i = 0; i < RM; ++i) xv[i] = V::load(wg + static_cast<std::size_t>(i) * w_row + static_cast<std::size_t>(t * 64) + hs);
                for (int j = 0; j < RN; ++j) {
                    const vi yv = V::load(yg + static_cast<std::size_t>(j) * ys + static_cast<std::size_t>(t * 64) + hs);
                    for (int i = 0; i < RM; ++i) {
                        if constexpr (sign_path)
                            acc[i][j] = V::dpbusd(acc[i][j], V::abs8(xv[i]), V::sign8(yv, xv[i]));
                        else
                            acc[i][j] = V::dpbusd(acc[i][j], xv[i], yv);
                    }
                }
            }
            vf xa[RM], xb[RM];
            for (int i = 0; i < RM; ++i) {
                xa[i] = V::loadf(wg + static_cast<std::size_t>(i) * w_row + qb + hs);
                if constexpr (C::min) xb[i] = V::loadf(wg + static_cast<std::size_t>(i) * w_row + qb + 64 + hs);
            }
            for (int j = 0; j < RN; ++j) {
                const std::byte* yj = yg + static_cast<std::size_t>(j) * ys;
                const vf yd = V::loadf(yj + lay.dy + hs);
                for (int i = 0; i < RM; ++i) f[i][j] = V::fma(acc[i][j], V::mul(xa[i], yd), f[i][j]);
                if constexpr (C::min) {
                    const vf yb = V::loadf(yj + lay.bs + hs);
                    for (int i = 0; i < RM; ++i) f[i][j] = V::fmadd(xb[i], yb, f[i][j]);
                }
            }
        }
    }
    for (int j = 0; j < RN; ++j)
        for (int i = 0; i < RM; ++i)
            if (i < rows) out[static_cast<std::size_t>(j) * ldo + static_cast<std::size_t>(i)] = V::hsum(f[i][j]);
}
template <class A, class V, class C>
TESSERA_ALWAYS_INLINE void lane_tile_n(std::int64_t cols, std::int64_t ng, const std::byte* w, std::size_t w_row, const std::byte* y,
                                       std::size_t ys, float* out, std::size_t ldo, std::int64_t rows) {
    switch (cols) {
        case 1: lane_tile<A, V, C, 1>(ng, w, w_row, y, ys, out, ldo, rows); break;
        case 2: lane_tile<A, V, C, 2>(ng, w, w_row, y, ys, out, ldo, rows); break;
        case 3: lane_tile<A, V, C, 3>(ng, w, w_row, y, ys, out, ldo, rows); break;
        default: lane_tile<A, V, C, qgemm_rn>(ng, w, w_row, y, ys, out, ldo, rows); break;
    }
}

template <class A, class V, class B>
void lane_gemm_wide(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
                    float* out, std::size_t ldo, std::byte* work) {
    using C = lane_codec<B>;
    static_assert(qgemm_lane(quant::block_traits<B>::id) == C::lane && lane_rec_bytes<C> <= static_cast<std::size_t>(16 * C::lane + 128),
                  "the lane sizes of gemm.hpp (qgemm_act_row_bytes, qgemm_work_bytes) match the codec");
    const std::int64_t ng = qgemm_groups(k, C::lane);
    const std::size_t w_row = static_cast<std::size_t>(ng) * lane_rec_bytes<C>;
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t p0 = 0; p0 < m; p0 += qgemm_panel) {
        const std::int64_t pr = m - p0 < qgemm_panel ? m - p0 : qgemm_panel;
        lane_pack_w<A, V>(k, pr, reinterpret_cast<const B*>(xb + static_cast<std::size_t>(p0) * xs), xs, work, w_row);
        for (std::int64_t c = 0; c < n; c += qgemm_rn) {
            const std::byte* yc = y + static_cast<std::size_t>(c) * ys;
            for (std::int64_t r = 0; r < pr; r += qgemm_rm)
                lane_tile_n<A, V, C>(n - c, ng, work + static_cast<std::size_t>(r) * w_row, w_row, yc, ys,
                                     out + static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(p0 + r), ldo, pr - r);
        }
    }
}

}  // namespace qdetail

TESSERA_QGEMM_KERNEL(q4_1, lane_gemm);
TESSERA_QGEMM_KERNEL(q5_0, lane_gemm);
TESSERA_QGEMM_KERNEL(q5_1, lane_gemm);
TESSERA_QGEMM_KERNEL(q8_1, lane_gemm);
TESSERA_QGEMM_KERNEL(iq4_nl, lane_gemm);
TESSERA_QGEMM_KERNEL(mxfp4, lane_gemm);
TESSERA_QGEMM_KERNEL(q2_K, lane_gemm);
TESSERA_QGEMM_KERNEL(q3_K, lane_gemm);
TESSERA_QGEMM_KERNEL(q5_K, lane_gemm);
TESSERA_QGEMM_KERNEL(q6_K, lane_gemm);
TESSERA_QGEMM_KERNEL(iq4_xs, lane_gemm);
TESSERA_QGEMM_KERNEL(tq1_0, lane_gemm);
TESSERA_QGEMM_KERNEL(tq2_0, lane_gemm);

}  // namespace kernels
TESSERA_END_NAMESPACE
