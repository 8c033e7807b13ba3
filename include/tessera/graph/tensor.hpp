// Tensor handles over the node store.
//
// - tensor<T, Rank>: typed. T is float, f16, bf16, an integer type or a quantization
//   block type; Rank (1..4) is the number of meaningful dims (dims >= Rank have
//   extent 1). Op builders take these and check types and ranks at compile time.
// - any_tensor: runtime-typed (a GGUF file decides types at load time). It converts
//   to a typed handle with a checked as<T, Rank>(), or is visited with visit().
// Both are one pointer wide and refer to a node owned by a graph::context.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/element.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/core/layout.hpp"
#include "tessera/core/tensor_view.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/quant/blocks.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// ---- element concepts used by the op builders ------------------------------------------
// float_element: f32, f16 or bf16 (ops compute in f32 and round back).
template <class T>
concept float_element = std::same_as<T, float> || std::same_as<T, f16> || std::same_as<T, bf16>;
// index_element: the integer types ggml uses for indices.
template <class T>
concept index_element = std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t>;
// block_element: a ggml quantization block (quant/blocks.hpp).
template <class T>
concept block_element = quant::quant_block<T>;
// weight_element: what mul_mat accepts as its first operand.
template <class T>
concept weight_element = float_element<T> || block_element<T>;

class any_tensor;

namespace detail {
inline std::string shape_string(const node* n) {
    return (n->name.empty() ? std::string("tensor") : "'" + n->name + "'") + " " + n->lay.to_string();
}
// Why a node cannot be held by a tensor<type, rank> handle (the check below failed).
[[noreturn, gnu::cold, gnu::noinline]] inline void handle_mismatch(const node* n, type_id type, int rank) {
    if (!n) fail(errc::invalid_argument, "tensor: null node");
    if (n->lay.type != type)
        fail(errc::invalid_argument, "tensor<" + std::string(type_name(type)) + ">: " + shape_string(n) + " has type " +
                                         std::string(type_name(n->lay.type)));
    for (int d = rank; d < max_dims; ++d)
        if (n->lay.ne[static_cast<std::size_t>(d)] != 1)
            fail(errc::shape_mismatch, "tensor rank " + std::to_string(rank) + ": " + shape_string(n) + " has extent " +
                                           std::to_string(n->lay.ne[static_cast<std::size_t>(d)]) + " in dim " +
                                           std::to_string(d));
    fail(errc::invalid_argument, "tensor: " + shape_string(n) + " does not fit the handle");
}
// A typed handle's check: the node exists, has the handle's type and no extent past its rank.
inline void check_handle(const node* n, type_id type, int rank) {
    bool ok = n && n->lay.type == type;
    for (int d = rank; ok && d < max_dims; ++d) ok = n->lay.ne[static_cast<std::size_t>(d)] == 1;
    if (!ok) [[unlikely]]
        handle_mismatch(n, type, rank);
}
}  // namespace detail

template <tensor_element T, int Rank>
    requires(Rank >= 1 && Rank <= max_dims)
class tensor {
public:
    using element_type = T;
    static constexpr int rank = Rank;
    static constexpr type_id type = element_traits<T>::id;

    tensor() = default;
    // Wraps a node; checks that its type and rank fit the handle.
    explicit tensor(node* n) : n_(n) { detail::check_handle(n, type, Rank); }

    node* get() const noexcept { return n_; }
    explicit operator bool() const noexcept { return n_ != nullptr; }
    context& ctx() const noexcept { return *n_->ctx; }

    const layout& lay() const noexcept { return n_->lay; }
    std::int64_t ne(int d) const noexcept { return n_->lay.ne[static_cast<std::size_t>(d)]; }
    std::size_t nb(int d) const noexcept { return n_->lay.nb[static_cast<std::size_t>(d)]; }
    std::array<std::int64_t, Rank> shape() const noexcept {
        std::array<std::int64_t, Rank> s{};
        for (int d = 0; d < Rank; ++d) s[static_cast<std::size_t>(d)] = ne(d);
        return s;
    }
    std::int64_t nelements() const noexcept { return n_->lay.nelements(); }
    bool is_contiguous() const { return n_->lay.is_contiguous(); }

    const std::string& name() const noexcept { return n_->name; }
    const tensor& set_name(std::string_view s) const {
        n_->name = s;
        return *this;
    }
    const tensor& set_input() const noexcept {
        n_->flags |= flag_input;
        return *this;
    }
    const tensor& set_output() const noexcept {
        n_->flags |= flag_output;
        return *this;
    }
    const tensor& set_param() const noexcept {
        n_->flags |= flag_param;
        return *this;
    }
    // The scalar a graph's gradients are taken of (graph/autodiff.hpp): an f32 tensor of one element.
    const tensor& set_loss() const
        requires std::same_as<T, float>
    {
        if (n_->lay.nelements() != 1) fail(errc::shape_mismatch, "set_loss: " + detail::shape_string(n_) + " is not a scalar");
        n_->flags |= flag_loss;
        return *this;
    }

    // A typed view of the tensor's bytes (after allocation).
    tensor_view<T, static_cast<std::size_t>(Rank)> data() const {
        std::byte* p = n_->bytes();
        if (!p) fail(errc::invalid_argument, "data: " + detail::shape_string(n_) + " has no memory yet");
        std::array<std::int64_t, static_cast<std::size_t>(Rank)> e{};
        std::array<std::size_t, static_cast<std::size_t>(Rank)> s{};
        for (int d = 0; d < Rank; ++d) e[static_cast<std::size_t>(d)] = ne(d), s[static_cast<std::size_t>(d)] = nb(d);
        tensor_view<T, static_cast<std::size_t>(Rank)> v;
        v.unchecked_init(p, dextents<static_cast<std::size_t>(Rank)>(e), s);
        return v;
    }

    // Copies a packed host array in (elements in dim-0-fastest order) / out.
    void set(std::span<const T> values) const { copy_io(values.data(), values.size(), true); }
    void get(std::span<T> out) const { copy_io(out.data(), out.size(), false); }

    operator any_tensor() const noexcept;  // NOLINT: every typed handle is an any_tensor

private:
    void copy_io(const void* p, std::size_t count, bool in) const {
        const layout& l = n_->lay;
        const std::int64_t per = element_traits<T>::per_item;
        if (static_cast<std::int64_t>(count) * per != l.nelements())
            fail(errc::shape_mismatch, std::string(in ? "set" : "get") + ": " + std::to_string(count) +
                                           " items for " + detail::shape_string(n_));
        std::byte* base = n_->bytes();
        if (!base) fail(errc::invalid_argument, "set/get: " + detail::shape_string(n_) + " has no memory yet");
        const std::size_t row = static_cast<std::size_t>(l.ne[0] / per) * sizeof(T);
        auto* host = static_cast<std::byte*>(const_cast<void*>(p));
        std::size_t h = 0;
        for (std::int64_t i3 = 0; i3 < l.ne[3]; ++i3)
            for (std::int64_t i2 = 0; i2 < l.ne[2]; ++i2)
                for (std::int64_t i1 = 0; i1 < l.ne[1]; ++i1) {
                    std::byte* r = base + l.offset_of(0, i1, i2, i3);
                    if (l.nb[0] == sizeof(T)) {
                        if (in) std::memcpy(r, host + h, row);
                        else std::memcpy(host + h, r, row);
                    } else {
                        for (std::int64_t i0 = 0; i0 < l.ne[0] / per; ++i0) {
                            std::byte* e = r + static_cast<std::size_t>(i0) * l.nb[0];
                            if (in) std::memcpy(e, host + h + static_cast<std::size_t>(i0) * sizeof(T), sizeof(T));
                            else std::memcpy(host + h + static_cast<std::size_t>(i0) * sizeof(T), e, sizeof(T));
                        }
                    }
                    h += row;
                }
    }

    node* n_ = nullptr;
};

// A runtime-typed handle: the same node, its type known only at run time.
class any_tensor {
public:
    any_tensor() = default;
    explicit any_tensor(node* n) noexcept : n_(n) {}

    node* get() const noexcept { return n_; }
    explicit operator bool() const noexcept { return n_ != nullptr; }
    context& ctx() const noexcept { return *n_->ctx; }
    type_id type() const noexcept { return n_->lay.type; }
    const layout& lay() const noexcept { return n_->lay; }
    std::int64_t ne(int d) const noexcept { return n_->lay.ne[static_cast<std::size_t>(d)]; }
    std::size_t nb(int d) const noexcept { return n_->lay.nb[static_cast<std::size_t>(d)]; }
    int n_dims() const noexcept { return n_->lay.n_dims(); }
    const std::string& name() const noexcept { return n_->name; }
    const any_tensor& set_name(std::string_view s) const {
        n_->name = s;
        return *this;
    }
    const any_tensor& set_input() const noexcept {
        n_->flags |= flag_input;
        return *this;
    }
    const any_tensor& set_output() const noexcept {
        n_->flags |= flag_output;
        return *this;
    }
    const any_tensor& set_param() const noexcept {  // a trainable parameter (optimizer steps update it)
        n_->flags |= flag_param;
        return *this;
    }
    const any_tensor& set_loss() const {  // the f32 scalar a graph's gradients are taken of
        if (!n_ || n_->lay.type != type_id::f32 || n_->lay.nelements() != 1)
            fail(errc::shape_mismatch, "set_loss: " + (n_ ? detail::shape_string(n_) : std::string("empty handle")) + " is not an f32 scalar");
        n_->flags |= flag_loss;
        return *this;
    }

    // Whether this tensor fits tensor<T, Rank> (its type is T, extents past Rank are 1).
    template <tensor_element T, int Rank>
    bool is() const noexcept {
        if (!n_ || n_->lay.type != element_traits<T>::id) return false;
        for (int d = Rank; d < max_dims; ++d)
            if (n_->lay.ne[static_cast<std::size_t>(d)] != 1) return false;
        return true;
    }
    // The typed handle; throws a tessera::error naming the tensor when it does not fit.
    template <tensor_element T, int Rank>
    tensor<T, Rank> as() const {
        if (!n_) fail(errc::invalid_argument, "as: empty any_tensor");
        return tensor<T, Rank>(n_);
    }

private:
    node* n_ = nullptr;
};

template <tensor_element T, int Rank>
    requires(Rank >= 1 && Rank <= max_dims)
tensor<T, Rank>::operator any_tensor() const noexcept {
    return any_tensor(n_);
}

// Calls f(tensor<T, 4>) with T the element type of t's run-time type. Every call of f
// must return the same type.
template <class F>
auto visit(const any_tensor& t, F&& f) {
    using R = decltype(f(tensor<float, 4>{}));
    node* n = t.get();
    if (!n) fail(errc::invalid_argument, "visit: empty any_tensor");
    switch (n->lay.type) {
        case type_id::f32: return f(tensor<float, 4>(n));
        case type_id::f16: return f(tensor<f16, 4>(n));
        case type_id::bf16: return f(tensor<bf16, 4>(n));
        case type_id::f64: return f(tensor<double, 4>(n));
        case type_id::i8: return f(tensor<std::int8_t, 4>(n));
        case type_id::i16: return f(tensor<std::int16_t, 4>(n));
        case type_id::i32: return f(tensor<std::int32_t, 4>(n));
        case type_id::i64: return f(tensor<std::int64_t, 4>(n));
        default: break;
    }
    if constexpr (std::is_void_v<R>) {
        const bool ok = quant::visit_block_type(n->lay.type, [&]<class B>() { f(tensor<B, 4>(n)); });
        if (!ok) fail(errc::unsupported, "visit: type " + std::string(type_name(n->lay.type)) + " has no element type");
    } else {
        std::optional<R> out;
        const bool ok = quant::visit_block_type(n->lay.type, [&]<class B>() { out.emplace(f(tensor<B, 4>(n))); });
        if (!ok) fail(errc::unsupported, "visit: type " + std::string(type_name(n->lay.type)) + " has no element type");
        return R(std::move(*out));
    }
}

// ---- creating leaf tensors ----------------------------------------------------------------

// A new leaf tensor<T, Rank> in ctx with the given extents (dim 0 first).
template <tensor_element T, int Rank>
    requires(Rank >= 1 && Rank <= max_dims)
tensor<T, Rank> new_tensor(context& ctx, const std::array<std::int64_t, static_cast<std::size_t>(Rank)>& ne,
                           std::string_view name = {}) {
    std::array<std::int64_t, max_dims> e{1, 1, 1, 1};
    for (int d = 0; d < Rank; ++d) e[static_cast<std::size_t>(d)] = ne[static_cast<std::size_t>(d)];
    return tensor<T, Rank>(ctx.new_tensor(element_traits<T>::id, e, name));
}

// A new leaf of a run-time type.
inline any_tensor new_tensor(context& ctx, type_id t, std::array<std::int64_t, max_dims> ne, std::string_view name = {}) {
    if (!is_valid_type_id(static_cast<std::int64_t>(t)))
        fail(errc::unsupported, "new_tensor: type id " + std::to_string(static_cast<int>(t)) + " is not a ggml type");
    return any_tensor(ctx.new_tensor(t, ne, name));
}

// A scalar f32 tensor holding v (when the context allocates).
inline tensor<float, 1> new_f32(context& ctx, float v) {
    auto t = new_tensor<float, 1>(ctx, {1});
    if (t.get()->data) std::memcpy(t.get()->data, &v, sizeof v);
    return t;
}

}  // namespace graph
TESSERA_END_NAMESPACE
