// The machine's own limits, measured in the benchmark process itself so that every
// benchmark can report a ratio to them: DRAM read bandwidth (streaming well past the
// L3 cache), cache-resident read bandwidth, copy bandwidth at a given footprint, and the
// f32 FMA peak.
//
// The loops are compiled for the widest ISA this CPU has through function target
// attributes (static functions, so nothing wide leaks into other code).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/simd/cpu.hpp"

namespace tessera_bench {

// 1 GiB streamed per measurement: about 4x the 266 MB L3 of the machines here.
inline constexpr std::size_t dram_bytes = std::size_t{1} << 30;

namespace detail {

__attribute__((target("avx512f"))) static inline double read_avx512(const float* p, std::size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t i = 0; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    alignas(64) float t[16];
    _mm512_store_ps(t, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    double s = 0;
    for (float v : t) s += static_cast<double>(v);
    return s;
}

__attribute__((target("avx2"))) static inline double read_avx2(const float* p, std::size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t i = 0; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    }
    alignas(32) float t[8];
    _mm256_store_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    double s = 0;
    for (float v : t) s += static_cast<double>(v);
    return s;
}

static inline double read_sse(const float* p, std::size_t n) {
    __m128 a0 = _mm_setzero_ps(), a1 = a0;
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
        a0 = _mm_add_ps(a0, _mm_load_ps(p + i));
        a1 = _mm_add_ps(a1, _mm_load_ps(p + i + 4));
    }
    alignas(16) float t[4];
    _mm_store_ps(t, _mm_add_ps(a0, a1));
    return static_cast<double>(t[0] + t[1] + t[2] + t[3]);
}

// Sums n floats (n a multiple of 64, p 64-byte aligned) with the widest loads available.
inline double read_sum(const float* p, std::size_t n) {
    const auto& f = tessera::simd::cpu();
    if (f.avx512f && f.os_avx512) return read_avx512(p, n);
    if (f.avx2 && f.os_avx) return read_avx2(p, n);
    return read_sse(p, n);
}

// dst[i] = src[i] for n floats (n a multiple of 64, both 64-byte aligned), ordinary
// stores: what an op that reads one tensor and writes another of the same size can do
// at best.
__attribute__((target("avx512f"))) static inline void copy_avx512(const float* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i + 64 <= n; i += 64)
        for (std::size_t j = 0; j < 64; j += 16) _mm512_store_ps(dst + i + j, _mm512_load_ps(src + i + j));
}
__attribute__((target("avx2"))) static inline void copy_avx2(const float* src, float* dst, std::size_t n) {
    for (std::size_t i = 0; i + 32 <= n; i += 32)
        for (std::size_t j = 0; j < 32; j += 8) _mm256_store_ps(dst + i + j, _mm256_load_ps(src + i + j));
}
inline void copy_floats(const float* src, float* dst, std::size_t n) {
    const auto& f = tessera::simd::cpu();
    if (f.avx512f && f.os_avx512) return copy_avx512(src, dst, n);
    if (f.avx2 && f.os_avx) return copy_avx2(src, dst, n);
    for (std::size_t i = 0; i + 4 <= n; i += 4) _mm_store_ps(dst + i, _mm_load_ps(src + i));
}

// `iters` rounds of 12 independent FMA chains; returns the flops done.
__attribute__((target("avx512f,fma"))) static inline double fma_avx512(std::int64_t iters) {
    __m512 a[12];
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_ps(static_cast<float>(k));
    for (std::int64_t i = 0; i < iters; ++i)
        for (int k = 0; k < 12; ++k) a[k] = _mm512_fmadd_ps(a[k], m, c);
    __m512 s = a[0];
    for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
    alignas(64) float t[16];
    _mm512_store_ps(t, s);
    volatile float sink = t[0];
    (void)sink;
    return static_cast<double>(iters) * 12 * 16 * 2;
}

__attribute__((target("avx2,fma"))) static inline double fma_avx2(std::int64_t iters) {
    __m256 a[12];
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < 12; ++k) a[k] = _mm256_set1_ps(static_cast<float>(k));
    for (std::int64_t i = 0; i < iters; ++i)
        for (int k = 0; k < 12; ++k) a[k] = _mm256_fmadd_ps(a[k], m, c);
    __m256 s = a[0];
    for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, a[k]);
    alignas(32) float t[8];
    _mm256_store_ps(t, s);
    volatile float sink = t[0];
    (void)sink;
    return static_cast<double>(iters) * 12 * 8 * 2;
}

inline double fma_flops(std::int64_t iters) {
    const auto& f = tessera::simd::cpu();
    if (f.avx512f && f.os_avx512 && f.fma) return fma_avx512(iters);
    if (f.avx2 && f.fma && f.os_avx) return fma_avx2(iters);
    return 0;  // no FMA unit: the peak is reported as 0
}

struct aligned_free {
    void operator()(float* p) const noexcept { std::free(p); }
};
using aligned_floats = std::unique_ptr<float, aligned_free>;

inline aligned_floats alloc_floats(std::size_t n) {
    auto* p = static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
    if (!p) throw std::bad_alloc();
    for (std::size_t i = 0; i < n; ++i) p[i] = 1.0f;  // touch every page
    return aligned_floats(p);
}

// Runs f(thread_index) on `threads` threads at once; returns the wall time in seconds.
template <class F>
double timed_parallel(int threads, F&& f) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    std::chrono::steady_clock::time_point t0;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            f(t);
        });
    while (ready.load() != threads) std::this_thread::yield();
    t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace detail

// Read bandwidth in GB/s for `threads` threads each streaming its share of `bytes`
// (best of `reps`). With bytes well past the L3 this is DRAM; small sizes give the
// cache-resident figure.
inline double read_bandwidth_gbs(int threads, std::size_t bytes, int reps = 3) {
    const std::size_t n = bytes / sizeof(float) / 64 * 64;
    auto buf = detail::alloc_floats(n);
    const std::size_t per = n / static_cast<std::size_t>(threads) / 64 * 64;
    // small buffers are re-read many times so the timing is not dominated by start-up
    const int rounds = static_cast<int>(std::max<std::size_t>(1, (std::size_t{256} << 20) / std::max<std::size_t>(bytes, 1)));
    double best = 0;
    std::atomic<double> sink{0};
    for (int r = 0; r < reps; ++r) {
        const double s = detail::timed_parallel(threads, [&](int t) {
            double acc = 0;
            for (int k = 0; k < rounds; ++k) acc += detail::read_sum(buf.get() + static_cast<std::size_t>(t) * per, per);
            sink.store(acc, std::memory_order_relaxed);
        });
        best = std::max(best, static_cast<double>(per * sizeof(float)) * threads * rounds / s / 1e9);
    }
    return best;
}

// Copy bandwidth in GB/s (bytes read + bytes written) for `threads` threads each copying
// its share of a buffer of bytes/2 into another (best of `reps`): the limit of an op that
// reads and writes `bytes` in all, at that footprint (cache-resident when small).
inline double copy_bandwidth_gbs(int threads, std::size_t bytes, int reps = 3) {
    const std::size_t n = std::max<std::size_t>(bytes / 2 / sizeof(float) / 64 * 64, 64 * static_cast<std::size_t>(threads));
    auto src = detail::alloc_floats(n);
    auto dst = detail::alloc_floats(n);
    const std::size_t per = n / static_cast<std::size_t>(threads) / 64 * 64;
    const int rounds = static_cast<int>(std::max<std::size_t>(1, (std::size_t{256} << 20) / std::max<std::size_t>(bytes, 1)));
    double best = 0;
    for (int r = 0; r < reps; ++r) {
        const double s = detail::timed_parallel(threads, [&](int t) {
            for (int k = 0; k < rounds; ++k)
                detail::copy_floats(src.get() + static_cast<std::size_t>(t) * per, dst.get() + static_cast<std::size_t>(t) * per, per);
        });
        best = std::max(best, 2.0 * static_cast<double>(per * sizeof(float)) * threads * rounds / s / 1e9);
    }
    return best;
}

// f32 FMA peak in GFLOP/s with `threads` threads.
inline double fma_peak_gflops_measure(int threads) {
    const std::int64_t iters = 20'000'000;
    double best = 0;
    for (int r = 0; r < 3; ++r) {
        std::atomic<double> flops{0};
        const double s = detail::timed_parallel(threads, [&](int) {
            const double f = detail::fma_flops(iters);
            double cur = flops.load();
            while (!flops.compare_exchange_weak(cur, cur + f)) {}
        });
        best = std::max(best, flops.load() / s / 1e9);
    }
    return best;
}

// Cached per process: the first call measures (about a second each).
inline double dram_read_gbs(int threads) {
    static double cache[3] = {0, 0, 0};
    const int k = std::clamp(threads, 1, 2);
    if (cache[k] == 0) cache[k] = read_bandwidth_gbs(k, dram_bytes);
    return cache[k];
}
// Cached per process and (threads, bytes).
inline double copy_gbs(int threads, std::size_t bytes) {
    static std::map<std::pair<int, std::size_t>, double> cache;
    double& v = cache[{threads, bytes}];
    if (v == 0) v = copy_bandwidth_gbs(threads, bytes);
    return v;
}
inline double fma_peak_gflops(int threads) {
    static double cache[3] = {0, 0, 0};
    const int k = std::clamp(threads, 1, 2);
    if (cache[k] == 0) cache[k] = fma_peak_gflops_measure(k);
    return cache[k];
}

}  // namespace tessera_bench
