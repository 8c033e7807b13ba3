// graph_allocator: owns the compute buffers of a graph and binds its tensors to
// planned memory (ggml's gallocr: reserve, alloc_graph, get_buffer_size), and
// run_planned, which walks a bound graph without allocating anything.
//
// reserve(worst_case) plans the largest graph that will run and sizes one buffer per
// buffer id; alloc_graph(g) plans g and binds it into the existing buffers, growing
// (re-allocating) a buffer only when g needs more than it has.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/memory/host_buffer.hpp"
#include "tessera/memory/planner.hpp"

TESSERA_BEGIN_NAMESPACE
namespace memory {

// A graph bound to memory: a data pointer per tensor (null for tensors of 0 bytes in
// an empty buffer).
struct bound_graph {
    std::vector<std::byte*> data;
};

// Binds a plan to buffer base pointers and to the data of the external tensors
// (`external[i]` for each external tensor i; other entries are ignored).
inline bound_graph bind(const plan& p, std::span<std::byte* const> bases, std::span<std::byte* const> external) {
    bound_graph g;
    g.data.assign(p.offset.size(), nullptr);
    for (std::size_t i = 0; i < p.offset.size(); ++i) {
        std::byte* base = nullptr;
        if (p.buffer[i] >= 0) {
            base = bases[static_cast<std::size_t>(p.buffer[i])];
        } else {
            const auto r = static_cast<std::size_t>(p.root[i]);
            if (r >= external.size())
                fail(errc::invalid_argument, "bind: no data given for external tensor " + std::to_string(r));
            base = external[r];
        }
        g.data[i] = base ? base + p.offset[i] : nullptr;
    }
    return g;
}

template <buffer_provider P>
class graph_allocator {
public:
    // One buffer per provider; tensor_desc::buffer_id indexes them. The providers
    // must outlive the allocator.
    explicit graph_allocator(std::vector<P*> providers) : providers_(std::move(providers)) {
        if (providers_.empty()) fail(errc::invalid_argument, "graph_allocator: no buffer providers");
        for (P* pr : providers_) {
            if (!pr) fail(errc::invalid_argument, "graph_allocator: null buffer provider");
            alignments_.push_back(pr->alignment());
        }
        buffers_.resize(providers_.size());
    }
    explicit graph_allocator(P& provider) : graph_allocator(std::vector<P*>{&provider}) {}

    // Plans the worst-case graph and makes every buffer at least as big as it needs.
    const plan& reserve(std::span<const tensor_desc> graph) {
        plan_ = plan_graph(graph, alignments_);
        ensure_capacity();
        return plan_;
    }

    // Plans `graph` and binds it to the buffers, growing a buffer only if the graph
    // needs more than the reserved size.
    bound_graph alloc_graph(std::span<const tensor_desc> graph, std::span<std::byte* const> external = {}) {
        plan_ = plan_graph(graph, alignments_);
        ensure_capacity();
        std::vector<std::byte*> bases;
        bases.reserve(buffers_.size());
        for (auto& b : buffers_) bases.push_back(b.data());
        return bind(plan_, bases, external);
    }

    const plan& last_plan() const noexcept { return plan_; }
    std::size_t buffer_size(int id) const { return buffers_.at(static_cast<std::size_t>(id)).size(); }
    std::size_t n_buffers() const noexcept { return buffers_.size(); }
    // How many times a buffer was (re)allocated because a plan outgrew it.
    std::size_t reallocations() const noexcept { return reallocations_; }

private:
    void ensure_capacity() {
        for (std::size_t b = 0; b < buffers_.size(); ++b) {
            const std::size_t need = plan_.buffers[b].peak;
            if (need > providers_[b]->max_size())
                fail(errc::out_of_memory, "graph_allocator: buffer " + std::to_string(b) + " needs " +
                                              std::to_string(need) + " bytes, more than its buffer type's maximum " +
                                              std::to_string(providers_[b]->max_size()));
            if (need > buffers_[b].size() || !allocated_[b]) {
                buffers_[b] = buffer_of<P>{};  // free the old buffer first: peak memory stays at one copy
                buffers_[b] = providers_[b]->alloc(need);
                if (allocated_[b]) ++reallocations_;
                allocated_[b] = true;
            }
        }
    }

    std::vector<P*> providers_;
    std::vector<std::size_t> alignments_;
    std::vector<buffer_of<P>> buffers_;
    std::vector<bool> allocated_ = std::vector<bool>(providers_.size(), false);
    plan plan_;
    std::size_t reallocations_ = 0;
};

// What run_planned hands to the callback for each computed node: its index, where
// to write, and where to read each source. Lives on the stack: nothing allocates.
struct node_args {
    std::size_t index;
    std::byte* dst;
    int n_srcs;
    std::array<const std::byte*, max_srcs> src;
};

// Calls f(node_args) for every computed tensor (not inputs, external tensors or
// views) in graph order, with pointers into the bound memory. It allocates nothing;
// the compute layer's executor is this loop with the op's kernel as f.
template <class F>
void run_planned(std::span<const tensor_desc> graph, const bound_graph& bound, F&& f) {
    for (std::size_t i = 0; i < graph.size(); ++i) {
        const tensor_desc& t = graph[i];
        if (t.is(tensor_flags::input) || t.is(tensor_flags::external) || t.is_view()) continue;
        node_args a{i, bound.data[i], t.n_srcs, {}};
        for (int k = 0; k < t.n_srcs; ++k)
            a.src[static_cast<std::size_t>(k)] = bound.data[static_cast<std::size_t>(t.srcs[static_cast<std::size_t>(k)])];
        f(static_cast<const node_args&>(a));
    }
}

}  // namespace memory
TESSERA_END_NAMESPACE
