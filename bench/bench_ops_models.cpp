// The model-specific and training ops through the graph executor, at model sizes, 1 and
// 2 threads: gated_delta_net (Qwen3-Next: S 128, 16 q/k and 32 v heads; a 512-token
// prefill and a decode step), lightning_indexer (DeepSeek V3.2: D 128, 64 heads, 512
// queries x 2048 f16 keys), conv_3d direct and as im2col_3d + mul_mat, opt_step_adamw
// over 16 M parameters. Compute-bound ops report GFLOP/s and the ratio to the f32 FMA
// peak measured in this process; memory-bound ones GB/s and the ratio to DRAM bandwidth.
#include <benchmark/benchmark.h>

#include <cstring>
#include <functional>
#include <random>

#include "machine.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/backend/cpu.hpp"

namespace {
using namespace tessera;
using namespace tessera::graph;

void fill(node* n, float lo, float hi) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(lo, hi);
    for (std::int64_t i = 0; i < n->lay.nelements(); ++i) {
        const float v = d(rng);
        if (n->lay.type == type_id::f32) std::memcpy(n->data + i * 4, &v, 4);
        else if (n->lay.type == type_id::f16) {
            const auto b = f16::from_float(v).bits;
            std::memcpy(n->data + i * 2, &b, 2);
        }
    }
}

// Builds the graph with make (which fills what needs a particular range), fills the rest
// in [-1, 1], then times compute().
void run(benchmark::State& st, const std::function<any_tensor(context&)>& make, double flops, double bytes) {
    context ctx;
    any_tensor out = make(ctx);
    cgraph g;
    g.build_forward_expand(out);
    const int threads = static_cast<int>(st.range(0));
    backend::cpu::executor ex(threads);
    ex.compute(g);
    for (auto _ : st) ex.compute(g);
    const double s = static_cast<double>(st.iterations());
    if (flops > 0) {
        st.counters["GFLOP/s"] = benchmark::Counter(flops * s * 1e-9, benchmark::Counter::kIsRate);
        st.counters["fma_peak"] = tessera_bench::fma_peak_gflops(threads);
    }
    if (bytes > 0) {
        st.SetBytesProcessed(static_cast<std::int64_t>(bytes * s));
        st.counters["dram_GB/s"] = tessera_bench::dram_read_gbs(threads);
    }
}

node* leaf(context& c, type_id t, std::array<std::int64_t, 4> ne, float lo = -1.f, float hi = 1.f) {
    node* n = c.new_tensor(t, ne);
    fill(n, lo, hi);
    return n;
}

// 7 S^2 flops per token and value head: decay, two dots, one axpy (2 each but the decay).
void bm_gated_delta_net(benchmark::State& st) {
    const std::int64_t S = 128, Hk = 16, Hv = 32, T = st.range(1);
    run(st,
        [&](context& c) {
            const float ks = 1.f / 11.3f;  // keys of norm about 1/sqrt(3)
            return gated_delta_net(any_tensor(leaf(c, type_id::f32, {S, Hk, T, 1})), any_tensor(leaf(c, type_id::f32, {S, Hk, T, 1}, -ks, ks)),
                                   any_tensor(leaf(c, type_id::f32, {S, Hv, T, 1})), any_tensor(leaf(c, type_id::f32, {1, Hv, T, 1}, -1.f, 0.f)),
                                   any_tensor(leaf(c, type_id::f32, {1, Hv, T, 1}, 0.f, 1.f)), any_tensor(leaf(c, type_id::f32, {S, S, Hv, 1})));
        },
        7.0 * S * S * Hv * T, 0);
}

void bm_lightning_indexer(benchmark::State& st) {
    const std::int64_t D = 128, H = 64, n_q = 512, n_kv = 2048;
    run(st,
        [&](context& c) {
            return lightning_indexer(any_tensor(leaf(c, type_id::f32, {D, H, n_q, 1})), any_tensor(leaf(c, type_id::f16, {D, 1, n_kv, 1})),
                                     any_tensor(leaf(c, type_id::f32, {H, n_q, 1, 1})), any_tensor(leaf(c, type_id::f16, {n_kv, n_q, 1, 1})));
        },
        2.0 * D * H * n_q * n_kv, 0);
}

// 3x3x3 kernel, 16 -> 32 channels over a 32x32x8 volume (stride 1, padding 1).
void bm_conv_3d(benchmark::State& st) {
    const bool direct = st.range(1) != 0;
    const std::int64_t W = 32, Hh = 32, Dd = 8, IC = 16, OC = 32;
    const conv3d_params p{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, IC};
    run(st,
        [&](context& c) {
            any_tensor k(leaf(c, type_id::f32, {3, 3, 3, IC * OC})), x(leaf(c, type_id::f32, {W, Hh, Dd, IC}));
            return direct ? conv_3d_direct(k, x, p) : conv_3d(k, x, p);
        },
        2.0 * 27 * IC * OC * W * Hh * Dd, 0);
}

// reads w, g, m, v and writes w, m, v: 28 bytes per parameter
void bm_opt_step_adamw(benchmark::State& st) {
    const std::int64_t n = 16 << 20;
    run(st,
        [&](context& c) {
            any_tensor w(leaf(c, type_id::f32, {4096, n / 4096, 1, 1}));
            w.set_param();
            node* hp = c.new_tensor(type_id::f32, {7, 1, 1, 1});
            const float v[7] = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.f, 10.f, 1000.f};
            std::memcpy(hp->data, v, sizeof v);
            return opt_step_adamw(w, any_tensor(leaf(c, type_id::f32, {4096, n / 4096, 1, 1})),
                                  any_tensor(leaf(c, type_id::f32, {4096, n / 4096, 1, 1})),
                                  any_tensor(leaf(c, type_id::f32, {4096, n / 4096, 1, 1}, 0.f, 1.f)), any_tensor(hp));
        },
        0, 28.0 * static_cast<double>(n));
}

void threads(benchmark::internal::Benchmark* b) { b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime(); }

}  // namespace

BENCHMARK(bm_gated_delta_net)->ArgNames({"threads", "T"})->Args({1, 512})->Args({2, 512})->Args({1, 1})->Args({2, 1})->UseRealTime();
BENCHMARK(bm_lightning_indexer)->Apply(threads)->Unit(benchmark::kMillisecond);
BENCHMARK(bm_conv_3d)->ArgNames({"threads", "direct"})->Args({1, 1})->Args({2, 1})->Args({1, 0})->Args({2, 0})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_opt_step_adamw)->Apply(threads)->Unit(benchmark::kMillisecond);
