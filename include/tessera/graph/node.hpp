// node: one tensor of a graph in the type-erased store — its layout (type, ne, nb),
// the op that produces it with typed parameters, its sources, where its bytes are
// (its own memory, or a view into another node), a name and flags. Typed handles
// (graph/tensor.hpp) are thin wrappers around a node pointer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
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

// How a tensor's bytes are ordered. plain: ggml's layout (every tensor, unless a buffer
// says otherwise). rows4_x16: q4_0/q8_0/q4_K rows interleaved four at a time in the layout
// the packed GEMM reads (kernels/quant/repack.hpp); the CPU_REPACK buffer type stores
// weights so (backend/repack.hpp), and only mul_mat reads such a tensor.
enum class packing : std::uint8_t { plain, rows4_x16 };

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
    packing pack = packing::plain;  // set by the buffer the tensor is placed in
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
        return std::get<P>(params);
    }
};

}  // namespace graph
TESSERA_END_NAMESPACE
