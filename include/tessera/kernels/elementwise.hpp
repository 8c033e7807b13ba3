// Element-wise f32 row kernels: binary ops (add, sub, mul, div, with the second
// operand a full row or one value), x*s + b, the unary activations, and the gated
// linear units. Each has the scalar reference and one xsimd body for every SIMD level.
// Inputs and outputs may alias exactly (in-place ops); they must not overlap otherwise.
#pragma once

#include <cmath>
#include <cstddef>

#include "tessera/config.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

enum class binary_kind : int { add, sub, mul, div };

// The element-wise functions of unary_f32. The first 22 follow ggml's unary op order.
enum class unary_kind : int {
    abs, sgn, neg, step, tanh, elu, relu, sigmoid, gelu, gelu_quick, silu, hardswish, hardsigmoid, exp, expm1,
    softplus, gelu_erf, xielu_unused, floor, ceil, round, trunc,
    sqr, sqrt, log, sin, cos, clamp /* p0 = min, p1 = max */, leaky_relu /* p0 = slope */, fill /* p0 */,
};

enum class glu_kind : int { reglu, geglu, swiglu, swiglu_oai, geglu_erf, geglu_quick };

namespace detail {

inline constexpr double k_sqrt_2_over_pi = 0.79788456080286535587989211986876;
inline constexpr double k_gelu_coef = 0.044715;
inline constexpr double k_gelu_quick = 1.702;
inline constexpr double k_inv_sqrt2 = 0.70710678118654752440084436210485;

// ---- scalar references --------------------------------------------------------------------
template <class A>
void binary_f32(binary_kind op, const float* x, const float* y, float* z, std::size_t n, bool y_scalar,
                simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) {
        const float a = x[i], b = y_scalar ? y[0] : y[i];
        switch (op) {
            case binary_kind::add: z[i] = a + b; break;
            case binary_kind::sub: z[i] = a - b; break;
            case binary_kind::mul: z[i] = a * b; break;
            case binary_kind::div: z[i] = a / b; break;
        }
    }
}

template <class A>
float unary_one(unary_kind op, float x, float p0, float p1) {
    switch (op) {
        case unary_kind::abs: return std::fabs(x);
        case unary_kind::sgn: return x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f);
        case unary_kind::neg: return -x;
        case unary_kind::step: return x > 0.f ? 1.f : 0.f;
        case unary_kind::tanh: return std::tanh(x);
        case unary_kind::elu: return x > 0.f ? x : std::expm1(x);
        case unary_kind::relu: return x > 0.f ? x : 0.f;
        case unary_kind::sigmoid: return 1.f / (1.f + std::exp(-x));
        case unary_kind::gelu: {
            const float t = static_cast<float>(k_sqrt_2_over_pi) * x * (1.f + static_cast<float>(k_gelu_coef) * x * x);
            return 0.5f * x * (1.f + std::tanh(t));
        }
        case unary_kind::gelu_quick: return x / (1.f + std::exp(static_cast<float>(-k_gelu_quick) * x));
        case unary_kind::silu: return x / (1.f + std::exp(-x));
        case unary_kind::hardswish: return x * std::fmin(1.f, std::fmax(0.f, (x + 3.f) / 6.f));
        case unary_kind::hardsigmoid: return std::fmin(1.f, std::fmax(0.f, (x + 3.f) / 6.f));
        case unary_kind::exp: return std::exp(x);
        case unary_kind::expm1: return std::expm1(x);
        case unary_kind::softplus: return x > 20.f ? x : std::log1p(std::exp(x));
        case unary_kind::gelu_erf: return 0.5f * x * (1.f + std::erf(x * static_cast<float>(k_inv_sqrt2)));
        case unary_kind::floor: return std::floor(x);
        case unary_kind::ceil: return std::ceil(x);
        case unary_kind::round: return std::round(x);
        case unary_kind::trunc: return std::trunc(x);
        case unary_kind::sqr: return x * x;
        case unary_kind::sqrt: return std::sqrt(x);
        case unary_kind::log: return std::log(x);
        case unary_kind::sin: return std::sin(x);
        case unary_kind::cos: return std::cos(x);
        case unary_kind::clamp: return x < p0 ? p0 : (x > p1 ? p1 : x);
        case unary_kind::leaky_relu: return x > 0.f ? x : p0 * x;
        case unary_kind::fill: return p0;
        case unary_kind::xielu_unused: break;
    }
    return x;
}

template <class A>
void unary_f32(unary_kind op, const float* x, float* y, std::size_t n, float p0, float p1,
               simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] = unary_one<A>(op, x[i], p0, p1);
}

template <class A>
void scale_f32(const float* x, float* y, std::size_t n, float s, float b, simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * s + b;
}

template <class A>
float glu_one(glu_kind op, float a, float g, float alpha, float limit) {
    switch (op) {
        case glu_kind::reglu: return (a > 0.f ? a : 0.f) * g;
        case glu_kind::geglu: return unary_one<A>(unary_kind::gelu, a, 0, 0) * g;
        case glu_kind::swiglu: return a / (1.f + std::exp(-a)) * g;
        case glu_kind::geglu_erf: return unary_one<A>(unary_kind::gelu_erf, a, 0, 0) * g;
        case glu_kind::geglu_quick: return unary_one<A>(unary_kind::gelu_quick, a, 0, 0) * g;
        case glu_kind::swiglu_oai: {
            const float xv = std::fmin(a, limit);
            const float yv = std::fmin(std::fmax(g, -limit), limit);
            return xv / (1.f + std::exp(-alpha * xv)) * (yv + 1.f);
        }
    }
    return 0.f;
}

template <class A>
void glu_f32(glu_kind op, const float* a, const float* g, float* y, std::size_t n, float alpha, float limit,
             simd::requires_arch<simd::scalar>) {
    for (std::size_t i = 0; i < n; ++i) y[i] = glu_one<A>(op, a[i], g[i], alpha, limit);
}

// ---- xsimd bodies -----------------------------------------------------------------------------
// Applies f to whole batches, then to a zero-padded last batch.
template <class A, class F>
TESSERA_ALWAYS_INLINE void map1(const float* x, float* y, std::size_t n, F f) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = batch::size;
    std::size_t i = 0;
    for (; i + w <= n; i += w) f(batch::load_unaligned(x + i)).store_unaligned(y + i);
    if (i < n) {
        alignas(64) float buf[w] = {};
        for (std::size_t j = 0; i + j < n; ++j) buf[j] = x[i + j];
        f(batch::load_aligned(buf)).store_aligned(buf);
        for (std::size_t j = 0; i + j < n; ++j) y[i + j] = buf[j];
    }
}
template <class A, class F>
TESSERA_ALWAYS_INLINE void map2(const float* x, const float* g, float* y, std::size_t n, F f) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    constexpr std::size_t w = batch::size;
    std::size_t i = 0;
    for (; i + w <= n; i += w) f(batch::load_unaligned(x + i), batch::load_unaligned(g + i)).store_unaligned(y + i);
    if (i < n) {
        alignas(64) float bx[w] = {}, bg[w] = {};
        for (std::size_t j = 0; i + j < n; ++j) bx[j] = x[i + j], bg[j] = g[i + j];
        f(batch::load_aligned(bx), batch::load_aligned(bg)).store_aligned(bx);
        for (std::size_t j = 0; i + j < n; ++j) y[i + j] = bx[j];
    }
}

template <class A>
void binary_f32(binary_kind op, const float* x, const float* y, float* z, std::size_t n, bool y_scalar,
                simd::requires_arch<simd::xsimd_common>) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    if (y_scalar) {
        const batch b(y[0]);
        switch (op) {
            case binary_kind::add: map1<A>(x, z, n, [&](batch v) { return v + b; }); break;
            case binary_kind::sub: map1<A>(x, z, n, [&](batch v) { return v - b; }); break;
            case binary_kind::mul: map1<A>(x, z, n, [&](batch v) { return v * b; }); break;
            case binary_kind::div: map1<A>(x, z, n, [&](batch v) { return v / b; }); break;
        }
        return;
    }
    switch (op) {
        case binary_kind::add: map2<A>(x, y, z, n, [](batch a, batch b) { return a + b; }); break;
        case binary_kind::sub: map2<A>(x, y, z, n, [](batch a, batch b) { return a - b; }); break;
        case binary_kind::mul: map2<A>(x, y, z, n, [](batch a, batch b) { return a * b; }); break;
        case binary_kind::div: map2<A>(x, y, z, n, [](batch a, batch b) { return a / b; }); break;
    }
}

template <class A>
void scale_f32(const float* x, float* y, std::size_t n, float s, float b, simd::requires_arch<simd::xsimd_common>) {
    using batch = xsimd::batch<float, typename A::xsimd_arch>;
    const batch vs(s), vb(b);
    map1<A>(x, y, n, [&](batch v) { return xsimd::fma(v, vs, vb); });
}

template <class A, class B>
TESSERA_ALWAYS_INLINE B sigmoid_b(B x) {
    return B(1.0f) / (B(1.0f) + xsimd::exp(-x));
}
template <class A, class B>
TESSERA_ALWAYS_INLINE B gelu_b(B x) {
    const B t = B(static_cast<float>(k_sqrt_2_over_pi)) * x * (B(1.0f) + B(static_cast<float>(k_gelu_coef)) * x * x);
    return B(0.5f) * x * (B(1.0f) + xsimd::tanh(t));
}
template <class A, class B>
TESSERA_ALWAYS_INLINE B gelu_erf_b(B x) {
    return B(0.5f) * x * (B(1.0f) + xsimd::erf(x * B(static_cast<float>(k_inv_sqrt2))));
}

template <class A>
void unary_f32(unary_kind op, const float* x, float* y, std::size_t n, float p0, float p1,
               simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    const B zero(0.0f), one(1.0f);
    switch (op) {
        case unary_kind::abs: map1<A>(x, y, n, [](B v) { return xsimd::abs(v); }); return;
        case unary_kind::sgn:
            map1<A>(x, y, n, [&](B v) { return xsimd::select(v > zero, one, xsimd::select(v < zero, -one, zero)); });
            return;
        case unary_kind::neg: map1<A>(x, y, n, [](B v) { return -v; }); return;
        case unary_kind::step: map1<A>(x, y, n, [&](B v) { return xsimd::select(v > zero, one, zero); }); return;
        case unary_kind::tanh: map1<A>(x, y, n, [](B v) { return xsimd::tanh(v); }); return;
        case unary_kind::elu: map1<A>(x, y, n, [&](B v) { return xsimd::select(v > zero, v, xsimd::expm1(v)); }); return;
        case unary_kind::relu: map1<A>(x, y, n, [&](B v) { return xsimd::max(v, zero); }); return;
        case unary_kind::sigmoid: map1<A>(x, y, n, [](B v) { return sigmoid_b<A>(v); }); return;
        case unary_kind::gelu: map1<A>(x, y, n, [](B v) { return gelu_b<A>(v); }); return;
        case unary_kind::gelu_quick:
            map1<A>(x, y, n, [](B v) { return v * sigmoid_b<A>(v * B(static_cast<float>(k_gelu_quick))); });
            return;
        case unary_kind::silu: map1<A>(x, y, n, [](B v) { return v * sigmoid_b<A>(v); }); return;
        case unary_kind::hardswish:
            map1<A>(x, y, n, [&](B v) { return v * xsimd::min(one, xsimd::max(zero, (v + B(3.0f)) / B(6.0f))); });
            return;
        case unary_kind::hardsigmoid:
            map1<A>(x, y, n, [&](B v) { return xsimd::min(one, xsimd::max(zero, (v + B(3.0f)) / B(6.0f))); });
            return;
        case unary_kind::exp: map1<A>(x, y, n, [](B v) { return xsimd::exp(v); }); return;
        case unary_kind::expm1: map1<A>(x, y, n, [](B v) { return xsimd::expm1(v); }); return;
        case unary_kind::softplus:
            map1<A>(x, y, n, [](B v) { return xsimd::select(v > B(20.0f), v, xsimd::log1p(xsimd::exp(v))); });
            return;
        case unary_kind::gelu_erf: map1<A>(x, y, n, [](B v) { return gelu_erf_b<A>(v); }); return;
        case unary_kind::floor: map1<A>(x, y, n, [](B v) { return xsimd::floor(v); }); return;
        case unary_kind::ceil: map1<A>(x, y, n, [](B v) { return xsimd::ceil(v); }); return;
        case unary_kind::round: map1<A>(x, y, n, [](B v) { return xsimd::round(v); }); return;
        case unary_kind::trunc: map1<A>(x, y, n, [](B v) { return xsimd::trunc(v); }); return;
        case unary_kind::sqr: map1<A>(x, y, n, [](B v) { return v * v; }); return;
        case unary_kind::sqrt: map1<A>(x, y, n, [](B v) { return xsimd::sqrt(v); }); return;
        case unary_kind::log: map1<A>(x, y, n, [](B v) { return xsimd::log(v); }); return;
        // sin/cos stay scalar: xsimd's argument reduction is an untagged inline function
        // with static tables, which must not be emitted from a wide unit.
        case unary_kind::sin:
        case unary_kind::cos: break;
        case unary_kind::clamp: {
            const B lo(p0), hi(p1);
            map1<A>(x, y, n, [&](B v) { return xsimd::min(xsimd::max(v, lo), hi); });
            return;
        }
        case unary_kind::leaky_relu: {
            const B s(p0);
            map1<A>(x, y, n, [&](B v) { return xsimd::select(v > zero, v, v * s); });
            return;
        }
        case unary_kind::fill: {
            const B c(p0);
            map1<A>(x, y, n, [&](B) { return c; });
            return;
        }
        case unary_kind::xielu_unused: break;
    }
    unary_f32<A>(op, x, y, n, p0, p1, simd::scalar{});
}

template <class A>
void glu_f32(glu_kind op, const float* a, const float* g, float* y, std::size_t n, float alpha, float limit,
             simd::requires_arch<simd::xsimd_common>) {
    using B = xsimd::batch<float, typename A::xsimd_arch>;
    switch (op) {
        case glu_kind::reglu: map2<A>(a, g, y, n, [](B u, B v) { return xsimd::max(u, B(0.0f)) * v; }); return;
        case glu_kind::geglu: map2<A>(a, g, y, n, [](B u, B v) { return gelu_b<A>(u) * v; }); return;
        case glu_kind::swiglu: map2<A>(a, g, y, n, [](B u, B v) { return u * sigmoid_b<A>(u) * v; }); return;
        case glu_kind::geglu_erf: map2<A>(a, g, y, n, [](B u, B v) { return gelu_erf_b<A>(u) * v; }); return;
        case glu_kind::geglu_quick:
            map2<A>(a, g, y, n, [](B u, B v) { return u * sigmoid_b<A>(u * B(static_cast<float>(k_gelu_quick))) * v; });
            return;
        case glu_kind::swiglu_oai: {
            const B lim(limit), al(alpha);
            map2<A>(a, g, y, n, [&](B u, B v) {
                const B xv = xsimd::min(u, lim);
                const B yv = xsimd::min(xsimd::max(v, -lim), lim);
                return xv * sigmoid_b<A>(al * xv) * (yv + B(1.0f));
            });
            return;
        }
    }
}

}  // namespace detail

// z = x op y (y_scalar: y[0] for every element)
template <class A>
struct binary_f32 {
    void operator()(binary_kind op, const float* x, const float* y, float* z, std::size_t n, bool y_scalar) const;
};
template <class A>
void binary_f32<A>::operator()(binary_kind op, const float* x, const float* y, float* z, std::size_t n, bool y_scalar) const {
    detail::binary_f32<A>(op, x, y, z, n, y_scalar, A{});
}
TESSERA_KERNEL(binary_f32);

// y = f(x) for one of unary_kind (p0, p1: clamp bounds, leaky slope, fill value)
template <class A>
struct unary_f32 {
    void operator()(unary_kind op, const float* x, float* y, std::size_t n, float p0, float p1) const;
};
template <class A>
void unary_f32<A>::operator()(unary_kind op, const float* x, float* y, std::size_t n, float p0, float p1) const {
    detail::unary_f32<A>(op, x, y, n, p0, p1, A{});
}
TESSERA_KERNEL(unary_f32);

// y = x*s + b
template <class A>
struct scale_f32 {
    void operator()(const float* x, float* y, std::size_t n, float s, float b) const;
};
template <class A>
void scale_f32<A>::operator()(const float* x, float* y, std::size_t n, float s, float b) const {
    detail::scale_f32<A>(x, y, n, s, b, A{});
}
TESSERA_KERNEL(scale_f32);

// y = act(a) * g
template <class A>
struct glu_f32 {
    void operator()(glu_kind op, const float* a, const float* g, float* y, std::size_t n, float alpha, float limit) const;
};
template <class A>
void glu_f32<A>::operator()(glu_kind op, const float* a, const float* g, float* y, std::size_t n, float alpha,
                            float limit) const {
    detail::glu_f32<A>(op, a, g, y, n, alpha, limit, A{});
}
TESSERA_KERNEL(glu_f32);

}  // namespace kernels
TESSERA_END_NAMESPACE
