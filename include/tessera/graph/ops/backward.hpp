// The gradient (backward) ops of ggml's automatic differentiation, with ggml's operand
// order (the incoming gradient first):
//
//   silu_back(dy, x)                   dy * s(x) * (1 + x (1 - s(x))), s the sigmoid
//   rms_norm_back(dy, x, eps)          the gradient of rms_norm(x, eps) w.r.t. x
//   soft_max_ext_back(dy, y, s, mb)    s * y * (dy - dot(y, dy)) per row, y = soft_max output
//                                      (max_bias must be 0 on the CPU, as in ggml)
//   get_rows_back(dy, idx, like)       f32 of like's shape [E, R]: row idx[i] += dy row i
//   cross_entropy_loss_back(g, x, l)   (softmax(x) - l) * g / rows, g the f32 [1] gradient
//   im2col_back(dy, kernel, ne, p)     f32 [ne]: each input element sums the im2col columns
//                                      it was copied to (the adjoint of im2col)
//   pool_2d_back(dy, x, pool_params)   f32 of x's shape: avg spreads dy / (k0 k1) over each
//                                      window's taps inside x; max adds dy to the first
//                                      maximum of the window
//   rope_ext_back                      (graph/ops/attention.hpp)
//
// The typed forms take float tensors; the any_tensor forms check the same at run time.
#pragma once

#include "tessera/graph/ops/common.hpp"
#include "tessera/graph/ops/conv.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline void check_same_shape(std::string_view op, const node* a, const char* wa, const node* b, const char* wb) {
    if (a->lay.ne != b->lay.ne)
        op_fail(op, errc::shape_mismatch, std::string(wa) + " " + desc(a) + " and " + wb + " " + desc(b) + " must have one shape");
}

// silu_back, rms_norm_back, soft_max_back: dy and x (or y) of one shape -> dy's type.
inline node* grad_pair(op_kind op, node* dy, node* x, op_params p, bool inplace) {
    const auto name = op_name(op);
    check_float(name, dy, "dy");
    check_float(name, x, op == op_kind::soft_max_back ? "y" : "x");
    check_same_context(name, dy, x);
    check_same_shape(name, dy, "dy", x, op == op_kind::soft_max_back ? "y" : "x");
    if (inplace) return make_inplace(dy, op, std::move(p), {dy, x});
    return make(*dy->ctx, dy->lay.type, dy->lay.ne, op, std::move(p), {dy, x});
}

inline node* get_rows_back(node* dy, node* idx, node* like) {
    const char* name = "get_rows_back";
    check_float(name, dy, "dy");
    check_type(name, idx, type_id::i32, "indices");
    check_not_null(name, like, "like");
    check_same_context(name, dy, idx);
    if (dy->lay.ne[2] != 1 || dy->lay.ne[3] != 1) op_fail(name, errc::shape_mismatch, "dy " + desc(dy) + " must be a matrix [E, n]");
    if (idx->lay.ne[0] != dy->lay.ne[1] || idx->lay.ne[1] != 1 || idx->lay.ne[2] != 1 || idx->lay.ne[3] != 1)
        op_fail(name, errc::shape_mismatch, "indices " + desc(idx) + " must be a vector of dy's " + std::to_string(dy->lay.ne[1]) + " rows");
    if (like->lay.ne[0] != dy->lay.ne[0] || like->lay.ne[2] != 1 || like->lay.ne[3] != 1)
        op_fail(name, errc::shape_mismatch, "like " + desc(like) + " must be a matrix [E, R] with dy's row length");
    return make(*dy->ctx, type_id::f32, {like->lay.ne[0], like->lay.ne[1], 1, 1}, op_kind::get_rows_back, {}, {dy, idx});
}

inline node* cross_entropy_loss_back(node* grad, node* logits, node* labels) {
    const char* name = "cross_entropy_loss_back";
    check_type(name, grad, type_id::f32, "grad");
    check_type(name, logits, type_id::f32, "logits");
    check_type(name, labels, type_id::f32, "labels");
    check_same_context(name, grad, logits);
    check_same_context(name, logits, labels);
    if (grad->lay.nelements() != 1) op_fail(name, errc::shape_mismatch, "grad " + desc(grad) + " must hold one element (the loss's gradient)");
    check_same_shape(name, logits, "logits", labels, "labels");
    return make(*logits->ctx, type_id::f32, logits->lay.ne, op_kind::cross_entropy_loss_back, {}, {grad, logits, labels});
}

inline node* im2col_back(node* dy, node* kernel, std::array<std::int64_t, max_dims> ne, const conv_params& p) {
    const char* name = "im2col_back";
    check_type(name, dy, type_id::f32, "dy");
    check_not_null(name, kernel, "kernel");
    check_same_context(name, dy, kernel);
    check_conv_params(name, p);
    for (auto e : ne)
        if (e < 1) op_fail(name, errc::invalid_argument, "input extents must be >= 1");
    // dy must have the shape im2col gives for this input and kernel
    std::array<std::int64_t, max_dims> want;
    const auto& k = kernel->lay.ne;
    if (p.is_2d) {
        if (k[2] != ne[2]) op_fail(name, errc::shape_mismatch, "kernel " + desc(kernel) + " and the input differ in channels (dim 2)");
        want = {ne[2] * k[1] * k[0], conv_out(name, ne[0], k[0], p.s[0], p.p[0], p.d[0], "dim 0"),
                conv_out(name, ne[1], k[1], p.s[1], p.p[1], p.d[1], "dim 1"), ne[3]};
    } else {
        if (k[1] != ne[1]) op_fail(name, errc::shape_mismatch, "kernel " + desc(kernel) + " and the input differ in channels (dim 1)");
        if (ne[3] != 1) op_fail(name, errc::shape_mismatch, "a 1-D input must be [L, IC, N]");
        want = {ne[1] * k[0], conv_out(name, ne[0], k[0], p.s[0], p.p[0], p.d[0], "dim 0"), ne[2], 1};
    }
    if (dy->lay.ne != want)
        op_fail(name, errc::shape_mismatch, "dy " + desc(dy) + " is not the im2col shape " + layout::contiguous(type_id::f32, want).to_string() +
                                                " of this input and kernel");
    return make(*dy->ctx, type_id::f32, ne, op_kind::im2col_back, p, {dy, kernel});
}

inline node* pool_2d_back(node* dy, node* x, const pool_params& p) {
    const char* name = "pool_2d_back";
    check_float(name, dy, "dy");
    check_float(name, x, "x");
    check_same_context(name, dy, x);
    const std::int64_t ow = pool_out(name, x->lay.ne[0], p.k[0], p.s[0], p.p[0], "dim 0");
    const std::int64_t oh = pool_out(name, x->lay.ne[1], p.k[1], p.s[1], p.p[1], "dim 1");
    if (dy->lay.ne[0] != ow || dy->lay.ne[1] != oh || dy->lay.ne[2] != x->lay.ne[2] || dy->lay.ne[3] != x->lay.ne[3])
        op_fail(name, errc::shape_mismatch, "dy " + desc(dy) + " is not the pool_2d shape [" + std::to_string(ow) + ", " + std::to_string(oh) +
                                                ", ...] of x " + desc(x));
    return make(*x->ctx, type_id::f32, x->lay.ne, op_kind::pool_2d_back, p, {dy, x});
}

}  // namespace detail

// ---- silu_back, rms_norm_back, soft_max_back ---------------------------------------------------
template <float_element T, int R, float_element U>
tensor<T, R> silu_back(tensor<T, R> dy, tensor<U, R> x) {
    return tensor<T, R>(detail::grad_pair(op_kind::silu_back, dy.get(), x.get(), {}, false));
}
inline any_tensor silu_back(any_tensor dy, any_tensor x) {
    return any_tensor(detail::grad_pair(op_kind::silu_back, dy.get(), x.get(), {}, false));
}

template <float_element T, int R, float_element U>
tensor<T, R> rms_norm_back(tensor<T, R> dy, tensor<U, R> x, float eps) {
    return tensor<T, R>(detail::grad_pair(op_kind::rms_norm_back, dy.get(), x.get(), norm_params{eps}, false));
}
inline any_tensor rms_norm_back(any_tensor dy, any_tensor x, float eps) {
    return any_tensor(detail::grad_pair(op_kind::rms_norm_back, dy.get(), x.get(), norm_params{eps}, false));
}

// y is the soft_max_ext output; ggml's CPU computes only max_bias = 0 (other values build
// but are refused by the executor, as in ggml).
template <float_element T, int R, float_element U>
tensor<T, R> soft_max_ext_back(tensor<T, R> dy, tensor<U, R> y, float scale, float max_bias = 0.0f) {
    return tensor<T, R>(detail::grad_pair(op_kind::soft_max_back, dy.get(), y.get(), soft_max_params{scale, max_bias}, false));
}
template <float_element T, int R, float_element U>
tensor<T, R> soft_max_ext_back_inplace(tensor<T, R> dy, tensor<U, R> y, float scale, float max_bias = 0.0f) {
    return tensor<T, R>(detail::grad_pair(op_kind::soft_max_back, dy.get(), y.get(), soft_max_params{scale, max_bias}, true));
}
inline any_tensor soft_max_ext_back(any_tensor dy, any_tensor y, float scale, float max_bias = 0.0f) {
    return any_tensor(detail::grad_pair(op_kind::soft_max_back, dy.get(), y.get(), soft_max_params{scale, max_bias}, false));
}
inline any_tensor soft_max_ext_back_inplace(any_tensor dy, any_tensor y, float scale, float max_bias = 0.0f) {
    return any_tensor(detail::grad_pair(op_kind::soft_max_back, dy.get(), y.get(), soft_max_params{scale, max_bias}, true));
}

#define TESSERA_GRAD_PAIR_ONLY_(NAME, ...)                                                                             \
    template <typed_tensor A, typed_tensor B>                                                                          \
        requires(!float_tensor<A> || !float_tensor<B> || std::remove_cvref_t<A>::rank != std::remove_cvref_t<B>::rank) \
    void NAME(A, B __VA_OPT__(, ) __VA_ARGS__) {                                                                       \
        static_assert(detail::dependent_false<A, B>,                                                                   \
                      "tessera::graph::" #NAME ": both operands must be tensors of f32, f16 or bf16 of one rank");     \
    }
TESSERA_GRAD_PAIR_ONLY_(silu_back)
TESSERA_GRAD_PAIR_ONLY_(rms_norm_back, float)
TESSERA_GRAD_PAIR_ONLY_(soft_max_ext_back, float, float = 0.0f)
#undef TESSERA_GRAD_PAIR_ONLY_

// ---- get_rows_back ----------------------------------------------------------------------------
// The gradient of get_rows: f32 [E, R] (like's shape; like is read for its shape only),
// row idx[i] accumulating row i of dy [E, n].
template <float_element T, int Ri, tensor_element U, int Rl>
    requires(Ri == 1 && Rl <= 2)
tensor<float, 2> get_rows_back(tensor<T, 2> dy, tensor<std::int32_t, Ri> idx, tensor<U, Rl> like) {
    return tensor<float, 2>(detail::get_rows_back(dy.get(), idx.get(), like.get()));
}
inline any_tensor get_rows_back(any_tensor dy, any_tensor idx, any_tensor like) {
    return any_tensor(detail::get_rows_back(dy.get(), idx.get(), like.get()));
}

// ---- cross_entropy_loss_back --------------------------------------------------------------------
// The gradient of cross_entropy_loss w.r.t. the logits, for labels that sum to 1 per row.
template <int R>
tensor<float, R> cross_entropy_loss_back(tensor<float, 1> grad, tensor<float, R> logits, tensor<float, R> labels) {
    return tensor<float, R>(detail::cross_entropy_loss_back(grad.get(), logits.get(), labels.get()));
}
inline any_tensor cross_entropy_loss_back(any_tensor grad, any_tensor logits, any_tensor labels) {
    return any_tensor(detail::cross_entropy_loss_back(grad.get(), logits.get(), labels.get()));
}

// ---- im2col_back, pool_2d_back ------------------------------------------------------------------
// dy: the im2col result's gradient; kernel: read for its shape; ne: the input's extents.
template <int R, tensor_element Tk, int Rk>
tensor<float, 4> im2col_back(tensor<float, R> dy, tensor<Tk, Rk> kernel, std::array<std::int64_t, max_dims> ne, const conv_params& p) {
    return tensor<float, 4>(detail::im2col_back(dy.get(), kernel.get(), ne, p));
}
inline any_tensor im2col_back(any_tensor dy, any_tensor kernel, std::array<std::int64_t, max_dims> ne, const conv_params& p) {
    return any_tensor(detail::im2col_back(dy.get(), kernel.get(), ne, p));
}

// dy: pool_2d(x, p)'s gradient; the same pooling parameters p -> f32 of x's shape.
template <float_element T, int R, float_element U>
    requires(R >= 2)
tensor<float, R> pool_2d_back(tensor<T, R> dy, tensor<U, R> x, const pool_params& p) {
    return tensor<float, R>(detail::pool_2d_back(dy.get(), x.get(), p));
}
inline any_tensor pool_2d_back(any_tensor dy, any_tensor x, const pool_params& p) {
    return any_tensor(detail::pool_2d_back(dy.get(), x.get(), p));
}

}  // namespace graph
TESSERA_END_NAMESPACE
