// DeepSeek's fused ops (V3.2 / V4), with ggml's shapes (dim 0 fastest):
//
//   lightning_indexer(q, k, w, mask)     the sparse-attention indexer: q f32 [D, H, n_q, S],
//                                        k [D, 1, n_kv, S] (f32, f16, bf16 or a block type
//                                        with a dequantizer), w f32 [H, n_q, 1, S] (prescaled
//                                        head weights), mask f16/f32 [n_kv, >= n_q, 1, m3]
//                                        (S % m3 == 0) -> f32 [n_kv, n_q, 1, S]:
//                                        score[j, t] = sum_h w[h, t] relu(q[:, h, t] . k[:, j]) + mask[j, t]
//   dsv4_hc_comb(mixes, scale, base, eps, n_iter)
//                                        hyper-connection mixing matrices: mixes f32
//                                        [(2 + hc) hc, T], scale f32 [>= 3], base f32
//                                        [(2 + hc) hc], hc = 4 -> f32 [hc, hc, T]. Per token,
//                                        logits[dst, src] = mixes[2hc + dst + hc src] scale[2] +
//                                        base[...]; softmax over dst for each src, + eps; then
//                                        Sinkhorn: normalize over src for each dst, and n_iter - 1
//                                        more times over dst then over src (each sum + eps).
//   dsv4_hc_pre(x, w)                    x f32 [E, hc, T], w f32 [hc, T] -> f32 [E, T] = sum_h x w
//   dsv4_hc_post(x, residual, post, comb)
//                                        x f32 [E, T], residual f32 [E, hc, T], post f32 [hc, T],
//                                        comb f32 [hc, hc, T] -> f32 [E, hc, T]:
//                                        out[:, d, t] = x post[d, t] + sum_s residual[:, s, t] comb[d, s, t]
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// The hyper-connection count dsv4_hc_comb is defined for (ggml hard-codes it).
inline constexpr std::int64_t dsv4_hc = 4;

namespace detail {

inline void check_extents(std::string_view op, const node* n, const char* which, std::array<std::int64_t, 4> want) {
    if (n->lay.ne != want)
        op_fail(op, errc::shape_mismatch,
                std::string(which) + " " + desc(n) + " must be [" + std::to_string(want[0]) + ", " + std::to_string(want[1]) + ", " +
                    std::to_string(want[2]) + ", " + std::to_string(want[3]) + "]");
}

inline node* lightning_indexer(node* q, node* k, node* w, node* mask) {
    const char* name = "lightning_indexer";
    check_type(name, q, type_id::f32, "q");
    check_not_null(name, k, "k");
    check_type(name, w, type_id::f32, "w");
    check_not_null(name, mask, "mask");
    for (const node* s : {k, w, mask}) check_same_context(name, q, s);
    if (!is_float(k->lay.type) && block_size(k->lay.type) == 1)
        op_fail(name, errc::unsupported, "k " + desc(k) + " must be f32, f16, bf16 or a block type");
    if (mask->lay.type != type_id::f16 && mask->lay.type != type_id::f32)
        op_fail(name, errc::unsupported, "mask " + desc(mask) + " must be f16 (or f32)");
    const auto& nq = q->lay.ne;
    const std::int64_t D = nq[0], H = nq[1], n_q = nq[2], S = nq[3], n_kv = k->lay.ne[2];
    if (k->lay.ne[0] != D || k->lay.ne[1] != 1 || k->lay.ne[3] != S)
        op_fail(name, errc::shape_mismatch, "k " + desc(k) + " must be [D, 1, n_kv, S] for q " + desc(q) + " [D, H, n_q, S]");
    check_extents(name, w, "w", {H, n_q, 1, S});
    if (mask->lay.ne[0] != n_kv || mask->lay.ne[1] < n_q || mask->lay.ne[2] != 1 || !divisible(S, mask->lay.ne[3]))
        op_fail(name, errc::shape_mismatch, "mask " + desc(mask) + " must be [n_kv, >= n_q, 1, divisor of S] for q " + desc(q) + " and k " + desc(k));
    for (auto [n, which] : {std::pair<const node*, const char*>{q, "q"}, {k, "k"}, {w, "w"}, {mask, "mask"}}) check_rows_contiguous(name, n, which);
    return make(*q->ctx, type_id::f32, {n_kv, n_q, 1, S}, op_kind::lightning_indexer, {}, {q, k, w, mask});
}

inline node* dsv4_hc_comb(node* mixes, node* scale, node* base, float eps, int n_iter) {
    const char* name = "dsv4_hc_comb";
    check_type(name, mixes, type_id::f32, "mixes");
    check_type(name, scale, type_id::f32, "scale");
    check_type(name, base, type_id::f32, "base");
    check_same_context(name, mixes, scale);
    check_same_context(name, mixes, base);
    constexpr std::int64_t mix = (2 + dsv4_hc) * dsv4_hc;
    const std::int64_t T = mixes->lay.ne[1];
    check_extents(name, mixes, "mixes", {mix, T, 1, 1});
    check_extents(name, base, "base", {mix, 1, 1, 1});
    if (scale->lay.ne[0] < 3 || scale->lay.ne[1] != 1 || scale->lay.ne[2] != 1 || scale->lay.ne[3] != 1)
        op_fail(name, errc::shape_mismatch, "scale " + desc(scale) + " must be a vector of at least 3 (scale[2] scales the mixing logits)");
    if (n_iter < 1) op_fail(name, errc::invalid_argument, "n_iter must be >= 1 (got " + std::to_string(n_iter) + ")");
    return make(*mixes->ctx, type_id::f32, {dsv4_hc, dsv4_hc, T, 1}, op_kind::dsv4_hc_comb, hc_comb_params{eps, n_iter}, {mixes, scale, base});
}

inline node* dsv4_hc_pre(node* x, node* w) {
    const char* name = "dsv4_hc_pre";
    check_type(name, x, type_id::f32, "x");
    check_type(name, w, type_id::f32, "w");
    check_same_context(name, x, w);
    const auto& nx = x->lay.ne;
    if (nx[3] != 1) op_fail(name, errc::shape_mismatch, "x " + desc(x) + " must be [E, hc, T]");
    check_extents(name, w, "w", {nx[1], nx[2], 1, 1});
    return make(*x->ctx, type_id::f32, {nx[0], nx[2], 1, 1}, op_kind::dsv4_hc_pre, {}, {x, w});
}

inline node* dsv4_hc_post(node* x, node* residual, node* post, node* comb) {
    const char* name = "dsv4_hc_post";
    check_type(name, x, type_id::f32, "x");
    check_type(name, residual, type_id::f32, "residual");
    check_type(name, post, type_id::f32, "post");
    check_type(name, comb, type_id::f32, "comb");
    for (const node* s : {residual, post, comb}) check_same_context(name, x, s);
    const std::int64_t E = x->lay.ne[0], T = x->lay.ne[1], hc = residual->lay.ne[1];
    check_extents(name, x, "x", {E, T, 1, 1});
    check_extents(name, residual, "residual", {E, hc, T, 1});
    check_extents(name, post, "post", {hc, T, 1, 1});
    check_extents(name, comb, "comb", {hc, hc, T, 1});
    return make(*x->ctx, type_id::f32, {E, hc, T, 1}, op_kind::dsv4_hc_post, {}, {x, residual, post, comb});
}

}  // namespace detail

template <int Rq, tensor_element K, int Rk, int Rw, float_element M, int Rm>
tensor<float, 4> lightning_indexer(tensor<float, Rq> q, tensor<K, Rk> k, tensor<float, Rw> w, tensor<M, Rm> mask) {
    return tensor<float, 4>(detail::lightning_indexer(q.get(), k.get(), w.get(), mask.get()));
}
inline any_tensor lightning_indexer(any_tensor q, any_tensor k, any_tensor w, any_tensor mask) {
    return any_tensor(detail::lightning_indexer(q.get(), k.get(), w.get(), mask.get()));
}

template <int Rm, int Rs, int Rb>
    requires(Rm <= 2 && Rs == 1 && Rb == 1)
tensor<float, 3> dsv4_hc_comb(tensor<float, Rm> mixes, tensor<float, Rs> scale, tensor<float, Rb> base, float eps, int n_iter) {
    return tensor<float, 3>(detail::dsv4_hc_comb(mixes.get(), scale.get(), base.get(), eps, n_iter));
}
inline any_tensor dsv4_hc_comb(any_tensor mixes, any_tensor scale, any_tensor base, float eps, int n_iter) {
    return any_tensor(detail::dsv4_hc_comb(mixes.get(), scale.get(), base.get(), eps, n_iter));
}

template <int Rx, int Rw>
    requires(Rx <= 3 && Rw <= 2)
tensor<float, 2> dsv4_hc_pre(tensor<float, Rx> x, tensor<float, Rw> w) {
    return tensor<float, 2>(detail::dsv4_hc_pre(x.get(), w.get()));
}
inline any_tensor dsv4_hc_pre(any_tensor x, any_tensor w) { return any_tensor(detail::dsv4_hc_pre(x.get(), w.get())); }

template <int Rx, int Rr, int Rp, int Rc>
    requires(Rx <= 2 && Rr <= 3 && Rp <= 2 && Rc <= 3)
tensor<float, 3> dsv4_hc_post(tensor<float, Rx> x, tensor<float, Rr> residual, tensor<float, Rp> post, tensor<float, Rc> comb) {
    return tensor<float, 3>(detail::dsv4_hc_post(x.get(), residual.get(), post.get(), comb.get()));
}
inline any_tensor dsv4_hc_post(any_tensor x, any_tensor residual, any_tensor post, any_tensor comb) {
    return any_tensor(detail::dsv4_hc_post(x.get(), residual.get(), post.get(), comb.get()));
}

template <typed_tensor Q, typed_tensor K, typed_tensor W, typed_tensor M>
    requires(!(f32_tensor<Q> && f32_tensor<W> && float_tensor<M>))
void lightning_indexer(Q, K, W, M) {
    static_assert(detail::dependent_false<Q, K, W, M>,
                  "tessera::graph::lightning_indexer: q and w must be tensor<float, R> and the mask a tensor of f16 (or f32)");
}
template <typed_tensor A, typed_tensor B, typed_tensor C>
    requires(!(f32_tensor<A> && f32_tensor<B> && f32_tensor<C>))
void dsv4_hc_comb(A, B, C, float, int) {
    static_assert(detail::dependent_false<A, B, C>, "tessera::graph::dsv4_hc_comb: mixes, scale and base must be tensor<float, R>");
}
template <typed_tensor X, typed_tensor W>
    requires(!(f32_tensor<X> && f32_tensor<W>))
void dsv4_hc_pre(X, W) {
    static_assert(detail::dependent_false<X, W>, "tessera::graph::dsv4_hc_pre: x and the weights must be tensor<float, R>");
}
template <typed_tensor X, typed_tensor R, typed_tensor P, typed_tensor C>
    requires(!(f32_tensor<X> && f32_tensor<R> && f32_tensor<P> && f32_tensor<C>))
void dsv4_hc_post(X, R, P, C) {
    static_assert(detail::dependent_false<X, R, P, C>, "tessera::graph::dsv4_hc_post: x, residual, post and comb must be tensor<float, R>");
}

}  // namespace graph
TESSERA_END_NAMESPACE
