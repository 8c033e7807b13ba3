// planner: the graph memory planner as a pure function. A graph is described by its
// tensors in topological order (sizes, sources, flags, views); the plan says at
// which offset of which buffer each tensor lives and how big each buffer must be.
//
// Policy (ggml's gallocr, with its rules tightened where noted):
//   * inputs are placed first, before any node runs, at offsets that nothing else
//     uses while they are live;
//   * every other planned tensor is placed when its node runs, and its bytes are
//     released after its last reader (readers of its views included) has run;
//   * outputs are never released, so nothing overwrites them; tensors nobody reads
//     are kept too (they are results);
//   * external tensors (weights, user-owned or already allocated memory) and views
//     take no bytes; a view keeps its parent alive while it or its readers live;
//   * an op marked can_inplace takes over the memory of a source that dies at that
//     node (same size and layout key, same buffer, not an input or output) instead
//     of new memory. Like gallocr, this node must be the source's last reader;
//     unlike gallocr, it may read the source more than once (x * x), and a view
//     source qualifies (gallocr never takes over a view's root);
//   * placement is best fit among the free blocks inside the buffer, else the end of
//     the buffer grows; freed blocks merge with free neighbours (memory::free_list);
//   * being offline, it plans the graph with a few policies (tie-break between equal
//     blocks, gallocr's stricter in-place rule) and keeps the smallest peak.
// It runs in constant evaluation, so small plans are checked with static_assert.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/memory/arena.hpp"
#include "tessera/memory/free_list.hpp"

TESSERA_BEGIN_NAMESPACE
namespace memory {

inline constexpr int max_srcs = 10;  // ggml's GGML_MAX_SRC
inline constexpr std::size_t no_offset = static_cast<std::size_t>(-1);

enum class tensor_flags : std::uint8_t {
    none = 0,
    input = 1,     // data is set before compute: placed first, never taken over in place
    output = 2,    // read after compute: never released, never taken over
    external = 4,  // has memory of its own (weights, user buffers): not planned
};
constexpr tensor_flags operator|(tensor_flags a, tensor_flags b) noexcept {
    return static_cast<tensor_flags>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
constexpr bool has_flag(tensor_flags set, tensor_flags f) noexcept {
    return (static_cast<std::uint8_t>(set) & static_cast<std::uint8_t>(f)) != 0;
}

// One tensor of the graph. Sources and view parents must come earlier in the list.
struct tensor_desc {
    std::size_t size = 0;           // bytes of data (the planner pads to the buffer's alignment)
    tensor_flags flags = tensor_flags::none;
    int buffer_id = 0;              // which buffer (backend buffer type) the tensor lives in
    int view_of = -1;               // >= 0: a view into that tensor's memory (no bytes of its own)
    std::size_t view_offset = 0;    // where the view starts inside its parent
    bool can_inplace = false;       // the op may write its result over a source it reads
    std::uint64_t layout = 0;       // in place needs equal size and equal layout key (type, ne, nb)
    int n_srcs = 0;
    std::array<int, max_srcs> srcs{};

    constexpr std::span<const int> sources() const noexcept {
        return {srcs.data(), static_cast<std::size_t>(n_srcs)};
    }
    constexpr bool is(tensor_flags f) const noexcept { return has_flag(flags, f); }
    constexpr bool is_view() const noexcept { return view_of >= 0; }

    // Builder-style modifiers: input(64).as_output().on_buffer(1).
    constexpr tensor_desc as_output() const noexcept { return with(tensor_flags::output); }
    constexpr tensor_desc with(tensor_flags f) const noexcept {
        tensor_desc t = *this;
        t.flags = t.flags | f;
        return t;
    }
    constexpr tensor_desc on_buffer(int id) const noexcept {
        tensor_desc t = *this;
        t.buffer_id = id;
        return t;
    }
    constexpr tensor_desc with_layout(std::uint64_t key) const noexcept {
        tensor_desc t = *this;
        t.layout = key;
        return t;
    }
};

namespace detail {
constexpr void set_sources(tensor_desc& t, std::initializer_list<int> srcs) {
    if (srcs.size() > static_cast<std::size_t>(max_srcs))
        fail(errc::invalid_argument, "tensor_desc: more than " + std::to_string(max_srcs) + " sources");
    for (int s : srcs) t.srcs[static_cast<std::size_t>(t.n_srcs++)] = s;
}
}  // namespace detail

// A graph input: its data is written before compute.
constexpr tensor_desc input(std::size_t size) {
    tensor_desc t;
    t.size = size;
    t.flags = tensor_flags::input;
    return t;
}
// A tensor with memory of its own (a weight, a user buffer): read, never planned.
constexpr tensor_desc external(std::size_t size) {
    tensor_desc t;
    t.size = size;
    t.flags = tensor_flags::external;
    return t;
}
// A node: an op of `size` bytes reading `srcs`; `inplace` when the op's kernel may
// write over a source (ggml's in-place list: add, mul, scale, unary, rope, norms, ...).
constexpr tensor_desc op(std::size_t size, std::initializer_list<int> srcs, bool inplace = false) {
    tensor_desc t;
    t.size = size;
    t.can_inplace = inplace;
    detail::set_sources(t, srcs);
    return t;
}
// A view of `size` bytes at `offset` inside tensor `of` (reshape, permute, view ops).
constexpr tensor_desc view(int of, std::size_t offset, std::size_t size, std::initializer_list<int> srcs = {}) {
    tensor_desc t;
    t.size = size;
    t.view_of = of;
    t.view_offset = offset;
    detail::set_sources(t, srcs);
    return t;
}

struct buffer_stats {
    std::size_t peak = 0;             // bytes the buffer needs
    std::size_t max_live = 0;         // the most bytes live at once: no placement can use less
    std::size_t max_free_blocks = 0;  // the longest free list during planning
    // The share of the buffer lost to holes at the worst moment: 1 - max_live / peak.
    constexpr double fragmentation() const noexcept {
        return peak == 0 ? 0.0 : static_cast<double>(peak - max_live) / static_cast<double>(peak);
    }
};

struct plan {
    // Per tensor. buffer: the buffer it lives in, or -1 when its memory is external
    // (its own or, for views, its root's). root: the tensor whose memory it is in
    // (itself unless a view). offset: from the start of its buffer, or from the
    // external root's data when buffer is -1. inplace_of: the source whose memory it
    // took over, or -1.
    std::vector<int> buffer;
    std::vector<int> root;
    std::vector<std::size_t> offset;
    std::vector<int> inplace_of;
    std::vector<buffer_stats> buffers;

    constexpr std::size_t peak(int buffer_id = 0) const {
        return buffers[static_cast<std::size_t>(buffer_id)].peak;
    }
    constexpr std::size_t total_peak() const {
        std::size_t s = 0;
        for (const auto& b : buffers) s += b.peak;
        return s;
    }
};

namespace detail {
inline std::string node_name(std::size_t i) { return "tensor " + std::to_string(i); }

constexpr void validate(std::span<const tensor_desc> g, std::size_t n_buffers) {
    for (std::size_t i = 0; i < g.size(); ++i) {
        const tensor_desc& t = g[i];
        if (t.size > max_measure_size)
            fail(errc::invalid_argument, "plan_graph: " + node_name(i) + " has size " + std::to_string(t.size) +
                                             ", beyond what a buffer can hold");
        if (t.n_srcs < 0 || t.n_srcs > max_srcs)
            fail(errc::invalid_argument, "plan_graph: " + node_name(i) + " has " + std::to_string(t.n_srcs) +
                                             " sources (at most " + std::to_string(max_srcs) + ")");
        for (int s : t.sources())
            if (s < 0 || static_cast<std::size_t>(s) >= i)
                fail(errc::invalid_argument, "plan_graph: " + node_name(i) + " reads tensor " + std::to_string(s) +
                                                 ", which does not come before it (tensors must be in "
                                                 "topological order)");
        if (t.is_view()) {
            if (static_cast<std::size_t>(t.view_of) >= i)
                fail(errc::invalid_argument, "plan_graph: " + node_name(i) + " is a view of tensor " +
                                                 std::to_string(t.view_of) + ", which does not come before it");
            const tensor_desc& p = g[static_cast<std::size_t>(t.view_of)];
            if (t.view_offset > p.size || t.size > p.size - t.view_offset)
                fail(errc::invalid_argument, "plan_graph: view " + node_name(i) + " covers bytes [" +
                                                 std::to_string(t.view_offset) + ", " +
                                                 std::to_string(t.view_offset + t.size) + ") of tensor " +
                                                 std::to_string(t.view_of) + ", which has " +
                                                 std::to_string(p.size) + " bytes");
            if (t.is(tensor_flags::input) || t.is(tensor_flags::external))
                fail(errc::invalid_argument, "plan_graph: view " + node_name(i) +
                                                 " cannot be an input or external: its memory is its parent's");
        } else if (t.buffer_id < 0 || static_cast<std::size_t>(t.buffer_id) >= n_buffers) {
            fail(errc::invalid_argument, "plan_graph: " + node_name(i) + " is on buffer " +
                                             std::to_string(t.buffer_id) + " but there are " +
                                             std::to_string(n_buffers) + " buffers");
        }
    }
}
}  // namespace detail

// The choices a single planning pass makes; plan_graph tries them all and keeps the
// plan with the smallest total peak (the first one on ties).
struct plan_policy {
    bool prefer_high_offset = false;  // among equally good free blocks take the highest (ggml's tie-break)
    bool inplace_sole_reader = false; // in place only over a source no other node ever reads (a
                                      // stricter rule that sometimes leaves a better layout)
};
inline constexpr std::array<plan_policy, 4> all_policies = {
    plan_policy{false, false}, plan_policy{true, false}, plan_policy{false, true}, plan_policy{true, true}};

// One planning pass of `graph` (tensors in topological order) into one buffer per
// entry of `alignments` (tensor_desc::buffer_id indexes it). O(n log n + sources).
constexpr plan plan_graph(std::span<const tensor_desc> graph, std::span<const std::size_t> alignments,
                          plan_policy policy) {
    detail::validate(graph, alignments.size());
    const std::size_t n = graph.size();

    std::vector<free_list> lists;
    lists.reserve(alignments.size());
    for (std::size_t a : alignments) lists.push_back(free_list(a, policy.prefer_high_offset));

    plan p;
    p.buffer.assign(n, -1);
    p.root.assign(n, -1);
    p.offset.assign(n, no_offset);
    p.inplace_of.assign(n, -1);

    // Memory roots, pins (outputs anywhere on a root pin it), and reference counts:
    // one per source entry reading a tensor, plus one per view on a root.
    std::vector<std::size_t> view_offset(n, std::size_t{0});
    std::vector<int> refs(n, 0);
    std::vector<char> pinned(n, char{0});
    std::vector<char> owns(n, char{0});        // still owns its block (not released, not taken over)
    std::vector<std::size_t> block(n, std::size_t{0});  // bytes of its block
    for (std::size_t i = 0; i < n; ++i) {
        const tensor_desc& t = graph[i];
        if (t.is_view()) {
            const auto parent = static_cast<std::size_t>(t.view_of);
            p.root[i] = p.root[parent];
            view_offset[i] = view_offset[parent] + t.view_offset;
            ++refs[static_cast<std::size_t>(p.root[i])];
        } else {
            p.root[i] = static_cast<int>(i);
        }
        if (t.is(tensor_flags::output)) pinned[static_cast<std::size_t>(p.root[i])] = 1;
        for (int s : t.sources()) ++refs[static_cast<std::size_t>(s)];
    }
    const std::vector<int> all_refs = refs;  // readers and views over the whole graph
    auto planned = [&](std::size_t r) { return !graph[r].is_view() && !graph[r].is(tensor_flags::external); };

    auto place = [&](std::size_t i) {
        const auto b = static_cast<std::size_t>(graph[i].buffer_id);
        p.buffer[i] = static_cast<int>(b);
        p.offset[i] = lists[b].allocate(graph[i].size);
        block[i] = lists[b].padded(graph[i].size);
        owns[i] = 1;
    };
    auto release_root = [&](std::size_t r) {
        if (owns[r] && !pinned[r]) {
            lists[static_cast<std::size_t>(p.buffer[r])].release(p.offset[r], block[r]);
            owns[r] = 0;
        }
    };
    auto drop = [&](std::size_t x) {  // one reference to x is gone
        if (--refs[x] != 0) return;
        if (graph[x].is_view()) {
            const auto r = static_cast<std::size_t>(p.root[x]);
            if (--refs[r] == 0) release_root(r);
        } else {
            release_root(x);
        }
    };

    // Inputs first: they are written before any node runs.
    for (std::size_t i = 0; i < n; ++i)
        if (planned(i) && graph[i].is(tensor_flags::input)) place(i);

    for (std::size_t i = 0; i < n; ++i) {
        const tensor_desc& t = graph[i];
        std::size_t tail_offset = 0, tail_size = 0;
        if (planned(i) && !t.is(tensor_flags::input)) {
            bool done = false;
            if (t.can_inplace) {
                for (int k = 0; k < t.n_srcs && !done; ++k) {
                    const auto s = static_cast<std::size_t>(t.srcs[static_cast<std::size_t>(k)]);
                    const auto r = static_cast<std::size_t>(p.root[s]);
                    if (!planned(r) || !owns[r] || pinned[r] || graph[r].is(tensor_flags::input)) continue;
                    if (graph[r].buffer_id != t.buffer_id || graph[s].size != t.size || graph[s].layout != t.layout ||
                        view_offset[s] != 0)
                        continue;
                    int uses_here = 0;
                    for (int s2 : t.sources()) uses_here += static_cast<std::size_t>(s2) == s ? 1 : 0;
                    if (refs[s] != uses_here) continue;     // someone after this node still reads s
                    if (s != r && refs[r] != 1) continue;   // the root has other readers or views
                    if (policy.inplace_sole_reader && (all_refs[s] != uses_here || (s != r && all_refs[r] != 1)))
                        continue;
                    const std::size_t need = lists[static_cast<std::size_t>(t.buffer_id)].padded(t.size);
                    p.buffer[i] = t.buffer_id;
                    p.offset[i] = p.offset[r];
                    p.inplace_of[i] = static_cast<int>(s);
                    block[i] = need;
                    owns[i] = 1;
                    owns[r] = 0;  // its block now belongs to this node
                    if (block[r] > need) {
                        tail_offset = p.offset[r] + need;
                        tail_size = block[r] - need;
                    }
                    done = true;
                }
            }
            if (!done) place(i);
        }
        for (int s : t.sources()) drop(static_cast<std::size_t>(s));
        if (t.is_view() && refs[i] == 0) {  // a view nobody reads lets go of its root now
            const auto r = static_cast<std::size_t>(p.root[i]);
            if (--refs[r] == 0) release_root(r);
        }
        if (tail_size > 0) lists[static_cast<std::size_t>(t.buffer_id)].release(tail_offset, tail_size);
    }

    // Views and external tensors: their root's buffer, their offset inside it.
    for (std::size_t i = 0; i < n; ++i) {
        const auto r = static_cast<std::size_t>(p.root[i]);
        if (graph[r].is(tensor_flags::external)) {
            p.buffer[i] = -1;
            p.offset[i] = view_offset[i];
        } else if (r != i) {
            p.buffer[i] = p.buffer[r];
            p.offset[i] = p.offset[r] + view_offset[i];
        }
    }
    p.buffers.reserve(lists.size());
    for (const auto& l : lists) p.buffers.push_back(buffer_stats{l.peak(), l.max_live(), l.max_free_blocks()});
    return p;
}

// Plans `graph` with every policy in all_policies and returns the plan with the
// smallest total peak (the first on ties). Four passes: still O(n log n).
constexpr plan plan_graph(std::span<const tensor_desc> graph, std::span<const std::size_t> alignments) {
    plan best = plan_graph(graph, alignments, all_policies[0]);
    for (std::size_t k = 1; k < all_policies.size(); ++k) {
        plan p = plan_graph(graph, alignments, all_policies[k]);
        if (p.total_peak() < best.total_peak()) best = static_cast<plan&&>(p);
    }
    return best;
}

// One buffer with the given alignment.
constexpr plan plan_graph(std::span<const tensor_desc> graph, std::size_t alignment = 64) {
    const std::size_t a[1] = {alignment};
    return plan_graph(graph, std::span<const std::size_t>(a, 1));
}
constexpr plan plan_graph(std::span<const tensor_desc> graph, std::size_t alignment, plan_policy policy) {
    const std::size_t a[1] = {alignment};
    return plan_graph(graph, std::span<const std::size_t>(a, 1), policy);
}

// A plan in fixed-size arrays, so it can be a constexpr variable (a std::vector
// cannot outlive constant evaluation): freeze<N, B>(plan_graph(...)).
template <std::size_t N, std::size_t B = 1>
struct fixed_plan {
    std::array<int, N> buffer{};
    std::array<int, N> root{};
    std::array<std::size_t, N> offset{};
    std::array<int, N> inplace_of{};
    std::array<buffer_stats, B> buffers{};
    constexpr std::size_t peak(int buffer_id = 0) const { return buffers[static_cast<std::size_t>(buffer_id)].peak; }
};

template <std::size_t N, std::size_t B = 1>
constexpr fixed_plan<N, B> freeze(const plan& p) {
    if (p.offset.size() != N || p.buffers.size() != B)
        fail(errc::invalid_argument, "freeze: the plan has " + std::to_string(p.offset.size()) + " tensors and " +
                                         std::to_string(p.buffers.size()) + " buffers, not " + std::to_string(N) +
                                         " and " + std::to_string(B));
    fixed_plan<N, B> f;
    for (std::size_t i = 0; i < N; ++i) {
        f.buffer[i] = p.buffer[i];
        f.root[i] = p.root[i];
        f.offset[i] = p.offset[i];
        f.inplace_of[i] = p.inplace_of[i];
    }
    for (std::size_t b = 0; b < B; ++b) f.buffers[b] = p.buffers[b];
    return f;
}

}  // namespace memory
TESSERA_END_NAMESPACE
