// Row conversions between f32 and the 16-bit float formats (f16, bf16).
//
// Every path is bit-exact with the scalar conversions in core/f16.hpp: round to
// nearest even, overflow to infinity, subnormals kept, NaNs quiet with their payload's
// top bits. The x86 bodies (kernels/x86/convert.hpp): SSE4.2 with integer arithmetic,
// AVX2 and AVX-512 with F16C for f16. load_wide reads one vector of a 16-bit row as f32
// (x86: F16C / a 16-bit shift; ARM, kernels/arm/convert.hpp: FCVTL / a 16-bit shift).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

namespace detail {

// ---- scalar references -------------------------------------------------------------
template <class A>
void f16_to_f32(const f16* x, float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i].to_float();
}
template <class A>
void f32_to_f16(const float* x, f16* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] = f16::from_float(x[i]);
}
template <class A>
void bf16_to_f32(const bf16* x, float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i].to_float();
}
template <class A>
void f32_to_bf16(const float* x, bf16* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] = bf16::from_float(x[i]);
}

// ---- one vector of a row as f32 ---------------------------------------------------
// (for kernels that read 16-bit rows in place, e.g. gemm_h16_f32; one element: core's
// to_float). One batch of the arch's floats from p (f32, f16 or bf16). Here by the scalar
// conversion; the x86 and ARM bodies widen f16 / bf16 in registers.
template <class A, class T>
TESSERA_ALWAYS_INLINE xsimd::batch<float, typename A::xsimd_arch> load_wide(const T* p,
                                                                          simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    if constexpr (std::is_same_v<T, float>) {
        return B::load_unaligned(p);
    } else {
        alignas(64) float t[B::size];
        for (std::size_t i = 0; i < B::size; ++i) t[i] = p[i].to_float();
        return B::load_aligned(t);
    }
}

}  // namespace detail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/arm/convert.hpp"
#include "tessera/kernels/x86/convert.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

template <class A>
struct f16_to_f32 {
    void operator()(const f16* x, float* y, std::size_t n) const;
};
template <class A>
void f16_to_f32<A>::operator()(const f16* x, float* y, std::size_t n) const {
    detail::f16_to_f32<A>(x, y, n, A{});
}
TESSERA_KERNEL(f16_to_f32);

template <class A>
struct f32_to_f16 {
    void operator()(const float* x, f16* y, std::size_t n) const;
};
template <class A>
void f32_to_f16<A>::operator()(const float* x, f16* y, std::size_t n) const {
    detail::f32_to_f16<A>(x, y, n, A{});
}
TESSERA_KERNEL(f32_to_f16);

template <class A>
struct bf16_to_f32 {
    void operator()(const bf16* x, float* y, std::size_t n) const;
};
template <class A>
void bf16_to_f32<A>::operator()(const bf16* x, float* y, std::size_t n) const {
    detail::bf16_to_f32<A>(x, y, n, A{});
}
TESSERA_KERNEL(bf16_to_f32);

template <class A>
struct f32_to_bf16 {
    void operator()(const float* x, bf16* y, std::size_t n) const;
};
template <class A>
void f32_to_bf16<A>::operator()(const float* x, bf16* y, std::size_t n) const {
    detail::f32_to_bf16<A>(x, y, n, A{});
}
TESSERA_KERNEL(f32_to_bf16);

}  // namespace kernels
TESSERA_END_NAMESPACE
