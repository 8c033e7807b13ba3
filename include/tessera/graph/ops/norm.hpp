// Row normalizations: norm ((x - mean)/sqrt(var + eps)), rms_norm
// (x/sqrt(mean(x^2) + eps)), l2_norm (x / max(||x||, eps)).
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

}  // namespace graph
TESSERA_END_NAMESPACE
