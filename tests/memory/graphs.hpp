// Test and benchmark graphs for the planner: a llama-style transformer stack and
// random DAGs. Shared by tests/memory and bench/bench_memory.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "tessera/memory/planner.hpp"

namespace test_graphs {

using namespace tessera::memory;

// A layout key from up to three extents (element type fixed to f32 here); views
// that permute or reshape get a different key than their parent.
constexpr std::uint64_t lay(std::uint64_t a, std::uint64_t b = 1, std::uint64_t c = 1, std::uint64_t perm = 0) {
    return ((a * 1000003u + b) * 1000033u + c) * 8u + perm;
}

struct graph_builder {
    std::vector<tensor_desc> t;
    int add(tensor_desc d) {
        t.push_back(d);
        return static_cast<int>(t.size()) - 1;
    }
};

// A llama-like decoder: `layers` blocks of attention + SwiGLU FFN over T tokens with
// width D, H heads, FFN width F, then a final norm and a projection to V logits.
// Weights are external; the embeddings, positions and mask are inputs; the logits
// are the output. Ops that ggml runs in place are marked can_inplace.
inline std::vector<tensor_desc> transformer(std::size_t T, std::size_t D, std::size_t H, std::size_t F,
                                            std::size_t V, int layers) {
    const std::size_t f = 4, dh = D / H;
    graph_builder g;
    const int x0 = g.add(input(T * D * f).with_layout(lay(D, T)));
    const int pos = g.add(input(T * 4).with_layout(lay(T, 1, 1, 7)));
    const int mask = g.add(input(T * T * f).with_layout(lay(T, T)));
    auto w = [&](std::size_t n) { return g.add(external(n * f)); };
    auto unary = [&](int a, std::uint64_t l, std::size_t bytes) { return g.add(op(bytes, {a}, true).with_layout(l)); };
    auto binary = [&](int a, int b, std::uint64_t l, std::size_t bytes, bool inplace) {
        return g.add(op(bytes, {a, b}, inplace).with_layout(l));
    };
    const std::uint64_t lDT = lay(D, T), lFT = lay(F, T);
    int x = x0;
    for (int L = 0; L < layers; ++L) {
        const int wn1 = w(D), wq = w(D * D), wk = w(D * D), wv = w(D * D), wo = w(D * D);
        const int wn2 = w(D), wg = w(D * F), wu = w(D * F), wd = w(F * D);
        const std::size_t act = T * D * f;
        int n1 = unary(x, lDT, act);                        // rms_norm
        int m1 = binary(n1, wn1, lDT, act, true);           // mul by norm weight
        int q = binary(wq, m1, lDT, act, false);            // mul_mat
        int k = binary(wk, m1, lDT, act, false);
        int v = binary(wv, m1, lDT, act, false);
        int q3 = g.add(view(q, 0, act, {q}).with_layout(lay(dh, H, T)));  // reshape_3d
        int k3 = g.add(view(k, 0, act, {k}).with_layout(lay(dh, H, T)));
        int qr = binary(q3, pos, lay(dh, H, T), act, true);  // rope
        int kr = binary(k3, pos, lay(dh, H, T), act, true);
        int qp = g.add(view(qr, 0, act, {qr}).with_layout(lay(dh, T, H, 1)));  // permute
        int kp = g.add(view(kr, 0, act, {kr}).with_layout(lay(dh, T, H, 1)));
        int kq = binary(kp, qp, lay(T, T, H), T * T * H * f, false);  // mul_mat
        int sm = binary(kq, mask, lay(T, T, H), T * T * H * f, true);  // soft_max_ext
        int v3 = g.add(view(v, 0, act, {v}).with_layout(lay(dh, H, T)));
        int vt = unary(v3, lay(T, dh, H), act);              // cont(permute): not in-place (layout differs)
        g.t.back().can_inplace = false;
        int kqv = binary(vt, sm, lay(dh, T, H), act, false);  // mul_mat
        int kqvp = g.add(view(kqv, 0, act, {kqv}).with_layout(lay(dh, H, T, 2)));  // permute
        int cur = unary(kqvp, lDT, act);                     // cont
        g.t.back().can_inplace = false;
        int o = binary(wo, cur, lDT, act, false);            // mul_mat
        int r1 = binary(o, x, lDT, act, true);               // residual add
        int n2 = unary(r1, lDT, act);                        // rms_norm
        int m2 = binary(n2, wn2, lDT, act, true);
        int gt = binary(wg, m2, lFT, T * F * f, false);
        int up = binary(wu, m2, lFT, T * F * f, false);
        int sg = unary(gt, lFT, T * F * f);                  // silu
        int gu = binary(sg, up, lFT, T * F * f, true);       // mul
        int dn = binary(wd, gu, lDT, act, false);
        x = binary(dn, r1, lDT, act, true);                  // residual add
    }
    const int wn = w(D), wout = w(D * V);
    int n = unary(x, lDT, T * D * f);
    int m = binary(n, wn, lDT, T * D * f, true);
    g.add(op(T * V * f, {wout, m}).with_layout(lay(V, T)).as_output());
    return g.t;
}

// A random DAG of n tensors with inputs, external tensors, outputs, views (of
// nodes, inputs and externals, also views of views), in-place ops and tensors
// nobody reads. Sizes are multiples of 4 bytes (floats); view offsets too.
inline std::vector<tensor_desc> random_dag(std::mt19937_64& rng, int n) {
    auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    auto chance = [&](int pct) { return uni(0, 99) < pct; };
    std::vector<tensor_desc> g;
    const int n_in = uni(1, 3);
    for (int i = 0; i < n; ++i) {
        tensor_desc d;
        const std::size_t elems = static_cast<std::size_t>(uni(1, 6) * (chance(50) ? 1 : uni(1, 24)));
        if (i < n_in) {
            d = input(elems * 4);
        } else if (chance(8)) {
            d = external(elems * 4);
        } else if (chance(15)) {
            const int of = uni(0, i - 1);
            const std::size_t pe = g[static_cast<std::size_t>(of)].size / 4;
            const std::size_t off = static_cast<std::size_t>(uni(0, static_cast<int>(pe) - 1));
            const std::size_t len = static_cast<std::size_t>(uni(1, static_cast<int>(pe - off)));
            if (chance(50)) d = view(of, 0, pe * 4, {of});  // whole-tensor reshape
            else d = view(of, off * 4, len * 4, {of});
        } else {
            const int ns = uni(1, 3);
            d = op(elems * 4, {}, chance(60));
            for (int k = 0; k < ns; ++k) {
                // mostly recent sources, sometimes far back
                const int s = chance(70) ? uni(i > 4 ? i - 4 : 0, i - 1) : uni(0, i - 1);
                d.srcs[static_cast<std::size_t>(d.n_srcs++)] = s;
            }
            if (chance(40)) {  // same shape as its first source: a candidate for in-place
                d.size = g[static_cast<std::size_t>(d.srcs[0])].size;
                d.layout = g[static_cast<std::size_t>(d.srcs[0])].layout;
            }
        }
        if (chance(5)) d.layout = static_cast<std::uint64_t>(uni(1, 3));
        if (!d.is(tensor_flags::external) && chance(10)) d = d.as_output();
        g.push_back(d);
    }
    return g;
}

}  // namespace test_graphs
