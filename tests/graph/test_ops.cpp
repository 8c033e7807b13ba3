// Every supported op x shapes (odd sizes, broadcast, non-contiguous views) x types,
// against double-precision references, under every arch at 1 and 2 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

namespace {



double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

// ---- the builders' option types ----------------------------------------------------------------
// Options are enums and structs (docs/graph.md, "Builder options"); the bool and int lists
// they replaced do not compile.
namespace {
using f2 = tensor<float, 2>;
using f3 = tensor<float, 3>;
using i1_t = tensor<std::int32_t, 1>;
template <class... O>
concept mul_mat_takes = requires(f2 a, O... o) { mul_mat(a, a, o...); };
template <class... O>
concept solve_tri_takes = requires(f2 a, O... o) { solve_tri(a, a, o...); };
template <class... O>
concept glu_takes = requires(f2 a, O... o) { glu(a, glu_op::swiglu, o...); };
template <class... O>
concept leaky_relu_takes = requires(f2 a, O... o) { leaky_relu(a, 0.1f, o...); };
template <class... O>
concept diag_mask_inf_takes = requires(f2 a, O... o) { diag_mask_inf(a, 0, o...); };
template <class... O>
concept add_rel_pos_takes = requires(f2 a, tensor<float, 4> p, O... o) { add_rel_pos(a, p, p, o...); };
template <class M>
concept rope_takes = requires(f3 a, i1_t pos, M m) { rope(a, pos, 8, m); };
template <class... O>
concept pool_2d_takes = requires(f2 a, O... o) { pool_2d(a, o...); };
template <class M>
concept rope_mode_settable = requires(rope_params p, M m) { p.mode = m; };

static_assert(mul_mat_takes<> && mul_mat_takes<precision> && !mul_mat_takes<bool> && !mul_mat_takes<int>);
static_assert(solve_tri_takes<> && solve_tri_takes<solve_tri_options> && !solve_tri_takes<bool, bool, bool> &&
              !solve_tri_takes<bool>);
static_assert(glu_takes<> && glu_takes<glu_order> && !glu_takes<bool>);
static_assert(leaky_relu_takes<> && !leaky_relu_takes<bool>);
static_assert(diag_mask_inf_takes<> && !diag_mask_inf_takes<bool>);
static_assert(add_rel_pos_takes<> && !add_rel_pos_takes<bool>);
static_assert(rope_takes<rope_mode> && !rope_takes<int>);
static_assert(pool_2d_takes<pool_params> && !pool_2d_takes<pool_op, int, int, int, int>);
static_assert(rope_mode_settable<rope_mode> && !rope_mode_settable<int>);
// rope_params::mode reads as ggml's int (the kernels test its bits) and compares with a rope_mode.
static_assert([] {
    rope_params p{64};
    p.mode = rope_mode::imrope;
    return p.mode == rope_mode::imrope && p.mode == 40 && (p.mode & rope_mode_mrope) != 0 && p.mode.get() == rope_mode::imrope;
}());
static_assert(static_cast<int>(rope_mode::normal) == 0 && static_cast<int>(rope_mode::neox) == 2 &&
              static_cast<int>(rope_mode::mrope) == 8 && static_cast<int>(rope_mode::vision) == 24 &&
              static_cast<int>(rope_mode::imrope) == 40);
}  // namespace

TEST_CASE("graph: builder options reach the node's parameters") {
    context ctx;
    auto a = new_tensor<float, 2>(ctx, {8, 8});
    auto b = new_tensor<float, 2>(ctx, {8, 3});
    CHECK(mul_mat(a, b).get()->param<mul_mat_params>().prec == precision::default_);
    CHECK(mul_mat(a, b, precision::f32).get()->param<mul_mat_params>().prec == precision::f32);
    CHECK(mul_mat(any_tensor(a), any_tensor(b), precision::f32).get()->param<mul_mat_params>().prec == precision::f32);

    const auto tri = [](any_tensor t) { return t.get()->param<solve_tri_params>(); };
    const solve_tri_params d = tri(solve_tri(any_tensor(a), any_tensor(new_tensor<float, 2>(ctx, {3, 8}))));
    CHECK((d.left && d.lower && !d.uni));
    const solve_tri_params o =
        tri(solve_tri(any_tensor(a), any_tensor(a), {.side = tri_side::right, .part = tri_part::upper, .diag = tri_diag::unit}));
    CHECK((!o.left && !o.lower && o.uni));
    CHECK(!tri(solve_tri(a, a, {.part = tri_part::upper})).lower);

    CHECK(!glu(a, glu_op::swiglu).get()->param<glu_params>().swapped);
    CHECK(glu(a, glu_op::swiglu, glu_order::swapped).get()->param<glu_params>().swapped);
    CHECK(glu(any_tensor(a), glu_op::geglu, glu_order::swapped).get()->param<glu_params>().swapped);

    // the *_inplace forms are views of a; the others are not
    CHECK(leaky_relu_inplace(a, 0.1f).get()->view_src == a.get());
    CHECK(!leaky_relu(a, 0.1f).get()->is_view());
    CHECK(fill_inplace(a, 2.0f).get()->view_src == a.get());
    CHECK(diag_mask_inf_inplace(any_tensor(a), 0).get()->view_src == a.get());
    CHECK(diag_mask_zero_inplace(a, 1).get()->view_src == a.get());
    CHECK(!diag_mask_zero(a, 1).get()->is_view());

    auto q = new_tensor<float, 3>(ctx, {8, 2, 3});
    auto pos = new_tensor<std::int32_t, 1>(ctx, {3});
    CHECK(rope(q, pos, 8, rope_mode::neox).get()->param<rope_params>().mode == rope_mode::neox);
    rope_params rp{8};
    rp.mode = rope_mode::neox;
    CHECK(rope_ext_inplace(q, pos, std::nullopt, rp).get()->view_src == q.get());
    CHECK(rope_ext_back_inplace(q, pos, std::nullopt, rp).get()->view_src == q.get());

    auto fa = flash_attn_ext(q, q, q, std::nullopt, 0.5f);
    CHECK(fa.get()->param<flash_attn_params>().prec == precision::default_);
    CHECK(flash_attn_ext_set_prec(fa, precision::f32).get()->param<flash_attn_params>().prec == precision::f32);
    CHECK_THROWS_AS(flash_attn_ext_set_prec(any_tensor(a), precision::f32), tessera::error);

    const pool_params pp = pool_2d(a, {.op = pool_op::avg, .k = {2, 3}, .s = {2, 1}, .p = {1, 0}}).get()->param<pool_params>();
    CHECK((pp.op == pool_op::avg && pp.k == std::array{2, 3} && pp.s == std::array{2, 1} && pp.p == std::array{1, 0}));
}

// ---- element-wise ------------------------------------------------------------------------------

TEST_CASE("ops: add, sub, mul, div with broadcast, views and mixed float types") {
    struct shp {
        ne4 a, b;
    };
    const shp shapes[] = {{{16, 5, 4, 3}, {16, 5, 4, 3}}, {{33, 7, 3, 2}, {33, 1, 1, 1}}, {{10, 5, 4, 3}, {10, 5, 1, 3}},
                          {{10, 5, 4, 3}, {1, 5, 4, 1}},  {{12, 2, 2, 2}, {3, 1, 2, 1}},  {{1, 1, 1, 1}, {1, 1, 1, 1}},
                          {{67, 3, 1, 1}, {67, 3, 1, 1}}};
    const op_kind ops[] = {op_kind::add, op_kind::sub, op_kind::mul, op_kind::div};
    for (op_kind op : ops)
        for (const auto& s : shapes)
            for (type_id ta : float_types)
                for (type_id tb : {type_id::f32, ta})
                    for (bool strided : {false, true})
                        for (bool inplace : {false, true}) {
                            if (inplace && strided) continue;
                            // every type pairing for add; the other ops share its row code
                            if (op != op_kind::add && (tb != ta || ta == type_id::bf16 || (strided && s.a[0] == 16))) continue;
                            const std::string name = std::string(op_name(op)) + " " + tn(ta) + sh(s.a) + " " + tn(tb) + sh(s.b) +
                                                     (strided ? " strided" : "") + (inplace ? " inplace" : "");
                            check(
                                name,
                                [&](context& ctx) {
                                    built b;
                                    node* x = strided_input(ctx, ta, s.a, strided);
                                    node* y = strided_input(ctx, tb, s.b, strided);
                                    any_tensor X(x), Y(y);
                                    any_tensor r = op == op_kind::add   ? (inplace ? add_inplace(X, Y) : add(X, Y))
                                                   : op == op_kind::sub ? (inplace ? sub_inplace(X, Y) : sub(X, Y))
                                                   : op == op_kind::mul ? (inplace ? mul_inplace(X, Y) : mul(X, Y))
                                                                        : (inplace ? div_inplace(X, Y) : div(X, Y));
                                    b.out = r.get();
                                    b.inputs = {x, y};
                                    if (op == op_kind::div) b.init.push_back({y->view_src ? y->view_src : y, [](node* t, std::mt19937& rng) {
                                                                  std::uniform_real_distribution<double> d(0.5, 2.0);
                                                                  for (std::int64_t i = 0; i < t->lay.nelements(); ++i)
                                                                      write_elem(t->lay.type, t->data + static_cast<std::size_t>(i) * t->lay.nb[0],
                                                                                 (i % 2 ? -1 : 1) * d(rng));
                                                              }});
                                    return b;
                                },
                                [&](const std::vector<host>& in) {
                                    host o = host::zeros(in[0].ne);
                                    const host& A = in[0];
                                    const host& B = in[1];
                                    for (std::int64_t i3 = 0; i3 < o.ne[3]; ++i3)
                                        for (std::int64_t i2 = 0; i2 < o.ne[2]; ++i2)
                                            for (std::int64_t i1 = 0; i1 < o.ne[1]; ++i1)
                                                for (std::int64_t i0 = 0; i0 < o.ne[0]; ++i0) {
                                                    const double x = A.at(i0, i1, i2, i3);
                                                    const double y = B.at(i0 % B.ne[0], i1 % B.ne[1], i2 % B.ne[2], i3 % B.ne[3]);
                                                    o.at(i0, i1, i2, i3) = op == op_kind::add   ? x + y
                                                                           : op == op_kind::sub ? x - y
                                                                           : op == op_kind::mul ? x * y
                                                                                                : x / y;
                                                }
                                    return o;
                                });
                        }
}

TEST_CASE("ops: unary activations, sqr/sqrt/log/sin/cos, scale, clamp, leaky_relu") {
    struct u {
        const char* name;
        std::function<any_tensor(any_tensor)> make;
        std::function<double(double)> f;
        double lo, hi;
    };
    const std::vector<u> ops = {
        {"abs", [](any_tensor a) { return abs(a); }, [](double x) { return std::fabs(x); }, -5, 5},
        {"sgn", [](any_tensor a) { return sgn(a); }, [](double x) { return double((x > 0) - (x < 0)); }, -5, 5},
        {"neg", [](any_tensor a) { return neg(a); }, [](double x) { return -x; }, -5, 5},
        {"step", [](any_tensor a) { return step(a); }, [](double x) { return x > 0 ? 1.0 : 0.0; }, -5, 5},
        {"tanh", [](any_tensor a) { return tanh(a); }, [](double x) { return std::tanh(x); }, -5, 5},
        {"elu", [](any_tensor a) { return elu(a); }, [](double x) { return x > 0 ? x : std::expm1(x); }, -5, 5},
        {"relu", [](any_tensor a) { return relu(a); }, [](double x) { return x > 0 ? x : 0.0; }, -5, 5},
        {"sigmoid", [](any_tensor a) { return sigmoid(a); }, [](double x) { return sigmoid(x); }, -10, 10},
        {"gelu", [](any_tensor a) { return gelu(a); }, [](double x) { return gelu_tanh(x); }, -10, 10},
        {"gelu_quick", [](any_tensor a) { return gelu_quick(a); }, [](double x) { return x * sigmoid(1.702 * x); }, -10, 10},
        {"silu", [](any_tensor a) { return silu(a); }, [](double x) { return x * sigmoid(x); }, -10, 10},
        {"hardswish", [](any_tensor a) { return hardswish(a); }, [](double x) { return x * std::min(1.0, std::max(0.0, (x + 3) / 6)); }, -6, 6},
        {"hardsigmoid", [](any_tensor a) { return hardsigmoid(a); }, [](double x) { return std::min(1.0, std::max(0.0, (x + 3) / 6)); }, -6, 6},
        {"exp", [](any_tensor a) { return exp(a); }, [](double x) { return std::exp(x); }, -10, 10},
        {"expm1", [](any_tensor a) { return expm1(a); }, [](double x) { return std::expm1(x); }, -10, 10},
        {"softplus", [](any_tensor a) { return softplus(a); }, [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }, -30, 30},
        {"gelu_erf", [](any_tensor a) { return gelu_erf(a); }, [](double x) { return gelu_erf_ref(x); }, -10, 10},
        {"floor", [](any_tensor a) { return floor(a); }, [](double x) { return std::floor(x); }, -10, 10},
        {"ceil", [](any_tensor a) { return ceil(a); }, [](double x) { return std::ceil(x); }, -10, 10},
        {"round", [](any_tensor a) { return round(a); }, [](double x) { return std::round(x); }, -10, 10},
        {"trunc", [](any_tensor a) { return trunc(a); }, [](double x) { return std::trunc(x); }, -10, 10},
        {"sqr", [](any_tensor a) { return sqr(a); }, [](double x) { return x * x; }, -5, 5},
        {"sqrt", [](any_tensor a) { return sqrt(a); }, [](double x) { return std::sqrt(x); }, 0.01, 10},
        {"log", [](any_tensor a) { return log(a); }, [](double x) { return std::log(x); }, 0.01, 10},
        {"sin", [](any_tensor a) { return sin(a); }, [](double x) { return std::sin(x); }, -10, 10},
        {"cos", [](any_tensor a) { return cos(a); }, [](double x) { return std::cos(x); }, -10, 10},
        {"scale", [](any_tensor a) { return scale(a, 0.75f, -0.5f); }, [](double x) { return x * 0.75 - 0.5; }, -5, 5},
        {"clamp", [](any_tensor a) { return clamp(a, -0.5f, 0.75f); }, [](double x) { return std::min(0.75, std::max(-0.5, x)); }, -2, 2},
        {"leaky_relu", [](any_tensor a) { return leaky_relu(a, 0.1f); }, [](double x) { return x > 0 ? x : 0.1 * x; }, -2, 2},
    };
    const ne4 shapes[] = {{128, 2, 2, 2}, {5, 7, 3, 2}};
    for (const auto& op : ops)
        for (type_id t : {type_id::f32, type_id::f16})
            for (const auto& s : shapes)
                for (bool strided : {false, true}) {
                    if (strided && s[0] == 128 && t == type_id::f16) continue;
                    check(std::string(op.name) + " " + tn(t) + sh(s) + (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, t, s, strided);
                              b.out = op.make(any_tensor(x)).get();
                              b.inputs = {x};
                              b.lo = op.lo, b.hi = op.hi;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = in[0];
                              for (double& v : o.v) v = op.f(v);
                              return o;
                          });
                }
}

TEST_CASE("ops: gated linear units, single-tensor (and swapped) and split forms") {
    const std::vector<std::pair<glu_op, std::function<double(double, double)>>> ops = {
        {glu_op::reglu, [](double a, double g) { return (a > 0 ? a : 0) * g; }},
        {glu_op::geglu, [](double a, double g) { return gelu_tanh(a) * g; }},
        {glu_op::swiglu, [](double a, double g) { return a * sigmoid(a) * g; }},
        {glu_op::geglu_erf, [](double a, double g) { return gelu_erf_ref(a) * g; }},
        {glu_op::geglu_quick, [](double a, double g) { return a * sigmoid(1.702 * a) * g; }},
    };
    for (const auto& gf : ops)
        for (type_id t : {type_id::f32, type_id::f16})
            for (ne4 s : {ne4{128, 2, 2, 2}, ne4{5, 7, 11, 1}})
                for (int form = 0; form < 3; ++form) {  // 0 single, 1 swapped, 2 split
                    const glu_op g = gf.first;
                    const auto& f = gf.second;
                    check(std::string(glu_name(g)) + " " + tn(t) + sh(s) + " form " + std::to_string(form),
                          [&](context& ctx) {
                              built b;
                              if (form == 2) {
                                  node* x = ctx.new_tensor(t, s);
                                  node* y = ctx.new_tensor(t, s);
                                  b.out = glu_split(any_tensor(x), any_tensor(y), g).get();
                                  b.inputs = {x, y};
                              } else {
                                  ne4 w = s;
                                  w[0] *= 2;
                                  node* x = ctx.new_tensor(t, w);
                                  b.out = glu(any_tensor(x), g, form == 1 ? glu_order::swapped : glu_order::normal).get();
                                  b.inputs = {x};
                              }
                              b.lo = -4, b.hi = 4;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros(s);
                              for (std::int64_t r = 0; r < s[1] * s[2] * s[3]; ++r)
                                  for (std::int64_t i = 0; i < s[0]; ++i) {
                                      double a, gg;
                                      if (form == 2) {
                                          a = in[0].v[static_cast<std::size_t>(r * s[0] + i)];
                                          gg = in[1].v[static_cast<std::size_t>(r * s[0] + i)];
                                      } else {
                                          const double lo = in[0].v[static_cast<std::size_t>(r * 2 * s[0] + i)];
                                          const double hi = in[0].v[static_cast<std::size_t>(r * 2 * s[0] + s[0] + i)];
                                          a = form == 1 ? hi : lo;
                                          gg = form == 1 ? lo : hi;
                                      }
                                      o.v[static_cast<std::size_t>(r * s[0] + i)] = f(a, gg);
                                  }
                              return o;
                          });
                }
    // swiglu_oai (split form)
    for (float alpha : {0.5f, 1.702f})
        for (float limit : {2.f, 7.f})
            check("swiglu_oai", [&](context& ctx) {
                built b;
                node* x = ctx.new_tensor(type_id::f32, {37, 4, 3, 1});
                node* y = ctx.new_tensor(type_id::f32, {37, 4, 3, 1});
                b.out = swiglu_oai(tensor<float, 4>(x), tensor<float, 4>(y), alpha, limit).get();
                b.inputs = {x, y};
                b.lo = -10, b.hi = 10;
                return b;
            },
            [&](const std::vector<host>& in) {
                host o = in[0];
                for (std::size_t i = 0; i < o.v.size(); ++i) {
                    const double xv = std::min(in[0].v[i], double(limit));
                    const double yv = std::min(std::max(in[1].v[i], -double(limit)), double(limit));
                    o.v[i] = xv * sigmoid(alpha * xv) * (yv + 1);
                }
                return o;
            });
}

// ---- reductions, norms ---------------------------------------------------------------------------

TEST_CASE("ops: sum, sum_rows, mean, argmax, count_equal, cross_entropy_loss") {
    for (type_id t : {type_id::f32, type_id::f16})
        for (ne4 s : {ne4{10, 5, 4, 3}, ne4{1025, 3, 1, 1}, ne4{1, 7, 2, 1}})
            for (bool strided : {false, true})
                for (op_kind op : {op_kind::sum, op_kind::sum_rows, op_kind::mean}) {
                    check(std::string(op_name(op)) + " " + tn(t) + sh(s),
                          [&](context& ctx) {
                              built b;
                              node* x = strided_input(ctx, t, s, strided);
                              any_tensor X(x);
                              b.out = (op == op_kind::sum ? sum(X) : op == op_kind::sum_rows ? sum_rows(X) : mean(X)).get();
                              b.inputs = {x};
                              b.max_nmse = t == type_id::f16 && op == op_kind::sum ? 1e-6 : 1e-7;  // one f16 rounding of a large sum
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              const host& A = in[0];
                              host o = host::zeros(op == op_kind::sum ? ne4{1, 1, 1, 1} : ne4{1, A.ne[1], A.ne[2], A.ne[3]});
                              for (std::int64_t r = 0; r < A.ne[1] * A.ne[2] * A.ne[3]; ++r) {
                                  double acc = 0;
                                  for (std::int64_t i = 0; i < A.ne[0]; ++i) acc += A.v[static_cast<std::size_t>(r * A.ne[0] + i)];
                                  if (op == op_kind::mean) acc /= static_cast<double>(A.ne[0]);
                                  if (op == op_kind::sum) o.v[0] += acc;
                                  else o.v[static_cast<std::size_t>(r)] = acc;
                              }
                              return o;
                          });
                }
    for (ne4 s : {ne4{32, 10, 1, 1}, ne4{5438, 3, 1, 1}, ne4{1, 4, 1, 1}, ne4{100, 33, 1, 1}})
        check("argmax " + sh(s),
              [&](context& ctx) {
                  built b;
                  node* x = ctx.new_tensor(type_id::f32, s);
                  b.out = argmax(tensor<float, 2>(x)).get();
                  b.inputs = {x};
                  b.max_nmse = 0;
                  return b;
              },
              [&](const std::vector<host>& in) {
                  host o = host::zeros({s[1], 1, 1, 1});
                  for (std::int64_t r = 0; r < s[1]; ++r) {
                      std::int64_t best = 0;
                      for (std::int64_t i = 1; i < s[0]; ++i)
                          if (in[0].at(i, r) > in[0].at(best, r)) best = i;
                      o.v[static_cast<std::size_t>(r)] = static_cast<double>(best);
                  }
                  return o;
              });
    for (ne4 s : {ne4{10, 5, 4, 3}, ne4{30000, 1, 1, 1}, ne4{33, 7, 1, 1}})
        for (bool strided : {false, true})
            for (bool one_hot : {false, true}) {
                check("cross_entropy_loss " + sh(s) + (strided ? " strided" : "") + (one_hot ? " one-hot" : ""),
                      [&](context& ctx) {
                          built b;
                          node* x = strided_input(ctx, type_id::f32, s, strided);
                          node* y = ctx.new_tensor(type_id::f32, s);
                          b.out = cross_entropy_loss(any_tensor(x), any_tensor(y)).get();
                          b.inputs = {x, y};
                          b.lo = -4.0, b.hi = 4.0;
                          b.init.push_back({y, [&](node* t, std::mt19937& rng) {  // each row a distribution
                                                std::uniform_real_distribution<double> u(0.0, 1.0);
                                                const std::int64_t n = t->lay.ne[0];
                                                for (std::int64_t r = 0; r < t->lay.nrows(); ++r) {
                                                    std::vector<double> v(static_cast<std::size_t>(n), 0.0);
                                                    double sum = 0;
                                                    if (one_hot) {
                                                        v[static_cast<std::size_t>(rng() % static_cast<unsigned>(n))] = 1.0, sum = 1.0;
                                                    } else {
                                                        for (double& e : v) sum += (e = u(rng));
                                                    }
                                                    for (std::int64_t i = 0; i < n; ++i)
                                                        write_elem(type_id::f32, t->data + static_cast<std::size_t>((r * n + i) * 4),
                                                                   v[static_cast<std::size_t>(i)] / sum);
                                                }
                                            }});
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          const host& X = in[0];
                          const host& Y = in[1];
                          const std::int64_t n = s[0], rows = s[1] * s[2] * s[3];
                          double total = 0;
                          for (std::int64_t r = 0; r < rows; ++r) {
                              double mx = -1e300, se = 0;
                              for (std::int64_t i = 0; i < n; ++i) mx = std::max(mx, X.v[static_cast<std::size_t>(r * n + i)]);
                              for (std::int64_t i = 0; i < n; ++i) se += std::exp(X.v[static_cast<std::size_t>(r * n + i)] - mx);
                              for (std::int64_t i = 0; i < n; ++i)
                                  total -= Y.v[static_cast<std::size_t>(r * n + i)] *
                                           (X.v[static_cast<std::size_t>(r * n + i)] - mx - std::log(se));
                          }
                          host o = host::zeros({1, 1, 1, 1});
                          o.v[0] = total / static_cast<double>(rows);
                          return o;
                      });
            }
    {
        context ctx({.no_alloc = true});
        node* x = ctx.new_tensor(type_id::f32, {10, 3, 1, 1});
        node* y = ctx.new_tensor(type_id::f32, {10, 4, 1, 1});
        CHECK_THROWS_WITH_AS(cross_entropy_loss(any_tensor(x), any_tensor(y)), doctest::Contains("differ in shape"), tessera::error);
    }
    check("count_equal [4,500]",
          [&](context& ctx) {
              built b;
              node* x = ctx.new_tensor(type_id::i32, {4, 500, 1, 1});
              node* y = ctx.new_tensor(type_id::i32, {4, 500, 1, 1});
              b.out = count_equal(any_tensor(x), any_tensor(y)).get();
              b.inputs = {x, y};
              b.init = {{x, indices_below(3)}, {y, indices_below(3)}};
              b.max_nmse = 0;
              return b;
          },
          [&](const std::vector<host>& in) {
              host o = host::zeros({1, 1, 1, 1});
              for (std::size_t i = 0; i < in[0].v.size(); ++i) o.v[0] += in[0].v[i] == in[1].v[i];
              return o;
          });
}

TEST_CASE("ops: norm, rms_norm, l2_norm") {
    for (op_kind op : {op_kind::norm, op_kind::rms_norm, op_kind::l2_norm})
        for (type_id t : {type_id::f32, type_id::f16})
            for (ne4 s : {ne4{64, 5, 4, 3}, ne4{1025, 3, 1, 1}})
                for (float eps : {0.f, 1e-6f, 0.1f, 10.f})
                    for (bool strided : {false, true}) {
                        if (op == op_kind::norm && eps == 0.f) continue;  // var of a row can round to 0 only in degenerate rows
                        check(std::string(op_name(op)) + " " + tn(t) + sh(s) + " eps " + std::to_string(eps),
                              [&](context& ctx) {
                                  built b;
                                  node* x = strided_input(ctx, t, s, strided);
                                  any_tensor X(x);
                                  b.out = (op == op_kind::norm ? norm(X, eps) : op == op_kind::rms_norm ? rms_norm(X, eps) : l2_norm(X, eps)).get();
                                  b.inputs = {x};
                                  return b;
                              },
                              [&](const std::vector<host>& in) {
                                  host o = in[0];
                                  const std::int64_t n = s[0];
                                  for (std::int64_t r = 0; r < s[1] * s[2] * s[3]; ++r) {
                                      double* row = o.v.data() + r * n;
                                      double mean = 0, sq = 0;
                                      for (std::int64_t i = 0; i < n; ++i) mean += row[i];
                                      mean /= static_cast<double>(n);
                                      if (op == op_kind::norm) {
                                          for (std::int64_t i = 0; i < n; ++i) sq += (row[i] - mean) * (row[i] - mean);
                                          const double f = 1.0 / std::sqrt(sq / static_cast<double>(n) + eps);
                                          for (std::int64_t i = 0; i < n; ++i) row[i] = (row[i] - mean) * f;
                                      } else {
                                          for (std::int64_t i = 0; i < n; ++i) sq += row[i] * row[i];
                                          const double f = op == op_kind::rms_norm ? 1.0 / std::sqrt(sq / static_cast<double>(n) + eps)
                                                                                   : 1.0 / std::max(std::sqrt(sq), double(eps));
                                          for (std::int64_t i = 0; i < n; ++i) row[i] *= f;
                                      }
                                  }
                                  return o;
                              });
                    }
}
