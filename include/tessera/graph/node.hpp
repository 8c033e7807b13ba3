// node: one tensor of a graph in the type-erased store — its layout (type, ne, nb),
// the op that produces it with typed parameters, its sources, where its bytes are
// (its own memory, or a view into another node), a name and flags. Typed handles
// (graph/tensor.hpp) are thin wrappers around a node pointer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/layout.hpp"
#include "tessera/graph/op.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

class context;

inline constexpr int max_src = 10;

// Tensor flags, numbered as ggml numbers them.
enum tensor_flag : std::uint32_t {
    flag_input = 1,
    flag_output = 2,
    flag_param = 4,
    flag_loss = 8,
};

struct node {
    layout lay;
    op_kind op = op_kind::none;
    op_params params;
    std::array<node*, max_src> src{};
    node* view_src = nullptr;  // the root that owns the bytes (a view of a view is re-based)
    std::size_t view_offs = 0;
    std::byte* data = nullptr;  // own bytes; null for views and unallocated tensors
    std::string name;
    std::uint32_t flags = 0;
    // The buffer holding the bytes (ggml's tensor->buffer), set by the backend layer
    // when it places the tensor (backend::tensor_alloc) and read there (backend::buffer_of);
    // empty for memory a graph::context or the user owns. Weak: a tensor does not keep its
    // buffer alive. Views use their root's.
    std::weak_ptr<void> buffer;
    std::size_t id = 0;  // creation order within the context
    context* ctx = nullptr;

    // Where this tensor's first byte is (for a view: inside its root). Null before allocation.
    std::byte* bytes() const noexcept {
        if (view_src) return view_src->data ? view_src->data + view_offs : nullptr;
        return data;
    }
    bool is_view() const noexcept { return view_src != nullptr; }
    int n_src() const noexcept {
        int n = 0;
        for (int i = 0; i < max_src; ++i)
            if (src[static_cast<std::size_t>(i)]) n = i + 1;
        return n;
    }
    // Bytes this tensor needs of its own (0 for views).
    std::size_t own_bytes() const { return is_view() ? 0 : lay.nbytes(); }

    template <class P>
    const P& param() const {
        return params.get<P>();
    }
};

}  // namespace graph
TESSERA_END_NAMESPACE
