// Reference dequantize / dot for ggml's lattice i-quants, all 256-element super-blocks
// against q8_K activations. Each group of 8 (or 4) values is an index into a grid of
// iq_grids.hpp, with signs and scales stored beside it:
//   iq2_xxs  per 32: four 8-bit grid indices (iq2xxs_grid) and one u32 holding four 7-bit
//            sign codes (bit 7 of each byte's sign = parity of the other seven) and a 4-bit
//            scale s: x = d (0.5 + s) / 4 * grid * sign
//   iq2_xs   per 8: a u16 (9-bit index into iq2xs_grid, 7-bit sign code); per 16 a 4-bit
//            scale s: x = d (0.5 + s) / 4 * grid * sign
//   iq2_s    per 8: 8 index bits in qs and 2 in qh (iq2s_grid), a sign byte; per 16 a
//            4-bit scale, as iq2_xs
//   iq3_xxs  per 4: an 8-bit index into iq3xxs_grid; per 32 a u32 of four sign codes and a
//            4-bit scale: x = d (0.5 + s) / 2 * grid * sign
//   iq3_s    per 4: 8 index bits in qs and 1 in qh (iq3s_grid); a sign byte per 8; per 64
//            a 4-bit scale: x = d (1 + 2 s) * grid * sign
//   iq1_s    per 8: 8 index bits in qs, 3 in qh (iq1s_grid, values -1, 0, 1); per 32 a 3-bit
//            scale and a sign for the shift delta = +-1/8: x = d (2 s + 1) (grid + delta)
//   iq1_m    as iq1_s, with a 3-bit scale per 16, a delta sign per 8, and the f16 d spread
//            over the top nibbles of the four u16 scale words
// The dot products follow ggml's portable kernels: exact integer sums per scale group,
// times the group's odd scale 2 s + 1, summed in i32 over the super-block, then one f32
// product by d_x d_y per super-block and the format's constant at the end (1/8 for the
// iq2 types, 1/4 for iq3_xxs). The iq1 types add delta (sum of q8 over the group) as
// their second term. The quantizers are in iq_quantize.hpp.
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/iq_grids.hpp"
#include "tessera/quant/ref_common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

namespace detail {

// A 7-bit sign code and its implied eighth bit (even parity over the byte): bit j set
// means value j is negative (ggml's ksigns_iq2xs).
TESSERA_ALWAYS_INLINE constexpr std::uint8_t iq_signs(std::uint32_t code7) noexcept {
    const std::uint32_t c = code7 & 127;
    return static_cast<std::uint8_t>(c | ((static_cast<std::uint32_t>(__builtin_popcount(c)) & 1) << 7));
}
static_assert(iq_signs(1) == 129 && iq_signs(3) == 3 && iq_signs(127) == 255 && iq_signs(126) == 126);

TESSERA_ALWAYS_INLINE std::uint8_t grid_byte(std::uint64_t g, int j) noexcept {
    return static_cast<std::uint8_t>(g >> (8 * j));
}
TESSERA_ALWAYS_INLINE std::int8_t grid_i8(std::uint64_t g, int j) noexcept {
    return static_cast<std::int8_t>(static_cast<std::uint8_t>(g >> (8 * j)));
}
TESSERA_ALWAYS_INLINE std::uint32_t load_u32(const void* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
// sum of q8[j] * grid value j * (sign bit j ? -1 : 1) over 8 (or 4) values
TESSERA_ALWAYS_INLINE int signed_grid_dot(std::uint64_t g, std::uint8_t signs, const std::int8_t* q8, int n) noexcept {
    int s = 0;
    for (int j = 0; j < n; ++j) {
        const int v = grid_byte(g, j) * q8[j];
        s += (signs >> j) & 1 ? -v : v;
    }
    return s;
}
// iq1_m's f16 super-block scale: the top nibble of each of its four u16 scale words
TESSERA_ALWAYS_INLINE f16 iq1m_scale(const block_iq1_m& b) noexcept {
    std::uint16_t sc[4];
    std::memcpy(sc, b.scales, 8);
    f16 h;
    h.bits = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    return h;
}
inline constexpr float iq1_delta = 0.125f;

}  // namespace detail

// ---- iq2_xxs ---------------------------------------------------------------------------
template <class Tag = void>
void dequantize_row_unchecked(const block_iq2_xxs* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const auto* q = reinterpret_cast<const std::uint8_t*>(x[b].qs + 4 * ib);
            const std::uint32_t aux = detail::load_u32(q + 4);
            const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const std::uint64_t g = iq2xxs_grid[q[l]];
                const std::uint8_t s = detail::iq_signs(aux >> (7 * l));
                for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(detail::grid_byte(g, j)) * ((s >> j) & 1 ? -1.f : 1.f);
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq2_xxs* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d) * y[b].d;
        const std::int8_t* q8 = y[b].qs;
        int bsum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const auto* q = reinterpret_cast<const std::uint8_t*>(x[b].qs + 4 * ib);
            const std::uint32_t aux = detail::load_u32(q + 4);
            int s = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) s += detail::signed_grid_dot(iq2xxs_grid[q[l]], detail::iq_signs(aux >> (7 * l)), q8, 8);
            bsum += s * static_cast<int>(2 * (aux >> 28) + 1);
        }
        sum += d * static_cast<float>(bsum);
    }
    return 0.125f * sum;
}

// ---- iq2_xs ----------------------------------------------------------------------------
template <class Tag = void>
void dequantize_row_unchecked(const block_iq2_xs* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db[2] = {d * (0.5f + static_cast<float>(x[b].scales[ib] & 0xf)) * 0.25f,
                                 d * (0.5f + static_cast<float>(x[b].scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, y += 8) {
                const std::uint16_t q = x[b].qs[4 * ib + l];
                const std::uint64_t g = iq2xs_grid[q & 511];
                const std::uint8_t s = detail::iq_signs(q >> 9);
                for (int j = 0; j < 8; ++j)
                    y[j] = db[l / 2] * static_cast<float>(detail::grid_byte(g, j)) * ((s >> j) & 1 ? -1.f : 1.f);
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq2_xs* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d) * y[b].d;
        const std::int8_t* q8 = y[b].qs;
        int bsum = 0;
        for (int ib = 0; ib < 8; ++ib)
            for (int h = 0; h < 2; ++h) {
                int s = 0;
                for (int l = 2 * h; l < 2 * h + 2; ++l, q8 += 8) {
                    const std::uint16_t q = x[b].qs[4 * ib + l];
                    s += detail::signed_grid_dot(iq2xs_grid[q & 511], detail::iq_signs(q >> 9), q8, 8);
                }
                bsum += s * (2 * ((x[b].scales[ib] >> (4 * h)) & 0xf) + 1);
            }
        sum += d * static_cast<float>(bsum);
    }
    return 0.125f * sum;
}

// ---- iq2_s -----------------------------------------------------------------------------
namespace detail {
TESSERA_ALWAYS_INLINE std::uint64_t iq2s_entry(const block_iq2_s& b, int ib, int l) noexcept {
    return iq2s_grid[b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300)];
}
}  // namespace detail
template <class Tag = void>
void dequantize_row_unchecked(const block_iq2_s* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        const std::uint8_t* signs = x[b].qs + qk_k / 8;
        for (int ib = 0; ib < 8; ++ib) {
            const float db[2] = {d * (0.5f + static_cast<float>(x[b].scales[ib] & 0xf)) * 0.25f,
                                 d * (0.5f + static_cast<float>(x[b].scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; ++l, y += 8) {
                const std::uint64_t g = detail::iq2s_entry(x[b], ib, l);
                const std::uint8_t s = signs[4 * ib + l];
                for (int j = 0; j < 8; ++j)
                    y[j] = db[l / 2] * static_cast<float>(detail::grid_byte(g, j)) * ((s >> j) & 1 ? -1.f : 1.f);
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq2_s* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d) * y[b].d;
        const std::int8_t* q8 = y[b].qs;
        const std::uint8_t* signs = x[b].qs + qk_k / 8;
        int bsum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int s[2] = {0, 0};
            for (int l = 0; l < 4; ++l, q8 += 8)
                s[l / 2] += detail::signed_grid_dot(detail::iq2s_entry(x[b], ib, l), signs[4 * ib + l], q8, 8);
            bsum += (1 + 2 * (x[b].scales[ib] & 0xf)) * s[0] + (1 + 2 * (x[b].scales[ib] >> 4)) * s[1];
        }
        sum += d * static_cast<float>(bsum);
    }
    return 0.125f * sum;
}

// ---- iq3_xxs ---------------------------------------------------------------------------
template <class Tag = void>
void dequantize_row_unchecked(const block_iq3_xxs* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        const std::uint8_t* qs = x[b].qs;
        for (int ib = 0; ib < 8; ++ib, qs += 8) {
            const std::uint32_t aux = detail::load_u32(x[b].qs + qk_k / 4 + 4 * ib);
            const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l, y += 8) {
                const std::uint8_t s = detail::iq_signs(aux >> (7 * l));
                const std::uint32_t g1 = iq3xxs_grid[qs[2 * l]], g2 = iq3xxs_grid[qs[2 * l + 1]];
                for (int j = 0; j < 4; ++j) {
                    y[j] = db * static_cast<float>(detail::grid_byte(g1, j)) * ((s >> j) & 1 ? -1.f : 1.f);
                    y[j + 4] = db * static_cast<float>(detail::grid_byte(g2, j)) * ((s >> (j + 4)) & 1 ? -1.f : 1.f);
                }
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq3_xxs* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d) * y[b].d;
        const std::int8_t* q8 = y[b].qs;
        const std::uint8_t* qs = x[b].qs;
        int bsum = 0;
        for (int ib = 0; ib < 8; ++ib, qs += 8) {
            const std::uint32_t aux = detail::load_u32(x[b].qs + qk_k / 4 + 4 * ib);
            int s = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const std::uint8_t sg = detail::iq_signs(aux >> (7 * l));
                s += detail::signed_grid_dot(iq3xxs_grid[qs[2 * l]], sg, q8, 4) +
                     detail::signed_grid_dot(iq3xxs_grid[qs[2 * l + 1]], static_cast<std::uint8_t>(sg >> 4), q8 + 4, 4);
            }
            bsum += s * static_cast<int>(2 * (aux >> 28) + 1);
        }
        sum += d * static_cast<float>(bsum);
    }
    return 0.25f * sum;
}

// ---- iq3_s -----------------------------------------------------------------------------
namespace detail {
// the grid entries of values 8l..8l+3 and 8l+4..8l+7 of 32-block ib
TESSERA_ALWAYS_INLINE std::uint32_t iq3s_entry(const block_iq3_s& b, int ib, int l, int half) noexcept {
    const int k = 2 * l + half;
    return iq3s_grid[b.qs[8 * ib + k] | ((b.qh[ib] << (8 - k)) & 256)];
}
}  // namespace detail
template <class Tag = void>
void dequantize_row_unchecked(const block_iq3_s* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db = d * static_cast<float>(1 + 2 * ((x[b].scales[ib / 2] >> (4 * (ib % 2))) & 0xf));
            for (int l = 0; l < 4; ++l, y += 8) {
                const std::uint8_t s = x[b].signs[4 * ib + l];
                const std::uint32_t g1 = detail::iq3s_entry(x[b], ib, l, 0), g2 = detail::iq3s_entry(x[b], ib, l, 1);
                for (int j = 0; j < 4; ++j) {
                    y[j] = db * static_cast<float>(detail::grid_byte(g1, j)) * ((s >> j) & 1 ? -1.f : 1.f);
                    y[j + 4] = db * static_cast<float>(detail::grid_byte(g2, j)) * ((s >> (j + 4)) & 1 ? -1.f : 1.f);
                }
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq3_s* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d) * y[b].d;
        const std::int8_t* q8 = y[b].qs;
        int bsum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int s = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const std::uint8_t sg = x[b].signs[4 * ib + l];
                s += detail::signed_grid_dot(detail::iq3s_entry(x[b], ib, l, 0), sg, q8, 4) +
                     detail::signed_grid_dot(detail::iq3s_entry(x[b], ib, l, 1), static_cast<std::uint8_t>(sg >> 4), q8 + 4, 4);
            }
            bsum += s * (2 * ((x[b].scales[ib / 2] >> (4 * (ib % 2))) & 0xf) + 1);
        }
        sum += d * static_cast<float>(bsum);
    }
    return sum;
}

// ---- iq1_s -----------------------------------------------------------------------------
template <class Tag = void>
void dequantize_row_unchecked(const block_iq1_s* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(x[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint16_t qh = x[b].qh[ib];
            const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -detail::iq1_delta : detail::iq1_delta;
            for (int l = 0; l < 4; ++l, y += 8) {
                const std::uint64_t g = iq1s_grid[x[b].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(detail::grid_i8(g, j)) + delta);
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq1_s* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const std::int8_t* q8 = y[b].qs;
        int sumi = 0, sumi1 = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint16_t qh = x[b].qh[ib];
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            const int delta = qh & 0x8000 ? -1 : 1;
            int lsum = 0;
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const std::uint64_t g = iq1s_grid[x[b].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; ++j) lsum += q8[j] * detail::grid_i8(g, j);
            }
            sumi += ls * lsum;
            sumi1 += ls * delta * (y[b].bsums[2 * ib] + y[b].bsums[2 * ib + 1]);
        }
        const float t = static_cast<float>(sumi) + detail::rounded(detail::iq1_delta * static_cast<float>(sumi1));
        sum += detail::widen<Tag>(x[b].d) * y[b].d * t;
    }
    return sum;
}

// ---- iq1_m -----------------------------------------------------------------------------
namespace detail {
TESSERA_ALWAYS_INLINE int iq1m_ls(const block_iq1_m& b, int ib, int h) noexcept {
    std::uint16_t sc;
    std::memcpy(&sc, b.scales + 2 * (ib / 2), 2);
    return 2 * ((sc >> (6 * (ib % 2) + 3 * h)) & 7) + 1;
}
// grid entry of values 8l..8l+7 of 32-block ib (l < 4), and its delta sign bit
TESSERA_ALWAYS_INLINE std::uint64_t iq1m_entry(const block_iq1_m& b, int ib, int l) noexcept {
    const std::uint8_t qh = b.qh[2 * ib + l / 2];
    return iq1s_grid[b.qs[4 * ib + l] | ((static_cast<std::uint32_t>(qh) << (8 - 4 * (l % 2))) & 0x700)];
}
TESSERA_ALWAYS_INLINE bool iq1m_negative(const block_iq1_m& b, int ib, int l) noexcept {
    return (b.qh[2 * ib + l / 2] >> (3 + 4 * (l % 2))) & 1;
}
}  // namespace detail
template <class Tag = void>
void dequantize_row_unchecked(const block_iq1_m* x, float* y, std::int64_t n) noexcept {
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const float d = detail::widen<Tag>(detail::iq1m_scale(x[b]));
        for (int ib = 0; ib < 8; ++ib) {
            const float dl[2] = {d * static_cast<float>(detail::iq1m_ls(x[b], ib, 0)),
                                 d * static_cast<float>(detail::iq1m_ls(x[b], ib, 1))};
            for (int l = 0; l < 4; ++l, y += 8) {
                const std::uint64_t g = detail::iq1m_entry(x[b], ib, l);
                const float delta = detail::iq1m_negative(x[b], ib, l) ? -detail::iq1_delta : detail::iq1_delta;
                for (int j = 0; j < 8; ++j) y[j] = dl[l / 2] * (static_cast<float>(detail::grid_i8(g, j)) + delta);
            }
        }
    }
}
template <class Tag = void>
float vec_dot_unchecked(std::int64_t n, const block_iq1_m* x, const block_q8_K* y) noexcept {
    float sum = 0;
    for (std::int64_t b = 0; b < n / qk_k; ++b) {
        const std::int8_t* q8 = y[b].qs;
        int sumi1 = 0, sumi2 = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int s1[2] = {0, 0}, s2[2] = {0, 0};
            for (int l = 0; l < 4; ++l, q8 += 8) {
                const std::uint64_t g = detail::iq1m_entry(x[b], ib, l);
                int lsum1 = 0, lsum2 = 0;
                for (int j = 0; j < 8; ++j) {
                    lsum1 += q8[j] * detail::grid_i8(g, j);
                    lsum2 += q8[j];
                }
                s1[l / 2] += lsum1;
                s2[l / 2] += detail::iq1m_negative(x[b], ib, l) ? -lsum2 : lsum2;
            }
            const int ls1 = detail::iq1m_ls(x[b], ib, 0), ls2 = detail::iq1m_ls(x[b], ib, 1);
            sumi1 += s1[0] * ls1 + s1[1] * ls2;
            sumi2 += s2[0] * ls1 + s2[1] * ls2;
        }
        const float t = static_cast<float>(sumi1) + detail::rounded(detail::iq1_delta * static_cast<float>(sumi2));
        sum += detail::widen<Tag>(detail::iq1m_scale(x[b])) * y[b].d * t;
    }
    return sum;
}

}  // namespace quant
TESSERA_END_NAMESPACE
