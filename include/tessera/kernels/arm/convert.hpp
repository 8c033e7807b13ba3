// AArch64 bodies of kernels/convert.hpp's load_wide: four f16 values widened by FCVTL,
// four bf16 values by a 16-bit left shift (USHLL), so kernels that read 16-bit rows in
// place (gemm_h16_f32) convert in registers. The row conversions themselves keep the
// scalar bodies on ARM. Part of kernels/convert.hpp, which includes it after the
// generic load_wide.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_AARCH64)

#include <type_traits>

#include <arm_neon.h>

#include "tessera/core/f16.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace detail {

template <class A, class T>
    requires(std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
TESSERA_ALWAYS_INLINE xsimd::batch<float, typename A::xsimd_arch> load_wide(const T* p, simd::requires_arch<simd::neon>) {
    const uint16x4_t v = vld1_u16(reinterpret_cast<const std::uint16_t*>(p));
    if constexpr (std::is_same_v<T, f16>)
        return vcvt_f32_f16(vreinterpret_f16_u16(v));
    else
        return vreinterpretq_f32_u32(vshll_n_u16(v, 16));
}

}  // namespace detail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_AARCH64
