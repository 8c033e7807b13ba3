// Convolution and pooling, with ggml's shapes (dim 0 fastest): im2col (1-D and 2-D,
// f32/f16 output), conv_1d and conv_2d (composites of im2col and mul_mat, as ggml
// builds them), conv_2d_direct (ggml's CONV_2D op), conv_2d_dw (depthwise composite)
// and conv_2d_dw_direct (CONV_2D_DW), conv_transpose_1d, conv_transpose_2d_p0,
// col2im_1d (the scatter-add of GEMM columns back to a signal), im2col_3d, conv_3d
// (im2col_3d + mul_mat) and conv_3d_direct (CONV_3D), pool_1d, pool_2d.
//
// Output extent of a convolution along a dim: (in + 2p - d(k-1) - 1)/s + 1; of a
// pooling: (in + 2p - k)/s + 1.
#pragma once

#include "tessera/graph/ops/common.hpp"
#include "tessera/graph/ops/matmul.hpp"
#include "tessera/graph/ops/shape.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline void check_conv_params(std::string_view op, const conv_params& p) {
    for (std::size_t i = 0; i < 2; ++i) {
        if (p.s[i] <= 0) op_fail(op, errc::invalid_argument, "stride must be > 0");
        if (p.d[i] <= 0) op_fail(op, errc::invalid_argument, "dilation must be > 0");
        if (p.p[i] < 0) op_fail(op, errc::invalid_argument, "padding must be >= 0");
    }
}

// Output extent of a convolution along one dim; fails when the kernel does not fit.
inline std::int64_t conv_out(std::string_view op, std::int64_t in, std::int64_t k, int s, int p, int d, const char* dim) {
    const std::int64_t span = in + 2 * static_cast<std::int64_t>(p) - static_cast<std::int64_t>(d) * (k - 1) - 1;
    if (k <= 0 || span < 0)
        op_fail(op, errc::shape_mismatch, std::string("kernel of ") + std::to_string(k) + " (dilation " + std::to_string(d) +
                                              ") does not fit input " + std::to_string(in) + " + 2*" + std::to_string(p) +
                                              " padding along " + dim);
    return span / s + 1;
}

// kernel a: 2-D [KW, KH, IC, OC] / 1-D [K, IC, OC] (only its shape is read);
// input b: 2-D [W, H, IC, N] / 1-D [L, IC, N].
// -> 2-D [IC*KH*KW, OW, OH, N] / 1-D [IC*K, OL, N], element (ic*KH + ky)*KW + kx.
inline node* im2col(node* a, node* b, const conv_params& p, type_id dst) {
    check_not_null("im2col", a, "kernel");
    check_float("im2col", b, "input");
    check_same_context("im2col", a, b);
    check_conv_params("im2col", p);
    if (dst != type_id::f32 && dst != type_id::f16)
        op_fail("im2col", errc::unsupported, "output type " + std::string(type_name(dst)) + " (f32 or f16)");
    const auto& ka = a->lay.ne;
    const auto& nb = b->lay.ne;
    if (p.is_2d) {
        if (ka[2] != nb[2])
            op_fail("im2col", errc::shape_mismatch, "kernel " + desc(a) + " and input " + desc(b) + " differ in channels (dim 2)");
        const std::int64_t ow = conv_out("im2col", nb[0], ka[0], p.s[0], p.p[0], p.d[0], "dim 0");
        const std::int64_t oh = conv_out("im2col", nb[1], ka[1], p.s[1], p.p[1], p.d[1], "dim 1");
        return make(*b->ctx, dst, {nb[2] * ka[1] * ka[0], ow, oh, nb[3]}, op_kind::im2col, p, {a, b});
    }
    if (ka[1] != nb[1])
        op_fail("im2col", errc::shape_mismatch, "kernel " + desc(a) + " and input " + desc(b) + " differ in channels (dim 1)");
    if (nb[3] != 1) op_fail("im2col", errc::shape_mismatch, "1-D input " + desc(b) + " must be [L, IC, N]");
    const std::int64_t ol = conv_out("im2col", nb[0], ka[0], p.s[0], p.p[0], p.d[0], "dim 0");
    return make(*b->ctx, dst, {nb[1] * ka[0], ol, nb[2], 1}, op_kind::im2col, p, {a, b});
}

inline type_id im2col_type_for(const node* kernel) { return kernel->lay.type == type_id::f16 ? type_id::f16 : type_id::f32; }

inline node* conv_1d(node* a, node* b, int s0, int p0, int d0) {
    check_float("conv_1d", a, "kernel");
    check_float("conv_1d", b, "input");
    conv_params p{{s0, 1}, {p0, 0}, {d0, 1}, false};
    node* im = im2col(a, b, p, im2col_type_for(a));  // [IC*K, OL, N]
    const auto ie = im->lay.ne;
    const std::int64_t oc = a->lay.ne[2];
    node* r = mul_mat(reshape(im, {ie[0], ie[1] * ie[2], 1, 1}), reshape(a, {a->lay.ne[0] * a->lay.ne[1], oc, 1, 1}), precision::default_);
    // r [OL*N, OC]: ggml reshapes it to [OL, OC, N] (right for N == 1); with a batch the
    // columns are reordered so every batch entry gets its own [OL, OC]
    if (ie[2] == 1) return reshape(r, {ie[1], oc, 1, 1});
    return dup(permute(reshape(r, {ie[1], ie[2], oc, 1}), {0, 2, 1, 3}), type_id::f32, op_kind::cont);
}

inline node* conv_2d(node* a, node* b, const conv_params& p) {
    check_float("conv_2d", a, "kernel");
    check_float("conv_2d", b, "input");
    node* im = im2col(a, b, p, im2col_type_for(a));  // [IC*KH*KW, OW, OH, N]
    const auto ie = im->lay.ne;
    const auto& ka = a->lay.ne;
    node* r = mul_mat(reshape(im, {ie[0], ie[1] * ie[2] * ie[3], 1, 1}), reshape(a, {ka[0] * ka[1] * ka[2], ka[3], 1, 1}), precision::default_);
    r = reshape(r, {ie[1], ie[2], ie[3], ka[3]});  // [OW, OH, N, OC]
    return dup(permute(r, {0, 1, 3, 2}), type_id::f32, op_kind::cont);
}

inline node* conv_2d_direct(node* a, node* b, const conv_params& p) {
    check_float("conv_2d", a, "kernel");
    check_float("conv_2d", b, "input");
    check_same_context("conv_2d", a, b);
    check_conv_params("conv_2d", p);
    const auto& ka = a->lay.ne;
    const auto& nb = b->lay.ne;
    if (ka[2] != nb[2])
        op_fail("conv_2d", errc::shape_mismatch, "kernel " + desc(a) + " and input " + desc(b) + " differ in channels (dim 2)");
    const std::int64_t ow = conv_out("conv_2d", nb[0], ka[0], p.s[0], p.p[0], p.d[0], "dim 0");
    const std::int64_t oh = conv_out("conv_2d", nb[1], ka[1], p.s[1], p.p[1], p.d[1], "dim 1");
    conv_params q = p;
    q.is_2d = true;
    return make(*b->ctx, b->lay.type, {ow, oh, ka[3], nb[3]}, op_kind::conv_2d, q, {a, b});
}

inline void check_dw_shapes(std::string_view op, const node* a, const node* b) {
    if (a->lay.ne[2] != 1 || a->lay.ne[3] != b->lay.ne[2])
        op_fail(op, errc::shape_mismatch, "kernel " + desc(a) + " must be [KW, KH, 1, C] for input " + desc(b) + " [W, H, C, N]");
}

inline node* conv_2d_dw(node* a, node* b, const conv_params& p) {
    check_float("conv_2d_dw", a, "kernel");
    check_float("conv_2d_dw", b, "input");
    check_dw_shapes("conv_2d_dw", a, b);
    const auto ka = a->lay.ne;
    const auto nb = b->lay.ne;
    node* im = im2col(a, reshape(b, {nb[0], nb[1], 1, nb[2] * nb[3]}), p, im2col_type_for(a));  // [KH*KW, OW, OH, C*N]
    const auto ie = im->lay.ne;
    node* x = reshape(im, {ie[0], ie[1] * ie[2], nb[2], nb[3]});
    node* r = mul_mat(reshape(a, {ka[0] * ka[1], 1, ka[3], 1}), x, precision::default_);  // [1, OW*OH, C, N]
    return reshape(r, {ie[1], ie[2], nb[2], nb[3]});
}

inline node* conv_2d_dw_direct(node* a, node* b, const conv_params& p) {
    check_float("conv_2d_dw", a, "kernel");
    check_float("conv_2d_dw", b, "input");
    check_same_context("conv_2d_dw", a, b);
    check_conv_params("conv_2d_dw", p);
    check_dw_shapes("conv_2d_dw", a, b);
    const auto& ka = a->lay.ne;
    const auto& nb = b->lay.ne;
    const std::int64_t ow = conv_out("conv_2d_dw", nb[0], ka[0], p.s[0], p.p[0], p.d[0], "dim 0");
    const std::int64_t oh = conv_out("conv_2d_dw", nb[1], ka[1], p.s[1], p.p[1], p.d[1], "dim 1");
    conv_params q = p;
    q.is_2d = true;
    const auto& sb = b->lay.nb;
    const bool cwhn = sb[0] > sb[2] && sb[1] > sb[0] && sb[2] == static_cast<std::size_t>(type_size(b->lay.type));
    if (cwhn) {  // channels fastest in memory, as in the input (ggml keeps that layout)
        const layout l = layout::contiguous(b->lay.type, {nb[2], ow, oh, nb[3]}).permute({2, 0, 1, 3});
        return b->ctx->new_op(l, op_kind::conv_2d_dw, q, {a, b});
    }
    return make(*b->ctx, b->lay.type, {ow, oh, nb[2], nb[3]}, op_kind::conv_2d_dw, q, {a, b});
}

inline node* conv_transpose_1d(node* a, node* b, int s0, int p0, int d0) {
    check_float("conv_transpose_1d", a, "kernel");
    check_float("conv_transpose_1d", b, "input");
    check_same_context("conv_transpose_1d", a, b);
    if (s0 <= 0) op_fail("conv_transpose_1d", errc::invalid_argument, "stride must be > 0");
    if (p0 != 0 || d0 != 1)
        op_fail("conv_transpose_1d", errc::unsupported, "padding != 0 or dilation != 1 (ggml supports only p0 = 0, d0 = 1)");
    if (b->lay.ne[2] != 1 || b->lay.ne[3] != 1)
        op_fail("conv_transpose_1d", errc::shape_mismatch, "input " + desc(b) + " must be a matrix [L, IC]");
    if (a->lay.ne[2] != b->lay.ne[1] || a->lay.ne[3] != 1)
        op_fail("conv_transpose_1d", errc::shape_mismatch, "kernel " + desc(a) + " must be [K, OC, IC] for input " + desc(b));
    const std::int64_t out = (b->lay.ne[0] - 1) * s0 + a->lay.ne[0];
    return make(*b->ctx, type_id::f32, {out, a->lay.ne[1], 1, 1}, op_kind::conv_transpose_1d, conv_params{{s0, 1}, {0, 0}, {1, 1}, false},
                {a, b});
}

inline node* conv_transpose_2d(node* a, node* b, int stride) {
    check_float("conv_transpose_2d", a, "kernel");
    check_float("conv_transpose_2d", b, "input");
    check_same_context("conv_transpose_2d", a, b);
    if (stride <= 0) op_fail("conv_transpose_2d", errc::invalid_argument, "stride must be > 0");
    if (a->lay.ne[3] != b->lay.ne[2])
        op_fail("conv_transpose_2d", errc::shape_mismatch, "kernel " + desc(a) + " must be [KW, KH, OC, IC] for input " + desc(b) + " [W, H, IC, N]");
    const std::int64_t ow = (b->lay.ne[0] - 1) * stride + a->lay.ne[0], oh = (b->lay.ne[1] - 1) * stride + a->lay.ne[1];
    return make(*b->ctx, type_id::f32, {ow, oh, a->lay.ne[2], b->lay.ne[3]}, op_kind::conv_transpose_2d,
                conv_params{{stride, stride}, {0, 0}, {1, 1}, true}, {a, b});
}

// a [K*OC, T_in] (column index oc*K + k) -> a's type [T_out, OC], T_out = (T_in - 1) s0 + K - 2 p0:
// out[t, oc] = sum over (t_in, k) with t_in s0 + k = t + p0 of a[oc*K + k, t_in].
inline node* col2im_1d(node* a, int s0, std::int64_t oc, int p0) {
    const char* name = "col2im_1d";
    check_float(name, a, "a");
    if (!a->lay.is_contiguous()) op_fail(name, errc::shape_mismatch, "a " + desc(a) + " must be contiguous");
    if (s0 <= 0 || p0 < 0) op_fail(name, errc::invalid_argument, "stride must be > 0 and padding >= 0");
    if (oc <= 0 || a->lay.ne[0] % oc != 0)
        op_fail(name, errc::shape_mismatch, "a " + desc(a) + ": dim 0 must be K * OC with OC = " + std::to_string(oc));
    if (a->lay.ne[2] != 1 || a->lay.ne[3] != 1) op_fail(name, errc::shape_mismatch, "a " + desc(a) + " must be a matrix [K*OC, T_in]");
    const std::int64_t K = a->lay.ne[0] / oc, t_out = (a->lay.ne[1] - 1) * s0 + K - 2 * static_cast<std::int64_t>(p0);
    if (t_out <= 0)
        op_fail(name, errc::shape_mismatch, "padding " + std::to_string(p0) + " leaves no output for a " + desc(a) + " (K " + std::to_string(K) + ")");
    return make(*a->ctx, a->lay.type, {t_out, oc, 1, 1}, op_kind::col2im_1d, conv_params{{s0, 1}, {p0, 0}, {1, 1}, false}, {a});
}

inline void check_conv3d_params(std::string_view op, const conv3d_params& p) {
    for (std::size_t i = 0; i < 3; ++i) {
        if (p.s[i] <= 0) op_fail(op, errc::invalid_argument, "stride must be > 0");
        if (p.d[i] <= 0) op_fail(op, errc::invalid_argument, "dilation must be > 0");
        if (p.p[i] < 0) op_fail(op, errc::invalid_argument, "padding must be >= 0");
    }
    if (p.ic <= 0) op_fail(op, errc::invalid_argument, "the channel count IC must be > 0");
}

// kernel a [KW, KH, KD, IC*OC] (shape only), input b [W, H, D, IC*N] (dim 3 = n*IC + ic)
// -> [IC*KD*KH*KW, OW, OH, OD*N] (dim 3 = n*OD + od; element ((ic*KD + kd)*KH + kh)*KW + kw).
inline node* im2col_3d(node* a, node* b, const conv3d_params& p, type_id dst) {
    const char* name = "im2col_3d";
    check_not_null(name, a, "kernel");
    check_float(name, b, "input");
    check_same_context(name, a, b);
    check_conv3d_params(name, p);
    if (dst != type_id::f32 && dst != type_id::f16)
        op_fail(name, errc::unsupported, "output type " + std::string(type_name(dst)) + " (f32 or f16)");
    const auto& k = a->lay.ne;
    const auto& in = b->lay.ne;
    if (in[3] % p.ic != 0)
        op_fail(name, errc::shape_mismatch, "input " + desc(b) + ": dim 3 must be IC * N with IC = " + std::to_string(p.ic));
    const std::int64_t ow = conv_out(name, in[0], k[0], p.s[0], p.p[0], p.d[0], "dim 0");
    const std::int64_t oh = conv_out(name, in[1], k[1], p.s[1], p.p[1], p.d[1], "dim 1");
    const std::int64_t od = conv_out(name, in[2], k[2], p.s[2], p.p[2], p.d[2], "dim 2");
    return make(*b->ctx, dst, {p.ic * k[2] * k[1] * k[0], ow, oh, od * (in[3] / p.ic)}, op_kind::im2col_3d, p, {a, b});
}

// kernel a [KW, KH, KD, IC*OC] (dim 3 = oc*IC + ic), input b [W, H, D, IC*N] -> f32 [OW, OH, OD, OC*N]
// (dim 3 = n*OC + oc).
inline node* conv_3d_direct(node* a, node* b, const conv3d_params& p) {
    const char* name = "conv_3d";
    check_float(name, a, "kernel");
    check_float(name, b, "input");
    check_same_context(name, a, b);
    check_conv3d_params(name, p);
    const auto& k = a->lay.ne;
    const auto& in = b->lay.ne;
    if (k[3] % p.ic != 0 || in[3] % p.ic != 0)
        op_fail(name, errc::shape_mismatch, "kernel " + desc(a) + " and input " + desc(b) + ": dim 3 must be IC * OC and IC * N with IC = " +
                                                std::to_string(p.ic));
    const std::int64_t ow = conv_out(name, in[0], k[0], p.s[0], p.p[0], p.d[0], "dim 0");
    const std::int64_t oh = conv_out(name, in[1], k[1], p.s[1], p.p[1], p.d[1], "dim 1");
    const std::int64_t od = conv_out(name, in[2], k[2], p.s[2], p.p[2], p.d[2], "dim 2");
    return make(*b->ctx, type_id::f32, {ow, oh, od, (k[3] / p.ic) * (in[3] / p.ic)}, op_kind::conv_3d, p, {a, b});
}

// The same convolution as im2col_3d + mul_mat (ggml_conv_3d): f32 [OW, OH, OD, OC*N].
inline node* conv_3d(node* a, node* b, const conv3d_params& p) {
    check_float("conv_3d", a, "kernel");
    node* im = im2col_3d(a, b, p, im2col_type_for(a));  // [IC*KD*KH*KW, OW, OH, OD*N]
    const auto ie = im->lay.ne;
    const std::int64_t oc = a->lay.ne[3] / p.ic, n = b->lay.ne[3] / p.ic, od = ie[3] / n;
    if (!a->lay.is_contiguous()) a = dup(a, a->lay.type, op_kind::cont);
    node* r = mul_mat(reshape(im, {ie[0], ie[1] * ie[2] * ie[3], 1, 1}), reshape(a, {ie[0], oc, 1, 1}), precision::default_);  // [OW*OH*OD*N, OC]
    r = reshape(r, {ie[1] * ie[2] * od, n, oc, 1});             // [OW*OH*OD, N, OC]
    r = dup(permute(r, {0, 2, 1, 3}), type_id::f32, op_kind::cont);  // [OW*OH*OD, OC, N]
    return reshape(r, {ie[1], ie[2], od, oc * n});              // dim 3 = n*OC + oc
}

inline std::int64_t pool_out(std::string_view op, std::int64_t in, int k, int s, int p, const char* dim) {
    if (k <= 0 || s <= 0 || p < 0) op_fail(op, errc::invalid_argument, "kernel and stride must be > 0, padding >= 0");
    const std::int64_t span = in + 2 * static_cast<std::int64_t>(p) - k;
    if (span < 0)
        op_fail(op, errc::shape_mismatch, "window " + std::to_string(k) + " does not fit input " + std::to_string(in) +
                                              " + 2*" + std::to_string(p) + " padding along " + dim);
    return span / s + 1;
}

inline node* pool_1d(node* a, pool_op op, int k0, int s0, int p0) {
    check_float("pool_1d", a, "a");
    const std::int64_t o = pool_out("pool_1d", a->lay.ne[0], k0, s0, p0, "dim 0");
    pool_params p{op, {k0, 1}, {s0, 1}, {p0, 0}};
    return make(*a->ctx, type_id::f32, {o, a->lay.ne[1], a->lay.ne[2], a->lay.ne[3]}, op_kind::pool_1d, p, {a});
}

inline node* pool_2d(node* a, pool_op op, int k0, int k1, int s0, int s1, int p0, int p1) {
    check_float("pool_2d", a, "a");
    const std::int64_t o0 = pool_out("pool_2d", a->lay.ne[0], k0, s0, p0, "dim 0");
    const std::int64_t o1 = pool_out("pool_2d", a->lay.ne[1], k1, s1, p1, "dim 1");
    pool_params p{op, {k0, k1}, {s0, s1}, {p0, p1}};
    return make(*a->ctx, type_id::f32, {o0, o1, a->lay.ne[2], a->lay.ne[3]}, op_kind::pool_2d, p, {a});
}

}  // namespace detail

// ---- im2col -------------------------------------------------------------------------------
// Patches of input b for kernel shape a (see detail::im2col), as f32 or f16 (U).
template <float_element U = float, typed_tensor K, float_element T, int R>
tensor<U, 4> im2col(K kernel, tensor<T, R> b, const conv_params& p) {
    return tensor<U, 4>(detail::im2col(kernel.get(), b.get(), p, element_traits<U>::id));
}
inline any_tensor im2col(any_tensor kernel, any_tensor b, const conv_params& p, type_id dst = type_id::f32) {
    return any_tensor(detail::im2col(kernel.get(), b.get(), p, dst));
}

// ---- convolutions -------------------------------------------------------------------------
// kernel [K, IC, OC], input [L, IC, N] -> f32 [OL, OC, N].
template <float_element Tk, float_element T, int R>
    requires(R >= 2 && R <= 3)
tensor<float, 3> conv_1d(tensor<Tk, 3> kernel, tensor<T, R> b, int s0 = 1, int p0 = 0, int d0 = 1) {
    return tensor<float, 3>(detail::conv_1d(kernel.get(), b.get(), s0, p0, d0));
}
inline any_tensor conv_1d(any_tensor kernel, any_tensor b, int s0 = 1, int p0 = 0, int d0 = 1) {
    return any_tensor(detail::conv_1d(kernel.get(), b.get(), s0, p0, d0));
}

// kernel [KW, KH, IC, OC], input [W, H, IC, N] -> f32 [OW, OH, OC, N] (im2col + mul_mat).
template <float_element Tk, int Rk, float_element T, int R>
    requires(Rk >= 3 && R >= 3)
tensor<float, 4> conv_2d(tensor<Tk, Rk> kernel, tensor<T, R> b, const conv_params& p = {}) {
    return tensor<float, 4>(detail::conv_2d(kernel.get(), b.get(), p));
}
inline any_tensor conv_2d(any_tensor kernel, any_tensor b, const conv_params& p = {}) {
    return any_tensor(detail::conv_2d(kernel.get(), b.get(), p));
}
// The same convolution computed directly (ggml's CONV_2D op); result of b's type.
template <float_element Tk, int Rk, float_element T, int R>
    requires(Rk >= 3 && R >= 3)
tensor<T, 4> conv_2d_direct(tensor<Tk, Rk> kernel, tensor<T, R> b, const conv_params& p = {}) {
    return tensor<T, 4>(detail::conv_2d_direct(kernel.get(), b.get(), p));
}
inline any_tensor conv_2d_direct(any_tensor kernel, any_tensor b, const conv_params& p = {}) {
    return any_tensor(detail::conv_2d_direct(kernel.get(), b.get(), p));
}
template <typed_tensor A, typed_tensor B>
    requires(!float_tensor<A> || !float_tensor<B>)
void conv_2d(A, B, const conv_params& = {}) {
    static_assert(detail::dependent_false<A, B>, "tessera::graph::conv_2d: kernel and input must be tensors of f32, f16 or bf16");
}

// Depthwise: kernel [KW, KH, 1, C], input [W, H, C, N] -> [OW, OH, C, N].
// conv_2d_dw composes im2col and mul_mat (f32 result); conv_2d_dw_direct is ggml's
// CONV_2D_DW op (b's type; a channel-contiguous input keeps that layout in the result).
template <float_element Tk, float_element T, int R>
    requires(R >= 3)
tensor<float, 4> conv_2d_dw(tensor<Tk, 4> kernel, tensor<T, R> b, const conv_params& p = {}) {
    return tensor<float, 4>(detail::conv_2d_dw(kernel.get(), b.get(), p));
}
inline any_tensor conv_2d_dw(any_tensor kernel, any_tensor b, const conv_params& p = {}) {
    return any_tensor(detail::conv_2d_dw(kernel.get(), b.get(), p));
}
template <float_element Tk, float_element T, int R>
    requires(R >= 3)
tensor<T, 4> conv_2d_dw_direct(tensor<Tk, 4> kernel, tensor<T, R> b, const conv_params& p = {}) {
    return tensor<T, 4>(detail::conv_2d_dw_direct(kernel.get(), b.get(), p));
}
inline any_tensor conv_2d_dw_direct(any_tensor kernel, any_tensor b, const conv_params& p = {}) {
    return any_tensor(detail::conv_2d_dw_direct(kernel.get(), b.get(), p));
}

// kernel [K, OC, IC], input [L, IC] -> f32 [(L-1)*s0 + K, OC]; ggml supports p0 = 0, d0 = 1 only.
template <float_element Tk, float_element T, int R>
    requires(R <= 2)
tensor<float, 2> conv_transpose_1d(tensor<Tk, 3> kernel, tensor<T, R> b, int s0, int p0 = 0, int d0 = 1) {
    return tensor<float, 2>(detail::conv_transpose_1d(kernel.get(), b.get(), s0, p0, d0));
}
inline any_tensor conv_transpose_1d(any_tensor kernel, any_tensor b, int s0, int p0 = 0, int d0 = 1) {
    return any_tensor(detail::conv_transpose_1d(kernel.get(), b.get(), s0, p0, d0));
}

// kernel [KW, KH, OC, IC], input [W, H, IC, N] -> f32 [(W-1)*s + KW, (H-1)*s + KH, OC, N]
// (ggml_conv_transpose_2d_p0: no padding).
template <float_element Tk, float_element T, int R>
    requires(R >= 3)
tensor<float, 4> conv_transpose_2d_p0(tensor<Tk, 4> kernel, tensor<T, R> b, int stride) {
    return tensor<float, 4>(detail::conv_transpose_2d(kernel.get(), b.get(), stride));
}
inline any_tensor conv_transpose_2d_p0(any_tensor kernel, any_tensor b, int stride) {
    return any_tensor(detail::conv_transpose_2d(kernel.get(), b.get(), stride));
}

// ---- col2im_1d, im2col_3d, conv_3d ------------------------------------------------------------
// GEMM columns a [K*OC, T_in] scatter-added to [T_out, OC] (conv_transpose_1d as mul_mat +
// col2im_1d); a's type.
template <float_element T, int R>
    requires(R <= 2)
tensor<T, 2> col2im_1d(tensor<T, R> a, int s0, std::int64_t oc, int p0 = 0) {
    return tensor<T, 2>(detail::col2im_1d(a.get(), s0, oc, p0));
}
inline any_tensor col2im_1d(any_tensor a, int s0, std::int64_t oc, int p0 = 0) { return any_tensor(detail::col2im_1d(a.get(), s0, oc, p0)); }

// dst f32 or f16 (the kernel is read for its shape only).
template <tensor_element Tk, int Rk, float_element T, int R>
tensor<float, 4> im2col_3d(tensor<Tk, Rk> kernel, tensor<T, R> b, const conv3d_params& p) {
    return tensor<float, 4>(detail::im2col_3d(kernel.get(), b.get(), p, type_id::f32));
}
inline any_tensor im2col_3d(any_tensor kernel, any_tensor b, const conv3d_params& p, type_id dst = type_id::f32) {
    return any_tensor(detail::im2col_3d(kernel.get(), b.get(), p, dst));
}
template <float_element Tk, int Rk, float_element T, int R>
tensor<float, 4> conv_3d(tensor<Tk, Rk> kernel, tensor<T, R> b, const conv3d_params& p) {
    return tensor<float, 4>(detail::conv_3d(kernel.get(), b.get(), p));
}
inline any_tensor conv_3d(any_tensor kernel, any_tensor b, const conv3d_params& p) { return any_tensor(detail::conv_3d(kernel.get(), b.get(), p)); }
template <float_element Tk, int Rk, float_element T, int R>
tensor<float, 4> conv_3d_direct(tensor<Tk, Rk> kernel, tensor<T, R> b, const conv3d_params& p) {
    return tensor<float, 4>(detail::conv_3d_direct(kernel.get(), b.get(), p));
}
inline any_tensor conv_3d_direct(any_tensor kernel, any_tensor b, const conv3d_params& p) {
    return any_tensor(detail::conv_3d_direct(kernel.get(), b.get(), p));
}
template <typed_tensor A, typed_tensor B>
    requires(!float_tensor<A> || !float_tensor<B>)
void conv_3d(A, B, const conv3d_params&) {
    static_assert(detail::dependent_false<A, B>, "tessera::graph::conv_3d: kernel and input must be tensors of f32, f16 or bf16");
}

// ---- pooling ------------------------------------------------------------------------------
// The window is a pool_params: op, kernel k, stride s and padding p per dim, e.g.
// pool_2d(a, {.op = pool_op::max, .k = {3, 3}, .s = {2, 2}, .p = {1, 1}}).
// pool_1d: along dim 0 (k[0], s[0], p[0]; the dim-1 entries are not read): max, or avg
// over the window's taps inside the row -> f32.
template <float_element T, int R>
tensor<float, R> pool_1d(tensor<T, R> a, const pool_params& p) {
    return tensor<float, R>(detail::pool_1d(a.get(), p.op, p.k[0], p.s[0], p.p[0]));
}
inline any_tensor pool_1d(any_tensor a, const pool_params& p) {
    return any_tensor(detail::pool_1d(a.get(), p.op, p.k[0], p.s[0], p.p[0]));
}
// pool_2d: over dims 0 and 1: max, or the window sum divided by k[0]*k[1] (padding
// counts) -> f32.
template <float_element T, int R>
    requires(R >= 2)
tensor<float, R> pool_2d(tensor<T, R> a, const pool_params& p) {
    return tensor<float, R>(detail::pool_2d(a.get(), p.op, p.k[0], p.k[1], p.s[0], p.s[1], p.p[0], p.p[1]));
}
inline any_tensor pool_2d(any_tensor a, const pool_params& p) {
    return any_tensor(detail::pool_2d(a.get(), p.op, p.k[0], p.k[1], p.s[0], p.s[1], p.p[0], p.p[1]));
}

}  // namespace graph
TESSERA_END_NAMESPACE
