// CPU implementations of the recurrent ops (graph/ops/recurrent.hpp): ssm_conv,
// ssm_scan, rwkv_wkv6, gated_linear_attn, rwkv_wkv7. Scalar f32 code with f32
// accumulation in the definition's order; threads split ssm_conv by channel and the
// others by head (every head's recurrence is independent).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/graph/cpu/rows.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph::cpu::impl {

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

}  // namespace graph::cpu::impl
TESSERA_END_NAMESPACE
