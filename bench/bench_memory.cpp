// Graph planner benchmarks: planning time for graphs of 1k, 10k and 100k tensors
// (time per tensor and per tensor*log2(n): flat columns mean O(n log n)), and the
// peak relative to the sum of all tensor sizes and to the max-live bound.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "../tests/memory/gallocr_reference.hpp"
#include "../tests/memory/graphs.hpp"
#include "tessera/memory/planner.hpp"

using namespace tessera::memory;

namespace {

// A transformer stack of about `n` tensors (37 per layer), T=128, D=2048.
std::vector<tensor_desc> transformer_of(std::size_t n) {
    const int layers = static_cast<int>(n / 37) > 0 ? static_cast<int>(n / 37) : 1;
    return test_graphs::transformer(128, 2048, 16, 5632, 32000, layers);
}

std::vector<tensor_desc> random_of(std::size_t n) {
    std::mt19937_64 rng(n);
    return test_graphs::random_dag(rng, static_cast<int>(n));
}

std::size_t planned_bytes(const std::vector<tensor_desc>& g, std::size_t alignment) {
    std::size_t s = 0;
    for (const auto& t : g)
        if (!t.is_view() && !t.is(tensor_flags::external)) s += align_up(t.size, alignment);
    return s;
}

void report(benchmark::State& state, const std::vector<tensor_desc>& g, const plan& p, std::size_t alignment) {
    const double n = static_cast<double>(g.size());
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(g.size()));
    state.counters["tensors"] = n;
    state.counters["ns_per_tensor"] =
        benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.counters["ns_per_tensor_log2n"] = benchmark::Counter(
        n * std::log2(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.counters["peak_MiB"] = static_cast<double>(p.total_peak()) / (1024.0 * 1024.0);
    state.counters["peak_over_sum"] =
        static_cast<double>(p.total_peak()) / static_cast<double>(planned_bytes(g, alignment));
    state.counters["peak_over_max_live"] =
        static_cast<double>(p.total_peak()) / static_cast<double>(p.buffers[0].max_live);
    state.counters["fragmentation"] = p.buffers[0].fragmentation();
}

// Invert turns the rate into seconds per item; scale to ns in the name only.
void BM_plan_transformer(benchmark::State& state) {
    const auto g = transformer_of(static_cast<std::size_t>(state.range(0)));
    plan p;
    for (auto _ : state) {
        p = plan_graph(g, 32);
        benchmark::DoNotOptimize(p.offset.data());
    }
    report(state, g, p, 32);
}
BENCHMARK(BM_plan_transformer)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_plan_transformer_one_policy(benchmark::State& state) {
    const auto g = transformer_of(static_cast<std::size_t>(state.range(0)));
    plan p;
    for (auto _ : state) {
        p = plan_graph(g, 32, plan_policy{});
        benchmark::DoNotOptimize(p.offset.data());
    }
    report(state, g, p, 32);
}
BENCHMARK(BM_plan_transformer_one_policy)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_plan_random(benchmark::State& state) {
    const auto g = random_of(static_cast<std::size_t>(state.range(0)));
    plan p;
    for (auto _ : state) {
        p = plan_graph(g, 64);
        benchmark::DoNotOptimize(p.offset.data());
    }
    report(state, g, p, 64);
}
BENCHMARK(BM_plan_random)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

// ggml's policy (test reference: linear scans of a sorted free-block array) for the
// peak comparison; its time is not tessera's and is shown for scale only.
void BM_gallocr_reference_transformer(benchmark::State& state) {
    const auto g = transformer_of(static_cast<std::size_t>(state.range(0)));
    gallocr_ref::result r;
    for (auto _ : state) {
        r = gallocr_ref::plan(g, 32);
        benchmark::DoNotOptimize(r.offset.data());
    }
    const auto p = plan_graph(g, 32);
    state.counters["tensors"] = static_cast<double>(g.size());
    state.counters["peak_MiB"] = static_cast<double>(r.peak) / (1024.0 * 1024.0);
    state.counters["peak_over_planner"] = static_cast<double>(r.peak) / static_cast<double>(p.peak());
}
BENCHMARK(BM_gallocr_reference_transformer)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
