// thread_pool: persistent workers for the CPU executor. run(f) calls f(ith, nth) on
// every thread (the caller is thread 0) and returns when all are done; inside f,
// barrier() synchronizes all nth threads. Workers spin briefly for new work and then
// sleep, so a pool costs nothing while idle and no thread is created per compute.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {

class thread_pool {
public:
    explicit thread_pool(int n_threads = 1) { resize(n_threads); }
    ~thread_pool() { stop(); }
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;

    int size() const noexcept { return n_; }

    // Changes the thread count (joins the old workers, starts new ones).
    void resize(int n_threads) {
        if (n_threads < 1 || n_threads > 512)
            fail(errc::invalid_argument, "thread_pool: thread count " + std::to_string(n_threads) + " outside 1..512");
        if (n_threads == n_ && !workers_.empty()) return;
        stop();
        n_ = n_threads;
        quit_.store(false);
        for (int i = 1; i < n_; ++i) workers_.emplace_back([this, i] { worker(i); });
    }

    // Calls f(ith, nth) on all threads; rethrows the first exception any of them threw.
    template <class F>
    void run(F&& f) {
        auto call = [](void* ctx, int ith, int nth) { (*static_cast<std::remove_reference_t<F>*>(ctx))(ith, nth); };
        task_ = call;
        task_ctx_ = &f;
        error_ = nullptr;
        if (n_ > 1) {
            pending_.store(n_ - 1, std::memory_order_relaxed);
            {
                std::lock_guard<std::mutex> lk(mu_);
                gen_.fetch_add(1, std::memory_order_release);
            }
            cv_.notify_all();
        }
        execute(0);
        if (n_ > 1) {
            for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) pause(spins);
        }
        if (error_) std::rethrow_exception(error_);
    }

    // All threads of the current run() wait here for each other.
    void barrier() {
        if (n_ == 1) return;
        const unsigned phase = barrier_phase_.load(std::memory_order_acquire);
        if (barrier_count_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
            barrier_count_.store(0, std::memory_order_relaxed);
            barrier_phase_.fetch_add(1, std::memory_order_release);
            return;
        }
        for (int spins = 0; barrier_phase_.load(std::memory_order_acquire) == phase; ++spins) pause(spins);
    }

private:
    static void pause(int spins) {
        if (spins < 2048) {
#if defined(TESSERA_X86)
            __builtin_ia32_pause();
#elif defined(TESSERA_AARCH64)
            __asm__ __volatile__("yield");
#endif
        } else {
            std::this_thread::yield();
        }
    }

    void execute(int ith) {
        try {
            task_(task_ctx_, ith, n_);
        } catch (...) {
            std::lock_guard<std::mutex> lk(err_mu_);
            if (!error_) error_ = std::current_exception();
        }
    }

    void worker(int ith) {
        std::uint64_t seen = 0;
        for (;;) {
            // spin a little for the next task, then sleep
            std::uint64_t g = gen_.load(std::memory_order_acquire);
            for (int spins = 0; g == seen && spins < 20000 && !quit_.load(std::memory_order_relaxed); ++spins) {
                pause(spins < 2048 ? spins : 0);
                g = gen_.load(std::memory_order_acquire);
            }
            if (g == seen) {
                std::unique_lock<std::mutex> lk(mu_);
                cv_.wait(lk, [&] { return gen_.load(std::memory_order_acquire) != seen || quit_.load(); });
                g = gen_.load(std::memory_order_acquire);
            }
            if (quit_.load()) return;
            seen = g;
            execute(ith);
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }

    void stop() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            quit_.store(true);
        }
        cv_.notify_all();
        for (auto& t : workers_) t.join();
        workers_.clear();
    }

    int n_ = 0;
    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<std::uint64_t> gen_{0};
    std::atomic<int> pending_{0};
    std::atomic<bool> quit_{false};
    alignas(64) std::atomic<int> barrier_count_{0};
    alignas(64) std::atomic<unsigned> barrier_phase_{0};
    void (*task_)(void*, int, int) = nullptr;
    void* task_ctx_ = nullptr;
    std::mutex err_mu_;
    std::exception_ptr error_;
};

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
