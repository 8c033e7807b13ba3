// Element-wise op builders: add, sub, mul, div (b broadcast over a), the unary ops
// (xielu with its four parameters), sqr/sqrt/log/sin/cos, scale, clamp, leaky_relu, fill,
// and the gated linear units.
//
// Typed forms take tensor<T, R> of float elements (f32, f16, bf16) and give a's type
// and rank; a block-typed or integer operand, or a b of higher rank than a, does not
// compile. The any_tensor forms check the same at run time and throw tessera::error.
// *_inplace forms write over a and return a view of it.
#pragma once

#include <cmath>

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline node* binary(op_kind op, node* a, node* b, bool inplace) {
    const auto name = op_name(op);
    check_float(name, a, "a");
    check_float(name, b, "b");
    check_same_context(name, a, b);
    if (!a->lay.can_repeat(b->lay))
        op_fail(name, errc::shape_mismatch, "b " + desc(b) + " cannot be broadcast over a " + desc(a) +
                                                " (every extent of a must be a multiple of b's)");
    if (inplace) return make_inplace(a, op, {}, {a, b});
    return make(*a->ctx, a->lay.type, a->lay.ne, op, {}, {a, b});
}

inline node* unary(op_kind op, op_params p, node* a, bool inplace) {
    const std::string name = op == op_kind::unary ? std::string(unary_name(p.get<unary_params>().op))
                                                  : std::string(op_name(op));
    check_float(name, a, "a");
    if (inplace) return make_inplace(a, op, std::move(p), {a});
    return make(*a->ctx, a->lay.type, a->lay.ne, op, std::move(p), {a});
}

// unary(a, u): every sub-op but xielu, which has parameters (xielu(a, alpha_n, alpha_p, beta, eps)).
inline unary_params plain_unary(unary_op u) {
    if (u == unary_op::xielu)
        op_fail("xielu", errc::invalid_argument, "xielu has parameters: build it with xielu(a, alpha_n, alpha_p, beta, eps)");
    return unary_params{u};
}

inline node* glu(glu_op g, node* a, node* b, bool swapped, float alpha, float limit) {
    const auto name = glu_name(g);
    check_float(name, a, "a");
    check_rows_contiguous(name, a, "a");
    auto ne = a->lay.ne;
    if (b) {
        check_float(name, b, "b");
        check_rows_contiguous(name, b, "b");
        if (b->lay.ne != a->lay.ne)
            op_fail(name, errc::shape_mismatch, "split form needs a " + desc(a) + " and b " + desc(b) + " of one shape");
        if (b->lay.type != a->lay.type) op_fail(name, errc::unsupported, "split form needs a and b of one type");
    } else {
        if (ne[0] % 2 != 0)
            op_fail(name, errc::shape_mismatch, "a " + desc(a) + " needs an even row length (two halves)");
        ne[0] /= 2;
    }
    glu_params p{g, swapped, alpha, limit};
    return b ? make(*a->ctx, a->lay.type, ne, op_kind::glu, p, {a, b})
             : make(*a->ctx, a->lay.type, ne, op_kind::glu, p, {a});
}

}  // namespace detail

// ---- binary -------------------------------------------------------------------------------
// `binary_operands<A, B>`: both float tensors and b's rank at most a's.
template <class A, class B>
concept binary_operands = float_tensor<A> && float_tensor<B> && (std::remove_cvref_t<B>::rank <= std::remove_cvref_t<A>::rank);

#define TESSERA_BINARY_OP_(NAME)                                                                              \
    template <float_element Ta, int Ra, float_element Tb, int Rb>                                              \
        requires(Rb <= Ra)                                                                                     \
    tensor<Ta, Ra> NAME(tensor<Ta, Ra> a, tensor<Tb, Rb> b) {                                                  \
        return tensor<Ta, Ra>(detail::binary(op_kind::NAME, a.get(), b.get(), false));                        \
    }                                                                                                          \
    template <float_element Ta, int Ra, float_element Tb, int Rb>                                              \
        requires(Rb <= Ra)                                                                                     \
    tensor<Ta, Ra> NAME##_inplace(tensor<Ta, Ra> a, tensor<Tb, Rb> b) {                                        \
        return tensor<Ta, Ra>(detail::binary(op_kind::NAME, a.get(), b.get(), true));                         \
    }                                                                                                          \
    template <typed_tensor A, typed_tensor B>                                                                  \
        requires(!binary_operands<A, B>)                                                                       \
    void NAME(A, B) {                                                                                          \
        static_assert(detail::dependent_false<A, B>, "tessera::graph::" #NAME                                  \
                      ": both operands must be tensors of f32, f16 or bf16, and b (broadcast over a) "         \
                      "must not have a higher rank than a");                                                   \
    }                                                                                                          \
    inline any_tensor NAME(any_tensor a, any_tensor b) {                                                       \
        return any_tensor(detail::binary(op_kind::NAME, a.get(), b.get(), false));                             \
    }                                                                                                          \
    inline any_tensor NAME##_inplace(any_tensor a, any_tensor b) {                                             \
        return any_tensor(detail::binary(op_kind::NAME, a.get(), b.get(), true));                              \
    }
TESSERA_BINARY_OP_(add)
TESSERA_BINARY_OP_(sub)
TESSERA_BINARY_OP_(mul)
TESSERA_BINARY_OP_(div)
#undef TESSERA_BINARY_OP_

// ---- unary --------------------------------------------------------------------------------
template <float_element T, int R>
tensor<T, R> unary(tensor<T, R> a, unary_op u) {
    return tensor<T, R>(detail::unary(op_kind::unary, detail::plain_unary(u), a.get(), false));
}
template <float_element T, int R>
tensor<T, R> unary_inplace(tensor<T, R> a, unary_op u) {
    return tensor<T, R>(detail::unary(op_kind::unary, detail::plain_unary(u), a.get(), true));
}
inline any_tensor unary(any_tensor a, unary_op u) {
    return any_tensor(detail::unary(op_kind::unary, detail::plain_unary(u), a.get(), false));
}

#define TESSERA_UNARY_FN_(NAME, OP, PARAMS)                                                               \
    template <float_element T, int R>                                                                     \
    tensor<T, R> NAME(tensor<T, R> a) {                                                                   \
        return tensor<T, R>(detail::unary(OP, PARAMS, a.get(), false));                                   \
    }                                                                                                     \
    template <float_element T, int R>                                                                     \
    tensor<T, R> NAME##_inplace(tensor<T, R> a) {                                                         \
        return tensor<T, R>(detail::unary(OP, PARAMS, a.get(), true));                                    \
    }                                                                                                     \
    template <typed_tensor A>                                                                             \
        requires(!float_tensor<A>)                                                                        \
    void NAME(A) {                                                                                        \
        static_assert(detail::dependent_false<A>, "tessera::graph::" #NAME                                \
                      ": the operand must be a tensor of f32, f16 or bf16 (dequantize or cast first)");   \
    }                                                                                                     \
    inline any_tensor NAME(any_tensor a) { return any_tensor(detail::unary(OP, PARAMS, a.get(), false)); } \
    inline any_tensor NAME##_inplace(any_tensor a) { return any_tensor(detail::unary(OP, PARAMS, a.get(), true)); }

#define TESSERA_UNARY_SUB_(N) TESSERA_UNARY_FN_(N, op_kind::unary, unary_params{unary_op::N})
TESSERA_UNARY_SUB_(abs)
TESSERA_UNARY_SUB_(sgn)
TESSERA_UNARY_SUB_(neg)
TESSERA_UNARY_SUB_(step)
TESSERA_UNARY_SUB_(tanh)
TESSERA_UNARY_SUB_(elu)
TESSERA_UNARY_SUB_(relu)
TESSERA_UNARY_SUB_(sigmoid)
TESSERA_UNARY_SUB_(gelu)
TESSERA_UNARY_SUB_(gelu_quick)
TESSERA_UNARY_SUB_(silu)
TESSERA_UNARY_SUB_(hardswish)
TESSERA_UNARY_SUB_(hardsigmoid)
TESSERA_UNARY_SUB_(exp)
TESSERA_UNARY_SUB_(expm1)
TESSERA_UNARY_SUB_(softplus)
TESSERA_UNARY_SUB_(gelu_erf)
TESSERA_UNARY_SUB_(floor)
TESSERA_UNARY_SUB_(ceil)
TESSERA_UNARY_SUB_(round)
TESSERA_UNARY_SUB_(trunc)
#undef TESSERA_UNARY_SUB_
TESSERA_UNARY_FN_(sqr, op_kind::sqr, std::monostate{})
TESSERA_UNARY_FN_(sqrt, op_kind::sqrt, std::monostate{})
TESSERA_UNARY_FN_(log, op_kind::log, std::monostate{})
TESSERA_UNARY_FN_(sin, op_kind::sin, std::monostate{})
TESSERA_UNARY_FN_(cos, op_kind::cos, std::monostate{})
#undef TESSERA_UNARY_FN_

// xielu (ggml_xielu): x > 0: softplus(alpha_p) x^2 + beta x; else
// (beta + softplus(alpha_n)) (expm1(min(x, eps)) - x) + beta x. The node keeps the derived
// factors, as ggml does (unary_params). No in-place form (ggml has none).
namespace detail {
inline float softplus_f32(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }
inline unary_params xielu_params(float alpha_n, float alpha_p, float beta, float eps) {
    return {unary_op::xielu, beta + softplus_f32(alpha_n), softplus_f32(alpha_p), beta, eps};
}
}  // namespace detail
template <float_element T, int R>
tensor<T, R> xielu(tensor<T, R> a, float alpha_n, float alpha_p, float beta, float eps) {
    return tensor<T, R>(detail::unary(op_kind::unary, detail::xielu_params(alpha_n, alpha_p, beta, eps), a.get(), false));
}
template <typed_tensor A>
    requires(!float_tensor<A>)
void xielu(A, float, float, float, float) {
    static_assert(detail::dependent_false<A>, "tessera::graph::xielu: the operand must be a tensor of f32, f16 or bf16");
}
inline any_tensor xielu(any_tensor a, float alpha_n, float alpha_p, float beta, float eps) {
    return any_tensor(detail::unary(op_kind::unary, detail::xielu_params(alpha_n, alpha_p, beta, eps), a.get(), false));
}

// x*s + b
template <float_element T, int R>
tensor<T, R> scale(tensor<T, R> a, float s, float b = 0.0f) {
    return tensor<T, R>(detail::unary(op_kind::scale, scale_params{s, b}, a.get(), false));
}
template <float_element T, int R>
tensor<T, R> scale_inplace(tensor<T, R> a, float s, float b = 0.0f) {
    return tensor<T, R>(detail::unary(op_kind::scale, scale_params{s, b}, a.get(), true));
}
inline any_tensor scale(any_tensor a, float s, float b = 0.0f) {
    return any_tensor(detail::unary(op_kind::scale, scale_params{s, b}, a.get(), false));
}

// min(max(x, lo), hi)
template <float_element T, int R>
tensor<T, R> clamp(tensor<T, R> a, float lo, float hi) {
    return tensor<T, R>(detail::unary(op_kind::clamp, clamp_params{lo, hi}, a.get(), false));
}
inline any_tensor clamp(any_tensor a, float lo, float hi) {
    return any_tensor(detail::unary(op_kind::clamp, clamp_params{lo, hi}, a.get(), false));
}

// x > 0 ? x : slope*x
template <float_element T, int R>
tensor<T, R> leaky_relu(tensor<T, R> a, float slope) {
    return tensor<T, R>(detail::unary(op_kind::leaky_relu, leaky_relu_params{slope}, a.get(), false));
}
template <float_element T, int R>
tensor<T, R> leaky_relu_inplace(tensor<T, R> a, float slope) {
    return tensor<T, R>(detail::unary(op_kind::leaky_relu, leaky_relu_params{slope}, a.get(), true));
}
inline any_tensor leaky_relu(any_tensor a, float slope) {
    return any_tensor(detail::unary(op_kind::leaky_relu, leaky_relu_params{slope}, a.get(), false));
}
inline any_tensor leaky_relu_inplace(any_tensor a, float slope) {
    return any_tensor(detail::unary(op_kind::leaky_relu, leaky_relu_params{slope}, a.get(), true));
}

// every element = v
template <float_element T, int R>
tensor<T, R> fill(tensor<T, R> a, float v) {
    return tensor<T, R>(detail::unary(op_kind::fill, fill_params{v}, a.get(), false));
}
template <float_element T, int R>
tensor<T, R> fill_inplace(tensor<T, R> a, float v) {
    return tensor<T, R>(detail::unary(op_kind::fill, fill_params{v}, a.get(), true));
}
inline any_tensor fill(any_tensor a, float v) { return any_tensor(detail::unary(op_kind::fill, fill_params{v}, a.get(), false)); }
inline any_tensor fill_inplace(any_tensor a, float v) {
    return any_tensor(detail::unary(op_kind::fill, fill_params{v}, a.get(), true));
}

// ---- gated linear units ---------------------------------------------------------------------
// Single-tensor form: a row of 2n gives n: act(first half) * second half, or with
// glu_order::swapped act(second half) * first half (ggml's swapped). Split form: act(a) * b.
enum class glu_order : std::uint8_t { normal, swapped };
template <float_element T, int R>
tensor<T, R> glu(tensor<T, R> a, glu_op g, glu_order order = glu_order::normal) {
    return tensor<T, R>(detail::glu(g, a.get(), nullptr, order == glu_order::swapped, 1.702f, 7.0f));
}
template <float_element T, int R>
tensor<T, R> glu_split(tensor<T, R> a, tensor<T, R> b, glu_op g) {
    return tensor<T, R>(detail::glu(g, a.get(), b.get(), false, 1.702f, 7.0f));
}
inline any_tensor glu(any_tensor a, glu_op g, glu_order order = glu_order::normal) {
    return any_tensor(detail::glu(g, a.get(), nullptr, order == glu_order::swapped, 1.702f, 7.0f));
}
inline any_tensor glu_split(any_tensor a, any_tensor b, glu_op g) {
    return any_tensor(detail::glu(g, a.get(), b.get(), false, 1.702f, 7.0f));
}
#define TESSERA_GLU_FN_(N)                                                                          \
    template <float_element T, int R>                                                               \
    tensor<T, R> N(tensor<T, R> a) {                                                                \
        return glu(a, glu_op::N);                                                                   \
    }                                                                                               \
    template <float_element T, int R>                                                               \
    tensor<T, R> N##_split(tensor<T, R> a, tensor<T, R> b) {                                        \
        return glu_split(a, b, glu_op::N);                                                          \
    }                                                                                               \
    inline any_tensor N(any_tensor a) { return glu(a, glu_op::N); }                                 \
    inline any_tensor N##_split(any_tensor a, any_tensor b) { return glu_split(a, b, glu_op::N); }
TESSERA_GLU_FN_(reglu)
TESSERA_GLU_FN_(geglu)
TESSERA_GLU_FN_(swiglu)
TESSERA_GLU_FN_(geglu_erf)
TESSERA_GLU_FN_(geglu_quick)
#undef TESSERA_GLU_FN_
// x = min(a, limit), y = clamp(b, -limit, limit), out = x*sigmoid(alpha*x)*(y+1)
template <float_element T, int R>
tensor<T, R> swiglu_oai(tensor<T, R> a, tensor<T, R> b, float alpha, float limit) {
    return tensor<T, R>(detail::glu(glu_op::swiglu_oai, a.get(), b.get(), false, alpha, limit));
}

}  // namespace graph
TESSERA_END_NAMESPACE
