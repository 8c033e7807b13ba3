// Optimizer steps (ggml_opt_step_adamw, ggml_opt_step_sgd): update a trainable parameter
// a (flagged with set_param) in place from its gradient. The step's hyper-parameters are
// an f32 tensor, so they can change between computes without rebuilding the graph:
//
//   opt_step_adamw(a, grad, m, v, params)   params = {alpha, beta1, beta2, eps, wd,
//       beta1h = 1/(1 - beta1^t), beta2h = 1/(1 - beta2^t)}; per element
//       m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2   (m, v updated in place)
//       a = a (1 - alpha wd) - alpha (m beta1h) / (sqrt(v beta2h) + eps)
//   opt_step_sgd(a, grad, params)           params = {alpha, wd}: a = a (1 - alpha wd) - alpha g
//
// All tensors f32, grad/m/v of a's shape with contiguous rows; the result is a view of a.
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline void check_opt_tensor(std::string_view op, const node* a, const node* t, const char* which) {
    check_type(op, t, type_id::f32, which);
    check_rows_contiguous(op, t, which);
    check_same_context(op, a, t);
    if (t->lay.ne != a->lay.ne)
        op_fail(op, errc::shape_mismatch, std::string(which) + " " + desc(t) + " must have the parameter's shape " + a->lay.to_string());
}

inline node* opt_step(op_kind op, node* a, node* grad, node* m, node* v, node* params) {
    const auto name = op_name(op);
    check_type(name, a, type_id::f32, "a");
    check_rows_contiguous(name, a, "a");
    if (!(a->flags & flag_param))
        op_fail(name, errc::invalid_argument, "a " + desc(a) + " is not a trainable parameter (call set_param() on it)");
    check_opt_tensor(name, a, grad, "grad");
    const std::int64_t n_params = op == op_kind::opt_step_adamw ? 7 : 2;
    if (op == op_kind::opt_step_adamw) {
        check_opt_tensor(name, a, m, "m");
        check_opt_tensor(name, a, v, "v");
    }
    check_type(name, params, type_id::f32, "params");
    check_same_context(name, a, params);
    if (params->lay.nelements() != n_params || !params->lay.is_contiguous())
        op_fail(name, errc::shape_mismatch, "params " + desc(params) + " must be a contiguous f32 vector of " + std::to_string(n_params) +
                                                (n_params == 7 ? " (alpha, beta1, beta2, eps, wd, beta1h, beta2h)" : " (alpha, wd)"));
    if (op == op_kind::opt_step_adamw) return make_inplace(a, op, {}, {a, grad, m, v, params});
    return make_inplace(a, op, {}, {a, grad, params});
}

}  // namespace detail

template <int R>
tensor<float, R> opt_step_adamw(tensor<float, R> a, tensor<float, R> grad, tensor<float, R> m, tensor<float, R> v,
                                tensor<float, 1> params) {
    return tensor<float, R>(detail::opt_step(op_kind::opt_step_adamw, a.get(), grad.get(), m.get(), v.get(), params.get()));
}
inline any_tensor opt_step_adamw(any_tensor a, any_tensor grad, any_tensor m, any_tensor v, any_tensor params) {
    return any_tensor(detail::opt_step(op_kind::opt_step_adamw, a.get(), grad.get(), m.get(), v.get(), params.get()));
}
template <int R>
tensor<float, R> opt_step_sgd(tensor<float, R> a, tensor<float, R> grad, tensor<float, 1> params) {
    return tensor<float, R>(detail::opt_step(op_kind::opt_step_sgd, a.get(), grad.get(), nullptr, nullptr, params.get()));
}
inline any_tensor opt_step_sgd(any_tensor a, any_tensor grad, any_tensor params) {
    return any_tensor(detail::opt_step(op_kind::opt_step_sgd, a.get(), grad.get(), nullptr, nullptr, params.get()));
}

template <typed_tensor A, typed_tensor G, typed_tensor M, typed_tensor V, typed_tensor P>
    requires(!(f32_tensor<A> && f32_tensor<G> && f32_tensor<M> && f32_tensor<V> && f32_tensor<P>))
void opt_step_adamw(A, G, M, V, P) {
    static_assert(detail::dependent_false<A, G, M, V, P>,
                  "tessera::graph::opt_step_adamw: the parameter, grad, m, v and params must all be tensor<float, R>");
}
template <typed_tensor A, typed_tensor G, typed_tensor P>
    requires(!(f32_tensor<A> && f32_tensor<G> && f32_tensor<P>))
void opt_step_sgd(A, G, P) {
    static_assert(detail::dependent_false<A, G, P>, "tessera::graph::opt_step_sgd: the parameter, grad and params must all be tensor<float, R>");
}

}  // namespace graph
TESSERA_END_NAMESPACE
