// Self-test of the double-precision graph interpreter (dref.hpp): every op it implements,
// over odd sizes, broadcasts and non-contiguous (strided, transposed, permuted) inputs,
// in-place ops and views, computed by the CPU executor and by dref::eval on the same
// inputs; the two must agree to NMSE <= 1e-6 (looser only where a case says why). This
// checks the interpreter, not the kernels (harness.hpp and test_ops*.cpp do that).
//
// DREF_VERBOSE=1 prints every case's NMSE.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dref.hpp"
#include "harness.hpp"

namespace dref_tests {  // (its own namespace: the unity build puts it beside test_autodiff.cpp)
namespace {

using namespace tessera;
using namespace tessera::graph;
using ne4 = std::array<std::int64_t, 4>;
using fill_fn = std::function<void(node*, std::mt19937&)>;
using harness::indices_below;

struct spec {
    node* out = nullptr;
    std::vector<node*> before;                     // expanded into the graph before out
    std::vector<std::pair<node*, fill_fn>> init;  // custom fills (leaves or params)
    double lo = -1.0, hi = 1.0;                   // uniform range of the default fill
    double bound = 1e-6;                          // NMSE bound
};
using build_fn = std::function<void(context&, spec&)>;

struct result {
    double nmse = 0;
    double bound = 0;
    bool nan = false, inf_mismatch = false;
};

backend::cpu::executor& cpu() {
    static backend::cpu::executor ex(1);
    return ex;
}

// Builds the graph, places every tensor (plan_linear), fills the leaves and params with
// random values, evaluates `out` with dref (before the compute: in-place ops overwrite
// their inputs), computes the graph on the CPU, and compares.
result run(const build_fn& build, unsigned seed) {
    context ctx({.no_alloc = true});
    spec s;
    build(ctx, s);
    REQUIRE(s.out);
    cgraph g;
    for (node* n : s.before) g.build_forward_expand(any_tensor(n));
    g.build_forward_expand(any_tensor(s.out));
    graph_buffer buf(plan_linear(g));
    std::vector<node*> inputs(g.leafs().begin(), g.leafs().end());
    for (node* n : g.nodes())
        if (n->op == op_kind::none) inputs.push_back(n);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(s.lo, s.hi);
    dref::values in;
    for (node* n : inputs) {
        bool custom = false;
        for (auto& [t, f] : s.init)
            if (t == n) f(n, rng), custom = true;
        if (!custom) {
            if (is_quantized(n->lay.type)) {
                std::vector<float> f(static_cast<std::size_t>(n->lay.nelements()));
                for (float& x : f) x = static_cast<float>(u(rng));
                quant::quantize(n->lay.type, f.data(), n->data, n->lay.nrows(), n->lay.ne[0]);
            } else {
                for (std::int64_t i = 0; i < n->lay.nelements(); ++i)
                    harness::write_elem(n->lay.type, n->data + static_cast<std::size_t>(i) * static_cast<std::size_t>(type_size(n->lay.type)),
                                        u(rng));
            }
        }
        in[n] = harness::to_host(n).v;  // the values as stored (rounded to the leaf's type)
    }
    const std::vector<double> ref = dref::eval(g, s.out, in);
    cpu().compute(g);
    const std::vector<double> got = harness::to_host(s.out).v;
    REQUIRE(ref.size() == got.size());
    result r;
    r.bound = s.bound;
    double num = 0, den = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double e = harness::round_to(s.out->lay.type, ref[i]), x = got[i];  // the output's own rounding is no error
        if (std::isnan(x) || std::isnan(e)) {
            r.nan = true;
            continue;
        }
        if (std::isinf(x) || std::isinf(e)) {
            if (x != e) r.inf_mismatch = true;
            continue;
        }
        num += (x - e) * (x - e);
        den += e * e;
    }
    r.nmse = den > 0 ? num / den : num;
    return r;
}

void check(const std::string& name, const build_fn& build, unsigned seed = 1234u) {
    const result r = run(build, seed);
    if (const char* v = std::getenv("DREF_VERBOSE"); v && *v) std::printf("  %-70s nmse %.3g (bound %.0e)\n", name.c_str(), r.nmse, r.bound);
    INFO(name, " nmse=", r.nmse, " bound=", r.bound);
    CHECK_FALSE(r.nan);
    CHECK_FALSE(r.inf_mismatch);
    CHECK(r.nmse <= r.bound);
}

std::string sh(ne4 n) { return harness::sh(n); }

// Input kinds: a leaf; a column slice of a wider leaf (rows strided); a transposed leaf
// (dims 0 and 1 swapped in memory, nb0 > element size); a permuted leaf (dims 0, 1, 2
// rotated in memory).
enum class kind { plain, strided, transposed, permuted };
const char* kind_name(kind k) {
    return k == kind::plain ? "" : k == kind::strided ? " strided" : k == kind::transposed ? " transposed" : " permuted";
}
node* input(context& ctx, ne4 ne, kind k = kind::plain, type_id t = type_id::f32) {
    switch (k) {
        case kind::plain: return ctx.new_tensor(t, ne);
        case kind::strided: return harness::strided_input(ctx, t, ne, true);
        case kind::transposed: return transpose(any_tensor(ctx.new_tensor(t, {ne[1], ne[0], ne[2], ne[3]}))).get();
        case kind::permuted: {
            // leaf [ne1, ne2, ne0, ne3]: old dim 0 -> 1, 1 -> 2, 2 -> 0
            node* leaf = ctx.new_tensor(t, {ne[1], ne[2], ne[0], ne[3]});
            node* p = permute(any_tensor(leaf), {1, 2, 0, 3}).get();
            REQUIRE(p->lay.ne == ne);
            return p;
        }
    }
    return nullptr;
}
constexpr kind all_kinds[] = {kind::plain, kind::strided, kind::transposed, kind::permuted};

// The leaf behind an input (custom fills target it).
node* root(node* n) { return n->view_src ? n->view_src : n; }

// Fills with values in [lo, hi] of alternating sign (divisors away from 0).
fill_fn away_from_zero(double lo, double hi) {
    return [lo, hi](node* t, std::mt19937& rng) {
        std::uniform_real_distribution<double> d(lo, hi);
        for (std::int64_t i = 0; i < t->lay.nelements(); ++i)
            harness::write_elem(t->lay.type, t->data + static_cast<std::size_t>(i) * static_cast<std::size_t>(type_size(t->lay.type)),
                                (i % 2 ? -1 : 1) * d(rng));
    };
}

}  // namespace

// ---- element-wise -----------------------------------------------------------------------------

TEST_CASE("dref: add, sub, mul, div with broadcast, non-contiguous inputs, in place") {
    struct shp {
        ne4 a, b;
    };
    const shp shapes[] = {{{16, 5, 4, 3}, {16, 5, 4, 3}}, {{33, 7, 3, 2}, {33, 1, 1, 1}}, {{10, 5, 4, 3}, {10, 5, 1, 3}},
                          {{10, 5, 4, 3}, {1, 5, 4, 1}},  {{12, 2, 2, 2}, {3, 1, 2, 1}},  {{1, 1, 1, 1}, {1, 1, 1, 1}},
                          {{7, 3, 1, 1}, {7, 3, 1, 1}}};
    for (op_kind op : {op_kind::add, op_kind::sub, op_kind::mul, op_kind::div})
        for (const auto& s : shapes)
            for (kind ka : all_kinds)
                for (bool inplace : {false, true}) {
                    if (inplace && ka != kind::plain) continue;
                    const kind kb = ka == kind::plain ? kind::plain : kind::strided;
                    check(std::string(op_name(op)) + " " + sh(s.a) + " " + sh(s.b) + kind_name(ka) + (inplace ? " inplace" : ""),
                          [&](context& ctx, spec& sp) {
                              node* x = input(ctx, s.a, ka);
                              node* y = input(ctx, s.b, kb);
                              any_tensor X(x), Y(y);
                              any_tensor r = op == op_kind::add   ? (inplace ? add_inplace(X, Y) : add(X, Y))
                                             : op == op_kind::sub ? (inplace ? sub_inplace(X, Y) : sub(X, Y))
                                             : op == op_kind::mul ? (inplace ? mul_inplace(X, Y) : mul(X, Y))
                                                                  : (inplace ? div_inplace(X, Y) : div(X, Y));
                              sp.out = r.get();
                              if (op == op_kind::div) sp.init.push_back({root(y), away_from_zero(0.5, 2.0)});
                          });
                }
    // f16 operands (the interpreter holds the f16 values exactly; only the output rounds)
    check("add f16 [9,4,3,1] + f32 [9,1,3,1]", [](context& ctx, spec& sp) {
        sp.out = add(any_tensor(input(ctx, {9, 4, 3, 1}, kind::plain, type_id::f16)), any_tensor(input(ctx, {9, 1, 3, 1}))).get();
    });
}

TEST_CASE("dref: add1, scale, sqr, sqrt, log, sin, cos, leaky_relu, clamp, non-contiguous inputs") {
    struct u {
        const char* name;
        std::function<any_tensor(any_tensor, context&)> make;
        double lo, hi;
    };
    const std::vector<u> ops = {
        {"add1", [](any_tensor a, context& ctx) { return add1(a, any_tensor(ctx.new_tensor(type_id::f32, {1, 1, 1, 1}))); }, -2, 2},
        {"scale", [](any_tensor a, context&) { return scale(a, 0.75f, -0.5f); }, -5, 5},
        {"sqr", [](any_tensor a, context&) { return sqr(a); }, -5, 5},
        {"sqrt", [](any_tensor a, context&) { return sqrt(a); }, 0.01, 10},
        {"log", [](any_tensor a, context&) { return log(a); }, 0.01, 10},
        {"sin", [](any_tensor a, context&) { return sin(a); }, -10, 10},
        {"cos", [](any_tensor a, context&) { return cos(a); }, -10, 10},
        {"leaky_relu", [](any_tensor a, context&) { return leaky_relu(a, 0.1f); }, -2, 2},
        {"clamp", [](any_tensor a, context&) { return clamp(a, -0.5f, 0.75f); }, -2, 2},
    };
    for (const auto& op : ops)
        for (ne4 s : {ne4{5, 7, 3, 2}, ne4{128, 2, 2, 2}, ne4{1, 1, 1, 1}})
            for (kind k : all_kinds)
                check(std::string(op.name) + " " + sh(s) + kind_name(k), [&](context& ctx, spec& sp) {
                    sp.out = op.make(any_tensor(input(ctx, s, k)), ctx).get();
                    sp.lo = op.lo, sp.hi = op.hi;
                });
    check("scale_inplace then add1_inplace", [](context& ctx, spec& sp) {
        any_tensor a(ctx.new_tensor(type_id::f32, {6, 5, 1, 1}));
        sp.out = add1_inplace(any_tensor(scale_inplace(tensor<float, 2>(a.get()), -1.5f, 0.25f)), any_tensor(ctx.new_tensor(type_id::f32, {1, 1, 1, 1}))).get();
    });
}

TEST_CASE("dref: unary sub-ops (all of ggml's, xielu too), strided and permuted inputs") {
    struct u {
        unary_op op;
        double lo, hi;
    };
    const u ops[] = {{unary_op::abs, -5, 5},        {unary_op::sgn, -5, 5},         {unary_op::neg, -5, 5},
                     {unary_op::step, -5, 5},       {unary_op::tanh, -5, 5},        {unary_op::elu, -5, 5},
                     {unary_op::relu, -5, 5},       {unary_op::sigmoid, -10, 10},   {unary_op::gelu, -6, 6},
                     {unary_op::gelu_quick, -6, 6}, {unary_op::silu, -10, 10},      {unary_op::hardswish, -6, 6},
                     {unary_op::hardsigmoid, -6, 6}, {unary_op::exp, -5, 5},        {unary_op::expm1, -5, 5},
                     {unary_op::softplus, -30, 30}, {unary_op::gelu_erf, -6, 6},    {unary_op::floor, -10, 10},
                     {unary_op::ceil, -10, 10},     {unary_op::round, -10, 10},     {unary_op::trunc, -10, 10}};
    for (const auto& op : ops)
        for (ne4 s : {ne4{5, 7, 3, 2}, ne4{64, 3, 1, 1}})
            for (kind k : {kind::plain, kind::strided, kind::permuted})
                check(std::string(unary_name(op.op)) + " " + sh(s) + kind_name(k), [&](context& ctx, spec& sp) {
                    sp.out = unary(any_tensor(input(ctx, s, k)), op.op).get();
                    sp.lo = op.lo, sp.hi = op.hi;
                });
    for (kind k : {kind::plain, kind::strided})
        check(std::string("xielu") + kind_name(k), [&](context& ctx, spec& sp) {
            sp.out = xielu(any_tensor(input(ctx, {13, 5, 2, 1}, k)), -1.5f, 2.0f, 0.25f, -0.5f).get();
            sp.lo = -5, sp.hi = 5;
        });
    check("gelu f16 [33,3,1,1]", [](context& ctx, spec& sp) {
        // the CPU's f16 gelu reads ggml's f16 table; both round to f16 at the output
        sp.out = gelu(any_tensor(input(ctx, {33, 3, 1, 1}, kind::plain, type_id::f16))).get();
        sp.lo = -4, sp.hi = 4;
    });
}

TEST_CASE("dref: gated linear units, single-tensor (normal and swapped) and split forms, swiglu_oai") {
    for (glu_op g : {glu_op::reglu, glu_op::geglu, glu_op::swiglu, glu_op::geglu_erf, glu_op::geglu_quick})
        for (ne4 s : {ne4{5, 7, 3, 1}, ne4{64, 2, 2, 2}})
            for (int form = 0; form < 3; ++form)
                check(std::string(glu_name(g)) + " " + sh(s) + (form == 0 ? " single" : form == 1 ? " swapped" : " split"),
                      [&](context& ctx, spec& sp) {
                          if (form == 2) {
                              // b is a column slice (rows contiguous, as glu needs)
                              sp.out = glu_split(any_tensor(input(ctx, s)), any_tensor(input(ctx, s, kind::strided)), g).get();
                          } else {
                              ne4 w = s;
                              w[0] *= 2;
                              sp.out = glu(any_tensor(input(ctx, w, kind::strided)), g, form == 1 ? glu_order::swapped : glu_order::normal).get();
                          }
                          sp.lo = -4, sp.hi = 4;
                      });
    for (float limit : {2.f, 7.f})
        check("swiglu_oai limit " + std::to_string(limit), [&](context& ctx, spec& sp) {
            node* x = ctx.new_tensor(type_id::f32, {37, 4, 3, 1});
            node* y = ctx.new_tensor(type_id::f32, {37, 4, 3, 1});
            sp.out = swiglu_oai(tensor<float, 4>(x), tensor<float, 4>(y), 1.702f, limit).get();
            sp.lo = -10, sp.hi = 10;
        });
}

// ---- reductions -------------------------------------------------------------------------------

TEST_CASE("dref: sum, sum_rows, mean, cumsum, argmax, count_equal, cross_entropy_loss") {
    for (ne4 s : {ne4{10, 5, 4, 3}, ne4{1025, 3, 1, 1}, ne4{1, 7, 2, 1}})
        for (kind k : all_kinds)
            for (op_kind op : {op_kind::sum, op_kind::sum_rows, op_kind::mean, op_kind::cumsum}) {
                if (op == op_kind::cumsum && k == kind::transposed) continue;  // the CPU's cumsum reads rows contiguously
                check(std::string(op_name(op)) + " " + sh(s) + kind_name(k), [&](context& ctx, spec& sp) {
                    any_tensor X(input(ctx, s, k));
                    sp.out = (op == op_kind::sum ? sum(X) : op == op_kind::sum_rows ? sum_rows(X) : op == op_kind::mean ? mean(X) : cumsum(X)).get();
                });
            }
    for (ne4 s : {ne4{32, 10, 1, 1}, ne4{1, 4, 1, 1}, ne4{101, 33, 1, 1}})
        check("argmax " + sh(s), [&](context& ctx, spec& sp) { sp.out = argmax(any_tensor(ctx.new_tensor(type_id::f32, s))).get(); });
    check("count_equal [4,500]", [](context& ctx, spec& sp) {
        node* x = ctx.new_tensor(type_id::i32, {4, 500, 1, 1});
        node* y = ctx.new_tensor(type_id::i32, {4, 500, 1, 1});
        sp.out = count_equal(any_tensor(x), any_tensor(y)).get();
        sp.init = {{x, indices_below(3)}, {y, indices_below(3)}};
    });
    for (ne4 s : {ne4{10, 5, 4, 3}, ne4{3001, 1, 1, 1}, ne4{33, 7, 1, 1}})
        for (kind k : {kind::plain, kind::strided, kind::permuted})
            for (bool one_hot : {false, true})
                check("cross_entropy_loss " + sh(s) + kind_name(k) + (one_hot ? " one-hot" : ""), [&](context& ctx, spec& sp) {
                    node* x = input(ctx, s, k);
                    node* y = ctx.new_tensor(type_id::f32, s);
                    sp.out = cross_entropy_loss(any_tensor(x), any_tensor(y)).get();
                    sp.lo = -4, sp.hi = 4;
                    sp.init.push_back({y, [one_hot](node* t, std::mt19937& rng) {  // each row a distribution
                                           std::uniform_real_distribution<double> d(0.0, 1.0);
                                           const std::int64_t n = t->lay.ne[0];
                                           for (std::int64_t r = 0; r < t->lay.nrows(); ++r) {
                                               std::vector<double> v(static_cast<std::size_t>(n), 0.0);
                                               double total = 0;
                                               if (one_hot) v[rng() % static_cast<unsigned>(n)] = 1.0, total = 1.0;
                                               else
                                                   for (double& e : v) total += (e = d(rng));
                                               for (std::int64_t i = 0; i < n; ++i)
                                                   harness::write_elem(type_id::f32, t->data + static_cast<std::size_t>((r * n + i) * 4),
                                                                       v[static_cast<std::size_t>(i)] / total);
                                           }
                                       }});
                });
}

// ---- copies, views, tiling ---------------------------------------------------------------------

TEST_CASE("dref: cpy, cont, dup, cast, reshape, view, permute, transpose") {
    for (kind k : all_kinds) {
        check(std::string("cont") + kind_name(k), [&](context& ctx, spec& sp) {
            sp.out = cont(any_tensor(input(ctx, {5, 4, 3, 2}, k))).get();
            sp.bound = 0;
        });
        check(std::string("dup") + kind_name(k), [&](context& ctx, spec& sp) {
            sp.out = dup(tensor<float, 4>(input(ctx, {5, 4, 3, 2}, k))).get();
            sp.bound = 0;
        });
        check(std::string("cast to f16") + kind_name(k), [&](context& ctx, spec& sp) {
            sp.out = cast(any_tensor(input(ctx, {5, 4, 3, 2}, k)), type_id::f16).get();
        });
        check(std::string("cpy into another shape") + kind_name(k), [&](context& ctx, spec& sp) {
            sp.out = cpy(any_tensor(input(ctx, {6, 4, 5, 1}, k)), any_tensor(ctx.new_tensor(type_id::f32, {8, 15, 1, 1}))).get();
            sp.bound = 0;
        });
    }
    check("cpy f32 -> i32 truncates", [](context& ctx, spec& sp) {
        sp.out = cpy(any_tensor(input(ctx, {7, 5, 1, 1})), any_tensor(ctx.new_tensor(type_id::i32, {7, 5, 1, 1}))).get();
        sp.lo = -100, sp.hi = 100;
        sp.bound = 0;
    });
    check("cpy into a transposed view of a leaf, then read through a view of the copy", [](context& ctx, spec& sp) {
        node* cache = ctx.new_tensor(type_id::f32, {9, 8, 1, 1});
        any_tensor dst = transpose(view(any_tensor(cache), {3, 5, 1, 1}, {cache->lay.nb[1], cache->lay.nb[2], cache->lay.nb[3]},
                                        2 * cache->lay.nb[1] + 4 * sizeof(float)));  // [5, 3]: columns 4..6 of rows 2..6, transposed
        any_tensor c = cpy(any_tensor(ctx.new_tensor(type_id::f32, {5, 3, 1, 1})), dst);
        sp.out = mul(c, any_tensor(ctx.new_tensor(type_id::f32, {5, 1, 1, 1}))).get();
    });
    check("reshape, permute, view with offset and strides, transpose, cont", [](context& ctx, spec& sp) {
        any_tensor a(ctx.new_tensor(type_id::f32, {12, 10, 1, 1}));
        any_tensor r = reshape(a, {6, 4, 5, 1});
        any_tensor p = permute(r, {2, 0, 1, 3});                                   // [4, 5, 6]
        any_tensor v = view(p, {3, 4, 2, 1}, {p.get()->lay.nb[1], p.get()->lay.nb[2], p.get()->lay.nb[3]},
                            p.get()->lay.nb[0] + p.get()->lay.nb[1] + 3 * p.get()->lay.nb[2]);  // a strided sub-block
        sp.out = cont(transpose(v)).get();
        sp.bound = 0;
    });
    check("view of a computed node feeding an op", [](context& ctx, spec& sp) {
        any_tensor a(ctx.new_tensor(type_id::f32, {8, 6, 1, 1}));
        any_tensor t = tanh(a);
        any_tensor v = view(t, {3, 4, 1, 1}, {t.get()->lay.nb[1] * 1, t.get()->lay.nb[2], t.get()->lay.nb[3]}, 5 * sizeof(float));
        sp.out = sum_rows(v).get();
    });
}

TEST_CASE("dref: repeat, repeat_back, concat, pad / pad_ext (zeros, circular), pad_reflect_1d, roll") {
    for (ne4 src : {ne4{3, 2, 1, 1}, ne4{5, 3, 2, 1}, ne4{1, 1, 1, 1}})
        for (kind k : all_kinds) {
            const ne4 dst = {src[0] * 2, src[1] * 3, src[2] * 2, 2};
            check("repeat " + sh(src) + " -> " + sh(dst) + kind_name(k), [&](context& ctx, spec& sp) {
                sp.out = repeat(any_tensor(input(ctx, src, k)), dst).get();
                sp.bound = 0;
            });
            check("repeat_back " + sh(dst) + " -> " + sh(src) + kind_name(k), [&](context& ctx, spec& sp) {
                sp.out = repeat_back(any_tensor(input(ctx, dst, k)), src).get();
            });
        }
    for (int dim = 0; dim < 4; ++dim)
        for (kind k : all_kinds) {
            ne4 sa = {5, 4, 3, 2}, sb = sa;
            sb[static_cast<std::size_t>(dim)] = 3;
            check("concat dim " + std::to_string(dim) + kind_name(k), [&](context& ctx, spec& sp) {
                sp.out = concat(any_tensor(input(ctx, sa, k)), any_tensor(input(ctx, sb)), dim).get();
                sp.bound = 0;
            });
        }
    struct pc {
        ne4 s;
        std::array<int, 4> l, r;
    };
    for (const pc c : {pc{{5, 4, 3, 2}, {0, 0, 0, 0}, {1, 2, 0, 2}}, pc{{5, 4, 3, 2}, {2, 1, 0, 1}, {1, 0, 2, 0}},
                       pc{{8, 6, 1, 1}, {5, 6, 0, 0}, {8, 2, 0, 0}}})
        for (bool circular : {false, true})
            for (kind k : all_kinds) {
                pad_params pp;
                pp.left = c.l, pp.right = c.r, pp.circular = circular;
                check("pad_ext " + sh(c.s) + (circular ? " circular" : "") + kind_name(k), [&](context& ctx, spec& sp) {
                    sp.out = pad_ext(any_tensor(input(ctx, c.s, k)), pp).get();
                    sp.bound = 0;
                });
            }
    check("pad right only", [](context& ctx, spec& sp) {
        sp.out = pad(any_tensor(input(ctx, {3, 2, 1, 1})), 2, 1).get();
        sp.bound = 0;
    });
    for (auto [p0, p1] : {std::pair{1, 2}, std::pair{6, 6}})
        for (kind k : {kind::plain, kind::transposed})
            check("pad_reflect_1d " + std::to_string(p0) + "," + std::to_string(p1) + kind_name(k), [&, p0 = p0, p1 = p1](context& ctx, spec& sp) {
                sp.out = pad_reflect_1d(any_tensor(input(ctx, {7, 3, 2, 1}, k)), p0, p1).get();
                sp.bound = 0;
            });
    for (std::array<int, 4> s4 : {std::array<int, 4>{1, 0, 0, 0}, {-3, 2, 1, -1}, {6, 4, 2, 1}})
        for (kind k : {kind::plain, kind::transposed})
            check("roll " + std::to_string(s4[0]) + "," + std::to_string(s4[1]) + "," + std::to_string(s4[2]) + "," + std::to_string(s4[3]) +
                      kind_name(k),
                  [&](context& ctx, spec& sp) {
                      sp.out = roll(any_tensor(input(ctx, {7, 5, 3, 2}, k)), s4[0], s4[1], s4[2], s4[3]).get();
                      sp.bound = 0;
                  });
}

TEST_CASE("dref: acc and set into strided views (nb1, nb2, nb3, offset), in place, set_1d / set_2d") {
    struct vc {
        ne4 a, b;
        std::int64_t s1, s2, s3, off;  // strides of the view in elements of a (0: a's own) and the offset
    };
    const vc cases[] = {{{10, 8, 4, 2}, {4, 3, 2, 1}, 0, 0, 0, 12}, {{17, 1, 1, 1}, {5, 1, 1, 1}, 0, 0, 0, 3},
                        {{12, 9, 3, 1}, {5, 4, 3, 1}, 24, 0, 0, 1}, {{8, 8, 1, 1}, {8, 8, 1, 1}, 0, 0, 0, 0},
                        {{6, 5, 4, 3}, {2, 2, 2, 2}, 7, 31, 130, 2}, {{33, 4, 2, 1}, {7, 1, 1, 1}, 0, 0, 0, 200}};
    for (op_kind op : {op_kind::acc, op_kind::set})
        for (const auto& c : cases)
            for (kind kb : {kind::plain, kind::strided, kind::transposed})
                for (bool inplace : {false, true}) {
                    if (inplace && kb != kind::plain) continue;
                    check(std::string(op_name(op)) + " " + sh(c.b) + " into " + sh(c.a) + " off " + std::to_string(c.off) + kind_name(kb) +
                              (inplace ? " inplace" : ""),
                          [&](context& ctx, spec& sp) {
                              node* x = ctx.new_tensor(type_id::f32, c.a);
                              node* y = input(ctx, c.b, kb);
                              const std::size_t es = 4;
                              const std::size_t nb1 = c.s1 ? static_cast<std::size_t>(c.s1) * es : x->lay.nb[1];
                              const std::size_t nb2 = c.s2 ? static_cast<std::size_t>(c.s2) * es : x->lay.nb[2];
                              const std::size_t nb3 = c.s3 ? static_cast<std::size_t>(c.s3) * es : x->lay.nb[3];
                              const std::size_t off = static_cast<std::size_t>(c.off) * es;
                              any_tensor X(x), Y(y);
                              sp.out = (op == op_kind::acc ? (inplace ? acc_inplace(X, Y, nb1, nb2, nb3, off) : acc(X, Y, nb1, nb2, nb3, off))
                                                           : (inplace ? set_inplace(X, Y, nb1, nb2, nb3, off) : set(X, Y, nb1, nb2, nb3, off)))
                                           .get();
                              sp.bound = op == op_kind::set ? 0.0 : 1e-6;
                          });
                }
    check("set_1d then set_2d_inplace, then an op reads the result", [](context& ctx, spec& sp) {
        node* a = ctx.new_tensor(type_id::f32, {9, 4, 1, 1});
        any_tensor s1 = set_1d(any_tensor(a), any_tensor(ctx.new_tensor(type_id::f32, {4, 1, 1, 1})), 2 * sizeof(float));
        any_tensor s2 = set_2d_inplace(s1, any_tensor(ctx.new_tensor(type_id::f32, {3, 2, 1, 1})), a->lay.nb[1] * 2, a->lay.nb[1] + 5 * sizeof(float));
        sp.out = scale(s2, 2.0f, 1.0f).get();
    });
}

TEST_CASE("dref: get_rows (2-D and 3-D, view indices), set_rows, diag, tri, fill, add_id") {
    for (ne4 s : {ne4{10, 5, 1, 1}, ne4{33, 7, 3, 1}, ne4{6, 5, 2, 3}})
        for (kind k : {kind::plain, kind::transposed})
            check("get_rows " + sh(s) + kind_name(k), [&](context& ctx, spec& sp) {
                node* a = input(ctx, s, k);
                node* idx = ctx.new_tensor(type_id::i32, {4, s[2], s[3], 1});
                sp.out = get_rows(any_tensor(a), any_tensor(idx)).get();
                sp.init.push_back({idx, indices_below(s[1])});
                sp.bound = 0;
            });
    check("get_rows with a strided view of indices", [](context& ctx, spec& sp) {
        node* a = ctx.new_tensor(type_id::f32, {7, 9, 1, 1});
        node* wide = ctx.new_tensor(type_id::i32, {5, 3, 1, 1});
        any_tensor idx = view(any_tensor(wide), {3, 1, 1, 1}, {wide->lay.nb[1], wide->lay.nb[2], wide->lay.nb[3]}, wide->lay.nb[1] + 8);
        sp.out = get_rows(any_tensor(a), idx).get();
        sp.init.push_back({wide, indices_below(9)});
        sp.bound = 0;
    });
    check("get_rows i32", [](context& ctx, spec& sp) {
        node* a = ctx.new_tensor(type_id::i32, {6, 8, 1, 1});
        node* idx = ctx.new_tensor(type_id::i32, {5, 1, 1, 1});
        sp.out = get_rows(any_tensor(a), any_tensor(idx)).get();
        sp.init = {{a, indices_below(1000)}, {idx, indices_below(8)}};
        sp.bound = 0;
    });
    check("set_rows with index broadcast", [](context& ctx, spec& sp) {
        node* a = ctx.new_tensor(type_id::f32, {31, 11, 2, 3});
        node* b = ctx.new_tensor(type_id::f32, {31, 4, 2, 3});
        node* idx = ctx.new_tensor(type_id::i32, {4, 1, 3, 1});
        sp.out = set_rows(any_tensor(a), any_tensor(b), any_tensor(idx)).get();
        sp.init.push_back({idx, harness::distinct_indices(11)});
        sp.bound = 0;
    });
    for (kind k : {kind::plain, kind::strided})
        check(std::string("diag") + kind_name(k), [&](context& ctx, spec& sp) {
            sp.out = diag(any_tensor(input(ctx, {7, 1, 3, 2}, k))).get();
            sp.bound = 0;
        });
    for (tri_type t : {tri_type::upper_diag, tri_type::upper, tri_type::lower_diag, tri_type::lower})
        check("tri " + std::to_string(static_cast<int>(t)), [&](context& ctx, spec& sp) {
            sp.out = tri(any_tensor(input(ctx, {6, 6, 2, 1}, kind::strided)), t).get();
            sp.bound = 0;
        });
    check("fill", [](context& ctx, spec& sp) {
        sp.out = fill(tensor<float, 2>(ctx.new_tensor(type_id::f32, {5, 3, 1, 1})), 2.5f).get();
        sp.bound = 0;
    });
    check("add_id", [](context& ctx, spec& sp) {
        node* a = input(ctx, {16, 4, 5, 1}, kind::strided);
        node* bias = ctx.new_tensor(type_id::f32, {16, 8, 1, 1});
        node* ids = ctx.new_tensor(type_id::i32, {4, 5, 1, 1});
        sp.out = add_id(any_tensor(a), any_tensor(bias), any_tensor(ids)).get();
        sp.init.push_back({ids, indices_below(8)});
    });
}

// ---- attention ----------------------------------------------------------------------------------

TEST_CASE("dref: diag_mask_inf, diag_mask_zero, soft_max (mask f32/f16 broadcast, scale, ALiBi, sinks)") {
    for (op_kind op : {op_kind::diag_mask_inf, op_kind::diag_mask_zero})
        for (ne4 s : {ne4{10, 10, 3, 2}, ne4{17, 5, 1, 1}})
            for (int n_past : {0, 5})
                for (kind k : {kind::plain, kind::strided, kind::transposed})
                    for (bool inplace : {false, true}) {
                        if (inplace && k != kind::plain) continue;
                        check(std::string(op_name(op)) + " " + sh(s) + " n_past " + std::to_string(n_past) + kind_name(k) + (inplace ? " inplace" : ""),
                              [&](context& ctx, spec& sp) {
                                  any_tensor x(input(ctx, s, k));
                                  sp.out = (op == op_kind::diag_mask_inf ? (inplace ? diag_mask_inf_inplace(x, n_past) : diag_mask_inf(x, n_past))
                                                                         : (inplace ? diag_mask_zero_inplace(x, n_past) : diag_mask_zero(x, n_past)))
                                               .get();
                                  sp.bound = 0;
                              });
                    }
    struct sm {
        ne4 a, m;  // m[0] == 0: no mask
    };
    const sm cases[] = {{{16, 16, 4, 2}, {0, 0, 0, 0}}, {{37, 7, 3, 2}, {37, 9, 1, 2}}, {{16, 5, 4, 1}, {16, 5, 4, 1}},
                        {{5, 3, 6, 1}, {5, 3, 3, 1}}};
    for (const auto& c : cases)
        for (type_id mt : {type_id::f32, type_id::f16})
            for (float scale : {1.f, 0.3f})
                for (float max_bias : {0.f, 8.f})
                    for (bool sinks : {false, true}) {
                        const bool has_mask = c.m[0] != 0;
                        if (!has_mask && (mt == type_id::f16 || max_bias > 0)) continue;
                        check("soft_max " + sh(c.a) + (has_mask ? " mask " + harness::tn(mt) + sh(c.m) : "") + " scale " + std::to_string(scale) +
                                  " max_bias " + std::to_string(max_bias) + (sinks ? " sinks" : ""),
                              [&](context& ctx, spec& sp) {
                                  node* x = ctx.new_tensor(type_id::f32, c.a);
                                  node* m = has_mask ? ctx.new_tensor(mt, c.m) : nullptr;
                                  node* r = soft_max_ext(any_tensor(x), any_tensor(m), scale, max_bias).get();
                                  if (sinks) soft_max_add_sinks(tensor<float, 4>(r), tensor<float, 1>(ctx.new_tensor(type_id::f32, {c.a[2], 1, 1, 1})));
                                  sp.out = r;
                                  sp.lo = -5, sp.hi = 5;
                              });
                    }
    for (kind k : {kind::strided, kind::transposed, kind::permuted})
        check(std::string("soft_max with mask, scale, sinks of a") + kind_name(k) + " input", [&](context& ctx, spec& sp) {
            node* r = soft_max_ext(any_tensor(input(ctx, {7, 5, 4, 2}, k)), any_tensor(ctx.new_tensor(type_id::f32, {7, 6, 2, 1})), 0.7f).get();
            soft_max_add_sinks(tensor<float, 4>(r), tensor<float, 1>(ctx.new_tensor(type_id::f32, {4, 1, 1, 1})));
            sp.out = r;
            sp.lo = -4, sp.hi = 4;
        });
    check("soft_max of a causal-masked, transposed input", [](context& ctx, spec& sp) {
        any_tensor x = transpose(any_tensor(ctx.new_tensor(type_id::f32, {9, 9, 2, 1})));
        sp.out = soft_max_ext(diag_mask_inf(cont(x), 0), any_tensor(nullptr), 0.5f).get();
        sp.lo = -3, sp.hi = 3;
    });
}

TEST_CASE("dref: rope normal and neox (freq_base, freq_scale, attn_factor, partial n_dims, freq factors), rope_back") {
    for (rope_mode mode : {rope_mode::normal, rope_mode::neox})
        for (ne4 s : {ne4{16, 4, 5, 1}, ne4{12, 3, 7, 2}})
            for (int n_dims : {static_cast<int>(s[0]), 8})
                for (float fs : {1.f, 0.25f})
                    for (bool ff : {false, true})
                        for (op_kind op : {op_kind::rope, op_kind::rope_back}) {
                            rope_params p;
                            p.n_dims = n_dims;
                            p.mode = mode;
                            p.freq_base = fs == 1.f ? 10000.f : 500.f;
                            p.freq_scale = fs;
                            p.attn_factor = fs == 1.f ? 1.f : 0.8f;
                            check(std::string(op_name(op)) + (mode == rope_mode::neox ? " neox " : " normal ") + sh(s) + " n_dims " +
                                      std::to_string(n_dims) + " fs " + std::to_string(fs) + (ff ? " ff" : ""),
                                  [&](context& ctx, spec& sp) {
                                      node* x = ctx.new_tensor(type_id::f32, s);
                                      node* pos = ctx.new_tensor(type_id::i32, {s[2], 1, 1, 1});
                                      node* f = ff ? ctx.new_tensor(type_id::f32, {n_dims / 2, 1, 1, 1}) : nullptr;
                                      sp.out = (op == op_kind::rope ? rope_ext(any_tensor(x), any_tensor(pos), any_tensor(f), p)
                                                                    : rope_ext_back(any_tensor(x), any_tensor(pos), any_tensor(f), p))
                                                   .get();
                                      sp.init.push_back({pos, indices_below(512)});
                                      if (f) sp.init.push_back({f, away_from_zero(0.9, 1.1)});
                                  });
                        }
    for (rope_mode mode : {rope_mode::normal, rope_mode::neox})
        check(std::string("rope of a strided view (q of a fused qkv)") + (mode == rope_mode::neox ? " neox" : " normal"), [&](context& ctx, spec& sp) {
            // qkv [3*D*H, T]; q = its first D*H values of each token as [D, H, T] (heads nb1 = D, tokens nb2 = 3*D*H)
            const std::int64_t D = 8, H = 3, T = 5;
            node* qkv = ctx.new_tensor(type_id::f32, {3 * D * H, T, 1, 1});
            any_tensor q = view(any_tensor(qkv), {D, H, T, 1}, {D * 4, qkv->lay.nb[1], qkv->lay.nb[1] * T}, 0);
            node* pos = ctx.new_tensor(type_id::i32, {T, 1, 1, 1});
            rope_params p;
            p.n_dims = 6;
            p.mode = mode;
            sp.out = rope_ext(q, any_tensor(pos), any_tensor(nullptr), p).get();
            sp.init.push_back({pos, indices_below(100)});
        });
    check("rope in place over a permuted-then-cont input", [](context& ctx, spec& sp) {
        node* leaf = ctx.new_tensor(type_id::f32, {3, 8, 5, 1});  // [H, D, T] -> [D, H, T]
        any_tensor q = cont(permute(any_tensor(leaf), {1, 0, 2, 3}));
        node* pos = ctx.new_tensor(type_id::i32, {5, 1, 1, 1});
        rope_params p;
        p.n_dims = 8;
        p.mode = rope_mode::neox;
        sp.out = rope_ext_inplace(tensor<float, 3>(q.get()), tensor<std::int32_t, 1>(pos), std::nullopt, p).get();
        sp.init.push_back({pos, indices_below(100)});
    });
}

// ---- norms ----------------------------------------------------------------------------------------

TEST_CASE("dref: norm, rms_norm, l2_norm, group_norm, non-contiguous inputs, in place") {
    for (op_kind op : {op_kind::norm, op_kind::rms_norm, op_kind::l2_norm})
        for (ne4 s : {ne4{64, 5, 4, 3}, ne4{7, 3, 1, 1}})
            for (float eps : {1e-6f, 0.1f})
                for (kind k : all_kinds)
                    check(std::string(op_name(op)) + " " + sh(s) + " eps " + std::to_string(eps) + kind_name(k), [&](context& ctx, spec& sp) {
                        any_tensor X(input(ctx, s, k));
                        sp.out = (op == op_kind::norm ? norm(X, eps) : op == op_kind::rms_norm ? rms_norm(X, eps) : l2_norm(X, eps)).get();
                    });
    check("rms_norm_inplace", [](context& ctx, spec& sp) {
        sp.out = rms_norm_inplace(tensor<float, 2>(ctx.new_tensor(type_id::f32, {9, 4, 1, 1})), 1e-5f).get();
    });
    struct gn {
        ne4 s;
        int groups;
    };
    for (const gn c : {gn{{8, 4, 6, 2}, 3}, gn{{5, 3, 7, 1}, 3}, gn{{33, 1, 4, 2}, 1}, gn{{7, 7, 5, 1}, 5}})
        for (kind k : {kind::plain, kind::strided, kind::permuted})
            for (bool inplace : {false, true}) {
                if (inplace && k != kind::plain) continue;
                check("group_norm " + sh(c.s) + " groups " + std::to_string(c.groups) + kind_name(k) + (inplace ? " inplace" : ""),
                      [&](context& ctx, spec& sp) {
                          any_tensor X(input(ctx, c.s, k));
                          sp.out = (inplace ? group_norm_inplace(X, c.groups, 1e-6f) : group_norm(X, c.groups, 1e-6f)).get();
                      });
            }
}

// ---- products ---------------------------------------------------------------------------------------

TEST_CASE("dref: mul_mat (odd sizes, batch broadcast, permuted/transposed b, strided a), out_prod, a q8_0 weight") {
    struct mm {
        std::int64_t M, N, K, A2, A3, B2, B3;
        int layout;  // 0 packed, 1 b permuted batch, 2 b transposed, 3 a a permuted view (nb0 > element size)
    };
    const mm cases[] = {{16, 1, 33, 1, 1, 1, 1, 0}, {33, 17, 67, 1, 1, 1, 1, 0}, {7, 13, 1, 1, 1, 1, 1, 0}, {10, 6, 32, 2, 1, 6, 2, 0},
                        {10, 6, 32, 1, 2, 3, 4, 0}, {12, 7, 48, 3, 1, 3, 1, 1}, {9, 5, 40, 1, 1, 1, 1, 2}, {45, 37, 30, 1, 1, 2, 1, 2},
                        {37, 5, 70, 3, 1, 3, 1, 3}};
    for (const auto& c : cases)
        check("mul_mat M" + std::to_string(c.M) + " N" + std::to_string(c.N) + " K" + std::to_string(c.K) + " batch " + std::to_string(c.A2) + "x" +
                  std::to_string(c.A3) + " -> " + std::to_string(c.B2) + "x" + std::to_string(c.B3) + " layout " + std::to_string(c.layout),
              [&](context& ctx, spec& sp) {
                  node* a;
                  if (c.layout == 3) {  // a = permute of a leaf [A2, K, M] to [K, M, A2]
                      a = permute(any_tensor(ctx.new_tensor(type_id::f32, {c.A2, c.K, c.M, c.A3})), {2, 0, 1, 3}).get();
                  } else {
                      a = ctx.new_tensor(type_id::f32, {c.K, c.M, c.A2, c.A3});
                  }
                  node* b;
                  if (c.layout == 1) b = permute(any_tensor(ctx.new_tensor(type_id::f32, {c.K, c.B2, c.N, c.B3})), {0, 2, 1, 3}).get();
                  else if (c.layout == 2) b = transpose(any_tensor(ctx.new_tensor(type_id::f32, {c.N, c.K, c.B2, c.B3}))).get();
                  else b = ctx.new_tensor(type_id::f32, {c.K, c.N, c.B2, c.B3});
                  sp.out = mul_mat(any_tensor(a), any_tensor(b)).get();
              });
    check("mul_mat f16 weights", [](context& ctx, spec& sp) {
        sp.out = mul_mat(any_tensor(ctx.new_tensor(type_id::f16, {40, 9, 1, 1})), any_tensor(ctx.new_tensor(type_id::f32, {40, 6, 1, 1}))).get();
    });
    check("mul_mat q8_0 weights", [](context& ctx, spec& sp) {
        // the interpreter reads the dequantized weights exactly; the CPU quantizes b to q8_0
        // for the dot product (about 0.4% relative error per element), hence the looser bound
        sp.out = mul_mat(any_tensor(ctx.new_tensor(type_id::q8_0, {64, 9, 2, 1})), any_tensor(ctx.new_tensor(type_id::f32, {64, 5, 4, 1}))).get();
        sp.bound = 1e-4;
    });
    struct op {
        std::int64_t M, N, K, A2, A3, B2, B3;
    };
    for (const op c : {op{7, 5, 9, 1, 1, 1, 1}, op{13, 11, 16, 2, 1, 6, 2}, op{6, 3, 5, 1, 2, 3, 4}, op{1, 1, 1, 1, 1, 1, 1}})
        for (bool tr : {false, true})
            check("out_prod M" + std::to_string(c.M) + " N" + std::to_string(c.N) + " K" + std::to_string(c.K) + " batch " + std::to_string(c.A2) +
                      "x" + std::to_string(c.A3) + " -> " + std::to_string(c.B2) + "x" + std::to_string(c.B3) + (tr ? " b transposed, a strided" : ""),
                  [&](context& ctx, spec& sp) {
                      node* a = input(ctx, {c.M, c.K, c.A2, c.A3}, tr ? kind::strided : kind::plain);
                      node* b = tr ? transpose(any_tensor(ctx.new_tensor(type_id::f32, {c.K, c.N, c.B2, c.B3}))).get()
                                   : ctx.new_tensor(type_id::f32, {c.N, c.K, c.B2, c.B3});
                      sp.out = out_prod(any_tensor(a), any_tensor(b)).get();
                  });
}

// ---- convolution, pooling ------------------------------------------------------------------------

TEST_CASE("dref: im2col 1-D and 2-D (stride, padding, dilation, transposed input), pool_1d, pool_2d") {
    struct c2 {
        std::int64_t KW, KH, IC, W, H, N;
        conv_params p;
    };
    const c2 cases[] = {{3, 3, 2, 7, 6, 1, {{1, 1}, {0, 0}, {1, 1}, true}}, {3, 2, 3, 9, 8, 2, {{2, 1}, {1, 2}, {1, 2}, true}},
                        {1, 1, 4, 5, 5, 1, {{1, 1}, {0, 0}, {1, 1}, true}}, {5, 3, 1, 11, 7, 3, {{3, 2}, {2, 1}, {2, 1}, true}}};
    for (const auto& c : cases)
        for (kind k : {kind::plain, kind::transposed})
            check("im2col 2d k" + std::to_string(c.KW) + "x" + std::to_string(c.KH) + " in " + sh({c.W, c.H, c.IC, c.N}) + kind_name(k),
                  [&](context& ctx, spec& sp) {
                      node* ker = ctx.new_tensor(type_id::f16, {c.KW, c.KH, c.IC, 2});
                      sp.out = im2col(any_tensor(ker), any_tensor(input(ctx, {c.W, c.H, c.IC, c.N}, k)), c.p).get();
                      sp.bound = 0;
                  });
    struct c1 {
        std::int64_t K, IC, L, N;
        int s, p, d;
    };
    for (const c1 c : {c1{3, 2, 11, 1, 1, 0, 1}, c1{5, 3, 20, 2, 2, 2, 1}, c1{3, 1, 9, 3, 1, 1, 2}})
        for (kind k : {kind::plain, kind::transposed})
            check("im2col 1d K" + std::to_string(c.K) + " in " + sh({c.L, c.IC, c.N, 1}) + kind_name(k), [&](context& ctx, spec& sp) {
                node* ker = ctx.new_tensor(type_id::f32, {c.K, c.IC, 2, 1});
                sp.out = im2col(any_tensor(ker), any_tensor(input(ctx, {c.L, c.IC, c.N, 1}, k)), conv_params{{c.s, 1}, {c.p, 0}, {c.d, 1}, false}).get();
                sp.bound = 0;
            });
    check("conv_2d composite (im2col + mul_mat + permute + cont)", [](context& ctx, spec& sp) {
        node* ker = ctx.new_tensor(type_id::f32, {3, 3, 2, 4});
        node* x = ctx.new_tensor(type_id::f32, {8, 7, 2, 2});
        sp.out = conv_2d(any_tensor(ker), any_tensor(x), conv_params{{1, 2}, {1, 1}, {1, 1}, true}).get();
    });
    struct p2 {
        int k0, k1, s0, s1, p0, p1;
    };
    for (ne4 s : {ne4{10, 9, 3, 1}, ne4{7, 7, 2, 2}})
        for (const p2 c : {p2{1, 1, 1, 1, 0, 0}, p2{3, 3, 1, 1, 1, 1}, p2{2, 3, 2, 1, 1, 0}, p2{3, 3, 2, 2, 0, 1}})
            for (pool_op op : {pool_op::max, pool_op::avg})
                for (kind k : {kind::plain, kind::transposed})
                    check(std::string("pool_2d ") + (op == pool_op::max ? "max " : "avg ") + sh(s) + " k" + std::to_string(c.k0) + std::to_string(c.k1) +
                              " s" + std::to_string(c.s0) + std::to_string(c.s1) + " p" + std::to_string(c.p0) + std::to_string(c.p1) + kind_name(k),
                          [&](context& ctx, spec& sp) {
                              sp.out = pool_2d(any_tensor(input(ctx, s, k)), {op, {c.k0, c.k1}, {c.s0, c.s1}, {c.p0, c.p1}}).get();
                          });
    for (const p2 c : {p2{3, 1, 2, 1, 1, 0}, p2{2, 1, 1, 1, 1, 0}, p2{4, 1, 3, 1, 0, 0}})
        for (pool_op op : {pool_op::max, pool_op::avg})
            check(std::string("pool_1d ") + (op == pool_op::max ? "max" : "avg") + " k" + std::to_string(c.k0) + " s" + std::to_string(c.s0) + " p" +
                      std::to_string(c.p0),
                  [&](context& ctx, spec& sp) {
                      sp.out = pool_1d(any_tensor(input(ctx, {10, 3, 2, 1}, kind::transposed)), {op, {c.k0, 1}, {c.s0, 1}, {c.p0, 0}}).get();
                  });
}

// ---- whole graphs: in-place aliasing, params, a small network ----------------------------------------

TEST_CASE("dref: in-place chains alias their root; a later op reads the overwritten root; params") {
    check("add_inplace then scale_inplace, then add(view, root)", [](context& ctx, spec& sp) {
        any_tensor x(ctx.new_tensor(type_id::f32, {7, 5, 1, 1}));
        any_tensor y = add_inplace(x, any_tensor(ctx.new_tensor(type_id::f32, {7, 1, 1, 1})));  // a view of x
        any_tensor z(scale_inplace(tensor<float, 2>(y.get()), 3.0f, -1.0f));
        // reads x after both in-place ops overwrote it (the executor does the same)
        sp.out = mul(z, x).get();
    });
    check("an in-place op out does not depend on still writes into the root out reads", [](context& ctx, spec& sp) {
        any_tensor x(ctx.new_tensor(type_id::f32, {6, 4, 1, 1}));
        any_tensor w = mul_inplace(x, any_tensor(ctx.new_tensor(type_id::f32, {6, 4, 1, 1})));  // computed first, over x
        sp.before = {w.get()};
        sp.out = sum_rows(x).get();  // reads x as w left it
    });
    check("in-place softmax of a permuted-then-cont input, then sum", [](context& ctx, spec& sp) {
        any_tensor a = cont(permute(any_tensor(ctx.new_tensor(type_id::f32, {4, 6, 3, 1})), {1, 0, 2, 3}));
        sp.out = sum(soft_max_inplace(tensor<float, 3>(a.get()))).get();
    });
    check("params (op none nodes) as inputs of a loss", [](context& ctx, spec& sp) {
        any_tensor w(ctx.new_tensor(type_id::f32, {6, 4, 1, 1}));
        w.set_param();
        any_tensor bias(ctx.new_tensor(type_id::f32, {4, 1, 1, 1}));
        bias.set_param();
        any_tensor x(ctx.new_tensor(type_id::f32, {6, 3, 1, 1}));
        any_tensor h = add(mul_mat(w, x), bias);
        sp.out = sum(sqr(silu(h))).get();
    });
    check("a leaf read as out", [](context& ctx, spec& sp) {
        node* a = ctx.new_tensor(type_id::f32, {5, 2, 1, 1});
        sp.out = a;
        sp.bound = 0;
    });
}

TEST_CASE("dref: a small transformer block with a cross-entropy loss") {
    check("attention + MLP + loss", [](context& ctx, spec& sp) {
        const std::int64_t D = 16, H = 2, hd = D / H, T = 5, V = 11;
        any_tensor tok(ctx.new_tensor(type_id::i32, {T, 1, 1, 1}));
        any_tensor emb(ctx.new_tensor(type_id::f32, {D, V, 1, 1}));
        any_tensor wq(ctx.new_tensor(type_id::f32, {D, D, 1, 1})), wk(ctx.new_tensor(type_id::f32, {D, D, 1, 1}));
        any_tensor wv(ctx.new_tensor(type_id::f32, {D, D, 1, 1})), wo(ctx.new_tensor(type_id::f32, {D, D, 1, 1}));
        any_tensor g1(ctx.new_tensor(type_id::f32, {D, 1, 1, 1})), wup(ctx.new_tensor(type_id::f32, {D, 2 * 24, 1, 1}));
        any_tensor wdown(ctx.new_tensor(type_id::f32, {24, D, 1, 1})), wout(ctx.new_tensor(type_id::f32, {D, V, 1, 1}));
        any_tensor pos(ctx.new_tensor(type_id::i32, {T, 1, 1, 1})), labels(ctx.new_tensor(type_id::f32, {V, T, 1, 1}));
        for (any_tensor* w : {&emb, &wq, &wk, &wv, &wo, &g1, &wup, &wdown, &wout}) w->set_param();
        any_tensor x = get_rows(emb, tok);                                       // [D, T]
        any_tensor hn = mul(rms_norm(x, 1e-5f), g1);
        rope_params rp;
        rp.n_dims = static_cast<int>(hd);
        rp.mode = rope_mode::neox;
        any_tensor q = rope_ext(reshape(mul_mat(wq, hn), {hd, H, T, 1}), pos, any_tensor(nullptr), rp);
        any_tensor k = rope_ext(reshape(mul_mat(wk, hn), {hd, H, T, 1}), pos, any_tensor(nullptr), rp);
        any_tensor v = reshape(mul_mat(wv, hn), {hd, H, T, 1});
        any_tensor qp = permute(q, {0, 2, 1, 3});                                // [hd, T, H]
        any_tensor kp = permute(k, {0, 2, 1, 3});
        any_tensor kq = mul_mat(kp, qp);                                         // [T_k, T_q, H]
        any_tensor att = soft_max_ext(diag_mask_inf(kq, 0), any_tensor(nullptr), 1.0f / std::sqrt(static_cast<float>(hd)));
        any_tensor vt = cont(permute(v, {1, 2, 0, 3}));                          // [T_k, hd, H]
        any_tensor o = mul_mat(vt, att);                                         // [hd, T_q, H]
        any_tensor oc = cont(permute(o, {0, 2, 1, 3}));                          // [hd, H, T]
        any_tensor x2 = add(x, mul_mat(wo, reshape(oc, {D, T, 1, 1})));
        any_tensor up = mul_mat(wup, rms_norm(x2, 1e-5f));                       // [48, T]
        any_tensor x3 = add(x2, mul_mat(wdown, glu(up, glu_op::swiglu)));
        any_tensor logits = mul_mat(wout, x3);                                   // [V, T]
        sp.out = cross_entropy_loss(logits, labels).get();
        sp.init = {{tok.get(), indices_below(V)}, {pos.get(), indices_below(50)}};
        sp.init.push_back({labels.get(), [](node* t, std::mt19937& rng) {  // one-hot rows
                               for (std::int64_t r = 0; r < t->lay.ne[1]; ++r) {
                                   const auto hot = static_cast<std::int64_t>(rng() % static_cast<unsigned>(t->lay.ne[0]));
                                   for (std::int64_t i = 0; i < t->lay.ne[0]; ++i)
                                       harness::write_elem(type_id::f32, t->data + static_cast<std::size_t>((r * t->lay.ne[0] + i) * 4),
                                                           i == hot ? 1.0 : 0.0);
                               }
                           }});
    });
}

// ---- refusals -------------------------------------------------------------------------------------

namespace {
// Evaluates out of the graph of `out` with every leaf given (zeros; index leaves zeros too).
std::vector<double> eval_zeros(any_tensor out) {
    cgraph g;
    g.build_forward_expand(out);
    dref::values in;
    for (node* n : g.leafs()) in[n] = std::vector<double>(static_cast<std::size_t>(n->lay.nelements()), 0.0);
    for (node* n : g.nodes())
        if (n->op == op_kind::none) in[n] = std::vector<double>(static_cast<std::size_t>(n->lay.nelements()), 0.0);
    return dref::eval(g, out.get(), in);
}
}  // namespace

TEST_CASE("dref: unimplemented ops and parameters are refused by name; missing inputs are named") {
    context ctx({.no_alloc = true});
    any_tensor a(ctx.new_tensor(type_id::f32, {8, 3, 2, 1}));
    CHECK_THROWS_WITH_AS(eval_zeros(argsort(a)), doctest::Contains("'argsort' is not implemented"), std::runtime_error);
    CHECK_THROWS_WITH_AS(eval_zeros(sum(flash_attn_ext(a, a, a, any_tensor(nullptr), 1.0f))), doctest::Contains("flash_attn_ext"),
                         std::runtime_error);
    any_tensor pos(ctx.new_tensor(type_id::i32, {2, 1, 1, 1}));
    rope_params p;
    p.n_dims = 8;
    p.ext_factor = 0.5f;
    CHECK_THROWS_WITH_AS(eval_zeros(rope_ext(a, pos, any_tensor(nullptr), p)), doctest::Contains("ext_factor"), std::runtime_error);
    p.ext_factor = 0.0f;
    p.mode = rope_mode::mrope;
    p.sections = {2, 1, 1, 0};
    any_tensor pos4(ctx.new_tensor(type_id::i32, {8, 1, 1, 1}));
    CHECK_THROWS_WITH_AS(eval_zeros(rope_ext(a, pos4, any_tensor(nullptr), p)), doctest::Contains("rope"), std::runtime_error);
    // a leaf without a value is named
    any_tensor b(ctx.new_tensor(type_id::f32, {8, 3, 2, 1}, "the_b"));
    any_tensor s = add(a, b);
    cgraph g;
    g.build_forward_expand(s);
    dref::values in;
    in[a.get()] = std::vector<double>(48, 1.0);
    CHECK_THROWS_WITH_AS(dref::eval(g, s.get(), in), doctest::Contains("the_b"), std::runtime_error);
    in[b.get()] = std::vector<double>(47, 1.0);
    CHECK_THROWS_WITH_AS(dref::eval(g, s.get(), in), doctest::Contains("47 elements"), std::runtime_error);
    in[b.get()] = std::vector<double>(48, 2.0);
    CHECK(dref::eval(g, s.get(), in) == std::vector<double>(48, 3.0));
    // nodes out does not need are not evaluated: an unimplemented op before it does not matter
    cgraph g2;
    g2.build_forward_expand(argsort(a));
    g2.build_forward_expand(s);
    CHECK(dref::eval(g2, s.get(), in) == std::vector<double>(48, 3.0));
    // a tensor of another graph
    CHECK_THROWS_WITH_AS(dref::eval(g, ctx.new_tensor(type_id::f32, {1, 1, 1, 1}), in), doctest::Contains("not a tensor of the graph"),
                         std::runtime_error);
}

}  // namespace dref_tests
