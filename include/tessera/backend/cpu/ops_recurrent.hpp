// CPU implementations of the recurrent ops (graph/ops/recurrent.hpp): ssm_conv,
// ssm_scan, rwkv_wkv6, gated_linear_attn, rwkv_wkv7, gated_delta_net. Scalar f32 code
// with f32 accumulation in the definition's order (gated_delta_net: the dot, axpy and
// scale kernels on the state's rows); threads split ssm_conv by channel and the others by
// head (every head's recurrence is independent).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu::impl {
using namespace tessera::graph;  // the op bodies read graph nodes

namespace recurrent_detail {
// Element (i0, i1, i2, i3) of an f32 node, through its strides.
inline float& at(const node& n, std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) {
    return *reinterpret_cast<float*>(n.bytes() + static_cast<std::size_t>(i0) * n.lay.nb[0] + static_cast<std::size_t>(i1) * n.lay.nb[1] +
                                     static_cast<std::size_t>(i2) * n.lay.nb[2] + static_cast<std::size_t>(i3) * n.lay.nb[3]);
}
inline float softplus(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }
}  // namespace recurrent_detail

inline void ssm_conv(const node& d, const exec_params& p) {
    using recurrent_detail::at;
    const node& sx = *d.src[0];
    const node& c = *d.src[1];
    const std::int64_t d_conv = c.lay.ne[0], n_t = d.lay.ne[1], n_s = d.lay.ne[2];
    const auto [i0, i1] = p.split(d.lay.ne[0]);
    for (std::int64_t s = 0; s < n_s; ++s)
        for (std::int64_t t = 0; t < n_t; ++t)
            for (std::int64_t ch = i0; ch < i1; ++ch) {
                float acc = 0.f;
                for (std::int64_t j = 0; j < d_conv; ++j) acc += at(sx, t + j, ch, s) * at(c, j, ch);
                at(d, ch, t, s) = acc;
            }
}

inline void ssm_scan(const node& d, const exec_params& p) {
    using recurrent_detail::at;
    const node& s_in = *d.src[0];
    const node& x = *d.src[1];
    const node& dt = *d.src[2];
    const node& A = *d.src[3];
    const node& B = *d.src[4];
    const node& C = *d.src[5];
    const node& ids = *d.src[6];
    const std::int64_t d_state = s_in.lay.ne[0], head_dim = s_in.lay.ne[1], n_head = s_in.lay.ne[2];
    const std::int64_t n_t = x.lay.ne[2], n_s = x.lay.ne[3], n_group = B.lay.ne[1];
    const bool scalar_decay = A.lay.ne[0] == 1;  // Mamba-2
    float* y = reinterpret_cast<float*>(d.bytes());
    float* states = y + x.lay.nelements();  // [d_state, head_dim, n_head, n_s], contiguous
    const auto [h0, h1] = p.split(n_head);
    for (std::int64_t seq = 0; seq < n_s; ++seq) {
        std::int32_t slot;
        std::memcpy(&slot, ids.bytes() + static_cast<std::size_t>(seq) * ids.lay.nb[0], 4);
        float* st = states + seq * d_state * head_dim * n_head;
        for (std::int64_t h = h0; h < h1; ++h) {
            const std::int64_t g = h / (n_head / n_group);
            // the sequence's state starts from its slot of s
            for (std::int64_t i = 0; i < head_dim; ++i)
                for (std::int64_t j = 0; j < d_state; ++j) st[(h * head_dim + i) * d_state + j] = at(s_in, j, i, h, slot);
            for (std::int64_t t = 0; t < n_t; ++t) {
                const float dts = recurrent_detail::softplus(at(dt, h, t, seq));
                const float dA_scalar = scalar_decay ? std::exp(dts * at(A, 0, h)) : 0.f;
                for (std::int64_t i = 0; i < head_dim; ++i) {
                    const float xdt = at(x, i, h, t, seq) * dts;
                    float* row = st + (h * head_dim + i) * d_state;
                    float acc = 0.f;
                    for (std::int64_t j = 0; j < d_state; ++j) {
                        const float dA = scalar_decay ? dA_scalar : std::exp(dts * at(A, j, h));
                        row[j] = row[j] * dA + at(B, j, g, t, seq) * xdt;
                        acc += row[j] * at(C, j, g, t, seq);
                    }
                    y[((seq * n_t + t) * n_head + h) * head_dim + i] = acc;
                }
            }
        }
    }
}

// rwkv_wkv6, gated_linear_attn, rwkv_wkv7: inputs [S, H, T] contiguous, state [S*S*H, n_s];
// output rows 0..T-1 the per-token results, then the final states.
inline void linear_attention(const node& d, const exec_params& p) {
    const node& first = *d.src[0];
    const std::int64_t S = first.lay.ne[0], H = first.lay.ne[1], T = first.lay.ne[2];
    const node& state_in = *d.src[d.op == op_kind::rwkv_wkv6 ? 5 : d.op == op_kind::gated_linear_attn ? 4 : 6];
    const std::int64_t n_s = state_in.lay.ne[1], per_seq = T / n_s, C = S * H;
    const auto src = [&](int i) { return reinterpret_cast<const float*>(d.src[static_cast<std::size_t>(i)]->bytes()); };
    float* out = reinterpret_cast<float*>(d.bytes());
    float* states = out + C * T;
    const auto* s0 = reinterpret_cast<const float*>(state_in.bytes());
    const float scale = d.op == op_kind::gated_linear_attn ? d.param<scale_params>().s : 1.f;
    const auto [h0, h1] = p.split(H);
    for (std::int64_t seq = 0; seq < n_s; ++seq) {
        float* st = states + seq * S * C;
        for (std::int64_t h = h0; h < h1; ++h) {
            float* sh = st + h * S * S;
            std::memcpy(sh, s0 + seq * S * C + h * S * S, static_cast<std::size_t>(S * S) * 4);
            for (std::int64_t t = seq * per_seq; t < (seq + 1) * per_seq; ++t) {
                const std::int64_t base = t * C + h * S;  // element 0 of head h at token t
                float* y = out + base;
                if (d.op == op_kind::rwkv_wkv6) {
                    const float *k = src(0) + base, *v = src(1) + base, *r = src(2) + base, *tf = src(3) + h * S,
                                *td = src(4) + base;
                    for (std::int64_t j = 0; j < S; ++j) y[j] = 0.f;
                    for (std::int64_t i = 0; i < S; ++i)
                        for (std::int64_t j = 0; j < S; ++j) {
                            const float kv = k[i] * v[j];
                            float& s = sh[i * S + j];
                            y[j] += r[i] * (tf[i] * kv + s);
                            s = s * td[i] + kv;
                        }
                } else if (d.op == op_kind::gated_linear_attn) {
                    const float *k = src(0) + base, *v = src(1) + base, *q = src(2) + base, *g = src(3) + base;
                    for (std::int64_t j = 0; j < S; ++j) y[j] = 0.f;
                    for (std::int64_t i = 0; i < S; ++i)
                        for (std::int64_t j = 0; j < S; ++j) {
                            float& s = sh[i * S + j];
                            s = s * g[i] + k[i] * v[j];
                            y[j] += s * (q[i] * scale);
                        }
                } else {  // rwkv_wkv7
                    const float *r = src(0) + base, *w = src(1) + base, *k = src(2) + base, *v = src(3) + base,
                                *a = src(4) + base, *b = src(5) + base;
                    for (std::int64_t i = 0; i < S; ++i) {
                        float* row = sh + i * S;
                        float sa = 0.f;
                        for (std::int64_t j = 0; j < S; ++j) sa += a[j] * row[j];
                        float acc = 0.f;
                        for (std::int64_t j = 0; j < S; ++j) {
                            row[j] = row[j] * w[j] + v[i] * k[j] + sa * b[j];
                            acc += row[j] * r[j];
                        }
                        y[i] = acc;
                    }
                }
            }
        }
    }
}

// Per-thread scratch of gated_delta_net: one head's S x S state, exp(g) and delta.
inline std::pair<std::size_t, std::size_t> gated_delta_net_scratch(const node& n) {
    const auto S = static_cast<std::size_t>(n.src[2]->lay.ne[0]), pad = (S + 15) / 16 * 16;
    return {(S * S + 2 * pad) * sizeof(float) + 64, 0};
}

// Work items are (value head, sequence). The state is kept as rows j (M[:][j], contiguous
// in the state tensor), so every step is a row operation: decay, delta[j] = (v[j] -
// M[:][j] . k) beta, M[:][j] += delta[j] k, out[j] = M[:][j] . q / sqrt(S).
inline void gated_delta_net(const node& d, const exec_params& p) {
    const node& q = *d.src[0];
    const node& kk = *d.src[1];
    const node& v = *d.src[2];
    const node& g = *d.src[3];
    const node& beta = *d.src[4];
    const node& state = *d.src[5];
    const auto& ks = *p.k;
    const std::int64_t S = v.lay.ne[0], H = v.lay.ne[1], T = v.lay.ne[2], n_s = v.lay.ne[3];
    const std::int64_t K = d.param<gated_delta_net_params>().snapshots, Hk = q.lay.ne[1];
    const std::int64_t rq3 = n_s / q.lay.ne[3], rk3 = n_s / kk.lay.ne[3];
    const bool kda = g.lay.ne[0] == S;  // a decay per key channel
    const auto n = static_cast<std::size_t>(S);
    const float scale = 1.f / std::sqrt(static_cast<float>(S));
    float* M = reinterpret_cast<float*>(p.scratch);
    float* eg = M + S * S;
    float* delta = eg + (S + 15) / 16 * 16;
    float* out = reinterpret_cast<float*>(d.bytes());
    float* snapshots = out + S * H * T * n_s;
    const std::int64_t snapshot = S * S * H * n_s;
    const auto* s0 = reinterpret_cast<const float*>(state.bytes());
    const auto [w0, w1] = p.split(H * n_s);
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t h = w % H, seq = w / H;
        std::memcpy(M, s0 + (seq * H + h) * S * S, n * n * sizeof(float));
        for (std::int64_t t = 0; t < T; ++t) {
            const auto* qv = reinterpret_cast<const float*>(row_ptr(q, h % Hk, t, seq / rq3));
            const auto* kv = reinterpret_cast<const float*>(row_ptr(kk, h % Hk, t, seq / rk3));
            const auto* vv = reinterpret_cast<const float*>(row_ptr(v, h, t, seq));
            const auto* gv = reinterpret_cast<const float*>(row_ptr(g, h, t, seq));
            const float b = *reinterpret_cast<const float*>(row_ptr(beta, h, t, seq));
            if (kda) {
                for (std::int64_t i = 0; i < S; ++i) eg[i] = std::exp(gv[i]);
                for (std::int64_t j = 0; j < S; ++j) ks.binary(kernels::binary_kind::mul, M + j * S, eg, M + j * S, n, false);
            } else {
                ks.scale(M, M, n * n, std::exp(gv[0]), 0.f);
            }
            for (std::int64_t j = 0; j < S; ++j) delta[j] = (vv[j] - ks.dot(M + j * S, kv, n)) * b;
            for (std::int64_t j = 0; j < S; ++j) ks.axpy(delta[j], kv, M + j * S, n);
            float* o = out + ((seq * T + t) * H + h) * S;
            for (std::int64_t j = 0; j < S; ++j) o[j] = ks.dot(M + j * S, qv, n) * scale;
            if (const std::int64_t slot = T - 1 - t; slot < K)
                std::memcpy(snapshots + slot * snapshot + (seq * H + h) * S * S, M, n * n * sizeof(float));
        }
    }
}

}  // namespace backend::cpu::impl
TESSERA_END_NAMESPACE
