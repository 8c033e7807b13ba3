// Graph memory for contexts made with no_alloc: where each tensor of a graph goes.
//
// One memory path: describe() turns a graph's tensors into the memory planner's
// descriptions (tessera/memory/planner.hpp: sizes, views, inputs, outputs, sources,
// and in place where op_traits allows it), and the planner places them, reusing the
// memory of tensors whose last reader has run. plan_memory(g) does that for one host
// buffer, and allocate(g) gives that buffer; the backend scheduler plans its compute
// buffers from the same descriptions (backend/scheduler.hpp). A plan is a list of
// (tensor, byte offset) placements plus the total size. plan_linear() is the plan
// without reuse (every tensor its own slot: every intermediate result stays readable).
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <unordered_map>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/graph/op_traits.hpp"
#include "tessera/memory/planner.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

struct placement {
    node* tensor;
    std::size_t offset;
    std::size_t size;
};

struct allocation_plan {
    std::vector<placement> placements;
    std::size_t total = 0;
    std::size_t alignment = 64;
};

// Every leaf and node of g that has no memory yet and is not a view gets its own slot.
inline allocation_plan plan_linear(const cgraph& g, std::size_t alignment = 64) {
    allocation_plan p;
    p.alignment = alignment;
    auto add = [&](node* n) {
        if (n->is_view() || n->data) return;
        const std::size_t size = std::max<std::size_t>(n->lay.nbytes(), 1);
        p.placements.push_back({n, p.total, size});
        p.total += (size + alignment - 1) / alignment * alignment;
    };
    for (node* n : g.leafs()) add(n);
    for (node* n : g.nodes()) add(n);
    return p;
}

// Equal for equal (type, ne, nb): the planner runs an op in place only over a source
// whose layout key equals the result's.
inline std::uint64_t layout_key(const layout& l) noexcept {
    // a word at a time (this runs for every tensor of every planned graph)
    std::uint64_t h = 0x9e3779b97f4a7c15ull ^ static_cast<std::uint64_t>(l.type);
    const auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0xff51afd7ed558ccdull; h ^= h >> 32; };
    for (std::size_t i = 0; i < l.ne.size(); ++i) {
        mix(static_cast<std::uint64_t>(l.ne[i]));
        mix(static_cast<std::uint64_t>(l.nb[i]));
    }
    return h;
}

// The planner's description of tensor t, the self-th of the planning order (index: each
// planned tensor's position). srcs are t's sources as they will be read (a scheduler
// may redirect some to copies). A view of a planned root is a view in the plan; memory
// that exists already is external; a leaf without memory is an input (placed first; its
// memory is free again after its last reader, so inputs are written before every compute);
// output- and param-flagged tensors are never reused and never run in place; other ops
// that op_traits lets run in place may take over a source that dies at them.
inline memory::tensor_desc describe(const node& t, int self, const std::unordered_map<const node*, int>& index,
                                    std::span<node* const> srcs) {
    memory::tensor_desc d;
    d.size = t.lay.nbytes();
    if (t.is_view()) {
        const auto it = index.find(t.view_src);
        if (t.view_src->data || it == index.end()) {
            d.flags = memory::tensor_flags::external;
        } else {
            d.view_of = it->second;
            d.view_offset = t.view_offs;
        }
    } else if (t.data) {
        d.flags = memory::tensor_flags::external;
    } else if (t.op == op_kind::none) {
        d.flags = memory::tensor_flags::input;
    }
    // outputs, and parameters (their values outlive a compute: an optimizer step updates them
    // in place for the next one), keep their memory
    if (t.flags & (flag_output | flag_param)) d.flags = d.flags | memory::tensor_flags::output;
    // an output gets memory of its own: what it holds after a compute (or a stopped
    // one) is never a source's bytes
    d.can_inplace = !t.is_view() && op_can_inplace(t.op) && !(t.flags & flag_output);
    d.layout = layout_key(t.lay);
    for (const node* s : srcs) {
        if (!s) continue;
        const auto it = index.find(s);
        if (it == index.end() || it->second >= self) continue;
        if (d.n_srcs < memory::max_srcs) d.srcs[static_cast<std::size_t>(d.n_srcs++)] = it->second;
    }
    return d;
}

// Every leaf and node of g without memory, placed by the memory planner in one buffer:
// tensors share memory where their lifetimes allow and ops run in place where
// op_traits allows. Results nobody reads and output-flagged tensors keep their memory
// to the end; an intermediate result may be overwritten by a later node (flag it
// flag_output, or use plan_linear, to read it after the compute).
inline allocation_plan plan_memory(const cgraph& g, std::size_t alignment = 64) {
    std::vector<node*> order;
    std::unordered_map<const node*, int> index;
    for (node* n : g.leafs())
        if (!index.count(n)) index[n] = static_cast<int>(order.size()), order.push_back(n);
    for (node* n : g.nodes())
        if (!index.count(n)) index[n] = static_cast<int>(order.size()), order.push_back(n);
    std::vector<memory::tensor_desc> descs(order.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        descs[i] = describe(*order[i], static_cast<int>(i), index, order[i]->src);
    const memory::plan mp = memory::plan_graph(std::span<const memory::tensor_desc>(descs), alignment);
    allocation_plan p;
    p.alignment = alignment;
    p.total = mp.buffers.empty() ? 0 : mp.peak(0);
    for (std::size_t i = 0; i < order.size(); ++i)
        if (mp.buffer[i] >= 0 && !order[i]->is_view() && !order[i]->data)
            p.placements.push_back({order[i], mp.offset[i], std::max<std::size_t>(order[i]->lay.nbytes(), 1)});
    return p;
}

// Points every placed tensor at base + offset (base must be plan.alignment aligned).
inline void apply_plan(const allocation_plan& p, std::byte* base) {
    for (const placement& pl : p.placements) context::bind(*pl.tensor, base + pl.offset);
}

// An owning buffer holding a graph's tensors.
class graph_buffer {
public:
    graph_buffer() = default;
    explicit graph_buffer(const allocation_plan& p) : size_(p.total), align_(p.alignment) {
        if (size_) {
            mem_ = std::unique_ptr<std::byte, del>(static_cast<std::byte*>(::operator new(size_, std::align_val_t(align_))), del{align_});
            std::memset(mem_.get(), 0, size_);
        }
        apply_plan(p, mem_.get());
    }
    std::byte* data() const noexcept { return mem_.get(); }
    std::size_t size() const noexcept { return size_; }

private:
    struct del {
        std::size_t align;
        void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t(align)); }
    };
    std::size_t size_ = 0;
    std::size_t align_ = 64;
    std::unique_ptr<std::byte, del> mem_{nullptr, del{64}};
};

// Allocates every tensor of g that has no memory (plan_memory: with reuse and in place)
// and returns the buffer.
inline graph_buffer allocate(const cgraph& g) { return graph_buffer(plan_memory(g)); }

}  // namespace graph
TESSERA_END_NAMESPACE
