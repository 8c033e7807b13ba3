// Row normalizations: norm ((x - mean)/sqrt(var + eps)), rms_norm
// (x/sqrt(mean(x^2) + eps)), l2_norm (x / max(||x||, eps)); group_norm (the channels
// along dim 2 split into n_groups groups, each normalized over all its elements).
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {
inline node* norm(op_kind op, node* a, float eps, bool inplace) {
    const auto name = op_name(op);
    check_float(name, a, "a");
    if (!(eps >= 0.0f)) op_fail(name, errc::invalid_argument, "eps must be >= 0");
    if (inplace) return make_inplace(a, op, norm_params{eps}, {a});
    return make(*a->ctx, a->lay.type, a->lay.ne, op, norm_params{eps}, {a});
}
}  // namespace detail

#define TESSERA_NORM_FN_(N)                                                                      \
    template <float_element T, int R>                                                            \
    tensor<T, R> N(tensor<T, R> a, float eps) {                                                  \
        return tensor<T, R>(detail::norm(op_kind::N, a.get(), eps, false));                      \
    }                                                                                            \
    template <float_element T, int R>                                                            \
    tensor<T, R> N##_inplace(tensor<T, R> a, float eps) {                                        \
        return tensor<T, R>(detail::norm(op_kind::N, a.get(), eps, true));                       \
    }                                                                                            \
    template <typed_tensor A>                                                                    \
        requires(!float_tensor<A>)                                                               \
    void N(A, float) {                                                                           \
        static_assert(detail::dependent_false<A>,                                                \
                      "tessera::graph::" #N ": the operand must be a tensor of f32, f16 or bf16"); \
    }                                                                                            \
    inline any_tensor N(any_tensor a, float eps) { return any_tensor(detail::norm(op_kind::N, a.get(), eps, false)); }
TESSERA_NORM_FN_(norm)
TESSERA_NORM_FN_(rms_norm)
TESSERA_NORM_FN_(l2_norm)
#undef TESSERA_NORM_FN_

// group_norm: dim 2 holds the channels; they form n_groups groups of
// ceil(ne2 / n_groups) channels (the last group may be smaller or empty), and each
// group of each ne3 slice is normalized over its ne0 * ne1 * channels elements:
// (x - mean)/sqrt(var + eps).
namespace detail {
inline node* group_norm(node* a, int n_groups, float eps, bool inplace) {
    check_float("group_norm", a, "a");
    if (n_groups < 1) op_fail("group_norm", errc::invalid_argument, "n_groups must be >= 1 (got " + std::to_string(n_groups) + ")");
    if (!(eps >= 0.0f)) op_fail("group_norm", errc::invalid_argument, "eps must be >= 0");
    const group_norm_params p{n_groups, eps};
    if (inplace) return make_inplace(a, op_kind::group_norm, p, {a});
    return make(*a->ctx, a->lay.type, a->lay.ne, op_kind::group_norm, p, {a});
}
}  // namespace detail
template <float_element T, int R>
tensor<T, R> group_norm(tensor<T, R> a, int n_groups, float eps) {
    return tensor<T, R>(detail::group_norm(a.get(), n_groups, eps, false));
}
template <float_element T, int R>
tensor<T, R> group_norm_inplace(tensor<T, R> a, int n_groups, float eps) {
    return tensor<T, R>(detail::group_norm(a.get(), n_groups, eps, true));
}
template <typed_tensor A>
    requires(!float_tensor<A>)
void group_norm(A, int, float) {
    static_assert(detail::dependent_false<A>, "tessera::graph::group_norm: the operand must be a tensor of f32, f16 or bf16");
}
inline any_tensor group_norm(any_tensor a, int n_groups, float eps) {
    return any_tensor(detail::group_norm(a.get(), n_groups, eps, false));
}
inline any_tensor group_norm_inplace(any_tensor a, int n_groups, float eps) {
    return any_tensor(detail::group_norm(a.get(), n_groups, eps, true));
}

}  // namespace graph
TESSERA_END_NAMESPACE
