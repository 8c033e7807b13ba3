// Quantized-block kernels: throughput per type and arch, and a 4096 x 4096 matrix x
// vector product whose weights stream from DRAM.
//
//   quantize_act/<q8_0|q8_1|q8_K>/<arch>      SIMD activation quantizers, MB/s of f32 (1 MiB of f32, L2)
//   quantize_ref/<type>/threads:<t>          the quant layer's reference quantizers (weights), f32 GB/s
//   dequantize/<type>/<arch>                 blocks -> f32, GB/s of f32 written (64 Ki elements)
//   vec_dot/<type>/<arch>                    one row of 4096 . partner row, weight GB/s (cache-resident)
//   matvec/<type>/threads:<t>/<hot|stream>   y = W x, W 4096 x 4096 of the type, x quantized to the
//                                            partner inside the timed region; weight GB/s and the ratio
//                                            to the DRAM read bandwidth measured in this run (machine.hpp).
//                                            "stream" cycles through >= 1 GiB of weight copies so every
//                                            matrix comes from DRAM; "hot" re-reads one copy.
// The matvec uses the active arch (TESSERA_ARCH=<name> to compare arches); its threads are
// a persistent pool (std::thread) living for the whole benchmark.
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "machine.hpp"
#include "tessera/kernels/all.hpp"
#include "tessera/quant/reference.hpp"

namespace tb = tessera_bench;
using namespace tessera;
namespace qk = tessera::kernels;

namespace {

// ---- data -------------------------------------------------------------------------------
struct aligned_bytes {
    struct del {
        void operator()(unsigned char* q) const noexcept { std::free(q); }
    };
    std::unique_ptr<unsigned char, del> p;
    std::size_t size = 0;
    explicit aligned_bytes(std::size_t n) : p(static_cast<unsigned char*>(std::aligned_alloc(64, (n + 63) / 64 * 64))), size(n) {
        if (!p) throw std::bad_alloc();
    }
    unsigned char* get() const { return p.get(); }
};

std::vector<float> random_floats(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

// Random blocks with finite scales (the speed of the kernels does not depend on values).
template <class B>
void fill_random(B* b, std::size_t nb, unsigned seed) {
    std::mt19937 rng(seed);
    auto* p = reinterpret_cast<unsigned char*>(b);
    for (std::size_t k = 0; k < nb * sizeof(B); ++k) p[k] = static_cast<unsigned char>(rng());
    for (std::size_t i = 0; i < nb; ++i) {
        if constexpr (std::is_same_v<B, quant::block_mxfp4>) {
            b[i].e = static_cast<std::uint8_t>(120 + rng() % 8);
        } else if constexpr (std::is_same_v<B, quant::block_nvfp4>) {
            for (auto& d : b[i].d) d = static_cast<std::uint8_t>(0x30 + rng() % 16);
        } else if constexpr (std::is_same_v<B, quant::block_iq1_m>) {  // f16 0.01 in the scale words' top nibbles
            const std::uint16_t h = f16::from_float(0.01f).bits;
            for (int w = 0; w < 4; ++w) b[i].scales[2 * w + 1] = static_cast<std::uint8_t>((b[i].scales[2 * w + 1] & 0x0f) | (((h >> (4 * w)) & 0xf) << 4));
        } else if constexpr (std::is_same_v<B, quant::block_q8_K>) {
            b[i].d = 0.01f;
        } else if constexpr (requires { b[i].d; }) {
            b[i].d = f16::from_float(0.01f);
        }
        if constexpr (requires { b[i].dmin; }) b[i].dmin = f16::from_float(0.01f);
        if constexpr (requires { b[i].m; }) b[i].m = f16::from_float(-0.01f);
    }
}

// ---- weight types: blocks, and the float formats -------------------------------------------
// For each: the element stored, the activation row type, how to fill, quantize x, and dot.
template <class W>
struct wt;

template <quant::quant_block B>
struct wt<B> {
    using act = typename quant::block_traits<B>::dot_partner;
    static constexpr std::int64_t bs = quant::block_traits<B>::block_size;
    static std::string name() { return std::string(type_name(quant::block_traits<B>::id)); }
    static std::size_t row_bytes(std::int64_t k) { return static_cast<std::size_t>(k / bs) * sizeof(B); }
    static std::size_t act_bytes(std::int64_t k) {
        return static_cast<std::size_t>(k / quant::block_traits<act>::block_size) * sizeof(act);
    }
    static void fill(void* w, std::size_t bytes, unsigned seed) { fill_random(static_cast<B*>(w), bytes / sizeof(B), seed); }
    struct fns {
        simd::kernel_fn<qk::quant_kernels<act>::template quantize> quantize;
        simd::kernel_fn<qk::quant_kernels<B>::template vec_dot> dot;
        simd::kernel_fn<qk::quant_kernels<B>::template gemv> gemv;
    };
    static fns get(simd::arch_id a) {
        return {simd::kernel_for<qk::quant_kernels<act>::template quantize>(a),
                simd::kernel_for<qk::quant_kernels<B>::template vec_dot>(a),
                simd::kernel_for<qk::quant_kernels<B>::template gemv>(a)};
    }
    static void rows(const fns& f, std::int64_t k, std::int64_t nrows, const void* w, std::size_t stride, const void* y,
                     float* out) {
        f.gemv(k, nrows, static_cast<const B*>(w), stride, static_cast<const act*>(y), out);
    }
    static void quantize(const fns& f, const float* x, void* y, std::int64_t k) { f.quantize(x, static_cast<act*>(y), k); }
    static float dot(const fns& f, std::int64_t k, const void* w, const void* y) {
        return f.dot(k, static_cast<const B*>(w), static_cast<const act*>(y));
    }
};

template <>
struct wt<float> {
    static std::string name() { return "f32"; }
    static std::size_t row_bytes(std::int64_t k) { return static_cast<std::size_t>(k) * 4; }
    static std::size_t act_bytes(std::int64_t k) { return static_cast<std::size_t>(k) * 4; }
    static void fill(void* w, std::size_t bytes, unsigned seed) {
        const auto v = random_floats(bytes / 4, seed);
        std::memcpy(w, v.data(), bytes);
    }
    struct fns {
        simd::kernel_fn<qk::dot_f32> dot;
    };
    static fns get(simd::arch_id a) { return {simd::kernel_for<qk::dot_f32>(a)}; }
    static void quantize(const fns&, const float* x, void* y, std::int64_t k) {
        std::memcpy(y, x, static_cast<std::size_t>(k) * 4);
    }
    static float dot(const fns& f, std::int64_t k, const void* w, const void* y) {
        return f.dot(static_cast<const float*>(w), static_cast<const float*>(y), static_cast<std::size_t>(k));
    }
};

template <class H>
struct wt_half {
    static std::size_t row_bytes(std::int64_t k) { return static_cast<std::size_t>(k) * 2; }
    static std::size_t act_bytes(std::int64_t k) { return static_cast<std::size_t>(k) * 2; }
    static void fill(void* w, std::size_t bytes, unsigned seed) {
        const auto v = random_floats(bytes / 2, seed);
        auto* h = static_cast<H*>(w);
        for (std::size_t i = 0; i < v.size(); ++i) h[i] = H::from_float(v[i]);
    }
};
template <>
struct wt<f16> : wt_half<f16> {
    static std::string name() { return "f16"; }
    struct fns {
        simd::kernel_fn<qk::f32_to_f16> conv;
        simd::kernel_fn<qk::vec_dot_f16> dot;
    };
    static fns get(simd::arch_id a) { return {simd::kernel_for<qk::f32_to_f16>(a), simd::kernel_for<qk::vec_dot_f16>(a)}; }
    static void quantize(const fns& f, const float* x, void* y, std::int64_t k) {
        f.conv(x, static_cast<f16*>(y), static_cast<std::size_t>(k));
    }
    static float dot(const fns& f, std::int64_t k, const void* w, const void* y) {
        return f.dot(k, static_cast<const f16*>(w), static_cast<const f16*>(y));
    }
};
template <>
struct wt<bf16> : wt_half<bf16> {
    static std::string name() { return "bf16"; }
    struct fns {
        simd::kernel_fn<qk::f32_to_bf16> conv;
        simd::kernel_fn<qk::vec_dot_bf16> dot;
    };
    static fns get(simd::arch_id a) {
        return {simd::kernel_for<qk::f32_to_bf16>(a), simd::kernel_for<qk::vec_dot_bf16>(a)};
    }
    static void quantize(const fns& f, const float* x, void* y, std::int64_t k) {
        f.conv(x, static_cast<bf16*>(y), static_cast<std::size_t>(k));
    }
    static float dot(const fns& f, std::int64_t k, const void* w, const void* y) {
        return f.dot(k, static_cast<const bf16*>(w), static_cast<const bf16*>(y));
    }
};

// ---- a persistent pool: the calling thread is worker 0 ---------------------------------------
class pool {
public:
    explicit pool(int n) : n_(n) {
        for (int t = 1; t < n; ++t) th_.emplace_back([this, t] { loop(t); });
    }
    ~pool() {
        stop_.store(true, std::memory_order_release);
        gen_.fetch_add(1, std::memory_order_acq_rel);
        for (auto& t : th_) t.join();
    }
    pool(const pool&) = delete;
    pool& operator=(const pool&) = delete;
    template <class F>
    void run(F&& f) {
        job_ = std::ref(f);
        done_.store(0, std::memory_order_relaxed);
        gen_.fetch_add(1, std::memory_order_acq_rel);
        f(0);
        while (done_.load(std::memory_order_acquire) != n_ - 1) _mm_pause();
    }
    int size() const { return n_; }

private:
    void loop(int t) {
        int seen = 0;
        for (;;) {
            int g;
            int spins = 0;
            while ((g = gen_.load(std::memory_order_acquire)) == seen) {
                if (++spins < 4096)
                    _mm_pause();
                else
                    std::this_thread::yield();
            }
            seen = g;
            if (stop_.load(std::memory_order_acquire)) return;
            job_(t);
            done_.fetch_add(1, std::memory_order_acq_rel);
        }
    }
    int n_;
    std::vector<std::thread> th_;
    std::function<void(int)> job_;
    std::atomic<int> gen_{0}, done_{0};
    std::atomic<bool> stop_{false};
};

constexpr std::int64_t mv_rows = 4096, mv_cols = 4096;

// One set of weight copies at a time (>= 1 GiB for "stream").
struct weights {
    std::string type;
    std::size_t matrix_bytes = 0, copies = 0;
    std::unique_ptr<aligned_bytes> buf;
};
weights& weights_for(const std::string& type, std::size_t matrix_bytes, bool stream, void (*fill)(void*, std::size_t, unsigned)) {
    static weights w;
    const std::size_t copies = stream ? std::max<std::size_t>(2, ((std::size_t{1} << 30) + matrix_bytes - 1) / matrix_bytes) : 1;
    if (w.type != type || w.copies < copies) {
        w.buf.reset();
        w.type = type;
        w.matrix_bytes = matrix_bytes;
        w.copies = copies;
        w.buf = std::make_unique<aligned_bytes>(matrix_bytes * copies);
        fill(w.buf->get(), matrix_bytes, 1234);
        for (std::size_t c = 1; c < copies; ++c) std::memcpy(w.buf->get() + c * matrix_bytes, w.buf->get(), matrix_bytes);
    }
    return w;
}

template <class W>
void bm_matvec(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    const bool stream = state.range(1) != 0;
    const simd::arch_id a = simd::active_arch();
    const auto f = wt<W>::get(a);
    const std::size_t rb = wt<W>::row_bytes(mv_cols), mb = rb * mv_rows;
    weights& w = weights_for(wt<W>::name(), mb, stream, &wt<W>::fill);
    const std::size_t copies = stream ? w.copies : 1;
    const auto x = random_floats(mv_cols, 7);
    aligned_bytes act(wt<W>::act_bytes(mv_cols));
    std::vector<float> y(mv_rows);
    pool p(threads);
    std::size_t c = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        const unsigned char* m = w.buf->get() + c * mb;
        c = (c + 1) % copies;
        wt<W>::quantize(f, x.data(), act.get(), mv_cols);
        p.run([&](int t) {
            const std::int64_t r0 = mv_rows * t / threads, r1 = mv_rows * (t + 1) / threads;
            if constexpr (requires { wt<W>::rows; }) {
                wt<W>::rows(f, mv_cols, r1 - r0, m + static_cast<std::size_t>(r0) * rb, rb, act.get(),
                            y.data() + r0);
            } else {
                for (std::int64_t r = r0; r < r1; ++r)
                    y[static_cast<std::size_t>(r)] = wt<W>::dot(f, mv_cols, m + static_cast<std::size_t>(r) * rb, act.get());
            }
        });
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double bytes = static_cast<double>(state.iterations()) * static_cast<double>(mb);
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.counters["weight_GB/s"] = bytes / secs / 1e9;
    state.counters["dram_GB/s"] = tb::dram_read_gbs(threads);
    state.counters["dram_ratio"] = bytes / secs / 1e9 / tb::dram_read_gbs(threads);
    state.SetLabel(std::string(simd::name_of(a)));
}

// ---- per-arch kernel throughput ---------------------------------------------------------------
template <class W>
void bm_vec_dot(benchmark::State& state) {
    const auto a = static_cast<simd::arch_id>(state.range(0));
    const auto f = wt<W>::get(a);
    const std::size_t rb = wt<W>::row_bytes(mv_cols);
    aligned_bytes w(rb), act(wt<W>::act_bytes(mv_cols));
    wt<W>::fill(w.get(), rb, 3);
    const auto x = random_floats(mv_cols, 9);
    wt<W>::quantize(f, x.data(), act.get(), mv_cols);
    for (auto _ : state) benchmark::DoNotOptimize(wt<W>::dot(f, mv_cols, w.get(), act.get()));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * rb));
}

// 64 rows of 4096 through gemv (cache-resident): the per-core compute rate of the matvec.
template <class B>
void bm_gemv(benchmark::State& state) {
    const auto a = static_cast<simd::arch_id>(state.range(0));
    const auto f = wt<B>::get(a);
    const std::size_t rb = wt<B>::row_bytes(mv_cols);
    aligned_bytes w(rb * 64), act(wt<B>::act_bytes(mv_cols));
    wt<B>::fill(w.get(), rb * 64, 3);
    const auto x = random_floats(mv_cols, 9);
    wt<B>::quantize(f, x.data(), act.get(), mv_cols);
    float out[64];
    for (auto _ : state) {
        wt<B>::rows(f, mv_cols, 64, w.get(), rb, act.get(), out);
        benchmark::DoNotOptimize(out);
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * rb * 64));
}

template <class B>
void bm_dequantize(benchmark::State& state) {
    const auto a = static_cast<simd::arch_id>(state.range(0));
    const auto k = simd::kernel_for<qk::quant_kernels<B>::template dequantize>(a);
    constexpr std::int64_t n = 65536;
    std::vector<B> x(static_cast<std::size_t>(n / quant::block_traits<B>::block_size));
    fill_random(x.data(), x.size(), 5);
    std::vector<float> y(n);
    for (auto _ : state) {
        k(x.data(), y.data(), n);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4);  // f32 written
}

template <class P>
void bm_quantize_act(benchmark::State& state) {
    const auto a = static_cast<simd::arch_id>(state.range(0));
    const auto k = simd::kernel_for<qk::quant_kernels<P>::template quantize>(a);
    constexpr std::int64_t n = 262144;  // 1 MiB of f32
    const auto x = random_floats(n, 11);
    std::vector<P> y(static_cast<std::size_t>(n / quant::block_traits<P>::block_size));
    for (auto _ : state) {
        k(x.data(), y.data(), n);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4);  // f32 read
}

// The quant layer's reference quantizers (how weights are made), 1 or 2 threads, each
// quantizing its own 1 MiB of f32.
template <class B>
void bm_quantize_ref(benchmark::State& state) {
    const int threads = static_cast<int>(state.range(0));
    constexpr std::int64_t n = 262144;
    std::vector<std::vector<float>> x;
    std::vector<std::vector<B>> y;
    const std::vector<float> imatrix(n, 1.0f);  // (iq2_xxs, iq2_xs, iq1_s need one)
    for (int t = 0; t < threads; ++t) {
        x.push_back(random_floats(n, 20 + static_cast<unsigned>(t)));
        y.emplace_back(static_cast<std::size_t>(n / quant::block_traits<B>::block_size));
    }
    pool p(threads);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : state) {
        p.run([&](int t) {
            quant::quantize_row_ref(x[static_cast<std::size_t>(t)].data(), y[static_cast<std::size_t>(t)].data(), n,
                                    imatrix.data());
        });
        benchmark::ClobberMemory();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double bytes = static_cast<double>(state.iterations()) * static_cast<double>(n) * 4 * threads;
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.counters["f32_GB/s"] = bytes / secs / 1e9;
}

template <class... T>
struct types {};
using block_types = types<quant::block_q4_0, quant::block_q8_0, quant::block_q4_K, quant::block_q6_K, quant::block_q4_1,
                          quant::block_q5_0, quant::block_q5_1, quant::block_q2_K, quant::block_q3_K, quant::block_q5_K,
                          quant::block_iq4_nl, quant::block_iq4_xs, quant::block_tq1_0, quant::block_tq2_0,
                          quant::block_mxfp4, quant::block_nvfp4, quant::block_q1_0, quant::block_q2_0,
                          quant::block_iq2_xxs, quant::block_iq2_xs, quant::block_iq2_s, quant::block_iq3_xxs,
                          quant::block_iq3_s, quant::block_iq1_s, quant::block_iq1_m>;

template <class... B>
void register_blocks(types<B...>) {
    auto one = []<class T>() {
        const std::string tn = wt<T>::name();
        for (auto a : simd::available_archs()) {
            const std::string an(simd::name_of(a));
            benchmark::RegisterBenchmark(("dequantize/" + tn + "/" + an).c_str(), bm_dequantize<T>)
                ->Arg(static_cast<std::int64_t>(a));
            benchmark::RegisterBenchmark(("vec_dot/" + tn + "/" + an).c_str(), bm_vec_dot<T>)->Arg(static_cast<std::int64_t>(a));
        }
        for (int t : {1, 2})
            benchmark::RegisterBenchmark(("quantize_ref/" + tn).c_str(), bm_quantize_ref<T>)
                ->Arg(t)->ArgName("threads")->UseRealTime()->MinTime(0.2);
    };
    (one.template operator()<B>(), ...);
}

template <class... W>
void register_matvec(types<W...>) {
    auto one = []<class T>() {
        for (int t : {1, 2})
            for (int s : {0, 1})
                benchmark::RegisterBenchmark(("matvec/" + wt<T>::name() + "/threads:" + std::to_string(t) +
                                              (s ? "/stream" : "/hot")).c_str(),
                                             bm_matvec<T>)
                    ->Args({t, s})->UseRealTime()->MinTime(0.3)->Unit(benchmark::kMillisecond);
    };
    (one.template operator()<W>(), ...);
}

void register_all() {
    for (auto a : simd::available_archs()) {
        const std::string an(simd::name_of(a));
        const auto arg = static_cast<std::int64_t>(a);
        benchmark::RegisterBenchmark(("quantize_act/q8_0/" + an).c_str(), bm_quantize_act<quant::block_q8_0>)->Arg(arg);
        benchmark::RegisterBenchmark(("quantize_act/q8_1/" + an).c_str(), bm_quantize_act<quant::block_q8_1>)->Arg(arg);
        benchmark::RegisterBenchmark(("quantize_act/q8_K/" + an).c_str(), bm_quantize_act<quant::block_q8_K>)->Arg(arg);
        benchmark::RegisterBenchmark(("quantize_simd/q4_0/" + an).c_str(), bm_quantize_act<quant::block_q4_0>)->Arg(arg);
        benchmark::RegisterBenchmark(("gemv64/q4_0/" + an).c_str(), bm_gemv<quant::block_q4_0>)->Arg(arg);
        benchmark::RegisterBenchmark(("vec_dot/f32/" + an).c_str(), bm_vec_dot<float>)->Arg(arg);
        benchmark::RegisterBenchmark(("vec_dot/f16/" + an).c_str(), bm_vec_dot<f16>)->Arg(arg);
        benchmark::RegisterBenchmark(("vec_dot/bf16/" + an).c_str(), bm_vec_dot<bf16>)->Arg(arg);
    }
    register_blocks(block_types{});
    register_matvec(types<quant::block_q4_0, quant::block_q8_0, quant::block_q4_K, quant::block_q6_K, f16, float, bf16,
                          quant::block_q4_1, quant::block_q5_0, quant::block_q5_1, quant::block_q2_K, quant::block_q3_K,
                          quant::block_q5_K, quant::block_iq4_nl, quant::block_iq4_xs, quant::block_tq1_0,
                          quant::block_tq2_0, quant::block_mxfp4, quant::block_nvfp4, quant::block_q1_0,
                          quant::block_q2_0, quant::block_iq2_xxs, quant::block_iq2_xs, quant::block_iq2_s,
                          quant::block_iq3_xxs, quant::block_iq3_s, quant::block_iq1_s, quant::block_iq1_m>{});
}

const bool registered = (register_all(), true);

}  // namespace
