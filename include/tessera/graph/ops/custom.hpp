// Custom ops: user code that the executor runs as a node of the graph (ggml's
// map_custom1/2/3 and custom):
//
//   map_custom1(a, fn, n_tasks)          fn(dst, a, ith, nth)        dst: new, a's type and shape
//   map_custom2(a, b, fn, n_tasks)       fn(dst, a, b, ith, nth)
//   map_custom3(a, b, c, fn, n_tasks)    fn(dst, a, b, c, ith, nth)
//   map_customN_inplace(...)             the same with dst = a (a view of a's bytes)
//   custom(ctx, type, ne, {args}, fn, n_tasks)   fn(dst, args, ith, nth), args the sources as a
//                                        span of any_tensor (up to 10); dst new, of type and ne
//   custom_inplace(a, {args}, fn, n_tasks)       the same with dst = a (up to 9 args)
//
// fn is any callable: a lambda with captures, a functor, a function. It is copied into
// the node and lives as long as the context holds the node, so whatever it refers to
// (captured references, pointers) must outlive the computes. ggml's C form, a function
// pointer plus a void* userdata passed back on every call, is an overload of each.
//
// Threads: the executor calls fn from every thread that takes part, at the same time,
// each with its index ith in [0, nth); fn computes its share of dst (e.g. rows
// [ith*per, (ith+1)*per)), so fn must be safe to call concurrently (it is invoked
// through a const reference). n_tasks = -1 means every thread of the executor; n_tasks
// > 0 means min(n_tasks, threads) threads, with nth that count; the other threads skip
// the node. The executor's barrier after the node makes dst visible to the next nodes.
// An exception thrown by fn stops the compute and is rethrown by compute().
//
// Typed forms: with tensor<T, R> operands fn receives tensor<T, R> handles (dst of a's
// type and rank); custom<T, R>(ctx, ne, {args}, fn) makes a tensor<T, R>.
#pragma once

#include <concepts>
#include <initializer_list>
#include <span>
#include <utility>

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline void check_n_tasks(std::string_view op, int n_tasks) {
    if (n_tasks == 0 || n_tasks < -1)
        op_fail(op, errc::invalid_argument, "n_tasks must be -1 (all threads) or > 0 (got " + std::to_string(n_tasks) + ")");
}

// A custom node: a new tensor of type t and extents ne, or (inplace) a view of srcs[0].
inline node* custom_node(op_kind op, type_id t, std::array<std::int64_t, max_dims> ne, context* ctx, std::span<node* const> srcs,
                         bool inplace, custom_fn fn, int n_tasks) {
    const auto name = op_name(op);
    check_n_tasks(name, n_tasks);
    if (!fn) op_fail(name, errc::invalid_argument, "the function is empty");
    if (srcs.size() > static_cast<std::size_t>(max_src))
        op_fail(name, errc::invalid_argument, std::to_string(srcs.size()) + " sources (at most " + std::to_string(max_src) + ")");
    for (std::size_t i = 0; i < srcs.size(); ++i) {
        if (!srcs[i]) op_fail(name, errc::invalid_argument, "source " + std::to_string(i) + " is an empty handle");
        if (srcs[i]->ctx != ctx) op_fail(name, errc::invalid_argument, "source " + std::to_string(i) + " belongs to another context");
    }
    node* n = inplace ? make_inplace(srcs[0], op, custom_params{std::move(fn), n_tasks}, {})
                      : make(*ctx, t, ne, op, custom_params{std::move(fn), n_tasks}, {});
    for (std::size_t i = 0; i < srcs.size(); ++i) n->src[i] = srcs[i];
    return n;
}

inline node* map_custom(op_kind op, std::initializer_list<node*> srcs, bool inplace, custom_fn fn, int n_tasks) {
    node* a = *srcs.begin();
    check_not_null(op_name(op), a, "a");
    return custom_node(op, a->lay.type, a->lay.ne, a->ctx, std::span<node* const>(srcs.begin(), srcs.size()), inplace, std::move(fn), n_tasks);
}

// The sources of a custom node after the first `skip`, as any_tensor handles.
struct custom_args {
    std::array<any_tensor, max_src> v{};
    std::size_t n = 0;
    custom_args(const node& d, int skip) {
        for (int i = skip; i < d.n_src(); ++i) v[n++] = any_tensor(d.src[static_cast<std::size_t>(i)]);
    }
    std::span<const any_tensor> span() const { return {v.data(), n}; }
};

inline node* custom_any(context& ctx, type_id t, std::array<std::int64_t, max_dims> ne, node* inplace_of,
                        std::initializer_list<any_tensor> args, custom_fn fn, int n_tasks) {
    std::array<node*, max_src + 1> srcs{};
    std::size_t n = 0;
    if (inplace_of) srcs[n++] = inplace_of;
    if (args.size() + n > static_cast<std::size_t>(max_src))
        op_fail("custom", errc::invalid_argument, std::to_string(args.size()) + " arguments (at most " + std::to_string(max_src - n) + ")");
    for (const any_tensor& x : args) srcs[n++] = x.get();
    return custom_node(op_kind::custom, t, ne, &ctx, std::span<node* const>(srcs.data(), n), inplace_of != nullptr, std::move(fn), n_tasks);
}

}  // namespace detail

// ggml's C-style callbacks: a function pointer and a userdata pointer passed back.
using custom1_fn_ptr = void (*)(any_tensor dst, any_tensor a, int ith, int nth, void* userdata);
using custom2_fn_ptr = void (*)(any_tensor dst, any_tensor a, any_tensor b, int ith, int nth, void* userdata);
using custom3_fn_ptr = void (*)(any_tensor dst, any_tensor a, any_tensor b, any_tensor c, int ith, int nth, void* userdata);
using custom_fn_ptr = void (*)(any_tensor dst, std::span<const any_tensor> args, int ith, int nth, void* userdata);

// ---- map_custom1 ------------------------------------------------------------------------------
#define TESSERA_MAP_CUSTOM1_(NAME, INPLACE)                                                                                  \
    template <class F>                                                                                                   \
        requires std::invocable<const F&, any_tensor, any_tensor, int, int>                                              \
    any_tensor NAME(any_tensor a, F fn, int n_tasks = -1) {                                                              \
        return any_tensor(detail::map_custom(                                                                            \
            op_kind::map_custom1, {a.get()}, INPLACE,                                                                    \
            [fn = std::move(fn)](node& d, int ith, int nth) { fn(any_tensor(&d), any_tensor(d.src[0]), ith, nth); }, n_tasks)); \
    }                                                                                                                    \
    template <tensor_element T, int R, class F>                                                                          \
        requires std::invocable<const F&, tensor<T, R>, tensor<T, R>, int, int>                                          \
    tensor<T, R> NAME(tensor<T, R> a, F fn, int n_tasks = -1) {                                                          \
        return tensor<T, R>(detail::map_custom(                                                                          \
            op_kind::map_custom1, {a.get()}, INPLACE,                                                                    \
            [fn = std::move(fn)](node& d, int ith, int nth) { fn(tensor<T, R>(&d), tensor<T, R>(d.src[0]), ith, nth); },  \
            n_tasks));                                                                                                   \
    }                                                                                                                    \
    inline any_tensor NAME(any_tensor a, custom1_fn_ptr fn, int n_tasks, void* userdata) {                               \
        if (!fn) detail::op_fail("map_custom1", errc::invalid_argument, "the function is empty");                       \
        return NAME(a, [fn, userdata](any_tensor d, any_tensor x, int ith, int nth) { fn(d, x, ith, nth, userdata); }, n_tasks); \
    }
TESSERA_MAP_CUSTOM1_(map_custom1, false)
TESSERA_MAP_CUSTOM1_(map_custom1_inplace, true)
#undef TESSERA_MAP_CUSTOM1_
template <typed_tensor A, class F>
    requires(!std::invocable<const F&, A, A, int, int> && !std::invocable<const F&, any_tensor, any_tensor, int, int>)
void map_custom1(A, F, int = -1) {
    static_assert(detail::dependent_false<A, F>,
                  "tessera::graph::map_custom1: fn must be callable as fn(dst, a, ith, nth) (dst and a as a's handle type or any_tensor)");
}

// ---- map_custom2 ------------------------------------------------------------------------------
#define TESSERA_MAP_CUSTOM2_(NAME, INPLACE)                                                                                  \
    template <class F>                                                                                                   \
        requires std::invocable<const F&, any_tensor, any_tensor, any_tensor, int, int>                                  \
    any_tensor NAME(any_tensor a, any_tensor b, F fn, int n_tasks = -1) {                                                \
        return any_tensor(detail::map_custom(                                                                            \
            op_kind::map_custom2, {a.get(), b.get()}, INPLACE,                                                           \
            [fn = std::move(fn)](node& d, int ith, int nth) {                                                            \
                fn(any_tensor(&d), any_tensor(d.src[0]), any_tensor(d.src[1]), ith, nth);                                \
            },                                                                                                           \
            n_tasks));                                                                                                   \
    }                                                                                                                    \
    template <tensor_element Ta, int Ra, tensor_element Tb, int Rb, class F>                                             \
        requires std::invocable<const F&, tensor<Ta, Ra>, tensor<Ta, Ra>, tensor<Tb, Rb>, int, int>                      \
    tensor<Ta, Ra> NAME(tensor<Ta, Ra> a, tensor<Tb, Rb> b, F fn, int n_tasks = -1) {                                    \
        return tensor<Ta, Ra>(detail::map_custom(                                                                        \
            op_kind::map_custom2, {a.get(), b.get()}, INPLACE,                                                           \
            [fn = std::move(fn)](node& d, int ith, int nth) {                                                            \
                fn(tensor<Ta, Ra>(&d), tensor<Ta, Ra>(d.src[0]), tensor<Tb, Rb>(d.src[1]), ith, nth);                    \
            },                                                                                                           \
            n_tasks));                                                                                                   \
    }                                                                                                                    \
    inline any_tensor NAME(any_tensor a, any_tensor b, custom2_fn_ptr fn, int n_tasks, void* userdata) {                 \
        if (!fn) detail::op_fail("map_custom2", errc::invalid_argument, "the function is empty");                       \
        return NAME(                                                                                                     \
            a, b, [fn, userdata](any_tensor d, any_tensor x, any_tensor y, int ith, int nth) { fn(d, x, y, ith, nth, userdata); }, \
            n_tasks);                                                                                                    \
    }
TESSERA_MAP_CUSTOM2_(map_custom2, false)
TESSERA_MAP_CUSTOM2_(map_custom2_inplace, true)
#undef TESSERA_MAP_CUSTOM2_
template <typed_tensor A, typed_tensor B, class F>
    requires(!std::invocable<const F&, A, A, B, int, int> && !std::invocable<const F&, any_tensor, any_tensor, any_tensor, int, int>)
void map_custom2(A, B, F, int = -1) {
    static_assert(detail::dependent_false<A, B, F>, "tessera::graph::map_custom2: fn must be callable as fn(dst, a, b, ith, nth)");
}

// ---- map_custom3 ------------------------------------------------------------------------------
#define TESSERA_MAP_CUSTOM3_(NAME, INPLACE)                                                                                  \
    template <class F>                                                                                                   \
        requires std::invocable<const F&, any_tensor, any_tensor, any_tensor, any_tensor, int, int>                      \
    any_tensor NAME(any_tensor a, any_tensor b, any_tensor c, F fn, int n_tasks = -1) {                                  \
        return any_tensor(detail::map_custom(                                                                            \
            op_kind::map_custom3, {a.get(), b.get(), c.get()}, INPLACE,                                                  \
            [fn = std::move(fn)](node& d, int ith, int nth) {                                                            \
                fn(any_tensor(&d), any_tensor(d.src[0]), any_tensor(d.src[1]), any_tensor(d.src[2]), ith, nth);          \
            },                                                                                                           \
            n_tasks));                                                                                                   \
    }                                                                                                                    \
    template <tensor_element Ta, int Ra, tensor_element Tb, int Rb, tensor_element Tc, int Rc, class F>                  \
        requires std::invocable<const F&, tensor<Ta, Ra>, tensor<Ta, Ra>, tensor<Tb, Rb>, tensor<Tc, Rc>, int, int>      \
    tensor<Ta, Ra> NAME(tensor<Ta, Ra> a, tensor<Tb, Rb> b, tensor<Tc, Rc> c, F fn, int n_tasks = -1) {                  \
        return tensor<Ta, Ra>(detail::map_custom(                                                                        \
            op_kind::map_custom3, {a.get(), b.get(), c.get()}, INPLACE,                                                  \
            [fn = std::move(fn)](node& d, int ith, int nth) {                                                            \
                fn(tensor<Ta, Ra>(&d), tensor<Ta, Ra>(d.src[0]), tensor<Tb, Rb>(d.src[1]), tensor<Tc, Rc>(d.src[2]), ith, nth); \
            },                                                                                                           \
            n_tasks));                                                                                                   \
    }                                                                                                                    \
    inline any_tensor NAME(any_tensor a, any_tensor b, any_tensor c, custom3_fn_ptr fn, int n_tasks, void* userdata) {   \
        if (!fn) detail::op_fail("map_custom3", errc::invalid_argument, "the function is empty");                       \
        return NAME(                                                                                                     \
            a, b, c,                                                                                                     \
            [fn, userdata](any_tensor d, any_tensor x, any_tensor y, any_tensor z, int ith, int nth) {                  \
                fn(d, x, y, z, ith, nth, userdata);                                                                      \
            },                                                                                                           \
            n_tasks);                                                                                                    \
    }
TESSERA_MAP_CUSTOM3_(map_custom3, false)
TESSERA_MAP_CUSTOM3_(map_custom3_inplace, true)
#undef TESSERA_MAP_CUSTOM3_
template <typed_tensor A, typed_tensor B, typed_tensor C, class F>
    requires(!std::invocable<const F&, A, A, B, C, int, int> &&
             !std::invocable<const F&, any_tensor, any_tensor, any_tensor, any_tensor, int, int>)
void map_custom3(A, B, C, F, int = -1) {
    static_assert(detail::dependent_false<A, B, C, F>, "tessera::graph::map_custom3: fn must be callable as fn(dst, a, b, c, ith, nth)");
}

// ---- custom -------------------------------------------------------------------------------------
// A new tensor of type t and extents ne computed by fn from args (ggml_custom_4d).
template <class F>
    requires std::invocable<const F&, any_tensor, std::span<const any_tensor>, int, int>
any_tensor custom(context& ctx, type_id t, std::array<std::int64_t, max_dims> ne, std::initializer_list<any_tensor> args, F fn,
                  int n_tasks = -1) {
    if (!is_valid_type_id(static_cast<std::int64_t>(t)))
        detail::op_fail("custom", errc::unsupported, "type id " + std::to_string(static_cast<int>(t)) + " is not a ggml type");
    for (auto e : ne)
        if (e < 0) detail::op_fail("custom", errc::invalid_argument, "extents must be >= 0");
    return any_tensor(detail::custom_any(
        ctx, t, ne, nullptr, args,
        [fn = std::move(fn)](node& d, int ith, int nth) { fn(any_tensor(&d), detail::custom_args(d, 0).span(), ith, nth); }, n_tasks));
}
template <tensor_element T, int R, class F>
    requires(R >= 1 && R <= max_dims && std::invocable<const F&, tensor<T, R>, std::span<const any_tensor>, int, int>)
tensor<T, R> custom(context& ctx, const std::array<std::int64_t, static_cast<std::size_t>(R)>& ne, std::initializer_list<any_tensor> args,
                    F fn, int n_tasks = -1) {
    std::array<std::int64_t, max_dims> e{1, 1, 1, 1};
    for (std::size_t d = 0; d < static_cast<std::size_t>(R); ++d) e[d] = ne[d];
    return tensor<T, R>(custom(
        ctx, element_traits<T>::id, e, args,
        [fn = std::move(fn)](any_tensor d, std::span<const any_tensor> a, int ith, int nth) { fn(d.as<T, R>(), a, ith, nth); }, n_tasks)
                            .get());
}
inline any_tensor custom(context& ctx, type_id t, std::array<std::int64_t, max_dims> ne, std::initializer_list<any_tensor> args,
                         custom_fn_ptr fn, int n_tasks, void* userdata) {
    if (!fn) detail::op_fail("custom", errc::invalid_argument, "the function is empty");
    return custom(
        ctx, t, ne, args,
        [fn, userdata](any_tensor d, std::span<const any_tensor> a, int ith, int nth) { fn(d, a, ith, nth, userdata); }, n_tasks);
}

// fn writes over a (the result is a view of a); args are the other sources.
template <class F>
    requires std::invocable<const F&, any_tensor, std::span<const any_tensor>, int, int>
any_tensor custom_inplace(any_tensor a, std::initializer_list<any_tensor> args, F fn, int n_tasks = -1) {
    detail::check_not_null("custom", a.get(), "a");
    return any_tensor(detail::custom_any(
        a.ctx(), a.type(), a.lay().ne, a.get(), args,
        [fn = std::move(fn)](node& d, int ith, int nth) { fn(any_tensor(&d), detail::custom_args(d, 1).span(), ith, nth); }, n_tasks));
}
template <tensor_element T, int R, class F>
    requires std::invocable<const F&, tensor<T, R>, std::span<const any_tensor>, int, int>
tensor<T, R> custom_inplace(tensor<T, R> a, std::initializer_list<any_tensor> args, F fn, int n_tasks = -1) {
    return tensor<T, R>(custom_inplace(
        any_tensor(a), args,
        [fn = std::move(fn)](any_tensor d, std::span<const any_tensor> x, int ith, int nth) { fn(d.as<T, R>(), x, ith, nth); }, n_tasks)
                            .get());
}
inline any_tensor custom_inplace(any_tensor a, std::initializer_list<any_tensor> args, custom_fn_ptr fn, int n_tasks, void* userdata) {
    if (!fn) detail::op_fail("custom", errc::invalid_argument, "the function is empty");
    return custom_inplace(
        a, args, [fn, userdata](any_tensor d, std::span<const any_tensor> x, int ith, int nth) { fn(d, x, ith, nth, userdata); }, n_tasks);
}

}  // namespace graph
TESSERA_END_NAMESPACE
