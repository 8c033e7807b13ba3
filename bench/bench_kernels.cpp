// The machine's limits (DRAM and cache read bandwidth, f32 FMA peak) and the
// foundation kernels (dot, axpy, f16/bf16 row conversion) on every available arch.
//
// Each kernel runs on a cache-resident size ("hot", 4096 elements) and on arrays far
// larger than the L3 ("stream", 2^27 elements = 512 MiB of f32); stream results carry
// their ratio to the 1-thread DRAM read bandwidth measured in this same run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "machine.hpp"
#include "tessera/kernels/all.hpp"

namespace tb = tessera_bench;
using namespace tessera;

namespace {

// ---- machine limits -----------------------------------------------------------------
void bm_read_bandwidth(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    const auto bytes = static_cast<std::size_t>(state.range(1));
    double gbs = 0;
    for (auto _ : state) {
        gbs = tb::read_bandwidth_gbs(threads, bytes, 1);
        state.SetIterationTime(static_cast<double>(bytes) / (gbs * 1e9));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
    state.counters["GB/s"] = gbs;  // decimal GB, last iteration
    state.counters["threads"] = threads;
}

void bm_fma_peak(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    double g = 0;
    for (auto _ : state) g = tb::fma_peak_gflops_measure(threads);
    state.counters["GFLOP/s"] = g;
    state.counters["threads"] = threads;
}

// ---- kernels ------------------------------------------------------------------------
constexpr std::size_t hot_n = 4096;
constexpr std::size_t stream_n = std::size_t{1} << 27;

struct arrays {
    tb::detail::aligned_floats x, y;
    std::vector<f16> h;
    std::vector<bf16> b;
    explicit arrays(std::size_t n) : x(tb::detail::alloc_floats(n)), y(tb::detail::alloc_floats(n)), h(n), b(n) {}
};
arrays& data_for(std::size_t n) {
    static arrays hot(hot_n);
    if (n == hot_n) return hot;
    static arrays stream(stream_n);  // allocated on first stream benchmark only
    return stream;
}

using body = std::function<void(arrays&, std::size_t)>;

void run_kernel(benchmark::State& state, simd::arch_id a, std::size_t n, double bytes_per_elem, const body& f) {
    simd::set_active_arch(a);
    arrays& d = data_for(n);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        f(d, n);
        benchmark::ClobberMemory();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double bytes = static_cast<double>(state.iterations()) * static_cast<double>(n) * bytes_per_elem;
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.counters["GB/s"] = bytes / secs / 1e9;
    if (n == stream_n) state.counters["dram_ratio"] = bytes / secs / 1e9 / tb::dram_read_gbs(1);
}

void register_all() {
    for (int t : {1, 2}) {
        benchmark::RegisterBenchmark("machine/dram_read_1GiB", bm_read_bandwidth)
            ->Args({t, static_cast<std::int64_t>(tb::dram_bytes)})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark("machine/fma_peak_f32", bm_fma_peak)->Arg(t)->Iterations(2)->Unit(benchmark::kMillisecond);
    }
    for (std::int64_t kib : {32, 512, 16384})  // L1, L2, L3 resident
        benchmark::RegisterBenchmark("machine/cache_read_KiB", bm_read_bandwidth)
            ->Args({1, kib * 1024})->UseManualTime()->Iterations(5)->Unit(benchmark::kMicrosecond);

    struct kernel_case {
        const char* name;
        double bytes_per_elem;  // bytes read + written per element
        body f;
    };
    const std::vector<kernel_case> cases = {
        {"dot_f32", 8, [](arrays& d, std::size_t n) {
             benchmark::DoNotOptimize(simd::call<kernels::dot_f32>(d.x.get(), d.y.get(), n));
         }},
        {"axpy_f32", 12, [](arrays& d, std::size_t n) { simd::call<kernels::axpy_f32>(1e-9f, d.x.get(), d.y.get(), n); }},
        {"f16_to_f32", 6, [](arrays& d, std::size_t n) { simd::call<kernels::f16_to_f32>(d.h.data(), d.y.get(), n); }},
        {"f32_to_f16", 6, [](arrays& d, std::size_t n) { simd::call<kernels::f32_to_f16>(d.x.get(), d.h.data(), n); }},
        {"bf16_to_f32", 6, [](arrays& d, std::size_t n) { simd::call<kernels::bf16_to_f32>(d.b.data(), d.y.get(), n); }},
        {"f32_to_bf16", 6, [](arrays& d, std::size_t n) { simd::call<kernels::f32_to_bf16>(d.x.get(), d.b.data(), n); }},
    };
    for (const auto& c : cases)
        for (auto a : simd::available_archs())
            for (std::size_t n : {hot_n, stream_n}) {
                const std::string name = std::string(c.name) + "/" + std::string(simd::name_of(a)) +
                                         (n == hot_n ? "/hot" : "/stream");
                auto* b = benchmark::RegisterBenchmark(name.c_str(), [a, n, c](benchmark::State& s) {
                    run_kernel(s, a, n, c.bytes_per_elem, c.f);
                });
                if (n == stream_n) b->Iterations(4)->Unit(benchmark::kMillisecond);
            }
}

const bool registered = (register_all(), true);

}  // namespace
