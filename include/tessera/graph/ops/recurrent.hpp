// Recurrent (state-space and linear-attention) ops, with ggml's shapes and semantics:
//
//   ssm_conv(sx, c)        sx [d_conv - 1 + T, d_inner, n_s], c [d_conv, d_inner]
//                          -> [d_inner, T, n_s]: y[i, t, s] = sum_j sx[t + j, i, s] * c[j, i]
//                          (the causal depthwise convolution of Mamba).
//   ssm_scan(s, x, dt, A, B, C, ids)
//                          Mamba's selective scan. s [d_state, head_dim, n_head, >= slots]
//                          states, x [head_dim, n_head, T, n_s], dt [n_head, T, n_s],
//                          A [d_state, n_head] (Mamba-1) or [1, n_head] (Mamba-2),
//                          B, C [d_state, n_group, T, n_s], ids i32 [n_s] (the state slot of
//                          each sequence). Per token, with dt' = softplus(dt[h]):
//                          state = state * exp(dt' * A) + B * (x * dt'),  y = sum_state state * C
//                          (head h uses group h / (n_head / n_group)). -> f32 1-D: y
//                          ([head_dim, n_head, T, n_s]) followed by each sequence's final
//                          state ([d_state, head_dim, n_head, n_s]).
//   rwkv_wkv6(k, v, r, tf, td, state)
//                          k, v, r, td [S, H, T], tf [S, H], state [S*S*H, n_s] (T a multiple
//                          of n_s: tokens T/n_s per sequence). Per head, kv = k^T v (S x S):
//                          y = r (tf * kv + state), state = td * state + kv (td per row i).
//   gated_linear_attn(k, v, q, g, state, scale)
//                          state = g * state + k^T v, y = scale * q state.
//   rwkv_wkv7(r, w, k, v, a, b, state)
//                          state[i][j] = state[i][j] * w[j] + v[i] k[j] + (a . state[i]) b[j],
//                          y[i] = state[i] . r.
//   The three return f32 [S*H, T + S*n_s]: the outputs (one row of S*H per token), then
//   each sequence's final state. State element [i][j] of head h sits at (h*S + i)*S + j.
//   gated_delta_net(q, k, v, g, beta, state, K)
//                          Qwen3-Next / Kimi gated delta rule. q, k [S, Hk, T, nq] (nq divides
//                          n_s), v [S, Hv, T, n_s] (Hk divides Hv: value head h reads q/k head
//                          h % Hk), g [1 or S, Hv, T, n_s] (log decay: a scalar per head, or per
//                          channel, "KDA"), beta [1, Hv, T, n_s], state [S, S, Hv, n_s]: element
//                          (i, j) of a head is M[i][j], i the key index, j the value index. Per
//                          token: M[i][:] *= exp(g[i]) (KDA; else all of M *= exp(g[0])),
//                          delta[j] = (v[j] - sum_i M[i][j] k[i]) beta, M[i][j] += k[i] delta[j],
//                          out[j] = sum_i M[i][j] q[i] / sqrt(S).
//                          -> f32 [S*Hv, T*n_s + K*S*n_s]: the outputs ([S, Hv, T, n_s]), then K
//                          state snapshots [S, S, Hv, n_s], newest first (snapshot 0 = the final
//                          state, snapshot m = m tokens earlier); when T < K the snapshots
//                          past T - 1 are not written (as in ggml: they belong to the caller).
//
// All inputs are f32; the linear-attention inputs must be contiguous (gated_delta_net: q, k,
// v with contiguous rows; g, beta and the state contiguous).
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline void check_f32_contiguous(std::string_view op, const node* n, const char* which) {
    check_type(op, n, type_id::f32, which);
    if (!n->lay.is_contiguous())
        op_fail(op, errc::shape_mismatch, std::string("operand ") + which + " " + desc(n) + " must be contiguous");
}
inline void check_ne(std::string_view op, const node* n, const char* which, std::array<std::int64_t, 4> want) {
    if (n->lay.ne != want)
        op_fail(op, errc::shape_mismatch,
                std::string("operand ") + which + " " + desc(n) + " must have extents [" + std::to_string(want[0]) + ", " +
                    std::to_string(want[1]) + ", " + std::to_string(want[2]) + ", " + std::to_string(want[3]) + "]");
}

inline node* ssm_conv(node* sx, node* c) {
    const char* name = "ssm_conv";
    check_type(name, sx, type_id::f32, "sx");
    check_type(name, c, type_id::f32, "c");
    const std::int64_t d_conv = c->lay.ne[0], d_inner = c->lay.ne[1];
    if (c->lay.ne[2] != 1 || c->lay.ne[3] != 1) op_fail(name, errc::shape_mismatch, "c " + desc(c) + " must be [d_conv, d_inner]");
    if (sx->lay.ne[1] != d_inner || sx->lay.ne[3] != 1 || sx->lay.ne[0] < d_conv)
        op_fail(name, errc::shape_mismatch,
                "sx " + desc(sx) + " must be [d_conv - 1 + n_t, d_inner, n_s] for c " + desc(c));
    const std::int64_t n_t = sx->lay.ne[0] - d_conv + 1;
    return make(*sx->ctx, type_id::f32, {d_inner, n_t, sx->lay.ne[2], 1}, op_kind::ssm_conv, {}, {sx, c});
}

inline node* ssm_scan(node* s, node* x, node* dt, node* A, node* B, node* C, node* ids) {
    const char* name = "ssm_scan";
    for (auto [n, w] : {std::pair{s, "s"}, {x, "x"}, {dt, "dt"}, {A, "A"}, {B, "B"}, {C, "C"}}) check_type(name, n, type_id::f32, w);
    check_type(name, ids, type_id::i32, "ids");
    const std::int64_t d_state = s->lay.ne[0], head_dim = s->lay.ne[1], n_head = s->lay.ne[2];
    const std::int64_t n_t = x->lay.ne[2], n_s = x->lay.ne[3];
    if (x->lay.ne[0] != head_dim || x->lay.ne[1] != n_head)
        op_fail(name, errc::shape_mismatch, "x " + desc(x) + " must be [head_dim, n_head, T, n_s] for states " + desc(s));
    check_ne(name, dt, "dt", {n_head, n_t, n_s, 1});
    if ((A->lay.ne[0] != d_state && A->lay.ne[0] != 1) || A->lay.ne[1] != n_head || A->lay.ne[2] != 1 || A->lay.ne[3] != 1)
        op_fail(name, errc::shape_mismatch, "A " + desc(A) + " must be [d_state, n_head] or [1, n_head]");
    const std::int64_t n_group = B->lay.ne[1];
    if (n_group <= 0 || n_head % n_group != 0)
        op_fail(name, errc::shape_mismatch, "B " + desc(B) + ": n_head (" + std::to_string(n_head) + ") must be a multiple of n_group");
    check_ne(name, B, "B", {d_state, n_group, n_t, n_s});
    check_ne(name, C, "C", {d_state, n_group, n_t, n_s});
    check_ne(name, ids, "ids", {n_s, 1, 1, 1});
    const std::int64_t total = x->lay.nelements() + d_state * head_dim * n_head * n_s;
    node* out = make(*s->ctx, type_id::f32, {total, 1, 1, 1}, op_kind::ssm_scan, {}, {s, x, dt, A, B, C, ids});
    return out;
}

// k/v/... [S, H, T], state [S*S*H, n_s]: checks and returns {S, H, T, n_s}.
inline std::array<std::int64_t, 4> linear_attn_dims(std::string_view name, std::initializer_list<std::pair<node*, const char*>> tok,
                                                    node* state) {
    const node* first = tok.begin()->first;
    check_f32_contiguous(name, first, tok.begin()->second);
    const std::int64_t S = first->lay.ne[0], H = first->lay.ne[1], T = first->lay.ne[2];
    for (const auto& [n, w] : tok) {
        check_f32_contiguous(name, n, w);
        check_ne(name, n, w, {S, H, T, 1});
    }
    check_f32_contiguous(name, state, "state");
    const std::int64_t n_s = state->lay.ne[1];
    check_ne(name, state, "state", {S * S * H, n_s, 1, 1});
    if (n_s <= 0 || T % n_s != 0)
        op_fail(name, errc::shape_mismatch, "the " + std::to_string(T) + " tokens must split evenly into the " + std::to_string(n_s) +
                                                " sequences of state " + desc(state));
    return {S, H, T, n_s};
}

inline node* rwkv_wkv6(node* k, node* v, node* r, node* tf, node* td, node* state) {
    const char* name = "rwkv_wkv6";
    const auto [S, H, T, n_s] = linear_attn_dims(name, {{k, "k"}, {v, "v"}, {r, "r"}, {td, "td"}}, state);
    check_f32_contiguous(name, tf, "tf");
    check_ne(name, tf, "tf", {S, H, 1, 1});
    return make(*k->ctx, type_id::f32, {S * H, T + S * n_s, 1, 1}, op_kind::rwkv_wkv6, {}, {k, v, r, tf, td, state});
}

inline node* gated_linear_attn(node* k, node* v, node* q, node* g, node* state, float scale) {
    const char* name = "gated_linear_attn";
    const auto [S, H, T, n_s] = linear_attn_dims(name, {{k, "k"}, {v, "v"}, {q, "q"}, {g, "g"}}, state);
    return make(*k->ctx, type_id::f32, {S * H, T + S * n_s, 1, 1}, op_kind::gated_linear_attn, scale_params{scale, 0.0f},
                {k, v, q, g, state});
}

inline node* rwkv_wkv7(node* r, node* w, node* k, node* v, node* a, node* b, node* state) {
    const char* name = "rwkv_wkv7";
    const auto [S, H, T, n_s] =
        linear_attn_dims(name, {{r, "r"}, {w, "w"}, {k, "k"}, {v, "v"}, {a, "a"}, {b, "b"}}, state);
    return make(*r->ctx, type_id::f32, {S * H, T + S * n_s, 1, 1}, op_kind::rwkv_wkv7, {}, {r, w, k, v, a, b, state});
}

inline node* gated_delta_net(node* q, node* k, node* v, node* g, node* beta, node* state, std::int64_t K) {
    const char* name = "gated_delta_net";
    for (auto [n, w] : {std::pair{q, "q"}, {k, "k"}, {v, "v"}, {g, "g"}, {beta, "beta"}, {state, "state"}}) {
        check_type(name, n, type_id::f32, w);
        check_same_context(name, q, n);
    }
    for (auto [n, w] : {std::pair{q, "q"}, {k, "k"}, {v, "v"}}) check_rows_contiguous(name, n, w);
    for (auto [n, w] : {std::pair{g, "g"}, {beta, "beta"}, {state, "state"}})
        if (!n->lay.is_contiguous()) op_fail(name, errc::shape_mismatch, std::string("operand ") + w + " " + desc(n) + " must be contiguous");
    const std::int64_t S = v->lay.ne[0], Hv = v->lay.ne[1], T = v->lay.ne[2], n_s = v->lay.ne[3];
    const std::int64_t Hk = q->lay.ne[1];
    if (q->lay.ne[0] != S || q->lay.ne[2] != T || Hk <= 0 || Hv % Hk != 0 || q->lay.ne[3] <= 0 || n_s % q->lay.ne[3] != 0)
        op_fail(name, errc::shape_mismatch, "q " + desc(q) + " must be [S, Hk, T, nq] with Hk dividing Hv and nq dividing n_s, for v " + desc(v));
    if (k->lay.ne[0] != S || k->lay.ne[1] != Hk || k->lay.ne[2] != T || !divisible(n_s, k->lay.ne[3]))
        op_fail(name, errc::shape_mismatch, "k " + desc(k) + " must have q's shape " + q->lay.to_string() + " (up to the sequence count)");
    if ((g->lay.ne[0] != 1 && g->lay.ne[0] != S) || g->lay.ne[1] != Hv || g->lay.ne[2] != T || g->lay.ne[3] != n_s)
        op_fail(name, errc::shape_mismatch, "g " + desc(g) + " must be [1 or S, Hv, T, n_s] for v " + desc(v));
    check_ne(name, beta, "beta", {1, Hv, T, n_s});
    check_ne(name, state, "state", {S, S, Hv, n_s});
    if (K < 1) op_fail(name, errc::invalid_argument, "the snapshot count K must be >= 1 (got " + std::to_string(K) + ")");
    return make(*q->ctx, type_id::f32, {S * Hv, T * n_s + K * S * n_s, 1, 1}, op_kind::gated_delta_net, gated_delta_net_params{K},
                {q, k, v, g, beta, state});
}

}  // namespace detail

inline tensor<float, 3> ssm_conv(tensor<float, 3> sx, tensor<float, 2> c) { return tensor<float, 3>(detail::ssm_conv(sx.get(), c.get())); }
inline any_tensor ssm_conv(any_tensor sx, any_tensor c) { return any_tensor(detail::ssm_conv(sx.get(), c.get())); }

inline tensor<float, 1> ssm_scan(tensor<float, 4> s, tensor<float, 4> x, tensor<float, 3> dt, tensor<float, 2> A, tensor<float, 4> B,
                                 tensor<float, 4> C, tensor<std::int32_t, 1> ids) {
    return tensor<float, 1>(detail::ssm_scan(s.get(), x.get(), dt.get(), A.get(), B.get(), C.get(), ids.get()));
}
inline any_tensor ssm_scan(any_tensor s, any_tensor x, any_tensor dt, any_tensor A, any_tensor B, any_tensor C, any_tensor ids) {
    return any_tensor(detail::ssm_scan(s.get(), x.get(), dt.get(), A.get(), B.get(), C.get(), ids.get()));
}

inline tensor<float, 2> rwkv_wkv6(tensor<float, 3> k, tensor<float, 3> v, tensor<float, 3> r, tensor<float, 2> tf, tensor<float, 3> td,
                                  tensor<float, 2> state) {
    return tensor<float, 2>(detail::rwkv_wkv6(k.get(), v.get(), r.get(), tf.get(), td.get(), state.get()));
}
inline any_tensor rwkv_wkv6(any_tensor k, any_tensor v, any_tensor r, any_tensor tf, any_tensor td, any_tensor state) {
    return any_tensor(detail::rwkv_wkv6(k.get(), v.get(), r.get(), tf.get(), td.get(), state.get()));
}

inline tensor<float, 2> gated_linear_attn(tensor<float, 3> k, tensor<float, 3> v, tensor<float, 3> q, tensor<float, 3> g,
                                          tensor<float, 2> state, float scale) {
    return tensor<float, 2>(detail::gated_linear_attn(k.get(), v.get(), q.get(), g.get(), state.get(), scale));
}
inline any_tensor gated_linear_attn(any_tensor k, any_tensor v, any_tensor q, any_tensor g, any_tensor state, float scale) {
    return any_tensor(detail::gated_linear_attn(k.get(), v.get(), q.get(), g.get(), state.get(), scale));
}

inline tensor<float, 2> rwkv_wkv7(tensor<float, 3> r, tensor<float, 3> w, tensor<float, 3> k, tensor<float, 3> v, tensor<float, 3> a,
                                  tensor<float, 3> b, tensor<float, 2> state) {
    return tensor<float, 2>(detail::rwkv_wkv7(r.get(), w.get(), k.get(), v.get(), a.get(), b.get(), state.get()));
}
inline any_tensor rwkv_wkv7(any_tensor r, any_tensor w, any_tensor k, any_tensor v, any_tensor a, any_tensor b, any_tensor state) {
    return any_tensor(detail::rwkv_wkv7(r.get(), w.get(), k.get(), v.get(), a.get(), b.get(), state.get()));
}

template <int Rq, int Rk, int Rv, int Rg, int Rb, int Rs>
tensor<float, 2> gated_delta_net(tensor<float, Rq> q, tensor<float, Rk> k, tensor<float, Rv> v, tensor<float, Rg> g,
                                 tensor<float, Rb> beta, tensor<float, Rs> state, std::int64_t K = 1) {
    return tensor<float, 2>(detail::gated_delta_net(q.get(), k.get(), v.get(), g.get(), beta.get(), state.get(), K));
}
template <typed_tensor Q, typed_tensor K, typed_tensor V, typed_tensor G, typed_tensor B, typed_tensor S>
    requires(!(f32_tensor<Q> && f32_tensor<K> && f32_tensor<V> && f32_tensor<G> && f32_tensor<B> && f32_tensor<S>))
void gated_delta_net(Q, K, V, G, B, S, std::int64_t = 1) {
    static_assert(detail::dependent_false<Q, K, V, G, B, S>, "tessera::graph::gated_delta_net: every operand must be a tensor<float, R>");
}
inline any_tensor gated_delta_net(any_tensor q, any_tensor k, any_tensor v, any_tensor g, any_tensor beta, any_tensor state,
                                  std::int64_t K = 1) {
    return any_tensor(detail::gated_delta_net(q.get(), k.get(), v.get(), g.get(), beta.get(), state.get(), K));
}

}  // namespace graph
TESSERA_END_NAMESPACE
