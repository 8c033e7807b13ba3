// Automatic differentiation (graph/autodiff.hpp) checked the way ggml's test-grad0 and
// test-backend-ops' gradient mode check it: for each op, a random scalar loss
// L = sum(w * op(params...)) (w a fixed random tensor), the gradient autodiff builds and the
// CPU computes in f32, against central finite differences of L computed in double precision
// by an interpreter written from the ops' definitions (dref.hpp), element by element:
//   dL/dp_j ~ (L(p + h e_j) - L(p - h e_j)) / 2h,  h = 1e-4,
// compared by NMSE over all of a parameter's elements (bound 1e-6 unless a case says why).
// Cases cover broadcast operands, non-contiguous (transposed, permuted, strided) inputs and
// ops chained through views. Also: the refusals (an op without a rule, an in-place op, a
// gradient through indices or labels) name the op and the parameter; gradient accumulation
// sums over computes and reset() clears it; a parameter that does not reach the loss gets 0.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dref.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/graph/all.hpp"

namespace {

using namespace tessera;
using namespace tessera::graph;
using ne4 = std::array<std::int64_t, 4>;
using fill_fn = std::function<double(std::mt19937&, std::int64_t i)>;

struct gcase {
    node* y = nullptr;                                // the op's result (any float type)
    std::vector<std::pair<node*, fill_fn>> fills;    // custom fills (indices, labels, positive inputs)
    double bound = 1e-6;                              // NMSE bound on every parameter's gradient
    double lo = -1.0, hi = 1.0;                       // default fill
};
using build_fn = std::function<void(context&, gcase&)>;

node* param(context& ctx, ne4 ne, const char* name, type_id t = type_id::f32) {
    node* n = ctx.new_tensor(t, ne, name);
    n->flags |= flag_param;
    return n;
}
node* leaf(context& ctx, ne4 ne, type_id t = type_id::f32) { return ctx.new_tensor(t, ne); }

fill_fn uniform(double lo, double hi) {
    return [lo, hi](std::mt19937& r, std::int64_t) { return std::uniform_real_distribution<double>(lo, hi)(r); };
}
fill_fn below(std::int64_t n) {
    return [n](std::mt19937& r, std::int64_t) { return static_cast<double>(std::uniform_int_distribution<std::int64_t>(0, n - 1)(r)); };
}
// Values far from each other (pool max, relu-like kinks): a shuffled grid, so no two are within h.
fill_fn spread(std::int64_t n) {
    auto perm = std::make_shared<std::vector<std::int64_t>>();
    return [n, perm](std::mt19937& r, std::int64_t i) {
        if (perm->empty()) {
            for (std::int64_t k = 0; k < n; ++k) perm->push_back(k);
            std::shuffle(perm->begin(), perm->end(), r);
        }
        return -1.0 + 2.0 * (static_cast<double>((*perm)[static_cast<std::size_t>(i % n)]) + 0.25) / static_cast<double>(n);  // never 0
    };
}

void write_value(node* n, std::int64_t i, double v) {
    std::byte* p = n->bytes() + static_cast<std::size_t>(i) * static_cast<std::size_t>(type_size(n->lay.type));
    switch (n->lay.type) {
        case type_id::f32: { const auto f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
        case type_id::f16: { const auto b = f16::from_float(static_cast<float>(v)).bits; std::memcpy(p, &b, 2); break; }
        case type_id::i32: { const auto k = static_cast<std::int32_t>(v); std::memcpy(p, &k, 4); break; }
        default: FAIL("no writer");
    }
}
double stored(type_id t, double v) {
    if (t == type_id::f32) return static_cast<float>(v);
    if (t == type_id::f16) return f16::from_float(static_cast<float>(v)).to_float();
    return v;
}

// Builds the case, takes the gradients, computes them on the CPU and compares with central
// differences of the double-precision loss.
void check_grad(const std::string& name, const build_fn& build, int threads = 1) {
    INFO(name);
    context ctx({.no_alloc = true});
    gcase c;
    build(ctx, c);
    REQUIRE(c.y);
    node* y32 = c.y->lay.type == type_id::f32 ? c.y : cast(any_tensor(c.y), type_id::f32).get();
    node* w = leaf(ctx, c.y->lay.ne);
    node* loss = sum(mul(any_tensor(y32), any_tensor(w))).get();
    any_tensor(loss).set_loss();
    cgraph g = build_forward(any_tensor(loss));
    cgraph fwd = build_forward(any_tensor(loss));  // the forward alone, for the interpreter
    gradients gr = build_backward(g);
    graph_buffer buf(plan_linear(g));  // every tensor its own memory

    // fill every leaf and parameter, and give the interpreter the same (rounded) values
    std::mt19937 rng(1234);
    dref::values vals;
    std::vector<node*> inputs(g.leafs().begin(), g.leafs().end());
    for (node* p : gr.params()) inputs.push_back(p);
    for (node* n : inputs) {
        if (n == gr.seed()) continue;
        fill_fn f = uniform(c.lo, c.hi);
        for (auto& [t, ff] : c.fills)
            if (t == n) f = ff;
        std::vector<double> v(static_cast<std::size_t>(n->lay.nelements()));
        for (std::int64_t i = 0; i < n->lay.nelements(); ++i) {
            v[static_cast<std::size_t>(i)] = stored(n->lay.type, f(rng, i));
            write_value(n, i, v[static_cast<std::size_t>(i)]);
        }
        vals[n] = std::move(v);
    }
    gr.reset(1.0f);
    backend::cpu::executor(threads).compute(g);

    for (node* p : gr.params()) {
        INFO("parameter ", p->name, " ", p->lay.to_string());
        node* gp = gr.of(p);
        REQUIRE(gp->lay.type == type_id::f32);
        REQUIRE(gp->lay.ne == p->lay.ne);
        std::vector<float> got(static_cast<std::size_t>(p->lay.nelements()));
        std::memcpy(got.data(), gp->bytes(), got.size() * 4);
        auto& pv = vals[p];
        const double h = 1e-4;
        double num = 0, den = 0, worst = 0;
        std::int64_t worst_i = 0;
        for (std::size_t j = 0; j < pv.size(); ++j) {
            const double x0 = pv[j];
            pv[j] = x0 + h;
            const double lp = dref::eval(fwd, loss, vals)[0];
            pv[j] = x0 - h;
            const double lm = dref::eval(fwd, loss, vals)[0];
            pv[j] = x0;
            const double fd = (lp - lm) / (2 * h);
            const double d = got[j] - fd;
            num += d * d;
            den += fd * fd;
            if (std::abs(d) > worst) worst = std::abs(d), worst_i = static_cast<std::int64_t>(j);
        }
        const double nmse = den > 0 ? num / den : num;
        INFO("nmse ", nmse, " (bound ", c.bound, "), worst element ", worst_i, " off by ", worst);
        CHECK(nmse <= c.bound);
        CHECK(den > 0);  // the case does exercise the gradient
    }
}

any_tensor A(node* n) { return any_tensor(n); }
// p seen through a transpose (a non-contiguous operand of the same logical shape [a, b]).
node* transposed_param(context& ctx, std::int64_t a, std::int64_t b, const char* name) {
    return transpose(A(param(ctx, {b, a, 1, 1}, name))).get();
}

}  // namespace

TEST_CASE("autodiff: add, sub, mul, div with broadcast and non-contiguous operands") {
    for (op_kind op : {op_kind::add, op_kind::sub, op_kind::mul, op_kind::div}) {
        const std::string n(op_name(op));
        auto bin = [op](any_tensor a, any_tensor b) {
            switch (op) {
                case op_kind::add: return add(a, b);
                case op_kind::sub: return sub(a, b);
                case op_kind::mul: return mul(a, b);
                default: return div(a, b);
            }
        };
        check_grad(n + " same shape", [&](context& ctx, gcase& c) {
            node* b = param(ctx, {5, 3, 2, 1}, "b");
            c.y = bin(A(param(ctx, {5, 3, 2, 1}, "a")), A(b)).get();
            if (op == op_kind::div) c.fills.push_back({b, uniform(0.5, 1.5)});
        });
        check_grad(n + " b broadcast over rows and dim 2", [&](context& ctx, gcase& c) {
            node* b = param(ctx, {5, 1, 2, 1}, "b");
            c.y = bin(A(param(ctx, {5, 3, 4, 1}, "a")), A(b)).get();
            if (op == op_kind::div) c.fills.push_back({b, uniform(0.5, 1.5)});
        });
        check_grad(n + " transposed a", [&](context& ctx, gcase& c) {
            node* b = param(ctx, {4, 1, 1, 1}, "b");
            c.y = bin(A(transposed_param(ctx, 4, 3, "a")), A(b)).get();
            if (op == op_kind::div) c.fills.push_back({b, uniform(0.5, 1.5)});
        });
    }
    check_grad("add of f16 operands (f32 gradients)", [](context& ctx, gcase& c) {
        c.y = add(A(param(ctx, {6, 2, 1, 1}, "a", type_id::f16)), A(param(ctx, {6, 1, 1, 1}, "b", type_id::f16))).get();
        c.bound = 1e-5;  // the f16 result rounds the loss's terms
    });
}

TEST_CASE("autodiff: sqr, sqrt, log, sin, cos, scale, add1") {
    check_grad("sqr", [](context& ctx, gcase& c) { c.y = sqr(A(param(ctx, {7, 3, 1, 1}, "a"))).get(); });
    check_grad("sqrt", [](context& ctx, gcase& c) {
        node* a = param(ctx, {7, 3, 1, 1}, "a");
        c.fills.push_back({a, uniform(0.3, 2.0)});
        c.y = sqrt(A(a)).get();
    });
    check_grad("log", [](context& ctx, gcase& c) {
        node* a = param(ctx, {7, 3, 1, 1}, "a");
        c.fills.push_back({a, uniform(0.3, 2.0)});
        c.y = log(A(a)).get();
    });
    check_grad("sin of a permuted tensor", [](context& ctx, gcase& c) {
        c.y = sin(permute(A(param(ctx, {3, 4, 2, 1}, "a")), {2, 0, 1, 3})).get();
    });
    check_grad("cos", [](context& ctx, gcase& c) { c.y = cos(A(param(ctx, {7, 3, 1, 1}, "a"))).get(); });
    check_grad("scale with bias", [](context& ctx, gcase& c) { c.y = scale(A(param(ctx, {7, 3, 1, 1}, "a")), -1.7f, 0.3f).get(); });
    check_grad("add1", [](context& ctx, gcase& c) {
        c.y = add1(A(param(ctx, {7, 3, 1, 1}, "a")), A(param(ctx, {1, 1, 1, 1}, "b"))).get();
    });
}

TEST_CASE("autodiff: sum, sum_rows, mean, repeat, repeat_back") {
    check_grad("sum", [](context& ctx, gcase& c) { c.y = sqr(sum(A(param(ctx, {5, 3, 2, 1}, "a")))).get(); });
    check_grad("sum_rows", [](context& ctx, gcase& c) { c.y = sum_rows(A(param(ctx, {5, 3, 2, 1}, "a"))).get(); });
    check_grad("mean of a transposed tensor", [](context& ctx, gcase& c) { c.y = mean(A(transposed_param(ctx, 6, 4, "a"))).get(); });
    check_grad("repeat", [](context& ctx, gcase& c) { c.y = repeat(A(param(ctx, {3, 2, 1, 1}, "a")), {6, 4, 3, 1}).get(); });
    check_grad("repeat_back", [](context& ctx, gcase& c) { c.y = repeat_back(A(param(ctx, {6, 4, 3, 1}, "a")), {3, 2, 1, 1}).get(); });
}

TEST_CASE("autodiff: norms") {
    check_grad("rms_norm", [](context& ctx, gcase& c) { c.y = rms_norm(A(param(ctx, {8, 3, 2, 1}, "a")), 1e-5f).get(); });
    check_grad("norm", [](context& ctx, gcase& c) {
        c.y = norm(A(param(ctx, {8, 3, 2, 1}, "a")), 1e-5f).get();
        c.bound = 1e-5;  // f32 variance of a short row
    });
    check_grad("norm of a transposed tensor", [](context& ctx, gcase& c) {
        c.y = norm(A(transposed_param(ctx, 7, 3, "a")), 1e-5f).get();
        c.bound = 1e-5;
    });
    check_grad("group_norm", [](context& ctx, gcase& c) {
        c.y = group_norm(A(param(ctx, {3, 2, 4, 2}, "a")), 2, 1e-5f).get();
        c.bound = 1e-5;
    });
}

TEST_CASE("autodiff: mul_mat and out_prod") {
    check_grad("mul_mat", [](context& ctx, gcase& c) {
        c.y = mul_mat(A(param(ctx, {6, 4, 1, 1}, "a")), A(param(ctx, {6, 5, 1, 1}, "b"))).get();
    });
    check_grad("mul_mat with a broadcast over b's batch", [](context& ctx, gcase& c) {
        c.y = mul_mat(A(param(ctx, {6, 4, 1, 1}, "a")), A(param(ctx, {6, 5, 3, 2}, "b"))).get();
    });
    check_grad("mul_mat with a broadcast a of 2 batches over 4", [](context& ctx, gcase& c) {
        c.y = mul_mat(A(param(ctx, {5, 3, 2, 1}, "a")), A(param(ctx, {5, 2, 4, 1}, "b"))).get();
    });
    check_grad("mul_mat with a transposed b", [](context& ctx, gcase& c) {
        c.y = mul_mat(A(param(ctx, {6, 4, 1, 1}, "a")), A(transposed_param(ctx, 6, 3, "b"))).get();
    });
    check_grad("mul_mat with f16 weights", [](context& ctx, gcase& c) {
        c.y = mul_mat(A(param(ctx, {8, 4, 1, 1}, "a", type_id::f16)), A(param(ctx, {8, 3, 1, 1}, "b"))).get();
        c.bound = 1e-5;  // b is rounded to f16 for the product
    });
    check_grad("out_prod", [](context& ctx, gcase& c) {
        c.y = out_prod(A(param(ctx, {4, 6, 1, 1}, "a")), A(param(ctx, {5, 6, 1, 1}, "b"))).get();
    });
    check_grad("out_prod with a broadcast a of 2 batches over 4 and 3", [](context& ctx, gcase& c) {
        c.y = out_prod(A(param(ctx, {4, 6, 2, 1}, "a")), A(param(ctx, {5, 6, 4, 3}, "b"))).get();
    });
    check_grad("mul_mat with a broadcast over dim 3", [](context& ctx, gcase& c) {
        c.y = mul_mat(A(param(ctx, {5, 3, 2, 1}, "a")), A(param(ctx, {5, 2, 2, 3}, "b"))).get();
    });
}

TEST_CASE("autodiff: views, copies and layout ops") {
    check_grad("cpy into a leaf", [](context& ctx, gcase& c) {
        c.y = cpy(sqr(A(param(ctx, {4, 3, 1, 1}, "a"))), A(leaf(ctx, {12, 1, 1, 1}))).get();
    });
    check_grad("cont of a permute", [](context& ctx, gcase& c) {
        c.y = cont(permute(A(param(ctx, {2, 3, 4, 1}, "a")), {1, 2, 0, 3})).get();
    });
    check_grad("reshape", [](context& ctx, gcase& c) { c.y = sin(reshape(A(param(ctx, {4, 3, 2, 1}, "a")), {6, 4, 1, 1})).get(); });
    check_grad("view of a window", [](context& ctx, gcase& c) {
        node* a = param(ctx, {6, 5, 1, 1}, "a");
        c.y = sqr(view(A(a), {3, 2, 1, 1}, {a->lay.nb[1], a->lay.nb[2], a->lay.nb[3]}, 2 * 4 + a->lay.nb[1])).get();
    });
    check_grad("two views of one tensor", [](context& ctx, gcase& c) {
        node* a = param(ctx, {6, 4, 1, 1}, "a");
        any_tensor lo = view(A(a), {6, 2, 1, 1}, {a->lay.nb[1], a->lay.nb[2], a->lay.nb[3]}, 0);
        any_tensor hi = view(A(a), {6, 2, 1, 1}, {a->lay.nb[1], a->lay.nb[2], a->lay.nb[3]}, 2 * a->lay.nb[1]);
        c.y = mul(lo, hi).get();
    });
    check_grad("permute", [](context& ctx, gcase& c) { c.y = sqr(permute(A(param(ctx, {2, 3, 4, 5}, "a")), {3, 1, 0, 2})).get(); });
    check_grad("transpose", [](context& ctx, gcase& c) { c.y = sqr(transpose(A(param(ctx, {5, 3, 1, 1}, "a")))).get(); });
    check_grad("set", [](context& ctx, gcase& c) {
        node* a = param(ctx, {6, 4, 1, 1}, "a");
        c.y = set(A(a), A(param(ctx, {3, 2, 1, 1}, "b")), a->lay.nb[1], a->lay.nb[2], a->lay.nb[3], 4 + a->lay.nb[1]).get();
    });
    check_grad("acc", [](context& ctx, gcase& c) {
        node* a = param(ctx, {6, 4, 1, 1}, "a");
        c.y = sqr(acc(A(a), A(param(ctx, {3, 2, 1, 1}, "b")), a->lay.nb[1], a->lay.nb[2], a->lay.nb[3], 8)).get();
    });
    check_grad("concat in dim 1", [](context& ctx, gcase& c) {
        c.y = concat(A(param(ctx, {4, 2, 3, 1}, "a")), A(param(ctx, {4, 3, 3, 1}, "b")), 1).get();
    });
    check_grad("concat in dim 0", [](context& ctx, gcase& c) {
        c.y = concat(A(param(ctx, {2, 3, 1, 1}, "a")), A(param(ctx, {3, 3, 1, 1}, "b")), 0).get();
    });
    check_grad("pad", [](context& ctx, gcase& c) { c.y = sqr(pad(A(param(ctx, {3, 2, 2, 1}, "a")), 1, 2, 1)).get(); });
    check_grad("get_rows", [](context& ctx, gcase& c) {
        node* idx = leaf(ctx, {7, 1, 1, 1}, type_id::i32);
        c.fills.push_back({idx, below(5)});
        c.y = get_rows(A(param(ctx, {4, 5, 1, 1}, "table")), A(idx)).get();
    });
}

TEST_CASE("autodiff: unary ops, leaky_relu and the gated units") {
    const unary_op smooth[] = {unary_op::abs, unary_op::neg, unary_op::relu, unary_op::tanh, unary_op::sigmoid, unary_op::elu,
                               unary_op::gelu, unary_op::gelu_quick, unary_op::silu, unary_op::exp, unary_op::expm1, unary_op::softplus};
    for (unary_op u : smooth) {
        check_grad(std::string("unary ") + std::string(unary_name(u)), [u](context& ctx, gcase& c) {
            node* a = param(ctx, {9, 4, 1, 1}, "a");
            c.fills.push_back({a, spread(36)});  // no element within h of a kink
            c.y = unary(A(a), u).get();
        });
    }
    check_grad("silu of a transposed tensor", [](context& ctx, gcase& c) {
        c.y = unary(A(transposed_param(ctx, 5, 3, "a")), unary_op::silu).get();
    });
    check_grad("step (zero gradient) plus a smooth term", [](context& ctx, gcase& c) {
        node* a = param(ctx, {6, 2, 1, 1}, "a");
        c.fills.push_back({a, spread(12)});
        c.y = add(unary(A(a), unary_op::step), sqr(A(a))).get();
    });
    check_grad("leaky_relu", [](context& ctx, gcase& c) {
        node* a = param(ctx, {9, 4, 1, 1}, "a");
        c.fills.push_back({a, spread(36)});
        c.y = leaky_relu(A(a), 0.1f).get();
    });
    for (glu_op op : {glu_op::swiglu, glu_op::reglu, glu_op::geglu, glu_op::geglu_quick}) {
        const std::string n(glu_name(op));
        check_grad(n + " single tensor", [op](context& ctx, gcase& c) {
            node* a = param(ctx, {10, 3, 1, 1}, "a");
            c.fills.push_back({a, spread(30)});
            c.y = glu(A(a), op).get();
        });
        check_grad(n + " single tensor swapped", [op](context& ctx, gcase& c) {
            node* a = param(ctx, {10, 3, 1, 1}, "a");
            c.fills.push_back({a, spread(30)});
            c.y = glu(A(a), op, glu_order::swapped).get();
        });
        check_grad(n + " split", [op](context& ctx, gcase& c) {
            node* a = param(ctx, {5, 3, 1, 1}, "a");
            c.fills.push_back({a, spread(15)});
            c.y = glu_split(A(a), A(param(ctx, {5, 3, 1, 1}, "b")), op).get();
        });
    }
}

TEST_CASE("autodiff: soft_max, diag_mask, rope, cross_entropy_loss") {
    check_grad("soft_max with scale", [](context& ctx, gcase& c) {
        c.y = soft_max_ext(A(param(ctx, {7, 3, 2, 1}, "a")), any_tensor(), 0.7f).get();
    });
    check_grad("soft_max with a mask", [](context& ctx, gcase& c) {
        c.y = soft_max_ext(A(param(ctx, {7, 3, 2, 1}, "a")), A(leaf(ctx, {7, 3, 1, 1})), 1.3f).get();
    });
    check_grad("diag_mask_inf then soft_max", [](context& ctx, gcase& c) {
        c.y = soft_max_ext(diag_mask_inf(A(param(ctx, {5, 5, 2, 1}, "a")), 0), any_tensor(), 1.0f).get();
    });
    check_grad("diag_mask_zero", [](context& ctx, gcase& c) { c.y = diag_mask_zero(A(param(ctx, {5, 4, 2, 1}, "a")), 1).get(); });
    for (rope_mode m : {rope_mode::normal, rope_mode::neox}) {
        check_grad(m == rope_mode::normal ? "rope normal" : "rope neox", [m](context& ctx, gcase& c) {
            node* pos = leaf(ctx, {3, 1, 1, 1}, type_id::i32);
            c.fills.push_back({pos, below(20)});
            rope_params p{6};
            p.mode = m;
            p.freq_base = 100.0f;
            c.y = rope_ext(A(param(ctx, {8, 2, 3, 1}, "a")), A(pos), any_tensor(), p).get();
        });
    }
    check_grad("cross_entropy_loss", [](context& ctx, gcase& c) {
        node* labels = leaf(ctx, {6, 4, 1, 1});
        c.fills.push_back({labels, [](std::mt19937&, std::int64_t i) { return i % 6 == (i / 6) % 6 ? 1.0 : 0.0; }});
        c.y = cross_entropy_loss(A(param(ctx, {6, 4, 1, 1}, "logits")), A(labels)).get();
    });
}

TEST_CASE("autodiff: im2col, conv_2d, pool_2d, an attention block") {
    check_grad("im2col (input gradient)", [](context& ctx, gcase& c) {
        node* k = leaf(ctx, {3, 3, 2, 1});
        c.y = im2col(A(k), A(param(ctx, {6, 5, 2, 2}, "x")), conv_params{.s = {1, 2}, .p = {1, 0}, .d = {1, 1}}).get();
    });
    check_grad("conv_2d through im2col (kernel and input)", [](context& ctx, gcase& c) {
        c.y = conv_2d(A(param(ctx, {3, 3, 2, 3}, "kernel")), A(param(ctx, {6, 5, 2, 2}, "x")),
                      conv_params{.s = {1, 1}, .p = {1, 1}, .d = {1, 1}}).get();
    });
    check_grad("pool_2d avg", [](context& ctx, gcase& c) {
        c.y = pool_2d(A(param(ctx, {6, 5, 2, 1}, "x")), {pool_op::avg, {2, 2}, {2, 2}, {1, 1}}).get();
    });
    check_grad("pool_2d max", [](context& ctx, gcase& c) {
        node* x = param(ctx, {6, 4, 2, 1}, "x");
        c.fills.push_back({x, spread(48)});
        c.y = pool_2d(A(x), {pool_op::max, {2, 2}, {2, 2}, {0, 0}}).get();
    });
    check_grad("causal attention from mul_mat, scale, diag_mask_inf, soft_max", [](context& ctx, gcase& c) {
        // q, k, v [d, T, H]: scores [Tk, Tq, H] = k^T q, masked, soft_max, out = v scores
        const std::int64_t d = 4, T = 3, H = 2;
        node* q = param(ctx, {d, T, H, 1}, "q");
        node* k = param(ctx, {d, T, H, 1}, "k");
        node* v = param(ctx, {d, T, H, 1}, "v");
        any_tensor s = soft_max_ext(diag_mask_inf(scale(mul_mat(A(k), A(q)), 0.5f), 0), any_tensor(), 1.0f);
        any_tensor vt = cont(transpose(A(v)));  // [T, d, H]
        c.y = mul_mat(vt, s).get();            // [d, Tq, H]
    });
    check_grad("an MLP with rms_norm and swiglu, 2 threads", [](context& ctx, gcase& c) {
        any_tensor x = A(leaf(ctx, {6, 4, 1, 1}));
        any_tensor h = rms_norm(x, 1e-6f);
        h = mul(h, A(param(ctx, {6, 1, 1, 1}, "norm")));
        any_tensor up = mul_mat(A(param(ctx, {6, 8, 1, 1}, "w_up")), h);
        any_tensor gate = mul_mat(A(param(ctx, {6, 8, 1, 1}, "w_gate")), h);
        c.y = mul_mat(A(param(ctx, {8, 6, 1, 1}, "w_down")), glu_split(gate, up, glu_op::swiglu)).get();
    }, 2);
}

TEST_CASE("autodiff: refusals name the op and the parameter") {
    auto refused = [](const std::function<any_tensor(context&, any_tensor)>& f, const char* expect) {
        context ctx({.no_alloc = true});
        any_tensor p = new_tensor(ctx, type_id::f32, {4, 3, 1, 1}, "w");
        p.set_param();
        any_tensor l = sum(f(ctx, p));
        l.set_loss();
        cgraph g = build_forward(l);
        CHECK_THROWS_WITH(build_backward(g), doctest::Contains(expect));
    };
    refused([](context&, any_tensor p) { return clamp(p, -0.5f, 0.5f); }, "(clamp f32 [4, 3, 1, 1]) has no gradient rule, and parameter 'w'");
    refused([](context&, any_tensor p) { return unary(p, unary_op::hardswish); }, "unary op hardswish has no gradient rule, and parameter 'w'");
    refused([](context&, any_tensor p) { return sqr_inplace(p); }, "is an in-place op");
    refused([](context& ctx, any_tensor p) {
        any_tensor table = new_tensor(ctx, type_id::f32, {4, 5, 1, 1});
        return get_rows(table, cast(view(p, {3, 1, 1, 1}, {12, 12, 12}, 0), type_id::i32));
    }, "has no gradient with respect to its indices");
    refused([](context& ctx, any_tensor p) {
        any_tensor logits = new_tensor(ctx, type_id::f32, {4, 3, 1, 1});
        return cross_entropy_loss(logits, p);
    }, "has no gradient with respect to its labels");

    context ctx({.no_alloc = true});
    any_tensor a = new_tensor(ctx, type_id::f32, {4, 1, 1, 1});
    CHECK_THROWS_WITH(a.set_loss(), doctest::Contains("is not an f32 scalar"));
    any_tensor s = sum(a);
    s.set_loss();
    cgraph g = build_forward(s);
    CHECK_THROWS_WITH(build_backward(g), doctest::Contains("no parameters"));
}

TEST_CASE("autodiff: accumulation across computes, reset, and a parameter off the loss's path") {
    context ctx({.no_alloc = true});
    auto w = new_tensor<float, 1>(ctx, {3}, "w").set_param();
    auto unused = new_tensor<float, 1>(ctx, {2}, "unused").set_param();
    auto x = new_tensor<float, 1>(ctx, {3}, "x");
    auto l = sum(mul(mul(w, x), x));  // L = sum(w x^2)
    l.set_loss();
    cgraph g = build_forward(l);
    g.build_forward_expand(unused);
    gradients gr = build_backward(g, {.accumulate = true});
    graph_buffer buf(plan_memory(g));
    REQUIRE(gr.accumulator(w.get()));
    std::vector<float> xv{1.0f, 2.0f, -3.0f}, wv{0.5f, 0.5f, 0.5f};
    w.set(wv);
    x.set(xv);
    gr.reset(1.0f);
    backend::cpu::executor ex(1);
    ex.compute(g);
    x.set(xv);  // inputs are written before every compute (the planner reuses their memory after their last reader)
    ex.compute(g);
    std::vector<float> dw(3), du(2);
    gr[w].get(dw);
    for (int i = 0; i < 3; ++i) CHECK(dw[static_cast<std::size_t>(i)] == doctest::Approx(2 * xv[static_cast<std::size_t>(i)] * xv[static_cast<std::size_t>(i)]));
    gr[unused].get(du);
    CHECK(du[0] == 0.0f);
    CHECK(du[1] == 0.0f);
    gr.reset(0.5f);  // zeroes the accumulators; the seed scales the gradient
    x.set(xv);
    ex.compute(g);
    gr[w].get(dw);
    for (int i = 0; i < 3; ++i) CHECK(dw[static_cast<std::size_t>(i)] == doctest::Approx(0.5 * xv[static_cast<std::size_t>(i)] * xv[static_cast<std::size_t>(i)]));
    CHECK_THROWS_WITH(gr.of(x.get()), doctest::Contains("is not a parameter of the graph"));
}

TEST_CASE("autodiff: docs/ops.md's gradient column") {
    const char* root = std::getenv("TESSERA_SOURCE_ROOT");
    REQUIRE_MESSAGE(root, "TESSERA_SOURCE_ROOT must name the source tree (meson sets it)");
    std::ifstream f(std::string(root) + "/docs/ops.md");
    REQUIRE(f.good());
    std::map<std::string, std::string> grad;
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("| `", 0) != 0) continue;
        const auto e = line.find('`', 3);
        const std::string name = line.substr(3, e - 3);
        const auto c1 = line.find('|', e) + 1;   // CPU
        const auto c2 = line.find('|', c1) + 1;  // gradient
        const auto c3 = line.find('|', c2);
        std::string g = line.substr(c2, c3 - c2);
        g.erase(0, g.find_first_not_of(' '));
        g.erase(g.find_last_not_of(' ') + 1);
        if (!grad.count(name)) grad[name] = g;  // the op table comes first
    }
    for (std::size_t i = 0; i < op_count; ++i) {
        const auto op = static_cast<op_kind>(i);
        INFO(std::string(op_name(op)));
        REQUIRE(grad.count(std::string(op_name(op))) == 1);
        CHECK(grad[std::string(op_name(op))] == gradient_rule_name(gradient_rule_of(op)));
    }
}
