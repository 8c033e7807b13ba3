// AArch64 helpers of the quantized-block kernels: the f16 <-> f32 conversions through the
// FCVT instructions (base ARMv8: every level has them; bit-exact with core/f16.hpp's
// conversions, NaN payloads and subnormals included, with the default FPCR), and the
// signed 8-bit dot product of 16 bytes, one body per level: SMULL + SADALP on plain
// Advanced SIMD, SDOT from dotprod on. Part of kernels/quant/common.hpp, which includes
// it after the scalar bodies.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_AARCH64)

#include <cstdint>

#include <arm_neon.h>

#include "tessera/core/f16.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

template <class A>
TESSERA_ALWAYS_INLINE float h2f_bits(std::uint16_t h, simd::requires_arch<simd::neon>) noexcept {
    return static_cast<float>(__builtin_bit_cast(__fp16, h));
}
template <class A>
TESSERA_ALWAYS_INLINE f16 f2h(float v, simd::requires_arch<simd::neon>) noexcept {
    return f16::from_bits(__builtin_bit_cast(std::uint16_t, static_cast<__fp16>(v)));
}

// acc + the four sums of four products a[4i..4i+3] * b[4i..4i+3] (every level adds the
// same integers; only how they are grouped into the four lanes may differ, and the
// callers add the lanes up).
template <class A>
TESSERA_ALWAYS_INLINE int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b, simd::requires_arch<simd::neon>) {
    // |products| <= 2^14, so each fits int16; pairs are added in int32 by SADALP.
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}
template <class A>
TESSERA_ALWAYS_INLINE int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b, simd::requires_arch<simd::dotprod>) {
    return vdotq_s32(acc, a, b);
}
template <class A>
TESSERA_ALWAYS_INLINE int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return dot_s8<A>(acc, a, b, A{});
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
