// The repacked weight layout ("rows4_x16") of q4_0 and q8_0 matrices: what the CPU_REPACK
// buffer type (backend/repack.hpp) stores and the packed GEMM (gemm.hpp,
// gemm_q4_0_rows4 / gemm_q8_0_rows4) reads without any per-call packing.
//
// A matrix of nrows rows (nrows % 4 == 0) of k elements (k % 32 == 0, nb = k / 32 blocks)
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
// The repack is a permutation of the bytes (plus that padding): unpack gives the plain
// bytes back exactly, and when nb % 16 == 0 the repacked matrix has the plain size.
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
    return t == type_id::q4_0 ? 288 : t == type_id::q8_0 ? 544 : 0;
}
constexpr std::size_t repack_quant_bytes(type_id t) noexcept {  // the qs part of a record
    return t == type_id::q4_0 ? 256 : 512;
}
constexpr std::int64_t repack_groups(std::int64_t k) noexcept { return (k / 32 + repack_lanes - 1) / repack_lanes; }

// Whether rows of k elements, nrows of them, can be stored repacked.
constexpr bool can_repack(type_id t, std::int64_t k, std::int64_t nrows) noexcept {
    return repack_record_bytes(t) != 0 && k > 0 && k % 32 == 0 && nrows > 0 && nrows % repack_rows == 0;
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
// repack moves; the same walk serves both directions.
template <class F>
void for_each_run(type_id t, std::int64_t k, std::int64_t nrows, F&& f) {
    const std::size_t bsz = t == type_id::q4_0 ? 18 : 34;  // plain block: f16 d, then qs
    const std::size_t rec = repack_record_bytes(t), qbytes = repack_quant_bytes(t);
    const std::int64_t nb = k / 32;
    const std::size_t row_bytes = static_cast<std::size_t>(nb) * bsz, quad = repack_quad_bytes(t, k);
    const int chunks = static_cast<int>(qbytes / 64);
    for (std::int64_t r = 0; r < nrows; ++r) {
        const std::size_t qbase = static_cast<std::size_t>(r / repack_rows) * quad;
        const auto i = static_cast<std::size_t>(r % repack_rows);
        for (std::int64_t b = 0; b < nb; ++b) {
            const std::size_t src = static_cast<std::size_t>(r) * row_bytes + static_cast<std::size_t>(b) * bsz;
            const std::size_t dst = qbase + (static_cast<std::size_t>(b / repack_lanes) * repack_rows + i) * rec;
            const auto l = static_cast<std::size_t>(b % repack_lanes);
            f(src, dst + qbytes + 2 * l, std::size_t{2});  // d
            for (int s = 0; s < chunks; ++s)
                f(src + 2 + 4 * static_cast<std::size_t>(s), dst + 64 * static_cast<std::size_t>(s) + 4 * l, std::size_t{4});
        }
    }
}
}  // namespace repack_detail

// plain (nrows rows of ggml blocks) -> packed (repacked_bytes); padding lanes zeroed.
inline void repack_matrix(type_id t, std::int64_t k, std::int64_t nrows, const void* plain, void* packed) {
    auto* out = static_cast<unsigned char*>(packed);
    const auto* in = static_cast<const unsigned char*>(plain);
    if (k / 32 % repack_lanes != 0) std::memset(out, 0, repacked_bytes(t, k, nrows));
    repack_detail::for_each_run(t, k, nrows, [&](std::size_t p, std::size_t q, std::size_t n) { std::memcpy(out + q, in + p, n); });
}
// packed -> plain (nrows * row bytes of ggml blocks).
inline void unpack_matrix(type_id t, std::int64_t k, std::int64_t nrows, const void* packed, void* plain) {
    auto* out = static_cast<unsigned char*>(plain);
    const auto* in = static_cast<const unsigned char*>(packed);
    repack_detail::for_each_run(t, k, nrows, [&](std::size_t p, std::size_t q, std::size_t n) { std::memcpy(out + p, in + q, n); });
}

}  // namespace kernels
TESSERA_END_NAMESPACE
