// Automatic differentiation (reverse mode), ggml's build_backward_expand in tessera's
// terms. Mark the trainable tensors with set_param() and a scalar f32 loss with
// set_loss(), build the forward graph, then
//
//   graph::cgraph g = graph::build_forward(loss);
//   graph::gradients grads = graph::build_backward(g);   // appends the backward nodes to g
//   tensor<float, 2> dw = grads[w];                      // f32, w's shape, whatever w's type
//
// Before each compute the seed (dL/dL, an f32 [1] input) must hold the loss scale:
// grads.reset(1.0f) writes it (and zeroes the accumulators). Walking the graph from the
// loss backwards, each node's gradient is split over its sources by the op's rule below;
// the contributions a tensor gets from all its readers are summed. Only the tensors that
// lie on a path from a parameter to the loss get gradients; an op on such a path that has
// no rule is refused by name (with the parameter that depends on it), never skipped.
//
// With backward_options::accumulate, every parameter's gradient is added into an f32
// accumulator (a leaf the caller places in memory that outlives a compute), so several
// micro-batches can be summed before an optimizer step; reset() zeroes them.
//
// Gradient rules (g is the gradient of the node y = op(a, b, ...); broadcast operands get
// repeat_back of their contribution; every gradient is f32 and contiguous):
//   add/sub            a: g, b: +-g                  mul   a: g b, b: g a
//   div                a: g / b, b: -g y / b          scale a: s g
//   sqr  a: 2 a g      sqrt a: g / (2 y)   log a: g / a   sin a: g cos a   cos a: -g sin a
//   sum, sum_rows, mean   a: g repeated over what was summed (mean: / ne0)
//   repeat a: repeat_back(g)     repeat_back a: repeat(g)    add1 a: g, b: sum(g)
//   acc    a: g, b: g's window   set   a: g with the window zeroed, b: g's window
//   cpy, dup, cont, cast, reshape   a: g (as a's shape)
//   view   a: zeros with g added at the window (a contiguous)
//   permute/transpose   a: g with the inverse permutation
//   mul_mat  a: out_prod(b, g), b: mul_mat(a^T, g)     out_prod  a: mul_mat(g^T, b), b: mul_mat(g, a)
//   get_rows a: get_rows_back     concat, pad (zeros)   a, b: g's windows
//   rms_norm a: rms_norm_back     norm, group_norm  a: (g - mean g - y mean(g y)) / sqrt(var + eps)
//   soft_max a: soft_max_back     rope a: rope_back    diag_mask_inf/zero a: diag_mask_zero(g)
//   im2col   b: im2col_back       pool_2d a: pool_2d_back    cross_entropy_loss logits: its _back
//   unary    abs, neg, relu, tanh, sigmoid, elu, gelu, gelu_quick, silu, exp, expm1, softplus:
//            g f'(a); sgn, step, floor, ceil, round, trunc: 0 (piecewise constant)
//   leaky_relu  g (step(a) + slope (1 - step(a)))
//   glu      reglu, geglu, geglu_quick, swiglu (single tensor and split forms)
// Refused: every other op (flash_attn_ext, mul_mat_id, ssm_*, ...), in-place compute ops
// (their inputs are overwritten before the backward pass reads them), gradients through
// masks, labels, positions and indices.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/graph/ops.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// Whether build_backward has a gradient rule for an op: all of its forms, some (unary and
// glu: the sub-ops listed above; pad: not circular; group_norm: channels divisible by the
// groups), or none (refused when a parameter depends on it). docs/ops.md's gradient column
// is checked against this.
enum class gradient_rule : std::uint8_t { no, partial, yes };

constexpr gradient_rule gradient_rule_of(op_kind op) noexcept {
    switch (op) {
        case op_kind::add: case op_kind::sub: case op_kind::mul: case op_kind::div: case op_kind::add1:
        case op_kind::scale: case op_kind::sqr: case op_kind::sqrt: case op_kind::log: case op_kind::sin:
        case op_kind::cos: case op_kind::sum: case op_kind::sum_rows: case op_kind::mean: case op_kind::repeat:
        case op_kind::repeat_back: case op_kind::acc: case op_kind::set: case op_kind::cpy: case op_kind::dup:
        case op_kind::cont: case op_kind::reshape: case op_kind::view: case op_kind::permute: case op_kind::transpose:
        case op_kind::mul_mat: case op_kind::out_prod: case op_kind::get_rows: case op_kind::concat:
        case op_kind::rms_norm: case op_kind::norm: case op_kind::soft_max: case op_kind::rope:
        case op_kind::diag_mask_inf: case op_kind::diag_mask_zero: case op_kind::im2col: case op_kind::pool_2d:
        case op_kind::cross_entropy_loss: case op_kind::leaky_relu:
            return gradient_rule::yes;
        case op_kind::unary: case op_kind::glu: case op_kind::pad: case op_kind::group_norm:
            return gradient_rule::partial;
        default: return gradient_rule::no;
    }
}
constexpr std::string_view gradient_rule_name(gradient_rule r) noexcept {
    return r == gradient_rule::yes ? "yes" : r == gradient_rule::partial ? "partial" : "no";
}

struct backward_options {
    // Sum each parameter's gradient into an accumulator across computes (micro-batches).
    bool accumulate = false;
};

class gradients;
gradients build_backward(cgraph& g, const backward_options& o = {});

// What build_backward made: the seed, and per parameter its gradient (and accumulator).
class gradients {
public:
    gradients() = default;

    // The loss node and the seed: an f32 [1] input holding dL/dL (the loss scale).
    node* loss() const noexcept { return loss_; }
    node* seed() const noexcept { return seed_; }
    bool accumulating() const noexcept { return accumulate_; }
    // The parameters in the order the graph met them.
    const std::vector<node*>& params() const noexcept { return params_; }

    // The gradient of parameter p (f32, p's shape, flagged output); throws for a tensor
    // that is not one of the graph's parameters.
    node* of(const node* p) const {
        const auto it = grad_.find(p);
        if (it == grad_.end())
            fail_cat(errc::invalid_argument, "gradients: ", p ? detail::shape_string(p) : std::string("a null tensor"),
                     " is not a parameter of the graph (set_param() it before build_backward)");
        return it->second;
    }
    // The accumulator of p (accumulate mode), else null.
    node* accumulator(const node* p) const {
        const auto it = acc_.find(p);
        return it == acc_.end() ? nullptr : it->second;
    }
    const std::vector<node*>& accumulators() const noexcept { return acc_list_; }

    template <tensor_element T, int R>
        requires float_element<T>
    tensor<float, R> operator[](tensor<T, R> p) const {
        return tensor<float, R>(of(p.get()));
    }
    any_tensor operator[](any_tensor p) const { return any_tensor(of(p.get())); }
    template <tensor_element T, int R>
        requires(!float_element<T>)
    void operator[](tensor<T, R>) const {
        static_assert(detail::dependent_false<T>,
                      "tessera::graph::gradients: only tensors of f32, f16 or bf16 have gradients (a parameter is a float tensor)");
    }

    // Writes the loss scale into the seed and zeroes the accumulators (host memory: the
    // tensors must be placed). Call it before the first compute and after each step that
    // consumed an accumulated gradient.
    void reset(float loss_scale = 1.0f) const {
        set_seed(loss_scale);
        for (node* a : acc_list_) {
            std::byte* p = a->bytes();
            if (!p) fail_cat(errc::invalid_argument, "gradients::reset: accumulator '", a->name, "' has no memory yet");
            std::memset(p, 0, a->lay.nbytes());
        }
    }
    void set_seed(float loss_scale) const {
        std::byte* p = seed_ ? seed_->bytes() : nullptr;
        if (!p) fail(errc::invalid_argument, "gradients: the seed has no memory yet (allocate the graph first)");
        std::memcpy(p, &loss_scale, sizeof loss_scale);
    }

private:
    friend gradients build_backward(cgraph& g, const backward_options& o);
    node* loss_ = nullptr;
    node* seed_ = nullptr;
    bool accumulate_ = false;
    std::vector<node*> params_;
    std::unordered_map<const node*, node*> grad_;
    std::unordered_map<const node*, node*> acc_;
    std::vector<node*> acc_list_;
};

namespace detail {

// The gradient builder's state and its rules.
class backward_builder {
public:
    backward_builder() = default;

    // Adds contribution c (of t's shape) to t's gradient.
    void contribute(node* t, node* c) {
        if (!c) return;
        if (c->lay.type != type_id::f32) c = cast(any_tensor(c), type_id::f32).get();
        if (c->lay.ne != t->lay.ne) {
            if (c->lay.nelements() != t->lay.nelements())
                fail_cat(errc::shape_mismatch, "autodiff: a contribution ", desc(c), " does not fit ", desc(t));
            c = reshape(cont_(c), t->lay.ne);
        }
        auto it = grad_.find(t);
        if (it == grad_.end()) grad_[t] = c;
        else it->second = add(any_tensor(it->second), any_tensor(c)).get();
    }
    node* grad(const node* t) const {
        const auto it = grad_.find(t);
        return it == grad_.end() ? nullptr : it->second;
    }
    void set_grad(node* t, node* g) { grad_[t] = g; }

    // Splits y's gradient g over y's sources that need one (needs(s) true).
    void apply(node* y, node* g, const std::function<bool(const node*)>& needs, const std::function<std::string()>& who);

private:
    static node* cont_(node* x) { return x->lay.is_contiguous() ? x : cont(any_tensor(x)).get(); }
    static any_tensor A(node* x) { return any_tensor(x); }
    static node* f32(node* x) { return x->lay.type == type_id::f32 ? x : cast(any_tensor(x), type_id::f32).get(); }
    // x reduced to shape `like` by summing the broadcast copies (no-op when equal): the tiling
    // of repeat and of the element-wise ops' broadcast.
    static node* reduce_to(node* x, const node* like) {
        if (x->lay.ne == like->lay.ne) return x;
        return repeat_back(A(x), like->lay.ne).get();
    }
    // x [m0, m1, B2, B3] reduced to like's batch dims [.., .., b2, b3] as mul_mat and out_prod
    // broadcast: batch i of x reads batch i / (B / b) of the smaller operand, so the copies of
    // one batch are consecutive.
    static node* reduce_batches(node* x, const node* like) {
        auto ne = x->lay.ne;
        const auto& to = like->lay.ne;
        if (ne[2] == to[2] && ne[3] == to[3]) return x;
        x = cont_(x);
        for (int d : {2, 3}) {
            const auto du = static_cast<std::size_t>(d);
            if (ne[du] == to[du]) continue;
            const std::int64_t r = ne[du] / to[du];
            const std::int64_t inner = d == 2 ? ne[0] * ne[1] : ne[0] * ne[1] * ne[2];
            const std::int64_t outer = d == 2 ? ne[3] : 1;
            // [inner, r, to, outer] -> r first, summed away
            node* v = reshape(A(x), {inner, r, to[du], outer}).get();
            node* s = sum_rows(cont(permute(A(v), {1, 0, 2, 3}))).get();  // [1, inner, to, outer]
            ne[du] = to[du];
            x = reshape(A(s), ne).get();
        }
        return x;
    }
    static node* zeros_like_f32(node* x) { return fill(A(f32(x)), 0.0f).get(); }
    // g * f'(x) for unary op u, y = u(x) (y may be null: recomputed when needed).
    node* unary_grad(unary_op u, node* g, node* x, node* y, const std::function<std::string()>& who);
    // The gradient of the row normalization y = norm(x) (over dim 0): g, x, y f32 contiguous.
    static node* norm_grad(node* g, node* x, node* y, float eps) {
        node* mu = mean(A(x)).get();
        node* xc = sub(A(x), A(mu)).get();
        node* sd = sqrt(scale(mean(sqr(A(xc))), 1.0f, eps)).get();
        node* gy = mean(mul(A(g), A(y))).get();
        node* inner = sub(sub(A(g), mean(A(g))), mul(A(y), A(gy))).get();
        return div(A(inner), A(sd)).get();
    }
    // Strides of a window of an element type et, re-expressed for an f32 copy of the same shape.
    static std::array<std::size_t, 4> f32_strides(std::array<std::size_t, 4> nb, type_id et) {
        const std::size_t es = static_cast<std::size_t>(type_size(et));
        for (auto& s : nb) s = s / es * 4;
        return nb;
    }

    std::unordered_map<const node*, node*> grad_;
};

[[noreturn]] inline void no_rule(const node* y, const std::string& why, const std::function<std::string()>& who) {
    fail_cat(errc::unsupported, "autodiff: node '", y->name, "' (", cgraph::op_label(*y), " ", y->lay.to_string(), ") ", why,
             ", and ", who(), " depends on it");
}

inline node* backward_builder::unary_grad(unary_op u, node* g, node* x, node* y, const std::function<std::string()>& who) {
    x = f32(x);
    auto act = [&]() { return y ? f32(y) : unary(A(x), u).get(); };
    switch (u) {
        case unary_op::abs: return mul(A(g), unary(A(x), unary_op::sgn)).get();
        case unary_op::neg: return scale(A(g), -1.0f).get();
        case unary_op::sgn:
        case unary_op::step:
        case unary_op::floor:
        case unary_op::ceil:
        case unary_op::round:
        case unary_op::trunc: return nullptr;  // piecewise constant: zero almost everywhere
        case unary_op::relu: return mul(A(g), unary(A(x), unary_op::step)).get();
        case unary_op::tanh: return mul(A(g), scale(sqr(A(act())), -1.0f, 1.0f)).get();
        case unary_op::sigmoid: {
            node* s = act();
            return mul(A(g), mul(A(s), scale(A(s), -1.0f, 1.0f))).get();
        }
        case unary_op::elu: {  // 1 for x > 0, exp(x) = y + 1 otherwise
            node* s = unary(A(x), unary_op::step).get();
            return mul(A(g), add(A(s), mul(scale(A(s), -1.0f, 1.0f), scale(A(act()), 1.0f, 1.0f)))).get();
        }
        case unary_op::gelu: {  // tanh form: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2), t = tanh(c (x + k x^3))
            constexpr float c = 0.7978845608028654f, k = 0.044715f;
            node* x2 = sqr(A(x)).get();
            node* t = unary(scale(mul(A(x), scale(A(x2), k, 1.0f)), c), unary_op::tanh).get();
            node* d1 = scale(A(t), 0.5f, 0.5f).get();
            node* d2 = mul(mul(scale(A(x), 0.5f * c), scale(sqr(A(t)), -1.0f, 1.0f)), scale(A(x2), 3.0f * k, 1.0f)).get();
            return mul(A(g), add(A(d1), A(d2))).get();
        }
        case unary_op::gelu_quick: {  // x s(1.702 x): s + 1.702 x s (1 - s)
            node* s = unary(scale(A(x), 1.702f), unary_op::sigmoid).get();
            return mul(A(g), add(A(s), mul(scale(A(x), 1.702f), mul(A(s), scale(A(s), -1.0f, 1.0f))))).get();
        }
        case unary_op::silu: return silu_back(A(g), A(x)).get();
        case unary_op::exp: return mul(A(g), A(act())).get();
        case unary_op::expm1: return mul(A(g), scale(A(act()), 1.0f, 1.0f)).get();
        case unary_op::softplus: return mul(A(g), unary(A(x), unary_op::sigmoid)).get();
        default: break;
    }
    fail_cat(errc::unsupported, "autodiff: unary op ", unary_name(u), " has no gradient rule, and ", who(), " depends on it");
}

inline void backward_builder::apply(node* y, node* g, const std::function<bool(const node*)>& needs,
                                    const std::function<std::string()>& who) {
    node* a = y->src[0];
    node* b = y->src[1];
    const bool na = a && needs(a), nb = b && needs(b);
    auto refuse_src = [&](int i, const char* what) {
        node* s = y->src[static_cast<std::size_t>(i)];
        if (s && needs(s)) no_rule(y, std::string("has no gradient with respect to its ") + what, who);
    };
    // In-place compute ops overwrite an input the backward pass may need.
    if (y->is_view() && y->op != op_kind::view && y->op != op_kind::reshape && y->op != op_kind::permute &&
        y->op != op_kind::transpose && y->op != op_kind::cpy)
        no_rule(y, "is an in-place op (its input is overwritten before the backward pass reads it; build it out of place)", who);
    switch (y->op) {
        case op_kind::add:
            if (na) contribute(a, g);
            if (nb) contribute(b, reduce_to(g, b));
            return;
        case op_kind::sub:
            if (na) contribute(a, g);
            if (nb) contribute(b, scale(A(reduce_to(g, b)), -1.0f).get());
            return;
        case op_kind::mul:
            if (na) contribute(a, mul(A(g), A(b)).get());
            if (nb) contribute(b, reduce_to(mul(A(g), A(f32(a))).get(), b));
            return;
        case op_kind::div:
            if (na) contribute(a, div(A(g), A(b)).get());
            if (nb) contribute(b, scale(A(reduce_to(div(mul(A(g), A(f32(y))), A(b)).get(), b)), -1.0f).get());
            return;
        case op_kind::add1:
            if (na) contribute(a, g);
            if (nb) contribute(b, sum(A(g)).get());
            return;
        case op_kind::scale: {
            const auto& p = y->param<scale_params>();
            if (na) contribute(a, scale(A(g), p.s).get());
            return;
        }
        case op_kind::sqr:
            if (na) contribute(a, scale(mul(A(g), A(f32(a))), 2.0f).get());
            return;
        case op_kind::sqrt:
            if (na) contribute(a, scale(div(A(g), A(f32(y))), 0.5f).get());
            return;
        case op_kind::log:
            if (na) contribute(a, div(A(g), A(f32(a))).get());
            return;
        case op_kind::sin:
            if (na) contribute(a, mul(A(g), cos(A(f32(a)))).get());
            return;
        case op_kind::cos:
            if (na) contribute(a, scale(mul(A(g), sin(A(f32(a)))), -1.0f).get());
            return;
        case op_kind::sum:
        case op_kind::sum_rows:
            if (na) contribute(a, repeat(A(g), a->lay.ne).get());
            return;
        case op_kind::mean:
            if (na) contribute(a, scale(repeat(A(g), a->lay.ne), 1.0f / static_cast<float>(a->lay.ne[0])).get());
            return;
        case op_kind::repeat:
            if (na) contribute(a, repeat_back(A(g), a->lay.ne).get());
            return;
        case op_kind::repeat_back:
            if (na) contribute(a, repeat(A(g), a->lay.ne).get());
            return;
        case op_kind::acc:
        case op_kind::set: {
            const auto& p = y->param<set_params>();
            const auto nbw = f32_strides({static_cast<std::size_t>(type_size(a->lay.type)), p.nb1, p.nb2, p.nb3}, a->lay.type);
            const std::size_t off = p.offset / static_cast<std::size_t>(type_size(a->lay.type)) * 4;
            node* window = view(A(g), b->lay.ne, {nbw[1], nbw[2], nbw[3]}, off).get();
            if (na) {
                if (y->op == op_kind::acc) contribute(a, g);
                else contribute(a, set(A(g), fill(A(window), 0.0f), nbw[1], nbw[2], nbw[3], off).get());
            }
            if (nb) contribute(b, cont_(window));
            return;
        }
        case op_kind::cpy:
        case op_kind::dup:
        case op_kind::cont:
            refuse_src(1, "destination (cpy overwrites it)");
            if (na) contribute(a, cont_(g));
            return;
        case op_kind::reshape:
            if (na) contribute(a, reshape(A(cont_(g)), a->lay.ne).get());
            return;
        case op_kind::view: {
            if (!na) return;
            if (!a->lay.is_contiguous()) no_rule(y, "is a view of a non-contiguous tensor (make its source contiguous with cont)", who);
            const auto nbw = f32_strides(y->lay.nb, y->lay.type);
            const std::size_t off = y->param<view_params>().offset / static_cast<std::size_t>(type_size(a->lay.type)) * 4;
            node* base = grad(a);
            if (!base) base = zeros_like_f32(a);
            // adds g into the window of a's (so far) gradient, replacing it
            grad_[a] = acc(A(base), A(g), nbw[1], nbw[2], nbw[3], off).get();
            return;
        }
        case op_kind::permute: {
            if (!na) return;
            const auto& ax = y->param<view_params>().axes;
            std::array<int, max_dims> inv{};
            for (int d = 0; d < max_dims; ++d) inv[static_cast<std::size_t>(ax[static_cast<std::size_t>(d)])] = d;
            contribute(a, cont_(permute(A(g), inv).get()));
            return;
        }
        case op_kind::transpose:
            if (na) contribute(a, cont_(transpose(A(g)).get()));
            return;
        case op_kind::mul_mat:
            if (na) contribute(a, reduce_batches(out_prod(A(b), A(g)).get(), a));
            if (nb) {  // b[k, n] += sum_m a[k, m] g[m, n]
                node* af = is_quantized(a->lay.type) ? f32(a) : a;
                // few columns (a convolution's kernel): out_prod(a, g^T) reads a in place; many: a^T
                // copied once feeds the GEMM, whose speed pays for the copy
                if (b->lay.ne[1] < 64) contribute(b, out_prod(A(af), transpose(A(g))).get());
                else contribute(b, mul_mat(cont(transpose(A(af))), A(g)).get());
            }
            return;
        case op_kind::out_prod:
            // y[i, j] = sum_k a[i, k] b[j, k]
            // (a may be broadcast over b's batch dims, as in mul_mat)
            if (na) contribute(a, reduce_batches(mul_mat(cont(transpose(A(g))), A(f32(b))).get(), a));
            if (nb) contribute(b, cont(transpose(mul_mat(A(a), A(g)))).get());
            return;
        case op_kind::get_rows:
            refuse_src(1, "indices");
            if (na) {
                if (a->lay.ne[2] != 1 || a->lay.ne[3] != 1) no_rule(y, "reads a 3-D or 4-D table (get_rows_back takes a matrix)", who);
                contribute(a, get_rows_back(A(g), A(b), A(a)).get());
            }
            return;
        case op_kind::concat: {
            const int dim = y->param<concat_params>().dim;
            const auto& gl = g->lay;
            if (na) contribute(a, cont_(view(A(g), a->lay.ne, {gl.nb[1], gl.nb[2], gl.nb[3]}, 0).get()));
            if (nb) {
                const std::size_t off = static_cast<std::size_t>(a->lay.ne[static_cast<std::size_t>(dim)]) * gl.nb[static_cast<std::size_t>(dim)];
                contribute(b, cont_(view(A(g), b->lay.ne, {gl.nb[1], gl.nb[2], gl.nb[3]}, off).get()));
            }
            return;
        }
        case op_kind::pad: {
            const auto& p = y->param<pad_params>();
            if (!na) return;
            if (p.circular) no_rule(y, "pads circularly (no gradient rule)", who);
            const auto& gl = g->lay;
            std::size_t off = 0;
            for (std::size_t d = 0; d < 4; ++d) off += static_cast<std::size_t>(p.left[d]) * gl.nb[d];
            contribute(a, cont_(view(A(g), a->lay.ne, {gl.nb[1], gl.nb[2], gl.nb[3]}, off).get()));
            return;
        }
        case op_kind::rms_norm:
            if (na) contribute(a, rms_norm_back(A(g), A(f32(a)), y->param<norm_params>().eps).get());
            return;
        case op_kind::norm:
            if (na) contribute(a, norm_grad(g, cont_(f32(a)), cont_(f32(y)), y->param<norm_params>().eps));
            return;
        case op_kind::group_norm: {
            if (!na) return;
            const auto& p = y->param<group_norm_params>();
            const auto& ne = a->lay.ne;
            if (ne[2] % p.n_groups != 0)
                no_rule(y, "has channels (" + std::to_string(ne[2]) + ") not divisible by its groups (" + std::to_string(p.n_groups) + ")", who);
            const std::array<std::int64_t, 4> rows{ne[0] * ne[1] * (ne[2] / p.n_groups), p.n_groups, ne[3], 1};
            node* gr = reshape(A(cont_(g)), rows).get();
            node* xr = reshape(A(cont_(f32(a))), rows).get();
            node* yr = reshape(A(cont_(f32(y))), rows).get();
            contribute(a, reshape(A(norm_grad(gr, xr, yr, p.eps)), ne).get());
            return;
        }
        case op_kind::soft_max: {
            refuse_src(1, "mask");
            refuse_src(2, "sinks");
            const auto& p = y->param<soft_max_params>();
            if (na) contribute(a, soft_max_ext_back(A(g), A(y), p.scale, p.max_bias).get());
            return;
        }
        case op_kind::rope:
            refuse_src(1, "positions");
            refuse_src(2, "frequency factors");
            if (na) contribute(a, rope_ext_back(A(g), A(b), A(y->src[2]), y->param<rope_params>()).get());
            return;
        case op_kind::diag_mask_inf:
        case op_kind::diag_mask_zero:
            if (na) contribute(a, diag_mask_zero(A(g), y->param<diag_mask_params>().n_past).get());
            return;
        case op_kind::im2col:
            // the kernel (src 0) only gives im2col its shape: no gradient flows to it here
            if (nb) contribute(b, im2col_back(A(g), A(a), b->lay.ne, y->param<conv_params>()).get());
            return;
        case op_kind::pool_2d:
            if (na) contribute(a, pool_2d_back(A(g), A(a), y->param<pool_params>()).get());
            return;
        case op_kind::cross_entropy_loss:
            refuse_src(1, "labels");
            if (na) contribute(a, cross_entropy_loss_back(A(g), A(a), A(b)).get());
            return;
        case op_kind::leaky_relu:
            if (na) {
                const float s = y->param<leaky_relu_params>().slope;
                contribute(a, mul(A(g), scale(unary(A(f32(a)), unary_op::step), 1.0f - s, s)).get());
            }
            return;
        case op_kind::unary:
            if (na) contribute(a, unary_grad(y->param<unary_params>().op, g, a, y, who));
            return;
        case op_kind::glu: {
            const auto& p = y->param<glu_params>();
            unary_op u{};
            switch (p.op) {
                case glu_op::reglu: u = unary_op::relu; break;
                case glu_op::geglu: u = unary_op::gelu; break;
                case glu_op::swiglu: u = unary_op::silu; break;
                case glu_op::geglu_quick: u = unary_op::gelu_quick; break;
                default: no_rule(y, std::string("(") + std::string(glu_name(p.op)) + ") has no gradient rule", who);
            }
            node *xa = a, *xb = b;  // activated half, gate
            if (!b) {
                const std::int64_t n = y->lay.ne[0];
                const std::size_t half = static_cast<std::size_t>(n) * a->lay.nb[0];
                node* lo = view(A(a), y->lay.ne, {a->lay.nb[1], a->lay.nb[2], a->lay.nb[3]}, 0).get();
                node* hi = view(A(a), y->lay.ne, {a->lay.nb[1], a->lay.nb[2], a->lay.nb[3]}, half).get();
                xa = p.swapped ? hi : lo;
                xb = p.swapped ? lo : hi;
            }
            node* act = unary(A(cont_(f32(xa))), u).get();
            node* ga = unary_grad(u, mul(A(g), A(f32(xb))).get(), cont_(f32(xa)), act, who);
            node* gb = mul(A(g), A(act)).get();
            if (!ga) ga = zeros_like_f32(gb);
            if (!b) {
                if (na) contribute(a, p.swapped ? concat(A(gb), A(ga), 0).get() : concat(A(ga), A(gb), 0).get());
                return;
            }
            if (na) contribute(a, ga);
            if (nb) contribute(b, gb);
            return;
        }
        default: break;
    }
    no_rule(y, "has no gradient rule", who);
}

}  // namespace detail

// Appends to g the gradient of its loss (the node flagged loss, an f32 scalar) for every
// parameter (flag_param) g holds. The new tensors are created in the loss's context.
inline gradients build_backward(cgraph& g, const backward_options& o) {
    gradients out;
    out.accumulate_ = o.accumulate;
    for (node* n : g.nodes())
        if (n->flags & flag_loss) {
            if (out.loss_)
                fail_cat(errc::invalid_argument, "build_backward: two losses in the graph ('", out.loss_->name, "' and '", n->name, "')");
            out.loss_ = n;
        }
    if (!out.loss_) fail(errc::invalid_argument, "build_backward: no loss in the graph (call set_loss() on a scalar f32 tensor)");
    node* loss = out.loss_;
    if (loss->lay.type != type_id::f32 || loss->lay.nelements() != 1)
        fail_cat(errc::invalid_argument, "build_backward: the loss ", detail::shape_string(loss), " must be an f32 scalar");
    for (node* n : g.nodes())
        if ((n->flags & flag_param) && n->op == op_kind::none) out.params_.push_back(n);
    if (out.params_.empty()) fail(errc::invalid_argument, "build_backward: the graph has no parameters (call set_param() on the trainable tensors)");
    for (node* p : out.params_)
        if (!is_float(p->lay.type))
            fail_cat(errc::unsupported, "build_backward: parameter ", detail::shape_string(p), " is not f32, f16 or bf16");

    // Which tensors depend on a parameter (their gradient is wanted), and one parameter each
    // for the messages.
    std::unordered_map<const node*, const node*> dep;
    for (node* n : g.nodes()) {
        if (n->flags & flag_param) {
            dep[n] = n;
            continue;
        }
        for (node* s : n->src)
            if (s)
                if (auto it = dep.find(s); it != dep.end()) {
                    dep[n] = it->second;
                    break;
                }
    }
    if (!dep.count(loss)) fail(errc::invalid_argument, "build_backward: the loss does not depend on any parameter");

    context& ctx = *loss->ctx;
    out.seed_ = ctx.new_tensor(type_id::f32, {1, 1, 1, 1}, "loss_grad_seed");
    out.seed_->flags |= flag_input | flag_output;  // output too: planned memory keeps it for the next compute

    detail::backward_builder bb;
    bb.set_grad(loss, out.seed_);
    const auto& nodes = g.nodes();
    const auto needs = [&dep](const node* s) { return dep.count(s) != 0; };
    for (std::size_t i = nodes.size(); i-- > 0;) {
        node* y = nodes[i];
        if (y->op == op_kind::none) continue;
        node* gy = bb.grad(y);
        if (!gy || !dep.count(y)) continue;
        const node* p = dep[y];
        bb.apply(y, gy, needs, [p] { return "parameter " + detail::shape_string(p); });
    }
    for (node* p : out.params_) {
        node* gp = bb.grad(p);
        if (!gp) gp = fill(cast(any_tensor(p), type_id::f32), 0.0f).get();  // p does not reach the loss
        if (!gp->lay.is_contiguous()) gp = cont(any_tensor(gp)).get();
        if (o.accumulate) {
            node* acc = ctx.new_tensor(type_id::f32, p->lay.ne, "grad_acc " + p->name);
            acc->flags |= flag_input | flag_output;
            out.acc_[p] = acc;
            out.acc_list_.push_back(acc);
            gp = add_inplace(any_tensor(acc), any_tensor(gp)).get();
        } else if (gp->is_view() || gp->op == op_kind::none || gp == out.seed_) {
            gp = cont(any_tensor(gp)).get();  // a node of its own, so flagging it output keeps it
        }
        gp->flags |= flag_output;
        if (gp->name.empty() || gp->name.find("(view)") != std::string::npos) gp->name = "grad " + p->name;
        out.grad_[p] = gp;
        g.build_forward_expand(any_tensor(gp));
    }
    return out;
}

}  // namespace graph
TESSERA_END_NAMESPACE
