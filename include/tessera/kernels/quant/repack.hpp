// The repacked weight layout ("rows4_x16") of q4_0, q8_0 and q4_K matrices: what the
// CPU_REPACK buffer type (backend/cpu/repack.hpp) stores and the packed GEMM (gemm.hpp,
// gemm_q4_0_rows4 / gemm_q8_0_rows4 / gemm_q4_K_rows4) reads without any per-call packing.
//
// A matrix of nrows rows (nrows % 4 == 0) of k elements (k % 32 == 0, nb = k / 32 blocks
// of 32 elements; for q4_K k % 256 == 0 and the "blocks" are the 32-element sub-blocks)
// is cut into quads of four consecutive rows and each row into ng = ceil(nb / 16) groups
// of 16 blocks. The records are stored quad by quad, group by group, row by row:
//
//   record(quad q, group g, row i) at  q * quad_bytes + (g * 4 + i) * record_bytes
//   quad_bytes = 4 * ng * record_bytes
//
// so that the GEMM, which works on four rows at a time, reads memory strictly in order
// (one prefetch stream). One record holds lanes l = 0..15, block g * 16 + l of the row:
//
//   q4_0 (288 bytes):  byte s*64 + l*4 + j = qs[s*4 + j] of the block  (s < 4, j < 4)
//                      bytes 256 + 2l      = d of the block (f16)
//   q8_0 (544 bytes):  byte t*64 + l*4 + j = qs[t*4 + j] of the block  (t < 8, j < 4)
//                      bytes 512 + 2l      = d of the block (f16)
//
// A q4_0 byte keeps both nibbles (element s*4 + j low, element 16 + s*4 + j high), so one
// 64-byte load gives elements 4s..4s+3 (low nibbles) and 16+4s.. (high nibbles) of 16
// blocks: the x16 order of gemm.hpp. Lanes past nb in the last group are zero bytes.
//
// q4_K (296 bytes): a record is two super-blocks h = 0, 1 (super-block 2g + h of the row),
// lane l = 8h + j its sub-block j. A q4_K byte qs[32c + e] holds element e of sub-blocks
// 2c (low nibble) and 2c + 1 (high nibble), so a byte serves the lane pair (2p, 2p + 1),
// p = 4h + c; the pair's bytes e = 8s..8s+3 go to lane slot 2p of chunk s, e = 8s+4..8s+7
// to slot 2p + 1:
//                      byte s*64 + 8p + i  = qs[32c + 8s + i] of super-block h  (s < 4, i < 8)
//                      byte 256 + l        = 6-bit scale of lane l  (unpacked from scales[12])
//                      byte 272 + l        = 6-bit min of lane l
//                      bytes 288 + 2h      = d of super-block h (f16), 292 + 2h = dmin
// (gemm.hpp's w_k4 turns a chunk into two x16 vectors with a blend and a slot swap.) The
// eight scales and eight mins take all 96 bits of scales[12], so their unpacked bytes
// give the 12 bytes back; a missing second super-block (odd k / 256) is zero bytes.
//
// The repack is a permutation of the bytes (plus that padding; for q4_K the scale bytes
// are re-encoded one value a byte): unpack gives the plain bytes back exactly, and when
// nb % 16 == 0 the q4_0/q8_0 repacked matrix has the plain size (q4_K: 296 / 288 of it).
//
// The ARM layouts (q4_0 and iq4_nl, whose blocks are both an f16 d and 16 bytes of
// nibbles; what the AArch64 GEMM of kernels/arm/quant/gemm.hpp reads: the roles of ggml's
// q4_0_4x4, q4_0_4x8, q4_0_8x8 and iq4_nl_4x4). R rows (4 or 8) are interleaved block by
// block, I bytes (4 or 8) of each row's quants at a time:
//
//   rows4_b4 (R 4, I 4): dot product with a lane-indexed SDOT (neon, dotprod)
//   rows4_b8 (R 4, I 8): SMMLA, two rows by two columns of 8 bytes (i8mm)
//   rows8_b8 (R 8, I 8): the same over four row pairs (sve; needs nrows % 8 == 0)
//
//   block b of row group q at  q * R * nb * 18 + b * 18R
//   bytes 2i, 2i + 1           = d of row i's block b (f16)
//   bytes 2R + (c*R + i)*I + j = qs[c*I + j] of row i's block b  (c < 16 / I, j < I)
//
// (a byte holds element c*I + j in its low nibble and 16 + c*I + j in its high one).
// No padding: the repacked matrix has the plain size. repack_layout_for picks the layout
// of a type for an arch (x86 and the other types: rows4_x16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tessera/config.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

inline constexpr std::int64_t repack_rows = 4;   // rows per quad (rows4_x16)
inline constexpr std::int64_t repack_lanes = 16;  // blocks per record (rows4_x16)

enum class repack_layout : std::uint8_t { rows4_x16, rows4_b4, rows4_b8, rows8_b8 };

constexpr std::string_view repack_layout_name(repack_layout l) noexcept {
    switch (l) {
        case repack_layout::rows4_x16: return "rows4_x16";
        case repack_layout::rows4_b4: return "rows4_b4";
        case repack_layout::rows4_b8: return "rows4_b8";
        case repack_layout::rows8_b8: return "rows8_b8";
    }
    return "?";
}
// Rows interleaved together (a group of rows, the unit the GEMM reads).
constexpr std::int64_t repack_group_rows(repack_layout l) noexcept { return l == repack_layout::rows8_b8 ? 8 : 4; }
// Bytes of one row's quants taken at a time (ARM layouts).
constexpr std::size_t repack_interleave(repack_layout l) noexcept { return l == repack_layout::rows4_b4 ? 4 : 8; }

// Bytes of one record (16 blocks of one row) of a type rows4_x16 can store; 0 for the others.
constexpr std::size_t repack_record_bytes(type_id t) noexcept {
    return t == type_id::q4_0 ? 288 : t == type_id::q8_0 ? 544 : t == type_id::q4_K ? 296 : 0;
}
constexpr std::size_t repack_quant_bytes(type_id t) noexcept {  // the qs part of a record
    return t == type_id::q8_0 ? 512 : 256;
}
constexpr std::int64_t repack_groups(std::int64_t k) noexcept { return (k / 32 + repack_lanes - 1) / repack_lanes; }

// Whether layout l stores type t at all.
constexpr bool repack_layout_has(repack_layout l, type_id t) noexcept {
    return l == repack_layout::rows4_x16 ? repack_record_bytes(t) != 0 : t == type_id::q4_0 || t == type_id::iq4_nl;
}
// Whether rows of k elements, nrows of them, can be stored repacked in layout l.
constexpr bool can_repack(type_id t, std::int64_t k, std::int64_t nrows, repack_layout l = repack_layout::rows4_x16) noexcept {
    return repack_layout_has(l, t) && k > 0 && k % (t == type_id::q4_K ? 256 : 32) == 0 && nrows > 0 &&
           nrows % repack_group_rows(l) == 0;
}
// Bytes of one group of rows (repack_group_rows(l) rows).
constexpr std::size_t repack_quad_bytes(type_id t, std::int64_t k, repack_layout l = repack_layout::rows4_x16) noexcept {
    if (l != repack_layout::rows4_x16) return static_cast<std::size_t>(repack_group_rows(l) * (k / 32)) * 18;
    return static_cast<std::size_t>(repack_rows * repack_groups(k)) * repack_record_bytes(t);
}
// Bytes of the repacked matrix (can_repack must hold).
constexpr std::size_t repacked_bytes(type_id t, std::int64_t k, std::int64_t nrows,
                                     repack_layout l = repack_layout::rows4_x16) noexcept {
    return static_cast<std::size_t>(nrows / repack_group_rows(l)) * repack_quad_bytes(t, k, l);
}

// The layout CPU_REPACK stores t in when the CPU runs arch a: on AArch64, q4_0 and iq4_nl
// in the interleave of a's GEMM (rows8_b8 on SVE when nrows % 8 == 0, rows4_b8 from i8mm,
// rows4_b4 below: every ARM layout has the plain size, so the choice never changes the
// allocation); everything else rows4_x16 (iq4_nl, which that layout lacks, stays plain
// on x86).
constexpr repack_layout repack_layout_for(type_id t, [[maybe_unused]] std::int64_t nrows, [[maybe_unused]] simd::arch_id a) noexcept {
#if defined(TESSERA_AARCH64)
    if (t == type_id::q4_0 || t == type_id::iq4_nl) {
        if (a == simd::arch_id::sve && nrows % 8 == 0) return repack_layout::rows8_b8;
        if (a == simd::arch_id::i8mm || a == simd::arch_id::sve) return repack_layout::rows4_b8;
        return repack_layout::rows4_b4;
    }
#endif
    (void)t;
    return repack_layout::rows4_x16;
}

namespace repack_detail {
// The runs of one block of row i in an ARM layout (R rows, I bytes at a time): f(offset
// in the plain block, offset in the group's record of that block, length).
template <class F>
TESSERA_ALWAYS_INLINE void arm_block_runs(std::int64_t R, std::size_t I, std::size_t i, F&& f) {
    f(std::size_t{0}, 2 * i, std::size_t{2});
    for (std::size_t c = 0; c < 16 / I; ++c) f(2 + c * I, static_cast<std::size_t>(2 * R) + (c * static_cast<std::size_t>(R) + i) * I, I);
}
// Calls f(plain byte offset, packed byte offset, length) for every run of bytes the
// repack moves; the same walk serves both directions. For q4_K it also calls
// sc(plain offset of a super-block's scales[12], packed offset of its lane 0's scale
// byte) for each super-block: those bytes are re-encoded, not moved.
template <class F, class S>
void for_each_run(type_id t, repack_layout lay, std::int64_t k, std::int64_t nrows, F&& f, S&& sc) {
    if (lay != repack_layout::rows4_x16) {  // q4_0 / iq4_nl, R rows interleaved I bytes at a time
        const std::int64_t R = repack_group_rows(lay), nb = k / 32;
        const std::size_t I = repack_interleave(lay), rec = static_cast<std::size_t>(18 * R);
        const std::size_t row_bytes = static_cast<std::size_t>(nb) * 18;
        for (std::int64_t r = 0; r < nrows; ++r) {
            const auto i = static_cast<std::size_t>(r % R);
            const std::size_t grp = static_cast<std::size_t>(r / R) * static_cast<std::size_t>(R) * row_bytes;
            for (std::int64_t b = 0; b < nb; ++b) {
                const std::size_t src = static_cast<std::size_t>(r) * row_bytes + static_cast<std::size_t>(b) * 18;
                const std::size_t dst = grp + static_cast<std::size_t>(b) * rec;
                arm_block_runs(R, I, i, [&](std::size_t p, std::size_t q, std::size_t n) { f(src + p, dst + q, n); });
            }
        }
        return;
    }
    const std::size_t rec = repack_record_bytes(t), qbytes = repack_quant_bytes(t), quad = repack_quad_bytes(t, k);
    const auto i_of = [](std::int64_t r) { return static_cast<std::size_t>(r % repack_rows); };
    const auto q_of = [&](std::int64_t r) { return static_cast<std::size_t>(r / repack_rows) * quad; };
    if (t == type_id::q4_K) {  // 144-byte super-blocks: d, dmin, scales[12], qs[128]
        const std::int64_t nsb = k / 256;
        const std::size_t row_bytes = static_cast<std::size_t>(nsb) * 144;
        for (std::int64_t r = 0; r < nrows; ++r)
            for (std::int64_t b = 0; b < nsb; ++b) {
                const std::size_t src = static_cast<std::size_t>(r) * row_bytes + static_cast<std::size_t>(b) * 144;
                const std::size_t dst = q_of(r) + (static_cast<std::size_t>(b / 2) * repack_rows + i_of(r)) * rec;
                const auto h = static_cast<std::size_t>(b % 2);
                f(src, dst + 288 + 2 * h, std::size_t{2});      // d
                f(src + 2, dst + 292 + 2 * h, std::size_t{2});  // dmin
                sc(src + 4, dst + 256 + 8 * h);
                for (std::size_t c = 0; c < 4; ++c)
                    for (std::size_t s = 0; s < 4; ++s)
                        f(src + 16 + 32 * c + 8 * s, dst + 64 * s + 8 * (4 * h + c), std::size_t{8});
            }
        return;
    }
    const std::size_t bsz = t == type_id::q4_0 ? 18 : 34;  // plain block: f16 d, then qs
    const std::int64_t nb = k / 32;
    const std::size_t row_bytes = static_cast<std::size_t>(nb) * bsz;
    const int chunks = static_cast<int>(qbytes / 64);
    for (std::int64_t r = 0; r < nrows; ++r) {
        for (std::int64_t b = 0; b < nb; ++b) {
            const std::size_t src = static_cast<std::size_t>(r) * row_bytes + static_cast<std::size_t>(b) * bsz;
            const std::size_t dst = q_of(r) + (static_cast<std::size_t>(b / repack_lanes) * repack_rows + i_of(r)) * rec;
            const auto l = static_cast<std::size_t>(b % repack_lanes);
            f(src, dst + qbytes + 2 * l, std::size_t{2});  // d
            for (int s = 0; s < chunks; ++s)
                f(src + 2 + 4 * static_cast<std::size_t>(s), dst + 64 * static_cast<std::size_t>(s) + 4 * l, std::size_t{4});
        }
    }
}

// q4_K's scales[12] <-> eight 6-bit scales sc[0..7] and eight mins m[0..7] (ggml's
// get_scale_min_k4 and its inverse; all 96 bits are used, so both are bijections).
TESSERA_ALWAYS_INLINE void k4_unpack_scales(const unsigned char* q, unsigned char* sc, unsigned char* m) noexcept {
    for (int j = 0; j < 4; ++j) {
        sc[j] = q[j] & 63;
        m[j] = q[j + 4] & 63;
        sc[j + 4] = static_cast<unsigned char>((q[j + 8] & 0xF) | ((q[j] >> 6) << 4));
        m[j + 4] = static_cast<unsigned char>((q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4));
    }
}
TESSERA_ALWAYS_INLINE void k4_pack_scales(const unsigned char* sc, const unsigned char* m, unsigned char* q) noexcept {
    for (int j = 0; j < 4; ++j) {
        q[j] = static_cast<unsigned char>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = static_cast<unsigned char>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        q[j + 8] = static_cast<unsigned char>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}
}  // namespace repack_detail

// plain (nrows rows of ggml blocks) -> packed (repacked_bytes); padding lanes zeroed.
inline void repack_matrix(type_id t, std::int64_t k, std::int64_t nrows, const void* plain, void* packed,
                          repack_layout l = repack_layout::rows4_x16) {
    auto* out = static_cast<unsigned char*>(packed);
    const auto* in = static_cast<const unsigned char*>(plain);
    if (l == repack_layout::rows4_x16 && k / 32 % repack_lanes != 0) std::memset(out, 0, repacked_bytes(t, k, nrows, l));
    repack_detail::for_each_run(
        t, l, k, nrows, [&](std::size_t p, std::size_t q, std::size_t n) { std::memcpy(out + q, in + p, n); },
        [&](std::size_t p, std::size_t q) { repack_detail::k4_unpack_scales(in + p, out + q, out + q + 16); });
}
// packed -> plain (nrows * row bytes of ggml blocks).
inline void unpack_matrix(type_id t, std::int64_t k, std::int64_t nrows, const void* packed, void* plain,
                          repack_layout l = repack_layout::rows4_x16) {
    auto* out = static_cast<unsigned char*>(plain);
    const auto* in = static_cast<const unsigned char*>(packed);
    repack_detail::for_each_run(
        t, l, k, nrows, [&](std::size_t p, std::size_t q, std::size_t n) { std::memcpy(out + p, in + q, n); },
        [&](std::size_t p, std::size_t q) { repack_detail::k4_pack_scales(in + q, in + q + 16, out + p); });
}

}  // namespace kernels
TESSERA_END_NAMESPACE
