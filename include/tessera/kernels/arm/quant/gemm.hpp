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

#include <arm_neon.h>

#include "tessera/kernels/quant/common.hpp"
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

template <class A, class B>
void qgemm(std::int64_t k, std::int64_t m, std::int64_t n, const B* x, std::size_t xs, const std::byte* y, std::size_t ys,
           float* out, std::size_t ldo, std::byte* work, simd::requires_arch<simd::neon>) {
    qgemm_wide<A, qv128<A>>(k, m, n, x, xs, y, ys, out, ldo, work);
}
template <class A, class B>
void qgemm_r4(std::int64_t k, std::int64_t m, std::int64_t n, const std::byte* x, const std::byte* y, std::size_t ys,
              float* out, std::size_t ldo, simd::requires_arch<simd::neon>) {
    qgemm_rows4_wide<A, qv128<A>, B>(k, m, n, x, y, ys, out, ldo);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
