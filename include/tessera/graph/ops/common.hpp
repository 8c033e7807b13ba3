// Shared pieces of the op builders: handle traits, the checks every builder runs
// (they throw tessera::error naming the op, the tensors and their shapes), and the
// helpers that create result nodes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/layout.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/graph/tensor.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// Whether H is a typed handle tensor<T, R>.
template <class H>
struct is_typed_tensor : std::false_type {};
template <class T, int R>
struct is_typed_tensor<tensor<T, R>> : std::true_type {};
template <class H>
concept typed_tensor = is_typed_tensor<std::remove_cvref_t<H>>::value;

// Typed handles of float elements (f32, f16, bf16).
template <class H>
concept float_tensor = typed_tensor<H> && float_element<typename std::remove_cvref_t<H>::element_type>;
// Typed handles of f32 elements.
template <class H>
concept f32_tensor = typed_tensor<H> && std::same_as<typename std::remove_cvref_t<H>::element_type, float>;
template <class H>
concept index_tensor = typed_tensor<H> && index_element<typename std::remove_cvref_t<H>::element_type>;

namespace detail {

template <class...>
inline constexpr bool dependent_false = false;

constexpr int max_rank(int a, int b) noexcept { return a > b ? a : b; }

inline bool is_index_type(type_id t) noexcept { return t == type_id::i32 || t == type_id::i64; }

inline std::string desc(const node* n) { return shape_string(n); }
// n is a whole multiple of d (a broadcast's repeat count); false for d <= 0 (an empty dim
// repeats into nothing, and n % 0 is undefined).
constexpr bool divisible(std::int64_t n, std::int64_t d) noexcept { return d > 0 && n % d == 0; }

// Throws "<op>: " followed by the parts (text and integers, as fail_cat takes them).
template <class... Parts>
[[noreturn]] inline void op_fail(std::string_view op, errc c, const Parts&... what) {
    fail_cat(c, op, ": ", what...);
}

inline void check_not_null(std::string_view op, const node* n, const char* which) {
    if (!n) op_fail(op, errc::invalid_argument, "operand ", which, " is an empty handle");
}

inline void check_float(std::string_view op, const node* n, const char* which) {
    check_not_null(op, n, which);
    if (!is_float(n->lay.type))
        op_fail(op, errc::unsupported, "operand ", which, " ", desc(n), " must be f32, f16 or bf16");
}

inline void check_type(std::string_view op, const node* n, type_id t, const char* which) {
    check_not_null(op, n, which);
    if (n->lay.type != t)
        op_fail(op, errc::unsupported, "operand ", which, " ", desc(n), " must be ", type_name(t));
}

inline void check_rows_contiguous(std::string_view op, const node* n, const char* which) {
    if (!n->lay.is_contiguous_rows())
        op_fail(op, errc::shape_mismatch, "operand ", which, " ", desc(n),
                " must have contiguous rows (nb[0] == element size)");
}

inline void check_same_context(std::string_view op, const node* a, const node* b) {
    if (a && b && a->ctx != b->ctx) op_fail(op, errc::invalid_argument, "operands belong to different contexts");
}

// A new node of contiguous layout (type t, extents ne) computed by op from srcs.
inline node* make(context& ctx, type_id t, std::array<std::int64_t, max_dims> ne, op_kind op, op_params p,
                  std::initializer_list<node*> srcs) {
    return ctx.new_op(layout::contiguous(t, ne), op, std::move(p), srcs);
}

// A new node over a's bytes with a's layout (in-place ops).
inline node* make_inplace(node* a, op_kind op, op_params p, std::initializer_list<node*> srcs) {
    return a->ctx->new_view(a, a->lay, 0, op, std::move(p), srcs);
}

template <class T, int R>
tensor<T, R> wrap(node* n) {
    return tensor<T, R>(n);
}

}  // namespace detail
}  // namespace graph
TESSERA_END_NAMESPACE
