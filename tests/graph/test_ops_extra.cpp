// add_id, xielu, solve_tri, the DeepSeek-V4 hyper-connection ops, gated_delta_net and
// lightning_indexer against double-precision references written from their
// definitions (harness.hpp: every arch, 1 and 2 threads), and the errors their
// builders and the executor give for bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

namespace {


double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

template <class F>
void throws_naming(F&& fn, const char* op, const char* what) {
    try {
        fn();
        FAIL("no error for ", op);
    } catch (const tessera::error& e) {
        INFO(e.what());
        CHECK(std::string(e.what()).find(op) != std::string::npos);
        CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
}

}  // namespace

// ---- add_id, xielu ----------------------------------------------------------------------------------

TEST_CASE("extra ops: add_id adds the bias row of each selected expert, float types, views") {
    struct ac {
        ne4 a;
        std::int64_t n_expert;
    };
    for (ac c : {ac{{16, 4, 5, 1}, 8}, ac{{33, 2, 3, 1}, 4}, ac{{1, 1, 1, 1}, 1}, ac{{64, 6, 7, 1}, 32}})
        for (type_id ta : float_types)
            for (type_id tb : {type_id::f32, ta})
                for (bool strided : {false, true})
                    check("add_id " + tn(ta) + sh(c.a) + " + " + tn(tb) + " experts " + std::to_string(c.n_expert) + (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* a = strided_input(ctx, ta, c.a, strided);
                              node* bias = strided_input(ctx, tb, {c.a[0], c.n_expert, 1, 1}, strided);
                              node* ids = ctx.new_tensor(type_id::i32, {c.a[1], c.a[2], 1, 1});
                              b.out = add_id(any_tensor(a), any_tensor(bias), any_tensor(ids)).get();
                              b.inputs = {a, bias, ids};
                              b.init = {{ids, indices_below(c.n_expert)}};
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = in[0];
                              for (std::int64_t t = 0; t < c.a[2]; ++t)
                                  for (std::int64_t u = 0; u < c.a[1]; ++u)
                                      for (std::int64_t i = 0; i < c.a[0]; ++i)
                                          o.at(i, u, t) += in[1].at(i, static_cast<std::int64_t>(in[2].at(u, t)));
                              return o;
                          });
    for (int threads : {1, 2}) {  // an expert id past b's rows: an error at compute, no wild read
        context ctx;
        node* a = ctx.new_tensor(type_id::f32, {4, 2, 2, 1});
        node* bias = ctx.new_tensor(type_id::f32, {4, 3, 1, 1});
        node* ids = ctx.new_tensor(type_id::i32, {2, 2, 1, 1});
        const std::int32_t v[4] = {0, 2, 3, 1};
        std::memcpy(ids->data, v, sizeof v);
        cgraph g;
        g.build_forward_expand(add_id(any_tensor(a), any_tensor(bias), any_tensor(ids)));
        CHECK_THROWS_WITH_AS(backend::cpu::compute(g, threads), doctest::Contains("expert id 3 at (0, 1)"), tessera::error);
    }
}

TEST_CASE("extra ops: unary xielu with its four parameters, float types, views") {
    struct xp {
        float alpha_n, alpha_p, beta, eps;
    };
    for (xp q : {xp{0.8f, 0.8f, 0.5f, -1e-6f}, xp{-1.5f, 2.0f, 0.25f, -0.5f}})
        for (ne4 s : {ne4{128, 2, 2, 2}, ne4{5, 7, 11, 13}})
            for (type_id t : float_types)
                for (bool strided : {false, true})
                    check("xielu " + tn(t) + sh(s) + " alpha_n " + std::to_string(q.alpha_n) + (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, t, s, strided);
                              b.out = xielu(any_tensor(x), q.alpha_n, q.alpha_p, q.beta, q.eps).get();
                              b.inputs = {x};
                              b.lo = -5, b.hi = 5;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = in[0];
                              const double an = q.beta + softplus(q.alpha_n), ap = softplus(q.alpha_p);
                              for (double& x : o.v)
                                  x = x > 0 ? ap * x * x + q.beta * x : an * (std::expm1(std::min(x, static_cast<double>(q.eps))) - x) + q.beta * x;
                              return o;
                          });
    context ctx({.no_alloc = true});
    throws_naming([&] { unary(any_tensor(ctx.new_tensor(type_id::f32, {4, 1, 1, 1})), unary_op::xielu); }, "xielu", "parameters");
    tensor<f16, 2> r = xielu(new_tensor<f16, 2>(ctx, {4, 3}), 0.8f, 0.8f, 0.5f, -1e-6f);
    CHECK(r.get()->param<unary_params>().alpha_p == doctest::Approx(softplus(0.8)));  // stored as ggml stores it
    CHECK(r.get()->param<unary_params>().alpha_n == doctest::Approx(0.5 + softplus(0.8)));
}

// ---- solve_tri ----------------------------------------------------------------------------------

TEST_CASE("extra ops: solve_tri (left, lower, non-unit) reads only the lower triangle, batches, views") {
    struct sc {
        std::int64_t n, k, b2, b3;
    };
    for (sc c : {sc{5, 3, 1, 1}, sc{64, 17, 2, 3}, sc{1, 1, 1, 1}, sc{128, 33, 1, 1}, sc{9, 1, 4, 1}})
        for (bool strided : {false, true})
            check("solve_tri n " + std::to_string(c.n) + " k " + std::to_string(c.k) + " batch " + std::to_string(c.b2) + "x" +
                      std::to_string(c.b3) + (strided ? " strided B" : ""),
                  [&](context& ctx) {
                      built b;
                      node* A = ctx.new_tensor(type_id::f32, {c.n, c.n, c.b2, c.b3});
                      node* B = strided_input(ctx, type_id::f32, {c.k, c.n, c.b2, c.b3}, strided);
                      b.out = solve_tri(any_tensor(A), any_tensor(B)).get();
                      b.inputs = {A, B};
                      // a well-conditioned lower part, a diagonal in [1, 2], random values above it
                      b.init = {{A, [n = c.n](node* t, std::mt19937& rng) {
                                     std::uniform_real_distribution<double> u(-1, 1);
                                     for (std::int64_t e = 0; e < t->lay.nelements(); ++e) {
                                         const std::int64_t col = e % n, row = (e / n) % n;
                                         const double v = col < row ? u(rng) / static_cast<double>(n) : col == row ? 1.5 + u(rng) / 2 : 10 * u(rng);
                                         write_elem(type_id::f32, t->data + static_cast<std::size_t>(e) * 4, v);
                                     }
                                 }}};
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host x = in[1];
                      for (std::int64_t i3 = 0; i3 < c.b3; ++i3)
                          for (std::int64_t i2 = 0; i2 < c.b2; ++i2)
                              for (std::int64_t col = 0; col < c.k; ++col)
                                  for (std::int64_t i = 0; i < c.n; ++i) {
                                      double s = in[1].at(col, i, i2, i3);
                                      for (std::int64_t t = 0; t < i; ++t) s -= in[0].at(t, i, i2, i3) * x.at(col, t, i2, i3);
                                      x.at(col, i, i2, i3) = s / in[0].at(i, i, i2, i3);
                                  }
                      return x;
                  });
    context ctx({.no_alloc = true});
    auto t = [&](type_id ty, ne4 ne) { return any_tensor(ctx.new_tensor(ty, ne)); };
    throws_naming([&] { solve_tri(t(type_id::f32, {4, 3, 1, 1}), t(type_id::f32, {2, 4, 1, 1})); }, "solve_tri", "square");
    throws_naming([&] { solve_tri(t(type_id::f32, {4, 4, 1, 1}), t(type_id::f32, {2, 5, 1, 1})); }, "solve_tri", "ne1");
    throws_naming([&] { solve_tri(t(type_id::f32, {4, 4, 2, 1}), t(type_id::f32, {2, 4, 1, 1})); }, "solve_tri", "batch");
    throws_naming([&] { solve_tri(t(type_id::f16, {4, 4, 1, 1}), t(type_id::f32, {2, 4, 1, 1})); }, "solve_tri", "f32");
    // the forms ggml's CPU does not solve build, and the executor refuses them by name
    for (auto [left, lower, uni] : {std::tuple{true, false, false}, {true, true, true}, {false, true, false}}) {
        cgraph g;
        g.build_forward_expand(solve_tri(t(type_id::f32, {4, 4, 1, 1}), t(type_id::f32, {4, 4, 1, 1}),
                                         {left ? tri_side::left : tri_side::right, lower ? tri_part::lower : tri_part::upper,
                                          uni ? tri_diag::unit : tri_diag::non_unit}));
        backend::cpu::executor ex(1);
        CHECK_THROWS_WITH_AS((void)ex.plan(g), doctest::Contains("solve_tri other than left, lower, non-unit"), tessera::error);
    }
}

// ---- DeepSeek: hyper-connections, lightning indexer -----------------------------------------------

TEST_CASE("extra ops: dsv4_hc_comb, softmax then Sinkhorn normalization per token") {
    for (std::int64_t T : {1, 5, 257})
        for (int n_iter : {1, 2, 20})
            for (float eps : {1e-6f, 1e-2f})
                for (bool strided : {false, true})
                    check("dsv4_hc_comb T " + std::to_string(T) + " n_iter " + std::to_string(n_iter) + " eps " + std::to_string(eps) +
                              (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* mixes = strided_input(ctx, type_id::f32, {24, T, 1, 1}, strided);
                              node* scale = ctx.new_tensor(type_id::f32, {4, 1, 1, 1});
                              node* base = ctx.new_tensor(type_id::f32, {24, 1, 1, 1});
                              b.out = dsv4_hc_comb(any_tensor(mixes), any_tensor(scale), any_tensor(base), eps, n_iter).get();
                              b.inputs = {mixes, scale, base};
                              b.init = {{scale, uniform(0.5, 1.5)}, {base, uniform(-0.4, 0.4)}};
                              b.lo = -2, b.hi = 2;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros({4, 4, T, 1});
                              for (std::int64_t t = 0; t < T; ++t) {
                                  double c[4][4];  // c[src][dst]
                                  for (int s = 0; s < 4; ++s) {
                                      double mx = -INFINITY, sum = 0;
                                      for (int d = 0; d < 4; ++d)
                                          mx = std::max(mx, c[s][d] = in[0].at(8 + d + 4 * s, t) * in[1].v[2] + in[2].v[8 + d + 4 * s]);
                                      for (int d = 0; d < 4; ++d) sum += (c[s][d] = std::exp(c[s][d] - mx));
                                      for (int d = 0; d < 4; ++d) c[s][d] = c[s][d] / sum + eps;
                                  }
                                  const auto over_src = [&] {
                                      for (int d = 0; d < 4; ++d) {
                                          double sum = eps;
                                          for (int s = 0; s < 4; ++s) sum += c[s][d];
                                          for (int s = 0; s < 4; ++s) c[s][d] /= sum;
                                      }
                                  };
                                  const auto over_dst = [&] {
                                      for (int s = 0; s < 4; ++s) {
                                          double sum = eps;
                                          for (int d = 0; d < 4; ++d) sum += c[s][d];
                                          for (int d = 0; d < 4; ++d) c[s][d] /= sum;
                                      }
                                  };
                                  over_src();
                                  for (int it = 1; it < n_iter; ++it) over_dst(), over_src();
                                  for (int s = 0; s < 4; ++s)
                                      for (int d = 0; d < 4; ++d) o.at(d, s, t) = c[s][d];
                              }
                              return o;
                          });
}

TEST_CASE("extra ops: dsv4_hc_pre and dsv4_hc_post, hyper-connection counts, views") {
    for (std::int64_t E : {24, 33, 256})
        for (std::int64_t hc : {4, 1, 3})
            for (std::int64_t T : {1, 5, 17})
                for (bool strided : {false, true}) {
                    check("dsv4_hc_pre E " + std::to_string(E) + " hc " + std::to_string(hc) + " T " + std::to_string(T) + (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, type_id::f32, {E, hc, T, 1}, strided);
                              node* w = strided_input(ctx, type_id::f32, {hc, T, 1, 1}, strided);
                              b.out = dsv4_hc_pre(any_tensor(x), any_tensor(w)).get();
                              b.inputs = {x, w};
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros({E, T, 1, 1});
                              for (std::int64_t t = 0; t < T; ++t)
                                  for (std::int64_t h = 0; h < hc; ++h)
                                      for (std::int64_t i = 0; i < E; ++i) o.at(i, t) += in[0].at(i, h, t) * in[1].at(h, t);
                              return o;
                          });
                    check("dsv4_hc_post E " + std::to_string(E) + " hc " + std::to_string(hc) + " T " + std::to_string(T) + (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, type_id::f32, {E, T, 1, 1}, strided);
                              node* res = strided_input(ctx, type_id::f32, {E, hc, T, 1}, strided);
                              node* post = ctx.new_tensor(type_id::f32, {hc, T, 1, 1});
                              node* comb = strided_input(ctx, type_id::f32, {hc, hc, T, 1}, strided);
                              b.out = dsv4_hc_post(any_tensor(x), any_tensor(res), any_tensor(post), any_tensor(comb)).get();
                              b.inputs = {x, res, post, comb};
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros({E, hc, T, 1});
                              for (std::int64_t t = 0; t < T; ++t)
                                  for (std::int64_t d = 0; d < hc; ++d)
                                      for (std::int64_t i = 0; i < E; ++i) {
                                          double s = in[0].at(i, t) * in[2].at(d, t);
                                          for (std::int64_t src = 0; src < hc; ++src) s += in[1].at(i, src, t) * in[3].at(d, src, t);
                                          o.at(i, d, t) = s;
                                      }
                              return o;
                          });
                }
    context ctx({.no_alloc = true});
    auto t = [&](ne4 ne) { return any_tensor(ctx.new_tensor(type_id::f32, ne)); };
    throws_naming([&] { dsv4_hc_comb(t({20, 3, 1, 1}), t({3, 1, 1, 1}), t({24, 1, 1, 1}), 1e-6f, 2); }, "dsv4_hc_comb", "mixes");
    throws_naming([&] { dsv4_hc_comb(t({24, 3, 1, 1}), t({2, 1, 1, 1}), t({24, 1, 1, 1}), 1e-6f, 2); }, "dsv4_hc_comb", "at least 3");
    throws_naming([&] { dsv4_hc_comb(t({24, 3, 1, 1}), t({3, 1, 1, 1}), t({24, 1, 1, 1}), 1e-6f, 0); }, "dsv4_hc_comb", "n_iter");
    throws_naming([&] { dsv4_hc_pre(t({8, 4, 3, 1}), t({4, 2, 1, 1})); }, "dsv4_hc_pre", "w");
    throws_naming([&] { dsv4_hc_post(t({8, 3, 1, 1}), t({8, 4, 3, 1}), t({4, 3, 1, 1}), t({4, 3, 3, 1})); }, "dsv4_hc_post", "comb");
}

TEST_CASE("extra ops: lightning_indexer, K of float and block types, mask broadcast over streams, -inf mask") {
    struct lc {
        std::int64_t D, H, n_q, n_kv, S, m3;
    };
    for (lc c : {lc{128, 4, 7, 65, 1, 1}, lc{32, 3, 1, 1, 2, 1}, lc{64, 8, 5, 256, 2, 2}, lc{32, 1, 3, 17, 3, 1}})
        for (type_id tk : {type_id::f32, type_id::f16, type_id::bf16, type_id::q8_0, type_id::q4_0})
            for (bool padded_mask : {false, true})
                check("lightning_indexer D " + std::to_string(c.D) + " H " + std::to_string(c.H) + " n_q " + std::to_string(c.n_q) + " n_kv " +
                          std::to_string(c.n_kv) + " S " + std::to_string(c.S) + " m3 " + std::to_string(c.m3) + " K " + tn(tk) +
                          (padded_mask ? " padded mask" : ""),
                      [&](context& ctx) {
                          built b;
                          node* q = ctx.new_tensor(type_id::f32, {c.D, c.H, c.n_q, c.S});
                          node* k = ctx.new_tensor(tk, {c.D, 1, c.n_kv, c.S});
                          node* w = ctx.new_tensor(type_id::f32, {c.H, c.n_q, 1, c.S});
                          node* m = ctx.new_tensor(type_id::f16, {c.n_kv, c.n_q + (padded_mask ? 3 : 0), 1, c.m3});
                          b.out = lightning_indexer(any_tensor(q), any_tensor(k), any_tensor(w), any_tensor(m)).get();
                          b.inputs = {q, k, w, m};
                          b.max_nmse = 1e-6;  // test-backend-ops' bound for this op
                          b.init = {{m, [](node* t, std::mt19937& rng) {  // a fifth of the keys masked out
                                         std::uniform_real_distribution<double> u(-1, 1);
                                         for (std::int64_t i = 0; i < t->lay.nelements(); ++i)
                                             write_elem(type_id::f16, t->data + static_cast<std::size_t>(i) * 2, u(rng) < -0.6 ? -INFINITY : u(rng));
                                     }}};
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          const host &q = in[0], &k = in[1], &w = in[2], &m = in[3];
                          host o = host::zeros({c.n_kv, c.n_q, 1, c.S});
                          for (std::int64_t s = 0; s < c.S; ++s)
                              for (std::int64_t t = 0; t < c.n_q; ++t)
                                  for (std::int64_t j = 0; j < c.n_kv; ++j) {
                                      double score = 0;
                                      for (std::int64_t h = 0; h < c.H; ++h) {
                                          double dot = 0;
                                          for (std::int64_t i = 0; i < c.D; ++i) dot += q.at(i, h, t, s) * k.at(i, 0, j, s);
                                          score += std::max(dot, 0.0) * w.at(h, t, 0, s);
                                      }
                                      o.at(j, t, 0, s) = score + m.at(j, t, 0, s % c.m3);
                                  }
                          return o;
                      });
    context ctx({.no_alloc = true});
    auto t = [&](type_id ty, ne4 ne) { return any_tensor(ctx.new_tensor(ty, ne)); };
    const auto f = type_id::f32;
    throws_naming([&] { lightning_indexer(t(f, {32, 4, 5, 1}), t(f, {32, 2, 9, 1}), t(f, {4, 5, 1, 1}), t(type_id::f16, {9, 5, 1, 1})); },
                  "lightning_indexer", "[D, 1, n_kv, S]");
    throws_naming([&] { lightning_indexer(t(f, {32, 4, 5, 1}), t(f, {32, 1, 9, 1}), t(f, {4, 4, 1, 1}), t(type_id::f16, {9, 5, 1, 1})); },
                  "lightning_indexer", "w");
    throws_naming([&] { lightning_indexer(t(f, {32, 4, 5, 2}), t(f, {32, 1, 9, 2}), t(f, {4, 5, 1, 2}), t(type_id::f16, {9, 4, 1, 1})); },
                  "lightning_indexer", "mask");
    throws_naming([&] { lightning_indexer(t(f, {32, 4, 5, 1}), t(type_id::i32, {32, 1, 9, 1}), t(f, {4, 5, 1, 1}), t(type_id::f16, {9, 5, 1, 1})); },
                  "lightning_indexer", "block type");
}

// ---- gated_delta_net --------------------------------------------------------------------------------

TEST_CASE("extra ops: gated_delta_net, scalar and per-channel (KDA) gates, head and sequence broadcast, snapshots") {
    struct gc {
        std::int64_t S, Hk, Hv, T, n_s, nq, K;
        bool kda, permuted;
    };
    const gc cases[] = {{16, 1, 1, 1, 1, 1, 1, false, false}, {16, 2, 4, 5, 2, 1, 1, false, false}, {32, 2, 2, 7, 1, 1, 3, true, false},
                        {64, 1, 2, 4, 2, 2, 4, true, true},    {8, 4, 8, 16, 3, 3, 2, false, true},  {128, 1, 1, 3, 1, 1, 1, true, false}};
    for (const gc& c : cases)
        check("gated_delta_net S " + std::to_string(c.S) + " Hk " + std::to_string(c.Hk) + " Hv " + std::to_string(c.Hv) + " T " +
                  std::to_string(c.T) + " seqs " + std::to_string(c.n_s) + "/" + std::to_string(c.nq) + " K " + std::to_string(c.K) +
                  (c.kda ? " kda" : "") + (c.permuted ? " permuted q, k" : ""),
              [&](context& ctx) {
                  built b;
                  const auto qk = [&]() -> node* {  // [S, Hk, T, nq], or a permuted view of [S, T, Hk, nq]
                      if (!c.permuted) return ctx.new_tensor(type_id::f32, {c.S, c.Hk, c.T, c.nq});
                      node* base = ctx.new_tensor(type_id::f32, {c.S, c.T, c.Hk, c.nq});
                      return permute(any_tensor(base), {0, 2, 1, 3}).get();
                  };
                  node* q = qk();
                  node* k = qk();
                  node* v = ctx.new_tensor(type_id::f32, {c.S, c.Hv, c.T, c.n_s});
                  node* g = ctx.new_tensor(type_id::f32, {c.kda ? c.S : 1, c.Hv, c.T, c.n_s});
                  node* beta = ctx.new_tensor(type_id::f32, {1, c.Hv, c.T, c.n_s});
                  node* state = ctx.new_tensor(type_id::f32, {c.S, c.S, c.Hv, c.n_s});
                  b.out = gated_delta_net(any_tensor(q), any_tensor(k), any_tensor(v), any_tensor(g), any_tensor(beta), any_tensor(state), c.K).get();
                  b.inputs = {q, k, v, g, beta, state};
                  const double ks = 1 / std::sqrt(static_cast<double>(c.S));  // keys of norm ~ 1/sqrt(3): a stable recurrence
                  b.init = {{k->view_src ? k->view_src : k, uniform(-ks, ks)}, {g, uniform(-1, 0)}, {beta, uniform(0, 1)}};
                  return b;
              },
              [&](const std::vector<host>& in) {
                  const host &q = in[0], &k = in[1], &v = in[2], &g = in[3], &beta = in[4], &st = in[5];
                  const std::int64_t S = c.S, H = c.Hv;
                  host o = host::zeros({S * H, c.T * c.n_s + c.K * S * c.n_s, 1, 1});
                  for (std::int64_t seq = 0; seq < c.n_s; ++seq)
                      for (std::int64_t h = 0; h < H; ++h) {
                          std::vector<double> M(static_cast<std::size_t>(S * S));  // M[i][j] at i + S j
                          for (std::int64_t j = 0; j < S; ++j)
                              for (std::int64_t i = 0; i < S; ++i) M[static_cast<std::size_t>(i + S * j)] = st.at(i, j, h, seq);
                          const std::int64_t hq = h % c.Hk, sq = seq / (c.n_s / c.nq);
                          for (std::int64_t t = 0; t < c.T; ++t) {
                              for (std::int64_t j = 0; j < S; ++j)
                                  for (std::int64_t i = 0; i < S; ++i) M[static_cast<std::size_t>(i + S * j)] *= std::exp(g.at(c.kda ? i : 0, h, t, seq));
                              std::vector<double> delta(static_cast<std::size_t>(S));
                              for (std::int64_t j = 0; j < S; ++j) {
                                  double sk = 0;
                                  for (std::int64_t i = 0; i < S; ++i) sk += M[static_cast<std::size_t>(i + S * j)] * k.at(i, hq, t, sq);
                                  delta[static_cast<std::size_t>(j)] = (v.at(j, h, t, seq) - sk) * beta.at(0, h, t, seq);
                              }
                              for (std::int64_t j = 0; j < S; ++j)
                                  for (std::int64_t i = 0; i < S; ++i) M[static_cast<std::size_t>(i + S * j)] += k.at(i, hq, t, sq) * delta[static_cast<std::size_t>(j)];
                              for (std::int64_t j = 0; j < S; ++j) {
                                  double sq_ = 0;
                                  for (std::int64_t i = 0; i < S; ++i) sq_ += M[static_cast<std::size_t>(i + S * j)] * q.at(i, hq, t, sq);
                                  o.v[static_cast<std::size_t>(((seq * c.T + t) * H + h) * S + j)] = sq_ / std::sqrt(static_cast<double>(S));
                              }
                              if (const std::int64_t slot = c.T - 1 - t; slot < c.K)
                                  for (std::int64_t e = 0; e < S * S; ++e)
                                      o.v[static_cast<std::size_t>(S * H * c.T * c.n_s + slot * S * S * H * c.n_s + (seq * H + h) * S * S + e)] =
                                          M[static_cast<std::size_t>(e)];
                          }
                      }
                  return o;
              });
    context ctx({.no_alloc = true});
    auto t = [&](ne4 ne) { return any_tensor(ctx.new_tensor(type_id::f32, ne)); };
    const ne4 qs{16, 2, 5, 1}, vs{16, 4, 5, 1}, bs{1, 4, 5, 1}, ss{16, 16, 4, 1};
    throws_naming([&] { gated_delta_net(t({16, 3, 5, 1}), t({16, 3, 5, 1}), t(vs), t(bs), t(bs), t(ss)); }, "gated_delta_net", "Hk dividing Hv");
    throws_naming([&] { gated_delta_net(t(qs), t(qs), t(vs), t({2, 4, 5, 1}), t(bs), t(ss)); }, "gated_delta_net", "[1 or S, Hv, T, n_s]");
    throws_naming([&] { gated_delta_net(t(qs), t(qs), t(vs), t(bs), t(bs), t({16, 16, 2, 1})); }, "gated_delta_net", "state");
    throws_naming([&] { gated_delta_net(t(qs), t(qs), t(vs), t(bs), t(bs), t(ss), 0); }, "gated_delta_net", "K must be >= 1");
    throws_naming([&] { gated_delta_net(t(qs), t(qs), t(vs), t(bs), transpose(t({4, 1, 5, 1})), t(ss)); }, "gated_delta_net", "contiguous");
}
