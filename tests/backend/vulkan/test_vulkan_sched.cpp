// The scheduler across Vulkan and the CPU, asynchronously: a compute whose last split is on
// the device returns while that split still runs, the next compute's CPU split and its
// input copy (the other copy set) proceed meanwhile, and a compute that reuses a copy set
// really waits for the event of the split that last read it. The stream's test hook
// (stream_state::hold/release) keeps the device's work queued behind a host-signalled gate,
// so "queued, not done" is a state the test sees, not a race. Also compare_graph_backend of
// Vulkan against the CPU over the llama block, node by node.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "../block.hpp"
#include "tessera/backend/vulkan.hpp"

#if defined(TESSERA_VULKAN) && TESSERA_VULKAN

using namespace tessera;
using namespace tessera::backend;
using graph::any_tensor;

namespace {

// y = W sin(x): sin on the CPU (refused on request, see refuse_guard), the product on
// Vulkan where W is.
struct sin_then_product {
    static constexpr std::int64_t K = 64, M = 48, N = 4;
    graph::context ctx{{.no_alloc = true}};
    any_tensor W, x, y;
    graph::cgraph g;
    any_buffer wbuf;
    sin_then_product() {
        W = graph::new_tensor(ctx, type_id::f32, {K, M, 1, 1}, "W");
        x = graph::new_tensor(ctx, type_id::f32, {K, N, 1, 1}, "x");
        x.set_input();
        y = graph::mul_mat(W, graph::sin(x)).set_name("y");
        y.set_output();
        g.build_forward_expand(y);
        std::vector<graph::node*> w{W.get()};
        wbuf = alloc_tensors(w, vulkan_buffer_type(0), buffer_usage::weights);
        const auto wv = blocktest::pseudo_random(static_cast<std::size_t>(K * M), 7);
        tensor_set(*W.get(), wv.data(), 0, wv.size() * 4);
    }
    static std::vector<float> input(int i) { return blocktest::pseudo_random(static_cast<std::size_t>(K * N), 100u + static_cast<std::uint32_t>(i)); }
    // the double-precision result for input i
    static std::vector<double> expect(int i) {
        const auto wv = blocktest::pseudo_random(static_cast<std::size_t>(K * M), 7);
        const auto xv = input(i);
        std::vector<double> r(static_cast<std::size_t>(M * N));
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t m = 0; m < M; ++m) {
                double s = 0;
                for (std::int64_t k = 0; k < K; ++k)
                    s += static_cast<double>(wv[static_cast<std::size_t>(m * K + k)]) * std::sin(static_cast<double>(xv[static_cast<std::size_t>(n * K + k)]));
                r[static_cast<std::size_t>(n * M + m)] = s;
            }
        return r;
    }
};

double max_err(const std::vector<float>& got, const std::vector<double>& want) {
    double e = 0;
    for (std::size_t i = 0; i < got.size(); ++i) e = std::max(e, std::fabs(got[i] - want[i]));
    return e;
}

}  // namespace

// Keeps sin on the CPU for a test (the device computes it otherwise).
struct refuse_guard {
    std::string saved = vulkan::refused_ops();
    explicit refuse_guard(const char* ops) { vulkan::refuse_ops(ops); }
    ~refuse_guard() { vulkan::refuse_ops(saved); }
};

TEST_CASE("Vulkan + CPU scheduler, n_copies 2: a compute overlaps the device's work of the previous one, and a reused copy set waits") {
    const refuse_guard sin_on_cpu("sin");
    sin_then_product t;
    CHECK(vulkan_unsupported_reason(0, *t.y.get()->src[1]).find("op sin is refused on request") != std::string::npos);
    any_backend vk = vulkan_init(0), cpu = cpu_init(1);
    vulkan::stream_state& vs = *as_vulkan(vk)->state();
    scheduler s({vk, cpu}, {}, 2);
    s.alloc_graph(t.g);
    INFO(s.print());
    REQUIRE(s.n_splits() == 2);
    CHECK(s.tensor_backend(t.y.get()) == vk);
    CHECK(s.splits()[0].backend == 1);  // sin on the CPU, then
    CHECK(s.splits()[1].backend == 0);  // the product on Vulkan, with a copy of sin(x) per copy set
    REQUIRE(s.splits()[1].inputs.size() == 1);

    auto set_x = [&](int i) {
        const auto v = sin_then_product::input(i);
        tensor_set(*t.x.get(), v.data(), 0, v.size() * 4);
    };
    vs.hold();  // the device runs nothing until release()
    set_x(0);
    s.graph_compute_async(t.g);  // compute 0: CPU split, copy into set 0, product queued
    const std::uint64_t first = vs.submitted();
    CHECK(vs.completed() < first);
    // compute 1 (copy set 1) needs nothing of compute 0: its CPU split and input copy run now,
    // while the device still has not started compute 0
    set_x(1);
    s.graph_compute_async(t.g);
    CHECK(vs.completed() < first);
    CHECK(vs.submitted() > first);
    // compute 2 reuses copy set 0: it must wait for compute 0's event before overwriting it
    std::atomic<bool> released{false};
    std::thread gate([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        released = true;
        vs.release();
    });
    set_x(2);
    s.graph_compute_async(t.g);
    const bool waited = released.load();
    const std::uint64_t done_then = vs.completed();
    gate.join();
    CHECK(waited);               // it could not return before the gate opened
    CHECK(done_then >= first);  // and compute 0 had finished when it did
    s.synchronize();
    const double e = max_err(tensor_to_f32(*t.y.get()), sin_then_product::expect(2));
    MESSAGE("max |y - exact| after three pipelined computes: " << e);
    CHECK(e < 1e-4);
    // one at a time, each result is its own input's
    for (int i = 3; i < 6; ++i) {
        set_x(i);
        s.graph_compute(t.g);
        CHECK(max_err(tensor_to_f32(*t.y.get()), sin_then_product::expect(i)) < 1e-4);
    }
}

TEST_CASE("compare_graph_backend: Vulkan vs CPU over the llama block, node by node") {
    blocktest::block b = blocktest::build();
    std::vector<graph::node*> leafs(b.g.leafs().begin(), b.g.leafs().end());
    any_buffer keep = alloc_tensors(leafs, cpu_buffer_type(), buffer_usage::weights);
    blocktest::fill_weights(b);
    blocktest::set_inputs(b);
    any_backend vk = vulkan_init(0), cpu = cpu_init(2);
    std::size_t visited = 0;
    double worst = 0;
    std::string worst_node;
    const bool all = compare_graph_backend(vk, cpu, b.g, [&](std::size_t i, node& t1, node& t2) {
        CHECK(buffer_of(t1).type() == vulkan_buffer_type(0));
        const auto v1 = tensor_to_f32(t1), v2 = tensor_to_f32(t2);
        const double e = nmse(v1, v2);
        INFO("node ", i, " '", t1.name, "' ", graph::cgraph::op_label(t1), " nmse ", e);
        // f32 ops within 1e-10; the products with f16 weights: the CPU rounds the activations
        // to f16 for its f16 dot, the device does not
        CHECK(e < (t1.op == graph::op_kind::mul_mat && t1.src[0]->lay.type == type_id::f16 ? 1e-6 : 1e-10));
        if (e > worst) worst = e, worst_node = t1.name;
        ++visited;
        return true;
    });
    CHECK(all);
    CHECK(visited >= 20);
    MESSAGE("compared " << visited << " nodes; worst NMSE " << worst << " at '" << worst_node << "'");
}

#endif
