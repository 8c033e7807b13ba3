// add1, acc, set, diag, tri, cumsum, repeat_back, group_norm, argsort, top_k, out_prod
// and mul_mat_id against double-precision references (harness.hpp), every arch, 1 and
// 2 threads; and the clear errors their builders and the executor give for bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

namespace {



// Fills a leaf with small integers in [0, n) as values (many ties).

template <class F>
host map_rows(const host& in, F&& f) {  // f(row values) -> output row
    host o;
    std::vector<std::vector<double>> rows;
    for (std::int64_t r = 0; r < in.ne[1] * in.ne[2] * in.ne[3]; ++r) {
        std::vector<double> x(in.v.begin() + r * in.ne[0], in.v.begin() + (r + 1) * in.ne[0]);
        rows.push_back(f(x));
    }
    o.ne = in.ne;
    o.ne[0] = rows.empty() ? 0 : static_cast<std::int64_t>(rows[0].size());
    for (auto& r : rows) o.v.insert(o.v.end(), r.begin(), r.end());
    return o;
}

}  // namespace

// ---- add1, acc, set ------------------------------------------------------------------------------

TEST_CASE("ops: add1 (scalar b) with views, mixed float types, in place") {
    for (ne4 s : {ne4{16, 5, 4, 3}, ne4{33, 7, 3, 2}, ne4{1, 1, 1, 1}})
        for (type_id ta : float_types)
            for (type_id tb : {type_id::f32, ta})
                for (bool strided : {false, true})
                    for (bool inplace : {false, true}) {
                        if (inplace && strided) continue;
                        check("add1 " + tn(ta) + sh(s) + " + " + tn(tb) + (strided ? " strided" : "") + (inplace ? " inplace" : ""),
                              [&](context& ctx) {
                                  built b;
                                  node* x = strided_input(ctx, ta, s, strided);
                                  node* y = ctx.new_tensor(tb, {1, 1, 1, 1});
                                  b.out = (inplace ? add1_inplace(any_tensor(x), any_tensor(y)) : add1(any_tensor(x), any_tensor(y))).get();
                                  b.inputs = {x, y};
                                  return b;
                              },
                              [](const std::vector<host>& in) {
                                  host o = in[0];
                                  for (double& v : o.v) v += in[1].v[0];
                                  return o;
                              });
                    }
}

TEST_CASE("ops: acc and set into strided views of a, float types, i32 set, in place") {
    struct view_case {
        ne4 a, b;
        // strides of the view in elements of a (0: a's own stride) and offset in elements
        std::int64_t s1, s2, s3, off;
    };
    const view_case cases[] = {{{10, 8, 4, 2}, {4, 3, 2, 1}, 0, 0, 0, 12},  {{17, 1, 1, 1}, {5, 1, 1, 1}, 0, 0, 0, 3},
                               {{12, 9, 3, 1}, {5, 4, 3, 1}, 24, 0, 0, 1},  {{8, 8, 1, 1}, {8, 8, 1, 1}, 0, 0, 0, 0},
                               {{6, 5, 4, 3}, {2, 2, 2, 2}, 7, 31, 130, 2}, {{33, 4, 2, 1}, {7, 1, 1, 1}, 0, 0, 0, 200}};
    for (op_kind op : {op_kind::acc, op_kind::set})
        for (const auto& c : cases)
            for (type_id ta : {type_id::f32, type_id::f16, type_id::bf16, type_id::i32})
                for (type_id tb : {type_id::f32, ta})
                    for (bool strided_b : {false, true})
                        for (bool inplace : {false, true}) {
                            if (ta == type_id::i32 && (op == op_kind::acc || tb != ta)) continue;
                            if (tb != ta && (strided_b || inplace)) continue;
                            check(std::string(op_name(op)) + " " + tn(tb) + sh(c.b) + " into " + tn(ta) + sh(c.a) + " off " +
                                      std::to_string(c.off) + (strided_b ? " strided b" : "") + (inplace ? " inplace" : ""),
                                  [&](context& ctx) {
                                      built b;
                                      node* x = ctx.new_tensor(ta, c.a);
                                      node* y = strided_input(ctx, tb, c.b, strided_b);
                                      const auto es = static_cast<std::size_t>(type_size(ta));
                                      const std::size_t nb1 = c.s1 ? static_cast<std::size_t>(c.s1) * es : x->lay.nb[1];
                                      const std::size_t nb2 = c.s2 ? static_cast<std::size_t>(c.s2) * es : x->lay.nb[2];
                                      const std::size_t nb3 = c.s3 ? static_cast<std::size_t>(c.s3) * es : x->lay.nb[3];
                                      const std::size_t off = static_cast<std::size_t>(c.off) * es;
                                      any_tensor X(x), Y(y);
                                      any_tensor r = op == op_kind::acc ? (inplace ? acc_inplace(X, Y, nb1, nb2, nb3, off) : acc(X, Y, nb1, nb2, nb3, off))
                                                                        : (inplace ? set_inplace(X, Y, nb1, nb2, nb3, off) : set(X, Y, nb1, nb2, nb3, off));
                                      b.out = r.get();
                                      b.inputs = {x, y};
                                      b.max_nmse = op == op_kind::set && ta == tb ? 0.0 : 1e-7;
                                      if (ta == type_id::i32) b.init = {{x, indices_below(1000)}, {y->view_src ? y->view_src : y, indices_below(1000)}};
                                      return b;
                                  },
                                  [&](const std::vector<host>& in) {
                                      host o = in[0];
                                      const std::int64_t s1 = c.s1 ? c.s1 : c.a[0], s2 = c.s2 ? c.s2 : c.a[0] * c.a[1],
                                                         s3 = c.s3 ? c.s3 : c.a[0] * c.a[1] * c.a[2];
                                      for (std::int64_t i3 = 0; i3 < c.b[3]; ++i3)
                                          for (std::int64_t i2 = 0; i2 < c.b[2]; ++i2)
                                              for (std::int64_t i1 = 0; i1 < c.b[1]; ++i1)
                                                  for (std::int64_t i0 = 0; i0 < c.b[0]; ++i0) {
                                                      double& d = o.v[static_cast<std::size_t>(c.off + i0 + i1 * s1 + i2 * s2 + i3 * s3)];
                                                      const double v = in[1].at(i0, i1, i2, i3);
                                                      d = op == op_kind::acc ? round_to(ta, d + v) : v;
                                                  }
                                      return o;
                                  });
                        }
    // typed forms: set_1d / set_2d
    check("set_1d, set_2d typed", [](context& ctx) {
        built b;
        auto a = new_tensor<float, 2>(ctx, {9, 4});
        auto r1 = new_tensor<float, 1>(ctx, {4});
        auto r2 = new_tensor<float, 2>(ctx, {3, 2});
        auto s1 = set_1d(a, r1, 2 * sizeof(float));
        auto s2 = set_2d(s1, r2, a.nb(1) * 2, a.nb(1) + 5 * sizeof(float));
        b.out = s2.get();
        b.inputs = {a.get(), r1.get(), r2.get()};
        b.max_nmse = 0;
        return b;
    },
    [](const std::vector<host>& in) {
        host o = in[0];
        for (int i = 0; i < 4; ++i) o.v[static_cast<std::size_t>(2 + i)] = in[1].v[static_cast<std::size_t>(i)];
        for (int r = 0; r < 2; ++r)
            for (int i = 0; i < 3; ++i) o.v[static_cast<std::size_t>(9 + 5 + r * 18 + i)] = in[2].at(i, r);
        return o;
    });
    check("set_1d_inplace, set_2d_inplace any_tensor", [](context& ctx) {
        built b;
        node* a = ctx.new_tensor(type_id::f16, {9, 4, 1, 1});
        node* r1 = ctx.new_tensor(type_id::f32, {4, 1, 1, 1});
        node* r2 = ctx.new_tensor(type_id::f16, {3, 2, 1, 1});
        any_tensor s1 = set_1d_inplace(any_tensor(a), any_tensor(r1), 2 * 2);
        any_tensor s2 = set_2d_inplace(s1, any_tensor(r2), a->lay.nb[1] * 2, a->lay.nb[1] + 5 * 2);
        b.out = s2.get();
        b.inputs = {a, r1, r2};
        return b;
    },
    [](const std::vector<host>& in) {
        host o = in[0];
        for (int i = 0; i < 4; ++i) o.v[static_cast<std::size_t>(2 + i)] = in[1].v[static_cast<std::size_t>(i)];
        for (int r = 0; r < 2; ++r)
            for (int i = 0; i < 3; ++i) o.v[static_cast<std::size_t>(9 + 5 + r * 18 + i)] = in[2].at(i, r);
        return o;
    });
}

// ---- diag, tri, cumsum, repeat_back ------------------------------------------------------------

TEST_CASE("ops: diag, tri (4 kinds), cumsum with views and float types") {
    for (type_id t : float_types)
        for (ne4 s : {ne4{7, 1, 1, 1}, ne4{16, 1, 3, 2}, ne4{1, 1, 1, 1}})
            for (bool strided : {false, true})
                check("diag " + tn(t) + sh(s) + (strided ? " strided" : ""),
                      [&](context& ctx) {
                          built b;
                          node* x = strided_input(ctx, t, s, strided);
                          b.out = diag(any_tensor(x)).get();
                          b.inputs = {x};
                          b.max_nmse = 0;
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o = host::zeros({s[0], s[0], s[2], s[3]});
                          for (std::int64_t i3 = 0; i3 < s[3]; ++i3)
                              for (std::int64_t i2 = 0; i2 < s[2]; ++i2)
                                  for (std::int64_t i = 0; i < s[0]; ++i) o.at(i, i, i2, i3) = in[0].at(i, 0, i2, i3);
                          return o;
                      });
    for (tri_type tt : {tri_type::upper_diag, tri_type::upper, tri_type::lower_diag, tri_type::lower})
        for (type_id t : float_types)
            for (ne4 s : {ne4{5, 5, 1, 1}, ne4{16, 16, 3, 2}, ne4{1, 1, 2, 1}})
                for (bool strided : {false, true})
                    check("tri " + std::to_string(static_cast<int>(tt)) + " " + tn(t) + sh(s) + (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, t, s, strided);
                              b.out = tri(any_tensor(x), tt).get();
                              b.inputs = {x};
                              b.max_nmse = 0;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = in[0];
                              for (std::int64_t i3 = 0; i3 < s[3]; ++i3)
                                  for (std::int64_t i2 = 0; i2 < s[2]; ++i2)
                                      for (std::int64_t r = 0; r < s[1]; ++r)
                                          for (std::int64_t col = 0; col < s[0]; ++col) {
                                              const bool keep = tt == tri_type::upper_diag ? col >= r
                                                                : tt == tri_type::upper    ? col > r
                                                                : tt == tri_type::lower_diag ? col <= r
                                                                                             : col < r;
                                              if (!keep) o.at(col, r, i2, i3) = 0;
                                          }
                              return o;
                          });
    for (type_id t : float_types)
        for (ne4 s : {ne4{1, 1, 1, 1}, ne4{37, 5, 3, 1}, ne4{1024, 2, 1, 2}, ne4{4099, 1, 1, 1}})
            for (bool strided : {false, true})
                check("cumsum " + tn(t) + sh(s) + (strided ? " strided" : ""),
                      [&](context& ctx) {
                          built b;
                          node* x = strided_input(ctx, t, s, strided);
                          b.out = cumsum(any_tensor(x)).get();
                          b.inputs = {x};
                          return b;
                      },
                      [](const std::vector<host>& in) {
                          return map_rows(in[0], [](std::vector<double> x) {
                              double run = 0;
                              for (double& v : x) v = (run += v);
                              return x;
                          });
                      });
}

TEST_CASE("ops: repeat_back sums the tiles (the adjoint of repeat), views, float types") {
    struct rb {
        ne4 a, b;
    };
    const rb cases[] = {{{6, 6, 4, 2}, {3, 2, 1, 2}}, {{6, 6, 4, 2}, {6, 6, 4, 2}}, {{12, 1, 3, 1}, {1, 1, 1, 1}},
                        {{10, 15, 2, 3}, {5, 5, 2, 1}}, {{256, 4, 1, 1}, {256, 1, 1, 1}}};
    for (const auto& c : cases)
        for (type_id t : float_types)
            for (bool strided : {false, true})
                check("repeat_back " + tn(t) + sh(c.a) + " -> " + sh(c.b) + (strided ? " strided" : ""),
                      [&](context& ctx) {
                          built b;
                          node* x = strided_input(ctx, t, c.a, strided);
                          b.out = repeat_back(any_tensor(x), c.b).get();
                          b.inputs = {x};
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o = host::zeros(c.b);
                          for (std::int64_t i3 = 0; i3 < c.a[3]; ++i3)
                              for (std::int64_t i2 = 0; i2 < c.a[2]; ++i2)
                                  for (std::int64_t i1 = 0; i1 < c.a[1]; ++i1)
                                      for (std::int64_t i0 = 0; i0 < c.a[0]; ++i0)
                                          o.at(i0 % c.b[0], i1 % c.b[1], i2 % c.b[2], i3 % c.b[3]) += in[0].at(i0, i1, i2, i3);
                          return o;
                      });
    // typed form
    check("repeat_back typed", [](context& ctx) {
        built b;
        auto x = new_tensor<float, 3>(ctx, {4, 6, 2});
        auto like = new_tensor<f16, 2>(ctx, {2, 3});
        b.out = repeat_back(x, like).get();
        b.inputs = {x.get()};
        return b;
    },
    [](const std::vector<host>& in) {
        host o = host::zeros({2, 3, 1, 1});
        for (std::int64_t i2 = 0; i2 < 2; ++i2)
            for (std::int64_t i1 = 0; i1 < 6; ++i1)
                for (std::int64_t i0 = 0; i0 < 4; ++i0) o.at(i0 % 2, i1 % 3) += in[0].at(i0, i1, i2);
        return o;
    });
}

// ---- group_norm ---------------------------------------------------------------------------------

TEST_CASE("ops: group_norm (ceil-split channel groups, empty trailing group), views, in place") {
    struct gn {
        ne4 s;
        int groups;
    };
    const gn cases[] = {{{8, 4, 6, 2}, 3}, {{5, 3, 7, 1}, 3}, {{16, 2, 3, 1}, 4}, {{33, 1, 4, 2}, 1}, {{7, 7, 5, 1}, 5}};
    for (const auto& c : cases)
        for (type_id t : float_types)
            for (bool strided : {false, true})
                for (bool inplace : {false, true}) {
                    if (inplace && strided) continue;
                    check("group_norm " + tn(t) + sh(c.s) + " groups " + std::to_string(c.groups) + (strided ? " strided" : "") +
                              (inplace ? " inplace" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, t, c.s, strided);
                              b.out = (inplace ? group_norm_inplace(any_tensor(x), c.groups, 1e-6f) : group_norm(any_tensor(x), c.groups, 1e-6f)).get();
                              b.inputs = {x};
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = in[0];
                              const std::int64_t per = (c.s[2] + c.groups - 1) / c.groups;
                              for (std::int64_t i3 = 0; i3 < c.s[3]; ++i3)
                                  for (std::int64_t c0 = 0; c0 < c.s[2]; c0 += per) {
                                      const std::int64_t c1 = std::min(c.s[2], c0 + per);
                                      double sum = 0, sq = 0, n = 0;
                                      for (std::int64_t i2 = c0; i2 < c1; ++i2)
                                          for (std::int64_t i1 = 0; i1 < c.s[1]; ++i1)
                                              for (std::int64_t i0 = 0; i0 < c.s[0]; ++i0) sum += in[0].at(i0, i1, i2, i3), n += 1;
                                      const double mean = sum / n;
                                      for (std::int64_t i2 = c0; i2 < c1; ++i2)
                                          for (std::int64_t i1 = 0; i1 < c.s[1]; ++i1)
                                              for (std::int64_t i0 = 0; i0 < c.s[0]; ++i0) sq += std::pow(in[0].at(i0, i1, i2, i3) - mean, 2);
                                      const double scale = 1 / std::sqrt(sq / n + 1e-6);
                                      for (std::int64_t i2 = c0; i2 < c1; ++i2)
                                          for (std::int64_t i1 = 0; i1 < c.s[1]; ++i1)
                                              for (std::int64_t i0 = 0; i0 < c.s[0]; ++i0)
                                                  o.at(i0, i1, i2, i3) = (in[0].at(i0, i1, i2, i3) - mean) * scale;
                                  }
                              return o;
                          });
                }
}

// ---- argsort, top_k -----------------------------------------------------------------------------

namespace {
// Indices of x sorted by value (desc: largest first), equal values by ascending index.
std::vector<double> sorted_indices(const std::vector<double>& x, bool desc) {
    std::vector<std::size_t> idx(x.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t i, std::size_t j) { return desc ? x[i] > x[j] : x[i] < x[j]; });
    return std::vector<double>(idx.begin(), idx.end());
}
}  // namespace

TEST_CASE("ops: argsort asc/desc and argsort_top_k, exact, with ties, views, float types") {
    for (ne4 s : {ne4{1, 1, 1, 1}, ne4{3, 1, 1, 1}, ne4{16, 5, 3, 2}, ne4{1023, 2, 1, 1}, ne4{4096, 1, 1, 2}})
        for (type_id t : float_types)
            for (bool desc : {false, true})
                for (bool strided : {false, true})
                    for (bool ties : {false, true}) {
                        if (t == type_id::bf16 && (strided || ties) && s[0] > 16) continue;
                        check("argsort " + tn(t) + sh(s) + (desc ? " desc" : " asc") + (strided ? " strided" : "") + (ties ? " ties" : ""),
                              [&](context& ctx) {
                                  built b;
                                  node* x = strided_input(ctx, t, s, strided);
                                  b.out = argsort(any_tensor(x), desc ? sort_order::desc : sort_order::asc).get();
                                  b.inputs = {x};
                                  b.max_nmse = 0;
                                  if (ties) b.init.push_back({x->view_src ? x->view_src : x, small_ints(5)});
                                  return b;
                              },
                              [&](const std::vector<host>& in) {
                                  return map_rows(in[0], [&](const std::vector<double>& x) { return sorted_indices(x, desc); });
                              });
                    }
    for (auto [s, kk] : {std::pair{ne4{10, 4, 1, 1}, 3}, std::pair{ne4{300, 3, 2, 1}, 300}, std::pair{ne4{77, 2, 1, 1}, 1}})
        check("argsort_top_k " + sh(s) + " k " + std::to_string(kk),
              [&, s = s, kk = kk](context& ctx) {
                  built b;
                  node* x = ctx.new_tensor(type_id::f32, s);
                  b.out = argsort_top_k(any_tensor(x), kk).get();
                  b.inputs = {x};
                  b.max_nmse = 0;
                  return b;
              },
              [kk = kk](const std::vector<host>& in) {
                  return map_rows(in[0], [&](const std::vector<double>& x) {
                      auto i = sorted_indices(x, true);
                      i.resize(static_cast<std::size_t>(kk));
                      return i;
                  });
              });
}

TEST_CASE("ops: top_k indices of the k largest (by value, ties by index), exact, views, float types") {
    const std::pair<ne4, int> cases[] = {{{1, 1, 1, 1}, 1},    {{10, 4, 1, 1}, 3},   {{1000, 3, 2, 1}, 10},
                                         {{37, 5, 1, 1}, 37},  {{4096, 2, 1, 1}, 40}, {{8, 3, 2, 2}, 4}};
    for (const auto& [s, kk] : cases)
        for (type_id t : float_types)
            for (bool strided : {false, true})
                for (bool ties : {false, true})
                    check("top_k " + tn(t) + sh(s) + " k " + std::to_string(kk) + (strided ? " strided" : "") + (ties ? " ties" : ""),
                          [&, s = s, kk = kk](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, t, s, strided);
                              b.out = top_k(any_tensor(x), kk).get();
                              b.inputs = {x};
                              b.max_nmse = 0;
                              if (ties) b.init.push_back({x->view_src ? x->view_src : x, small_ints(4)});
                              return b;
                          },
                          [kk = kk](const std::vector<host>& in) {
                              return map_rows(in[0], [&](const std::vector<double>& x) {
                                  auto i = sorted_indices(x, true);
                                  i.resize(static_cast<std::size_t>(kk));
                                  return i;
                              });
                          });
    // typed form
    check("top_k typed", [](context& ctx) {
        built b;
        auto x = new_tensor<float, 2>(ctx, {50, 3});
        b.out = top_k(x, 7).get();
        b.inputs = {x.get()};
        b.max_nmse = 0;
        return b;
    },
    [](const std::vector<host>& in) {
        return map_rows(in[0], [&](const std::vector<double>& x) {
            auto i = sorted_indices(x, true);
            i.resize(7);
            return i;
        });
    });
}

// ---- out_prod, mul_mat_id -------------------------------------------------------------------------

TEST_CASE("ops: out_prod float and block types as a, broadcast, transposed b") {
    struct op {
        std::int64_t M, N, K, A2, A3, B2, B3;
    };
    const op cases[] = {{7, 5, 9, 1, 1, 1, 1}, {33, 17, 64, 2, 1, 6, 2}, {64, 3, 5, 1, 2, 3, 4}, {1, 1, 1, 1, 1, 1, 1}};
    const op block_cases[] = {{256, 3, 7, 1, 1, 2, 1}, {512, 4, 3, 1, 1, 1, 1}};
    auto run = [](const op& c, type_id ta, bool tb_transposed) {
        const bool strided_a = tb_transposed && !is_quantized(ta);  // a: a column slice of a wider tensor
        check("out_prod " + tn(ta) + " M" + std::to_string(c.M) + " N" + std::to_string(c.N) + " K" + std::to_string(c.K) + " batch " +
                  std::to_string(c.A2) + "x" + std::to_string(c.A3) + " -> " + std::to_string(c.B2) + "x" + std::to_string(c.B3) +
                  (tb_transposed ? " b transposed" : "") + (strided_a ? " a strided" : ""),
              [&](context& ctx) {
                  built b;
                  node* a = strided_input(ctx, ta, {c.M, c.K, c.A2, c.A3}, strided_a);
                  node* y;
                  if (tb_transposed) {
                      node* leaf = ctx.new_tensor(type_id::f32, {c.K, c.N, c.B2, c.B3});
                      y = transpose(any_tensor(leaf)).get();
                  } else {
                      y = ctx.new_tensor(type_id::f32, {c.N, c.K, c.B2, c.B3});
                  }
                  b.out = out_prod(any_tensor(a), any_tensor(y)).get();
                  b.inputs = {a, y};
                  b.max_nmse = 1e-7;
                  return b;
              },
              [&](const std::vector<host>& in) {
                  host o = host::zeros({c.M, c.N, c.B2, c.B3});
                  for (std::int64_t i3 = 0; i3 < c.B3; ++i3)
                      for (std::int64_t i2 = 0; i2 < c.B2; ++i2)
                          for (std::int64_t n = 0; n < c.N; ++n)
                              for (std::int64_t m = 0; m < c.M; ++m) {
                                  double s = 0;
                                  for (std::int64_t k = 0; k < c.K; ++k)
                                      s += in[0].at(m, k, i2 / (c.B2 / c.A2), i3 / (c.B3 / c.A3)) * in[1].at(n, k, i2, i3);
                                  o.at(m, n, i2, i3) = s;
                              }
                  return o;
              });
    };
    for (const auto& c : cases)
        for (type_id ta : float_types)
            for (bool tr : {false, true}) run(c, ta, tr);
    for (const auto& c : block_cases)
        for (type_id ta : {type_id::q8_0, type_id::q4_0, type_id::q4_K, type_id::q6_K})
            for (bool tr : {false, true}) run(c, ta, tr);
}

TEST_CASE("ops: mul_mat_id float and block types as experts, broadcast b, unused experts, strided b") {
    struct mi {
        std::int64_t n_exp, n_used, n_b, T, M, K;
        bool permuted_b;
    };
    const mi cases[] = {{4, 2, 1, 1, 16, 256, false}, {8, 4, 4, 5, 33, 256, false}, {4, 2, 2, 17, 70, 256, true},
                        {16, 3, 1, 2, 130, 256, false}, {2, 2, 2, 70, 8, 256, false}};
    // block types: experts with at least kernels::qgemm_min_cols slots run the packed GEMM, the others gemv
    const type_id types[] = {type_id::f32,  type_id::f16,  type_id::bf16,   type_id::q4_0,   type_id::q8_0,  type_id::q4_1,
                             type_id::q5_0, type_id::q5_1, type_id::q2_K,   type_id::q3_K,   type_id::q4_K,  type_id::q5_K,
                             type_id::q6_K, type_id::iq4_nl, type_id::iq4_xs, type_id::mxfp4, type_id::tq1_0, type_id::tq2_0,
                             type_id::iq2_xxs, type_id::iq3_s, type_id::iq1_m};
    for (const auto& c : cases)
        for (type_id ta : types)
            for (type_id tb : {type_id::f32, type_id::f16}) {
                if (tb == type_id::f16 && (ta != type_id::f16 && ta != type_id::q8_0)) continue;
                check("mul_mat_id " + tn(ta) + " x " + tn(tb) + " experts " + std::to_string(c.n_exp) + " used " + std::to_string(c.n_used) +
                          " n_b " + std::to_string(c.n_b) + " T " + std::to_string(c.T) + " M " + std::to_string(c.M) +
                          (c.permuted_b ? " permuted b, experts a view" : ""),
                      [&](context& ctx) {
                          built b;
                          node* as;
                          if (c.permuted_b) {  // the experts as a view: rows 1..M of a taller tensor
                              node* tall = ctx.new_tensor(ta, {c.K, c.M + 2, c.n_exp, 1});
                              as = view(any_tensor(tall), {c.K, c.M, c.n_exp, 1}, {tall->lay.nb[1], tall->lay.nb[2], tall->lay.nb[3]},
                                        tall->lay.nb[1]).get();
                          } else {
                              as = ctx.new_tensor(ta, {c.K, c.M, c.n_exp, 1});
                          }
                          node* y;
                          if (c.permuted_b) {
                              node* leaf = ctx.new_tensor(tb, {c.K, c.T, c.n_b, 1});
                              y = permute(any_tensor(leaf), {0, 2, 1, 3}).get();
                          } else {
                              y = ctx.new_tensor(tb, {c.K, c.n_b, c.T, 1});
                          }
                          node* ids = ctx.new_tensor(type_id::i32, {c.n_used, c.T, 1, 1});
                          b.out = mul_mat_id(any_tensor(as), any_tensor(y), any_tensor(ids)).get();
                          b.inputs = {as, y, ids};
                          b.init.push_back({ids, indices_below(c.n_exp == 16 ? 5 : c.n_exp)});  // 16: experts 5..15 unused
                          b.max_nmse = ta == type_id::f32 && tb == type_id::f32 ? 1e-7 : 5e-4;
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o = host::zeros({c.M, c.n_used, c.T, 1});
                          for (std::int64_t t = 0; t < c.T; ++t)
                              for (std::int64_t u = 0; u < c.n_used; ++u) {
                                  const auto e = static_cast<std::int64_t>(in[2].at(u, t));
                                  for (std::int64_t m = 0; m < c.M; ++m) {
                                      double s = 0;
                                      for (std::int64_t k = 0; k < c.K; ++k) s += in[0].at(k, m, e) * in[1].at(k, u % c.n_b, t);
                                      o.at(m, u, t) = s;
                                  }
                              }
                          return o;
                      });
            }
}

// ---- bad input ----------------------------------------------------------------------------------

TEST_CASE("ops more: bad shapes and types give a tessera::error naming the op") {
    context ctx({.no_alloc = true});
    auto t = [&](type_id ty, ne4 ne) { return any_tensor(ctx.new_tensor(ty, ne)); };
    const auto f = type_id::f32;
    auto throws_naming = [](auto&& fn, const char* op) {
        try {
            fn();
            FAIL("no error for ", op);
        } catch (const tessera::error& e) {
            CHECK(std::string(e.what()).find(op) != std::string::npos);
        }
    };
    throws_naming([&] { add1(t(f, {4, 2, 1, 1}), t(f, {2, 1, 1, 1})); }, "add1");
    throws_naming([&] { add1(t(type_id::i32, {4, 1, 1, 1}), t(f, {1, 1, 1, 1})); }, "add1");
    throws_naming([&] { acc(t(f, {4, 4, 1, 1}), t(f, {4, 2, 1, 1}), 16, 32, 32, 16 * 3); }, "acc");   // runs past a
    throws_naming([&] { acc(t(f, {4, 4, 1, 1}), t(f, {2, 1, 1, 1}), 16, 64, 64, 2); }, "acc");        // misaligned offset
    throws_naming([&] { acc(t(type_id::i32, {4, 4, 1, 1}), t(type_id::i32, {2, 1, 1, 1}), 16, 64, 64, 0); }, "acc");
    throws_naming([&] { set(t(type_id::i32, {4, 4, 1, 1}), t(f, {2, 1, 1, 1}), 16, 64, 64, 0); }, "set");
    throws_naming([&] { set(transpose(t(f, {4, 4, 1, 1})), t(f, {2, 1, 1, 1}), 16, 64, 64, 0); }, "set");  // a not contiguous
    throws_naming([&] { set_1d(any_tensor(), t(f, {2, 1, 1, 1}), 0); }, "set");                    // empty a
    throws_naming([&] { set_2d(t(f, {4, 4, 1, 1}), t(f, {3, 2, 1, 1}), 16, 16 * 3); }, "set");      // past a
    throws_naming([&] { diag(t(f, {4, 2, 1, 1})); }, "diag");
    throws_naming([&] { tri(t(f, {4, 3, 1, 1}), tri_type::lower); }, "tri");
    throws_naming([&] { tri(t(type_id::q4_0, {32, 32, 1, 1}), tri_type::lower); }, "tri");
    throws_naming([&] { cumsum(t(type_id::i32, {4, 1, 1, 1})); }, "cumsum");
    throws_naming([&] { repeat_back(t(f, {6, 4, 1, 1}), {4, 4, 1, 1}); }, "repeat_back");
    throws_naming([&] { group_norm(t(f, {4, 4, 4, 1}), 0, 1e-5f); }, "group_norm");
    throws_naming([&] { argsort(t(type_id::i32, {4, 1, 1, 1})); }, "argsort");
    throws_naming([&] { top_k(t(f, {4, 1, 1, 1}), 5); }, "top_k");
    throws_naming([&] { top_k(t(f, {4, 1, 1, 1}), 0); }, "top_k");
    throws_naming([&] { out_prod(t(f, {4, 3, 1, 1}), t(f, {5, 2, 1, 1})); }, "out_prod");             // K differs
    throws_naming([&] { out_prod(t(f, {4, 3, 1, 1}), t(type_id::f16, {5, 3, 1, 1})); }, "out_prod");  // b must be f32
    throws_naming([&] { out_prod(t(f, {4, 3, 2, 1}), t(f, {5, 3, 3, 1})); }, "out_prod");             // no broadcast
    const ne4 as{64, 8, 4, 1}, bb{64, 1, 3, 1}, ii{2, 3, 1, 1};
    throws_naming([&] { mul_mat_id(t(f, {32, 8, 4, 1}), t(f, bb), t(type_id::i32, ii)); }, "mul_mat_id");   // K differs
    throws_naming([&] { mul_mat_id(t(f, as), t(f, bb), t(f, ii)); }, "mul_mat_id");                         // ids f32
    throws_naming([&] { mul_mat_id(t(f, as), t(f, bb), t(type_id::i32, {2, 4, 1, 1})); }, "mul_mat_id");    // token count
    throws_naming([&] { mul_mat_id(t(f, as), t(f, {64, 3, 3, 1}), t(type_id::i32, ii)); }, "mul_mat_id");   // 2 % 3
    throws_naming([&] { mul_mat_id(t(f, {64, 8, 4, 2}), t(f, bb), t(type_id::i32, ii)); }, "mul_mat_id");   // as 4-D
    throws_naming([&] { mul_mat_id(t(f, as), t(type_id::i32, bb), t(type_id::i32, ii)); }, "mul_mat_id");  // b not float
}

TEST_CASE("ops more: the executor refuses unsupported types and out-of-range expert ids with a tessera::error") {
    {  // an expert id past n_expert: an error at compute, at 1 and 2 threads, no wild read
        for (int threads : {1, 2}) {
            context ctx;
            node* as = ctx.new_tensor(type_id::f32, {32, 8, 4, 1});
            node* b = ctx.new_tensor(type_id::f32, {32, 1, 3, 1});
            node* ids = ctx.new_tensor(type_id::i32, {2, 3, 1, 1});
            const std::int32_t v[6] = {0, 1, 2, 4, 3, 0};  // 4 is out of range
            std::memcpy(ids->data, v, sizeof v);
            any_tensor r = mul_mat_id(any_tensor(as), any_tensor(b), any_tensor(ids));
            cgraph g;
            g.build_forward_expand(r);
            try {
                backend::cpu::compute(g, threads);
                FAIL("no error for an out-of-range expert id");
            } catch (const tessera::error& e) {
                CHECK(std::string(e.what()).find("expert id 4") != std::string::npos);
            }
            const std::int32_t w[6] = {0, 1, 2, 3, 3, 0};
            std::memcpy(ids->data, w, sizeof w);
            CHECK_NOTHROW(backend::cpu::compute(g, threads));  // the executor is usable again
        }
    }
    {  // integer experts (every block type has a vec_dot kernel now): refused by the graph, by name
        context ctx({.no_alloc = true});
        any_tensor as(ctx.new_tensor(type_id::i16, {256, 4, 2, 1}));
        any_tensor b(ctx.new_tensor(type_id::f32, {256, 1, 2, 1}));
        any_tensor ids(ctx.new_tensor(type_id::i32, {1, 2, 1, 1}));
        try {
            (void)mul_mat_id(as, b, ids);
            FAIL("i16 experts were not refused");
        } catch (const tessera::error& e) {
            CHECK(std::string(e.what()).find("mul_mat_id: as tensor i16 [256, 4, 2, 1] must be f32, f16, bf16 or a block type") !=
                  std::string::npos);
        }
    }
}

TEST_CASE("ops more: typed forms give ggml's result shapes and element types") {
    context ctx({.no_alloc = true});
    auto x = new_tensor<float, 2>(ctx, {8, 4});
    auto h = new_tensor<f16, 3>(ctx, {6, 6, 3});
    auto s = new_tensor<float, 1>(ctx, {1});
    auto v = new_tensor<bf16, 1>(ctx, {5});
    auto q = new_tensor<quant::block_q8_0, 3>(ctx, {64, 16, 4});
    auto b = new_tensor<float, 3>(ctx, {64, 2, 3});
    auto ids = new_tensor<std::int32_t, 2>(ctx, {4, 3});
    auto i = new_tensor<std::int32_t, 2>(ctx, {8, 4});
    auto j = new_tensor<std::int32_t, 1>(ctx, {3});

    tensor<float, 2> r1 = add1(x, s);
    tensor<float, 2> r2 = acc_inplace(x, new_tensor<f16, 1>(ctx, {3}), x.nb(1), x.nb(2), x.nb(3), 4);
    tensor<std::int32_t, 2> r3 = set(i, j, i.nb(1), i.nb(2), i.nb(3), 8);
    tensor<bf16, 2> r4 = diag(v);
    tensor<f16, 3> r5 = tri(h, tri_type::lower);
    tensor<f16, 3> r6 = cumsum(h);
    tensor<f16, 3> r7 = group_norm(h, 2, 1e-5f);
    tensor<std::int32_t, 3> r8 = argsort_top_k(h, 2);
    tensor<float, 2> r9 = out_prod(new_tensor<quant::block_q8_0, 2>(ctx, {32, 5}), new_tensor<float, 2>(ctx, {7, 5}));
    tensor<float, 3> r10 = mul_mat_id(q, b, ids);
    CHECK(r1.lay().ne == std::array<std::int64_t, 4>{8, 4, 1, 1});
    CHECK(r2.get()->view_src == x.get());  // in place: a view of x
    CHECK(r3.lay().type == type_id::i32);
    CHECK(r4.lay().ne == std::array<std::int64_t, 4>{5, 5, 1, 1});
    CHECK(r5.lay().ne == h.lay().ne);
    CHECK(r6.lay().type == type_id::f16);
    CHECK(r7.lay().ne == h.lay().ne);
    CHECK(r8.lay().ne == std::array<std::int64_t, 4>{2, 6, 3, 1});
    CHECK(r8.get()->is_view());
    CHECK(r9.lay().ne == std::array<std::int64_t, 4>{32, 7, 1, 1});
    CHECK(r10.lay().ne == std::array<std::int64_t, 4>{16, 4, 3, 1});
    CHECK(r10.lay().type == type_id::f32);
}
