// Reductions: sum (all elements to one), sum_rows and mean (each row to one),
// argmax (index of each row's largest element), count_equal, cross_entropy_loss.
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {
inline node* reduce(op_kind op, node* a) {
    const auto name = op_name(op);
    check_float(name, a, "a");
    switch (op) {
        case op_kind::sum: return make(*a->ctx, a->lay.type, {1, 1, 1, 1}, op, {}, {a});
        case op_kind::sum_rows: return make(*a->ctx, a->lay.type, {1, a->lay.ne[1], a->lay.ne[2], a->lay.ne[3]}, op, {}, {a});
        case op_kind::mean: return make(*a->ctx, type_id::f32, {1, a->lay.ne[1], a->lay.ne[2], a->lay.ne[3]}, op, {}, {a});
        case op_kind::argmax:
            check_type(name, a, type_id::f32, "a");
            if (a->lay.ne[2] != 1 || a->lay.ne[3] != 1) op_fail(name, errc::shape_mismatch, "a " + desc(a) + " must be a matrix");
            return make(*a->ctx, type_id::i32, {a->lay.ne[1], 1, 1, 1}, op, {}, {a});
        default: op_fail(name, errc::invalid_argument, "not a reduction");
    }
}
inline node* count_equal(node* a, node* b) {
    check_not_null("count_equal", a, "a");
    check_not_null("count_equal", b, "b");
    if (a->lay.type != type_id::i32 || b->lay.type != type_id::i32)
        op_fail("count_equal", errc::unsupported, "a " + desc(a) + " and b " + desc(b) + " must both be i32");
    if (a->lay.ne != b->lay.ne) op_fail("count_equal", errc::shape_mismatch, "a " + desc(a) + " and b " + desc(b) + " differ in shape");
    return make(*a->ctx, type_id::i64, {1, 1, 1, 1}, op_kind::count_equal, {}, {a, b});
}
inline node* cross_entropy_loss(node* a, node* b) {
    const char* name = "cross_entropy_loss";
    check_type(name, a, type_id::f32, "logits");
    check_type(name, b, type_id::f32, "labels");
    if (a->lay.ne != b->lay.ne) op_fail(name, errc::shape_mismatch, "logits " + desc(a) + " and labels " + desc(b) + " differ in shape");
    return make(*a->ctx, type_id::f32, {1, 1, 1, 1}, op_kind::cross_entropy_loss, {}, {a, b});
}
}  // namespace detail

// f32 [1]: -(1/rows) * sum over rows of sum_i labels_i * log_softmax(logits)_i, rows
// being a's rows (dim 0 is the class dim); labels are usually one-hot or probabilities.
template <int R>
tensor<float, 1> cross_entropy_loss(tensor<float, R> logits, tensor<float, R> labels) {
    return tensor<float, 1>(detail::cross_entropy_loss(logits.get(), labels.get()));
}
inline any_tensor cross_entropy_loss(any_tensor logits, any_tensor labels) {
    return any_tensor(detail::cross_entropy_loss(logits.get(), labels.get()));
}

// One element: the sum of all of a.
template <float_element T, int R>
tensor<T, 1> sum(tensor<T, R> a) {
    return tensor<T, 1>(detail::reduce(op_kind::sum, a.get()));
}
// [1, ne1, ne2, ne3]: each row summed.
template <float_element T, int R>
tensor<T, R> sum_rows(tensor<T, R> a) {
    return tensor<T, R>(detail::reduce(op_kind::sum_rows, a.get()));
}
// f32 [1, ne1, ne2, ne3]: each row's mean.
template <float_element T, int R>
tensor<float, R> mean(tensor<T, R> a) {
    return tensor<float, R>(detail::reduce(op_kind::mean, a.get()));
}
// i32 [ne1]: for each row of a matrix, the index of its largest element (first on ties).
inline tensor<std::int32_t, 1> argmax(tensor<float, 2> a) {
    return tensor<std::int32_t, 1>(detail::reduce(op_kind::argmax, a.get()));
}
template <typed_tensor A>
    requires(!std::same_as<std::remove_cvref_t<A>, tensor<float, 2>>)
void argmax(A) {
    static_assert(detail::dependent_false<A>, "tessera::graph::argmax: the operand must be a tensor<float, 2>");
}
// i64 [1]: how many elements of a and b are equal.
template <int R>
tensor<std::int64_t, 1> count_equal(tensor<std::int32_t, R> a, tensor<std::int32_t, R> b) {
    return tensor<std::int64_t, 1>(detail::count_equal(a.get(), b.get()));
}

inline any_tensor sum(any_tensor a) { return any_tensor(detail::reduce(op_kind::sum, a.get())); }
inline any_tensor sum_rows(any_tensor a) { return any_tensor(detail::reduce(op_kind::sum_rows, a.get())); }
inline any_tensor mean(any_tensor a) { return any_tensor(detail::reduce(op_kind::mean, a.get())); }
inline any_tensor argmax(any_tensor a) { return any_tensor(detail::reduce(op_kind::argmax, a.get())); }
inline any_tensor count_equal(any_tensor a, any_tensor b) { return any_tensor(detail::count_equal(a.get(), b.get())); }

}  // namespace graph
TESSERA_END_NAMESPACE
