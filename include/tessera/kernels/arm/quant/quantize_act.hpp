// AArch64 bodies of the activation quantizers of kernels/quant/quantize_act.hpp, on
// Advanced SIMD (every ARM level). The bytes are the scalar definition's:
//   q8_0, q8_1  the same amax, d = amax / 127 and 1 / d in f32, x * (1 / d) rounded by
//               FCVTAS (to nearest, ties away from zero: roundf exactly), the scale
//               through FCVT to f16;
//   q8_K        the first value of largest magnitude, iscale = -127 / it, iscale * x
//               rounded by FCVTNS (to nearest even, as the reference's 1.5 * 2^23 add
//               for these magnitudes) and capped at 127, the bsums in 16-bit lanes; a
//               block whose amax is 0 or NaN takes the scalar body.
// Part of kernels/quant/quantize_act.hpp.
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

// One 32-element block: its scale d (f32, before f16 rounding) and its 32 quants;
// returns the sum of the quants (q8_1's s).
template <class A>
TESSERA_ALWAYS_INLINE int quantize_block32_neon(const float* x, std::int8_t* qs, float& d) {
    float32x4_t v[8];
    for (int k = 0; k < 8; ++k) v[k] = vld1q_f32(x + 4 * k);
    float32x4_t m = vabsq_f32(v[0]);
    for (int k = 1; k < 8; ++k) m = vmaxq_f32(m, vabsq_f32(v[k]));
    const float amax = vmaxvq_f32(m);
    d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    int16x8_t sum = vdupq_n_s16(0);
    for (int k = 0; k < 8; k += 2) {
        const int32x4_t a = vcvtaq_s32_f32(vmulq_n_f32(v[k], id));
        const int32x4_t b = vcvtaq_s32_f32(vmulq_n_f32(v[k + 1], id));
        const int16x8_t h = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
        vst1_s8(qs + 4 * k, vmovn_s16(h));
        sum = vaddq_s16(sum, h);  // |sum| <= 4 * 127 per lane
    }
    return vaddlvq_s16(sum);
}

template <class A>
void quantize_q8_0(const float* x, quant::block_q8_0* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    for (std::int64_t b = 0; b < n / 32; ++b, x += 32) {
        float d;
        quantize_block32_neon<A>(x, y[b].qs, d);
        y[b].d = f2h<A>(d);
    }
}
template <class A>
void quantize_q8_1(const float* x, quant::block_q8_1* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    for (std::int64_t b = 0; b < n / 32; ++b, x += 32) {
        float d;
        const int sum = quantize_block32_neon<A>(x, y[b].qs, d);
        y[b].d = f2h<A>(d);
        y[b].s = f2h<A>(static_cast<float>(sum) * d);
    }
}

template <class A>
void quantize_q8_K(const float* x, quant::block_q8_K* y, std::int64_t n, simd::requires_arch<simd::neon>) {
    for (std::int64_t b = 0; b < n / quant::qk_k; ++b, x += quant::qk_k) {
        float32x4_t m = vdupq_n_f32(0.0f);
        for (int k = 0; k < quant::qk_k; k += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + k)));
        const float amax = vmaxvq_f32(m);
        if (!(amax > 0.0f)) {
            quant::quantize_row_unchecked<A>(x, y + b, quant::qk_k);
            continue;
        }
        int first = 0;
        while (__builtin_fabsf(x[first]) != amax) ++first;
        const float iscale = -127.0f / x[first];
        const int32x4_t cap = vdupq_n_s32(127);
        for (int g = 0; g < quant::qk_k / 16; ++g) {
            int16x8_t h[2];
            for (int k = 0; k < 2; ++k) {
                const float* p = x + 16 * g + 8 * k;
                const int32x4_t a = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(p), iscale)), cap);
                const int32x4_t c = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(p + 4), iscale)), cap);
                h[k] = vcombine_s16(vmovn_s32(a), vmovn_s32(c));
            }
            vst1q_s8(y[b].qs + 16 * g, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
            y[b].bsums[g] = static_cast<std::int16_t>(vaddvq_s16(vaddq_s16(h[0], h[1])));
        }
        y[b].d = 1 / iscale;
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
