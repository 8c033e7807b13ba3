// Backend layer overheads on a transformer block (D = 256, 8 heads, F = 512, 32
// tokens): the CPU backend computing an allocated graph directly, the same through a
// one-backend scheduler (assign + split + plan + bind on every alloc_graph, then
// compute), and the scheduler's alloc_graph alone. Graphs per second and the nodes
// per second they imply.
#include <benchmark/benchmark.h>

#include "../tests/backend/block.hpp"

namespace {
using namespace tessera;
using namespace tessera::backend;

blocktest::dims bench_dims() {
    blocktest::dims d;
    d.D = 256;
    d.H = 8;
    d.F = 512;
    d.V = 64;
    d.T = 32;
    return d;
}

void counters(benchmark::State& st, const blocktest::block& b) {
    st.counters["graphs/s"] = benchmark::Counter(static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
    st.counters["nodes/s"] =
        benchmark::Counter(static_cast<double>(st.iterations() * static_cast<std::int64_t>(b.g.n_nodes())), benchmark::Counter::kIsRate);
}

void BM_cpu_direct(benchmark::State& st) {
    blocktest::block b = blocktest::build(bench_dims());
    std::vector<graph::node*> all(b.g.leafs().begin(), b.g.leafs().end());
    for (auto* n : b.g.nodes()) all.push_back(n);
    any_buffer buf = alloc_tensors(all, cpu_buffer_type());
    blocktest::fill_weights(b);
    blocktest::set_inputs(b);
    any_backend cpu = cpu_init(static_cast<int>(st.range(0)));
    for (auto _ : st) cpu.graph_compute(b.g);
    counters(st, b);
}
BENCHMARK(BM_cpu_direct)->Arg(1)->Arg(2)->UseRealTime();

void BM_scheduler_compute(benchmark::State& st) {
    blocktest::block b = blocktest::build(bench_dims());
    std::vector<graph::node*> w(b.weights);
    any_buffer wb = alloc_tensors(w, cpu_buffer_type(), buffer_usage::weights);
    blocktest::fill_weights(b);
    scheduler s({cpu_init(static_cast<int>(st.range(0)))});
    for (auto _ : st) {
        s.alloc_graph(b.g);
        blocktest::set_inputs(b);
        s.graph_compute(b.g);
    }
    counters(st, b);
}
BENCHMARK(BM_scheduler_compute)->Arg(1)->Arg(2)->UseRealTime();

void BM_scheduler_alloc_only(benchmark::State& st) {
    blocktest::block b = blocktest::build(bench_dims());
    std::vector<graph::node*> w(b.weights);
    any_buffer wb = alloc_tensors(w, cpu_buffer_type(), buffer_usage::weights);
    scheduler s({reference_init(), cpu_init(1)});
    for (auto _ : st) s.alloc_graph(b.g);
    counters(st, b);
}
BENCHMARK(BM_scheduler_alloc_only)->UseRealTime();

}  // namespace
