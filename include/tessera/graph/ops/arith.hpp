// Arithmetic and placement builders: add1 (a + a one-element b), add_id (a bias row per
// selected expert), acc (b added into a strided view of a copy of a), set (b written
// into such a view), diag (a vector as a diagonal matrix), tri (keep one triangle of
// square matrices), solve_tri (triangular systems), cumsum (inclusive prefix sum along
// dim 0), repeat_back (the tiles of a summed into a smaller shape, the adjoint of repeat).
//
// Typed forms take float tensors (set also any plain element type, a and b alike);
// the any_tensor forms check the same at run time and throw tessera::error naming the
// op, the operands and their shapes. *_inplace forms write over a and return a view of it.
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline node* add1(node* a, node* b, bool inplace) {
    check_float("add1", a, "a");
    check_float("add1", b, "b");
    check_same_context("add1", a, b);
    if (b->lay.nelements() != 1)
        op_fail("add1", errc::shape_mismatch, "b " + desc(b) + " must hold exactly one element (a scalar)");
    if (inplace) return make_inplace(a, op_kind::add1, {}, {a, b});
    return make(*a->ctx, a->lay.type, a->lay.ne, op_kind::add1, {}, {a, b});
}

inline node* add_id(node* a, node* b, node* ids) {
    const char* name = "add_id";
    check_float(name, a, "a");
    check_float(name, b, "b");
    check_type(name, ids, type_id::i32, "ids");
    check_same_context(name, a, b);
    check_same_context(name, a, ids);
    const auto& na = a->lay.ne;
    if (na[3] != 1) op_fail(name, errc::shape_mismatch, "a " + desc(a) + " must be [ne0, n_used, n_tokens] (3-D)");
    if (b->lay.ne[0] != na[0] || b->lay.ne[2] != 1 || b->lay.ne[3] != 1)
        op_fail(name, errc::shape_mismatch, "b " + desc(b) + " must be [a.ne0, n_expert] for a " + desc(a));
    if (ids->lay.ne[0] != na[1] || ids->lay.ne[1] != na[2] || ids->lay.ne[2] != 1 || ids->lay.ne[3] != 1)
        op_fail(name, errc::shape_mismatch, "ids " + desc(ids) + " must be [a.ne1, a.ne2] for a " + desc(a));
    return make(*a->ctx, a->lay.type, na, op_kind::add_id, {}, {a, b, ids});
}

inline node* solve_tri(node* a, node* b, const solve_tri_params& p) {
    const char* name = "solve_tri";
    check_type(name, a, type_id::f32, "A");
    check_type(name, b, type_id::f32, "B");
    check_same_context(name, a, b);
    const auto& na = a->lay.ne;
    const auto& nb = b->lay.ne;
    if (na[0] != na[1]) op_fail(name, errc::shape_mismatch, "A " + desc(a) + " must hold square matrices (ne0 == ne1)");
    if ((p.left ? nb[1] : nb[0]) != na[0])
        op_fail(name, errc::shape_mismatch, "B " + desc(b) + (p.left ? " must have A's order as ne1 (A X = B)" : " must have A's order as ne0 (X A = B)") +
                                                " for A " + desc(a));
    if (nb[2] != na[2] || nb[3] != na[3])
        op_fail(name, errc::shape_mismatch, "A " + desc(a) + " and B " + desc(b) + " differ in the batch dims 2, 3");
    return make(*a->ctx, type_id::f32, nb, op_kind::solve_tri, p, {a, b});
}

// acc and set: b goes into the view of a (or of its copy) with byte strides nb1..nb3
// starting at byte `offset`; the view has b's extents and a's element size.
inline node* acc_set(op_kind op, node* a, node* b, std::size_t nb1, std::size_t nb2, std::size_t nb3,
                     std::size_t offset, bool inplace) {
    const auto name = op_name(op);
    check_not_null(name, a, "a");
    check_not_null(name, b, "b");
    check_same_context(name, a, b);
    const type_id ta = a->lay.type, tb = b->lay.type;
    if (op == op_kind::acc) {
        check_float(name, a, "a");
        check_float(name, b, "b");
    } else if (!(is_float(ta) && is_float(tb)) && !(ta == tb && block_size(ta) == 1)) {
        op_fail(name, errc::unsupported, "a " + desc(a) + " and b " + desc(b) +
                                             " must both be float (f32, f16, bf16) or of one plain (non-block) type");
    }
    if (!a->lay.is_contiguous()) op_fail(name, errc::shape_mismatch, "a " + desc(a) + " must be contiguous");
    const auto es = static_cast<std::size_t>(type_size(ta));
    if (offset % es != 0 || nb1 % es != 0 || nb2 % es != 0 || nb3 % es != 0)
        op_fail(name, errc::invalid_argument, "offset " + std::to_string(offset) + " and strides nb1..nb3 (" +
                                                  std::to_string(nb1) + ", " + std::to_string(nb2) + ", " + std::to_string(nb3) +
                                                  ") must be multiples of the element size " + std::to_string(es));
    if (b->lay.nelements() > 0) {
        const auto& ne = b->lay.ne;
        const std::size_t last = offset + static_cast<std::size_t>(ne[0] - 1) * es + static_cast<std::size_t>(ne[1] - 1) * nb1 +
                                 static_cast<std::size_t>(ne[2] - 1) * nb2 + static_cast<std::size_t>(ne[3] - 1) * nb3;
        if (last + es > a->lay.nbytes())
            op_fail(name, errc::shape_mismatch, "the view of b " + desc(b) + " at byte offset " + std::to_string(offset) +
                                                    " runs past the " + std::to_string(a->lay.nbytes()) + " bytes of a " + desc(a));
    }
    const set_params p{nb1, nb2, nb3, offset};
    if (inplace) return make_inplace(a, op, p, {a, b});
    return make(*a->ctx, ta, a->lay.ne, op, p, {a, b});
}

inline node* diag(node* a) {
    check_float("diag", a, "a");
    if (a->lay.ne[1] != 1) op_fail("diag", errc::shape_mismatch, "a " + desc(a) + " must be a row vector [n, 1, ne2, ne3]");
    return make(*a->ctx, a->lay.type, {a->lay.ne[0], a->lay.ne[0], a->lay.ne[2], a->lay.ne[3]}, op_kind::diag, {}, {a});
}

inline node* tri(node* a, tri_type t) {
    check_float("tri", a, "a");
    if (a->lay.ne[0] != a->lay.ne[1])
        op_fail("tri", errc::shape_mismatch, "a " + desc(a) + " must hold square matrices (ne0 == ne1)");
    if (static_cast<int>(t) > static_cast<int>(tri_type::lower)) op_fail("tri", errc::invalid_argument, "unknown tri_type");
    return make(*a->ctx, a->lay.type, a->lay.ne, op_kind::tri, tri_params{t}, {a});
}

inline node* cumsum(node* a) {
    check_float("cumsum", a, "a");
    return make(*a->ctx, a->lay.type, a->lay.ne, op_kind::cumsum, {}, {a});
}

inline node* repeat_back(node* a, std::array<std::int64_t, max_dims> ne) {
    check_float("repeat_back", a, "a");
    for (auto e : ne)
        if (e < 1) op_fail("repeat_back", errc::shape_mismatch, "target extents must be >= 1");
    const layout target = layout::contiguous(a->lay.type, ne);
    if (!a->lay.can_repeat(target))
        op_fail("repeat_back", errc::shape_mismatch, "a " + desc(a) + " is not a tiling of " + target.to_string() +
                                                         " (every extent of a must be a multiple of the target's)");
    return make(*a->ctx, a->lay.type, ne, op_kind::repeat_back, {}, {a});
}

}  // namespace detail

// ---- add1 ----------------------------------------------------------------------------------
// a + b[0], b one element.
template <float_element Ta, int Ra, float_element Tb, int Rb>
tensor<Ta, Ra> add1(tensor<Ta, Ra> a, tensor<Tb, Rb> b) {
    return tensor<Ta, Ra>(detail::add1(a.get(), b.get(), false));
}
template <float_element Ta, int Ra, float_element Tb, int Rb>
tensor<Ta, Ra> add1_inplace(tensor<Ta, Ra> a, tensor<Tb, Rb> b) {
    return tensor<Ta, Ra>(detail::add1(a.get(), b.get(), true));
}
template <typed_tensor A, typed_tensor B>
    requires(!float_tensor<A> || !float_tensor<B>)
void add1(A, B) {
    static_assert(detail::dependent_false<A, B>, "tessera::graph::add1: both operands must be tensors of f32, f16 or bf16");
}
inline any_tensor add1(any_tensor a, any_tensor b) { return any_tensor(detail::add1(a.get(), b.get(), false)); }
inline any_tensor add1_inplace(any_tensor a, any_tensor b) { return any_tensor(detail::add1(a.get(), b.get(), true)); }

// ---- add_id --------------------------------------------------------------------------------
// MoE bias per selected expert: a [ne0, n_used, n_tokens], b [ne0, n_expert], ids i32
// [n_used, n_tokens] -> a's type: out[:, u, t] = a[:, u, t] + b[:, ids[u, t]]. An id outside
// [0, n_expert) is an error at compute.
template <float_element Ta, int Ra, float_element Tb, int Rb, int Ri>
    requires(Ra <= 3 && Rb <= 2 && Ri <= 2)
tensor<Ta, Ra> add_id(tensor<Ta, Ra> a, tensor<Tb, Rb> b, tensor<std::int32_t, Ri> ids) {
    return tensor<Ta, Ra>(detail::add_id(a.get(), b.get(), ids.get()));
}
template <typed_tensor A, typed_tensor B, typed_tensor I>
    requires(!float_tensor<A> || !float_tensor<B> || !std::same_as<typename std::remove_cvref_t<I>::element_type, std::int32_t> ||
             (std::remove_cvref_t<A>::rank > 3) || (std::remove_cvref_t<B>::rank > 2) || (std::remove_cvref_t<I>::rank > 2))
void add_id(A, B, I) {
    static_assert(detail::dependent_false<A, B, I>,
                  "tessera::graph::add_id: a (rank <= 3) and b (rank <= 2) must be tensors of f32, f16 or bf16 and "
                  "ids a tensor<int32_t, R> of rank <= 2");
}
inline any_tensor add_id(any_tensor a, any_tensor b, any_tensor ids) { return any_tensor(detail::add_id(a.get(), b.get(), ids.get())); }

// ---- acc, set ---------------------------------------------------------------------------------
// acc: a copy of a in which the view (b's extents, byte strides nb1..nb3, byte offset)
// has b added. set: the same, with b written instead (set_1d: one row at offset;
// set_2d: rows nb1 apart). a must be contiguous.
template <float_element Ta, int Ra, float_element Tb, int Rb>
tensor<Ta, Ra> acc(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return tensor<Ta, Ra>(detail::acc_set(op_kind::acc, a.get(), b.get(), nb1, nb2, nb3, offset, false));
}
template <float_element Ta, int Ra, float_element Tb, int Rb>
tensor<Ta, Ra> acc_inplace(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return tensor<Ta, Ra>(detail::acc_set(op_kind::acc, a.get(), b.get(), nb1, nb2, nb3, offset, true));
}
inline any_tensor acc(any_tensor a, any_tensor b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return any_tensor(detail::acc_set(op_kind::acc, a.get(), b.get(), nb1, nb2, nb3, offset, false));
}
inline any_tensor acc_inplace(any_tensor a, any_tensor b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return any_tensor(detail::acc_set(op_kind::acc, a.get(), b.get(), nb1, nb2, nb3, offset, true));
}

// `set_operands<A, B>`: float tensors, or tensors of one plain (non-block) element type.
template <class A, class B>
concept set_operands =
    typed_tensor<A> && typed_tensor<B> &&
    ((float_tensor<A> && float_tensor<B>) ||
     (std::same_as<typename std::remove_cvref_t<A>::element_type, typename std::remove_cvref_t<B>::element_type> &&
      !block_element<typename std::remove_cvref_t<A>::element_type>));

template <tensor_element Ta, int Ra, tensor_element Tb, int Rb>
    requires set_operands<tensor<Ta, Ra>, tensor<Tb, Rb>>
tensor<Ta, Ra> set(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return tensor<Ta, Ra>(detail::acc_set(op_kind::set, a.get(), b.get(), nb1, nb2, nb3, offset, false));
}
template <tensor_element Ta, int Ra, tensor_element Tb, int Rb>
    requires set_operands<tensor<Ta, Ra>, tensor<Tb, Rb>>
tensor<Ta, Ra> set_inplace(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return tensor<Ta, Ra>(detail::acc_set(op_kind::set, a.get(), b.get(), nb1, nb2, nb3, offset, true));
}
template <typed_tensor A, typed_tensor B>
    requires(!set_operands<A, B>)
void set(A, B, std::size_t, std::size_t, std::size_t, std::size_t) {
    static_assert(detail::dependent_false<A, B>, "tessera::graph::set: a and b must both hold f32, f16 or bf16, "
                                                 "or both hold one plain (non-block) element type");
}
template <tensor_element Ta, int Ra, tensor_element Tb, int Rb>
    requires set_operands<tensor<Ta, Ra>, tensor<Tb, Rb>>
tensor<Ta, Ra> set_1d(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t offset) {
    return set(a, b, a.nb(1), a.nb(2), a.nb(3), offset);
}
template <tensor_element Ta, int Ra, tensor_element Tb, int Rb>
    requires set_operands<tensor<Ta, Ra>, tensor<Tb, Rb>>
tensor<Ta, Ra> set_1d_inplace(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t offset) {
    return set_inplace(a, b, a.nb(1), a.nb(2), a.nb(3), offset);
}
template <tensor_element Ta, int Ra, tensor_element Tb, int Rb>
    requires set_operands<tensor<Ta, Ra>, tensor<Tb, Rb>>
tensor<Ta, Ra> set_2d(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t nb1, std::size_t offset) {
    return set(a, b, nb1, a.nb(2), a.nb(3), offset);
}
template <tensor_element Ta, int Ra, tensor_element Tb, int Rb>
    requires set_operands<tensor<Ta, Ra>, tensor<Tb, Rb>>
tensor<Ta, Ra> set_2d_inplace(tensor<Ta, Ra> a, tensor<Tb, Rb> b, std::size_t nb1, std::size_t offset) {
    return set_inplace(a, b, nb1, a.nb(2), a.nb(3), offset);
}
inline any_tensor set(any_tensor a, any_tensor b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return any_tensor(detail::acc_set(op_kind::set, a.get(), b.get(), nb1, nb2, nb3, offset, false));
}
inline any_tensor set_inplace(any_tensor a, any_tensor b, std::size_t nb1, std::size_t nb2, std::size_t nb3, std::size_t offset) {
    return any_tensor(detail::acc_set(op_kind::set, a.get(), b.get(), nb1, nb2, nb3, offset, true));
}
// set_1d / set_2d with a's own strides for the dims not given (an empty a is refused by set).
inline any_tensor set_1d(any_tensor a, any_tensor b, std::size_t offset) {
    const layout l = a.get() ? a.lay() : layout{};
    return set(a, b, l.nb[1], l.nb[2], l.nb[3], offset);
}
inline any_tensor set_1d_inplace(any_tensor a, any_tensor b, std::size_t offset) {
    const layout l = a.get() ? a.lay() : layout{};
    return set_inplace(a, b, l.nb[1], l.nb[2], l.nb[3], offset);
}
inline any_tensor set_2d(any_tensor a, any_tensor b, std::size_t nb1, std::size_t offset) {
    const layout l = a.get() ? a.lay() : layout{};
    return set(a, b, nb1, l.nb[2], l.nb[3], offset);
}
inline any_tensor set_2d_inplace(any_tensor a, any_tensor b, std::size_t nb1, std::size_t offset) {
    const layout l = a.get() ? a.lay() : layout{};
    return set_inplace(a, b, nb1, l.nb[2], l.nb[3], offset);
}

// ---- diag, tri, cumsum, repeat_back --------------------------------------------------------------
// [n, 1, ne2, ne3] -> [n, n, ne2, ne3] with a on the diagonal, zeros elsewhere.
template <float_element T, int R>
tensor<T, detail::max_rank(2, R)> diag(tensor<T, R> a) {
    return tensor<T, detail::max_rank(2, R)>(detail::diag(a.get()));
}
inline any_tensor diag(any_tensor a) { return any_tensor(detail::diag(a.get())); }

// Square matrices with one triangle kept (see tri_type), zeros elsewhere.
template <float_element T, int R>
    requires(R >= 2)
tensor<T, R> tri(tensor<T, R> a, tri_type t) {
    return tensor<T, R>(detail::tri(a.get(), t));
}
inline any_tensor tri(any_tensor a, tri_type t) { return any_tensor(detail::tri(a.get(), t)); }

// Solves the triangular systems A X = B (left) or X A = B for X, per batch (dims 2, 3):
// A f32 [n, n, ...] (ne0 the column), B f32 [k, n, ...] (left: k right-hand sides, ne1 the
// row) -> f32 of B's shape. The options say which system, which triangle of A is read and
// whether A's diagonal is taken as ones, e.g. solve_tri(A, B, {.part = tri_part::upper}).
// ggml's CPU (and tessera's) solves left, lower, non-unit only; the other forms build but
// are refused by the executor.
enum class tri_side : std::uint8_t { left, right };     // A X = B, or X A = B
enum class tri_part : std::uint8_t { lower, upper };    // the triangle of A that is read
enum class tri_diag : std::uint8_t { non_unit, unit };  // unit: A's diagonal is taken as ones
struct solve_tri_options {
    tri_side side = tri_side::left;
    tri_part part = tri_part::lower;
    tri_diag diag = tri_diag::non_unit;
};
namespace detail {
inline solve_tri_params to_params(const solve_tri_options& o) noexcept {
    return {o.side == tri_side::left, o.part == tri_part::lower, o.diag == tri_diag::unit};
}
}  // namespace detail
template <int Ra, int Rb>
    requires(Ra >= 2 && Rb >= 2)
tensor<float, Rb> solve_tri(tensor<float, Ra> a, tensor<float, Rb> b, const solve_tri_options& o = {}) {
    return tensor<float, Rb>(detail::solve_tri(a.get(), b.get(), detail::to_params(o)));
}
template <typed_tensor A, typed_tensor B>
    requires(!std::same_as<typename std::remove_cvref_t<A>::element_type, float> ||
             !std::same_as<typename std::remove_cvref_t<B>::element_type, float> || (std::remove_cvref_t<A>::rank < 2) ||
             (std::remove_cvref_t<B>::rank < 2))
void solve_tri(A, B, const solve_tri_options& = {}) {
    static_assert(detail::dependent_false<A, B>, "tessera::graph::solve_tri: A and B must be tensor<float, R> of rank >= 2");
}
inline any_tensor solve_tri(any_tensor a, any_tensor b, const solve_tri_options& o = {}) {
    return any_tensor(detail::solve_tri(a.get(), b.get(), detail::to_params(o)));
}

// Inclusive prefix sums along dim 0.
template <float_element T, int R>
tensor<T, R> cumsum(tensor<T, R> a) {
    return tensor<T, R>(detail::cumsum(a.get()));
}
inline any_tensor cumsum(any_tensor a) { return any_tensor(detail::cumsum(a.get())); }

// The tiles of a summed into the shape of b (a's extents multiples of b's).
template <float_element T, int R, tensor_element U, int R2>
    requires(R2 <= R)
tensor<T, R2> repeat_back(tensor<T, R> a, tensor<U, R2> b) {
    return tensor<T, R2>(detail::repeat_back(a.get(), b.lay().ne));
}
inline any_tensor repeat_back(any_tensor a, std::array<std::int64_t, max_dims> ne) {
    return any_tensor(detail::repeat_back(a.get(), ne));
}

#define TESSERA_FLOAT_ONLY_(NAME)                                                                                 \
    template <typed_tensor A>                                                                                     \
        requires(!float_tensor<A>)                                                                                \
    void NAME(A) {                                                                                                \
        static_assert(detail::dependent_false<A>, "tessera::graph::" #NAME ": the operand must be a tensor of f32, f16 or bf16"); \
    }
TESSERA_FLOAT_ONLY_(diag)
TESSERA_FLOAT_ONLY_(cumsum)
#undef TESSERA_FLOAT_ONLY_

}  // namespace graph
TESSERA_END_NAMESPACE
