// Ops at transformer sizes through the graph executor (4096 wide, 512 tokens, 32
// heads of 128, KV 2048), at 1 and 2 threads, plus the per-node overhead of a graph
// of 1000 tiny adds.
//
// Each op reports bytes_per_second (what it reads + writes) and copy_ratio: that rate
// over the copy bandwidth measured in this process for the same number of bytes and
// threads (bench/machine.hpp). A memory-bound op cannot go much past 1: no other
// implementation (ggml's included) moves its bytes faster than a plain copy does.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <random>

#include "machine.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/backend/cpu.hpp"

namespace {
using namespace tessera;
using namespace tessera::graph;

void fill(node* n, float lo = -1.f, float hi = 1.f) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(lo, hi);
    for (std::int64_t i = 0; i < n->lay.nelements(); ++i) {
        const float v = d(rng);
        if (n->lay.type == type_id::f32) std::memcpy(n->data + i * 4, &v, 4);
        else if (n->lay.type == type_id::f16) { auto b = f16::from_float(v).bits; std::memcpy(n->data + i * 2, &b, 2); }
        else if (n->lay.type == type_id::i32) { auto k = static_cast<std::int32_t>(i); std::memcpy(n->data + i * 4, &k, 4); }
    }
}

// Builds the graph with `make`, then times compute(); bytes = what the op reads + writes;
// flops, when given, adds GFLOP/s and fma_ratio (over the f32 FMA peak measured here).
void run(benchmark::State& st, const std::function<any_tensor(context&)>& make, double bytes, double flops = 0) {
    context ctx;
    any_tensor out = make(ctx);
    for (std::size_t i = 0; i < ctx.size(); ++i)
        if (ctx[i].op == op_kind::none && ctx[i].lay.type != type_id::i32) fill(&ctx[i]);
    cgraph g;
    g.build_forward_expand(out);
    backend::cpu::executor ex(static_cast<int>(st.range(0)));
    ex.compute(g);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : st) ex.compute(g);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.SetBytesProcessed(static_cast<std::int64_t>(bytes * static_cast<double>(st.iterations())));
    const double gbs = bytes * static_cast<double>(st.iterations()) / secs / 1e9;
    st.counters["copy_ratio"] = gbs / tessera_bench::copy_gbs(static_cast<int>(st.range(0)), static_cast<std::size_t>(bytes));
    if (flops > 0) {
        const double gflops = flops * static_cast<double>(st.iterations()) / secs / 1e9;
        st.counters["GFLOP/s"] = gflops;
        st.counters["fma_ratio"] = gflops / tessera_bench::fma_peak_gflops(static_cast<int>(st.range(0)));
    }
}

constexpr std::int64_t E = 4096, T = 512, H = 32, D = 128, KV = 2048;

void bm_rms_norm(benchmark::State& st) {
    run(st, [](context& c) { return rms_norm(any_tensor(c.new_tensor(type_id::f32, {E, T, 1, 1})), 1e-6f); }, 8.0 * E * T);
}
void bm_add(benchmark::State& st) {
    run(st, [](context& c) { return add(any_tensor(c.new_tensor(type_id::f32, {E, T, 1, 1})), any_tensor(c.new_tensor(type_id::f32, {E, T, 1, 1}))); },
        12.0 * E * T);
}
void bm_mul_bcast(benchmark::State& st) {
    run(st, [](context& c) { return mul(any_tensor(c.new_tensor(type_id::f32, {E, T, 1, 1})), any_tensor(c.new_tensor(type_id::f32, {E, 1, 1, 1}))); },
        8.0 * E * T);
}
void bm_silu(benchmark::State& st) {
    run(st, [](context& c) { return silu(any_tensor(c.new_tensor(type_id::f32, {E, T, 1, 1}))); }, 8.0 * E * T);
}
void bm_swiglu(benchmark::State& st) {
    run(st, [](context& c) { return swiglu_split(any_tensor(c.new_tensor(type_id::f32, {11008, 64, 1, 1})), any_tensor(c.new_tensor(type_id::f32, {11008, 64, 1, 1}))); },
        12.0 * 11008 * 64);
}
void bm_soft_max(benchmark::State& st) {
    const std::int64_t nq = st.range(1);
    run(st, [nq](context& c) {
            return soft_max_ext(any_tensor(c.new_tensor(type_id::f32, {KV, nq, H, 1})), any_tensor(c.new_tensor(type_id::f16, {KV, nq, 1, 1})), 0.088f);
        },
        8.0 * KV * nq * H);
}
void bm_rope(benchmark::State& st) {  // threads, mode (0 normal as llama, 2 neox)
    rope_params p;
    p.n_dims = D;
    p.mode = rope_mode{static_cast<int>(st.range(1))};
    run(st, [p](context& c) {
            return rope_ext(any_tensor(c.new_tensor(type_id::f32, {D, H, T, 1})), any_tensor(c.new_tensor(type_id::i32, {T, 1, 1, 1})), any_tensor(), p);
        },
        8.0 * D * H * T);
}
void bm_flash_attn(benchmark::State& st) {
    const std::int64_t nq = st.range(1);
    run(st, [nq](context& c) {
            return flash_attn_ext(any_tensor(c.new_tensor(type_id::f32, {D, nq, H, 1})), any_tensor(c.new_tensor(type_id::f16, {D, KV, H, 1})),
                                  any_tensor(c.new_tensor(type_id::f16, {D, KV, H, 1})), any_tensor(c.new_tensor(type_id::f16, {KV, nq, 1, 1})),
                                  0.088f);
        },
        4.0 * D * KV * H,                       // K and V (f16), read once
        4.0 * static_cast<double>(nq) * KV * D * H);  // two products of 2 * KV * D per query and head
}

// 1000 tiny adds in a chain: the time per node is the executor's overhead. solo = 1: the
// executor's default (light nodes below its solo cost run on thread 0 without barriers);
// solo = 0: every node split over the threads, a barrier after each (the cost of one
// barrier at 2 threads is then about us_per_node).
void bm_graph_overhead(benchmark::State& st) {
    context ctx;
    any_tensor x(ctx.new_tensor(type_id::f32, {16, 1, 1, 1}));
    any_tensor y(ctx.new_tensor(type_id::f32, {16, 1, 1, 1}));
    fill(x.get());
    fill(y.get());
    any_tensor t = x;
    for (int i = 0; i < 1000; ++i) t = add(t, y);
    cgraph g;
    g.build_forward_expand(t);
    backend::cpu::executor ex(static_cast<int>(st.range(0)));
    if (st.range(1) == 0) ex.set_solo_cost(0);
    ex.compute(g);
    for (auto _ : st) ex.compute(g);
    st.counters["us_per_node"] = benchmark::Counter(1e-3, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    st.counters["barriers"] = static_cast<double>(ex.last_barriers());
}

void threads(benchmark::internal::Benchmark* b) { b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond); }
void threads_q(benchmark::internal::Benchmark* b) {
    for (int q : {1, 512})
        for (int t : {1, 2}) b->Args({t, q});
    b->ArgNames({"threads", "n_q"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(bm_rms_norm)->Apply(threads);
BENCHMARK(bm_add)->Apply(threads);
BENCHMARK(bm_mul_bcast)->Apply(threads);
BENCHMARK(bm_silu)->Apply(threads);
BENCHMARK(bm_swiglu)->Apply(threads);
BENCHMARK(bm_rope)->ArgsProduct({{1, 2}, {rope_mode_normal, rope_mode_neox}})->ArgNames({"threads", "mode"})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_soft_max)->Apply(threads_q);
BENCHMARK(bm_flash_attn)->Apply(threads_q);
BENCHMARK(bm_graph_overhead)->ArgsProduct({{1, 2}, {1, 0}})->ArgNames({"threads", "solo"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}  // namespace
