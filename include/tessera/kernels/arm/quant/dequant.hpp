// AArch64 bodies of the dequantizers of kernels/quant/dequant.hpp: q4_0, q8_0, q4_K and
// q6_K on Advanced SIMD (every ARM level; dotprod, i8mm and sve use the neon body). The
// floats are the scalar bodies' bits: the integers widen exactly (SXTL / UXTL, SCVTF),
// each element is one product by the same f32 scale (q6_K: d * sc rounded first, as in
// the reference), and q4_K's min is subtracted from the rounded product (the product
// goes through an empty asm so that GCC does not contract it into FMLS).
// Part of kernels/quant/dequant.hpp, which includes it after the scalar bodies.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_AARCH64)

#include <cstdint>

#include <arm_neon.h>

#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace q = ::tessera::quant;

// y[0..16) = float(v) * d for 16 signed bytes v.
template <class A>
TESSERA_ALWAYS_INLINE void dq16_neon(float* y, int8x16_t v, float d) {
    const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_high_s8(v);
    vst1q_f32(y, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
    vst1q_f32(y + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d));
    vst1q_f32(y + 8, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
    vst1q_f32(y + 12, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d));
}
// y[0..16) = (d * float(u)) - m for 16 unsigned bytes u, the product rounded first.
template <class A>
TESSERA_ALWAYS_INLINE void dq16_min_neon(float* y, uint8x16_t u, float d, float m) {
    const uint16x8_t lo = vmovl_u8(vget_low_u8(u)), hi = vmovl_high_u8(u);
    const float32x4_t vm = vdupq_n_f32(m);
    const auto one = [&](float* o, uint32x4_t w) {
        float32x4_t p = vmulq_n_f32(vcvtq_f32_u32(w), d);
        __asm__("" : "+w"(p));  // keep the product rounded: no FMLS
        vst1q_f32(o, vsubq_f32(p, vm));
    };
    one(y, vmovl_u16(vget_low_u16(lo)));
    one(y + 4, vmovl_high_u16(lo));
    one(y + 8, vmovl_u16(vget_low_u16(hi)));
    one(y + 12, vmovl_high_u16(hi));
}

template <class A>
void dequant(const q::block_q4_0* x, float* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    const int8x16_t bias = vdupq_n_s8(8);
    for (std::int64_t i = 0; i < n / q::qk4_0; ++i, y += q::qk4_0) {
        const float d = h2f<A>(x[i].d);
        const uint8x16_t v = vld1q_u8(x[i].qs);
        dq16_neon<A>(y, vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), bias), d);
        dq16_neon<A>(y + 16, vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), bias), d);
    }
}
template <class A>
void dequant(const q::block_q8_0* x, float* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    for (std::int64_t i = 0; i < n / q::qk8_0; ++i, y += q::qk8_0) {
        const float d = h2f<A>(x[i].d);
        dq16_neon<A>(y, vld1q_s8(x[i].qs), d);
        dq16_neon<A>(y + 16, vld1q_s8(x[i].qs + 16), d);
    }
}
// q4_K: chunk j of 32 bytes holds sub-block 2j (low nibbles) and 2j + 1 (high).
template <class A>
void dequant(const q::block_q4_K* x, float* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i, y += q::qk_k) {
        const float d = h2f<A>(x[i].d), dmin = h2f<A>(x[i].dmin);
        for (int j = 0; j < 4; ++j) {
            std::uint8_t s1, m1, s2, m2;
            scale_min_k4<A>(2 * j, x[i].scales, s1, m1);
            scale_min_k4<A>(2 * j + 1, x[i].scales, s2, m2);
            const float d1 = d * s1, n1 = dmin * m1, d2 = d * s2, n2 = dmin * m2;
            for (int h = 0; h < 2; ++h) {
                const uint8x16_t v = vld1q_u8(x[i].qs + 32 * j + 16 * h);
                dq16_min_neon<A>(y + 64 * j + 16 * h, vandq_u8(v, m4), d1, n1);
                dq16_min_neon<A>(y + 64 * j + 32 + 16 * h, vshrq_n_u8(v, 4), d2, n2);
            }
        }
    }
}
// q6_K: per half of 128 and per 16 l, ql bytes l and l + 32 give the low nibbles of
// elements l, l + 32 (low) and l + 64, l + 96 (high); qh byte l their top two bits.
template <class A>
void dequant(const q::block_q6_K* x, float* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m2 = vdupq_n_u8(0x30);
    const int8x16_t bias = vdupq_n_s8(32);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i, y += q::qk_k) {
        const float d = h2f<A>(x[i].d);
        for (int h = 0; h < 2; ++h) {
            for (int g = 0; g < 2; ++g) {  // l = 16g .. 16g + 15
                const std::uint8_t* ql = x[i].ql + 64 * h + 16 * g;
                const uint8x16_t a = vld1q_u8(ql), c = vld1q_u8(ql + 32), hb = vld1q_u8(x[i].qh + 32 * h + 16 * g);
                int8x16_t v[4];
                v[0] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(a, m4), vandq_u8(vshlq_n_u8(hb, 4), m2)));
                v[1] = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(c, m4), vandq_u8(vshlq_n_u8(hb, 2), m2)));
                v[2] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(a, 4), vandq_u8(hb, m2)));
                v[3] = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(c, 4), vandq_u8(vshrq_n_u8(hb, 2), m2)));
                for (int k = 0; k < 4; ++k)  // elements 128h + 32k + 16g + (0..15), scale 8h + 2k + g
                    dq16_neon<A>(y + 128 * h + 32 * k + 16 * g, vsubq_s8(v[k], bias),
                                 d * static_cast<float>(x[i].scales[8 * h + 2 * k + g]));
            }
        }
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
