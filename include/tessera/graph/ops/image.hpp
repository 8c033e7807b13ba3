// Padding, shifting and resampling ops, and the SAM window / relative-position ops:
// pad / pad_ext (zeros or circular, per side per dim), pad_reflect_1d, roll, arange,
// timestep_embedding, upscale / interpolate (nearest, bilinear, bicubic, align-corners),
// win_part / win_unpart, get_rel_pos, add_rel_pos. Semantics are ggml's.
#pragma once

#include <cmath>
#include <cstdlib>

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline std::string ints4(const std::array<int, 4>& v) {
    return "[" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "," + std::to_string(v[3]) + "]";
}

inline node* pad(node* a, const pad_params& p) {
    check_float("pad", a, "a");
    auto ne = a->lay.ne;
    for (std::size_t d = 0; d < 4; ++d) {
        if (p.left[d] < 0 || p.right[d] < 0)
            op_fail("pad", errc::invalid_argument, "padding left " + ints4(p.left) + " right " + ints4(p.right) + " must be >= 0");
        if (p.circular && (p.left[d] > ne[d] || p.right[d] > ne[d]))
            op_fail("pad", errc::invalid_argument, "circular padding " + ints4(p.left) + "/" + ints4(p.right) +
                                                       " wider than a " + desc(a) + " in dim " + std::to_string(d));
        ne[d] += p.left[d] + p.right[d];
    }
    return make(*a->ctx, a->lay.type, ne, op_kind::pad, p, {a});
}

inline node* pad_reflect_1d(node* a, int p0, int p1) {
    check_float("pad_reflect_1d", a, "a");
    if (p0 < 0 || p1 < 0) op_fail("pad_reflect_1d", errc::invalid_argument, "padding must be >= 0");
    if (p0 >= a->lay.ne[0] || p1 >= a->lay.ne[0])
        op_fail("pad_reflect_1d", errc::invalid_argument, "padding " + std::to_string(p0) + ", " + std::to_string(p1) +
                                                              " must be smaller than dim 0 of a " + desc(a));
    pad_params p;
    p.left[0] = p0;
    p.right[0] = p1;
    auto ne = a->lay.ne;
    ne[0] += p0 + p1;
    return make(*a->ctx, a->lay.type, ne, op_kind::pad_reflect_1d, p, {a});
}

inline node* roll(node* a, const std::array<int, 4>& shift) {
    check_float("roll", a, "a");
    for (std::size_t d = 0; d < 4; ++d)
        if (std::abs(static_cast<std::int64_t>(shift[d])) >= std::max<std::int64_t>(a->lay.ne[d], 1) && shift[d] != 0)
            op_fail("roll", errc::invalid_argument, "shift " + ints4(shift) + " must be smaller than a " + desc(a) + " in each dim");
    return make(*a->ctx, a->lay.type, a->lay.ne, op_kind::roll, roll_params{shift}, {a});
}

inline node* arange(context& ctx, float start, float stop, float step) {
    if (!(stop > start) || !(step > 0.0f))
        op_fail("arange", errc::invalid_argument, "needs stop > start and step > 0 (got " + std::to_string(start) + ", " +
                                                      std::to_string(stop) + ", " + std::to_string(step) + ")");
    const auto n = static_cast<std::int64_t>(std::ceil((stop - start) / step));
    return make(ctx, type_id::f32, {n, 1, 1, 1}, op_kind::arange, arange_params{start, stop, step}, {});
}

inline node* timestep_embedding(node* t, int dim, int max_period) {
    check_type("timestep_embedding", t, type_id::f32, "timesteps");
    if (t->lay.ne[1] != 1 || t->lay.ne[2] != 1 || t->lay.ne[3] != 1)
        op_fail("timestep_embedding", errc::shape_mismatch, "timesteps " + desc(t) + " must be a vector");
    if (dim <= 0 || max_period <= 0) op_fail("timestep_embedding", errc::invalid_argument, "dim and max_period must be > 0");
    return make(*t->ctx, type_id::f32, {dim, t->lay.ne[0], 1, 1}, op_kind::timestep_embedding, timestep_params{dim, max_period}, {t});
}

inline node* interpolate(node* a, std::array<std::int64_t, max_dims> ne, const upscale_params& p) {
    check_float("upscale", a, "a");
    for (std::size_t d = 0; d < 4; ++d)
        if (ne[d] <= 0) op_fail("upscale", errc::invalid_argument, "target extents must be > 0");
    if (p.antialias && p.mode != scale_mode::bilinear)
        op_fail("upscale", errc::invalid_argument, "antialias applies to bilinear mode only");
    return make(*a->ctx, a->lay.type, ne, op_kind::upscale, p, {a});
}

inline node* win_part(node* a, int w) {
    check_type("win_part", a, type_id::f32, "a");
    if (w <= 0) op_fail("win_part", errc::invalid_argument, "window size must be > 0");
    if (a->lay.ne[3] != 1) op_fail("win_part", errc::shape_mismatch, "a " + desc(a) + " must be [C, W, H] (ne3 == 1)");
    const std::int64_t px = (w - a->lay.ne[1] % w) % w, py = (w - a->lay.ne[2] % w) % w;
    const std::int64_t npx = (a->lay.ne[1] + px) / w, npy = (a->lay.ne[2] + py) / w;
    return make(*a->ctx, type_id::f32, {a->lay.ne[0], w, w, npx * npy}, op_kind::win_part, win_params{w}, {a});
}

inline node* win_unpart(node* a, int w0, int h0, int w) {
    check_type("win_unpart", a, type_id::f32, "a");
    if (w <= 0 || w0 <= 0 || h0 <= 0) op_fail("win_unpart", errc::invalid_argument, "sizes must be > 0");
    const std::int64_t px = (w - w0 % w) % w, py = (w - h0 % w) % w;
    const std::int64_t np = (w0 + px) / w * ((h0 + py) / w);
    if (a->lay.ne[1] != w || a->lay.ne[2] != w || a->lay.ne[3] != np)
        op_fail("win_unpart", errc::shape_mismatch, "a " + desc(a) + " must be [C, " + std::to_string(w) + ", " + std::to_string(w) +
                                                        ", " + std::to_string(np) + "] windows of a " + std::to_string(w0) + "x" +
                                                        std::to_string(h0) + " image");
    return make(*a->ctx, type_id::f32, {a->lay.ne[0], w0, h0, 1}, op_kind::win_unpart, win_params{w}, {a});
}

inline node* get_rel_pos(node* a, int qh, int kh) {
    check_float("get_rel_pos", a, "a");
    if (qh <= 0 || kh <= 0) op_fail("get_rel_pos", errc::invalid_argument, "qh and kh must be > 0");
    if (a->lay.ne[1] < static_cast<std::int64_t>(qh) + kh - 1 || a->lay.ne[2] != 1 || a->lay.ne[3] != 1)
        op_fail("get_rel_pos", errc::shape_mismatch, "a " + desc(a) + " must be [C, >= qh+kh-1] with qh = " + std::to_string(qh) +
                                                         ", kh = " + std::to_string(kh));
    return make(*a->ctx, a->lay.type, {a->lay.ne[0], kh, qh, 1}, op_kind::get_rel_pos, {}, {a});
}

inline node* add_rel_pos(node* a, node* pw, node* ph, bool inplace) {
    check_type("add_rel_pos", a, type_id::f32, "a");
    check_type("add_rel_pos", pw, type_id::f32, "pw");
    check_type("add_rel_pos", ph, type_id::f32, "ph");
    if (pw->lay.ne != ph->lay.ne)
        op_fail("add_rel_pos", errc::shape_mismatch, "pw " + desc(pw) + " and ph " + desc(ph) + " differ in shape");
    const auto& w = pw->lay.ne;
    if (w[0] * w[0] != a->lay.ne[0] || w[1] * w[2] != a->lay.ne[1] || w[3] != a->lay.ne[2] || a->lay.ne[3] != 1)
        op_fail("add_rel_pos", errc::shape_mismatch, "a " + desc(a) + " must be [K*K, qw*qh, B] for pw " + desc(pw) + " [K, qw, qh, B]");
    if (inplace) return make_inplace(a, op_kind::add_rel_pos, {}, {a, pw, ph});
    return make(*a->ctx, type_id::f32, a->lay.ne, op_kind::add_rel_pos, {}, {a, pw, ph});
}

}  // namespace detail

// ---- pad ---------------------------------------------------------------------------------
// Zeros appended after the end of each dim (ggml_pad).
template <float_element T, int R>
tensor<T, R> pad(tensor<T, R> a, int p0, int p1 = 0, int p2 = 0, int p3 = 0) {
    pad_params p;
    p.right = {p0, p1, p2, p3};
    for (int d = R; d < 4; ++d)
        if (p.right[static_cast<std::size_t>(d)] != 0) fail(errc::invalid_argument, "pad: padding a dim outside rank " + std::to_string(R));
    return tensor<T, R>(detail::pad(a.get(), p));
}
// Left and right padding per dim, zeros or circular (ggml_pad_ext, ggml_pad_ext_circular).
template <float_element T, int R>
tensor<T, R> pad_ext(tensor<T, R> a, const pad_params& p) {
    for (int d = R; d < 4; ++d)
        if (p.left[static_cast<std::size_t>(d)] != 0 || p.right[static_cast<std::size_t>(d)] != 0)
            fail(errc::invalid_argument, "pad_ext: padding a dim outside rank " + std::to_string(R));
    return tensor<T, R>(detail::pad(a.get(), p));
}
template <typed_tensor A>
    requires(!float_tensor<A>)
void pad(A, int, int = 0, int = 0, int = 0) {
    static_assert(detail::dependent_false<A>, "tessera::graph::pad: the operand must be a tensor of f32, f16 or bf16");
}
inline any_tensor pad(any_tensor a, int p0, int p1 = 0, int p2 = 0, int p3 = 0) {
    pad_params p;
    p.right = {p0, p1, p2, p3};
    return any_tensor(detail::pad(a.get(), p));
}
inline any_tensor pad_ext(any_tensor a, const pad_params& p) { return any_tensor(detail::pad(a.get(), p)); }

// Mirror padding of dim 0 (the edge is not repeated): p0, p1 < ne0.
template <float_element T, int R>
tensor<T, R> pad_reflect_1d(tensor<T, R> a, int p0, int p1) {
    return tensor<T, R>(detail::pad_reflect_1d(a.get(), p0, p1));
}
inline any_tensor pad_reflect_1d(any_tensor a, int p0, int p1) { return any_tensor(detail::pad_reflect_1d(a.get(), p0, p1)); }

// Circular shift per dim: out[i] = a[(i - shift) mod ne].
template <float_element T, int R>
tensor<T, R> roll(tensor<T, R> a, int s0, int s1 = 0, int s2 = 0, int s3 = 0) {
    return tensor<T, R>(detail::roll(a.get(), {s0, s1, s2, s3}));
}
inline any_tensor roll(any_tensor a, int s0, int s1 = 0, int s2 = 0, int s3 = 0) {
    return any_tensor(detail::roll(a.get(), {s0, s1, s2, s3}));
}

// f32 [ceil((stop - start)/step)] = start + i*step.
inline tensor<float, 1> arange(context& ctx, float start, float stop, float step = 1.0f) {
    return tensor<float, 1>(detail::arange(ctx, start, stop, step));
}

// timesteps f32 [N] -> f32 [dim, N]: cos(t*f_j) then sin(t*f_j), f_j = max_period^(-j/half).
inline tensor<float, 2> timestep_embedding(tensor<float, 1> t, int dim, int max_period = 10000) {
    return tensor<float, 2>(detail::timestep_embedding(t.get(), dim, max_period));
}
inline any_tensor timestep_embedding(any_tensor t, int dim, int max_period = 10000) {
    return any_tensor(detail::timestep_embedding(t.get(), dim, max_period));
}

// ---- upscale / interpolate ---------------------------------------------------------------
// a resampled to extents ne (ggml_interpolate): nearest in every dim, or bilinear /
// bicubic in dims 0 and 1 (nearest in 2 and 3), pixel centers at +0.5 unless align_corners.
template <float_element T, int R>
tensor<T, R> interpolate(tensor<T, R> a, std::array<std::int64_t, max_dims> ne, upscale_params p = {}) {
    return tensor<T, R>(detail::interpolate(a.get(), ne, p));
}
inline any_tensor interpolate(any_tensor a, std::array<std::int64_t, max_dims> ne, upscale_params p = {}) {
    return any_tensor(detail::interpolate(a.get(), ne, p));
}
// Dims 0 and 1 multiplied by factor (ggml_upscale).
template <float_element T, int R>
tensor<T, R> upscale(tensor<T, R> a, int factor, upscale_params p = {}) {
    if (factor < 1) fail(errc::invalid_argument, "upscale: factor must be >= 1");
    return tensor<T, R>(detail::interpolate(a.get(), {a.ne(0) * factor, a.ne(1) * factor, a.ne(2), a.ne(3)}, p));
}
inline any_tensor upscale(any_tensor a, int factor, upscale_params p = {}) {
    if (factor < 1) fail(errc::invalid_argument, "upscale: factor must be >= 1");
    return any_tensor(detail::interpolate(a.get(), {a.ne(0) * factor, a.ne(1) * factor, a.ne(2), a.ne(3)}, p));
}

// ---- SAM windows and relative positions ----------------------------------------------------
// f32 [C, W, H] -> [C, w, w, n_windows], zero-padded to whole windows.
inline tensor<float, 4> win_part(tensor<float, 3> a, int w) { return tensor<float, 4>(detail::win_part(a.get(), w)); }
inline any_tensor win_part(any_tensor a, int w) { return any_tensor(detail::win_part(a.get(), w)); }
// The inverse: [C, w, w, n_windows] -> [C, w0, h0].
inline tensor<float, 3> win_unpart(tensor<float, 4> a, int w0, int h0, int w) {
    return tensor<float, 3>(detail::win_unpart(a.get(), w0, h0, w));
}
inline any_tensor win_unpart(any_tensor a, int w0, int h0, int w) { return any_tensor(detail::win_unpart(a.get(), w0, h0, w)); }

// a [C, >= qh+kh-1] -> [C, kh, qh] with out[:, k, q] = a[:, kh-1 + q - k] (SAM: qh == kh,
// a.ne1 = 2*qh - 1).
template <float_element T, int R>
    requires(R <= 2)
tensor<T, 3> get_rel_pos(tensor<T, R> a, int qh, int kh) {
    return tensor<T, 3>(detail::get_rel_pos(a.get(), qh, kh));
}
inline any_tensor get_rel_pos(any_tensor a, int qh, int kh) { return any_tensor(detail::get_rel_pos(a.get(), qh, kh)); }

// Scores a f32 [K*K, qw*qh, B] plus ph[:, r] along the slow and pw[:, r] along the fast
// half of each row: out[u*K + v, r] = a[u*K + v, r] + ph[u, r] + pw[v, r]. add_rel_pos_inplace
// writes over a.
template <int R>
tensor<float, R> add_rel_pos(tensor<float, R> a, tensor<float, 4> pw, tensor<float, 4> ph) {
    return tensor<float, R>(detail::add_rel_pos(a.get(), pw.get(), ph.get(), false));
}
template <int R>
tensor<float, R> add_rel_pos_inplace(tensor<float, R> a, tensor<float, 4> pw, tensor<float, 4> ph) {
    return tensor<float, R>(detail::add_rel_pos(a.get(), pw.get(), ph.get(), true));
}
inline any_tensor add_rel_pos(any_tensor a, any_tensor pw, any_tensor ph) {
    return any_tensor(detail::add_rel_pos(a.get(), pw.get(), ph.get(), false));
}
inline any_tensor add_rel_pos_inplace(any_tensor a, any_tensor pw, any_tensor ph) {
    return any_tensor(detail::add_rel_pos(a.get(), pw.get(), ph.get(), true));
}

}  // namespace graph
TESSERA_END_NAMESPACE
