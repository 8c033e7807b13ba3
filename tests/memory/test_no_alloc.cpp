// Graph compute over planned memory allocates nothing: this binary replaces the
// global operator new and counts the calls made while run_planned executes a graph.
#include <doctest/doctest.h>

#include "../counting_new.hpp"  // counts operator new (this binary's only unit that replaces it)

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "graphs.hpp"
#include "tessera/memory/graph_allocator.hpp"

using alloc_count::counting;
using alloc_count::news;

using namespace tessera::memory;

TEST_CASE("run_planned: a whole graph computes in planned memory with zero allocations" * doctest::skip(!alloc_count::available)) {
    const auto g = test_graphs::transformer(16, 64, 4, 128, 100, 2);
    host_buffer_type host(32);
    graph_allocator<host_buffer_type> ga(host);
    std::vector<std::vector<float>> weights(g.size());
    std::vector<std::byte*> ext(g.size(), nullptr);
    for (std::size_t i = 0; i < g.size(); ++i)
        if (g[i].is(tensor_flags::external)) {
            weights[i].assign(g[i].size / 4, 0.01f);
            ext[i] = reinterpret_cast<std::byte*>(weights[i].data());
        }
    const auto bound = ga.alloc_graph(g, ext);
    for (std::size_t i = 0; i < g.size(); ++i)
        if (g[i].is(tensor_flags::input))
            for (std::size_t j = 0; j < g[i].size / 4; ++j) reinterpret_cast<float*>(bound.data[i])[j] = 1.0f;

    // A toy kernel: dst[j] = sum of src[j % len] (stands in for the ops).
    long nodes = 0;
    auto kernel = [&](const node_args& a) {
        const std::size_t len = g[a.index].size / 4;
        auto* dst = reinterpret_cast<float*>(a.dst);
        for (std::size_t j = 0; j < len; ++j) {
            float s = 0;
            for (int k = 0; k < a.n_srcs; ++k) {
                const auto si = static_cast<std::size_t>(g[a.index].srcs[static_cast<std::size_t>(k)]);
                s += reinterpret_cast<const float*>(a.src[static_cast<std::size_t>(k)])[j % (g[si].size / 4)];
            }
            dst[j] = s;
        }
        ++nodes;
    };
    // A check that the counter works: one allocation inside the window is seen.
    counting = true;
    void* volatile probe = ::operator new(16);  // a direct call: compilers may not elide it
    ::operator delete(probe);
    counting = false;
    CHECK(news.load() == 1);

    news = 0;
    counting = true;
    run_planned(g, bound, kernel);
    counting = false;
    CHECK(news.load() == 0);
    CHECK(nodes == 47);  // 22 computed nodes per layer, then norm, mul and the logits
    const auto out = g.size() - 1;
    CHECK(reinterpret_cast<const float*>(bound.data[out])[0] > 0.0f);
}
