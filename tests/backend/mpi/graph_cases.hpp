// Graphs for the MPI graph codec's tests, seeds and fuzzer (no doctest): one llama-like
// layer with every op graph::replayable lists, its tensors in one CPU buffer.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/cpu.hpp"
#include "tessera/backend/utils.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/graph/all.hpp"

namespace codec_test {

using namespace tessera;
using namespace tessera::backend;
using graph::any_tensor;
using graph::node;
using graph::op_kind;

// A graph with every replayable op, in one no_alloc context, all of its tensors in one
// CPU buffer, the inputs filled with fixed pseudo-random values.
struct test_graph {
    std::unique_ptr<graph::context> ctx = std::make_unique<graph::context>(graph::context_options{true});
    graph::cgraph g;
    any_buffer buf;
    std::vector<std::byte> before;  // the buffer's bytes before computing

    void finish(std::initializer_list<any_tensor> outs) {
        for (const any_tensor& t : outs) g.build_forward_expand(t);
        buf = alloc_ctx_tensors(*ctx, cpu_buffer_type());
        std::uint32_t s = 12345;
        auto next = [&s] {
            s = s * 1664525u + 1013904223u;
            return s >> 8;
        };
        for (std::size_t i = 0; i < ctx->size(); ++i) {
            node& n = (*ctx)[i];
            if (n.op != op_kind::none || n.is_view()) continue;
            const auto count = static_cast<std::size_t>(n.lay.nelements());
            const std::string_view nm = n.name;
            if (n.lay.type == type_id::f32) {
                auto* p = reinterpret_cast<float*>(n.data);
                for (std::size_t k = 0; k < count; ++k) p[k] = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
                if (nm == "mask")  // causal: token i sees slots 0 .. 2 + i
                    for (std::int64_t r = 0; r < n.lay.ne[1]; ++r)
                        for (std::int64_t c = 0; c < n.lay.ne[0]; ++c) p[r * n.lay.ne[0] + c] = c > 2 + r ? -INFINITY : 0.0f;
            } else if (n.lay.type == type_id::f16) {
                auto* p = reinterpret_cast<std::uint16_t*>(n.data);
                for (std::size_t k = 0; k < count; ++k) p[k] = tessera::detail::f32_bits_to_f16_bits(std::bit_cast<std::uint32_t>(static_cast<float>(next() % 2001) / 1000.0f - 1.0f));
            } else if (n.lay.type == type_id::i32) {
                auto* p = reinterpret_cast<std::int32_t*>(n.data);
                const std::uint32_t mod = nm == "tokens" ? 10 : nm == "ids" ? 3 : 64;
                for (std::size_t k = 0; k < count; ++k) p[k] = nm == "pos" ? static_cast<std::int32_t>(2 + k) : static_cast<std::int32_t>(next() % mod);
            } else if (n.lay.type == type_id::i64) {
                auto* p = reinterpret_cast<std::int64_t*>(n.data);
                for (std::size_t k = 0; k < count; ++k) p[k] = static_cast<std::int64_t>(2 + k);
            }
        }
        before.assign(buf.base(), buf.base() + buf.size());
    }
    std::vector<std::byte> bytes() const { return {buf.base(), buf.base() + buf.size()}; }
    void restore() { std::memcpy(buf.base(), before.data(), before.size()); }
    // the whole graph computed by the CPU backend; the buffer's bytes afterwards
    std::vector<std::byte> reference() {
        restore();
        cpu_backend(1).graph_compute(g);
        auto r = bytes();
        restore();
        return r;
    }
};

// One llama-like layer (flash attention and the mul_mat + soft_max path, KV cache
// writes, rope normal and neox, swiglu), and the other replayable ops around it.
inline test_graph make_llama_like() {
    using namespace graph;
    test_graph t;
    context& c = *t.ctx;
    const std::int64_t E = 16, D = 8, H = 2, HKV = 1, n = 3, n_kv = 5, V = 10, FF = 24;
    any_tensor tok_embd = new_tensor(c, type_id::f32, {E, V, 1, 1}, "tok_embd");
    any_tensor tokens = new_tensor(c, type_id::i32, {n, 1, 1, 1}, "tokens");
    any_tensor pos = new_tensor(c, type_id::i32, {n, 1, 1, 1}, "pos");
    any_tensor kv_idx = new_tensor(c, type_id::i64, {n, 1, 1, 1}, "kv_idx");
    any_tensor mask = new_tensor(c, type_id::f32, {n_kv, n, 1, 1}, "mask");
    any_tensor k_cache = new_tensor(c, type_id::f32, {D * HKV, n_kv, 1, 1}, "k_cache");
    any_tensor v_cache = new_tensor(c, type_id::f32, {D * HKV, n_kv, 1, 1}, "v_cache");
    any_tensor attn_norm = new_tensor(c, type_id::f32, {E, 1, 1, 1}, "attn_norm");
    any_tensor wq = new_tensor(c, type_id::f32, {E, E, 1, 1}, "wq");
    any_tensor wk = new_tensor(c, type_id::f16, {E, D * HKV, 1, 1}, "wk");
    any_tensor wv = new_tensor(c, type_id::f32, {E, D * HKV, 1, 1}, "wv");
    any_tensor wo = new_tensor(c, type_id::f32, {E, E, 1, 1}, "wo");
    any_tensor w_gate = new_tensor(c, type_id::f16, {E, FF, 1, 1}, "w_gate");
    any_tensor w_up = new_tensor(c, type_id::f32, {E, FF, 1, 1}, "w_up");
    any_tensor w_down = new_tensor(c, type_id::f32, {FF, E, 1, 1}, "w_down");
    rope_params rp{D};
    rp.n_ctx_orig = 64;

    any_tensor x = get_rows(tok_embd, tokens).set_name("inp_embd");
    any_tensor cur = mul(rms_norm(x, 1e-5f), attn_norm).set_name("attn_norm-0");
    any_tensor q = reshape(mul_mat(wq, cur), {D, H, n, 1});
    any_tensor k = reshape(mul_mat(wk, cur), {D, HKV, n, 1});
    any_tensor v = mul_mat(wv, cur).set_name("Vcur-0");
    q = rope_ext(q, pos, any_tensor(), rp).set_name("Qcur-0");
    k = rope_ext(k, pos, any_tensor(), rp).set_name("Kcur-0");
    any_tensor kc = set_rows(k_cache, reshape(k, {D * HKV, n, 1, 1}), kv_idx);
    any_tensor vc = set_rows(v_cache, v, kv_idx);
    const std::size_t row = 4 * static_cast<std::size_t>(D * HKV), head = 4 * static_cast<std::size_t>(D);
    any_tensor K = view(kc, {D, n_kv, HKV, 1}, {row, head, row * static_cast<std::size_t>(n_kv)}, 0);
    any_tensor Vv = view(vc, {D, n_kv, HKV, 1}, {row, head, row * static_cast<std::size_t>(n_kv)}, 0);
    any_tensor Q = permute(q, {0, 2, 1, 3});
    any_tensor attn = reshape(flash_attn_ext(Q, K, Vv, mask, 0.35f), {E, n, 1, 1}).set_name("kqv_out-0");
    // the other attention path: mul_mat + soft_max, a transposed V made contiguous, f16 probabilities
    any_tensor kq = soft_max_ext(mul_mat(K, Q), mask, 0.35f);
    any_tensor vt = cont(permute(Vv, {1, 0, 2, 3}));
    any_tensor kqv = mul_mat(vt, kq);
    any_tensor kq16 = cast(kq, type_id::f16);
    any_tensor attn2 = reshape(cont(permute(kqv, {0, 2, 1, 3})), {E, n, 1, 1});
    x = add(x, mul_mat(wo, add(attn, attn2))).set_name("ffn_inp-0");
    cur = mul(rms_norm(x, 1e-5f), attn_norm);
    any_tensor ff = swiglu_split(mul_mat(w_gate, cur), mul_mat(w_up, cur));
    x = add(x, mul_mat(w_down, ff)).set_name("l_out-0");

    // everything else replay rebuilds
    any_tensor e = new_tensor(c, type_id::f32, {8, 4, 2, 1}, "e");
    any_tensor e2 = new_tensor(c, type_id::f32, {8, 4, 2, 1}, "e2");
    any_tensor one = new_tensor(c, type_id::f32, {1, 1, 1, 1}, "one");
    any_tensor row8 = new_tensor(c, type_id::f32, {8, 1, 1, 1}, "row8");
    any_tensor m = sub(div(e, add1(sqr(e2), one)), row8);
    m = add(m, sqrt(sqr(e)));
    m = add(m, log(add1(sqr(e2), one)));
    m = mul(sin(m), cos(e2));
    m = scale(m, 0.5f, 0.25f);
    m = clamp(m, -0.4f, 0.4f);
    m = leaky_relu(m, 0.1f);
    m = unary(m, unary_op::gelu);
    any_tensor norms = add(norm(m, 1e-5f), l2_norm(e2, 1e-6f));
    any_tensor masked = diag_mask_zero(diag_mask_inf(reshape(norms, {8, 8, 1, 1}), 1), 2);
    any_tensor sm = soft_max_ext(masked, any_tensor(), 1.0f);
    any_tensor st = concat(sm, repeat(row8, {8, 8, 1, 1}), 1);
    any_tensor sorted = argsort(st, sort_order::desc);
    any_tensor topk = top_k(st, 3);
    any_tensor sums = add(sum_rows(st), mean(st));
    any_tensor total = sum(sums);
    any_tensor am = argmax(reshape(st, {8, 16, 1, 1}));
    any_tensor g1 = glu(new_tensor(c, type_id::f32, {8, 3, 1, 1}, "glu_in"), glu_op::geglu, glu_order::swapped);
    any_tensor copied = cpy(g1, new_tensor(c, type_id::f16, {4, 3, 1, 1}, "cpy_dst"));
    any_tensor dupd(graph::detail::dup(e.get(), type_id::f32, op_kind::dup));
    // mixture of experts: 3 experts, 2 used per token
    any_tensor as = new_tensor(c, type_id::f32, {8, 5, 3, 1}, "experts");
    any_tensor ids = new_tensor(c, type_id::i32, {2, 3, 1, 1}, "ids");
    any_tensor moe = mul_mat_id(as, new_tensor(c, type_id::f32, {8, 1, 3, 1}, "moe_in"), ids);
    // in-place forms, a neox rope, a rope with frequency factors
    any_tensor ip(graph::detail::unary(op_kind::scale, scale_params{2.0f, 0.0f}, add_inplace(dupd, e2).get(), true));
    any_tensor h3 = new_tensor(c, type_id::f32, {8, 2, 3, 1}, "h3");
    rope_params rn{8};
    rn.mode = rope_mode::neox;
    any_tensor rope_n = rope_ext(h3, pos, new_tensor(c, type_id::f32, {4, 1, 1, 1}, "freq"), rn);
    any_tensor rope_i(graph::detail::rope(op_kind::rope, graph::detail::norm(op_kind::rms_norm, graph::detail::dup(h3.get(), type_id::f32, op_kind::cont), 1e-6f, true),
                                          pos.get(), nullptr, rp, true));
    t.finish({x, kq16, sorted, topk, total, am, copied, moe, ip, rope_n, rope_i});
    return t;
}

}  // namespace codec_test
