// The worked example of docs/memory.md (included there verbatim): a two-layer MLP
// block y = x + W2 * gelu(W1 * norm(x)), planned at compile time and run at run time.
#include <doctest/doctest.h>

#include <array>
#include <vector>

#include "tessera/memory/graph_allocator.hpp"
#include "tessera/memory/planner.hpp"
#include "tessera/memory/tensor_allocator.hpp"

using namespace tessera::memory;

// [example-graph]
// 8 tokens x 64 floats = 2048 bytes per activation; the hidden layer is 4x wider.
constexpr std::size_t act = 8 * 64 * 4, hidden = 4 * act;
constexpr std::array<tensor_desc, 8> mlp = {
    input(act),                    // 0 x: written by the caller before compute
    external(64 * 256 * 4),        // 1 W1: a weight, memory of its own
    external(256 * 64 * 4),        // 2 W2
    op(act, {0}, true),            // 3 norm(x): could run in place, but x is an input
    op(hidden, {1, 3}),            // 4 W1 * n
    op(hidden, {4}, true),         // 5 gelu: in place over 4, which dies here
    op(act, {2, 5}),               // 6 W2 * h
    op(act, {0, 6}, true).as_output(),  // 7 y = x + o: in place over 6
};
// x@0 [2048], n@2048, W1*n@4096 [8192] (end 12288), n freed; gelu takes 4's bytes;
// W2*h fits n's old hole @2048; gelu freed (end back to 4096); y takes 6's bytes.
constexpr auto mlp_plan = freeze<8>(plan_graph(mlp));
static_assert(mlp_plan.offset[0] == 0 && mlp_plan.offset[3] == 2048 && mlp_plan.offset[4] == 4096);
static_assert(mlp_plan.offset[5] == 4096 && mlp_plan.inplace_of[5] == 4);
static_assert(mlp_plan.offset[6] == 2048 && mlp_plan.offset[7] == 2048 && mlp_plan.inplace_of[7] == 6);
static_assert(mlp_plan.peak() == 12288);              // x + n + W1*n: all live at node 4
static_assert(mlp_plan.buffers[0].max_live == 12288); // so no plan can do better
// [example-graph]

TEST_CASE("docs/memory.md worked example") {
    // [example-run]
    // Weights: one buffer of exactly the needed size (split if above max_size).
    host_buffer_type host(64);
    const std::array<std::size_t, 2> weight_sizes = {mlp[1].size, mlp[2].size};
    auto weights = alloc_tensor_set(host, weight_sizes);
    CHECK(weights.total_size() == 2 * 65536);

    // Compute memory: reserve once, then bind graphs into the same buffer.
    graph_allocator<host_buffer_type> compute(host);
    compute.reserve(mlp);
    CHECK(compute.buffer_size(0) == 12288);
    std::vector<std::byte*> external(mlp.size(), nullptr);
    external[1] = weights.data[0];
    external[2] = weights.data[1];
    const bound_graph bound = compute.alloc_graph(mlp, external);

    // Run: each node gets its output and input pointers; nothing allocates here.
    int ran = 0;
    run_planned(mlp, bound, [&](const node_args& node) {
        CHECK(node.dst != nullptr);
        ++ran;  // a real executor calls the op's kernel here
    });
    CHECK(ran == 5);
    CHECK(compute.reallocations() == 0);
    // [example-run]
}
