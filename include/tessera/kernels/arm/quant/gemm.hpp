// AArch64 bodies of the quantized GEMM of kernels/quant/gemm.hpp: the 128-bit vector
// traits its width-generic tiles run on (qv128: 4 lanes per vector, four quarters per
// group of 16 lanes) and the overloads that bind every ARM level to them. The panels are
// packed by the engine's portable decoders and transpose.
//
// The engine's u8 x s8 step (vpdpbusd on x86) is a signed 8-bit dot here: SDOT from
// dotprod on, SMULL + SADDLP + ADDP on plain Advanced SIMD. Every non-wide type's u is
// at most 63, so signed and unsigned readings agree; the wide types (q8_0, q8_1, iq4_nl,
// iq4_xs) take the engine's non-VNNI path, whose |w| against sign(y, w) is here w
// against y directly (abs8 and sign8 are the identity): the same exact integer, and no
// |-128| to overflow a signed byte. i8mm and sve run the dotprod tiles (SMMLA's 2 x 2
// blocks and SVE's lengths do not fit the x16 order; see docs/kernels.md). Part of
// kernels/quant/gemm.hpp, which includes it after its forward declarations.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_AARCH64)

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <arm_neon.h>

#include "tessera/kernels/quant/common.hpp"
#include "tessera/kernels/quant/repack.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

template <class A>
struct qv128 {
    using arch = A;
    using vi = int32x4_t;
    using vf = float32x4_t;
    static constexpr int halves = 4;   // vectors per group of 16 lanes
    static constexpr bool vnni = false;
    static TESSERA_ALWAYS_INLINE vi load(const void* p) { return vreinterpretq_s32_u8(vld1q_u8(static_cast<const std::uint8_t*>(p))); }
    static TESSERA_ALWAYS_INLINE vf loadf(const void* p) { return vld1q_f32(static_cast<const float*>(p)); }
    static TESSERA_ALWAYS_INLINE vi zero() { return vdupq_n_s32(0); }
    static TESSERA_ALWAYS_INLINE vf zerof() { return vdupq_n_f32(0.0f); }
    static TESSERA_ALWAYS_INLINE vi dpbusd(vi acc, vi u, vi s) {
        const int8x16_t a = vreinterpretq_s8_s32(u), b = vreinterpretq_s8_s32(s);
        if constexpr (simd::at_least<A, simd::dotprod>) {
            return vdotq_s32(acc, a, b);
        } else {  // four products per 32-bit slot: pairs in i16 -> i32, then adjacent pairs
            const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
            const int32x4_t hi = vpaddlq_s16(vmull_high_s8(a, b));
            return vaddq_s32(acc, vpaddq_s32(lo, hi));
        }
    }
    static TESSERA_ALWAYS_INLINE vi neg_shl(vi v, int sh) { return vnegq_s32(vshlq_s32(v, vdupq_n_s32(sh))); }
    static TESSERA_ALWAYS_INLINE vi flip(vi v) { return veorq_s32(v, vdupq_n_s32(static_cast<std::int32_t>(0x80808080u))); }
    static TESSERA_ALWAYS_INLINE vi abs8(vi v) { return v; }      // signed dot: w itself
    static TESSERA_ALWAYS_INLINE vi sign8(vi y, vi) { return y; }  // against y itself
    static TESSERA_ALWAYS_INLINE vf fma(vi p, vf s, vf acc) { return vfmaq_f32(acc, vcvtq_f32_s32(p), s); }
    static TESSERA_ALWAYS_INLINE vf mul(vf a, vf b) { return vmulq_f32(a, b); }
    static TESSERA_ALWAYS_INLINE float hsum(vf v) { return vaddvq_f32(v); }
    static TESSERA_ALWAYS_INLINE vi lo4(vi v) { return vandq_s32(v, vdupq_n_s32(0x0F0F0F0F)); }
    static TESSERA_ALWAYS_INLINE vi hi4(vi v) { return vreinterpretq_s32_u8(vshrq_n_u8(vreinterpretq_u8_s32(v), 4)); }
    static TESSERA_ALWAYS_INLINE vf load_h(const void* p) {  // 4 f16
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const std::uint16_t*>(p))));
    }
    static TESSERA_ALWAYS_INLINE vf fnmadd(vf a, vf b, vf acc) { return vfmsq_f32(acc, a, b); }  // acc - a*b
    static TESSERA_ALWAYS_INLINE vf fmadd(vf a, vf b, vf acc) { return vfmaq_f32(acc, a, b); }   // acc + a*b
    static TESSERA_ALWAYS_INLINE vi blend_odd(vi a, vi b) {  // odd slots of b
        const uint32x4_t odd = vreinterpretq_u32_u64(vdupq_n_u64(0xFFFFFFFF00000000ull));
        return vbslq_s32(odd, b, a);
    }
    static TESSERA_ALWAYS_INLINE vi swap_pairs(vi v) { return vrev64q_s32(v); }
    static TESSERA_ALWAYS_INLINE vf load_u8(const void* p) {  // 4 u8 as f32
        std::uint32_t w;
        std::memcpy(&w, p, 4);
        const uint16x8_t h = vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w)));
        return vcvtq_f32_u32(vmovl_u16(vget_low_u16(h)));
    }
    static TESSERA_ALWAYS_INLINE vf pair(float a, float b, int h) { return vdupq_n_f32(h >= 2 ? b : a); }  // lanes 0-7 a
};

// ---- q4_0 and iq4_nl in the ARM interleaved layouts (repack.hpp) ---------------------------
// A group of R rows interleaved I bytes at a time, against the lane-major packed
// activations (gemm.hpp's qgemm_act_lane_major). Every output is one f32 sum over the
// blocks in order, acc = fma(S_b, d_b * dy_b, acc), S_b the block's whole integer dot
// (q4_0: nibbles against y, started at -8 * isum_b; iq4_nl (NL): the nibbles' levels,
// one table lookup per 16, against y): the same operations for every layout, arch and
// tile shape, so the plain rows (interleaved into the work buffer per group) and the
// repacked ones give the same bits, whichever layout CPU_REPACK chose.

// s += the 4-byte dot of each 32-bit slot of w with slot L of y (SDOT by element).
template <class A, int L>
TESSERA_ALWAYS_INLINE int32x4_t sdot_lane(int32x4_t s, int8x16_t w, int8x16_t y) {
    if constexpr (simd::at_least<A, simd::dotprod>)
        return vdotq_laneq_s32(s, w, y, L);
    else
        return qv128<A>::dpbusd(s, vreinterpretq_s32_s8(w), vdupq_laneq_s32(vreinterpretq_s32_s8(y), L));
}
// s += a (two rows of 8 bytes) times b (two columns of 8 bytes): [r0c0, r0c1, r1c0, r1c1]
// (SMMLA; below i8mm two signed dots and a shuffle).
template <class A>
TESSERA_ALWAYS_INLINE int32x4_t mmla(int32x4_t s, int8x16_t a, int8x16_t b) {
    if constexpr (simd::at_least<A, simd::i8mm>) {
        return vmmlaq_s32(s, a, b);
    } else {
        const int32x4_t z = vdupq_n_s32(0), va = vreinterpretq_s32_s8(a);
        const int32x4_t d1 = qv128<A>::dpbusd(z, va, vreinterpretq_s32_s8(b));                 // r0c0 x2, r1c1 x2
        const int32x4_t d2 = qv128<A>::dpbusd(z, va, vreinterpretq_s32_s8(vextq_s8(b, b, 8)));  // r0c1 x2, r1c0 x2
        const int32x4_t p = vpaddq_s32(d1, d2);                                                  // r0c0 r1c1 r0c1 r1c0
        const int32x4_t e = vuzp1q_s32(p, p), o = vuzp2q_s32(p, p);
        return vaddq_s32(s, vcombine_s32(vget_low_s32(e), vrev64_s32(vget_low_s32(o))));
    }
}

struct q4i_act {  // lane l of a group of packed activations (lane-major, qgemm_act(32))
    const std::byte* g;
    int l;
    TESSERA_ALWAYS_INLINE int8x16_t q(int half) const {
        return vld1q_s8(reinterpret_cast<const std::int8_t*>(g + static_cast<std::size_t>(32 * l + 16 * half)));
    }
    TESSERA_ALWAYS_INLINE float dy() const {
        float v;
        std::memcpy(&v, g + qgemm_act(32).dy + 4 * static_cast<std::size_t>(l), 4);
        return v;
    }
    TESSERA_ALWAYS_INLINE std::int32_t isum() const {
        std::int32_t v;
        std::memcpy(&v, g + qgemm_act(32).isum + 4 * static_cast<std::size_t>(l), 4);
        return v;
    }
};
// f(b, group offset, lane) for every block b < nb, group by group (the activations'
// address is one add per column and group, not a division per block).
template <class F>
TESSERA_ALWAYS_INLINE void q4i_blocks(std::int64_t nb, F&& f) {
    for (std::int64_t g0 = 0; g0 < nb; g0 += qgemm_group) {
        const int lanes = static_cast<int>(nb - g0 < qgemm_group ? nb - g0 : qgemm_group);
        const std::size_t go = static_cast<std::size_t>(g0 / qgemm_group) * qgemm_act(32).bytes;
        for (int l = 0; l < lanes; ++l) f(g0 + l, go, l);
    }
}
// The 16 bytes at p as low and high nibbles (q4_0), or as their levels (NL: iq4_nl).
template <bool NL>
TESSERA_ALWAYS_INLINE void q4i_nibbles(const std::byte* p, int8x16_t levels, int8x16_t& lo, int8x16_t& hi) {
    const uint8x16_t v = vld1q_u8(reinterpret_cast<const std::uint8_t*>(p));
    const uint8x16_t l = vandq_u8(v, vdupq_n_u8(0x0F)), h = vshrq_n_u8(v, 4);
    if constexpr (NL) {
        lo = vqtbl1q_s8(levels, l);
        hi = vqtbl1q_s8(levels, h);
    } else {
        lo = vreinterpretq_s8_u8(l);
        hi = vreinterpretq_s8_u8(h);
    }
}
template <class A, bool NL>
TESSERA_ALWAYS_INLINE int8x16_t q4i_levels() {
    if constexpr (NL)
        return vld1q_s8(tables<A>::iq4nl);
    else
        return vdupq_n_s8(0);
}
// The integer dot's start: q4_0's nibbles are w + 8.
template <bool NL>
TESSERA_ALWAYS_INLINE std::int32_t q4i_start(const q4i_act& a) {
    return NL ? 0 : -8 * a.isum();
}
TESSERA_ALWAYS_INLINE float32x4_t q4i_d4(const std::byte* p) {  // four f16 scales
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const std::uint16_t*>(p))));
}

// rows4_b4: 4 rows x NC columns (NC <= 4), lane-indexed SDOT (slot = row).
template <class A, bool NL, int NC>
void q4i_tile_b4(std::int64_t nb, const std::byte* w, const std::byte* y, std::size_t ys, float* out, std::size_t ldo,
                 int rows) {
    const int8x16_t levels = q4i_levels<A, NL>();
    float32x4_t acc[NC];
    for (int j = 0; j < NC; ++j) acc[j] = vdupq_n_f32(0.0f);
    q4i_blocks(nb, [&](std::int64_t b, std::size_t go, int l) {
        const std::byte* rec = w + static_cast<std::size_t>(b) * 72;
        const float32x4_t dw = q4i_d4(rec);
        int8x16_t lo[4], hi[4];
        for (int c = 0; c < 4; ++c) q4i_nibbles<NL>(rec + 8 + 16 * c, levels, lo[c], hi[c]);
        for (int j = 0; j < NC; ++j) {
            const q4i_act a{y + static_cast<std::size_t>(j) * ys + go, l};
            const int8x16_t ya = a.q(0), yb = a.q(1);
            int32x4_t s = vdupq_n_s32(q4i_start<NL>(a));
            s = sdot_lane<A, 0>(s, lo[0], ya);
            s = sdot_lane<A, 1>(s, lo[1], ya);
            s = sdot_lane<A, 2>(s, lo[2], ya);
            s = sdot_lane<A, 3>(s, lo[3], ya);
            s = sdot_lane<A, 0>(s, hi[0], yb);
            s = sdot_lane<A, 1>(s, hi[1], yb);
            s = sdot_lane<A, 2>(s, hi[2], yb);
            s = sdot_lane<A, 3>(s, hi[3], yb);
            acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(s), vmulq_n_f32(dw, a.dy()));
        }
    });
    for (int j = 0; j < NC; ++j) {
        float v[4];
        vst1q_f32(v, acc[j]);
        std::memcpy(out + static_cast<std::size_t>(j) * ldo, v, static_cast<std::size_t>(rows) * 4);
    }
}

// rows4_b8 / rows8_b8: R rows x one pair of columns (c0, c1; c1 == c0 for a single one),
// SMMLA per row pair; acc[p] = [r2p c0, r2p c1, r2p+1 c0, r2p+1 c1].
template <class A, bool NL, int R>
void q4i_tile_b8(std::int64_t nb, const std::byte* w, const std::byte* y0, const std::byte* y1, float* out, std::size_t ldo,
                 int rows, bool two) {
    constexpr int P = R / 2;
    const int8x16_t levels = q4i_levels<A, NL>();
    float32x4_t acc[P];
    for (int p = 0; p < P; ++p) acc[p] = vdupq_n_f32(0.0f);
    q4i_blocks(nb, [&](std::int64_t b, std::size_t go, int l) {
        const std::byte* rec = w + static_cast<std::size_t>(b) * 18 * R;
        const q4i_act a0{y0 + go, l}, a1{y1 + go, l};
        const int8x16_t ya0 = a0.q(0), ya1 = a1.q(0), yb0 = a0.q(1), yb1 = a1.q(1);
        const auto z1 = [](int8x16_t u, int8x16_t v) {
            return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(u), vreinterpretq_s64_s8(v)));
        };
        const auto z2 = [](int8x16_t u, int8x16_t v) {
            return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(u), vreinterpretq_s64_s8(v)));
        };
        const int8x16_t e0 = z1(ya0, ya1), e1 = z2(ya0, ya1), e2 = z1(yb0, yb1), e3 = z2(yb0, yb1);  // elements 8t..8t+7
        const float dy0 = a0.dy(), dy1 = a1.dy();
        const float32x4_t dyv = {dy0, dy1, dy0, dy1};
        const std::int32_t i0 = q4i_start<NL>(a0), i1 = q4i_start<NL>(a1);
        const int32x4_t s0 = {i0, i1, i0, i1};
        for (int p = 0; p < P; ++p) {
            const float32x4_t d4 = q4i_d4(rec + 8 * (p / 2));
            const float32x4_t dw = p % 2 == 0 ? vzip1q_f32(d4, d4) : vzip2q_f32(d4, d4);  // d_2p d_2p d_2p+1 d_2p+1
            int8x16_t lo0, hi0, lo1, hi1;
            q4i_nibbles<NL>(rec + 2 * R + 16 * p, levels, lo0, hi0);          // chunk 0: bytes 0-7 of rows 2p, 2p+1
            q4i_nibbles<NL>(rec + 2 * R + 8 * R + 16 * p, levels, lo1, hi1);  // chunk 1: bytes 8-15
            int32x4_t s = mmla<A>(s0, lo0, e0);
            s = mmla<A>(s, lo1, e1);
            s = mmla<A>(s, hi0, e2);
            s = mmla<A>(s, hi1, e3);
            acc[p] = vfmaq_f32(acc[p], vcvtq_f32_s32(s), vmulq_f32(dw, dyv));
        }
    });
    for (int p = 0; p < P; ++p) {
        float v[4];
        vst1q_f32(v, acc[p]);
        for (int h = 0; h < 2; ++h) {
            const int r = 2 * p + h;
            if (r >= rows) continue;
            out[r] = v[2 * h];
            if (two) out[ldo + static_cast<std::size_t>(r)] = v[2 * h + 1];
        }
    }
}

// One group of rows (rows <= R of them in use) against n columns.
template <class A, bool NL>
void q4i_group(repack_layout lay, std::int64_t nb, const std::byte* w, int rows, std::int64_t n, const std::byte* y,
               std::size_t ys, float* out, std::size_t ldo) {
    const auto col = [&](std::int64_t c) { return y + static_cast<std::size_t>(c) * ys; };
    if (lay == repack_layout::rows4_b4) {
        std::int64_t c = 0;
        for (; c + 4 <= n; c += 4) q4i_tile_b4<A, NL, 4>(nb, w, col(c), ys, out + static_cast<std::size_t>(c) * ldo, ldo, rows);
        float* o = out + static_cast<std::size_t>(c) * ldo;
        switch (n - c) {
            case 3: q4i_tile_b4<A, NL, 3>(nb, w, col(c), ys, o, ldo, rows); break;
            case 2: q4i_tile_b4<A, NL, 2>(nb, w, col(c), ys, o, ldo, rows); break;
            case 1: q4i_tile_b4<A, NL, 1>(nb, w, col(c), ys, o, ldo, rows); break;
            default: break;
        }
        return;
    }
    for (std::int64_t c = 0; c < n; c += 2) {
        const bool two = c + 1 < n;
        float* o = out + static_cast<std::size_t>(c) * ldo;
        if (lay == repack_layout::rows8_b8)
            q4i_tile_b8<A, NL, 8>(nb, w, col(c), col(two ? c + 1 : c), o, ldo, rows, two);
        else
            q4i_tile_b8<A, NL, 4>(nb, w, col(c), col(two ? c + 1 : c), o, ldo, rows, two);
    }
}

// Plain q4_0 / iq4_nl rows: each group of R rows interleaved into work (the arch's
// layout), then the same tiles; rows past m are zero blocks whose outputs are not stored.
template <class A, class B>
void q4i_plain(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y,
               std::size_t ys, float* out, std::size_t ldo, std::byte* work) {
    constexpr type_id t = quant::block_traits<B>::id;
    constexpr bool NL = t == type_id::iq4_nl;
    static_assert(sizeof(B) == 18, "an f16 d and 16 bytes of nibbles");
    const repack_layout lay = repack_layout_for(t, 8, A::id);
    const std::int64_t R = repack_group_rows(lay), nb = k / 32;
    const std::size_t I = repack_interleave(lay);
    const auto* xb = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t r0 = 0; r0 < m; r0 += R) {
        const int rows = static_cast<int>(m - r0 < R ? m - r0 : R);
        if (rows < R) std::memset(work, 0, static_cast<std::size_t>(nb * 18 * R));  // absent rows: zero blocks
        for (std::int64_t b = 0; b < nb; ++b) {
            std::byte* rec = work + static_cast<std::size_t>(b * 18 * R);
            for (int i = 0; i < rows; ++i) {
                const auto* blk = reinterpret_cast<const unsigned char*>(reinterpret_cast<const B*>(xb + static_cast<std::size_t>(r0 + i) * xs) + b);
                repack_detail::arm_block_runs(R, I, static_cast<std::size_t>(i),
                                              [&](std::size_t p, std::size_t q, std::size_t len) { std::memcpy(rec + q, blk + p, len); });
            }
        }
        q4i_group<A, NL>(lay, nb, work, rows, n, y, ys, out + r0, ldo);
    }
}
template <class A>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const quant::block_q4_0* x, std::size_t xs, const std::byte* y,
           std::size_t ys, float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::neon>) {
    q4i_plain<A>(k, m, n, x, xs, y, ys, out, ldo, work);
}
template <class A>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const quant::block_iq4_nl* x, std::size_t xs, const std::byte* y,
           std::size_t ys, float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::neon>) {
    q4i_plain<A>(k, m, n, x, xs, y, ys, out, ldo, work);
}

template <class A, class B>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
           float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::neon>) {
    qgemm_wide<A, qv128<A>>(k, m, n, x, xs, y, ys, out, ldo, work);
}
template <class A, class B>
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, repack_layout lay, const std::byte* y,
              std::size_t ys, float* out, std::size_t ldo, simd::requires_arch<simd::neon>) {
    constexpr type_id t = quant::block_traits<B>::id;
    if constexpr (t == type_id::q4_0 || t == type_id::iq4_nl) {
        if (lay != repack_layout::rows4_x16) {
            const std::int64_t R = repack_group_rows(lay);
            const std::size_t group = repack_quad_bytes(t, k, lay);
            for (std::int64_t q = 0; q < m / R; ++q)
                q4i_group<A, t == type_id::iq4_nl>(lay, k / 32, x + static_cast<std::size_t>(q) * group, static_cast<int>(R), n, y,
                                                   ys, out + static_cast<std::size_t>(q * R), ldo);
            return;
        }
    }
    if constexpr (repack_layout_has(repack_layout::rows4_x16, t) && t != type_id::q4_0) {
        if (lay == repack_layout::rows4_x16) return qgemm_rows4_wide<A, qv128<A>, B>(k, m, n, x, y, ys, out, ldo);
    }
    // q4_0 in rows4_x16 (its activations are lane-major here), q8_0 / q4_K in an ARM layout
    qgemm_r4_unpacked<A, B>(k, m, n, x, lay, y, ys, out, ldo);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
