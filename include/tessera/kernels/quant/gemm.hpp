// The packed quantized GEMM (mul_mat with many columns) of every block type with a vec_dot:
// one engine (one tile, one sweep, one driver for plain rows and one for repacked rows)
// over the types' lane codecs and weight layouts.
//
// Lanes. A lane is a run of `lane` (32 or 16) elements with one weight scale: a q4_0-like
// block, a 32-element sub-block of a super-block, or the 16-element scale groups of q2_K,
// q3_K, q6_K. A block type is described by its lane codec (lane_codec<B>): its elements
// are unsigned bytes u = w + off (w the integer weight), and each lane has an f32
// coefficient a (the scale) and, for types with a min, b, such that the type's dot
// product with its partner (q8_0, q8_1 or q8_K activations) is
//
//   sum over lanes j of  a_j * dy_j * S_j  +  b_j * bs_j,
//   S_j = sum_e u_e * y_e  -  off * isum_j       (exact in i32)
//
// with dy_j, isum_j (the sum of the lane's activation quants) and bs_j (dy_j * isum_j, or
// q8_1's stored s) from the packed activations (qgemm_pack_act). Products a = d * sc are
// exact in f32 (an f16 times a scale of at most 8 bits).
//
// The x16 order. A group is 16 lanes; one 512-bit vector holds four bytes of each of the
// 16 lanes, so after lane / 4 vpdpbusd per group, slot l holds the whole integer dot S_l
// (started at -off * isum) and the f32 work (convert, scale product, FMA) is done once
// per 16 lanes per output. The activations are packed once per mul_mat (qgemm_pack_act);
// the tiles are qgemm_rm x qgemm_rn outputs (qgemm_rm_narrow rows for fewer columns).
//
// Weight layouts (where a tile finds row i's record of group g and how it turns it into
// x16 vectors and coefficients; each has at(), rec(), pair(), coefs()):
//   w_rows4<B>   q4_0 / q8_0 in the repacked records of repack.hpp (nibbles or bytes,
//                f16 scales): what CPU_REPACK stores, and the panel the plain-row GEMM of
//                these two types packs (whole 4-byte words, cheap per call)
//   w_k4_rows4   q4_K's repacked records (nibbles in pair order, 6-bit scales, f16 d)
//   w_k4_panel   q4_K's panel: the same nibbles, then a = d * sc and b = -dmin * m as f32
//   w_lane<B>    every other type's panel: the codec's u bytes in x16 order, then a and b
// The plain-row GEMM packs 16 rows at a time into the caller's work buffer (the panel
// layout's pack) and reuses them for every column; the repacked GEMM reads the records
// in place. Both run the same tiles, so they give the same bits.
//
// u8 x s8: vpdpbusd takes the weights unsigned. Offset types (q4_0: u = w + 8, q5_0, q3_K,
// q6_K, mxfp4, ternary, iq3_s, iq1) start the chain at -off * isum. The types whose values
// need more than 6 bits (q8_0, q8_1, iq4_nl, iq4_xs, the iq2 types, iq3_xxs) are `wide`: with VNNI their weights enter as
// w ^ 0x80 = w + 128 (off 128); without, as |w| against sign(y, w), where vpmaddubsw's i16
// pairs cannot saturate (|w| <= 128, |y| <= 127); the other types keep u <= 63.
//
// Paths: scalar (the definition: lane terms in row order, the codec decoding the blocks;
// on repacked rows, the quad unpacked first), avx2 (256-bit, half a group per vector),
// avx512bw and avx512vnni (512-bit), and on AArch64 every level at 128 bits (a quarter
// group per vector; SDOT from dotprod on). The x86 vector traits, decoders, transpose and
// arch bindings are in kernels/x86/quant/gemm.hpp, the ARM ones in kernels/arm/quant/gemm.hpp. Integer parts are exact on every arch; only
// the order of the f32 sums of the lane terms differs.
//
// Kernels (k a multiple of the block size, validated by the caller):
//   gemm_<T><A>(k, m, n, const block_T* x, size_t x_stride_bytes, const std::byte* y_packed,
//               size_t y_stride_bytes, float* out, size_t ldo, std::byte* work)
//               work: qgemm_work_bytes(T, k) bytes, 64-byte aligned
//   gemm_<T>_rows4<A>(k, m, n, const std::byte* x_repacked, y_packed, y_stride, out, ldo)
//               for q4_0, q8_0, q4_K, iq4_nl (m a multiple of the layout's rows), no work buffer
// Layout helpers (plain functions, used outside the arch units):
//   qgemm_lane(t), qgemm_act_row_bytes(t, k), qgemm_work_bytes(t, k), qgemm_pack_act<B>(k, y, out)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/kernels/quant/dequant.hpp"
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

// Elements per lane of t's packed GEMM; 0 when t has none.
constexpr int qgemm_lane(type_id t) noexcept {
    switch (t) {
        case type_id::q2_K:
        case type_id::q3_K:
        case type_id::q6_K:
        case type_id::nvfp4:
        case type_id::iq2_xs:
        case type_id::iq2_s:
        case type_id::iq1_m: return 16;
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
        case type_id::tq2_0:
        case type_id::q1_0:
        case type_id::q2_0:
        case type_id::iq2_xxs:
        case type_id::iq3_xxs:
        case type_id::iq3_s:
        case type_id::iq1_s: return 32;
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

// On AArch64 the q4_0 and iq4_nl activations keep each lane's quants whole instead (byte
// l * 32 + e holds element e of lane l): the ARM GEMM of these two (kernels/arm/quant/
// gemm.hpp) reads 16 consecutive elements of a block per load. The other fields are where
// they are above.
constexpr bool qgemm_act_lane_major(type_id t) noexcept {
#if defined(TESSERA_AARCH64)
    return t == type_id::q4_0 || t == type_id::iq4_nl;
#else
    return (void)t, false;
#endif
}

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
inline constexpr std::size_t qgemm_k4_w_group_bytes = 256 + 64 + 64;  // q4_K panel record: nibbles, a, b (f32)

// The byte of a packed activation group of t's GEMM that holds element e of lane l: the
// x16 order (q4_K's chunks in its nibble order, the inverse of qgemm_k4_elem), or the
// lane-major one (qgemm_act_lane_major). The packer and the scalar kernel both use it.
template <type_id t>
constexpr std::size_t qgemm_act_byte(int l, int e) noexcept {
    if constexpr (qgemm_act_lane_major(t)) return static_cast<std::size_t>(l * qgemm_lane(t) + e);
    const int c = t == type_id::q4_K ? 2 * (e / 8) + (((e / 4) % 2) ^ (l % 2)) : e / 4;
    return static_cast<std::size_t>(c * 64 + l * 4 + e % 4);
}

// One row of activations, already quantized to B's dot partner (k elements), into the
// packed layout of B's GEMM; lanes past k / lane are zero. Run once per activation row,
// outside the arch units.
template <class B>
void qgemm_pack_act(std::int64_t k, const typename quant::block_traits<B>::dot_partner* y, std::byte* out) {
    using P = typename quant::block_traits<B>::dot_partner;
    constexpr int lane = qgemm_lane(quant::block_traits<B>::id);
    constexpr auto qp = static_cast<int>(quant::block_traits<P>::block_size);
    static_assert(lane != 0, "B has a packed GEMM");
    constexpr type_id t = quant::block_traits<B>::id;
    constexpr qgemm_act_layout lay = qgemm_act(lane);
    const std::int64_t nl = k / lane;
    std::memset(out, 0, static_cast<std::size_t>(qgemm_groups(k, lane)) * lay.bytes);
    for (std::int64_t j = 0; j < nl; ++j) {
        std::byte* g = out + static_cast<std::size_t>(j / qgemm_group) * lay.bytes;
        const int l = static_cast<int>(j % qgemm_group);
        const P& blk = y[j * lane / qp];
        const std::int8_t* q = blk.qs + (j * lane) % qp;
        int s = 0;
        for (int e = 0; e < lane; e += 4) {  // every order keeps elements 4i..4i+3 together
            std::memcpy(g + qgemm_act_byte<t>(l, e), q + e, 4);
            s += q[e] + q[e + 1] + q[e + 2] + q[e + 3];
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

// ---- lane codecs -----------------------------------------------------------------------
// lane_codec<B>: lane (elements per lane), off (u = w + off; 0: u = w >= 0), wide (w needs
// all of int8, see above), min (lanes have a second coefficient b), and decode<A>(block,
// u[block_size], a[block_size / lane], b[...]) writing the block's elements in order.
// q4_K's activations are packed in the order of its repacked nibbles (qgemm_act_byte).
template <class B>
struct lane_codec;

// Decoding helpers of the 32-element blocks (16 bytes of nibbles in q4_0 order: byte j
// holds element j low, j + 16 high), and the transpose of a group of lanes into the x16
// order. These are the scalar bodies; the x86 file adds AVX2 decoders (one 256-bit vector
// per block: one store, which the panel packer's word loads are forwarded from) and an
// AVX-512 transpose.
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

// The wide drivers over the vector traits V (below), which the ISA files bind to their
// arches: plain rows (x, x_stride) packed panel by panel into work, and repacked rows.
template <class A, class V, class B>
void qgemm_wide(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
                float* out, std::size_t ldo, std::byte* work);
template <class A, class V, class B>
void qgemm_rows4_wide(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
                      float* out, std::size_t ldo);
template <class A, class B>
void qgemm_r4_unpacked(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, repack_layout lay,
                       const std::byte* y, std::size_t ys, float* out, std::size_t ldo);

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/gemm.hpp"
#include "tessera/kernels/arm/quant/gemm.hpp"

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
struct lane_codec<qg::block_q4_0> {  // nibbles, w = q - 8
    static constexpr int lane = 32, off = 8;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q4_0& x, std::uint8_t* u, float* a, float*) {
        split_nibbles<A>(x.qs, u);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<qg::block_q8_0> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q8_0& x, std::uint8_t* u, float* a, float*) {
        std::memcpy(u, x.qs, 32);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<qg::block_q4_1> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q4_1& x, std::uint8_t* u, float* a, float* b) {
        split_nibbles<A>(x.qs, u);
        a[0] = h2f<A>(x.d);
        b[0] = h2f<A>(x.m);
    }
};
template <>
struct lane_codec<qg::block_q5_0> {
    static constexpr int lane = 32, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q5_0& x, std::uint8_t* u, float* a, float*) {
        split_nibbles<A>(x.qs, u, true, x.qh);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<qg::block_q5_1> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q5_1& x, std::uint8_t* u, float* a, float* b) {
        split_nibbles<A>(x.qs, u, true, x.qh);
        a[0] = h2f<A>(x.d);
        b[0] = h2f<A>(x.m);
    }
};
template <>
struct lane_codec<qg::block_q8_1> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q8_1& x, std::uint8_t* u, float* a, float*) {
        std::memcpy(u, x.qs, 32);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<qg::block_iq4_nl> {
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq4_nl& x, std::uint8_t* u, float* a, float*) {
        lookup_nibbles<A>(x.qs, tables<A>::iq4nl, 0, u);
        a[0] = h2f<A>(x.d);
    }
};
template <>
struct lane_codec<qg::block_mxfp4> {  // doubled e2m1 values -12..12, + 16
    static constexpr int lane = 32, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_mxfp4& x, std::uint8_t* u, float* a, float*) {
        lookup_nibbles<A>(x.qs, tables<A>::mxfp4, off, u);
        a[0] = e8m0_half<A>(x.e);
    }
};
template <>
struct lane_codec<qg::block_nvfp4> {  // 4 lanes of 16: doubled e2m1 values -12..12, + 16
    static constexpr int lane = 16, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_nvfp4& x, std::uint8_t* u, float* a, float*) {
        for (int g = 0; g < 4; ++g) {
            for (int j = 0; j < 8; ++j) {
                u[16 * g + j] = static_cast<std::uint8_t>(tables<A>::mxfp4[x.qs[8 * g + j] & 15] + off);
                u[16 * g + j + 8] = static_cast<std::uint8_t>(tables<A>::mxfp4[x.qs[8 * g + j] >> 4] + off);
            }
            a[g] = qg::ue4m3_half[x.d[g]];
        }
    }
};
template <>
struct lane_codec<qg::block_q1_0> {  // 4 lanes of 32: bits, w = 2 bit - 1, u = 2 bit
    static constexpr int lane = 32, off = 1;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q1_0& x, std::uint8_t* u, float* a, float*) {
        for (int j = 0; j < 128; ++j) u[j] = static_cast<std::uint8_t>(((x.qs[j / 8] >> (j % 8)) & 1) << 1);
        const float d = h2f<A>(x.d);
        for (int l = 0; l < 4; ++l) a[l] = d;
    }
};
template <>
struct lane_codec<qg::block_q2_0> {  // 2 lanes of 32: 2-bit q, w = q - 1
    static constexpr int lane = 32, off = 1;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q2_0& x, std::uint8_t* u, float* a, float*) {
        for (int j = 0; j < 64; ++j) u[j] = (x.qs[j / 4] >> (2 * (j % 4))) & 3;
        const float d = h2f<A>(x.d);
        a[0] = a[1] = d;
    }
};
template <>
struct lane_codec<qg::block_q2_K> {  // 16 lanes of 16: 2-bit q, scale and min nibbles
    static constexpr int lane = 16, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q2_K& x, std::uint8_t* u, float* a, float* b) {
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
struct lane_codec<qg::block_q3_K> {  // 16 lanes of 16: w = q2 + 4 * hbit - 4
    static constexpr int lane = 16, off = 4;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q3_K& x, std::uint8_t* u, float* a, float*) {
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
struct lane_codec<qg::block_q5_K> {  // 8 lanes of 32: 5-bit q, 6-bit scales and mins
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q5_K& x, std::uint8_t* u, float* a, float* b) {
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
struct lane_codec<qg::block_q6_K> {  // 16 lanes of 16: 6-bit q - 32, int8 scales
    static constexpr int lane = 16, off = 32;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q6_K& x, std::uint8_t* u, float* a, float*) {
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
struct lane_codec<qg::block_iq4_xs> {  // 8 lanes of 32: iq4_nl values, 6-bit scales - 32
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq4_xs& x, std::uint8_t* u, float* a, float*) {
        for (int ib = 0; ib < 8; ++ib) lookup_nibbles<A>(x.qs + 16 * ib, tables<A>::iq4nl, 0, u + 32 * ib);
        const float d = h2f<A>(x.d);
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((x.scales_h >> (2 * ib)) & 3) << 4);
            a[ib] = d * static_cast<float>(ls - 32);
        }
    }
};
template <>
struct lane_codec<qg::block_tq1_0> {  // 8 lanes of 32: trits 0..2, w = trit - 1
    static constexpr int lane = 32, off = 1;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_tq1_0& x, std::uint8_t* u, float* a, float*) {
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
struct lane_codec<qg::block_tq2_0> {  // 8 lanes of 32: 2-bit q, w = q - 1
    static constexpr int lane = 32, off = 1;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_tq2_0& x, std::uint8_t* u, float* a, float*) {
        for (int h = 0; h < 2; ++h)
            for (int s = 0; s < 4; ++s)
                for (int m = 0; m < 32; ++m) u[128 * h + 32 * s + m] = (x.qs[32 * h + m] >> (2 * s)) & 3;
        const float d = h2f<A>(x.d);
        for (int j = 0; j < 8; ++j) a[j] = d;
    }
};

// The lattice i-quants (quant/iquants.hpp): each group of 8 (or 4) elements is a grid
// entry with a sign byte; a lane is a scale group. The iq2 and iq3_xxs values (up to 43
// and 62) need the wide path; iq3_s's (up to 15) fit u = w + 16. The iq1 types' shift
// delta = +-1/8 folds into the integers: w = 8 g + (+-1) in -9..9, u = w + 16, and the
// lane's a carries the 1/8, so their dot needs no second coefficient. Every a is d times
// an odd scale of at most 5 bits times a power of two: exact in f32.
namespace iqd = qg::detail;
// n elements of a grid entry (unsigned bytes) with sign bit j of s negating element j,
// as int8 bytes
TESSERA_ALWAYS_INLINE void iq_signed(std::uint64_t g, std::uint8_t s, int n, std::uint8_t* u) {
    for (int j = 0; j < n; ++j) {
        const int v = iqd::grid_byte(g, j);
        u[j] = static_cast<std::uint8_t>((s >> j) & 1 ? -v : v);
    }
}
// 8 elements of an iq1 grid entry (-1, 0, 1) with the shift sign: 8 g + delta + 16
TESSERA_ALWAYS_INLINE void iq1_shifted(std::uint64_t g, bool negative, std::uint8_t* u) {
    for (int j = 0; j < 8; ++j) u[j] = static_cast<std::uint8_t>(8 * iqd::grid_i8(g, j) + (negative ? 15 : 17));
}
template <>
struct lane_codec<qg::block_iq2_xxs> {  // 8 lanes of 32: grid values 8..43 with signs
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq2_xxs& x, std::uint8_t* u, float* a, float*) {
        const float d = h2f<A>(x.d);
        for (int ib = 0; ib < 8; ++ib) {
            const auto* q = reinterpret_cast<const std::uint8_t*>(x.qs + 4 * ib);
            const std::uint32_t aux = iqd::load_u32(q + 4);
            for (int l = 0; l < 4; ++l) iq_signed(qg::iq2xxs_grid[q[l]], iqd::iq_signs(aux >> (7 * l)), 8, u + 32 * ib + 8 * l);
            a[ib] = d * static_cast<float>(2 * (aux >> 28) + 1) * 0.125f;
        }
    }
};
template <>
struct lane_codec<qg::block_iq2_xs> {  // 16 lanes of 16: 9-bit grid index, 7-bit sign code
    static constexpr int lane = 16, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq2_xs& x, std::uint8_t* u, float* a, float*) {
        const float d = h2f<A>(x.d);
        for (int ib = 0; ib < 8; ++ib) {
            for (int l = 0; l < 4; ++l) {
                const std::uint16_t q = x.qs[4 * ib + l];
                iq_signed(qg::iq2xs_grid[q & 511], iqd::iq_signs(q >> 9), 8, u + 32 * ib + 8 * l);
            }
            a[2 * ib] = d * static_cast<float>(2 * (x.scales[ib] & 15) + 1) * 0.125f;
            a[2 * ib + 1] = d * static_cast<float>(2 * (x.scales[ib] >> 4) + 1) * 0.125f;
        }
    }
};
template <>
struct lane_codec<qg::block_iq2_s> {  // 16 lanes of 16: 10-bit grid index, sign bytes
    static constexpr int lane = 16, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq2_s& x, std::uint8_t* u, float* a, float*) {
        const float d = h2f<A>(x.d);
        const std::uint8_t* signs = x.qs + qg::qk_k / 8;
        for (int ib = 0; ib < 8; ++ib) {
            for (int l = 0; l < 4; ++l) iq_signed(iqd::iq2s_entry(x, ib, l), signs[4 * ib + l], 8, u + 32 * ib + 8 * l);
            a[2 * ib] = d * static_cast<float>(2 * (x.scales[ib] & 15) + 1) * 0.125f;
            a[2 * ib + 1] = d * static_cast<float>(2 * (x.scales[ib] >> 4) + 1) * 0.125f;
        }
    }
};
template <>
struct lane_codec<qg::block_iq3_xxs> {  // 8 lanes of 32: grid values 4..62 with signs
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = true, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq3_xxs& x, std::uint8_t* u, float* a, float*) {
        const float d = h2f<A>(x.d);
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint8_t* q = x.qs + 8 * ib;
            const std::uint32_t aux = iqd::load_u32(x.qs + qg::qk_k / 4 + 4 * ib);
            for (int l = 0; l < 4; ++l) {
                const std::uint8_t s = iqd::iq_signs(aux >> (7 * l));
                iq_signed(qg::iq3xxs_grid[q[2 * l]], s, 4, u + 32 * ib + 8 * l);
                iq_signed(qg::iq3xxs_grid[q[2 * l + 1]], static_cast<std::uint8_t>(s >> 4), 4, u + 32 * ib + 8 * l + 4);
            }
            a[ib] = d * static_cast<float>(2 * (aux >> 28) + 1) * 0.25f;
        }
    }
};
template <>
struct lane_codec<qg::block_iq3_s> {  // 8 lanes of 32: grid values 1..15 with signs, + 16
    static constexpr int lane = 32, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq3_s& x, std::uint8_t* u, float* a, float*) {
        const float d = h2f<A>(x.d);
        for (int ib = 0; ib < 8; ++ib) {
            for (int l = 0; l < 4; ++l) {
                const std::uint8_t s = x.signs[4 * ib + l];
                std::uint8_t* o = u + 32 * ib + 8 * l;
                iq_signed(iqd::iq3s_entry(x, ib, l, 0), s, 4, o);
                iq_signed(iqd::iq3s_entry(x, ib, l, 1), static_cast<std::uint8_t>(s >> 4), 4, o + 4);
                for (int j = 0; j < 8; ++j) o[j] = static_cast<std::uint8_t>(o[j] + 16);
            }
            a[ib] = d * static_cast<float>(2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1);
        }
    }
};
template <>
struct lane_codec<qg::block_iq1_s> {  // 8 lanes of 32: 8 g + delta, + 16
    static constexpr int lane = 32, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq1_s& x, std::uint8_t* u, float* a, float*) {
        const float d = h2f<A>(x.d);
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint16_t qh = x.qh[ib];
            for (int l = 0; l < 4; ++l)
                iq1_shifted(qg::iq1s_grid[x.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], (qh & 0x8000) != 0, u + 32 * ib + 8 * l);
            a[ib] = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1) * 0.125f;
        }
    }
};
template <>
struct lane_codec<qg::block_iq1_m> {  // 16 lanes of 16: 8 g + delta (a delta sign per 8), + 16
    static constexpr int lane = 16, off = 16;
    static constexpr bool wide = false, min = false;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_iq1_m& x, std::uint8_t* u, float* a, float*) {
        const float d = h2f<A>(iqd::iq1m_scale(x));
        for (int ib = 0; ib < 8; ++ib) {
            for (int l = 0; l < 4; ++l) iq1_shifted(iqd::iq1m_entry(x, ib, l), iqd::iq1m_negative(x, ib, l), u + 32 * ib + 8 * l);
            a[2 * ib] = d * static_cast<float>(iqd::iq1m_ls(x, ib, 0)) * 0.125f;
            a[2 * ib + 1] = d * static_cast<float>(iqd::iq1m_ls(x, ib, 1)) * 0.125f;
        }
    }
};

template <>
struct lane_codec<qg::block_q4_K> {  // 8 lanes of 32: nibbles, 6-bit scales and mins
    static constexpr int lane = 32, off = 0;
    static constexpr bool wide = false, min = true;
    template <class A>
    static TESSERA_ALWAYS_INLINE void decode(const qg::block_q4_K& x, std::uint8_t* u, float* a, float* b) {
        for (int j = 0; j < 8; ++j)
            for (int e = 0; e < 32; ++e) u[32 * j + e] = (x.qs[32 * (j / 2) + e] >> (4 * (j % 2))) & 15;
        const float d = h2f<A>(x.d), dmin = h2f<A>(x.dmin);
        for (int j = 0; j < 8; ++j) {
            std::uint8_t sc, mn;
            scale_min_k4<A>(j, x.scales, sc, mn);
            a[j] = d * static_cast<float>(sc);
            b[j] = -(dmin * static_cast<float>(mn));
        }
    }
};

// The byte of a packed activation group that holds element e of lane l.
template <class C>
struct codec_block;
template <class B>
struct codec_block<lane_codec<B>> {
    using type = B;
};
template <class C>
constexpr std::size_t act_byte(int l, int e) noexcept {
    return qgemm_act_byte<quant::block_traits<typename codec_block<C>::type>::id>(l, e);
}
// The offset the wide tiles start a lane at (wide types: 128 with VNNI, where the weights
// enter as w ^ 0x80; none on the sign path).
template <class C, bool vnni>
inline constexpr int lane_offset = C::wide ? (vnni ? 128 : 0) : C::off;
constexpr int lane_log2(int v) { return v <= 1 ? 0 : 1 + lane_log2(v / 2); }

// ---- weight layouts ---------------------------------------------------------------------
// Each layout L: L::at(base, ng, r) the access of the tile whose first row is r (base:
// the panel, or the first quad of the repacked rows; ng groups per row); rec(i, g) row i's
// record of group g; pair<V, vnni>(rec, s, h, xa, xb) the x16 vectors of chunks 2s and
// 2s + 1 (half h), as the tile multiplies them; coefs<V>(rec, h, a, b) the lanes' f32
// coefficients. A panel layout also has pack<A, V>(k, rows, x, xs, w): rows [0, rows) of
// plain blocks (rows <= qgemm_panel) into the panel, rows up to the next multiple of
// qgemm_rm_narrow and lanes past k / lane zero.

// q4_0 / q8_0: one quad of repacked records (repack.hpp: the nibble or byte words of 16
// blocks of a row, then their f16 scales); q4_0 keeps two weights per byte.
template <class B>
struct w_rows4 {
    static constexpr bool q4 = std::is_same_v<B, qg::block_q4_0>;
    static constexpr std::size_t rec_bytes = q4 ? 288 : 544, qbytes = q4 ? 256 : 512;
    static constexpr std::size_t stream_ahead = q4 ? 4096 : 0;  // (qgemm_rows4_wide)
    const std::byte* quad;
    int first = 0;  // the tile's first row in the quad
    static TESSERA_ALWAYS_INLINE w_rows4 at(const std::byte* base, std::int64_t ng, std::int64_t r) {
        return {base + static_cast<std::size_t>(r / 4) * static_cast<std::size_t>(4 * ng) * rec_bytes, static_cast<int>(r % 4)};
    }
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
    template <class V, bool vnni>
    static TESSERA_ALWAYS_INLINE void pair(const std::byte* r, int s, int h, typename V::vi& xa, typename V::vi& xb) {
        xa = q<V>(r, 2 * s, h);
        xb = q<V>(r, 2 * s + 1, h);
        if constexpr (!q4 && vnni) {  // q8_0 enters as w ^ 0x80
            xa = V::flip(xa);
            xb = V::flip(xb);
        }
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE void coefs(const std::byte* r, int h, typename V::vf& a, typename V::vf&) {
        a = V::load_h(r + qbytes + static_cast<std::size_t>(h * (32 / V::halves)));
    }
    // The panel: whole 4-byte words of each block into the records of repack.hpp.
    template <class A, class V>
    static void pack(std::int64_t k, std::int64_t rows, const B* x, std::size_t xs, std::byte* w) {
        constexpr int words = static_cast<int>(qbytes / 64);
        const std::int64_t nb = k / 32, ng = qgemm_groups(k);
        const std::size_t quad_bytes = static_cast<std::size_t>(4 * ng) * rec_bytes;
        const auto* xb = reinterpret_cast<const unsigned char*>(x);
        const int tail = static_cast<int>(nb % qgemm_group);  // lanes of the last group in use (0: all)
        for (std::int64_t r = 0; r < (rows + 3) / 4 * 4; ++r) {
            std::byte* row = w + static_cast<std::size_t>(r / 4) * quad_bytes + static_cast<std::size_t>(r % 4) * rec_bytes;
            if (r >= rows) {
                for (std::int64_t g = 0; g < ng; ++g) std::memset(row + static_cast<std::size_t>(4 * g) * rec_bytes, 0, rec_bytes);
                continue;
            }
            const B* xr = reinterpret_cast<const B*>(xb + static_cast<std::size_t>(r) * xs);
            for (std::int64_t b = 0; b < nb; ++b) {
                std::byte* rc = row + static_cast<std::size_t>(4 * (b / qgemm_group)) * rec_bytes;
                const auto l = static_cast<std::size_t>(b % qgemm_group);
                for (int s = 0; s < words; ++s) std::memcpy(rc + 64 * static_cast<std::size_t>(s) + 4 * l, xr[b].qs + 4 * s, 4);
                std::memcpy(rc + qbytes + 2 * l, &xr[b].d, 2);
            }
            if (tail != 0) {
                std::byte* rc = row + static_cast<std::size_t>(4 * (ng - 1)) * rec_bytes;
                for (int s = 0; s < words; ++s)
                    std::memset(rc + 64 * s + 4 * tail, 0, static_cast<std::size_t>(4 * (qgemm_group - tail)));
                std::memset(rc + qbytes + 2 * tail, 0, static_cast<std::size_t>(2 * (qgemm_group - tail)));
            }
        }
    }
};

// q4_K: a chunk s of either record (nibbles in repack.hpp's pair order) as the two x16
// vectors of chunks t = 2s (xa) and 2s + 1 (xb): slot 2p holds the pair's bytes
// e = 8s..8s+3, slot 2p + 1 bytes 8s+4..8s+7; lane 2p's elements are their low nibbles,
// lane 2p + 1's the high ones.
//   xa = slot 2p: low nibbles of slot 2p, slot 2p+1: high nibbles of slot 2p+1
//   xb = the other two, swapped into their lanes' slots
template <class V>
TESSERA_ALWAYS_INLINE void k4_split(const std::byte* r, int s, int h, typename V::vi& xa, typename V::vi& xb) {
    const typename V::vi v = V::load(r + static_cast<std::size_t>(s * 64 + h * (64 / V::halves)));
    const typename V::vi lo = V::lo4(v), hi = V::hi4(v);
    xa = V::blend_odd(lo, hi);
    xb = V::swap_pairs(V::blend_odd(hi, lo));
}
struct w_k4_rows4 {  // one quad of a repacked q4_K matrix (296-byte records)
    static constexpr std::size_t rec_bytes = 296;
    static constexpr std::size_t stream_ahead = 4096;  // (qgemm_rows4_wide)
    const std::byte* quad;
    int first = 0;
    static TESSERA_ALWAYS_INLINE w_k4_rows4 at(const std::byte* base, std::int64_t ng, std::int64_t r) {
        return {base + static_cast<std::size_t>(r / 4) * static_cast<std::size_t>(4 * ng) * rec_bytes, static_cast<int>(r % 4)};
    }
    TESSERA_ALWAYS_INLINE const std::byte* rec(int i, std::int64_t g) const {
        return quad + (static_cast<std::size_t>(g) * 4 + static_cast<std::size_t>(first + i)) * rec_bytes;
    }
    template <class V, bool>
    static TESSERA_ALWAYS_INLINE void pair(const std::byte* r, int s, int h, typename V::vi& xa, typename V::vi& xb) {
        k4_split<V>(r, s, h, xa, xb);
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE void coefs(const std::byte* r, int h, typename V::vf& a, typename V::vf& b) {
        using A = typename V::arch;
        std::uint16_t d[4];
        std::memcpy(d, r + 288, 8);
        const auto lane0 = static_cast<std::size_t>(h * (16 / V::halves));
        a = V::mul(V::load_u8(r + 256 + lane0), V::pair(h2f_bits<A>(d[0]), h2f_bits<A>(d[1]), h));
        b = V::mul(V::load_u8(r + 272 + lane0), V::pair(-h2f_bits<A>(d[2]), -h2f_bits<A>(d[3]), h));
    }
};
struct w_k4_panel {  // q4_K's panel: the repacked nibbles, then a = d * sc and b = -dmin * m as f32 lanes
    const std::byte* w;
    std::size_t w_row;
    static TESSERA_ALWAYS_INLINE w_k4_panel at(const std::byte* base, std::int64_t ng, std::int64_t r) {
        const std::size_t row = static_cast<std::size_t>(ng) * qgemm_k4_w_group_bytes;
        return {base + static_cast<std::size_t>(r) * row, row};
    }
    TESSERA_ALWAYS_INLINE const std::byte* rec(int i, std::int64_t g) const {
        return w + static_cast<std::size_t>(i) * w_row + static_cast<std::size_t>(g) * qgemm_k4_w_group_bytes;
    }
    template <class V, bool>
    static TESSERA_ALWAYS_INLINE void pair(const std::byte* r, int s, int h, typename V::vi& xa, typename V::vi& xb) {
        k4_split<V>(r, s, h, xa, xb);
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE void coefs(const std::byte* r, int h, typename V::vf& a, typename V::vf& b) {
        a = V::loadf(r + 256 + static_cast<std::size_t>(h * (64 / V::halves)));
        b = V::loadf(r + 320 + static_cast<std::size_t>(h * (64 / V::halves)));
    }
    template <class A, class V>
    static void pack(std::int64_t k, std::int64_t rows, const qg::block_q4_K* x, std::size_t xs, std::byte* w) {
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
                    const float sf = d * static_cast<float>(sc), mf = -(dmin * static_cast<float>(mn));
                    std::memcpy(g + 256 + 4 * (8 * h + j), &sf, 4);
                    std::memcpy(g + 320 + 4 * (8 * h + j), &mf, 4);
                }
            }
        }
    }
};

// Every other type: per group of 16 lanes a record of the codec's u bytes in x16 order
// (wide types with VNNI as w ^ 0x80), then a[16], then b[16] if the type has a min.
template <class B>
struct w_lane {
    using C = lane_codec<B>;
    static constexpr std::size_t qb = static_cast<std::size_t>(16 * C::lane), rec_bytes = qb + 64 + (C::min ? 64 : 0);
    const std::byte* w;
    std::size_t w_row;
    static TESSERA_ALWAYS_INLINE w_lane at(const std::byte* base, std::int64_t ng, std::int64_t r) {
        const std::size_t row = static_cast<std::size_t>(ng) * rec_bytes;
        return {base + static_cast<std::size_t>(r) * row, row};
    }
    TESSERA_ALWAYS_INLINE const std::byte* rec(int i, std::int64_t g) const {
        return w + static_cast<std::size_t>(i) * w_row + static_cast<std::size_t>(g) * rec_bytes;
    }
    template <class V, bool>
    static TESSERA_ALWAYS_INLINE void pair(const std::byte* r, int s, int h, typename V::vi& xa, typename V::vi& xb) {
        const auto hs = static_cast<std::size_t>(h * (64 / V::halves));
        xa = V::load(r + static_cast<std::size_t>(2 * s * 64) + hs);
        xb = V::load(r + static_cast<std::size_t>((2 * s + 1) * 64) + hs);
    }
    template <class V>
    static TESSERA_ALWAYS_INLINE void coefs(const std::byte* r, int h, typename V::vf& a, typename V::vf& b) {
        const auto hs = static_cast<std::size_t>(h * (64 / V::halves));
        a = V::loadf(r + qb + hs);
        if constexpr (C::min) b = V::loadf(r + qb + 64 + hs);
    }
    template <class A, class V>
    static void pack(std::int64_t k, std::int64_t rows, const B* x, std::size_t xs, std::byte* w) {
        constexpr int qk = static_cast<int>(quant::block_traits<B>::block_size), per = qk / C::lane, blocks = qgemm_group / per;
        constexpr std::uint32_t flip = C::wide && V::vnni ? 0x80808080u : 0u;
        const std::int64_t nb = k / qk, ng = qgemm_groups(k, C::lane);
        const std::size_t w_row = static_cast<std::size_t>(ng) * rec_bytes;
        const auto* xb = reinterpret_cast<const unsigned char*>(x);
        for (std::int64_t r = 0; r < (rows + qgemm_rm_narrow - 1) / qgemm_rm_narrow * qgemm_rm_narrow; ++r) {
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
                std::byte* gr = row + static_cast<std::size_t>(g) * rec_bytes;
                lanes_to_x16<A, C::lane / 4>(u, gr, flip);
                std::memcpy(gr + qb, ca, 64);
                if constexpr (C::min) std::memcpy(gr + qb + 64, cb, 64);
            }
        }
    }
};

// The layouts of each type: the panel its plain-row GEMM packs, and (q4_0, q8_0, q4_K) the
// records of its repacked rows.
template <class B>
struct qgemm_layouts {
    using panel = w_lane<B>;
};
template <>
struct qgemm_layouts<qg::block_q4_0> {
    using panel = w_rows4<qg::block_q4_0>;
    using rows4 = w_rows4<qg::block_q4_0>;
};
template <>
struct qgemm_layouts<qg::block_q8_0> {
    using panel = w_rows4<qg::block_q8_0>;
    using rows4 = w_rows4<qg::block_q8_0>;
};
template <>
struct qgemm_layouts<qg::block_q4_K> {
    using panel = w_k4_panel;
    using rows4 = w_k4_rows4;
};

// ---- the tile ----------------------------------------------------------------------------
// RM x RN outputs: rows w.rec(0..RM) x RN packed activation rows (ys bytes apart); one body
// for every vector width (V::halves vectors per group of 16 lanes). Ahead > 0 (weights read
// once from memory: repacked rows, few columns): before each group, its records' length of
// cache lines Ahead bytes further on is prefetched into L2 (the tile's rows are one quad,
// contiguous, so that is the stream the next groups and the next quad read).
template <class A, class V, class C, int RM, int RN, class W, std::size_t Ahead = 0>
TESSERA_ALWAYS_INLINE void qgemm_tile(std::int64_t ng, W w, const std::byte* y, std::size_t ys, float* out, std::size_t ldo,
                                      std::int64_t rows) {
    constexpr bool vnni = V::vnni;
    constexpr bool sign_path = C::wide && !vnni;
    constexpr int off = lane_offset<C, vnni>, shift = lane_log2(off);
    static_assert(off == 0 || (1 << shift) == off, "offsets are powers of two");
    constexpr qgemm_act_layout lay = qgemm_act(C::lane);
    using vi = typename V::vi;
    using vf = typename V::vf;
    constexpr int step = 64 / V::halves;  // bytes per vector
    vf f[RM][RN];
    for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) f[i][j] = V::zerof();
    for (std::int64_t g = 0; g < ng; ++g) {
        const std::byte* wr[RM];
        for (int i = 0; i < RM; ++i) wr[i] = w.rec(i, g);
        if constexpr (Ahead > 0) {
            static_assert(RM == 4, "the prefetch covers one quad's records");
            const auto* p = reinterpret_cast<const char*>(wr[0]) + Ahead;  // (a prefetch past the end never faults)
            for (std::size_t o = 0; o < 4 * W::rec_bytes; o += 64) __builtin_prefetch(p + o, 0, 2);
        }
        const std::byte* yg = y + static_cast<std::size_t>(g) * lay.bytes;
        for (int h = 0; h < V::halves; ++h) {
            const auto hs = static_cast<std::size_t>(h * step);
            vi acc[RM][RN];
            for (int j = 0; j < RN; ++j) {
                vi c0 = V::zero();
                if constexpr (off != 0) c0 = V::neg_shl(V::load(yg + static_cast<std::size_t>(j) * ys + lay.isum + hs), shift);
                for (int i = 0; i < RM; ++i) acc[i][j] = c0;
            }
#pragma GCC unroll 4
            for (int s = 0; s < C::lane / 8; ++s) {
                vi xa[RM], xb[RM];
                for (int i = 0; i < RM; ++i) W::template pair<V, vnni>(wr[i], s, h, xa[i], xb[i]);
                // chunk 2s for every output, then chunk 2s + 1: independent chains back to back
#pragma GCC unroll 2
                for (int p = 0; p < 2; ++p) {
                    const vi* xv = p == 0 ? xa : xb;
                    for (int j = 0; j < RN; ++j) {
                        const vi yv = V::load(yg + static_cast<std::size_t>(j) * ys + static_cast<std::size_t>((2 * s + p) * 64) + hs);
                        for (int i = 0; i < RM; ++i) {
                            if constexpr (sign_path)
                                acc[i][j] = V::dpbusd(acc[i][j], V::abs8(xv[i]), V::sign8(yv, xv[i]));
                            else
                                acc[i][j] = V::dpbusd(acc[i][j], xv[i], yv);
                        }
                    }
                }
            }
            vf ca[RM], cb[RM];
            for (int i = 0; i < RM; ++i) W::template coefs<V>(wr[i], h, ca[i], cb[i]);
            for (int j = 0; j < RN; ++j) {
                const std::byte* yj = yg + static_cast<std::size_t>(j) * ys + hs;
                const vf yd = V::loadf(yj + lay.dy);
                for (int i = 0; i < RM; ++i) f[i][j] = V::fma(acc[i][j], V::mul(ca[i], yd), f[i][j]);
                if constexpr (C::min) {
                    const vf yb = V::loadf(yj + lay.bs);
                    for (int i = 0; i < RM; ++i) f[i][j] = V::fmadd(cb[i], yb, f[i][j]);
                }
            }
        }
    }
    for (int j = 0; j < RN; ++j)
        for (int i = 0; i < RM; ++i)
            if (i < rows) out[static_cast<std::size_t>(j) * ldo + static_cast<std::size_t>(i)] = V::hsum(f[i][j]);
}

// Rows [0, pr) of a panel (or of 16 repacked rows) from base times n columns: the column
// tiles outside, so the rows' records stay in L1/L2 across the columns; 4-row tiles when
// there are fewer than qgemm_rn columns (one pass over each quad's records in memory order).
template <class A, class V, class C, class L, int RM, std::size_t Ahead = 0>
TESSERA_ALWAYS_INLINE void qgemm_sweep(std::int64_t ng, const std::byte* base, std::int64_t pr, std::int64_t n, const std::byte* y,
                                       std::size_t ys, float* out, std::size_t ldo) {
    for (std::int64_t c = 0; c < n; c += qgemm_rn) {
        const std::byte* yc = y + static_cast<std::size_t>(c) * ys;
        float* oc = out + static_cast<std::size_t>(c) * ldo;
        for (std::int64_t r = 0; r < pr; r += RM) {
            const L w = L::at(base, ng, r);
            switch (n - c) {
                case 1: qgemm_tile<A, V, C, RM, 1, L, Ahead>(ng, w, yc, ys, oc + r, ldo, pr - r); break;
                case 2: qgemm_tile<A, V, C, RM, 2, L, Ahead>(ng, w, yc, ys, oc + r, ldo, pr - r); break;
                case 3: qgemm_tile<A, V, C, RM, 3, L, Ahead>(ng, w, yc, ys, oc + r, ldo, pr - r); break;
                default: qgemm_tile<A, V, C, RM, qgemm_rn, L>(ng, w, yc, ys, oc + r, ldo, pr - r); break;
            }
        }
    }
}
template <class A, class V, class C, class L, std::size_t Ahead = 0>
TESSERA_ALWAYS_INLINE void qgemm_rows(std::int64_t ng, const std::byte* base, std::int64_t pr, std::int64_t n, const std::byte* y,
                                      std::size_t ys, float* out, std::size_t ldo) {
    if (n < qgemm_rn)
        qgemm_sweep<A, V, C, L, qgemm_rm_narrow, Ahead>(ng, base, pr, n, y, ys, out, ldo);
    else
        qgemm_sweep<A, V, C, L, qgemm_rm>(ng, base, pr, n, y, ys, out, ldo);
}

// Plain rows: each panel of 16 rows is packed into the work buffer, then swept.
template <class A, class V, class B>
void qgemm_wide(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
                float* out, std::size_t ldo, std::byte* work) {
    using C = lane_codec<B>;
    using L = typename qgemm_layouts<B>::panel;
    const std::int64_t ng = qgemm_groups(k, C::lane);
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t p0 = 0; p0 < m; p0 += qgemm_panel) {
        const std::int64_t pr = m - p0 < qgemm_panel ? m - p0 : qgemm_panel;
        L::template pack<A, V>(k, pr, reinterpret_cast<const B*>(xb + static_cast<std::size_t>(p0) * xs), xs, work);
        qgemm_rows<A, V, C, L>(ng, work, pr, n, y, ys, out + p0, ldo);
    }
}
// Repacked rows (m % 4 == 0), 16 rows (four quads) per sweep over the columns; with fewer
// than qgemm_rn columns each quad is read once, in memory order, prefetched L::stream_ahead
// bytes ahead (measured in docs/kernels.md: q4_0 and q4_K gain, q8_0, whose hardware
// prefetch already keeps up, lost 3-7 % and has none).
template <class A, class V, class B>
void qgemm_rows4_wide(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
                      float* out, std::size_t ldo) {
    using C = lane_codec<B>;
    using L = typename qgemm_layouts<B>::rows4;
    const std::int64_t ng = qgemm_groups(k, C::lane);
    const std::size_t quad = static_cast<std::size_t>(4 * ng) * L::rec_bytes;
    for (std::int64_t p0 = 0; p0 < m; p0 += qgemm_panel) {
        const std::int64_t pr = m - p0 < qgemm_panel ? m - p0 : qgemm_panel;
        qgemm_rows<A, V, C, L, L::stream_ahead>(ng, x + static_cast<std::size_t>(p0 / 4) * quad, pr, n, y, ys, out + p0, ldo);
    }
}

// ---- scalar: the definition --------------------------------------------------------------
// Each block decoded by its codec, the lane terms added in row order.
template <class A, class B>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
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
                    const int l = static_cast<int>(ln % qgemm_group);
                    int s = 0, isum;
                    for (int e = 0; e < C::lane; ++e) {
                        const auto yq = static_cast<std::int8_t>(g[act_byte<C>(l, e)]);
                        const int w = C::wide ? static_cast<std::int8_t>(u[C::lane * j + e]) : u[C::lane * j + e];
                        s += w * yq;
                    }
                    float dy, bs;
                    std::memcpy(&dy, g + lay.dy + 4 * static_cast<std::size_t>(l), 4);
                    std::memcpy(&isum, g + lay.isum + 4 * static_cast<std::size_t>(l), 4);
                    std::memcpy(&bs, g + lay.bs + 4 * static_cast<std::size_t>(l), 4);
                    s -= C::off * isum;
                    if constexpr (C::min)
                        sum += static_cast<float>(s) * (ca[j] * dy) + cb[j] * bs;
                    else
                        sum += static_cast<float>(s) * (ca[j] * dy);
                }
            }
            out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)] = sum;
        }
    }
}
// Repacked rows in any layout: each group of rows unpacked to its plain rows (repack.hpp's
// walk), then the arch's plain-row GEMM, which gives the bits the repacked tiles give. The
// scalar path, and an arch reading a layout it has no tiles for.
template <class A, class B>
void qgemm_r4_unpacked(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, repack_layout lay,
                       const std::byte* y, std::size_t ys, float* out, std::size_t ldo) {
    constexpr type_id t = quant::block_traits<B>::id;
    const std::int64_t R = repack_group_rows(lay);
    const std::size_t rb = static_cast<std::size_t>(k / static_cast<std::int64_t>(quant::block_traits<B>::block_size)) * sizeof(B);
    const std::size_t group = repack_quad_bytes(t, k, lay);
    std::vector<B> rows(static_cast<std::size_t>(R) * rb / sizeof(B));
    std::vector<std::byte> work;
    if constexpr (!std::is_same_v<A, simd::scalar>) work.resize(qgemm_work_bytes(t, k) + 64);
    std::byte* w = work.empty() ? nullptr : work.data() + (64 - reinterpret_cast<std::uintptr_t>(work.data()) % 64) % 64;
    auto* plain = reinterpret_cast<unsigned char*>(rows.data());
    for (std::int64_t q = 0; q < m / R; ++q) {
        const auto* in = reinterpret_cast<const unsigned char*>(x + static_cast<std::size_t>(q) * group);
        repack_detail::for_each_run(
            t, lay, k, R, [&](std::size_t p, std::size_t r, std::size_t len) { std::memcpy(plain + p, in + r, len); },
            [&](std::size_t p, std::size_t r) { repack_detail::k4_pack_scales(in + r, in + r + 16, plain + p); });
        qgemm<A>(k, R, n, rows.data(), rb, y, ys, out + R * q, ldo, w, A{});
    }
}
template <class A, class B>
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, repack_layout lay, const std::byte* y,
              std::size_t ys, float* out, std::size_t ldo, simd::requires_arch<simd::scalar>) {
    qgemm_r4_unpacked<A, B>(k, m, n, x, lay, y, ys, out, ldo);
}

}  // namespace qdetail

// gemm_<T>: the kernel struct of block type T.
#define TESSERA_QGEMM_KERNEL_(T)                                                                              \
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
        qdetail::qgemm<A>(k, m, n, x, x_stride, y, y_stride, out, ldo, work, A{});                           \
    }                                                                                                        \
    TESSERA_KERNEL(gemm_##T)

// gemm_<T>_rows4: the same on repacked weights, stored in layout lay.
#define TESSERA_QGEMM_R4_KERNEL_(T)                                                                            \
    template <class A>                                                                                         \
    struct gemm_##T##_rows4 {                                                                                  \
        void operator()(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, repack_layout lay,  \
                        const std::byte* y, std::size_t y_stride, float* out, std::size_t ldo) const;          \
    };                                                                                                         \
    template <class A>                                                                                         \
    void gemm_##T##_rows4<A>::operator()(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x,   \
                                         repack_layout lay, const std::byte* y, std::size_t y_stride, float* out, \
                                         std::size_t ldo) const {                                              \
        qdetail::qgemm_r4<A, quant::block_##T>(k, m, n, x, lay, y, y_stride, out, ldo, A{});                    \
    }                                                                                                          \
    TESSERA_KERNEL(gemm_##T##_rows4)

TESSERA_QGEMM_KERNEL_(q4_0);
TESSERA_QGEMM_KERNEL_(q4_1);
TESSERA_QGEMM_KERNEL_(q5_0);
TESSERA_QGEMM_KERNEL_(q5_1);
TESSERA_QGEMM_KERNEL_(q8_0);
TESSERA_QGEMM_KERNEL_(q8_1);
TESSERA_QGEMM_KERNEL_(iq4_nl);
TESSERA_QGEMM_KERNEL_(mxfp4);
TESSERA_QGEMM_KERNEL_(q2_K);
TESSERA_QGEMM_KERNEL_(q3_K);
TESSERA_QGEMM_KERNEL_(q4_K);
TESSERA_QGEMM_KERNEL_(q5_K);
TESSERA_QGEMM_KERNEL_(q6_K);
TESSERA_QGEMM_KERNEL_(iq4_xs);
TESSERA_QGEMM_KERNEL_(tq1_0);
TESSERA_QGEMM_KERNEL_(tq2_0);
TESSERA_QGEMM_KERNEL_(nvfp4);
TESSERA_QGEMM_KERNEL_(q1_0);
TESSERA_QGEMM_KERNEL_(q2_0);
TESSERA_QGEMM_KERNEL_(iq2_xxs);
TESSERA_QGEMM_KERNEL_(iq2_xs);
TESSERA_QGEMM_KERNEL_(iq2_s);
TESSERA_QGEMM_KERNEL_(iq3_xxs);
TESSERA_QGEMM_KERNEL_(iq3_s);
TESSERA_QGEMM_KERNEL_(iq1_s);
TESSERA_QGEMM_KERNEL_(iq1_m);
TESSERA_QGEMM_R4_KERNEL_(q4_0);
TESSERA_QGEMM_R4_KERNEL_(q8_0);
TESSERA_QGEMM_R4_KERNEL_(q4_K);
TESSERA_QGEMM_R4_KERNEL_(iq4_nl);
#undef TESSERA_QGEMM_KERNEL_
#undef TESSERA_QGEMM_R4_KERNEL_

}  // namespace kernels
TESSERA_END_NAMESPACE
