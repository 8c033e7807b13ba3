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
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/core/type_id.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

inline constexpr std::int64_t repack_rows = 4;   // rows per quad
inline constexpr std::int64_t repack_lanes = 16;  // blocks per record

// Bytes of one record (16 blocks of one row) of a repackable type; 0 for the others.
constexpr std::size_t repack_record_bytes(type_id t) noexcept {
    return t == type_id::q4_0 ? 288 : t == type_id::q8_0 ? 544 : t == type_id::q4_K ? 296 : 0;
}
constexpr std::size_t repack_quant_bytes(type_id t) noexcept {  // the qs part of a record
    return t == type_id::q8_0 ? 512 : 256;
}
constexpr std::int64_t repack_groups(std::int64_t k) noexcept { return (k / 32 + repack_lanes - 1) / repack_lanes; }

// Whether rows of k elements, nrows of them, can be stored repacked.
constexpr bool can_repack(type_id t, std::int64_t k, std::int64_t nrows) noexcept {
    return repack_record_bytes(t) != 0 && k > 0 && k % (t == type_id::q4_K ? 256 : 32) == 0 && nrows > 0 &&
           nrows % repack_rows == 0;
}
constexpr std::size_t repack_quad_bytes(type_id t, std::int64_t k) noexcept {
    return static_cast<std::size_t>(repack_rows * repack_groups(k)) * repack_record_bytes(t);
}
// Bytes of the repacked matrix (can_repack must hold).
constexpr std::size_t repacked_bytes(type_id t, std::int64_t k, std::int64_t nrows) noexcept {
    return static_cast<std::size_t>(nrows / repack_rows) * repack_quad_bytes(t, k);
}

namespace repack_detail {
// Calls f(plain byte offset, packed byte offset, length) for every run of bytes the
// repack moves; the same walk serves both directions. For q4_K it also calls
// sc(plain offset of a super-block's scales[12], packed offset of its lane 0's scale
// byte) for each super-block: those bytes are re-encoded, not moved.
template <class F, class S>
void for_each_run(type_id t, std::int64_t k, std::int64_t nrows, F&& f, S&& sc) {
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
inline void repack_matrix(type_id t, std::int64_t k, std::int64_t nrows, const void* plain, void* packed) {
    auto* out = static_cast<unsigned char*>(packed);
    const auto* in = static_cast<const unsigned char*>(plain);
    if (k / 32 % repack_lanes != 0) std::memset(out, 0, repacked_bytes(t, k, nrows));
    repack_detail::for_each_run(
        t, k, nrows, [&](std::size_t p, std::size_t q, std::size_t n) { std::memcpy(out + q, in + p, n); },
        [&](std::size_t p, std::size_t q) { repack_detail::k4_unpack_scales(in + p, out + q, out + q + 16); });
}
// packed -> plain (nrows * row bytes of ggml blocks).
inline void unpack_matrix(type_id t, std::int64_t k, std::int64_t nrows, const void* packed, void* plain) {
    auto* out = static_cast<unsigned char*>(plain);
    const auto* in = static_cast<const unsigned char*>(packed);
    repack_detail::for_each_run(
        t, k, nrows, [&](std::size_t p, std::size_t q, std::size_t n) { std::memcpy(out + p, in + q, n); },
        [&](std::size_t p, std::size_t q) { repack_detail::k4_pack_scales(in + q, in + q + 16, out + p); });
}

}  // namespace kernels
TESSERA_END_NAMESPACE
