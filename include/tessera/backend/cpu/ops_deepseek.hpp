// CPU implementations of DeepSeek's fused ops (builders in graph/ops/deepseek.hpp):
// lightning_indexer, dsv4_hc_comb, dsv4_hc_pre, dsv4_hc_post.
//
// lightning_indexer: work items are (stream, block of 64 keys); a block's K rows are
// converted to f32 once (any float or block type), then, per query, one GEMM gives the
// block's dot products with the query's H head rows, reduced over heads through relu
// and the weights. The hyper-connection ops split tokens (comb) or result rows (pre,
// post) between threads; all f32, in the definition's order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/backend/cpu/gather.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/quant/reference.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

inline std::string deepseek_unsupported_reason(const node& n) {
    if (n.op != op_kind::lightning_indexer) return {};  // f32 only, checked when built
    const type_id tk = n.src[1]->lay.type;
    if (tk == type_id::f32 || tk == type_id::f16 || tk == type_id::bf16 || quant::can_dequantize(tk)) return {};
    return "lightning_indexer with " + std::string(type_name(tk)) + " K (no dequantize kernel for this type yet)";
}

inline constexpr std::int64_t indexer_key_block = 64;

// Per-thread scratch of lightning_indexer: a block of K rows as f32 and their dot
// products with one query's heads.
inline std::pair<std::size_t, std::size_t> deepseek_scratch(const node& n) {
    if (n.op != op_kind::lightning_indexer) return {0, 0};
    const auto row = (static_cast<std::size_t>(n.src[0]->lay.ne[0]) + 15) / 16 * 16;
    const auto heads = static_cast<std::size_t>(n.src[0]->lay.ne[1]);
    return {(indexer_key_block * (row + heads)) * sizeof(float) + 64, 0};
}

namespace impl {

// score[j, t, s] = sum_h w[h, t, s] relu(q[:, h, t, s] . k[:, j, s]) + mask[j, t, s % m3]
inline void lightning_indexer(const node& d, const exec_params& p) {
    const node& q = *d.src[0];
    const node& k = *d.src[1];
    const node& w = *d.src[2];
    const node& m = *d.src[3];
    const auto& ks = *p.k;
    const std::int64_t D = q.lay.ne[0], H = q.lay.ne[1], n_q = q.lay.ne[2], S = q.lay.ne[3], n_kv = k.lay.ne[2];
    const auto row = static_cast<std::int64_t>((static_cast<std::size_t>(D) + 15) / 16 * 16);
    float* kb = reinterpret_cast<float*>(p.scratch);  // [indexer_key_block][row]
    float* qk = kb + indexer_key_block * row;         // [H][indexer_key_block]
    const std::int64_t blocks = (n_kv + indexer_key_block - 1) / indexer_key_block;
    const bool quantized = is_quantized(k.lay.type);
    const auto [w0, w1] = p.split(blocks * S);
    for (std::int64_t wi = w0; wi < w1; ++wi) {
        const std::int64_t s = wi / blocks, j0 = (wi % blocks) * indexer_key_block;
        const std::int64_t nj = std::min(indexer_key_block, n_kv - j0);
        for (std::int64_t j = 0; j < nj; ++j) {
            float* buf = kb + j * row;
            const std::byte* src = row_ptr(k, 0, j0 + j, s);
            if (quantized) {
                quant::dequantize_row(k.lay.type, src, buf, D);
            } else {
                const float* x = load_f32(ks, k.lay.type, src, k.lay.nb[0], D, buf);
                if (x != buf) std::copy_n(x, D, buf);
            }
        }
        for (std::int64_t t = 0; t < n_q; ++t) {
            // qk[h][j] = q[:, h, t, s] . k[:, j0 + j, s]
            ks.gemm(kb, static_cast<std::size_t>(row), reinterpret_cast<const float*>(row_ptr(q, 0, t, s)), q.lay.nb[1] / 4, qk,
                    indexer_key_block, static_cast<std::size_t>(nj), static_cast<std::size_t>(H), static_cast<std::size_t>(D));
            const auto* wr = reinterpret_cast<const float*>(row_ptr(w, t, 0, s));  // the H head weights
            float score[indexer_key_block] = {};
            for (std::int64_t h = 0; h < H; ++h)
                for (std::int64_t j = 0; j < nj; ++j) score[j] += std::max(qk[h * indexer_key_block + j], 0.f) * wr[h];
            const std::byte* mrow = row_ptr(m, t, 0, s % m.lay.ne[3]);
            auto* out = reinterpret_cast<float*>(row_ptr(d, t, 0, s));
            for (std::int64_t j = 0; j < nj; ++j)
                out[j0 + j] = score[j] + read_scalar(m.lay.type, mrow + static_cast<std::size_t>(j0 + j) * m.lay.nb[0]);
        }
    }
}

// Per token: softmax over dst of each src's logits (+ eps), then alternating column (over
// src, for each dst) and row (over dst, for each src) normalizations, each sum + eps.
inline void dsv4_hc_comb(const node& d, const exec_params& p) {
    const node& mixes = *d.src[0];
    const node& scale = *d.src[1];
    const node& base = *d.src[2];
    const auto& cp = d.param<hc_comb_params>();
    constexpr std::int64_t hc = 4, off = 2 * hc;
    const float sc = elem(scale, 2);
    const auto normalize = [&](float* c, bool over_src) {  // c[dst + hc src]
        for (std::int64_t a = 0; a < hc; ++a) {
            float sum = cp.eps;
            for (std::int64_t b = 0; b < hc; ++b) sum += over_src ? c[a + hc * b] : c[b + hc * a];
            const float inv = 1.f / sum;
            for (std::int64_t b = 0; b < hc; ++b) (over_src ? c[a + hc * b] : c[b + hc * a]) *= inv;
        }
    };
    const auto [t0, t1] = p.split(mixes.lay.ne[1]);
    for (std::int64_t t = t0; t < t1; ++t) {
        float c[hc * hc];
        for (std::int64_t src = 0; src < hc; ++src) {
            float mx = -std::numeric_limits<float>::infinity();
            for (std::int64_t dst = 0; dst < hc; ++dst) {
                const std::int64_t i = dst + hc * src;
                c[i] = elem(mixes, off + i, t) * sc + elem(base, off + i);
                mx = std::max(mx, c[i]);
            }
            float sum = 0.f;
            for (std::int64_t dst = 0; dst < hc; ++dst) sum += (c[dst + hc * src] = std::exp(c[dst + hc * src] - mx));
            const float inv = 1.f / sum;
            for (std::int64_t dst = 0; dst < hc; ++dst) c[dst + hc * src] = c[dst + hc * src] * inv + cp.eps;
        }
        normalize(c, true);
        for (int it = 1; it < cp.n_iter; ++it) {
            normalize(c, false);
            normalize(c, true);
        }
        for (std::int64_t src = 0; src < hc; ++src)
            for (std::int64_t dst = 0; dst < hc; ++dst)
                *reinterpret_cast<float*>(row_ptr(d, src, t, 0) + static_cast<std::size_t>(dst) * d.lay.nb[0]) = c[dst + hc * src];
    }
}

// out[:, t] = sum_h x[:, h, t] w[h, t]
inline void dsv4_hc_pre(const node& d, const exec_params& p) {
    const node& x = *d.src[0];
    const node& w = *d.src[1];
    const std::int64_t hc = x.lay.ne[1];
    fill_rows(d, p, [&](float* z, std::int64_t t, std::int64_t, std::int64_t) {
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) {
            float sum = 0.f;
            for (std::int64_t h = 0; h < hc; ++h) sum += elem(x, i, h, t) * elem(w, h, t);
            z[i] = sum;
        }
    });
}

// out[:, dst, t] = x[:, t] post[dst, t] + sum_src residual[:, src, t] comb[dst, src, t]
inline void dsv4_hc_post(const node& d, const exec_params& p) {
    const node& x = *d.src[0];
    const node& res = *d.src[1];
    const node& post = *d.src[2];
    const node& comb = *d.src[3];
    const std::int64_t hc = res.lay.ne[1];
    fill_rows(d, p, [&](float* z, std::int64_t dst, std::int64_t t, std::int64_t) {
        const float pv = elem(post, dst, t);
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) {
            float sum = elem(x, i, t) * pv;
            for (std::int64_t src = 0; src < hc; ++src) sum += elem(res, i, src, t) * elem(comb, dst, src, t);
            z[i] = sum;
        }
    });
}

}  // namespace impl

inline void deepseek_compute(const node& n, const exec_params& p) {
    switch (n.op) {
        case op_kind::lightning_indexer: return impl::lightning_indexer(n, p);
        case op_kind::dsv4_hc_comb: return impl::dsv4_hc_comb(n, p);
        case op_kind::dsv4_hc_pre: return impl::dsv4_hc_pre(n, p);
        case op_kind::dsv4_hc_post: return impl::dsv4_hc_post(n, p);
        default: return;
    }
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
