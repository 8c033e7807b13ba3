// mul_mat through the graph executor: 4096 x 4096 weights (f32, f16, bf16) times
// N = 1, 64, 512 f32 columns, at 1 and 2 threads. Reports GFLOP/s and the ratio to
// the machine's f32 FMA peak (N >= 64) or, for N = 1, the weight bytes streamed per
// second as a ratio to the DRAM read bandwidth (both measured in this process).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>

#include "machine.hpp"
#include "tessera/graph/all.hpp"

namespace {
using namespace tessera;
using namespace tessera::graph;

void fill(node* n) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    auto* p = n->data;
    const auto cnt = n->lay.nelements();
    for (std::int64_t i = 0; i < cnt; ++i) {
        const float v = d(rng);
        switch (n->lay.type) {
            case type_id::f32: std::memcpy(p + i * 4, &v, 4); break;
            case type_id::f16: { auto b = f16::from_float(v).bits; std::memcpy(p + i * 2, &b, 2); break; }
            case type_id::bf16: { auto b = bf16::from_float(v).bits; std::memcpy(p + i * 2, &b, 2); break; }
            default: break;
        }
    }
}

void bm_mul_mat(benchmark::State& st, type_id wt) {
    const std::int64_t K = 4096, M = 4096, N = st.range(0);
    const int threads = static_cast<int>(st.range(1));
    context ctx;
    node* w = ctx.new_tensor(wt, {K, M, 1, 1});
    node* x = ctx.new_tensor(type_id::f32, {K, N, 1, 1});
    fill(w);
    fill(x);
    auto y = mul_mat(any_tensor(w), any_tensor(x));
    cgraph g;
    g.build_forward_expand(y);
    cpu_executor ex(threads);
    ex.compute(g);
    for (auto _ : st) ex.compute(g);
    const double flop = 2.0 * static_cast<double>(M * N * K);
    st.counters["GFLOP/s"] = benchmark::Counter(flop / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    const double t = st.iterations() ? 1.0 : 0.0;
    (void)t;
    if (N >= 64) {
        st.counters["peak"] = tessera_bench::fma_peak_gflops(threads);
    } else {
        st.counters["dram_GBs"] = tessera_bench::dram_read_gbs(threads);
        st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(w->lay.nbytes()));
    }
}

void args(benchmark::internal::Benchmark* b) {
    for (int n : {1, 64, 512})
        for (int t : {1, 2}) b->Args({n, t});
    b->ArgNames({"N", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK_CAPTURE(bm_mul_mat, f32, type_id::f32)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, f16, type_id::f16)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, bf16, type_id::bf16)->Apply(args);
}  // namespace
