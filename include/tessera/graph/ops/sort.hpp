// Sorting and selection along dim 0: argsort (each row's permutation that sorts it,
// i32, ascending or descending), argsort_top_k (the first k of the descending argsort, a
// view), top_k (i32 indices of each row's k largest elements; ggml promises no order).
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// ggml_sort_order
enum class sort_order : std::uint8_t { asc, desc };

namespace detail {
inline node* argsort(node* a, sort_order order) {
    check_float("argsort", a, "a");
    if (order != sort_order::asc && order != sort_order::desc) op_fail("argsort", errc::invalid_argument, "unknown sort_order");
    if (a->lay.ne[0] > INT32_MAX) op_fail("argsort", errc::shape_mismatch, "a " + desc(a) + " has rows longer than INT32_MAX");
    return make(*a->ctx, type_id::i32, a->lay.ne, op_kind::argsort, argsort_params{order == sort_order::desc}, {a});
}
inline void check_k(std::string_view op, const node* a, int k) {
    if (k < 1 || k > a->lay.ne[0])
        op_fail(op, errc::invalid_argument, "k = " + std::to_string(k) + " must be in [1, ne0] for a " + desc(a));
}
inline node* argsort_top_k(node* a, int k) {
    check_float("argsort_top_k", a, "a");
    check_k("argsort_top_k", a, k);
    node* s = argsort(a, sort_order::desc);
    layout l = s->lay;
    l.ne[0] = k;
    return s->ctx->new_view(s, l, 0, op_kind::view, view_params{}, {s});
}
inline node* top_k(node* a, int k) {
    check_float("top_k", a, "a");
    check_k("top_k", a, k);
    return make(*a->ctx, type_id::i32, {k, a->lay.ne[1], a->lay.ne[2], a->lay.ne[3]}, op_kind::top_k, top_k_params{k}, {a});
}
}  // namespace detail

// i32, a's shape: row r of the result lists the indices of row r of a in ascending (or
// descending) order of value; equal values keep index order.
template <float_element T, int R>
tensor<std::int32_t, R> argsort(tensor<T, R> a, sort_order order = sort_order::asc) {
    return tensor<std::int32_t, R>(detail::argsort(a.get(), order));
}
inline any_tensor argsort(any_tensor a, sort_order order = sort_order::asc) { return any_tensor(detail::argsort(a.get(), order)); }

// The first k indices of argsort(a, desc): a view [k, ne1, ne2, ne3] of the full argsort.
template <float_element T, int R>
tensor<std::int32_t, R> argsort_top_k(tensor<T, R> a, int k) {
    return tensor<std::int32_t, R>(detail::argsort_top_k(a.get(), k));
}
inline any_tensor argsort_top_k(any_tensor a, int k) { return any_tensor(detail::argsort_top_k(a.get(), k)); }

// i32 [k, ne1, ne2, ne3]: the indices of the k largest elements of each row. ggml gives
// them in no particular order; the CPU executor writes them by descending value, equal
// values by ascending index.
template <float_element T, int R>
tensor<std::int32_t, R> top_k(tensor<T, R> a, int k) {
    return tensor<std::int32_t, R>(detail::top_k(a.get(), k));
}
inline any_tensor top_k(any_tensor a, int k) { return any_tensor(detail::top_k(a.get(), k)); }

#define TESSERA_SORT_FLOAT_ONLY_(NAME, ...)                                                                          \
    template <typed_tensor A>                                                                                        \
        requires(!float_tensor<A>)                                                                                   \
    void NAME(A __VA_OPT__(, ) __VA_ARGS__) {                                                                        \
        static_assert(detail::dependent_false<A>, "tessera::graph::" #NAME ": the operand must be a tensor of f32, f16 or bf16"); \
    }
TESSERA_SORT_FLOAT_ONLY_(argsort, sort_order = sort_order::asc)
TESSERA_SORT_FLOAT_ONLY_(argsort_top_k, int)
TESSERA_SORT_FLOAT_ONLY_(top_k, int)
#undef TESSERA_SORT_FLOAT_ONLY_

}  // namespace graph
TESSERA_END_NAMESPACE
