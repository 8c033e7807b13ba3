// AArch64 bodies of the quantized dot products of kernels/quant/vec_dot.hpp:
//   neon     q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4, q2_K, q3_K, q4_K, q5_K, q6_K,
//            iq4_xs, tq1_0, tq2_0, nvfp4, q1_0, q2_0 and the seven lattice i-quants (the
//            signed 16-byte dot by SMULL + SADALP), f16 rows (FCVTL + FMLA), bf16 rows
//            (widened by a 16-bit shift + FMLA);
//   dotprod  the same bodies with SDOT (through qdetail::dot_s8);
//   i8mm     bf16 rows through BFMLALB / BFMLALT (fused multiply-add of the widened
//            values, IEEE like the shift + FMLA; BFDOT is not used: it rounds its pair
//            sum in a way that is not the scalar definition's);
//   sve      q8_0 / q4_0 with SVE's SDOT, length-agnostic: one 32-element block is
//            ceil(32 / VL) predicated loads per operand (two at 128-bit, one from 256).
// Every body makes each block's integer dot whole in i32 before it meets the block's
// scale product (the K-quants and iq4_xs: the whole super-block's sum of sub-block
// scale times sub-block dot, in i32 lanes), then adds the terms in f32 in its own
// order; the result is the scalar body's within the f32 summation bound of
// tests/kernels (tq2_0 adds the same per-super-block terms in the same order as the
// scalar body; so do tq1_0, nvfp4, q1_0, q2_0 and the lattice i-quants, which return
// the scalar body's value up to the compiler's fusing of its multiply-adds). q8_1 x q8_1
// runs the scalar body. Part of
// kernels/quant/vec_dot.hpp, which includes it after the scalar bodies.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_AARCH64)

#include <cstdint>
#include <cstring>

#include <arm_neon.h>
#include <arm_sve.h>

#include "tessera/core/f16.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace q = ::tessera::quant;

// ---- Advanced SIMD and dotprod ------------------------------------------------------------
// sum over blocks of d_i * S_i, S_i the integer dot of block i, which `block` returns as
// four partial sums. Each S_i is made whole in i32 before it meets its scale (ADDP of
// four blocks at once), so the result does not depend on how a level groups the
// products into lanes (neon and dotprod give the same bits), and the only roundings are
// those of S_i * d_i and of the f32 sum of the terms, as in the scalar definition.
template <class A, class F>
TESSERA_ALWAYS_INLINE float sum_blocks_neon(std::int64_t nb, F&& block) {
    float32x4_t acc = vdupq_n_f32(0.0f);
    std::int64_t i = 0;
    for (; i + 3 < nb; i += 4) {
        float d[4];
        const int32x4_t p0 = block(i, d[0]), p1 = block(i + 1, d[1]), p2 = block(i + 2, d[2]), p3 = block(i + 3, d[3]);
        const int32x4_t s = vpaddq_s32(vpaddq_s32(p0, p1), vpaddq_s32(p2, p3));  // S_i .. S_i+3
        acc = vfmaq_f32(acc, vcvtq_f32_s32(s), vld1q_f32(d));
    }
    float sum = vaddvq_f32(acc);
    for (; i < nb; ++i) {
        float d;
        const int32x4_t p = block(i, d);
        sum += static_cast<float>(vaddvq_s32(p)) * d;
    }
    return sum;
}

template <class A>
float vdot(std::int64_t n, const q::block_q8_0* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    return sum_blocks_neon<A>(n / q::qk8_0, [&](std::int64_t i, float& d) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        const int32x4_t p = dot_s8<A>(vdupq_n_s32(0), vld1q_s8(x[i].qs), vld1q_s8(y[i].qs));
        return dot_s8<A>(p, vld1q_s8(x[i].qs + 16), vld1q_s8(y[i].qs + 16));
    });
}

// q4_0: byte j holds elements j (low nibble) and j + 16 (high nibble), each biased by 8.
template <class A>
TESSERA_ALWAYS_INLINE void q4_0_unpack_neon(const std::uint8_t* qs, int8x16_t& lo, int8x16_t& hi) {
    const uint8x16_t v = vld1q_u8(qs);
    const int8x16_t bias = vdupq_n_s8(8);
    lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), bias);
    hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), bias);
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_0* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    return sum_blocks_neon<A>(n / q::qk4_0, [&](std::int64_t i, float& d) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        int8x16_t lo, hi;
        q4_0_unpack_neon<A>(x[i].qs, lo, hi);
        const int32x4_t p = dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(y[i].qs));
        return dot_s8<A>(p, hi, vld1q_s8(y[i].qs + 16));
    });
}

// The 32 bits of a little-endian u32 as byte masks: lane j of lo (hi) is 0xFF where bit j
// (j + 16) is set. TBL spreads the bytes, CMTST tests them against 1, 2, ..., 128.
template <class A>
TESSERA_ALWAYS_INLINE void bit_masks_neon(const std::uint8_t* bits, uint8x16_t& lo, uint8x16_t& hi) {
    std::uint32_t h;
    std::memcpy(&h, bits, 4);
    const uint8x16_t v = vreinterpretq_u8_u32(vdupq_n_u32(h));
    const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
    const uint8x16_t sel01 = vcombine_u8(vdup_n_u8(0), vdup_n_u8(1)), sel23 = vcombine_u8(vdup_n_u8(2), vdup_n_u8(3));
    lo = vtstq_u8(vqtbl1q_u8(v, sel01), bit);
    hi = vtstq_u8(vqtbl1q_u8(v, sel23), bit);
}
// The other 32-element types. Fifth bits (q5_0, q5_1): bit j of the little-endian u32 qh
// belongs to element j, 0x10 where it is set.
template <class A>
TESSERA_ALWAYS_INLINE void fifth_bits_neon(const std::uint8_t* qh, uint8x16_t& lo, uint8x16_t& hi) {
    bit_masks_neon<A>(qh, lo, hi);
    lo = vandq_u8(lo, vdupq_n_u8(0x10));
    hi = vandq_u8(hi, vdupq_n_u8(0x10));
}
// sum over blocks of d_i * S_i + m_i (the types with a min: q4_1, q5_1 against q8_1's s),
// S_i whole in i32 as above.
template <class A, class F>
TESSERA_ALWAYS_INLINE float sum_blocks_min_neon(std::int64_t nb, F&& block) {
    float mins = 0.0f;
    const float sum = sum_blocks_neon<A>(nb, [&](std::int64_t i, float& d) {
        float m;
        const int32x4_t p = block(i, d, m);
        mins += m;
        return p;
    });
    return sum + mins;
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_1* x, const q::block_q8_1* y, simd::requires_arch<simd::neon>) {
    return sum_blocks_min_neon<A>(n / q::qk4_1, [&](std::int64_t i, float& d, float& m) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        m = h2f<A>(x[i].m) * h2f<A>(y[i].s);
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        return dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(y[i].qs)), hi, vld1q_s8(y[i].qs + 16));
    });
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_0* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    return sum_blocks_neon<A>(n / q::qk5_0, [&](std::int64_t i, float& d) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        uint8x16_t b0, b1;
        fifth_bits_neon<A>(x[i].qh, b0, b1);
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t bias = vdupq_n_s8(16);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0F)), b0)), bias);
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), b1)), bias);
        return dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(y[i].qs)), hi, vld1q_s8(y[i].qs + 16));
    });
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_1* x, const q::block_q8_1* y, simd::requires_arch<simd::neon>) {
    return sum_blocks_min_neon<A>(n / q::qk5_1, [&](std::int64_t i, float& d, float& m) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        m = h2f<A>(x[i].m) * h2f<A>(y[i].s);
        uint8x16_t b0, b1;
        fifth_bits_neon<A>(x[i].qh, b0, b1);
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t lo = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, vdupq_n_u8(0x0F)), b0));
        const int8x16_t hi = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), b1));
        return dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(y[i].qs)), hi, vld1q_s8(y[i].qs + 16));
    });
}
// iq4_nl: each nibble indexes the 16 levels (TBL).
template <class A>
float vdot(std::int64_t n, const q::block_iq4_nl* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    const int8x16_t levels = vld1q_s8(tables<A>::iq4nl);
    return sum_blocks_neon<A>(n / 32, [&](std::int64_t i, float& d) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t lo = vqtbl1q_s8(levels, vandq_u8(v, vdupq_n_u8(0x0F)));
        const int8x16_t hi = vqtbl1q_s8(levels, vshrq_n_u8(v, 4));
        return dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(y[i].qs)), hi, vld1q_s8(y[i].qs + 16));
    });
}

// mxfp4: as iq4_nl with the doubled E2M1 levels; the block's scale is y's d times the
// halved E8M0 power of two (in the reference's order).
template <class A>
float vdot(std::int64_t n, const q::block_mxfp4* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    const int8x16_t levels = vld1q_s8(tables<A>::mxfp4);
    return sum_blocks_neon<A>(n / 32, [&](std::int64_t i, float& d) {
        d = h2f<A>(y[i].d) * e8m0_half<A>(x[i].e);
        const uint8x16_t v = vld1q_u8(x[i].qs);
        const int8x16_t lo = vqtbl1q_s8(levels, vandq_u8(v, vdupq_n_u8(0x0F)));
        const int8x16_t hi = vqtbl1q_s8(levels, vshrq_n_u8(v, 4));
        return dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(y[i].qs)), hi, vld1q_s8(y[i].qs + 16));
    });
}

// ---- K-quants (256-element super-blocks against q8_K) ----------------------------------------
// The sub-block sums S_j of four sub-blocks, each given as four partial sums, made whole
// by ADDP: [S_0, S_1, S_2, S_3]. A super-block's integer dot is then sum_j sc_j * S_j in
// i32 lanes (MUL / MLA by a vector of four scales) and one ADDV: exact, whatever the level.
template <class A>
TESSERA_ALWAYS_INLINE int32x4_t whole4_neon(int32x4_t p0, int32x4_t p1, int32x4_t p2, int32x4_t p3) {
    return vpaddq_s32(vpaddq_s32(p0, p1), vpaddq_s32(p2, p3));
}
// Eight signed bytes as two vectors of i32 lanes.
template <class A>
TESSERA_ALWAYS_INLINE void widen8_s32(int8x8_t v, int32x4_t out[2]) {
    const int16x8_t w = vmovl_s8(v);
    out[0] = vmovl_s16(vget_low_s16(w));
    out[1] = vmovl_high_s16(w);
}
// q4_K / q5_K: the eight 6-bit scales as i32 lanes and the min term sum_j m_(j/2) bsums_j.
template <class A>
TESSERA_ALWAYS_INLINE std::int32_t k4_scales_neon(const std::uint8_t* scales, const std::int16_t* bsums, int32x4_t sc[2]) {
    // bytes 0-3: scales 0-3, 4-7: mins 0-3 (6 bits each); bytes 8-11: the low (scales
    // 4-7) and high (mins 4-7) 4 bits, whose top 2 bits are bits 6-7 of bytes 0-3 / 4-7
    std::uint32_t u[3];
    std::memcpy(u, scales, 12);
    constexpr std::uint32_t k6 = 0x3f3f3f3fu, k4 = 0x0f0f0f0fu, k2 = 0x03030303u;
    const std::uint64_t s8 = (u[0] & k6) | static_cast<std::uint64_t>((u[2] & k4) | (((u[0] >> 6) & k2) << 4)) << 32;
    const std::uint64_t m8 = (u[1] & k6) | static_cast<std::uint64_t>(((u[2] >> 4) & k4) | (((u[1] >> 6) & k2) << 4)) << 32;
    const uint16x8_t s16 = vmovl_u8(vcreate_u8(s8));
    sc[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(s16)));
    sc[1] = vreinterpretq_s32_u32(vmovl_high_u16(s16));
    const int16x8_t bs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));  // |sum of 32| <= 4064
    const int16x8_t m16 = vreinterpretq_s16_u16(vmovl_u8(vcreate_u8(m8)));
    return vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(bs), vget_low_s16(m16)), bs, m16));
}

// q4_K: chunk c of 32 bytes holds sub-block 2c in its low nibbles and 2c + 1 in its high
// ones; the mins meet the q8_K bsums (sums of 16), added in pairs.
template <class A>
float vdot(std::int64_t n, const q::block_q4_K* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        std::uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; ++j) scale_min_k4<A>(j, x[b].scales, sc[j], mn[j]);
        const int16x8_t bs = vpaddq_s16(vld1q_s16(y[b].bsums), vld1q_s16(y[b].bsums + 8));
        const int16x8_t m16 = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
        const int32_t msum = vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(bs), vget_low_s16(m16)), bs, m16));
        int32x4_t acc = vdupq_n_s32(0);
        for (int c = 0; c < 4; ++c) {
            const uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * c), q1 = vld1q_u8(x[b].qs + 32 * c + 16);
            const std::int8_t* yq = y[b].qs + 64 * c;
            const uint8x16_t m4 = vdupq_n_u8(0x0F);
            int32x4_t lo = dot_s8<A>(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q0, m4)), vld1q_s8(yq));
            lo = dot_s8<A>(lo, vreinterpretq_s8_u8(vandq_u8(q1, m4)), vld1q_s8(yq + 16));
            int32x4_t hi = dot_s8<A>(vdupq_n_s32(0), vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vld1q_s8(yq + 32));
            hi = dot_s8<A>(hi, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), vld1q_s8(yq + 48));
            acc = vmlaq_n_s32(acc, lo, sc[2 * c]);
            acc = vmlaq_n_s32(acc, hi, sc[2 * c + 1]);
        }
        sum += h2f<A>(x[b].d) * y[b].d * static_cast<float>(vaddvq_s32(acc));
        sum -= h2f<A>(x[b].dmin) * y[b].d * static_cast<float>(msum);
    }
    return sum;
}
// q6_K: per half of 128, ql bytes 0-31 give elements 0-31 (low nibbles) and 64-95 (high),
// bytes 32-63 give 32-63 and 96-127; qh byte l gives the two top bits of l, l + 32,
// l + 64, l + 96 (bits 0-1, 2-3, 4-5, 6-7); values are u - 32, one scale per 16.
template <class A>
float vdot(std::int64_t n, const q::block_q6_K* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(0x30);
    const int8x16_t bias = vdupq_n_s8(32);
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        int32x4_t acc = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            const std::uint8_t* ql = x[b].ql + 64 * h;
            const std::uint8_t* qh = x[b].qh + 32 * h;
            const std::int8_t* yq = y[b].qs + 128 * h;
            const std::int8_t* sc = x[b].scales + 8 * h;
            for (int k = 0; k < 2; ++k) {  // l = 16k .. 16k + 15
                const uint8x16_t a = vld1q_u8(ql + 16 * k), c = vld1q_u8(ql + 32 + 16 * k), hb = vld1q_u8(qh + 16 * k);
                const int8x16_t v0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(a, m4), vandq_u8(vshlq_n_u8(hb, 4), m2))), bias);
                const int8x16_t v1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(c, m4), vandq_u8(vshlq_n_u8(hb, 2), m2))), bias);
                const int8x16_t v2 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(a, 4), vandq_u8(hb, m2))), bias);
                const int8x16_t v3 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(c, 4), vandq_u8(vshrq_n_u8(hb, 2), m2))), bias);
                const int32x4_t z = vdupq_n_s32(0);
                acc = vmlaq_n_s32(acc, dot_s8<A>(z, v0, vld1q_s8(yq + 16 * k)), sc[k]);
                acc = vmlaq_n_s32(acc, dot_s8<A>(z, v1, vld1q_s8(yq + 32 + 16 * k)), sc[2 + k]);
                acc = vmlaq_n_s32(acc, dot_s8<A>(z, v2, vld1q_s8(yq + 64 + 16 * k)), sc[4 + k]);
                acc = vmlaq_n_s32(acc, dot_s8<A>(z, v3, vld1q_s8(yq + 96 + 16 * k)), sc[6 + k]);
            }
        }
        sum += h2f<A>(x[b].d) * y[b].d * static_cast<float>(vaddvq_s32(acc));
    }
    return sum;
}

// q2_K: element 128 h + 32 t + l (l < 32) is bits 2t..2t+1 of qs[32 h + l]; one scale
// (low nibble) and one min (high nibble) per 16 elements, the mins against the bsums.
template <class A>
float vdot(std::int64_t n, const q::block_q2_K* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    const uint8x16_t m3 = vdupq_n_u8(3);
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        const uint8x16_t raw = vld1q_u8(x[b].scales);
        const int16x8_t mn0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(vshrq_n_u8(raw, 4))));
        const int16x8_t mn1 = vreinterpretq_s16_u16(vmovl_high_u8(vshrq_n_u8(raw, 4)));
        const int16x8_t bs0 = vld1q_s16(y[b].bsums), bs1 = vld1q_s16(y[b].bsums + 8);
        int32x4_t mt = vmull_s16(vget_low_s16(bs0), vget_low_s16(mn0));
        mt = vmlal_high_s16(mt, bs0, mn0);
        mt = vmlal_s16(mt, vget_low_s16(bs1), vget_low_s16(mn1));
        mt = vmlal_high_s16(mt, bs1, mn1);
        const uint8x16_t sc8 = vandq_u8(raw, vdupq_n_u8(0x0F));
        int32x4_t sc[4];  // scales 4k .. 4k + 3
        widen8_s32<A>(vreinterpret_s8_u8(vget_low_u8(sc8)), sc);
        widen8_s32<A>(vreinterpret_s8_u8(vget_high_u8(sc8)), sc + 2);
        int32x4_t acc = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * h), q1 = vld1q_u8(x[b].qs + 32 * h + 16);
            const std::int8_t* yq = y[b].qs + 128 * h;
            for (int t = 0; t < 4; t += 2) {  // sub-blocks 8h + 2t .. 8h + 2t + 3
                const int32x4_t z = vdupq_n_s32(0);
                const int32x4_t p0 = dot_s8<A>(z, vreinterpretq_s8_u8(vandq_u8(q0, m3)), vld1q_s8(yq + 32 * t));
                const int32x4_t p1 = dot_s8<A>(z, vreinterpretq_s8_u8(vandq_u8(q1, m3)), vld1q_s8(yq + 32 * t + 16));
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
                const int32x4_t p2 = dot_s8<A>(z, vreinterpretq_s8_u8(vandq_u8(q0, m3)), vld1q_s8(yq + 32 * t + 32));
                const int32x4_t p3 = dot_s8<A>(z, vreinterpretq_s8_u8(vandq_u8(q1, m3)), vld1q_s8(yq + 32 * t + 48));
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
                acc = vmlaq_s32(acc, whole4_neon<A>(p0, p1, p2, p3), sc[2 * h + t / 2]);
            }
        }
        sum += y[b].d * h2f<A>(x[b].d) * static_cast<float>(vaddvq_s32(acc));
        sum -= y[b].d * h2f<A>(x[b].dmin) * static_cast<float>(vaddvq_s32(mt));
    }
    return sum;
}
// q3_K: sixteen 6-bit scales: bits 0-3 from the low (scales 0-7) or high (8-15) nibbles
// of bytes 0-7, bits 4-5 from bits 2(j/4), 2(j/4)+1 of byte 8 + j % 4; minus 32.
template <class A>
TESSERA_ALWAYS_INLINE int8x16_t q3k_scales_neon(const std::uint8_t* s) {
    const uint8x8_t a = vld1_u8(s);
    const uint8x16_t lo = vcombine_u8(vand_u8(a, vdup_n_u8(0x0F)), vshr_n_u8(a, 4));
    std::uint32_t h;
    std::memcpy(&h, s + 8, 4);
    const int8x16_t shr = {0, 0, 0, 0, -2, -2, -2, -2, -4, -4, -4, -4, -6, -6, -6, -6};
    const uint8x16_t hi = vshlq_n_u8(vandq_u8(vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(h)), shr), vdupq_n_u8(3)), 4);
    return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, hi)), vdupq_n_s8(32));
}
// q3_K values: element 128 h + 32 t + l is bits 2t..2t+1 of qs[32 h + l], minus 4 unless
// bit 4h + t of hmask[l] is set (-4 .. 3); one signed scale per 16 elements.
template <class A>
float vdot(std::int64_t n, const q::block_q3_K* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    const uint8x16_t m3 = vdupq_n_u8(3), four = vdupq_n_u8(4);
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        const int8x16_t sc8 = q3k_scales_neon<A>(x[b].scales);
        int32x4_t sc[4];
        widen8_s32<A>(vget_low_s8(sc8), sc);
        widen8_s32<A>(vget_high_s8(sc8), sc + 2);
        const uint8x16_t hm0 = vld1q_u8(x[b].hmask), hm1 = vld1q_u8(x[b].hmask + 16);
        // the value of 16 bytes of crumbs c with their hmask bytes hm, bit m
        const auto value = [&](uint8x16_t c, uint8x16_t hm, uint8x16_t m) {
            return vsubq_s8(vreinterpretq_s8_u8(vandq_u8(c, m3)), vreinterpretq_s8_u8(vbicq_u8(four, vtstq_u8(hm, m))));
        };
        int32x4_t acc = vdupq_n_s32(0);
        for (int h = 0; h < 2; ++h) {
            uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * h), q1 = vld1q_u8(x[b].qs + 32 * h + 16);
            const std::int8_t* yq = y[b].qs + 128 * h;
            for (int t = 0; t < 4; t += 2) {  // sub-blocks 8h + 2t .. 8h + 2t + 3
                const uint8x16_t ma = vdupq_n_u8(static_cast<std::uint8_t>(1u << (4 * h + t)));
                const uint8x16_t mb = vdupq_n_u8(static_cast<std::uint8_t>(2u << (4 * h + t)));
                const int32x4_t z = vdupq_n_s32(0);
                const int32x4_t p0 = dot_s8<A>(z, value(q0, hm0, ma), vld1q_s8(yq + 32 * t));
                const int32x4_t p1 = dot_s8<A>(z, value(q1, hm1, ma), vld1q_s8(yq + 32 * t + 16));
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
                const int32x4_t p2 = dot_s8<A>(z, value(q0, hm0, mb), vld1q_s8(yq + 32 * t + 32));
                const int32x4_t p3 = dot_s8<A>(z, value(q1, hm1, mb), vld1q_s8(yq + 32 * t + 48));
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
                acc = vmlaq_s32(acc, whole4_neon<A>(p0, p1, p2, p3), sc[2 * h + t / 2]);
            }
        }
        sum += h2f<A>(x[b].d) * y[b].d * static_cast<float>(vaddvq_s32(acc));
    }
    return sum;
}
// q5_K: q4_K's nibbles (chunk c of 32 bytes: sub-block 2c low, 2c + 1 high) plus a fifth
// bit, bit 2c (2c + 1) of qh[l] for byte l of the chunk.
template <class A>
float vdot(std::int64_t n, const q::block_q5_K* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), k16 = vdupq_n_u8(0x10);
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        int32x4_t sc[2];
        const std::int32_t msum = k4_scales_neon<A>(x[b].scales, y[b].bsums, sc);
        const uint8x16_t qh0 = vld1q_u8(x[b].qh), qh1 = vld1q_u8(x[b].qh + 16);
        int32x4_t p[8];
        for (int c = 0; c < 4; ++c) {
            const uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * c), q1 = vld1q_u8(x[b].qs + 32 * c + 16);
            const uint8x16_t ba = vdupq_n_u8(static_cast<std::uint8_t>(1u << (2 * c)));
            const uint8x16_t bb = vdupq_n_u8(static_cast<std::uint8_t>(2u << (2 * c)));
            const std::int8_t* yq = y[b].qs + 64 * c;
            const int8x16_t lo0 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q0, m4), vandq_u8(vtstq_u8(qh0, ba), k16)));
            const int8x16_t lo1 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q1, m4), vandq_u8(vtstq_u8(qh1, ba), k16)));
            const int8x16_t hi0 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q0, 4), vandq_u8(vtstq_u8(qh0, bb), k16)));
            const int8x16_t hi1 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q1, 4), vandq_u8(vtstq_u8(qh1, bb), k16)));
            p[2 * c] = dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo0, vld1q_s8(yq)), lo1, vld1q_s8(yq + 16));
            p[2 * c + 1] = dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), hi0, vld1q_s8(yq + 32)), hi1, vld1q_s8(yq + 48));
        }
        const int32x4_t s = vmlaq_s32(vmulq_s32(whole4_neon<A>(p[0], p[1], p[2], p[3]), sc[0]),
                                      whole4_neon<A>(p[4], p[5], p[6], p[7]), sc[1]);
        sum += h2f<A>(x[b].d) * y[b].d * static_cast<float>(vaddvq_s32(s));
        sum -= h2f<A>(x[b].dmin) * y[b].d * static_cast<float>(msum);
    }
    return sum;
}

// iq4_xs: eight sub-blocks of 32 in iq4_nl's layout, each with a 6-bit scale (low
// nibble from scales_l[ib / 2], two high bits from scales_h) minus 32.
template <class A>
float vdot(std::int64_t n, const q::block_iq4_xs* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    const int8x16_t levels = vld1q_s8(tables<A>::iq4nl);
    const int8x8_t hshr = {0, -2, -4, -6, 0, -2, -4, -6};
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        std::uint32_t l4;
        std::memcpy(&l4, x[b].scales_l, 4);
        const uint8x8_t lb = vreinterpret_u8_u32(vdup_n_u32(l4));
        const uint8x8_t lo = vzip1_u8(vand_u8(lb, vdup_n_u8(0x0F)), vshr_n_u8(lb, 4));  // scale ib's low 4 bits
        const std::uint64_t hh = x[b].scales_h;
        const uint8x8_t hb = vcreate_u8((hh & 0xFF) * 0x01010101ull | ((hh >> 8) * 0x01010101ull) << 32);
        const uint8x8_t hi = vshl_n_u8(vand_u8(vshl_u8(hb, hshr), vdup_n_u8(3)), 4);
        int32x4_t sc[2];
        widen8_s32<A>(vsub_s8(vreinterpret_s8_u8(vorr_u8(lo, hi)), vdup_n_s8(32)), sc);
        int32x4_t p[8];
        for (int ib = 0; ib < 8; ++ib) {
            const uint8x16_t v = vld1q_u8(x[b].qs + 16 * ib);
            const int8x16_t vlo = vqtbl1q_s8(levels, vandq_u8(v, vdupq_n_u8(0x0F)));
            const int8x16_t vhi = vqtbl1q_s8(levels, vshrq_n_u8(v, 4));
            const std::int8_t* yq = y[b].qs + 32 * ib;
            p[ib] = dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), vlo, vld1q_s8(yq)), vhi, vld1q_s8(yq + 16));
        }
        const int32x4_t s = vmlaq_s32(vmulq_s32(whole4_neon<A>(p[0], p[1], p[2], p[3]), sc[0]),
                                      whole4_neon<A>(p[4], p[5], p[6], p[7]), sc[1]);
        sum += h2f<A>(x[b].d) * y[b].d * static_cast<float>(vaddvq_s32(s));
    }
    return sum;
}
// tq2_0: element 128 c + 32 l + m is bits 2l..2l+1 of qs[32 c + m], a trit plus 1; the
// dot is sum q y - sum y (the bsums), one term per super-block as in the reference.
template <class A>
float vdot(std::int64_t n, const q::block_tq2_0* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    const uint8x16_t m3 = vdupq_n_u8(3);
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        int32x4_t acc = vdupq_n_s32(0);
        for (int c = 0; c < 2; ++c) {
            uint8x16_t q0 = vld1q_u8(x[b].qs + 32 * c), q1 = vld1q_u8(x[b].qs + 32 * c + 16);
            const std::int8_t* yq = y[b].qs + 128 * c;
            for (int l = 0; l < 4; ++l) {
                acc = dot_s8<A>(acc, vreinterpretq_s8_u8(vandq_u8(q0, m3)), vld1q_s8(yq + 32 * l));
                acc = dot_s8<A>(acc, vreinterpretq_s8_u8(vandq_u8(q1, m3)), vld1q_s8(yq + 32 * l + 16));
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
            }
        }
        const int32x4_t ys = vaddq_s32(vpaddlq_s16(vld1q_s16(y[b].bsums)), vpaddlq_s16(vld1q_s16(y[b].bsums + 8)));
        sum += static_cast<float>(vaddvq_s32(acc) - vaddvq_s32(ys)) * (y[b].d * h2f<A>(x[b].d));
    }
    return sum;
}

// tq1_0: trit n (most significant first) of a byte b is ((b * 3^n mod 256) * 3) >> 8:
// VMUL.8 wraps the first product, UMULL / SHRN take the high byte of the second. Element
// order as the reference: 32 n + m from qs[m] (n < 5), 160 + 16 n + m from qs[32 + m],
// 240 + 4 n + m from qh[m] (n < 4: one vector of the four bytes with the powers per group
// of four). The same integer sum t y - sum y and f32 term per super-block as the scalar
// body, so its value.
template <class A>
TESSERA_ALWAYS_INLINE int8x16_t tq1_trits_neon(uint8x16_t q, uint8x16_t pow3) {
    const uint8x16_t v = vmulq_u8(q, pow3);
    const uint8x16_t three = vdupq_n_u8(3);
    return vreinterpretq_s8_u8(vshrn_high_n_u16(vshrn_n_u16(vmull_u8(vget_low_u8(v), vget_low_u8(three)), 8), vmull_high_u8(v, three), 8));
}
template <class A>
float vdot(std::int64_t n, const q::block_tq1_0* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    static constexpr std::uint8_t pow3[5] = {1, 3, 9, 27, 81};
    alignas(16) static constexpr std::uint8_t pow3_qh[16] = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};
    const uint8x16_t ph = vld1q_u8(pow3_qh);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        int32x4_t acc = vdupq_n_s32(0);
        const uint8x16_t a0 = vld1q_u8(x[b].qs), a1 = vld1q_u8(x[b].qs + 16), c = vld1q_u8(x[b].qs + 32);
        const std::int8_t* yq = y[b].qs;
        for (int k = 0; k < 5; ++k) {
            const uint8x16_t p = vdupq_n_u8(pow3[k]);
            acc = dot_s8<A>(acc, tq1_trits_neon<A>(a0, p), vld1q_s8(yq + 32 * k));
            acc = dot_s8<A>(acc, tq1_trits_neon<A>(a1, p), vld1q_s8(yq + 32 * k + 16));
            acc = dot_s8<A>(acc, tq1_trits_neon<A>(c, p), vld1q_s8(yq + 160 + 16 * k));
        }
        std::uint32_t qh;
        std::memcpy(&qh, x[b].qh, 4);
        acc = dot_s8<A>(acc, tq1_trits_neon<A>(vreinterpretq_u8_u32(vdupq_n_u32(qh)), ph), vld1q_s8(yq + 240));
        const int32x4_t ys = vaddq_s32(vpaddlq_s16(vld1q_s16(y[b].bsums)), vpaddlq_s16(vld1q_s16(y[b].bsums + 8)));
        sum += static_cast<float>(vaddvq_s32(acc) - vaddvq_s32(ys)) * (h2f<A>(x[b].d) * y[b].d);
    }
    return sum;
}

// ---- nvfp4, q1_0, q2_0 (against q8_0) -----------------------------------------------------
// The integer dot of each group (16 for nvfp4, 32 for q1_0 / q2_0) whole in i32 (ADDP of
// four at once), then the scalar body's f32 operations in its order, so its value.
// nvfp4: group g of a block holds values j (low nibbles of its 8 bytes) and j + 8 (high),
// looked up in the doubled E2M1 levels (TBL); scale ue4m3_half of its byte times y's d.
template <class A>
float vdot(std::int64_t n, const q::block_nvfp4* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    const int8x16_t levels = vld1q_s8(tables<A>::mxfp4);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / 64; ++b) {
        int32x4_t p[4];
        for (int g = 0; g < 4; ++g) {
            const uint8x8_t v = vld1_u8(x[b].qs + 8 * g);
            const uint8x16_t idx = vcombine_u8(vand_u8(v, vdup_n_u8(0x0F)), vshr_n_u8(v, 4));
            p[g] = dot_s8<A>(vdupq_n_s32(0), vqtbl1q_s8(levels, idx), vld1q_s8(y[2 * b + g / 2].qs + 16 * (g % 2)));
        }
        std::int32_t s[4];
        vst1q_s32(s, whole4_neon<A>(p[0], p[1], p[2], p[3]));
        for (int g = 0; g < 4; ++g) sum += h2f<A>(y[2 * b + g / 2].d) * q::ue4m3_half[x[b].d[g]] * static_cast<float>(s[g]);
    }
    return sum;
}
// q1_0: the bits of each 32 as byte masks (bit_masks_neon), then 0xFF (clear) or 0x01
// (set): -1 / +1 times y.
template <class A>
TESSERA_ALWAYS_INLINE void q1_signs_neon(const std::uint8_t* bits, int8x16_t& lo, int8x16_t& hi) {
    uint8x16_t mlo, mhi;
    bit_masks_neon<A>(bits, mlo, mhi);
    const uint8x16_t one = vdupq_n_u8(1);
    lo = vreinterpretq_s8_u8(vorrq_u8(vmvnq_u8(mlo), one));
    hi = vreinterpretq_s8_u8(vorrq_u8(vmvnq_u8(mhi), one));
}
template <class A>
float vdot(std::int64_t n, const q::block_q1_0* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / 128; ++b) {
        int32x4_t p[4];
        for (int k = 0; k < 4; ++k) {
            int8x16_t lo, hi;
            q1_signs_neon<A>(x[b].qs + 4 * k, lo, hi);
            const std::int8_t* yq = y[4 * b + k].qs;
            p[k] = dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(yq)), hi, vld1q_s8(yq + 16));
        }
        std::int32_t s[4];
        vst1q_s32(s, whole4_neon<A>(p[0], p[1], p[2], p[3]));
        float sb = 0.0f;
        for (int k = 0; k < 4; ++k) sb += h2f<A>(y[4 * b + k].d) * static_cast<float>(s[k]);
        sum += h2f<A>(x[b].d) * sb;
    }
    return sum;
}
// q2_0: byte j of each 32 is bits 2 (j % 4) of qs[j / 4]: TBL spreads the bytes, USHL by
// 0, -2, -4, -6 and AND 3 give the code q, q - 1 the value.
template <class A>
float vdot(std::int64_t n, const q::block_q2_0* x, const q::block_q8_0* y, simd::requires_arch<simd::neon>) {
    alignas(16) static constexpr std::uint8_t spread_lo[16] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
    alignas(16) static constexpr std::int8_t shifts[16] = {0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6, 0, -2, -4, -6};
    const uint8x16_t sel_lo = vld1q_u8(spread_lo), sel_hi = vaddq_u8(sel_lo, vdupq_n_u8(4));
    const int8x16_t sh = vld1q_s8(shifts);
    const uint8x16_t m3 = vdupq_n_u8(3);
    const int8x16_t one = vdupq_n_s8(1);
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / 64; ++b) {
        int32x4_t p[2];
        for (int k = 0; k < 2; ++k) {
            const uint8x16_t v = vcombine_u8(vld1_u8(x[b].qs + 8 * k), vdup_n_u8(0));
            const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(vqtbl1q_u8(v, sel_lo), sh), m3)), one);
            const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(vshlq_u8(vqtbl1q_u8(v, sel_hi), sh), m3)), one);
            const std::int8_t* yq = y[2 * b + k].qs;
            p[k] = dot_s8<A>(dot_s8<A>(vdupq_n_s32(0), lo, vld1q_s8(yq)), hi, vld1q_s8(yq + 16));
        }
        const float sb = h2f<A>(y[2 * b].d) * static_cast<float>(vaddvq_s32(p[0]));
        sum += h2f<A>(x[b].d) * (sb + h2f<A>(y[2 * b + 1].d) * static_cast<float>(vaddvq_s32(p[1])));
    }
    return sum;
}

// ---- the lattice i-quants (against q8_K) --------------------------------------------------
// Grid entries are loaded per 8 (or 4) values into vectors and signed by MUL with +-1
// bytes (tables<A>::signs) before the dot with y, so y's -128 stays exact. The integer
// sum of the super-block, sub-block dots times their odd scales, is made whole in i32
// lanes; then the scalar body's f32 operations in its order, so its value.
template <class A>
TESSERA_ALWAYS_INLINE int8x16_t u64x2_neon(std::uint64_t a, std::uint64_t b) {
    return vcombine_s8(vcreate_s8(a), vcreate_s8(b));
}
template <class A>
TESSERA_ALWAYS_INLINE int8x16_t u32x4_neon(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
    return vreinterpretq_s8_u64(vcombine_u64(vcreate_u64(a | static_cast<std::uint64_t>(b) << 32),
                                             vcreate_u64(c | static_cast<std::uint64_t>(d) << 32)));
}
// the dot of 16 signed grid values g * pm with y, as four partial sums
template <class A>
TESSERA_ALWAYS_INLINE int32x4_t grid_dot16_neon(int8x16_t g, int8x16_t pm, const std::int8_t* q8) {
    return dot_s8<A>(vdupq_n_s32(0), vmulq_s8(g, pm), vld1q_s8(q8));
}
// sum_j sc[j] * S_j over sixteen groups, p[j] the partial sums of group j: exact in i32
template <class A>
TESSERA_ALWAYS_INLINE std::int32_t scaled_sum16_neon(const int32x4_t p[16], const std::int32_t sc[16]) {
    int32x4_t s = vmulq_s32(whole4_neon<A>(p[0], p[1], p[2], p[3]), vld1q_s32(sc));
    for (int k = 1; k < 4; ++k)
        s = vmlaq_s32(s, whole4_neon<A>(p[4 * k], p[4 * k + 1], p[4 * k + 2], p[4 * k + 3]), vld1q_s32(sc + 4 * k));
    return vaddvq_s32(s);
}
// The iq2 / iq3 bodies: per super-block, group(block, q8, ib, h, sc) gives the partial
// sums of the 16 values of half h of 32-block ib against q8 and sets their odd scale sc;
// then d_x d_y times the whole integer sum, added in the scalar body's order.
template <class A, class B, class F>
TESSERA_ALWAYS_INLINE float lattice_sum_neon(std::int64_t n, const B* x, const q::block_q8_K* y, F&& group) {
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        int32x4_t p[16];
        std::int32_t sc[16];
        for (int g = 0; g < 16; ++g) p[g] = group(x[b], y[b].qs + 16 * g, g / 2, g % 2, sc[g]);
        sum += h2f<A>(x[b].d) * y[b].d * static_cast<float>(scaled_sum16_neon<A>(p, sc));
    }
    return sum;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq2_xxs* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    const auto& st = tables<A>::signs.code7;
    return 0.125f * lattice_sum_neon<A>(n, x, y, [&](const q::block_iq2_xxs& xb, const std::int8_t* q8, int ib, int h, std::int32_t& sc) {
        const auto* qb = reinterpret_cast<const std::uint8_t*>(xb.qs + 4 * ib);
        const std::uint32_t aux = q::detail::load_u32(qb + 4);
        sc = static_cast<std::int32_t>(2 * (aux >> 28) + 1);
        return grid_dot16_neon<A>(u64x2_neon<A>(q::iq2xxs_grid[qb[2 * h]], q::iq2xxs_grid[qb[2 * h + 1]]),
                                  u64x2_neon<A>(st[(aux >> (14 * h)) & 127], st[(aux >> (14 * h + 7)) & 127]), q8);
    });
}
template <class A>
float vdot(std::int64_t n, const q::block_iq2_xs* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    const auto& st = tables<A>::signs.code7;
    return 0.125f * lattice_sum_neon<A>(n, x, y, [&](const q::block_iq2_xs& xb, const std::int8_t* q8, int ib, int h, std::int32_t& sc) {
        const std::uint16_t* qb = xb.qs + 4 * ib + 2 * h;
        sc = 2 * ((xb.scales[ib] >> (4 * h)) & 15) + 1;
        return grid_dot16_neon<A>(u64x2_neon<A>(q::iq2xs_grid[qb[0] & 511], q::iq2xs_grid[qb[1] & 511]),
                                  u64x2_neon<A>(st[qb[0] >> 9], st[qb[1] >> 9]), q8);
    });
}
template <class A>
float vdot(std::int64_t n, const q::block_iq2_s* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    const auto& st = tables<A>::signs.byte;
    return 0.125f * lattice_sum_neon<A>(n, x, y, [&](const q::block_iq2_s& xb, const std::int8_t* q8, int ib, int h, std::int32_t& sc) {
        const std::uint8_t* signs = xb.qs + q::qk_k / 8 + 4 * ib;
        const int l = 2 * h;
        sc = 2 * ((xb.scales[ib] >> (4 * h)) & 15) + 1;
        return grid_dot16_neon<A>(u64x2_neon<A>(q::detail::iq2s_entry(xb, ib, l), q::detail::iq2s_entry(xb, ib, l + 1)),
                                  u64x2_neon<A>(st[signs[l]], st[signs[l + 1]]), q8);
    });
}
template <class A>
float vdot(std::int64_t n, const q::block_iq3_xxs* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    const auto& st = tables<A>::signs.code7;
    return 0.25f * lattice_sum_neon<A>(n, x, y, [&](const q::block_iq3_xxs& xb, const std::int8_t* q8, int ib, int h, std::int32_t& sc) {
        const std::uint8_t* qs = xb.qs + 8 * ib + 4 * h;
        const std::uint32_t aux = q::detail::load_u32(xb.qs + q::qk_k / 4 + 4 * ib);
        sc = static_cast<std::int32_t>(2 * (aux >> 28) + 1);
        return grid_dot16_neon<A>(u32x4_neon<A>(q::iq3xxs_grid[qs[0]], q::iq3xxs_grid[qs[1]], q::iq3xxs_grid[qs[2]], q::iq3xxs_grid[qs[3]]),
                                  u64x2_neon<A>(st[(aux >> (14 * h)) & 127], st[(aux >> (14 * h + 7)) & 127]), q8);
    });
}
template <class A>
float vdot(std::int64_t n, const q::block_iq3_s* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    const auto& st = tables<A>::signs.byte;
    return lattice_sum_neon<A>(n, x, y, [&](const q::block_iq3_s& xb, const std::int8_t* q8, int ib, int h, std::int32_t& sc) {
        const auto e = [&](int l, int half) { return q::detail::iq3s_entry(xb, ib, l, half); };
        const int l = 2 * h;
        sc = 2 * ((xb.scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1;
        return grid_dot16_neon<A>(u32x4_neon<A>(e(l, 0), e(l, 1), e(l + 1, 0), e(l + 1, 1)),
                                  u64x2_neon<A>(st[xb.signs[4 * ib + l]], st[xb.signs[4 * ib + l + 1]]), q8);
    });
}
// iq1: grid values -1, 0, 1 as bytes, their dot with y direct; the delta term from the
// sums of y (q8_K's bsums per 16 for iq1_s, a +-1 byte vector per 8 for iq1_m).
template <class A>
float vdot(std::int64_t n, const q::block_iq1_s* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        int32x4_t p[16];
        std::int32_t sc[16];
        int sumi1 = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint16_t qh = x[b].qh[ib];
            const auto e = [&](int l) { return q::iq1s_grid[x[b].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)]; };
            const std::int8_t* q8 = y[b].qs + 32 * ib;
            p[2 * ib] = dot_s8<A>(vdupq_n_s32(0), u64x2_neon<A>(e(0), e(1)), vld1q_s8(q8));
            p[2 * ib + 1] = dot_s8<A>(vdupq_n_s32(0), u64x2_neon<A>(e(2), e(3)), vld1q_s8(q8 + 16));
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            sc[2 * ib] = sc[2 * ib + 1] = ls;
            sumi1 += ls * (qh & 0x8000 ? -1 : 1) * (y[b].bsums[2 * ib] + y[b].bsums[2 * ib + 1]);
        }
        const float t = static_cast<float>(scaled_sum16_neon<A>(p, sc)) +
                        q::detail::rounded(q::detail::iq1_delta * static_cast<float>(sumi1));
        sum += h2f<A>(x[b].d) * y[b].d * t;
    }
    return sum;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq1_m* x, const q::block_q8_K* y, simd::requires_arch<simd::neon>) {
    constexpr std::uint64_t plus = 0x0101010101010101ull, minus = ~0ull;
    float sum = 0.0f;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        int32x4_t p1[16], p2[16];
        std::int32_t sc[16];
        for (int ib = 0; ib < 8; ++ib)
            for (int h = 0; h < 2; ++h) {
                const int l = 2 * h;
                const auto dl = [&](int k) { return q::detail::iq1m_negative(x[b], ib, k) ? minus : plus; };
                const int8x16_t yv = vld1q_s8(y[b].qs + 32 * ib + 16 * h);
                p1[2 * ib + h] = dot_s8<A>(vdupq_n_s32(0),
                                           u64x2_neon<A>(q::detail::iq1m_entry(x[b], ib, l), q::detail::iq1m_entry(x[b], ib, l + 1)), yv);
                p2[2 * ib + h] = dot_s8<A>(vdupq_n_s32(0), u64x2_neon<A>(dl(l), dl(l + 1)), yv);
                sc[2 * ib + h] = q::detail::iq1m_ls(x[b], ib, h);
            }
        const float t = static_cast<float>(scaled_sum16_neon<A>(p1, sc)) +
                        q::detail::rounded(q::detail::iq1_delta * static_cast<float>(scaled_sum16_neon<A>(p2, sc)));
        sum += h2f<A>(q::detail::iq1m_scale(x[b])) * y[b].d * t;
    }
    return sum;
}

// f16 rows: eight elements per step widened by FCVTL / FCVTL2, products exact in f32.
template <class A>
float vdot_f16(std::int64_t n, const f16* x, const f16* y, simd::requires_arch<simd::neon>) {
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float16x8_t a = vreinterpretq_f16_u16(vld1q_u16(&x[i].bits));
        const float16x8_t b = vreinterpretq_f16_u16(vld1q_u16(&y[i].bits));
        acc0 = vfmaq_f32(acc0, vcvt_f32_f16(vget_low_f16(a)), vcvt_f32_f16(vget_low_f16(b)));
        acc1 = vfmaq_f32(acc1, vcvt_high_f32_f16(a), vcvt_high_f32_f16(b));
    }
    float s = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; ++i) s += h2f<A>(x[i]) * h2f<A>(y[i]);
    return s;
}

// bf16 rows: a bf16 is the high half of its f32, so widening is a 16-bit shift.
template <class A>
float vdot_bf16(std::int64_t n, const bf16* x, const bf16* y, simd::requires_arch<simd::neon>) {
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const uint16x8_t a = vld1q_u16(&x[i].bits), b = vld1q_u16(&y[i].bits);
        acc0 = vfmaq_f32(acc0, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(a), 16)),
                         vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16)));
        acc1 = vfmaq_f32(acc1, vreinterpretq_f32_u32(vshll_high_n_u16(a, 16)),
                         vreinterpretq_f32_u32(vshll_high_n_u16(b, 16)));
    }
    float s = vaddvq_f32(vaddq_f32(acc0, acc1));
    for (; i < n; ++i) s += bf2f<A>(x[i]) * bf2f<A>(y[i]);
    return s;
}

// ---- i8mm (with BF16) ----------------------------------------------------------------------
template <class A>
float vdot_bf16(std::int64_t n, const bf16* x, const bf16* y, simd::requires_arch<simd::i8mm>) {
    float32x4_t even = vdupq_n_f32(0.0f), odd = vdupq_n_f32(0.0f);
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const bfloat16x8_t a = vreinterpretq_bf16_u16(vld1q_u16(&x[i].bits));
        const bfloat16x8_t b = vreinterpretq_bf16_u16(vld1q_u16(&y[i].bits));
        even = vbfmlalbq_f32(even, a, b);  // lanes 0, 2, 4, 6
        odd = vbfmlaltq_f32(odd, a, b);    // lanes 1, 3, 5, 7
    }
    float s = vaddvq_f32(vaddq_f32(even, odd));
    for (; i < n; ++i) s += bf2f<A>(x[i]) * bf2f<A>(y[i]);
    return s;
}

// ---- SVE (length-agnostic) -----------------------------------------------------------------
// As sum_blocks_neon: each block's integer dot made whole (SADDV) before its scale.
template <class A, class F>
TESSERA_ALWAYS_INLINE float sum_blocks_sve(std::int64_t nb, F&& block) {
    const svbool_t all = svptrue_b32();
    float sum0 = 0.0f, sum1 = 0.0f;
    std::int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        float d0, d1;
        const svint32_t p0 = block(i, d0), p1 = block(i + 1, d1);
        sum0 += static_cast<float>(svaddv_s32(all, p0)) * d0;
        sum1 += static_cast<float>(svaddv_s32(all, p1)) * d1;
    }
    if (i < nb) {
        float d0;
        const svint32_t p0 = block(i, d0);
        sum0 += static_cast<float>(svaddv_s32(all, p0)) * d0;
    }
    return sum0 + sum1;
}

template <class A>
float vdot(std::int64_t n, const q::block_q8_0* x, const q::block_q8_0* y, simd::requires_arch<simd::sve>) {
    int vl = static_cast<int>(svcntb());  // not const: GCC would try it as a constant expression
    return sum_blocks_sve<A>(n / q::qk8_0, [&](std::int64_t i, float& d) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        svint32_t p = svdup_n_s32(0);
        for (int off = 0; off < q::qk8_0; off += vl) {
            const svbool_t pg = svwhilelt_b8_s32(off, q::qk8_0);  // inactive lanes load as 0
            p = svdot_s32(p, svld1_s8(pg, x[i].qs + off), svld1_s8(pg, y[i].qs + off));
        }
        return p;
    });
}

template <class A>
float vdot(std::int64_t n, const q::block_q4_0* x, const q::block_q8_0* y, simd::requires_arch<simd::sve>) {
    int vl = static_cast<int>(svcntb());  // not const: GCC would try it as a constant expression
    return sum_blocks_sve<A>(n / q::qk4_0, [&](std::int64_t i, float& d) {
        d = h2f<A>(x[i].d) * h2f<A>(y[i].d);
        svint32_t p = svdup_n_s32(0);
        // the 16 bytes hold elements off..off+vl-1 (low nibbles) and 16+off.. (high)
        for (int off = 0; off < 16; off += vl) {
            const svbool_t pg = svwhilelt_b8_s32(off, 16);
            const svuint8_t v = svld1_u8(pg, x[i].qs + off);
            // lanes outside pg hold -8 after the bias, but y loads 0 there
            const svint8_t lo = svsub_n_s8_x(pg, svreinterpret_s8_u8(svand_n_u8_x(pg, v, 0x0F)), 8);
            const svint8_t hi = svsub_n_s8_x(pg, svreinterpret_s8_u8(svlsr_n_u8_x(pg, v, 4)), 8);
            p = svdot_s32(p, lo, svld1_s8(pg, y[i].qs + off));
            p = svdot_s32(p, hi, svld1_s8(pg, y[i].qs + 16 + off));
        }
        return p;
    });
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
