// replay: builds a node again from its op, its parameters and its sources by calling
// the builder that made it (graph/ops/*.hpp), so every shape, type and parameter rule of
// that builder runs again. The MPI graph decoder (backend/mpi/graph_codec.hpp) rebuilds
// every received node this way and then requires the result to equal what was sent.
//
//   node* n = graph::replay(ctx, op, params, srcs, want, inplace);
//
// `want` is the layout the caller expects: the builders of view, reshape, repeat and
// cast take their result's extents (or type) as an argument, and those are read from it;
// every other op derives its layout from the sources. `inplace` asks for the *_inplace
// form (the result is a view of src[0]). The sources sit at the slots the builder puts
// them in (soft_max {a, mask, sinks}, rope {a, pos, freq_factors}, set_rows {b, idx, a},
// flash_attn_ext {q, k, v, mask, sinks}, ...); a source the builder would not take, or
// a missing one, throws. Ops without a replay entry (replayable(op) false) throw
// errc::unsupported naming the op.
#pragma once

#include <array>
#include <span>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/graph/op_traits.hpp"
#include "tessera/graph/ops.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// The ops replay rebuilds (what llama, the conformance suites and the usual harness
// graphs use). Adding an op means adding a case to replay_impl and its name here.
#define TESSERA_REPLAYABLE_OPS(X)                                                                                       \
    X(dup) X(add) X(add1) X(sub) X(mul) X(div) X(sqr) X(sqrt) X(log) X(sin) X(cos) X(sum) X(sum_rows) X(mean)          \
    X(argmax) X(repeat) X(concat) X(norm) X(rms_norm) X(l2_norm) X(mul_mat) X(mul_mat_id) X(scale) X(cpy) X(cont)      \
    X(reshape) X(view) X(permute) X(get_rows) X(set_rows) X(diag_mask_inf) X(diag_mask_zero) X(soft_max) X(rope)      \
    X(clamp) X(argsort) X(top_k) X(leaky_relu) X(flash_attn_ext) X(unary) X(glu)

constexpr bool replayable(op_kind op) noexcept {
    switch (op) {
#define TESSERA_REPLAY_CASE_(n) case op_kind::n:
        TESSERA_REPLAYABLE_OPS(TESSERA_REPLAY_CASE_)
#undef TESSERA_REPLAY_CASE_
        return true;
        default: return false;
    }
}

namespace detail {

// The sources a replayed op may have: slots [0, n) with the first `required` present.
inline void replay_slots(op_kind op, std::span<node* const> src, int n, int required) {
    for (int i = 0; i < static_cast<int>(src.size()); ++i) {
        node* s = src[static_cast<std::size_t>(i)];
        if (i < required && !s)
            fail_cat(errc::invalid_argument, "replay of ", op_name(op), ": source ", i, " is missing");
        if (i >= n && s)
            fail_cat(errc::invalid_argument, "replay of ", op_name(op), ": source ", i, " is not an operand of this op (it takes ", n, ")");
    }
}

inline void replay_no_inplace(op_kind op, bool inplace) {
    if (inplace) fail_cat(errc::invalid_argument, "replay of ", op_name(op), ": the op has no in-place form");
}

inline node* replay_impl(context& ctx, op_kind op, const op_params& p, std::span<node* const> src, const layout& want,
                         bool inplace) {
    check_params(op, p);
    auto s = [&](int i) -> node* { return i < static_cast<int>(src.size()) ? src[static_cast<std::size_t>(i)] : nullptr; };
    node* a = s(0);
    if (a && a->ctx != &ctx) fail(errc::invalid_argument, "replay: the sources belong to another context");
    switch (op) {
        case op_kind::add:
        case op_kind::sub:
        case op_kind::mul:
        case op_kind::div:
            replay_slots(op, src, 2, 2);
            return binary(op, a, s(1), inplace);
        case op_kind::add1:
            replay_slots(op, src, 2, 2);
            return add1(a, s(1), inplace);
        case op_kind::sqr:
        case op_kind::sqrt:
        case op_kind::log:
        case op_kind::sin:
        case op_kind::cos:
            replay_slots(op, src, 1, 1);
            if ((op == op_kind::sin || op == op_kind::cos) && inplace) replay_no_inplace(op, inplace);
            return unary(op, p, a, inplace);
        case op_kind::unary:
        case op_kind::scale:
        case op_kind::leaky_relu:
            replay_slots(op, src, 1, 1);
            return unary(op, p, a, inplace);
        case op_kind::clamp:
            replay_slots(op, src, 1, 1);
            replay_no_inplace(op, inplace);
            return unary(op, p, a, false);
        case op_kind::sum:
        case op_kind::sum_rows:
        case op_kind::mean:
        case op_kind::argmax:
            replay_slots(op, src, 1, 1);
            replay_no_inplace(op, inplace);
            return reduce(op, a);
        case op_kind::norm:
        case op_kind::rms_norm:
        case op_kind::l2_norm:
            replay_slots(op, src, 1, 1);
            if (op == op_kind::l2_norm) replay_no_inplace(op, inplace);
            return norm(op, a, p.get<norm_params>().eps, inplace);
        case op_kind::mul_mat:
            replay_slots(op, src, 2, 2);
            replay_no_inplace(op, inplace);
            return mul_mat(a, s(1), p.get<mul_mat_params>().prec);
        case op_kind::mul_mat_id:
            replay_slots(op, src, 3, 3);
            replay_no_inplace(op, inplace);
            return mul_mat_id(a, s(1), s(2));
        case op_kind::dup:
        case op_kind::cont:
            replay_slots(op, src, 1, 1);
            replay_no_inplace(op, inplace);
            return dup(a, a->lay.type, op);
        case op_kind::cpy:
            // cpy(a, b) writes a into b (a view of b); cast(a, t) is cpy with one source
            if (s(1)) {
                replay_slots(op, src, 2, 2);
                return cpy(a, s(1));
            }
            replay_slots(op, src, 1, 1);
            replay_no_inplace(op, inplace);
            return dup(a, want.type, op_kind::cpy);
        case op_kind::repeat:
            replay_slots(op, src, 1, 1);
            replay_no_inplace(op, inplace);
            return repeat(a, want.ne);
        case op_kind::concat:
            replay_slots(op, src, 2, 2);
            replay_no_inplace(op, inplace);
            return concat(a, s(1), p.get<concat_params>().dim);
        case op_kind::reshape:
            replay_slots(op, src, 1, 1);
            return reshape(a, want.ne);
        case op_kind::view:
            replay_slots(op, src, 1, 1);
            return view(a, want.ne, {want.nb[1], want.nb[2], want.nb[3]}, p.get<view_params>().offset);
        case op_kind::permute:
            replay_slots(op, src, 1, 1);
            return permute(a, p.get<view_params>().axes);
        case op_kind::get_rows:
            replay_slots(op, src, 2, 2);
            replay_no_inplace(op, inplace);
            return get_rows(a, s(1));
        case op_kind::set_rows:
            replay_slots(op, src, 3, 3);
            return set_rows(s(2), a, s(1));
        case op_kind::diag_mask_inf:
        case op_kind::diag_mask_zero:
            replay_slots(op, src, 1, 1);
            return diag_mask(op, a, p.get<diag_mask_params>().n_past, inplace);
        case op_kind::soft_max: {
            replay_slots(op, src, 3, 1);
            const auto& sp = p.get<soft_max_params>();
            node* n = soft_max(a, s(1), sp.scale, sp.max_bias, inplace);
            if (s(2)) add_sinks(n, s(2), 2, n->lay.ne[2]);
            return n;
        }
        case op_kind::rope:
            replay_slots(op, src, 3, 2);
            return rope(op, a, s(1), s(2), p.get<rope_params>(), inplace);
        case op_kind::argsort:
            replay_slots(op, src, 1, 1);
            replay_no_inplace(op, inplace);
            return argsort(a, p.get<argsort_params>().descending ? sort_order::desc : sort_order::asc);
        case op_kind::top_k:
            replay_slots(op, src, 1, 1);
            replay_no_inplace(op, inplace);
            return top_k(a, p.get<top_k_params>().k);
        case op_kind::flash_attn_ext: {
            replay_slots(op, src, 5, 3);
            replay_no_inplace(op, inplace);
            node* n = flash_attn_ext(a, s(1), s(2), s(3), p.get<flash_attn_params>());
            if (s(4)) add_sinks(n, s(4), 4, a->lay.ne[2]);
            return n;
        }
        case op_kind::glu: {
            replay_slots(op, src, 2, 1);
            replay_no_inplace(op, inplace);
            const auto& g = p.get<glu_params>();
            return glu(g.op, a, s(1), g.swapped, g.alpha, g.limit);
        }
        default: break;
    }
    fail_cat(errc::unsupported, "op ", op_name(op), " has no replay entry (graph::replayable)");
}

}  // namespace detail

// Builds op(params, src) again with the op's own builder in ctx (where the sources live)
// and returns the new node. See the top of this file.
inline node* replay(context& ctx, op_kind op, const op_params& p, std::span<node* const> src, const layout& want,
                    bool inplace = false) {
    if (static_cast<std::size_t>(op) >= op_count) fail_cat(errc::invalid_argument, "replay: op number ", static_cast<int>(op), " is not an op");
    if (!replayable(op)) fail_cat(errc::unsupported, "op ", op_name(op), " cannot be replayed (graph::replayable)");
    if (src.size() > static_cast<std::size_t>(max_src)) fail_cat(errc::invalid_argument, "replay: ", src.size(), " sources, at most ", max_src);
    return detail::replay_impl(ctx, op, p, src, want, inplace);
}

}  // namespace graph
TESSERA_END_NAMESPACE
