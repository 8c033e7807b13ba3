// A double-precision evaluation of a llama GGUF's first step, written from the model's
// definition (llama.cpp's llm_build_llama) independently of tessera's graph, ops and
// kernels, for the tests that compare tessera and llama.cpp on quantized files.
//
// Everything is computed in double, except what a ggml program stores in a narrower type
// by design: each matrix product's activations are rounded to float and then to the dot
// partner of the weight type (q8_0, q8_1, q8_K through the reference quantizer, which is
// ggml's own to the byte; f16 for f16 weights), and K and V to the f16 of the KV cache.
// The weights are the file's values exactly (dequantized). What remains between this and a
// real program is the order and precision of its float sums and the places where its
// SIMD paths round differently, which is what the tests measure.
//
//   std::vector<double> logits = llama_dref::first_logits(path, prompt_ids);
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/core/f16.hpp"
#include "tessera/gguf/reader.hpp"
#include "tessera/models/hparams.hpp"
#include "tessera/quant/reference.hpp"

namespace llama_dref {
using namespace tessera;

// A weight matrix of `rows` rows of `cols` values (the file's rows), dequantized.
struct matrix {
    type_id type = type_id::f32;
    std::int64_t cols = 0, rows = 0;
    std::vector<float> w;
    const std::byte* raw = nullptr;  // the file's bytes
};

inline matrix load(const gguf::file& f, const std::string& name) {
    const gguf::tensor_info& t = f.tensor(name);
    matrix m{t.type, t.ne[0], t.n_elements() / t.ne[0], std::vector<float>(static_cast<std::size_t>(t.n_elements())), t.data};
    quant::dequantize_row(t.type, t.data, m.w.data(), t.n_elements());
    return m;
}

// m times x (x of m.cols values), x as a ggml mul_mat with weights of m's type sees it:
// float, then the dot partner. Against q8_1 (q4_1, q5_1 weights) the min term of each
// 32 is ggml's m * s with the partner's stored f16 s (= d * sum q, rounded).
inline std::vector<double> mul(const matrix& m, const std::vector<double>& x) {
    if (static_cast<std::int64_t>(x.size()) != m.cols) throw std::runtime_error("llama_dref: shape mismatch");
    std::vector<float> xf(x.begin(), x.end());
    const type_id p = quant::dot_partner_type(m.type);
    std::vector<std::byte> q(p != type_id::f32 ? static_cast<std::size_t>(row_size(p, m.cols)) : 0);
    if (p != type_id::f32) {
        quant::quantize(p, xf.data(), q.data(), 1, m.cols);
        quant::dequantize_row(p, q.data(), xf.data(), m.cols);
    }
    const std::vector<double> a(xf.begin(), xf.end());
    std::vector<double> y(static_cast<std::size_t>(m.rows));
    for (std::int64_t r = 0; r < m.rows; ++r) {
        double s = 0;
        const float* w = m.w.data() + r * m.cols;
        for (std::int64_t k = 0; k < m.cols; ++k) s += static_cast<double>(w[k]) * a[static_cast<std::size_t>(k)];
        if (p == type_id::q8_1) {
            const auto* yb = reinterpret_cast<const quant::block_q8_1*>(q.data());
            const std::size_t rb = static_cast<std::size_t>(row_size(m.type, m.cols)), bb = static_cast<std::size_t>(type_size(m.type));
            for (std::int64_t b = 0; b < m.cols / 32; ++b) {
                f16 mn;  // q4_1 and q5_1 both start with f16 d, f16 m
                std::memcpy(&mn, m.raw + static_cast<std::size_t>(r) * rb + static_cast<std::size_t>(b) * bb + 2, 2);
                double sq = 0;
                for (int e = 0; e < 32; ++e) sq += yb[b].qs[e];
                s += static_cast<double>(mn.to_float()) * (static_cast<double>(yb[b].s.to_float()) - static_cast<double>(yb[b].d.to_float()) * sq);
            }
        }
        y[static_cast<std::size_t>(r)] = s;
    }
    return y;
}

inline std::vector<double> rms_norm(const std::vector<double>& x, const matrix& g, double eps) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
    std::vector<double> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * g.w[i];
    return y;
}

inline double to_f16(double v) { return f16::from_float(static_cast<float>(v)).to_float(); }

// The last prompt token's logits after the whole prompt (positions 0, 1, ...).
inline std::vector<double> first_logits(const std::string& path, const std::vector<int>& tokens, bool f16_cache = true) {
    gguf::file f = gguf::file::open(path);
    const models::llama_hparams h = models::llama_hparams::from_metadata(f.meta());
    if (f.find_tensor("rope_freqs.weight")) throw std::runtime_error("llama_dref: rope_freqs is not implemented");
    const std::int64_t E = h.n_embd, H = h.n_head, HK = h.n_head_kv, D = h.n_embd_head(), T = static_cast<std::int64_t>(tokens.size());
    const matrix emb = load(f, "token_embd.weight");
    std::vector<std::vector<double>> x(static_cast<std::size_t>(T));
    for (std::int64_t t = 0; t < T; ++t) {
        const float* row = emb.w.data() + static_cast<std::int64_t>(tokens[static_cast<std::size_t>(t)]) * E;
        x[static_cast<std::size_t>(t)].assign(row, row + E);
    }
    const auto rope = [&](std::vector<double>& v, std::int64_t heads, std::int64_t pos) {  // normal mode: adjacent pairs
        for (std::int64_t hd = 0; hd < heads; ++hd)
            for (std::int64_t i = 0; i < h.n_rot; i += 2) {
                const double theta = static_cast<double>(pos) * h.rope_freq_scale *
                                     std::pow(static_cast<double>(h.rope_freq_base), -static_cast<double>(i) / static_cast<double>(h.n_rot));
                double& a = v[static_cast<std::size_t>(hd * D + i)];
                double& b = v[static_cast<std::size_t>(hd * D + i + 1)];
                const double a0 = a, b0 = b;
                a = a0 * std::cos(theta) - b0 * std::sin(theta);
                b = a0 * std::sin(theta) + b0 * std::cos(theta);
            }
    };
    for (std::int64_t il = 0; il < h.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const matrix an = load(f, p + "attn_norm.weight"), wq = load(f, p + "attn_q.weight"), wk = load(f, p + "attn_k.weight"),
                     wv = load(f, p + "attn_v.weight"), wo = load(f, p + "attn_output.weight"), fn = load(f, p + "ffn_norm.weight"),
                     wg = load(f, p + "ffn_gate.weight"), wu = load(f, p + "ffn_up.weight"), wd = load(f, p + "ffn_down.weight");
        std::vector<std::vector<double>> q(static_cast<std::size_t>(T)), k(q.size()), v(q.size());
        for (std::int64_t t = 0; t < T; ++t) {
            const std::vector<double> hn = rms_norm(x[static_cast<std::size_t>(t)], an, h.rms_eps);
            q[static_cast<std::size_t>(t)] = mul(wq, hn);
            k[static_cast<std::size_t>(t)] = mul(wk, hn);
            v[static_cast<std::size_t>(t)] = mul(wv, hn);
            rope(q[static_cast<std::size_t>(t)], H, t);
            rope(k[static_cast<std::size_t>(t)], HK, t);
            if (f16_cache) {
                for (double& e : k[static_cast<std::size_t>(t)]) e = to_f16(e);
                for (double& e : v[static_cast<std::size_t>(t)]) e = to_f16(e);
            }
        }
        for (std::int64_t t = 0; t < T; ++t) {
            std::vector<double> att(static_cast<std::size_t>(E), 0.0);
            for (std::int64_t hd = 0; hd < H; ++hd) {
                const std::int64_t kh = hd / (H / HK);
                std::vector<double> s(static_cast<std::size_t>(t + 1));
                double mx = -INFINITY;
                for (std::int64_t j = 0; j <= t; ++j) {  // causal
                    double d = 0;
                    for (std::int64_t e = 0; e < D; ++e) {  // Q against an f16 cache: Q in f16 too
                        const double qe = q[static_cast<std::size_t>(t)][static_cast<std::size_t>(hd * D + e)];
                        d += (f16_cache ? to_f16(qe) : static_cast<double>(static_cast<float>(qe))) *
                             k[static_cast<std::size_t>(j)][static_cast<std::size_t>(kh * D + e)];
                    }
                    s[static_cast<std::size_t>(j)] = d / std::sqrt(static_cast<double>(D));
                    mx = std::max(mx, s[static_cast<std::size_t>(j)]);
                }
                double z = 0;
                for (double& e : s) z += e = std::exp(e - mx);
                for (std::int64_t j = 0; j <= t; ++j) {
                    const double pj = s[static_cast<std::size_t>(j)] / z;  // the weights against an f16 V: in f16
                    const double pr = f16_cache ? to_f16(pj) : static_cast<double>(static_cast<float>(pj));
                    for (std::int64_t e = 0; e < D; ++e)
                        att[static_cast<std::size_t>(hd * D + e)] += pr * v[static_cast<std::size_t>(j)][static_cast<std::size_t>(kh * D + e)];
                }
            }
            const std::vector<double> o = mul(wo, att);
            std::vector<double>& xt = x[static_cast<std::size_t>(t)];
            for (std::int64_t e = 0; e < E; ++e) xt[static_cast<std::size_t>(e)] += o[static_cast<std::size_t>(e)];
            const std::vector<double> hn = rms_norm(xt, fn, h.rms_eps);
            const std::vector<double> g = mul(wg, hn), u = mul(wu, hn);
            std::vector<double> gu(g.size());
            for (std::size_t i = 0; i < g.size(); ++i) gu[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
            const std::vector<double> dn = mul(wd, gu);
            for (std::int64_t e = 0; e < E; ++e) xt[static_cast<std::size_t>(e)] += dn[static_cast<std::size_t>(e)];
        }
    }
    const matrix on = load(f, "output_norm.weight");
    const matrix out = f.find_tensor("output.weight") ? load(f, "output.weight") : emb;
    return mul(out, rms_norm(x.back(), on, h.rms_eps));
}

}  // namespace llama_dref
