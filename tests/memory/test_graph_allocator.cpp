#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "graphs.hpp"
#include "tessera/memory/graph_allocator.hpp"

using namespace tessera;
using namespace tessera::memory;

TEST_CASE("reserve with the worst case, then smaller graphs run without growing") {
    host_buffer_type host(32);
    graph_allocator<host_buffer_type> ga(host);
    const auto worst = test_graphs::transformer(512, 256, 4, 688, 1000, 2);
    const plan& reserved = ga.reserve(worst);
    const std::size_t size = ga.buffer_size(0);
    CHECK(size == reserved.peak());
    CHECK(host.allocations() == 1);
    for (std::size_t T : {1, 7, 64, 200, 511, 512}) {
        CAPTURE(T);
        const auto g = test_graphs::transformer(T, 256, 4, 688, 1000, 2);
        std::vector<std::byte*> ext(g.size(), nullptr);
        std::vector<std::vector<std::byte>> weights;
        weights.reserve(g.size());
        for (std::size_t i = 0; i < g.size(); ++i)
            if (g[i].is(tensor_flags::external)) {
                weights.emplace_back(g[i].size);
                ext[i] = weights.back().data();
            }
        const auto bound = ga.alloc_graph(g, ext);
        CHECK(ga.last_plan().peak() <= size);
        CHECK(ga.buffer_size(0) == size);
        CHECK(ga.reallocations() == 0);
        // every planned tensor lies inside the buffer; externals point at their data
        for (std::size_t i = 0; i < g.size(); ++i) {
            const auto& p = ga.last_plan();
            if (p.buffer[i] == 0) {
                CHECK(bound.data[i] >= bound.data[0] - p.offset[0]);
                CHECK(p.offset[i] + g[i].size <= size);
            } else if (g[i].is(tensor_flags::external)) {
                CHECK(bound.data[i] == ext[i]);
            }
        }
    }
    CHECK(host.allocations() == 1);
    // A bigger graph re-plans and grows the buffer once.
    const auto bigger = test_graphs::transformer(1024, 256, 4, 688, 1000, 2);
    std::vector<std::byte*> ext(bigger.size(), nullptr);
    std::vector<std::vector<std::byte>> weights;
    weights.reserve(bigger.size());
    for (std::size_t i = 0; i < bigger.size(); ++i)
        if (bigger[i].is(tensor_flags::external)) {
            weights.emplace_back(bigger[i].size);
            ext[i] = weights.back().data();
        }
    (void)ga.alloc_graph(bigger, ext);
    CHECK(ga.reallocations() == 1);
    CHECK(ga.buffer_size(0) == ga.last_plan().peak());
    CHECK(ga.buffer_size(0) > size);
    CHECK(host.allocations() == 2);
}

TEST_CASE("one buffer per buffer id, each from its own provider") {
    host_buffer_type a(64), b(256);
    graph_allocator<host_buffer_type> ga({&a, &b});
    const std::array g = {input(100), op(100, {0}).on_buffer(1), op(100, {0, 1}), op(100, {1, 2}).on_buffer(1),
                          op(100, {3}).as_output()};
    const auto bound = ga.alloc_graph(g);
    CHECK(ga.n_buffers() == 2);
    CHECK(ga.buffer_size(0) == 256);
    CHECK(ga.buffer_size(1) == 512);
    CHECK(a.allocations() == 1);
    CHECK(b.allocations() == 1);
    CHECK(reinterpret_cast<std::uintptr_t>(bound.data[3]) % 256 == 0);
    CHECK(bound.data[3] - bound.data[1] == 256);
}

TEST_CASE("a plan beyond the buffer type's maximum size is an error") {
    host_buffer_type small(64, 1000);
    graph_allocator<host_buffer_type> ga(small);
    const std::array g = {input(600), op(600, {0}).as_output()};
    CHECK_THROWS_WITH_AS(ga.reserve(g),
                         "graph_allocator: buffer 0 needs 1280 bytes, more than its buffer type's maximum 1000", error);
    const std::array e = {external(8), op(8, {0}).as_output()};
    CHECK_THROWS_WITH_AS(ga.alloc_graph(e), "bind_plan: no data given for external tensor 0", error);
    const auto p = plan_graph(std::array{input(8), op(8, {0}).as_output()});
    CHECK_THROWS_WITH_AS(bind_plan(p, {}, {}), "bind_plan: tensor 0 is in buffer 0 but 0 buffer bases were given", error);
}
