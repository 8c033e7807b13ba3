// mul_mat through the CPU backend: 4096 x 4096 weights times N = 1, 64, 512 f32 columns,
// at 1 and 2 threads, for f32, f16, bf16, q8_0, q4_0, q4_K, q6_K, q5_K, q3_K, q2_K, iq4_xs,
// iq4_nl, q5_0, q4_1, tq2_0, nvfp4, q2_0, q1_0 and the seven lattice i-quants weights in a CPU buffer and for q4_0 / q8_0 / q4_K weights in the CPU_REPACK buffer (backend/cpu/repack.hpp,
// names ending in "_repack").
//
//   N >= 64  GFLOP/s and fma_ratio = GFLOP/s / the f32 FMA peak measured in this process
//            (the weights are re-read each time: compute-bound)
//   N = 1    weight_GB/s and dram_ratio = weight_GB/s / the DRAM read bandwidth measured
//            in this process; the benchmark cycles through >= 1 GiB of weight copies so
//            every product reads its weights from DRAM ("stream")
//
// bm_matvec_shape: the same N = 1 product on the weight shapes of bench_models' 110 M
// model (K x M = 768 x 768 attention, 768 x 2048 ffn_gate / ffn_up, 2048 x 768 ffn_down),
// where a row is 768 or 2048 wide and each chunk of rows is short, for the types a
// generated token reads (f32, f16, bf16, q8_0, q4_0, q4_K, q6_K; q4_0 / q8_0 / q4_K also
// repacked).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "machine.hpp"
#include "tessera/backend/all.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/quant/reference.hpp"

namespace {
using namespace tessera;
using namespace tessera::graph;
namespace be = tessera::backend;

constexpr std::int64_t K4096 = 4096;

std::vector<float> random_floats(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// The weights' bytes in type t, K x M (quantized / converted from one random f32 matrix).
const std::vector<std::byte>& weight_bytes(type_id t, std::int64_t K, std::int64_t M) {
    static type_id cached_t = type_id::f32;
    static std::int64_t cached_k = 0, cached_m = 0;
    static std::vector<std::byte> cached;
    if (cached.empty() || cached_t != t || cached_k != K || cached_m != M) {
        const auto f = random_floats(static_cast<std::size_t>(K * M), 42);
        cached.assign(static_cast<std::size_t>(row_size(t, K) * M), std::byte{0});
        if (t == type_id::f32) {
            std::memcpy(cached.data(), f.data(), cached.size());
        } else if (t == type_id::f16 || t == type_id::bf16) {
            for (std::size_t i = 0; i < f.size(); ++i) {
                const std::uint16_t b = t == type_id::f16 ? f16::from_float(f[i]).bits : bf16::from_float(f[i]).bits;
                std::memcpy(cached.data() + 2 * i, &b, 2);
            }
        } else {
            // 256 rows quantized (with unit importance weights, which iq2_xxs, iq2_xs and
            // iq1_s require; the i-quant searches are slow), repeated down the matrix
            constexpr std::int64_t slab = 256;
            const std::vector<float> imatrix(static_cast<std::size_t>(K), 1.0f);
            const auto rb = static_cast<std::size_t>(row_size(t, K));
            quant::quantize(t, f.data(), cached.data(), slab, K, imatrix.data());
            for (std::int64_t r = slab; r < M; r += slab)
                std::memcpy(cached.data() + static_cast<std::size_t>(r) * rb, cached.data(), static_cast<std::size_t>(slab) * rb);
        }
        cached_t = t;
        cached_k = K;
        cached_m = M;
    }
    return cached;
}

void run_mul_mat(benchmark::State& st, type_id wt, bool repack, std::int64_t K, std::int64_t M, std::int64_t N, int threads) {
    const bool stream = N == 1;
    const auto& wb = weight_bytes(wt, K, M);
    const std::size_t copies = stream ? std::max<std::size_t>(2, ((std::size_t{1} << 30) + wb.size() - 1) / wb.size()) : 1;

    context ctx({true});
    std::vector<node*> ws;
    for (std::size_t c = 0; c < copies; ++c) ws.push_back(ctx.new_tensor(wt, {K, M, 1, 1}, "w" + std::to_string(c)));
    node* x = ctx.new_tensor(type_id::f32, {K, N, 1, 1}, "x");
    std::vector<std::unique_ptr<cgraph>> graphs;
    std::vector<node*> rest{x};
    for (node* w : ws) {
        auto g = std::make_unique<cgraph>();
        any_tensor y = mul_mat(any_tensor(w), any_tensor(x));
        g->build_forward_expand(y);
        rest.push_back(y.get());
        graphs.push_back(std::move(g));
    }
    be::any_buffer wbuf = be::alloc_tensors(ws, repack ? be::repack_buffer_type() : be::cpu_buffer_type(), be::buffer_usage::weights);
    be::any_buffer cbuf = be::alloc_tensors(rest, be::cpu_buffer_type());
    for (node* w : ws) be::tensor_set(*w, wb.data(), 0, wb.size());
    const auto xf = random_floats(static_cast<std::size_t>(K * N), 7);
    be::tensor_set(*x, xf.data(), 0, xf.size() * 4);
    if (repack && !backend::is_repacked(*ws[0])) {
        st.SkipWithError("weights were not repacked");
        return;
    }

    be::cpu_backend cpu(threads);
    cpu.graph_compute(*graphs[0]);
    std::size_t c = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : st) {
        cpu.graph_compute(*graphs[c]);
        c = (c + 1) % copies;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto iters = static_cast<double>(st.iterations());
    const double gflops = 2.0 * static_cast<double>(M * N * K) * iters / secs / 1e9;
    st.counters["GFLOP/s"] = gflops;
    if (stream) {
        const double gbs = static_cast<double>(wb.size()) * iters / secs / 1e9;
        st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(wb.size()));
        st.counters["weight_GB/s"] = gbs;
        st.counters["dram_GB/s"] = tessera_bench::dram_read_gbs(threads);
        st.counters["dram_ratio"] = gbs / tessera_bench::dram_read_gbs(threads);
    } else {
        st.counters["fma_peak"] = tessera_bench::fma_peak_gflops(threads);
        st.counters["fma_ratio"] = gflops / tessera_bench::fma_peak_gflops(threads);
    }
    st.SetLabel(std::string(simd::name_of(simd::active_arch())));
}

void bm_mul_mat(benchmark::State& st, type_id wt, bool repack) {
    run_mul_mat(st, wt, repack, K4096, K4096, st.range(0), static_cast<int>(st.range(1)));
}
void bm_matvec_shape(benchmark::State& st, type_id wt, bool repack) {
    run_mul_mat(st, wt, repack, st.range(0), st.range(1), 1, static_cast<int>(st.range(2)));
}
void shapes(benchmark::internal::Benchmark* b) {
    for (auto [k, m] : {std::pair{768, 768}, std::pair{768, 2048}, std::pair{2048, 768}})
        for (int t : {1, 2}) b->Args({k, m, t});
    b->ArgNames({"K", "M", "threads"})->Unit(benchmark::kMicrosecond)->UseRealTime()->MinTime(0.3);
}

void args(benchmark::internal::Benchmark* b) {
    for (int n : {1, 64, 512})
        for (int t : {1, 2}) b->Args({n, t});
    b->ArgNames({"N", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);
}
BENCHMARK_CAPTURE(bm_mul_mat, f32, type_id::f32, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, f16, type_id::f16, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, bf16, type_id::bf16, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q8_0, type_id::q8_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q8_0_repack, type_id::q8_0, true)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q4_0, type_id::q4_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q4_0_repack, type_id::q4_0, true)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q4_K, type_id::q4_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q4_K_repack, type_id::q4_K, true)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q6_K, type_id::q6_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q5_K, type_id::q5_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q3_K, type_id::q3_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q2_K, type_id::q2_K, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq4_xs, type_id::iq4_xs, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq4_nl, type_id::iq4_nl, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q5_0, type_id::q5_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q4_1, type_id::q4_1, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, tq2_0, type_id::tq2_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, nvfp4, type_id::nvfp4, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q2_0, type_id::q2_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, q1_0, type_id::q1_0, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq3_s, type_id::iq3_s, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq3_xxs, type_id::iq3_xxs, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq2_s, type_id::iq2_s, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq2_xs, type_id::iq2_xs, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq2_xxs, type_id::iq2_xxs, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq1_m, type_id::iq1_m, false)->Apply(args);
BENCHMARK_CAPTURE(bm_mul_mat, iq1_s, type_id::iq1_s, false)->Apply(args);
BENCHMARK_CAPTURE(bm_matvec_shape, f32, type_id::f32, false)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, f16, type_id::f16, false)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, bf16, type_id::bf16, false)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, q8_0, type_id::q8_0, false)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, q8_0_repack, type_id::q8_0, true)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, q4_0, type_id::q4_0, false)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, q4_0_repack, type_id::q4_0, true)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, q4_K, type_id::q4_K, false)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, q4_K_repack, type_id::q4_K, true)->Apply(shapes);
BENCHMARK_CAPTURE(bm_matvec_shape, q6_K, type_id::q6_K, false)->Apply(shapes);
}  // namespace
