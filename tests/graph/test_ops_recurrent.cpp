// The recurrent ops (ssm_conv, ssm_scan, rwkv_wkv6, gated_linear_attn, rwkv_wkv7)
// against double-precision references written from their definitions (harness.hpp),
// every arch, 1 and 2 threads; bad shapes are refused by name.
#include <doctest/doctest.h>

#include <cmath>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

namespace {

// The state element [i][j] of head h, sequence s, in a [S*S*H, n_s] state tensor.
double& st(host& m, std::int64_t S, std::int64_t h, std::int64_t i, std::int64_t j, std::int64_t s) {
    return m.at((h * S + i) * S + j, s);
}

}  // namespace

TEST_CASE("ops: ssm_conv, the causal depthwise convolution") {
    for (std::int64_t d_conv : {3, 4})
        for (std::int64_t d_inner : {5, 64})
            for (std::int64_t n_t : {1, 7})
                for (std::int64_t n_s : {1, 3}) {
                    const ne4 sxs{d_conv - 1 + n_t, d_inner, n_s, 1};
                    check("ssm_conv sx " + sh(sxs) + " d_conv " + std::to_string(d_conv),
                          [&](context& ctx) {
                              built b;
                              node* sx = ctx.new_tensor(type_id::f32, sxs);
                              node* c = ctx.new_tensor(type_id::f32, {d_conv, d_inner, 1, 1});
                              b.out = ssm_conv(any_tensor(sx), any_tensor(c)).get();
                              b.inputs = {sx, c};
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros({d_inner, n_t, n_s, 1});
                              for (std::int64_t s = 0; s < n_s; ++s)
                                  for (std::int64_t t = 0; t < n_t; ++t)
                                      for (std::int64_t ch = 0; ch < d_inner; ++ch)
                                          for (std::int64_t j = 0; j < d_conv; ++j)
                                              o.at(ch, t, s) += in[0].at(t + j, ch, s) * in[1].at(j, ch);
                              return o;
                          });
                }
    context ctx({.no_alloc = true});
    node* sx = ctx.new_tensor(type_id::f32, {6, 8, 1, 1});
    node* c = ctx.new_tensor(type_id::f32, {4, 7, 1, 1});
    CHECK_THROWS_WITH_AS(ssm_conv(any_tensor(sx), any_tensor(c)), doctest::Contains("must be [d_conv - 1 + n_t, d_inner, n_s]"),
                         tessera::error);
}

TEST_CASE("ops: ssm_scan, Mamba-1 and Mamba-2 selective scans with state slots") {
    struct sc {
        std::int64_t d_state, head_dim, n_head, n_group;
        bool mamba2;
    };
    for (sc c : {sc{16, 1, 12, 1, false}, sc{16, 8, 4, 2, true}, sc{8, 4, 6, 3, true}})
        for (std::int64_t n_t : {1, 5})
            for (std::int64_t n_s : {1, 3}) {
                const std::int64_t slots = 4;
                check("ssm_scan d_state " + std::to_string(c.d_state) + " head_dim " + std::to_string(c.head_dim) + " heads " +
                          std::to_string(c.n_head) + " groups " + std::to_string(c.n_group) + " T " + std::to_string(n_t) + " seqs " +
                          std::to_string(n_s),
                      [&](context& ctx) {
                          built b;
                          node* s = ctx.new_tensor(type_id::f32, {c.d_state, c.head_dim, c.n_head, slots});
                          node* x = ctx.new_tensor(type_id::f32, {c.head_dim, c.n_head, n_t, n_s});
                          node* dt = ctx.new_tensor(type_id::f32, {c.n_head, n_t, n_s, 1});
                          node* A = ctx.new_tensor(type_id::f32, {c.mamba2 ? 1 : c.d_state, c.n_head, 1, 1});
                          node* B = ctx.new_tensor(type_id::f32, {c.d_state, c.n_group, n_t, n_s});
                          node* C = ctx.new_tensor(type_id::f32, {c.d_state, c.n_group, n_t, n_s});
                          node* ids = ctx.new_tensor(type_id::i32, {n_s, 1, 1, 1});
                          b.out = ssm_scan(any_tensor(s), any_tensor(x), any_tensor(dt), any_tensor(A), any_tensor(B), any_tensor(C),
                                           any_tensor(ids))
                                      .get();
                          b.inputs = {s, x, dt, A, B, C, ids};
                          b.init = {{dt, uniform(-3.0, 24.0)},  // both softplus branches (> 20 passes through)
                                    {A, uniform(-1.5, -0.05)},
                                    {ids, distinct_indices(slots)}};
                          b.max_nmse = c.head_dim > 1 ? 2e-7 : 1e-7;  // test-backend-ops' bounds
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          const host &s = in[0], &x = in[1], &dt = in[2], &A = in[3], &B = in[4], &C = in[5], &ids = in[6];
                          const std::int64_t ny = c.head_dim * c.n_head * n_t * n_s;
                          host o = host::zeros({ny + c.d_state * c.head_dim * c.n_head * n_s, 1, 1, 1});
                          for (std::int64_t q = 0; q < n_s; ++q) {
                              const auto slot = static_cast<std::int64_t>(ids.v[static_cast<std::size_t>(q)]);
                              for (std::int64_t h = 0; h < c.n_head; ++h) {
                                  const std::int64_t g = h * c.n_group / c.n_head;
                                  for (std::int64_t i = 0; i < c.head_dim; ++i) {
                                      std::vector<double> state(static_cast<std::size_t>(c.d_state));
                                      for (std::int64_t j = 0; j < c.d_state; ++j) state[static_cast<std::size_t>(j)] = s.at(j, i, h, slot);
                                      for (std::int64_t t = 0; t < n_t; ++t) {
                                          const double d = dt.at(h, t, q);
                                          const double dsp = d > 20 ? d : std::log1p(std::exp(d));
                                          double y = 0;
                                          for (std::int64_t j = 0; j < c.d_state; ++j) {
                                              const double a = c.mamba2 ? A.at(0, h) : A.at(j, h);
                                              double& v = state[static_cast<std::size_t>(j)];
                                              v = v * std::exp(dsp * a) + B.at(j, g, t, q) * x.at(i, h, t, q) * dsp;
                                              y += v * C.at(j, g, t, q);
                                          }
                                          o.v[static_cast<std::size_t>(((q * n_t + t) * c.n_head + h) * c.head_dim + i)] = y;
                                      }
                                      for (std::int64_t j = 0; j < c.d_state; ++j)
                                          o.v[static_cast<std::size_t>(ny + ((q * c.n_head + h) * c.head_dim + i) * c.d_state + j)] =
                                              state[static_cast<std::size_t>(j)];
                                  }
                              }
                          }
                          return o;
                      });
            }
    context ctx({.no_alloc = true});
    node* s = ctx.new_tensor(type_id::f32, {16, 8, 4, 1});
    node* x = ctx.new_tensor(type_id::f32, {8, 4, 2, 1});
    node* dt = ctx.new_tensor(type_id::f32, {4, 2, 1, 1});
    node* A = ctx.new_tensor(type_id::f32, {1, 4, 1, 1});
    node* B = ctx.new_tensor(type_id::f32, {16, 3, 2, 1});
    node* ids = ctx.new_tensor(type_id::i32, {1, 1, 1, 1});
    CHECK_THROWS_WITH_AS(ssm_scan(any_tensor(s), any_tensor(x), any_tensor(dt), any_tensor(A), any_tensor(B), any_tensor(B), any_tensor(ids)),
                         doctest::Contains("must be a multiple of n_group"), tessera::error);
}

TEST_CASE("ops: rwkv_wkv6, gated_linear_attn, rwkv_wkv7 over several sequences") {
    for (op_kind op : {op_kind::rwkv_wkv6, op_kind::gated_linear_attn, op_kind::rwkv_wkv7})
        for (std::int64_t S : {8, 16})
            for (std::int64_t H : {1, 3})
                for (auto tn_s : {std::pair<std::int64_t, std::int64_t>{1, 1}, {6, 1}, {6, 2}, {9, 3}}) {
                    const std::int64_t T = tn_s.first, n_s = tn_s.second;  // not a structured binding: lambdas capture it (clang)
                    check(std::string(op_name(op)) + " S " + std::to_string(S) + " H " + std::to_string(H) + " T " + std::to_string(T) +
                              " seqs " + std::to_string(n_s),
                          [&](context& ctx) {
                              built b;
                              const ne4 tok{S, H, T, 1};
                              auto t = [&] { return ctx.new_tensor(type_id::f32, tok); };
                              node* state = ctx.new_tensor(type_id::f32, {S * S * H, n_s, 1, 1});
                              if (op == op_kind::rwkv_wkv6) {
                                  node *k = t(), *v = t(), *r = t(), *td = t();
                                  node* tf = ctx.new_tensor(type_id::f32, {S, H, 1, 1});
                                  b.out = rwkv_wkv6(any_tensor(k), any_tensor(v), any_tensor(r), any_tensor(tf), any_tensor(td),
                                                    any_tensor(state))
                                              .get();
                                  b.inputs = {k, v, r, tf, td, state};
                                  b.init = {{td, uniform(0.5, 1.0)}};
                              } else if (op == op_kind::gated_linear_attn) {
                                  node *k = t(), *v = t(), *q = t(), *g = t();
                                  b.out = gated_linear_attn(any_tensor(k), any_tensor(v), any_tensor(q), any_tensor(g), any_tensor(state), 0.5f)
                                              .get();
                                  b.inputs = {k, v, q, g, state};
                                  b.init = {{g, uniform(0.5, 1.0)}};
                              } else {
                                  node *r = t(), *w = t(), *k = t(), *v = t(), *a = t(), *bb = t();
                                  b.out = rwkv_wkv7(any_tensor(r), any_tensor(w), any_tensor(k), any_tensor(v), any_tensor(a), any_tensor(bb),
                                                    any_tensor(state))
                                              .get();
                                  b.inputs = {r, w, k, v, a, bb, state};
                                  b.init = {{w, uniform(0.5, 1.0)}, {a, uniform(-0.2, 0.2)}, {bb, uniform(-0.2, 0.2)}};
                                  b.max_nmse = 5e-3;  // test-backend-ops' bound for rwkv_wkv7 (we stay far below it)
                              }
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              const std::int64_t C = S * H, per = T / n_s;
                              host o = host::zeros({C, T + S * n_s, 1, 1});
                              host state = in.back();
                              for (std::int64_t q = 0; q < n_s; ++q)
                                  for (std::int64_t h = 0; h < H; ++h)
                                      for (std::int64_t t = q * per; t < (q + 1) * per; ++t) {
                                          auto val = [&](std::size_t which, std::int64_t e) { return in[which].at(e, h, t); };
                                          if (op == op_kind::rwkv_wkv6) {  // y = r (tf * k^T v + S), S = td * S + k^T v
                                              for (std::int64_t j = 0; j < S; ++j) {
                                                  double y = 0;
                                                  for (std::int64_t i = 0; i < S; ++i)
                                                      y += val(2, i) * (in[3].at(i, h) * val(0, i) * val(1, j) + st(state, S, h, i, j, q));
                                                  o.at(h * S + j, t) = y;
                                              }
                                              for (std::int64_t i = 0; i < S; ++i)
                                                  for (std::int64_t j = 0; j < S; ++j)
                                                      st(state, S, h, i, j, q) = val(4, i) * st(state, S, h, i, j, q) + val(0, i) * val(1, j);
                                          } else if (op == op_kind::gated_linear_attn) {  // S = g * S + k^T v, y = scale q S
                                              for (std::int64_t i = 0; i < S; ++i)
                                                  for (std::int64_t j = 0; j < S; ++j)
                                                      st(state, S, h, i, j, q) = val(3, i) * st(state, S, h, i, j, q) + val(0, i) * val(1, j);
                                              for (std::int64_t j = 0; j < S; ++j) {
                                                  double y = 0;
                                                  for (std::int64_t i = 0; i < S; ++i) y += 0.5 * val(2, i) * st(state, S, h, i, j, q);
                                                  o.at(h * S + j, t) = y;
                                              }
                                          } else {  // S = S diag(w) + v k^T + (S a) b^T, y = S r
                                              for (std::int64_t i = 0; i < S; ++i) {
                                                  double sa = 0;
                                                  for (std::int64_t j = 0; j < S; ++j) sa += val(4, j) * st(state, S, h, i, j, q);
                                                  double y = 0;
                                                  for (std::int64_t j = 0; j < S; ++j) {
                                                      double& e = st(state, S, h, i, j, q);
                                                      e = e * val(1, j) + val(3, i) * val(2, j) + sa * val(5, j);
                                                      y += e * val(0, j);
                                                  }
                                                  o.at(h * S + i, t) = y;
                                              }
                                          }
                                      }
                              for (std::int64_t q = 0; q < n_s; ++q)
                                  for (std::int64_t e = 0; e < S * C; ++e) o.v[static_cast<std::size_t>(C * T + q * S * C + e)] = state.at(e, q);
                              return o;
                          });
                }
    context ctx({.no_alloc = true});
    node* k = ctx.new_tensor(type_id::f32, {8, 2, 5, 1});
    node* state = ctx.new_tensor(type_id::f32, {128, 2, 1, 1});
    CHECK_THROWS_WITH_AS(gated_linear_attn(any_tensor(k), any_tensor(k), any_tensor(k), any_tensor(k), any_tensor(state), 1.f),
                         doctest::Contains("must split evenly into the 2 sequences"), tessera::error);
    node* kt = ctx.new_tensor(type_id::f32, {8, 2, 4, 1});
    node* tf = ctx.new_tensor(type_id::f32, {8, 3, 1, 1});
    CHECK_THROWS_WITH_AS(rwkv_wkv6(any_tensor(kt), any_tensor(kt), any_tensor(kt), any_tensor(tf), any_tensor(kt), any_tensor(state)),
                         doctest::Contains("operand tf"), tessera::error);
}
