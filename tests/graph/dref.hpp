// dref: a double-precision interpreter of a forward graph, for tests (the reference the
// autodiff checks take central finite differences of). It evaluates the nodes of a
// cgraph from each op's definition (ggml's semantics), in double, independently of the
// CPU kernels:
//
//   dref::values in;                      // logical elements (dim 0 fastest) of each leaf / param
//   std::vector<double> y = dref::eval(g, out, in);
//
// Storage model: one double array per root tensor (a node that is not a view), indexed
// by byte offset / element size (for a block type: block index * block size + the
// element within the block), so views, permutes, transposes, strided views and in-place
// ops (a view of its root with a compute op, which writes into the root's array) behave
// as the real tensors do: every read and write walks the node's layout (ne, nb,
// view_offs) in its root's array. Float results are not rounded to the node's type (f16
// and bf16 nodes hold doubles); integer results (i32, i64) are truncated toward zero.
//
// What is evaluated: `out` and what it depends on (sources and view roots), plus every
// node before `out` in the graph's order that writes in place into the memory of a
// tensor so needed (and what that node depends on), in the graph's order. The result is
// what `out` holds right after it is computed. Nodes `out` does not depend on are not
// evaluated, so their ops need not be implemented and their leaves need no values.
//
// An op it does not implement (or a parameter it does not: rope with ext_factor != 0,
// the multi-section rope modes) throws std::runtime_error naming the op and the node.
#pragma once

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tessera/graph/all.hpp"

namespace dref {
using namespace tessera;
using namespace tessera::graph;

// Logical elements of each leaf / param (dim 0 fastest, the node's ne), in double.
using values = std::unordered_map<const node*, std::vector<double>>;

namespace detail {

using ne4 = std::array<std::int64_t, 4>;

[[noreturn]] inline void fail(const std::string& what) { throw std::runtime_error("dref: " + what); }

inline std::string label(const node* n) {
    return cgraph::op_label(*n) + " node '" + n->name + "' " + n->lay.to_string();
}

// A tensor's logical elements, dim 0 fastest.
struct arr {
    ne4 ne{1, 1, 1, 1};
    std::vector<double> v;

    static arr zeros(ne4 e) {
        arr a;
        a.ne = e;
        a.v.assign(static_cast<std::size_t>(e[0] * e[1] * e[2] * e[3]), 0.0);
        return a;
    }
    std::int64_t n() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    std::int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
    std::size_t idx(std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) const {
        return static_cast<std::size_t>(((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0);
    }
    double at(std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) const { return v[idx(i0, i1, i2, i3)]; }
    double& at(std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) { return v[idx(i0, i1, i2, i3)]; }
    // Element r*ne0 + i: row r (rows counted over dims 1..3), column i.
    double& row(std::int64_t r, std::int64_t i) { return v[static_cast<std::size_t>(r * ne[0] + i)]; }
    double row(std::int64_t r, std::int64_t i) const { return v[static_cast<std::size_t>(r * ne[0] + i)]; }
};

// Calls f(i0, i1, i2, i3) over every index of extents e, dim 0 fastest.
template <class F>
void for_each(const ne4& e, F&& f) {
    for (std::int64_t i3 = 0; i3 < e[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < e[2]; ++i2)
            for (std::int64_t i1 = 0; i1 < e[1]; ++i1)
                for (std::int64_t i0 = 0; i0 < e[0]; ++i0) f(i0, i1, i2, i3);
}

// ---- scalar functions, from their definitions ------------------------------------------------

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
inline double gelu_tanh(double x) {
    const double c = std::sqrt(2.0 / 3.14159265358979323846);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
inline double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_quick(double x) { return x * sigmoid(1.702 * x); }

inline double unary(const unary_params& p, double x) {
    switch (p.op) {
        case unary_op::abs: return std::fabs(x);
        case unary_op::sgn: return static_cast<double>((x > 0) - (x < 0));
        case unary_op::neg: return -x;
        case unary_op::step: return x > 0 ? 1.0 : 0.0;
        case unary_op::tanh: return std::tanh(x);
        case unary_op::elu: return x > 0 ? x : std::expm1(x);
        case unary_op::relu: return x > 0 ? x : 0.0;
        case unary_op::sigmoid: return sigmoid(x);
        case unary_op::gelu: return gelu_tanh(x);
        case unary_op::gelu_quick: return gelu_quick(x);
        case unary_op::silu: return x * sigmoid(x);
        case unary_op::hardswish: return x * std::min(1.0, std::max(0.0, (x + 3.0) / 6.0));
        case unary_op::hardsigmoid: return std::min(1.0, std::max(0.0, (x + 3.0) / 6.0));
        case unary_op::exp: return std::exp(x);
        case unary_op::expm1: return std::expm1(x);
        case unary_op::softplus: return softplus(x);
        case unary_op::gelu_erf: return gelu_erf(x);
        case unary_op::xielu: {
            // the node keeps ggml's derived factors: alpha_n = beta + softplus(alpha_n'), alpha_p = softplus(alpha_p')
            const double an = p.alpha_n, ap = p.alpha_p, beta = p.beta, eps = p.eps;
            return x > 0 ? ap * x * x + beta * x : an * (std::expm1(std::min(x, eps)) - x) + beta * x;
        }
        case unary_op::floor: return std::floor(x);
        case unary_op::ceil: return std::ceil(x);
        case unary_op::round: return std::round(x);
        case unary_op::trunc: return std::trunc(x);
    }
    fail("unary: unknown sub-op " + std::to_string(static_cast<int>(p.op)));
}

// act(x) * g for the gated linear units.
inline double glu(const glu_params& p, double x, double g) {
    switch (p.op) {
        case glu_op::reglu: return (x > 0 ? x : 0.0) * g;
        case glu_op::geglu: return gelu_tanh(x) * g;
        case glu_op::swiglu: return x * sigmoid(x) * g;
        case glu_op::geglu_erf: return gelu_erf(x) * g;
        case glu_op::geglu_quick: return gelu_quick(x) * g;
        case glu_op::swiglu_oai: {
            const double lim = p.limit, xc = std::min(x, lim), gc = std::min(std::max(g, -lim), lim);
            return xc * sigmoid(static_cast<double>(p.alpha) * xc) * (gc + 1.0);
        }
    }
    fail("glu: unknown sub-op " + std::to_string(static_cast<int>(p.op)));
}

// ALiBi slope of head h of n_head (1 when max_bias is 0), as ggml's soft_max computes it.
inline double alibi_slope(double max_bias, std::int64_t h, std::int64_t n_head) {
    if (max_bias <= 0) return 1.0;
    std::int64_t n_log2 = 1;
    while (n_log2 * 2 <= n_head) n_log2 *= 2;
    const double m0 = std::pow(2.0, -max_bias / static_cast<double>(n_log2));
    const double m1 = std::pow(2.0, -(max_bias / 2.0) / static_cast<double>(n_log2));
    return h < n_log2 ? std::pow(m0, static_cast<double>(h + 1)) : std::pow(m1, static_cast<double>(2 * (h - n_log2) + 1));
}

inline std::int64_t wrap(std::int64_t i, std::int64_t n) {
    const std::int64_t r = i % n;
    return r < 0 ? r + n : r;
}

// ---- the interpreter -------------------------------------------------------------------------

class machine {
public:
    // The logical elements of n, read through its layout from its root's array.
    arr read(const node* n) {
        arr a;
        a.ne = n->lay.ne;
        a.v.resize(static_cast<std::size_t>(std::max<std::int64_t>(a.n(), 0)));
        std::size_t k = 0;
        walk(n, [&](std::vector<double>& s, std::size_t at) { a.v[k++] = s[at]; });
        return a;
    }
    // Writes the logical elements a into n's memory (its own, or its root's for a view).
    void write(const node* n, const arr& a) {
        if (a.n() != n->lay.nelements() || a.v.size() != static_cast<std::size_t>(a.n()))
            fail(label(n) + ": computed " + std::to_string(a.v.size()) + " elements for " + std::to_string(n->lay.nelements()));
        const bool integer = info(n->lay.type).is_integer;
        std::size_t k = 0;
        walk(n, [&](std::vector<double>& s, std::size_t at) {
            const double x = a.v[k++];
            s[at] = integer ? std::trunc(x) : x;
        });
    }

private:
    std::unordered_map<const node*, std::vector<double>> mem_;

    static const node* root_of(const node* n) { return n->view_src ? n->view_src : n; }

    std::vector<double>& storage(const node* r) {
        auto it = mem_.find(r);
        if (it != mem_.end()) return it->second;
        const std::size_t tsz = static_cast<std::size_t>(type_size(r->lay.type));
        const std::size_t blck = static_cast<std::size_t>(block_size(r->lay.type));
        const std::size_t units = (r->lay.nbytes() + tsz - 1) / tsz;
        return mem_.emplace(r, std::vector<double>(units * blck, 0.0)).first->second;
    }

    // f(array, index) for every logical element of n, dim 0 fastest.
    template <class F>
    void walk(const node* n, F&& f) {
        const node* r = root_of(n);
        if (n->lay.type != r->lay.type)
            fail(label(n) + " is a view of type " + std::string(type_name(n->lay.type)) + " into '" + r->name + "' of type " +
                 std::string(type_name(r->lay.type)));
        std::vector<double>& s = storage(r);
        const std::size_t tsz = static_cast<std::size_t>(type_size(n->lay.type));
        const std::int64_t blck = block_size(n->lay.type);
        const std::size_t base = n->view_src ? n->view_offs : 0;
        const auto& ne = n->lay.ne;
        const auto& nb = n->lay.nb;
        for_each(ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
            const std::size_t off = base + static_cast<std::size_t>(i0 / blck) * nb[0] + static_cast<std::size_t>(i1) * nb[1] +
                                    static_cast<std::size_t>(i2) * nb[2] + static_cast<std::size_t>(i3) * nb[3];
            if (off % tsz != 0) fail(label(n) + ": byte offset " + std::to_string(off) + " is not a whole element");
            const std::size_t at = off / tsz * static_cast<std::size_t>(blck) + static_cast<std::size_t>(i0 % blck);
            if (at >= s.size()) fail(label(n) + ": element at byte offset " + std::to_string(off) + " is past its root '" + r->name + "'");
            f(s, at);
        });
    }
};

// ---- the ops ---------------------------------------------------------------------------------

inline const node* src_of(const node* n, int i) {
    const node* s = n->src[static_cast<std::size_t>(i)];
    if (!s) fail(label(n) + ": source " + std::to_string(i) + " is missing");
    return s;
}

inline arr compute(const node* n, machine& m) {
    const auto in = [&](int i) { return m.read(src_of(n, i)); };
    const auto opt = [&](int i) -> const node* { return n->src[static_cast<std::size_t>(i)]; };
    const ne4 one{1, 1, 1, 1};
    switch (n->op) {
        // ---- element-wise ----
        case op_kind::add:
        case op_kind::sub:
        case op_kind::mul:
        case op_kind::div: {
            arr a = in(0);
            const arr b = in(1);
            for (int d = 0; d < 4; ++d)
                if (b.ne[static_cast<std::size_t>(d)] == 0 || a.ne[static_cast<std::size_t>(d)] % b.ne[static_cast<std::size_t>(d)] != 0)
                    fail(label(n) + ": b cannot be broadcast over a");
            for_each(a.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                double& x = a.at(i0, i1, i2, i3);
                const double y = b.at(i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
                x = n->op == op_kind::add ? x + y : n->op == op_kind::sub ? x - y : n->op == op_kind::mul ? x * y : x / y;
            });
            return a;
        }
        case op_kind::add1: {
            arr a = in(0);
            const arr b = in(1);
            for (double& x : a.v) x += b.v.at(0);
            return a;
        }
        case op_kind::add_id: {  // a [ne0, n_used, T] + b[:, ids[u, t]]
            arr a = in(0);
            const arr b = in(1), ids = in(2);
            for_each(a.ne, [&](std::int64_t i0, std::int64_t u, std::int64_t t, std::int64_t i3) {
                const auto e = static_cast<std::int64_t>(ids.at(u, t));
                if (e < 0 || e >= b.ne[1]) fail(label(n) + ": expert id " + std::to_string(e) + " out of range");
                a.at(i0, u, t, i3) += b.at(i0, e);
            });
            return a;
        }
        case op_kind::acc:
        case op_kind::set: {
            // the result is a's shape, contiguous (or a itself, contiguous, in place); b goes
            // into its view of b's extents with byte strides (es, nb1, nb2, nb3) at byte offset
            arr r = in(0);
            const arr b = in(1);
            const auto& p = n->param<set_params>();
            const std::size_t es = static_cast<std::size_t>(type_size(n->lay.type));
            for_each(b.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                const std::size_t off = p.offset + static_cast<std::size_t>(i0) * es + static_cast<std::size_t>(i1) * p.nb1 +
                                        static_cast<std::size_t>(i2) * p.nb2 + static_cast<std::size_t>(i3) * p.nb3;
                const std::size_t at = off / es;
                if (off % es != 0 || at >= r.v.size()) fail(label(n) + ": the view of b runs outside a");
                r.v[at] = n->op == op_kind::acc ? r.v[at] + b.at(i0, i1, i2, i3) : b.at(i0, i1, i2, i3);
            });
            return r;
        }
        case op_kind::scale: {
            arr a = in(0);
            const auto& p = n->param<scale_params>();
            for (double& x : a.v) x = x * static_cast<double>(p.s) + static_cast<double>(p.b);
            return a;
        }
        case op_kind::sqr:
        case op_kind::sqrt:
        case op_kind::log:
        case op_kind::sin:
        case op_kind::cos: {
            arr a = in(0);
            for (double& x : a.v)
                x = n->op == op_kind::sqr    ? x * x
                    : n->op == op_kind::sqrt ? std::sqrt(x)
                    : n->op == op_kind::log  ? std::log(x)
                    : n->op == op_kind::sin  ? std::sin(x)
                                             : std::cos(x);
            return a;
        }
        case op_kind::unary: {
            arr a = in(0);
            const auto& p = n->param<unary_params>();
            for (double& x : a.v) x = unary(p, x);
            return a;
        }
        case op_kind::leaky_relu: {
            arr a = in(0);
            const double s = n->param<leaky_relu_params>().slope;
            for (double& x : a.v) x = x > 0 ? x : s * x;
            return a;
        }
        case op_kind::clamp: {
            arr a = in(0);
            const auto& p = n->param<clamp_params>();
            for (double& x : a.v) x = std::min(static_cast<double>(p.max), std::max(static_cast<double>(p.min), x));
            return a;
        }
        case op_kind::fill: {
            arr a = arr::zeros(n->lay.ne);
            for (double& x : a.v) x = n->param<fill_params>().value;
            return a;
        }
        case op_kind::glu: {
            const auto& p = n->param<glu_params>();
            const arr a = in(0);
            arr r = arr::zeros(n->lay.ne);
            const std::int64_t nc = r.ne[0];
            if (const node* bn = opt(1)) {  // split form: act(a) * b
                const arr b = m.read(bn);
                for (std::size_t i = 0; i < r.v.size(); ++i) r.v[i] = glu(p, a.v[i], b.v[i]);
            } else {  // halves of each row: act(first) * second, swapped: act(second) * first
                for (std::int64_t row = 0; row < r.rows(); ++row)
                    for (std::int64_t i = 0; i < nc; ++i) {
                        const double lo = a.row(row, i), hi = a.row(row, i + nc);
                        r.row(row, i) = p.swapped ? glu(p, hi, lo) : glu(p, lo, hi);
                    }
            }
            return r;
        }

        // ---- reductions ----
        case op_kind::sum: {
            const arr a = in(0);
            arr r = arr::zeros(one);
            for (double x : a.v) r.v[0] += x;
            return r;
        }
        case op_kind::sum_rows:
        case op_kind::mean: {
            const arr a = in(0);
            arr r = arr::zeros({1, a.ne[1], a.ne[2], a.ne[3]});
            for (std::int64_t row = 0; row < a.rows(); ++row) {
                double s = 0;
                for (std::int64_t i = 0; i < a.ne[0]; ++i) s += a.row(row, i);
                r.v[static_cast<std::size_t>(row)] = n->op == op_kind::mean ? s / static_cast<double>(a.ne[0]) : s;
            }
            return r;
        }
        case op_kind::cumsum: {
            arr a = in(0);
            for (std::int64_t row = 0; row < a.rows(); ++row) {
                double s = 0;
                for (std::int64_t i = 0; i < a.ne[0]; ++i) a.row(row, i) = (s += a.row(row, i));
            }
            return a;
        }
        case op_kind::argmax: {  // i32 [ne1]: first index of each row's largest element
            const arr a = in(0);
            arr r = arr::zeros(n->lay.ne);
            for (std::int64_t row = 0; row < a.rows(); ++row) {
                std::int64_t best = 0;
                for (std::int64_t i = 1; i < a.ne[0]; ++i)
                    if (a.row(row, i) > a.row(row, best)) best = i;
                r.v[static_cast<std::size_t>(row)] = static_cast<double>(best);
            }
            return r;
        }
        case op_kind::count_equal: {
            const arr a = in(0), b = in(1);
            arr r = arr::zeros(one);
            for (std::size_t i = 0; i < a.v.size(); ++i) r.v[0] += a.v[i] == b.v[i] ? 1.0 : 0.0;
            return r;
        }
        case op_kind::cross_entropy_loss: {  // -(1/rows) sum_rows sum_i labels_i log_softmax(logits)_i
            const arr x = in(0), y = in(1);
            double total = 0;
            for (std::int64_t row = 0; row < x.rows(); ++row) {
                double mx = -std::numeric_limits<double>::infinity(), se = 0;
                for (std::int64_t i = 0; i < x.ne[0]; ++i) mx = std::max(mx, x.row(row, i));
                for (std::int64_t i = 0; i < x.ne[0]; ++i) se += std::exp(x.row(row, i) - mx);
                const double lse = mx + std::log(se);
                for (std::int64_t i = 0; i < x.ne[0]; ++i) total -= y.row(row, i) * (x.row(row, i) - lse);
            }
            arr r = arr::zeros(one);
            r.v[0] = total / static_cast<double>(x.rows());
            return r;
        }

        // ---- copies, tiling, padding ----
        case op_kind::cpy:  // into src 1's memory (this node is its view), or a cast (no src 1)
        case op_kind::cont:
        case op_kind::dup: {
            arr a = in(0);
            if (a.n() != n->lay.nelements()) fail(label(n) + ": source and destination differ in element count");
            a.ne = n->lay.ne;
            return a;
        }
        case op_kind::repeat: {
            const arr a = in(0);
            arr r = arr::zeros(n->lay.ne);
            for_each(r.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                r.at(i0, i1, i2, i3) = a.at(i0 % a.ne[0], i1 % a.ne[1], i2 % a.ne[2], i3 % a.ne[3]);
            });
            return r;
        }
        case op_kind::repeat_back: {
            const arr a = in(0);
            arr r = arr::zeros(n->lay.ne);
            for_each(a.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                r.at(i0 % r.ne[0], i1 % r.ne[1], i2 % r.ne[2], i3 % r.ne[3]) += a.at(i0, i1, i2, i3);
            });
            return r;
        }
        case op_kind::concat: {
            const arr a = in(0), b = in(1);
            const auto dim = static_cast<std::size_t>(n->param<concat_params>().dim);
            arr r = arr::zeros(n->lay.ne);
            for_each(r.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                ne4 j{i0, i1, i2, i3};
                const bool from_a = j[dim] < a.ne[dim];
                if (!from_a) j[dim] -= a.ne[dim];
                r.at(i0, i1, i2, i3) = (from_a ? a : b).at(j[0], j[1], j[2], j[3]);
            });
            return r;
        }
        case op_kind::pad: {  // left/right per dim; zeros, or wrapped around (circular)
            const arr a = in(0);
            const auto& p = n->param<pad_params>();
            arr r = arr::zeros(n->lay.ne);
            for_each(r.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                ne4 j{i0, i1, i2, i3};
                for (std::size_t d = 0; d < 4; ++d) {
                    j[d] -= p.left[d];
                    if (p.circular) j[d] = wrap(j[d], a.ne[d]);
                    else if (j[d] < 0 || j[d] >= a.ne[d]) return;
                }
                r.at(i0, i1, i2, i3) = a.at(j[0], j[1], j[2], j[3]);
            });
            return r;
        }
        case op_kind::pad_reflect_1d: {  // mirror of dim 0 around its first and last element
            const arr a = in(0);
            const std::int64_t p0 = n->param<pad_params>().left[0], len = a.ne[0];
            arr r = arr::zeros(n->lay.ne);
            for_each(r.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                std::int64_t j = i0 - p0;
                if (j < 0) j = -j;
                if (j > len - 1) j = 2 * (len - 1) - j;
                r.at(i0, i1, i2, i3) = a.at(j, i1, i2, i3);
            });
            return r;
        }
        case op_kind::roll: {  // out[(i + shift) mod n] = a[i]
            const arr a = in(0);
            const auto& s = n->param<roll_params>().shift;
            arr r = arr::zeros(n->lay.ne);
            for_each(a.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                r.at(wrap(i0 + s[0], a.ne[0]), wrap(i1 + s[1], a.ne[1]), wrap(i2 + s[2], a.ne[2]), wrap(i3 + s[3], a.ne[3])) =
                    a.at(i0, i1, i2, i3);
            });
            return r;
        }
        case op_kind::get_rows: {  // a [ne0, ne1, ne2, ne3], idx [n, ne2, ne3] -> [ne0, n, ne2, ne3]
            const arr a = in(0), idx = in(1);
            arr r = arr::zeros(n->lay.ne);
            for_each(r.ne, [&](std::int64_t e, std::int64_t i, std::int64_t i2, std::int64_t i3) {
                const auto row = static_cast<std::int64_t>(idx.at(i, i2, i3));
                if (row < 0 || row >= a.ne[1]) fail(label(n) + ": row index " + std::to_string(row) + " out of range");
                r.at(e, i, i2, i3) = a.at(e, row, i2, i3);
            });
            return r;
        }
        case op_kind::set_rows: {  // srcs {b, idx, a}: rows of b written into rows idx of a (this node is a's view)
            const arr b = in(0), idx = in(1);
            arr r = in(2);
            for_each(b.ne, [&](std::int64_t e, std::int64_t i, std::int64_t i2, std::int64_t i3) {
                const auto row = static_cast<std::int64_t>(idx.at(i, i2 % idx.ne[1], i3 % idx.ne[2]));
                if (row < 0 || row >= r.ne[1]) fail(label(n) + ": row index " + std::to_string(row) + " out of range");
                r.at(e, row, i2, i3) = b.at(e, i, i2, i3);
            });
            return r;
        }
        case op_kind::diag: {  // [n, 1, ne2, ne3] -> [n, n, ne2, ne3]
            const arr a = in(0);
            arr r = arr::zeros(n->lay.ne);
            for (std::int64_t i3 = 0; i3 < a.ne[3]; ++i3)
                for (std::int64_t i2 = 0; i2 < a.ne[2]; ++i2)
                    for (std::int64_t i = 0; i < a.ne[0]; ++i) r.at(i, i, i2, i3) = a.at(i, 0, i2, i3);
            return r;
        }
        case op_kind::tri: {
            arr a = in(0);
            const tri_type t = n->param<tri_params>().type;
            for_each(a.ne, [&](std::int64_t col, std::int64_t row, std::int64_t i2, std::int64_t i3) {
                const bool keep = t == tri_type::upper_diag ? col >= row
                                  : t == tri_type::upper    ? col > row
                                  : t == tri_type::lower_diag ? col <= row
                                                              : col < row;
                if (!keep) a.at(col, row, i2, i3) = 0.0;
            });
            return a;
        }

        // ---- attention ----
        case op_kind::diag_mask_inf:
        case op_kind::diag_mask_zero: {  // column i0 > n_past + row i1 -> -inf / 0
            arr a = in(0);
            const std::int64_t n_past = n->param<diag_mask_params>().n_past;
            const double v = n->op == op_kind::diag_mask_inf ? -std::numeric_limits<double>::infinity() : 0.0;
            for_each(a.ne, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                if (i0 > n_past + i1) a.at(i0, i1, i2, i3) = v;
            });
            return a;
        }
        case op_kind::soft_max: {  // row softmax of a*scale + slope*mask[i0, i1, i2 % m2, i3 % m3] (+ a sink per head)
            arr a = in(0);
            const auto& p = n->param<soft_max_params>();
            arr mask, sinks;
            const bool has_mask = opt(1) != nullptr, has_sinks = opt(2) != nullptr;
            if (has_mask) mask = m.read(opt(1));
            if (has_sinks) sinks = m.read(opt(2));
            std::vector<double> z(static_cast<std::size_t>(a.ne[0]));
            for (std::int64_t i3 = 0; i3 < a.ne[3]; ++i3)
                for (std::int64_t i2 = 0; i2 < a.ne[2]; ++i2) {
                    const double slope = alibi_slope(p.max_bias, i2, a.ne[2]);
                    for (std::int64_t i1 = 0; i1 < a.ne[1]; ++i1) {
                        double mx = -std::numeric_limits<double>::infinity();
                        for (std::int64_t i0 = 0; i0 < a.ne[0]; ++i0) {
                            double v = a.at(i0, i1, i2, i3) * static_cast<double>(p.scale);
                            if (has_mask) v += slope * mask.at(i0, i1, i2 % mask.ne[2], i3 % mask.ne[3]);
                            z[static_cast<std::size_t>(i0)] = v;
                            mx = std::max(mx, v);
                        }
                        const double sk = has_sinks ? sinks.v.at(static_cast<std::size_t>(i2)) : -std::numeric_limits<double>::infinity();
                        mx = std::max(mx, sk);
                        double sum = has_sinks ? std::exp(sk - mx) : 0.0;
                        for (double& v : z) sum += (v = std::exp(v - mx));
                        for (std::int64_t i0 = 0; i0 < a.ne[0]; ++i0) a.at(i0, i1, i2, i3) = z[static_cast<std::size_t>(i0)] / sum;
                    }
                }
            return a;
        }
        case op_kind::rope:
        case op_kind::rope_back: {
            // a [D, n_head, T, ne3], positions [T]: pair i (< n_dims/2) rotated by
            // theta = freq_scale * pos * base^(-2i/n_dims) / freq_factor[i], both results times
            // attn_factor; normal pairs (2i, 2i+1), neox (i, i + n_dims/2); the rest copied.
            // rope_back: the inverse rotation (sin negated).
            const auto& p = n->param<rope_params>();
            if (p.ext_factor != 0.0f)
                fail(label(n) + ": ext_factor " + std::to_string(p.ext_factor) + " != 0 (YaRN) is not implemented");
            const int mode = p.mode;
            if (mode != rope_mode_normal && mode != rope_mode_neox)
                fail(label(n) + ": mode " + std::to_string(mode) + " is not implemented (normal and neox only)");
            arr a = in(0);
            const arr pos = in(1);
            arr ff;
            const bool has_ff = opt(2) != nullptr;
            if (has_ff) ff = m.read(opt(2));
            const std::int64_t half = p.n_dims / 2;
            const double sign = n->op == op_kind::rope_back ? -1.0 : 1.0;
            for (std::int64_t i3 = 0; i3 < a.ne[3]; ++i3)
                for (std::int64_t i2 = 0; i2 < a.ne[2]; ++i2) {
                    const double t = pos.v.at(static_cast<std::size_t>(i2));
                    for (std::int64_t i = 0; i < half; ++i) {
                        double theta = t * std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(i) / p.n_dims);
                        if (has_ff) theta /= ff.v.at(static_cast<std::size_t>(i));
                        theta *= static_cast<double>(p.freq_scale);
                        const double c = std::cos(theta) * p.attn_factor, s = sign * std::sin(theta) * p.attn_factor;
                        const std::int64_t j0 = mode == rope_mode_neox ? i : 2 * i;
                        const std::int64_t j1 = mode == rope_mode_neox ? i + half : 2 * i + 1;
                        for (std::int64_t i1 = 0; i1 < a.ne[1]; ++i1) {
                            const double x0 = a.at(j0, i1, i2, i3), x1 = a.at(j1, i1, i2, i3);
                            a.at(j0, i1, i2, i3) = x0 * c - x1 * s;
                            a.at(j1, i1, i2, i3) = x0 * s + x1 * c;
                        }
                    }
                }
            return a;
        }

        // ---- norms ----
        case op_kind::norm:
        case op_kind::rms_norm:
        case op_kind::l2_norm: {
            arr a = in(0);
            const double eps = n->param<norm_params>().eps;
            const auto cnt = static_cast<double>(a.ne[0]);
            for (std::int64_t row = 0; row < a.rows(); ++row) {
                double mean = 0, sq = 0;
                for (std::int64_t i = 0; i < a.ne[0]; ++i) mean += a.row(row, i);
                mean /= cnt;
                if (n->op == op_kind::norm) {
                    for (std::int64_t i = 0; i < a.ne[0]; ++i) sq += (a.row(row, i) - mean) * (a.row(row, i) - mean);
                    const double f = 1.0 / std::sqrt(sq / cnt + eps);
                    for (std::int64_t i = 0; i < a.ne[0]; ++i) a.row(row, i) = (a.row(row, i) - mean) * f;
                } else {
                    for (std::int64_t i = 0; i < a.ne[0]; ++i) sq += a.row(row, i) * a.row(row, i);
                    const double f = n->op == op_kind::rms_norm ? 1.0 / std::sqrt(sq / cnt + eps) : 1.0 / std::max(std::sqrt(sq), eps);
                    for (std::int64_t i = 0; i < a.ne[0]; ++i) a.row(row, i) *= f;
                }
            }
            return a;
        }
        case op_kind::group_norm: {  // channels (dim 2) in groups of ceil(ne2 / n_groups), per ne3 slice
            arr a = in(0);
            const auto& p = n->param<group_norm_params>();
            const std::int64_t per = (a.ne[2] + p.n_groups - 1) / p.n_groups;
            for (std::int64_t i3 = 0; i3 < a.ne[3]; ++i3)
                for (std::int64_t c0 = 0; c0 < a.ne[2]; c0 += per) {
                    const std::int64_t c1 = std::min(a.ne[2], c0 + per);
                    double sum = 0, sq = 0, cnt = 0;
                    for (std::int64_t c = c0; c < c1; ++c)
                        for (std::int64_t i1 = 0; i1 < a.ne[1]; ++i1)
                            for (std::int64_t i0 = 0; i0 < a.ne[0]; ++i0) sum += a.at(i0, i1, c, i3), cnt += 1;
                    const double mean = sum / cnt;
                    for (std::int64_t c = c0; c < c1; ++c)
                        for (std::int64_t i1 = 0; i1 < a.ne[1]; ++i1)
                            for (std::int64_t i0 = 0; i0 < a.ne[0]; ++i0) sq += (a.at(i0, i1, c, i3) - mean) * (a.at(i0, i1, c, i3) - mean);
                    const double f = 1.0 / std::sqrt(sq / cnt + static_cast<double>(p.eps));
                    for (std::int64_t c = c0; c < c1; ++c)
                        for (std::int64_t i1 = 0; i1 < a.ne[1]; ++i1)
                            for (std::int64_t i0 = 0; i0 < a.ne[0]; ++i0) a.at(i0, i1, c, i3) = (a.at(i0, i1, c, i3) - mean) * f;
                }
            return a;
        }

        // ---- products ----
        case op_kind::mul_mat: {  // a [K, M, A2, A3], b [K, N, B2, B3] -> [M, N, B2, B3], a broadcast over b's batch
            const arr a = in(0), b = in(1);
            arr r = arr::zeros(n->lay.ne);
            const std::int64_t K = a.ne[0], r2 = b.ne[2] / a.ne[2], r3 = b.ne[3] / a.ne[3];
            for_each(r.ne, [&](std::int64_t mi, std::int64_t ni, std::int64_t i2, std::int64_t i3) {
                double s = 0;
                for (std::int64_t k = 0; k < K; ++k) s += a.at(k, mi, i2 / r2, i3 / r3) * b.at(k, ni, i2, i3);
                r.at(mi, ni, i2, i3) = s;
            });
            return r;
        }
        case op_kind::out_prod: {  // a [M, K, A2, A3], b [N, K, B2, B3] -> [M, N, B2, B3]
            const arr a = in(0), b = in(1);
            arr r = arr::zeros(n->lay.ne);
            const std::int64_t K = a.ne[1], r2 = b.ne[2] / a.ne[2], r3 = b.ne[3] / a.ne[3];
            for_each(r.ne, [&](std::int64_t mi, std::int64_t ni, std::int64_t i2, std::int64_t i3) {
                double s = 0;
                for (std::int64_t k = 0; k < K; ++k) s += a.at(mi, k, i2 / r2, i3 / r3) * b.at(ni, k, i2, i3);
                r.at(mi, ni, i2, i3) = s;
            });
            return r;
        }

        // ---- convolution, pooling ----
        case op_kind::im2col: {
            // 2-D: kernel [KW, KH, IC, OC], input [W, H, IC, N] -> [IC*KH*KW, OW, OH, N], element (ic*KH + ky)*KW + kx;
            // 1-D: kernel [K, IC, OC], input [L, IC, N] -> [IC*K, OL, N], element ic*K + k. Zeros outside the input.
            const node* k = src_of(n, 0);
            const arr x = in(1);
            const auto& p = n->param<conv_params>();
            arr r = arr::zeros(n->lay.ne);
            if (p.is_2d) {
                const std::int64_t KW = k->lay.ne[0], KH = k->lay.ne[1], IC = x.ne[2];
                for (std::int64_t b = 0; b < r.ne[3]; ++b)
                    for (std::int64_t oy = 0; oy < r.ne[2]; ++oy)
                        for (std::int64_t ox = 0; ox < r.ne[1]; ++ox)
                            for (std::int64_t ic = 0; ic < IC; ++ic)
                                for (std::int64_t ky = 0; ky < KH; ++ky)
                                    for (std::int64_t kx = 0; kx < KW; ++kx) {
                                        const std::int64_t ix = ox * p.s[0] + kx * p.d[0] - p.p[0];
                                        const std::int64_t iy = oy * p.s[1] + ky * p.d[1] - p.p[1];
                                        if (ix >= 0 && ix < x.ne[0] && iy >= 0 && iy < x.ne[1])
                                            r.at((ic * KH + ky) * KW + kx, ox, oy, b) = x.at(ix, iy, ic, b);
                                    }
            } else {
                const std::int64_t K = k->lay.ne[0], IC = x.ne[1];
                for (std::int64_t b = 0; b < r.ne[2]; ++b)
                    for (std::int64_t ol = 0; ol < r.ne[1]; ++ol)
                        for (std::int64_t ic = 0; ic < IC; ++ic)
                            for (std::int64_t kk = 0; kk < K; ++kk) {
                                const std::int64_t ix = ol * p.s[0] + kk * p.d[0] - p.p[0];
                                if (ix >= 0 && ix < x.ne[0]) r.at(ic * K + kk, ol, b) = x.at(ix, ic, b);
                            }
            }
            return r;
        }
        case op_kind::pool_1d:
        case op_kind::pool_2d: {
            // max over the taps inside the input (-FLT_MAX when none, as ggml); avg: pool_2d divides
            // by the whole window k0*k1 (padding counts), pool_1d by the taps inside the row
            const arr a = in(0);
            const auto& p = n->param<pool_params>();
            const bool two = n->op == op_kind::pool_2d, mx = p.op == pool_op::max;
            const std::int64_t k1 = two ? p.k[1] : 1;
            arr r = arr::zeros(n->lay.ne);
            for_each(r.ne, [&](std::int64_t ox, std::int64_t oy, std::int64_t i2, std::int64_t i3) {
                const std::int64_t x0 = ox * p.s[0] - p.p[0], y0 = two ? oy * p.s[1] - p.p[1] : oy;
                double acc = mx ? -static_cast<double>(FLT_MAX) : 0.0;
                std::int64_t cnt = 0;
                for (std::int64_t ky = 0; ky < k1; ++ky)
                    for (std::int64_t kx = 0; kx < p.k[0]; ++kx) {
                        const std::int64_t x = x0 + kx, y = y0 + ky;
                        if (x < 0 || x >= a.ne[0] || y < 0 || y >= a.ne[1]) continue;
                        const double v = a.at(x, y, i2, i3);
                        acc = mx ? std::max(acc, v) : acc + v;
                        ++cnt;
                    }
                if (!mx) acc = two ? acc / static_cast<double>(p.k[0] * p.k[1]) : (cnt > 0 ? acc / static_cast<double>(cnt) : 0.0);
                r.at(ox, oy, i2, i3) = acc;
            });
            return r;
        }

        default: break;
    }
    fail(label(n) + ": op '" + std::string(op_name(n->op)) + "' is not implemented");
}

inline bool is_view_op(op_kind k) {
    return k == op_kind::view || k == op_kind::reshape || k == op_kind::permute || k == op_kind::transpose;
}

}  // namespace detail

// Evaluates g in double and returns the logical elements (dim 0 fastest) of `out`, which is
// a node or leaf of g. Every leaf and every param node (op none) that `out` depends on must
// be in `in` (given in its logical order; index tensors as doubles too). Throws
// std::runtime_error naming the op when it meets an op it does not implement.
inline std::vector<double> eval(const cgraph& g, const node* out, const values& in) {
    using detail::fail;
    if (!out) fail("eval: out is null");
    if (!g.contains(out)) fail("eval: '" + out->name + "' is not a tensor of the graph");
    const auto& nodes = g.nodes();
    // position of out in the order of computation (leafs are there before any node)
    std::ptrdiff_t last = -1;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i] == out) last = static_cast<std::ptrdiff_t>(i);

    // what out needs: its sources and view roots, closed over the in-place writers (placed
    // before out) into the memory of a needed tensor
    std::unordered_set<const node*> need;
    std::vector<const node*> stack{out};
    const auto close = [&] {
        while (!stack.empty()) {
            const node* n = stack.back();
            stack.pop_back();
            if (!n || !need.insert(n).second) continue;
            for (const node* s : n->src) stack.push_back(s);
            stack.push_back(n->view_src);
        }
    };
    close();
    for (bool grew = true; grew;) {
        grew = false;
        for (std::ptrdiff_t i = 0; i < last; ++i) {
            const node* w = nodes[static_cast<std::size_t>(i)];
            if (need.count(w) || !w->view_src || w->op == op_kind::none || detail::is_view_op(w->op)) continue;
            if (need.count(w->view_src)) {
                stack.push_back(w);
                close();
                grew = true;
            }
        }
    }

    detail::machine m;
    const auto load = [&](const node* n) {
        const auto it = in.find(n);
        if (it == in.end()) fail("eval: no value for " + std::string(n->flags & flag_param ? "param" : "leaf") + " '" + n->name + "' " + n->lay.to_string());
        detail::arr a;
        a.ne = n->lay.ne;
        a.v = it->second;
        if (static_cast<std::int64_t>(a.v.size()) != n->lay.nelements())
            fail("eval: the value of '" + n->name + "' " + n->lay.to_string() + " has " + std::to_string(a.v.size()) + " elements");
        m.write(n, a);
    };
    for (const node* l : g.leafs())
        if (need.count(l)) load(l);
    for (std::ptrdiff_t i = 0; i <= last; ++i) {
        const node* n = nodes[static_cast<std::size_t>(i)];
        if (!need.count(n)) continue;
        if (n->op == op_kind::none) load(n);
        else if (detail::is_view_op(n->op)) continue;  // no compute: reads go through its layout
        else m.write(n, detail::compute(n, m));
    }
    return m.read(out).v;
}

}  // namespace dref
