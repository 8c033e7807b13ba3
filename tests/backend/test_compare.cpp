// compare_graph_backend: the CPU backend against the reference backend over a
// transformer block, node by node, within NMSE bounds; graph_copy on its own.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "block.hpp"

using namespace tessera;
using namespace tessera::backend;

namespace {
// A block whose weights and inputs sit in a plain CPU buffer with values set.
blocktest::block host_block(blocktest::dims d = {}) {
    blocktest::block b = blocktest::build(d);
    std::vector<graph::node*> leafs(b.g.leafs().begin(), b.g.leafs().end());
    static std::vector<any_buffer> keep;  // the buffers live as long as the test binary
    keep.push_back(alloc_tensors(leafs, cpu_buffer_type(), buffer_usage::weights));
    blocktest::fill_weights(b);
    blocktest::set_inputs(b);
    return b;
}
}  // namespace

TEST_CASE("compare_graph_backend: CPU vs reference over a transformer block") {
    blocktest::block b = host_block();
    any_backend cpu = cpu_init(2);
    any_backend ref = reference_init();
    std::size_t visited = 0;
    double worst = 0;
    std::string worst_node;
    const bool all = compare_graph_backend(cpu, ref, b.g, [&](std::size_t i, node& t1, node& t2) {
        CHECK(t1.name == t2.name);
        CHECK(buffer_of(t1).type() == cpu_buffer_type());
        CHECK(buffer_of(t2).type() == reference_buffer_type());
        const auto v1 = tensor_to_f32(t1), v2 = tensor_to_f32(t2);
        const double e = nmse(v1, v2);
        INFO("node ", i, " '", t1.name, "' ", graph::cgraph::op_label(t1), " nmse ", e);
        CHECK(e < 1e-6);
        for (float x : v1) CHECK_MESSAGE(std::isfinite(x), "non-finite value in ", t1.name);
        if (e > worst) worst = e, worst_node = t1.name;
        ++visited;
        return true;
    });
    CHECK(all);
    CHECK(visited >= 20);
    MESSAGE("compared " << visited << " nodes; worst NMSE " << worst << " at '" << worst_node << "'");
}

TEST_CASE("compare_graph_backend: the callback stops the walk") {
    blocktest::block b = host_block();
    std::size_t calls = 0;
    const bool all = compare_graph_backend(cpu_init(1), reference_init(), b.g, [&](std::size_t, node&, node&) {
        return ++calls < 3;
    });
    CHECK_FALSE(all);
    CHECK(calls == 3);
}

TEST_CASE("graph_copy: same graph on another backend, data copied") {
    blocktest::block b = host_block();
    any_backend ref = reference_init();
    graph_copy_result c = graph_copy(ref, b.g);
    REQUIRE(c.nodes.size() == b.g.n_nodes());
    REQUIRE(c.leafs.size() == b.g.leafs().size());
    for (std::size_t i = 0; i < c.leafs.size(); ++i) {
        const node& o = *b.g.leafs()[i];
        const node& k = *c.leafs[i];
        CHECK(k.name == o.name);
        CHECK(k.lay.ne == o.lay.ne);
        CHECK(buffer_of(k) == c.buffer);
        if (o.lay.type != type_id::i32) CHECK(tensor_to_f32(k) == tensor_to_f32(o));
    }
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
        const node& o = *b.g.nodes()[i];
        const node& k = *c.nodes[i];
        CHECK(k.op == o.op);
        CHECK(k.is_view() == o.is_view());
        for (int s = 0; s < graph::max_src; ++s)
            CHECK((k.src[static_cast<std::size_t>(s)] == nullptr) == (o.src[static_cast<std::size_t>(s)] == nullptr));
    }
    // compute the copy on the reference backend and the original on the CPU: equal results
    ref.graph_compute(c.view());
    std::vector<graph::node*> nodes(b.g.nodes().begin(), b.g.nodes().end());
    static std::vector<any_buffer> keep;
    keep.push_back(alloc_tensors(nodes, cpu_buffer_type()));
    cpu_init(2).graph_compute(b.g);
    CHECK(nmse(tensor_to_f32(*c.map.at(b.out.get())), tensor_to_f32(*b.out.get())) < 1e-8);
}

TEST_CASE("bad use: a graph on a backend that cannot read its memory") {
    blocktest::block b = host_block();
    // every tensor is in CPU memory: the reference backend refuses, naming the tensor
    std::vector<graph::node*> nodes(b.g.nodes().begin(), b.g.nodes().end());
    any_buffer nb = alloc_tensors(nodes, cpu_buffer_type());
    CHECK_THROWS_WITH_AS(reference_init().graph_compute(b.g), doctest::Contains("not in a REF buffer"), tessera::error);
    // and the CPU refuses REF memory
    graph_copy_result c = graph_copy(reference_init(), b.g);
    CHECK_THROWS_WITH_AS(cpu_init(1).graph_compute(c.view()), doctest::Contains("which the CPU cannot read"), tessera::error);
}
