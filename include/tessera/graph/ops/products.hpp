// mul_mat_id: the mixture-of-experts product. as [K, M, n_expert] holds one weight
// matrix per expert (f32, f16, bf16 or a block type), b [K, n_b, T] the activations,
// ids i32 [n_used, T] the experts each token uses (n_used a multiple of n_b). The
// result is f32 [M, n_used, T] with out[:, u, t] = as[ids[u, t]] . b[:, u % n_b, t].
// Expert ids are data: the CPU executor throws tessera::error for one outside
// [0, n_expert) rather than reading out of bounds.
#pragma once

#include "tessera/graph/ops/common.hpp"
#include "tessera/graph/ops/matmul.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {
inline node* mul_mat_id(node* as, node* b, node* ids) {
    constexpr std::string_view op = "mul_mat_id";
    check_not_null(op, as, "as");
    check_float(op, b, "b");
    check_type(op, ids, type_id::i32, "ids");
    check_same_context(op, as, b);
    check_same_context(op, as, ids);
    const layout& la = as->lay;
    const layout& lb = b->lay;
    const layout& li = ids->lay;
    if (la.type != type_id::f32 && la.type != type_id::f16 && la.type != type_id::bf16 && !is_quantized(la.type))
        op_fail(op, errc::unsupported, "as " + desc(as) + " must be f32, f16, bf16 or a block type");
    if (la.is_transposed()) op_fail(op, errc::shape_mismatch, "as " + desc(as) + " is transposed (nb0 > nb1); use cont first");
    if (la.ne[3] != 1) op_fail(op, errc::shape_mismatch, "as " + desc(as) + " must be 3-D [K, M, n_expert]");
    if (lb.ne[3] != 1) op_fail(op, errc::shape_mismatch, "b " + desc(b) + " must be 3-D [K, n_b, T]");
    if (li.ne[2] != 1 || li.ne[3] != 1) op_fail(op, errc::shape_mismatch, "ids " + desc(ids) + " must be 2-D [n_used, T]");
    if (la.ne[0] != lb.ne[0])
        op_fail(op, errc::shape_mismatch, "as " + desc(as) + " and b " + desc(b) + " differ in K (dim 0)");
    if (li.ne[1] != lb.ne[2])
        op_fail(op, errc::shape_mismatch, "ids " + desc(ids) + " and b " + desc(b) + " differ in the token count (ids dim 1, b dim 2)");
    if (lb.ne[1] < 1 || li.ne[0] % lb.ne[1] != 0)
        op_fail(op, errc::shape_mismatch, "ids " + desc(ids) + " uses " + std::to_string(li.ne[0]) +
                                              " experts per token, not a multiple of b's dim 1 " + desc(b));
    return make(*as->ctx, type_id::f32, {la.ne[1], li.ne[0], lb.ne[2], 1}, op_kind::mul_mat_id, {}, {as, b, ids});
}
}  // namespace detail

template <weight_element Ta, int Ra, float_element Tb, int Rb>
    requires(Ra == 3 && Rb <= 3)
tensor<float, 3> mul_mat_id(tensor<Ta, Ra> as, tensor<Tb, Rb> b, tensor<std::int32_t, 2> ids) {
    return tensor<float, 3>(detail::mul_mat_id(as.get(), b.get(), ids.get()));
}
template <typed_tensor A, typed_tensor B, typed_tensor I>
    requires(!(mul_mat_operands<A, B> && std::remove_cvref_t<A>::rank == 3 && std::remove_cvref_t<B>::rank <= 3 &&
               std::same_as<std::remove_cvref_t<I>, tensor<std::int32_t, 2>>))
void mul_mat_id(A, B, I) {
    static_assert(detail::dependent_false<A, B, I>,
                  "tessera::graph::mul_mat_id: as must be a rank-3 tensor of f32, f16, bf16 or a block type (one matrix per "
                  "expert), b a float tensor of rank <= 3, and ids a tensor<int32_t, 2>");
}
inline any_tensor mul_mat_id(any_tensor as, any_tensor b, any_tensor ids) {
    return any_tensor(detail::mul_mat_id(as.get(), b.get(), ids.get()));
}

}  // namespace graph
TESSERA_END_NAMESPACE
