// Graph memory for contexts made with no_alloc: where each tensor of a graph goes.
//
// This is the seam where the memory planner (tessera/memory/) plugs in. A plan is a
// list of (tensor, byte offset) placements plus the total size; plan_linear() is the
// simplest correct plan (every tensor that needs bytes gets its own aligned slot, no
// reuse). A planner with lifetimes produces the same struct with overlapping slots,
// and apply_plan() / graph_buffer work unchanged.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/graph.hpp"

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

// Allocates every tensor of g that has no memory (plan_linear) and returns the buffer.
inline graph_buffer allocate(const cgraph& g) { return graph_buffer(plan_linear(g)); }

}  // namespace graph
TESSERA_END_NAMESPACE
