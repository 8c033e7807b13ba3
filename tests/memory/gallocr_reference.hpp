// Test-only: ggml's gallocr policy, re-implemented from its description (ggml-alloc.c,
// single-chunk dynamic allocator) over tessera's tensor_desc, to compare peaks.
//
// Mapping: input and external tensors are ggml leafs (external ones have data and
// are skipped); every other tensor is a node; a view's view_src is its root.
//   * dynamic allocator: free blocks sorted by offset, the last one being the
//     unbounded tail; alloc = best fit among all blocks but the last (ties go to the
//     later block), else the tail; free merges with the block before/after;
//     max_size = high-water mark.
//   * order: allocate leafs; count children (per source entry) and views (per view
//     node on its root); per node: allocate it (in place over a parent that is owned,
//     not an output, same layout, with exactly one child and no views; ggml's
//     extra branch for view parents is unreachable, since a view is never "own"),
//     then decrement each parent's children, freeing it (or, for a view, dropping
//     one view from its root and freeing the root) when both counts reach zero.
//     Outputs are never freed. Tensors nobody reads are never freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tessera/memory/planner.hpp"

namespace gallocr_ref {

using tessera::memory::tensor_desc;
using tessera::memory::tensor_flags;

struct dyn_allocator {
    struct blk {
        std::size_t offset, size;
    };
    std::size_t alignment;
    std::vector<blk> free_blocks{blk{0, SIZE_MAX / 2}};
    std::size_t max_size = 0;

    std::size_t pad(std::size_t s) const { return (s + alignment - 1) / alignment * alignment; }

    std::size_t alloc(std::size_t size) {
        size = pad(size);
        int best = -1;
        std::size_t best_size = SIZE_MAX;
        for (int i = 0; i + 1 < static_cast<int>(free_blocks.size()); ++i) {
            const auto& b = free_blocks[static_cast<std::size_t>(i)];
            if (b.size >= size && b.size <= best_size) {
                best = i;
                best_size = b.size;
            }
        }
        if (best == -1) best = static_cast<int>(free_blocks.size()) - 1;  // the tail never runs out
        auto& b = free_blocks[static_cast<std::size_t>(best)];
        const std::size_t off = b.offset;
        b.offset += size;
        b.size -= size;
        if (b.size == 0) free_blocks.erase(free_blocks.begin() + best);
        if (off + size > max_size) max_size = off + size;
        return off;
    }

    void release(std::size_t offset, std::size_t size) {
        size = pad(size);
        for (std::size_t i = 0; i < free_blocks.size(); ++i) {
            auto& b = free_blocks[i];
            if (b.offset + b.size == offset) {
                b.size += size;
                if (i + 1 < free_blocks.size() && b.offset + b.size == free_blocks[i + 1].offset) {
                    b.size += free_blocks[i + 1].size;
                    free_blocks.erase(free_blocks.begin() + static_cast<std::ptrdiff_t>(i) + 1);
                }
                return;
            }
            if (offset + size == b.offset) {
                b.offset = offset;
                b.size += size;
                if (i > 0 && free_blocks[i - 1].offset + free_blocks[i - 1].size == b.offset) {
                    free_blocks[i - 1].size += b.size;
                    free_blocks.erase(free_blocks.begin() + static_cast<std::ptrdiff_t>(i));
                }
                return;
            }
        }
        std::size_t pos = 0;
        while (pos < free_blocks.size() && free_blocks[pos].offset < offset) ++pos;
        free_blocks.insert(free_blocks.begin() + static_cast<std::ptrdiff_t>(pos), blk{offset, size});
    }
};

struct result {
    std::vector<std::size_t> offset;  // SIZE_MAX for unplanned tensors
    std::size_t peak = 0;
};

inline result plan(std::span<const tensor_desc> g, std::size_t alignment) {
    const std::size_t n = g.size();
    std::vector<int> root(n);
    std::vector<std::size_t> voff(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        if (g[i].is_view()) {
            root[i] = root[static_cast<std::size_t>(g[i].view_of)];
            voff[i] = voff[static_cast<std::size_t>(g[i].view_of)] + g[i].view_offset;
        } else {
            root[i] = static_cast<int>(i);
        }
    }
    struct hn {
        int n_children = 0, n_views = 0;
        bool allocated = false;
        std::size_t offset = 0;
    };
    std::vector<hn> h(n);
    dyn_allocator da{alignment};
    auto is_output = [&](std::size_t t) { return g[t].is(tensor_flags::output); };
    auto has_data = [&](std::size_t t) {  // external memory, or a view of it
        return g[static_cast<std::size_t>(root[t])].is(tensor_flags::external);
    };
    auto same_layout = [&](std::size_t a, std::size_t b) { return g[a].size == g[b].size && g[a].layout == g[b].layout; };

    auto allocate = [&](std::size_t t) {
        if (has_data(t) || h[t].allocated || g[t].is_view()) return;
        h[t].allocated = true;
        if (g[t].can_inplace) {
            for (int s : g[t].sources()) {
                const auto p = static_cast<std::size_t>(s);
                // ggml's "own" test reads the parent's allocated flag, which a view never has:
                // its branch for view parents cannot fire, so view parents never qualify.
                if (!h[p].allocated) continue;
                if (is_output(p)) continue;
                if (!same_layout(t, p)) continue;
                if (h[p].n_children == 1 && h[p].n_views == 0) {
                    h[t].offset = h[p].offset;
                    h[p].allocated = false;
                    return;
                }
            }
        }
        h[t].offset = da.alloc(g[t].size);
    };
    auto release = [&](std::size_t t) {
        if (is_output(t)) return;
        da.release(h[t].offset, g[t].size);
        h[t].allocated = false;
    };

    // leafs
    for (std::size_t i = 0; i < n; ++i)
        if (g[i].is(tensor_flags::input) || g[i].is(tensor_flags::external)) allocate(i);
    // count children and views
    for (std::size_t i = 0; i < n; ++i) {
        if (g[i].is(tensor_flags::input) || g[i].is(tensor_flags::external)) continue;
        if (g[i].is_view()) h[static_cast<std::size_t>(root[i])].n_views += 1;
        for (int s : g[i].sources()) h[static_cast<std::size_t>(s)].n_children += 1;
    }
    // nodes
    for (std::size_t i = 0; i < n; ++i) {
        if (g[i].is(tensor_flags::input) || g[i].is(tensor_flags::external)) continue;
        for (int s : g[i].sources()) allocate(static_cast<std::size_t>(s));
        allocate(i);
        for (int s : g[i].sources()) {
            const auto p = static_cast<std::size_t>(s);
            h[p].n_children -= 1;
            if (h[p].n_children == 0 && h[p].n_views == 0) {
                if (g[p].is_view()) {
                    const auto r = static_cast<std::size_t>(root[p]);
                    h[r].n_views -= 1;
                    if (h[r].n_views == 0 && h[r].n_children == 0 && h[r].allocated) release(r);
                } else if (h[p].allocated) {
                    release(p);
                }
            }
        }
    }
    result res;
    res.offset.assign(n, SIZE_MAX);
    for (std::size_t i = 0; i < n; ++i) {
        const auto r = static_cast<std::size_t>(root[i]);
        if (!has_data(i)) res.offset[i] = h[r].offset + voff[i];
    }
    res.peak = da.max_size;
    return res;
}

}  // namespace gallocr_ref
