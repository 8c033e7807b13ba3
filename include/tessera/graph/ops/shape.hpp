// Views and copies: view, reshape, permute, transpose (no copy, no compute), cont,
// dup, cpy, cast (copies, with type conversion), repeat, concat, get_rows, set_rows.
#pragma once

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline node* view(node* a, std::array<std::int64_t, max_dims> ne, std::array<std::size_t, 3> nb, std::size_t offset) {
    check_not_null("view", a, "a");
    layout l;
    l.type = a->lay.type;
    l.ne = ne;
    l.nb = {static_cast<std::size_t>(type_size(l.type)), nb[0], nb[1], nb[2]};
    for (int d = 0; d < max_dims; ++d)
        if (ne[static_cast<std::size_t>(d)] < 0) op_fail("view", errc::shape_mismatch, "negative extent");
    if (ne[0] % block_size(l.type) != 0)
        op_fail("view", errc::shape_mismatch, "dim 0 of a " + std::string(type_name(l.type)) + " view must be whole blocks");
    return a->ctx->new_view(a, l, offset, op_kind::view, view_params{offset, {0, 1, 2, 3}}, {a});
}

inline node* reshape(node* a, std::array<std::int64_t, max_dims> ne) {
    check_not_null("reshape", a, "a");
    if (!a->lay.is_contiguous())
        op_fail("reshape", errc::shape_mismatch, "a " + desc(a) + " is not contiguous (use cont first)");
    const layout l = a->lay.reshape(ne);
    return a->ctx->new_view(a, l, 0, op_kind::reshape, view_params{}, {a});
}

inline node* permute(node* a, std::array<int, max_dims> axes) {
    check_not_null("permute", a, "a");
    const layout l = a->lay.permute(axes);
    if (is_quantized(l.type) && l.nb[0] != a->lay.nb[0])
        op_fail("permute", errc::unsupported, "a block-typed tensor " + desc(a) + " must keep dim 0 in place");
    return a->ctx->new_view(a, l, 0, op_kind::permute, view_params{0, axes}, {a});
}

inline node* cpy(node* a, node* b) {
    check_not_null("cpy", a, "a");
    check_not_null("cpy", b, "b");
    check_same_context("cpy", a, b);
    if (a->lay.nelements() != b->lay.nelements())
        op_fail("cpy", errc::shape_mismatch, "a " + desc(a) + " and b " + desc(b) + " hold different element counts");
    return b->ctx->new_view(b, b->lay, 0, op_kind::cpy, cpy_params{}, {a, b});
}

inline node* dup(node* a, type_id t, op_kind op) {
    check_not_null(op_name(op), a, "a");
    return make(*a->ctx, t, a->lay.ne, op, cpy_params{}, {a});
}

inline node* repeat(node* a, std::array<std::int64_t, max_dims> ne) {
    check_not_null("repeat", a, "a");
    layout target = layout::contiguous(a->lay.type, ne);
    if (!target.can_repeat(a->lay))
        op_fail("repeat", errc::shape_mismatch, "a " + desc(a) + " does not tile " + target.to_string());
    return make(*a->ctx, a->lay.type, ne, op_kind::repeat, {}, {a});
}

inline node* concat(node* a, node* b, int dim) {
    check_not_null("concat", a, "a");
    check_not_null("concat", b, "b");
    if (dim < 0 || dim >= max_dims) op_fail("concat", errc::invalid_argument, "dim must be 0..3");
    if (a->lay.type != b->lay.type) op_fail("concat", errc::unsupported, "a " + desc(a) + " and b " + desc(b) + " differ in type");
    auto ne = a->lay.ne;
    for (int d = 0; d < max_dims; ++d)
        if (d != dim && a->lay.ne[static_cast<std::size_t>(d)] != b->lay.ne[static_cast<std::size_t>(d)])
            op_fail("concat", errc::shape_mismatch, "a " + desc(a) + " and b " + desc(b) + " differ outside dim " + std::to_string(dim));
    ne[static_cast<std::size_t>(dim)] += b->lay.ne[static_cast<std::size_t>(dim)];
    return make(*a->ctx, a->lay.type, ne, op_kind::concat, concat_params{dim}, {a, b});
}

inline node* get_rows(node* a, node* idx) {
    check_not_null("get_rows", a, "a");
    check_type("get_rows", idx, type_id::i32, "indices");
    if (a->lay.ne[2] != idx->lay.ne[1] || a->lay.ne[3] != idx->lay.ne[2] || idx->lay.ne[3] != 1)
        op_fail("get_rows", errc::shape_mismatch, "indices " + desc(idx) + " must be [n, a.ne2, a.ne3] for a " + desc(a));
    const type_id t = a->lay.type == type_id::i32 ? type_id::i32 : type_id::f32;
    return make(*a->ctx, t, {a->lay.ne[0], idx->lay.ne[0], idx->lay.ne[1], idx->lay.ne[2]}, op_kind::get_rows, {}, {a, idx});
}

inline node* set_rows(node* a, node* b, node* idx) {
    check_not_null("set_rows", a, "a");
    check_float("set_rows", b, "b");
    check_not_null("set_rows", idx, "indices");
    if (!is_index_type(idx->lay.type)) op_fail("set_rows", errc::unsupported, "indices " + desc(idx) + " must be i32 or i64");
    if (a->lay.ne[0] != b->lay.ne[0] || a->lay.ne[2] != b->lay.ne[2] || a->lay.ne[3] != b->lay.ne[3])
        op_fail("set_rows", errc::shape_mismatch, "b " + desc(b) + " rows must match destination " + desc(a) + " outside dim 1");
    if (idx->lay.ne[0] != b->lay.ne[1] || idx->lay.ne[3] != 1 || !divisible(b->lay.ne[2], idx->lay.ne[1]) ||
        !divisible(b->lay.ne[3], idx->lay.ne[2]))
        op_fail("set_rows", errc::shape_mismatch, "indices " + desc(idx) + " must be [b.ne1, d2, d3] broadcast over b " + desc(b));
    return a->ctx->new_view(a, a->lay, 0, op_kind::set_rows, {}, {b, idx, a});
}

}  // namespace detail

// A view of a with extents ne and byte strides nb (nb1..nb3 as far as the rank needs)
// at a byte offset; stays inside a's root tensor.
template <int R2, tensor_element T, int R>
tensor<T, R2> view(tensor<T, R> a, const std::array<std::int64_t, static_cast<std::size_t>(R2)>& ne,
                   const std::array<std::size_t, static_cast<std::size_t>(R2 - 1)>& nb, std::size_t offset)
    requires(R2 >= 1 && R2 <= 4)
{
    std::array<std::int64_t, max_dims> e{1, 1, 1, 1};
    std::array<std::size_t, 3> s{};
    for (int d = 0; d < R2; ++d) e[static_cast<std::size_t>(d)] = ne[static_cast<std::size_t>(d)];
    for (int d = 1; d < max_dims; ++d) {
        std::size_t v = 0;
        if (d < R2) v = nb[static_cast<std::size_t>(d - 1)];
        else if (d == 1) v = a.nb(0) * static_cast<std::size_t>(ne[0] / element_traits<T>::per_item);
        else v = s[static_cast<std::size_t>(d - 2)] * static_cast<std::size_t>(e[static_cast<std::size_t>(d - 1)]);
        s[static_cast<std::size_t>(d - 1)] = v;
    }
    return tensor<T, R2>(detail::view(a.get(), e, s, offset));
}
inline any_tensor view(any_tensor a, std::array<std::int64_t, max_dims> ne, std::array<std::size_t, 3> nb, std::size_t offset) {
    return any_tensor(detail::view(a.get(), ne, nb, offset));
}

// The same elements with new extents (a must be contiguous).
template <int R2, tensor_element T, int R>
    requires(R2 >= 1 && R2 <= 4)
tensor<T, R2> reshape(tensor<T, R> a, const std::array<std::int64_t, static_cast<std::size_t>(R2)>& ne) {
    std::array<std::int64_t, max_dims> e{1, 1, 1, 1};
    for (int d = 0; d < R2; ++d) e[static_cast<std::size_t>(d)] = ne[static_cast<std::size_t>(d)];
    return tensor<T, R2>(detail::reshape(a.get(), e));
}
inline any_tensor reshape(any_tensor a, std::array<std::int64_t, max_dims> ne) {
    return any_tensor(detail::reshape(a.get(), ne));
}

// Old dim d moves to position axes[d] (ggml_permute). The result keeps a's rank unless
// R2 says otherwise (checked: extents past R2 must be 1).
template <int R2 = 0, tensor_element T, int R>
auto permute(tensor<T, R> a, std::array<int, max_dims> axes) {
    constexpr int RR = R2 == 0 ? R : R2;
    return tensor<T, RR>(detail::permute(a.get(), axes));
}
inline any_tensor permute(any_tensor a, std::array<int, max_dims> axes) { return any_tensor(detail::permute(a.get(), axes)); }

template <tensor_element T, int R>
    requires(R >= 2)
tensor<T, R> transpose(tensor<T, R> a) {
    return tensor<T, R>(detail::permute(a.get(), {1, 0, 2, 3}));
}
template <tensor_element T>
void transpose(tensor<T, 1>) {
    static_assert(detail::dependent_false<T>, "tessera::graph::transpose: a rank-1 tensor has no second dim; reshape it to rank 2 first");
}
inline any_tensor transpose(any_tensor a) { return any_tensor(detail::permute(a.get(), {1, 0, 2, 3})); }

// A contiguous copy of a (same type and shape).
template <tensor_element T, int R>
tensor<T, R> cont(tensor<T, R> a) {
    return tensor<T, R>(detail::dup(a.get(), a.lay().type, op_kind::cont));
}
inline any_tensor cont(any_tensor a) { return any_tensor(detail::dup(a.get(), a.type(), op_kind::cont)); }
template <tensor_element T, int R>
tensor<T, R> dup(tensor<T, R> a) {
    return tensor<T, R>(detail::dup(a.get(), a.lay().type, op_kind::dup));
}

// Writes a into b (same element count, converting types); returns b.
template <tensor_element Ta, int Ra, tensor_element Tb, int Rb>
tensor<Tb, Rb> cpy(tensor<Ta, Ra> a, tensor<Tb, Rb> b) {
    return tensor<Tb, Rb>(detail::cpy(a.get(), b.get()));
}
inline any_tensor cpy(any_tensor a, any_tensor b) { return any_tensor(detail::cpy(a.get(), b.get())); }

// A copy of a converted to element type U.
template <tensor_element U, tensor_element T, int R>
tensor<U, R> cast(tensor<T, R> a) {
    return tensor<U, R>(detail::dup(a.get(), element_traits<U>::id, op_kind::cpy));
}
inline any_tensor cast(any_tensor a, type_id t) { return any_tensor(detail::dup(a.get(), t, op_kind::cpy)); }

// a tiled to the shape of b.
template <tensor_element T, int R, tensor_element U, int R2>
    requires(R <= R2)
tensor<T, R2> repeat(tensor<T, R> a, tensor<U, R2> b) {
    return tensor<T, R2>(detail::repeat(a.get(), b.lay().ne));
}
inline any_tensor repeat(any_tensor a, std::array<std::int64_t, max_dims> ne) { return any_tensor(detail::repeat(a.get(), ne)); }

// a and b joined along dim.
template <tensor_element T, int R>
tensor<T, R> concat(tensor<T, R> a, tensor<T, R> b, int dim) {
    if (dim >= R) fail(errc::invalid_argument, "concat: dim " + std::to_string(dim) + " is outside rank " + std::to_string(R));
    return tensor<T, R>(detail::concat(a.get(), b.get(), dim));
}
inline any_tensor concat(any_tensor a, any_tensor b, int dim) { return any_tensor(detail::concat(a.get(), b.get(), dim)); }

// Rows of a picked by i32 indices [n, a.ne2, a.ne3] -> [a.ne0, n, ...]; f32 (a of any
// float or block type is converted), or i32 when a is i32.
template <tensor_element T, int R, int Ri>
    requires(R >= 2 && Ri >= 1 && Ri < R)
auto get_rows(tensor<T, R> a, tensor<std::int32_t, Ri> idx) {
    using out = std::conditional_t<std::is_same_v<T, std::int32_t>, std::int32_t, float>;
    return tensor<out, detail::max_rank(2, Ri + 1)>(detail::get_rows(a.get(), idx.get()));
}
template <typed_tensor A, typed_tensor I>
    requires(!index_tensor<I> || std::remove_cvref_t<A>::rank < 2)
void get_rows(A, I) {
    static_assert(detail::dependent_false<A, I>,
                  "tessera::graph::get_rows: a must have rank >= 2 and the indices must be a tensor<int32_t, R> of lower rank");
}
inline any_tensor get_rows(any_tensor a, any_tensor idx) { return any_tensor(detail::get_rows(a.get(), idx.get())); }

// Writes the rows of b into rows idx of a (a's type, converting); returns a.
template <tensor_element T, int R, float_element S, int Rb, index_element I, int Ri>
    requires(Rb <= R && Ri < R)
tensor<T, R> set_rows(tensor<T, R> a, tensor<S, Rb> b, tensor<I, Ri> idx) {
    return tensor<T, R>(detail::set_rows(a.get(), b.get(), idx.get()));
}
inline any_tensor set_rows(any_tensor a, any_tensor b, any_tensor idx) {
    return any_tensor(detail::set_rows(a.get(), b.get(), idx.get()));
}

}  // namespace graph
TESSERA_END_NAMESPACE
