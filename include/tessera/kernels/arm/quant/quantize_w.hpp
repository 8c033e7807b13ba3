// AArch64 body of the q4_0 weight quantizer of kernels/quant/quantize_w.hpp, on Advanced
// SIMD (every ARM level), byte-identical with the scalar body there:
//   - max: the first value of largest magnitude (NaNs never win: their |x| is masked to
//     0 before the FMAXV; the first index of the maximum by an UMINV over lane indices);
//   - d = max / -8 and id = 1 / d in f32, d to f16 through FCVT;
//   - q = min(15, trunc(x * id + 8.5)): the product goes through an empty asm so that GCC
//     does not contract it into the add (the reference rounds it first); FCVTZS
//     saturates where the reference's truncation gives INT32_MIN (NaN, |v| >= 2^31), so
//     those lanes are cleared, which gives the same low byte (0).
// Part of kernels/quant/quantize_w.hpp, which includes it after the scalar body.
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

// trunc(v) as the reference's trunc_i32 for the lanes it keeps: 0 where |v| >= 2^31 or NaN.
template <class A>
TESSERA_ALWAYS_INLINE int32x4_t trunc_or_zero_neon(float32x4_t v) {
    const uint32x4_t in_range = vcaltq_f32(v, vdupq_n_f32(2147483648.0f));
    return vandq_s32(vcvtq_s32_f32(v), vreinterpretq_s32_u32(in_range));
}

template <class A>
void quantize_q4_0(const float* x, quant::block_q4_0* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    const uint32x4_t iota = {0, 1, 2, 3};
    for (std::int64_t i = 0; i < n / 32; ++i, x += 32) {
        float32x4_t v[8], a[8];
        for (int k = 0; k < 8; ++k) {
            v[k] = vld1q_f32(x + 4 * k);
            a[k] = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vabsq_f32(v[k])), vceqq_f32(v[k], v[k])));
        }
        float32x4_t m = vmaxq_f32(vmaxq_f32(vmaxq_f32(a[0], a[1]), vmaxq_f32(a[2], a[3])),
                                  vmaxq_f32(vmaxq_f32(a[4], a[5]), vmaxq_f32(a[6], a[7])));
        const float amax = vmaxvq_f32(m);
        float max = 0.0f;
        if (amax > 0.0f) {
            const float32x4_t vm = vdupq_n_f32(amax);
            uint32x4_t first = vdupq_n_u32(32);
            for (int k = 0; k < 8; ++k)
                first = vminq_u32(first, vbslq_u32(vceqq_f32(a[k], vm), vaddq_u32(iota, vdupq_n_u32(4u * static_cast<unsigned>(k))), first));
            max = x[vminvq_u32(first)];
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f2h<A>(d);
        int32x4_t t[8];
        for (int k = 0; k < 8; ++k) {
            float32x4_t p = vmulq_n_f32(v[k], id);
            __asm__("" : "+w"(p));  // the product rounded before the add: no FMLA
            t[k] = trunc_or_zero_neon<A>(vaddq_f32(p, vdupq_n_f32(8.5f)));
        }
        // the low byte of each i32 (as the reference's cast to int8), capped at 15
        const int16x8_t h0 = vmovn_high_s32(vmovn_s32(t[0]), t[1]), h1 = vmovn_high_s32(vmovn_s32(t[2]), t[3]);
        const int16x8_t h2 = vmovn_high_s32(vmovn_s32(t[4]), t[5]), h3 = vmovn_high_s32(vmovn_s32(t[6]), t[7]);
        const int8x16_t k15 = vdupq_n_s8(15);
        const int8x16_t lo = vminq_s8(vmovn_high_s16(vmovn_s16(h0), h1), k15);  // elements 0-15
        const int8x16_t hi = vminq_s8(vmovn_high_s16(vmovn_s16(h2), h3), k15);  // elements 16-31
        vst1q_u8(y[i].qs, vsliq_n_u8(vreinterpretq_u8_s8(lo), vreinterpretq_u8_s8(hi), 4));
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
