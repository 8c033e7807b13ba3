// context: the type-erased node store that typed handles point into. It creates
// nodes (leaves and op results), keeps them at stable addresses for its lifetime,
// and — unless made with no_alloc — gives every non-view tensor its own zeroed,
// aligned bytes at creation, as a ggml context with no_alloc = false does. With
// no_alloc, tensors carry only metadata until a graph allocator places them
// (graph/allocate.hpp: the seam where the memory planner plugs in).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/layout.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/graph/op_traits.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

struct context_options {
    bool no_alloc = false;           // metadata only; memory comes from a graph allocator
    std::size_t alignment = 64;      // of every tensor's first byte
    std::size_t max_nodes = 1 << 20; // a bound on the store, so a runaway builder fails cleanly
};

class context {
public:
    explicit context(context_options o = {}) : opt_(o) {
        if (o.alignment == 0 || (o.alignment & (o.alignment - 1)) != 0)
            fail(errc::invalid_argument, "context: alignment must be a power of two");
    }
    context(const context&) = delete;
    context& operator=(const context&) = delete;

    const context_options& options() const noexcept { return opt_; }
    bool allocates() const noexcept { return !opt_.no_alloc; }

    // A leaf tensor (op none) of the given type and extents.
    node* new_tensor(type_id t, std::array<std::int64_t, max_dims> ne, std::string_view name = {}) {
        node* n = add(layout::contiguous(t, ne), op_kind::none, {}, {});
        n->name = name;
        return n;
    }

    // A node computed by `op` from `srcs`, with its own contiguous bytes.
    node* new_op(const layout& l, op_kind op, op_params p, std::initializer_list<node*> srcs) {
        check_params(op, p);
        return add(l, op, std::move(p), srcs);
    }

    // A node whose bytes are those of `base` at byte `offset` (views and in-place ops).
    node* new_view(node* base, const layout& l, std::size_t offset, op_kind op, op_params p,
                   std::initializer_list<node*> srcs) {
        check_params(op, p);
        node* root = base->view_src ? base->view_src : base;
        const std::size_t offs = (base->view_src ? base->view_offs : 0) + offset;
        if (l.nelements() > 0 && offs + l.nbytes() > root->lay.nbytes())
            fail_cat(errc::shape_mismatch, "view ", l.to_string(), " at byte offset ", offs, " runs past the ",
                     root->lay.nbytes(), " bytes of '", root->name, "' ", root->lay.to_string());
        node* n = make(l, op, std::move(p), srcs);
        n->view_src = root;
        n->view_offs = offs;
        n->name = base->name.empty() ? std::string() : base->name + " (view)";
        return n;
    }

    std::size_t size() const noexcept { return nodes_.size(); }
    node& operator[](std::size_t i) { return nodes_[i]; }
    const node& operator[](std::size_t i) const { return nodes_[i]; }

    // The first tensor with this name, or null.
    node* find(std::string_view name) noexcept {
        for (auto& n : nodes_)
            if (n.name == name) return &n;
        return nullptr;
    }

    // Drops every tensor created after the first `mark` ones (mark = an earlier size()),
    // so a context that holds long-lived tensors (weights, caches) can build one graph
    // after another without growing. Handles to the dropped tensors dangle afterwards.
    // Only for no_alloc contexts: an allocating context keeps its memory until destroyed.
    void rollback(std::size_t mark) {
        if (allocates()) fail(errc::invalid_argument, "context::rollback: only for no_alloc contexts");
        if (mark > nodes_.size())
            fail_cat(errc::invalid_argument, "context::rollback: mark ", mark, " is past the ", nodes_.size(), " tensors");
        while (nodes_.size() > mark) nodes_.pop_back();
    }

    // Bytes this context has allocated for tensor data.
    std::size_t used_bytes() const noexcept { return used_; }

    // Gives a tensor memory that the caller owns (no_alloc contexts, graph allocators).
    static void bind(node& n, std::byte* p) {
        if (n.is_view()) fail(errc::invalid_argument, "bind: '" + n.name + "' is a view; bind its root");
        n.data = p;
        n.buffer.reset();
    }

private:
    struct aligned_free {
        std::size_t align;
        void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t(align)); }
    };

    node* make(const layout& l, op_kind op, op_params p, std::initializer_list<node*> srcs) {
        if (nodes_.size() >= opt_.max_nodes)
            fail_cat(errc::out_of_memory, "context: more than ", opt_.max_nodes, " tensors");
        if (srcs.size() > static_cast<std::size_t>(max_src)) fail(errc::invalid_argument, "too many sources");
        node& n = nodes_.emplace_back();
        n.lay = l;
        n.op = op;
        n.params = std::move(p);
        std::size_t i = 0;
        for (node* s : srcs) {
            if (s && s->ctx != this)
                fail_cat(errc::invalid_argument, "op ", op_name(op), ": a source tensor belongs to another context");
            n.src[i++] = s;
        }
        n.id = nodes_.size() - 1;
        n.ctx = this;
        return &n;
    }

    node* add(const layout& l, op_kind op, op_params p, std::initializer_list<node*> srcs) {
        node* n = make(l, op, std::move(p), srcs);
        if (allocates()) {
            const std::size_t bytes = std::max<std::size_t>(l.nbytes(), 1);
            auto* mem = static_cast<std::byte*>(::operator new(bytes, std::align_val_t(opt_.alignment)));
            std::memset(mem, 0, bytes);
            memory_.emplace_back(mem, aligned_free{opt_.alignment});
            n->data = mem;
            used_ += bytes;
        }
        return n;
    }

    context_options opt_;
    std::deque<node> nodes_;
    std::vector<std::unique_ptr<std::byte, aligned_free>> memory_;
    std::size_t used_ = 0;
};

}  // namespace graph
TESSERA_END_NAMESPACE
