// Matrix products. mul_mat(a, b): a [K, M, A2, A3] (the weights: f32, f16, bf16 or a
// block type), b [K, N, B2, B3] with B2 % A2 == 0 and B3 % A3 == 0, gives f32
// [M, N, B2, B3] with out[m, n] = dot(row m of a, row n of b); a is broadcast over
// b's batch dims. out_prod(a, b): a [M, K, A2, A3] (f32, f16, bf16 or a block type),
// b f32 [N, K, B2, B3] -> f32 [M, N, B2, B3], out[m, n] = sum_k a[m, k] * b[n, k], a
// broadcast over b's batch dims as in mul_mat. mul_mat(a, b, precision::f32) asks for f32
// accumulation (ggml_mul_mat_set_prec), a hint to backends that would use less; the CPU
// accumulates in f32 always.
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {
inline node* mul_mat(node* a, node* b, precision prec) {
    check_not_null("mul_mat", a, "a");
    check_float("mul_mat", b, "b");
    check_same_context("mul_mat", a, b);
    const layout& la = a->lay;
    const layout& lb = b->lay;
    if (la.ne[0] != lb.ne[0])
        op_fail("mul_mat", errc::shape_mismatch, "a ", desc(a), " and b ", desc(b), " differ in K (dim 0)");
    if (!divisible(lb.ne[2], la.ne[2]) || !divisible(lb.ne[3], la.ne[3]))
        op_fail("mul_mat", errc::shape_mismatch, "a ", desc(a), " cannot be broadcast over the batch dims of b ", desc(b));
    if (la.is_transposed())
        op_fail("mul_mat", errc::shape_mismatch, "a ", desc(a), " is transposed (nb0 > nb1); use cont first");
    if (la.type != type_id::f32 && la.type != type_id::f16 && la.type != type_id::bf16 && !is_quantized(la.type))
        op_fail("mul_mat", errc::unsupported, "a ", desc(a), " must be f32, f16, bf16 or a block type");
    return make(*a->ctx, type_id::f32, {la.ne[1], lb.ne[1], lb.ne[2], lb.ne[3]}, op_kind::mul_mat, mul_mat_params{prec}, {a, b});
}
inline node* out_prod(node* a, node* b) {
    check_not_null("out_prod", a, "a");
    if (!is_float(a->lay.type) && !is_quantized(a->lay.type))
        op_fail("out_prod", errc::unsupported, "a ", desc(a), " must be f32, f16, bf16 or a block type");
    check_type("out_prod", b, type_id::f32, "b");
    check_same_context("out_prod", a, b);
    if (a->lay.ne[1] != b->lay.ne[1])
        op_fail("out_prod", errc::shape_mismatch, "a ", desc(a), " and b ", desc(b), " differ in K (dim 1)");
    if (!divisible(b->lay.ne[2], a->lay.ne[2]) || !divisible(b->lay.ne[3], a->lay.ne[3]))
        op_fail("out_prod", errc::shape_mismatch, "a ", desc(a), " cannot be broadcast over b ", desc(b));
    return make(*a->ctx, type_id::f32, {a->lay.ne[0], b->lay.ne[0], b->lay.ne[2], b->lay.ne[3]}, op_kind::out_prod, {}, {a, b});
}
}  // namespace detail

// `mul_mat_operands<A, B>`: a of a weight element (float or block), b of float elements.
template <class A, class B>
concept mul_mat_operands = typed_tensor<A> && float_tensor<B> && weight_element<typename std::remove_cvref_t<A>::element_type>;

template <weight_element Ta, int Ra, float_element Tb, int Rb>
    requires(Ra >= 1 && Rb >= 1)
tensor<float, detail::max_rank(2, Rb)> mul_mat(tensor<Ta, Ra> a, tensor<Tb, Rb> b, precision prec = precision::default_) {
    return tensor<float, detail::max_rank(2, Rb)>(detail::mul_mat(a.get(), b.get(), prec));
}
template <typed_tensor A, typed_tensor B>
    requires(!mul_mat_operands<A, B>)
void mul_mat(A, B, precision = precision::default_) {
    static_assert(detail::dependent_false<A, B>,
                  "tessera::graph::mul_mat: a (the weights) must hold f32, f16, bf16 or a quantization block type, "
                  "and b must hold f32, f16 or bf16");
}
inline any_tensor mul_mat(any_tensor a, any_tensor b, precision prec = precision::default_) {
    return any_tensor(detail::mul_mat(a.get(), b.get(), prec));
}

template <weight_element Ta, int Ra, int Rb>
tensor<float, detail::max_rank(2, Rb)> out_prod(tensor<Ta, Ra> a, tensor<float, Rb> b) {
    return tensor<float, detail::max_rank(2, Rb)>(detail::out_prod(a.get(), b.get()));
}
inline any_tensor out_prod(any_tensor a, any_tensor b) { return any_tensor(detail::out_prod(a.get(), b.get())); }

}  // namespace graph
TESSERA_END_NAMESPACE
