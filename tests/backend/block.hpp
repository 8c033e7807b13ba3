// A small llama-style transformer block for the backend tests: embedding lookup,
// rms_norm, q/k/v projections (f16 weights), rope, causal soft_max attention, output
// projection, residual, rms_norm, swiglu feed-forward, residual.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tessera/backend/cpu.hpp"
#include "tessera/backend/reference.hpp"
#include "tessera/backend/scheduler.hpp"
#include "tessera/backend/utils.hpp"
#include "tessera/graph/all.hpp"

namespace blocktest {

using namespace tessera;
using graph::any_tensor;

struct dims {
    std::int64_t D = 32, H = 4, F = 48, V = 16, T = 6;
    std::int64_t hd() const { return D / H; }
};

struct block {
    dims d;
    std::unique_ptr<graph::context> ctx;
    std::vector<graph::node*> weights;  // in creation order
    any_tensor tokens, pos, mask, out;
    graph::cgraph g;
};

inline std::vector<float> pseudo_random(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
    std::vector<float> v(n);
    std::uint32_t s = seed * 2654435761u + 1;
    for (auto& x : v) {
        s = s * 1664525u + 1013904223u;
        x = scale * (static_cast<float>(s >> 8) / 8388608.0f - 1.0f);
    }
    return v;
}

// Builds the block in a no_alloc context; weights are left without memory (the caller
// places them), inputs are flagged input.
inline block build(dims d = {}) {
    block b;
    b.d = d;
    b.ctx = std::make_unique<graph::context>(graph::context_options{true, 64, 1 << 16});
    auto& ctx = *b.ctx;
    auto w = [&](type_id t, std::array<std::int64_t, 4> ne, const char* name) {
        any_tensor x = graph::new_tensor(ctx, t, ne, name);
        b.weights.push_back(x.get());
        return x;
    };
    const auto D = d.D, H = d.H, F = d.F, V = d.V, T = d.T, hd = d.hd();
    any_tensor emb = w(type_id::f32, {D, V, 1, 1}, "tok_emb");
    any_tensor attn_norm = w(type_id::f32, {D, 1, 1, 1}, "attn_norm");
    any_tensor wq = w(type_id::f16, {D, D, 1, 1}, "wq");
    any_tensor wk = w(type_id::f16, {D, D, 1, 1}, "wk");
    any_tensor wv = w(type_id::f16, {D, D, 1, 1}, "wv");
    any_tensor wo = w(type_id::f32, {D, D, 1, 1}, "wo");
    any_tensor ffn_norm = w(type_id::f32, {D, 1, 1, 1}, "ffn_norm");
    any_tensor wgu = w(type_id::f16, {D, 2 * F, 1, 1}, "w_gate_up");
    any_tensor wdown = w(type_id::f32, {F, D, 1, 1}, "w_down");

    b.tokens = graph::new_tensor(ctx, type_id::i32, {T, 1, 1, 1}, "tokens");
    b.pos = graph::new_tensor(ctx, type_id::i32, {T, 1, 1, 1}, "pos");
    b.mask = graph::new_tensor(ctx, type_id::f32, {T, T, 1, 1}, "mask");
    b.tokens.set_input();
    b.pos.set_input();
    b.mask.set_input();

    graph::rope_params rp;
    rp.n_dims = static_cast<int>(hd);
    rp.mode = graph::rope_mode::neox;
    rp.freq_base = 10000.0f;

    any_tensor x = graph::get_rows(emb, b.tokens).set_name("x");
    any_tensor h = graph::mul(graph::rms_norm(x, 1e-5f), attn_norm).set_name("h");
    any_tensor q = graph::rope_ext(graph::reshape(graph::mul_mat(wq, h), {hd, H, T, 1}), b.pos, any_tensor(), rp).set_name("q");
    any_tensor k = graph::rope_ext(graph::reshape(graph::mul_mat(wk, h), {hd, H, T, 1}), b.pos, any_tensor(), rp).set_name("k");
    any_tensor v = graph::reshape(graph::mul_mat(wv, h), {hd, H, T, 1}).set_name("v");
    any_tensor qp = graph::permute(q, {0, 2, 1, 3});
    any_tensor kp = graph::permute(k, {0, 2, 1, 3});
    any_tensor kq = graph::mul_mat(kp, qp).set_name("kq");  // [T_kv, T_q, H]
    any_tensor p = graph::soft_max_ext(kq, b.mask, 1.0f / std::sqrt(static_cast<float>(hd))).set_name("attn");
    any_tensor vt = graph::cont(graph::permute(v, {1, 2, 0, 3})).set_name("vt");  // [T, hd, H]
    any_tensor kqv = graph::mul_mat(vt, p).set_name("kqv");                        // [hd, T, H]
    any_tensor merged = graph::reshape(graph::cont(graph::permute(kqv, {0, 2, 1, 3})), {D, T, 1, 1}).set_name("merged");
    any_tensor x2 = graph::add(x, graph::mul_mat(wo, merged)).set_name("x2");
    any_tensor h2 = graph::mul(graph::rms_norm(x2, 1e-5f), ffn_norm).set_name("h2");
    any_tensor act = graph::glu(graph::mul_mat(wgu, h2), graph::glu_op::swiglu).set_name("act");
    b.out = graph::add(x2, graph::mul_mat(wdown, act)).set_name("out");
    b.out.set_output();
    b.g.build_forward_expand(b.out);
    return b;
}

// Deterministic weight values (as f32; f16 tensors get them rounded).
inline void fill_weights(block& b) {
    std::uint32_t seed = 1;
    for (graph::node* w : b.weights) {
        const auto n = static_cast<std::size_t>(w->lay.nelements());
        const bool norm = w->name.find("norm") != std::string::npos;
        std::vector<float> v = pseudo_random(n, seed++, norm ? 0.5f : 0.4f);
        if (norm)
            for (auto& x : v) x += 1.0f;
        if (w->lay.type == type_id::f32) {
            backend::tensor_set(*w, v.data(), 0, n * 4);
        } else {
            std::vector<f16> h(n);
            for (std::size_t i = 0; i < n; ++i) h[i] = f16::from_float(v[i]);
            backend::tensor_set(*w, h.data(), 0, n * 2);
        }
    }
}

// shift varies the tokens (for computes that must differ).
inline void set_inputs(block& b, std::int64_t shift = 0) {
    const auto T = b.d.T;
    std::vector<std::int32_t> tok(static_cast<std::size_t>(T)), pos(static_cast<std::size_t>(T));
    for (std::int64_t i = 0; i < T; ++i) {
        tok[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + 3 + shift) % b.d.V);
        pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
    }
    std::vector<float> mask(static_cast<std::size_t>(T * T));
    for (std::int64_t r = 0; r < T; ++r)
        for (std::int64_t c = 0; c < T; ++c) mask[static_cast<std::size_t>(r * T + c)] = c <= r ? 0.0f : -INFINITY;
    backend::tensor_set(*b.tokens.get(), tok.data(), 0, tok.size() * 4);
    backend::tensor_set(*b.pos.get(), pos.data(), 0, pos.size() * 4);
    backend::tensor_set(*b.mask.get(), mask.data(), 0, mask.size() * 4);
}

// A block whose weights named in `on_dev` are in a buffer of `dev_buft` (a device's) and
// the others in a CPU buffer (both usage weights), the weights filled.
struct placed {
    block b;
    std::vector<backend::any_buffer> buffers;
};
inline placed place(dims d, const std::set<std::string>& on_dev, const backend::any_buffer_type& dev_buft) {
    placed p{build(d), {}};
    std::vector<graph::node*> dev_w, cpu_w;
    for (graph::node* w : p.b.weights) (on_dev.count(w->name) ? dev_w : cpu_w).push_back(w);
    if (!dev_w.empty()) p.buffers.push_back(backend::alloc_tensors(dev_w, dev_buft, backend::buffer_usage::weights));
    if (!cpu_w.empty()) p.buffers.push_back(backend::alloc_tensors(cpu_w, backend::cpu_buffer_type(), backend::buffer_usage::weights));
    fill_weights(p.b);
    return p;
}

// The block's output computed by the CPU backend alone (every tensor in CPU buffers).
inline std::vector<float> cpu_only(dims d = {}, std::int64_t shift = 0) {
    placed p = place(d, {}, backend::cpu_buffer_type());
    std::vector<graph::node*> rest;
    for (graph::node* n : p.b.g.leafs())
        if (!n->data) rest.push_back(n);
    for (graph::node* n : p.b.g.nodes()) rest.push_back(n);
    backend::any_buffer buf = backend::alloc_tensors(rest, backend::cpu_buffer_type());
    set_inputs(p.b, shift);
    backend::cpu_init(2).graph_compute(p.b.g);
    return backend::tensor_to_f32(*p.b.out.get());
}

}  // namespace blocktest
