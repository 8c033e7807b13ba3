// Vector kernels: dot product and axpy on f32 rows, with the scalar reference beside the
// portable xsimd body (one body for every SIMD level); and axpy_rows, the sum of many
// scaled rows into one (f32 or f16 rows, widened in registers by kernels/convert.hpp's
// load_wide): attention's probabilities times V over an f16 KV cache without a
// conversion pass.
#pragma once

#include <cstddef>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/kernels/convert.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

namespace detail {

template <class A>
float dot_f32(const float* x, const float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += x[i] * y[i];
    return s;
}

template <class A>
float dot_f32(const float* x, const float* y, std::size_t n, simd::requires_arch<simd::xsimd_common>) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = batch::size;
    batch s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
    std::size_t i = 0;
    for (; i + 4 * w <= n; i += 4 * w) {
        s0 = xsimd::fma(batch::load_unaligned(x + i), batch::load_unaligned(y + i), s0);
        s1 = xsimd::fma(batch::load_unaligned(x + i + w), batch::load_unaligned(y + i + w), s1);
        s2 = xsimd::fma(batch::load_unaligned(x + i + 2 * w), batch::load_unaligned(y + i + 2 * w), s2);
        s3 = xsimd::fma(batch::load_unaligned(x + i + 3 * w), batch::load_unaligned(y + i + 3 * w), s3);
    }
    for (; i + w <= n; i += w) s0 = xsimd::fma(batch::load_unaligned(x + i), batch::load_unaligned(y + i), s0);
    float s = xsimd::hadd((s0 + s1) + (s2 + s3));
    for (; i < n; ++i) s += x[i] * y[i];
    return s;
}

template <class A>
void axpy_f32(float a, const float* x, float* y, std::size_t n, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <class A>
void axpy_f32(float a, const float* x, float* y, std::size_t n, simd::requires_arch<simd::xsimd_common>) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = batch::size;
    const batch va(a);
    std::size_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {
        xsimd::fma(va, batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(y + i);
        xsimd::fma(va, batch::load_unaligned(x + i + w), batch::load_unaligned(y + i + w))
            .store_unaligned(y + i + w);
    }
    for (; i + w <= n; i += w)
        xsimd::fma(va, batch::load_unaligned(x + i), batch::load_unaligned(y + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += a * x[i];
}

// y[i] += sum_j p[j] * float(x[j * ldx + i]) for i < n and j < rows. A row whose p[j] is 0
// is not read (an attention's masked positions may hold anything, NaN included).
template <class A, class T>
void axpy_rows(const float* p, const T* x, std::size_t ldx, std::size_t rows, float* y, std::size_t n,
               simd::requires_arch<simd::scalar>) {
    for (std::size_t j = 0; j < rows; ++j) {
        if (p[j] == 0.f) continue;
        const T* r = x + j * ldx;
        for (std::size_t i = 0; i < n; ++i) y[i] += p[j] * to_float(r[i]);
    }
}

// R vectors of y (from i) kept in registers over all the rows.
template <class A, std::size_t R, class T>
TESSERA_ALWAYS_INLINE void axpy_rows_block(const float* p, const T* x, std::size_t ldx, std::size_t rows, float* y) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    B acc[R];
    for (std::size_t u = 0; u < R; ++u) acc[u] = B::load_unaligned(y + u * w);
    for (std::size_t j = 0; j < rows; ++j) {
        if (p[j] == 0.f) continue;
        const B pj(p[j]);
        const T* r = x + j * ldx;
        for (std::size_t u = 0; u < R; ++u) acc[u] = xsimd::fma(load_wide<A>(r + u * w, A{}), pj, acc[u]);
    }
    for (std::size_t u = 0; u < R; ++u) acc[u].store_unaligned(y + u * w);
}

template <class A, class T>
void axpy_rows(const float* p, const T* x, std::size_t ldx, std::size_t rows, float* y, std::size_t n,
               simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = B::size;
    std::size_t i = 0;
    for (; i + 8 * w <= n; i += 8 * w) axpy_rows_block<A, 8>(p, x + i, ldx, rows, y + i);
    if (i + 4 * w <= n) axpy_rows_block<A, 4>(p, x + i, ldx, rows, y + i), i += 4 * w;
    if (i + 2 * w <= n) axpy_rows_block<A, 2>(p, x + i, ldx, rows, y + i), i += 2 * w;
    if (i + w <= n) axpy_rows_block<A, 1>(p, x + i, ldx, rows, y + i), i += w;
    if (i < n) {  // the last n % w: zero-padded copies in one vector (short rows, e.g. 8-wide heads)
        const std::size_t rem = n - i;
        alignas(64) float ty[w] = {};
        std::memcpy(ty, y + i, rem * sizeof(float));
        B acc = B::load_aligned(ty);
        for (std::size_t j = 0; j < rows; ++j) {
            if (p[j] == 0.f) continue;
            alignas(64) T tx[w] = {};
            std::memcpy(tx, x + j * ldx + i, rem * sizeof(T));
            acc = xsimd::fma(load_wide<A>(&tx[0], A{}), B(p[j]), acc);
        }
        acc.store_aligned(ty);
        std::memcpy(y + i, ty, rem * sizeof(float));
    }
}
}  // namespace detail

// sum_i x[i] * y[i]
template <class A>
struct dot_f32 {
    float operator()(const float* x, const float* y, std::size_t n) const;
};
template <class A>
float dot_f32<A>::operator()(const float* x, const float* y, std::size_t n) const {
    return detail::dot_f32<A>(x, y, n, A{});
}
TESSERA_KERNEL(dot_f32);

// y[i] += a * x[i]
template <class A>
struct axpy_f32 {
    void operator()(float a, const float* x, float* y, std::size_t n) const;
};
template <class A>
void axpy_f32<A>::operator()(float a, const float* x, float* y, std::size_t n) const {
    detail::axpy_f32<A>(a, x, y, n, A{});
}
TESSERA_KERNEL(axpy_f32);

// y[i] += sum_j p[j] * x[j * ldx + i] (i < n, j < rows; rows with p[j] == 0 are not read)
template <class A>
struct axpy_rows_f32 {
    void operator()(const float* p, const float* x, std::size_t ldx, std::size_t rows, float* y, std::size_t n) const;
};
template <class A>
void axpy_rows_f32<A>::operator()(const float* p, const float* x, std::size_t ldx, std::size_t rows, float* y,
                                  std::size_t n) const {
    detail::axpy_rows<A>(p, x, ldx, rows, y, n, A{});
}
TESSERA_KERNEL(axpy_rows_f32);

// axpy_rows_f32 with x in f16 (ldx in elements)
template <class A>
struct axpy_rows_f16_f32 {
    void operator()(const float* p, const f16* x, std::size_t ldx, std::size_t rows, float* y, std::size_t n) const;
};
template <class A>
void axpy_rows_f16_f32<A>::operator()(const float* p, const f16* x, std::size_t ldx, std::size_t rows, float* y,
                                      std::size_t n) const {
    detail::axpy_rows<A>(p, x, ldx, rows, y, n, A{});
}
TESSERA_KERNEL(axpy_rows_f16_f32);

}  // namespace kernels
TESSERA_END_NAMESPACE
