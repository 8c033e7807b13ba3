// The CPU executor: the one loop that computes a graph's nodes on the CPU with a
// persistent thread pool. The CPU backend (backend/cpu.hpp) computes through it, and so
// does the convenience cpu::compute(g, n_threads).
//
// plan(nodes): refuses the graph before anything runs (an op the CPU does not compute,
// a tensor without memory, and whatever the caller's per-tensor check refuses) and sizes
// the work buffer: per-thread scratch plus an area shared by a node's threads, the
// largest any node needs. run(nodes, plan): grows the work buffer only when a graph
// needs more (steady-state computes allocate nothing), then every thread walks the
// nodes in order, computing its share, with a barrier between nodes. Thread 0 polls
// the abort callback after each node; when it says stop, every thread leaves at the
// next barrier and run throws tessera::error(errc::aborted) naming how far it got.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>

#include "tessera/backend/common.hpp"
#include "tessera/backend/cpu/ops.hpp"
#include "tessera/backend/cpu/thread_pool.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {

struct compute_plan {
    std::size_t per_thread = 0;  // scratch bytes per thread
    std::size_t shared = 0;      // scratch bytes shared by a node's threads
    int n_threads = 1;
    std::size_t work_size() const noexcept { return shared + per_thread * static_cast<std::size_t>(n_threads); }
};

class executor {
public:
    // Called for every tensor a computed node reads or writes, with the node (the
    // backend's memory checks: can the CPU read that buffer?). May throw.
    using tensor_check = std::function<void(const node& tensor, const node& user)>;

    explicit executor(int n_threads = 1) : pool_(n_threads) {}

    int n_threads() const noexcept { return pool_.size(); }
    void set_n_threads(int n) { pool_.resize(n); }
    // Called by thread 0 after each node; returning true stops the compute.
    void set_abort_callback(std::function<bool()> cb) { abort_ = std::move(cb); }
    // Bytes of the work buffer now held (grown by run, never shrunk).
    std::size_t work_size() const noexcept { return work_cap_; }

    compute_plan plan(std::span<node* const> nodes, const tensor_check& check = {}) const {
        compute_plan p;
        p.n_threads = pool_.size();
        const auto readable = [&check](const node& t, const node& user) {
            if (!t.bytes() && t.lay.nelements() > 0)
                fail(errc::invalid_argument, "CPU: tensor " + backend::detail::tensor_desc(t) + " used by '" + user.name +
                                                 "' has no memory; allocate the graph first");
            if (check) check(t, user);
        };
        for (const node* n : nodes) {
            if (const std::string why = unsupported_reason(*n); !why.empty())
                fail(errc::unsupported, "CPU: node '" + n->name + "' (" + graph::cgraph::op_label(*n) + " " +
                                            n->lay.to_string() + "): " + why);
            if (is_noop(n->op)) continue;
            readable(*n, *n);
            for (const node* src : n->src)
                if (src) readable(*src, *n);
            const auto need = scratch_for(*n);
            p.per_thread = std::max(p.per_thread, need.per_thread);
            p.shared = std::max(p.shared, need.shared);
        }
        return p;
    }

    void run(std::span<node* const> nodes, const compute_plan& p) {
        reserve(p.shared + p.per_thread * static_cast<std::size_t>(pool_.size()));
        const kernel_set ks = kernel_set::for_arch(simd::active_arch());
        // The node after which every thread leaves: set before that node's barrier and
        // read after it, so a thread that is already further on cannot make a slower one
        // leave a node early (which would leave the others waiting at the barrier).
        constexpr std::size_t never = SIZE_MAX;
        std::atomic<std::size_t> stop_at{never};
        auto request_stop = [&stop_at](std::size_t i) {
            std::size_t cur = stop_at.load(std::memory_order_relaxed);
            while (i < cur && !stop_at.compare_exchange_weak(cur, i, std::memory_order_relaxed)) {
            }
        };
        std::byte* work = work_.get();
        std::mutex err_mu;
        std::exception_ptr err;
        pool_.run([&](int ith, int nth) {
            exec_params ep;
            ep.ith = ith;
            ep.nth = nth;
            ep.k = &ks;
            ep.shared = work;
            ep.scratch = work + p.shared + p.per_thread * static_cast<std::size_t>(ith);
            ep.barrier_fn = [](void* c) { static_cast<thread_pool*>(c)->barrier(); };
            ep.barrier_ctx = &pool_;
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                const node& n = *nodes[i];
                if (is_noop(n.op)) continue;
                try {
                    compute_node(n, ep);
                } catch (...) {  // never leave the others waiting at the barrier
                    std::lock_guard<std::mutex> lk(err_mu);
                    if (!err) err = std::current_exception();
                    request_stop(i);
                }
                if (ith == 0 && abort_ && i + 1 < nodes.size() && abort_()) request_stop(i);
                pool_.barrier();
                if (stop_at.load(std::memory_order_relaxed) <= i) return;
            }
        });
        if (err) std::rethrow_exception(err);
        if (const std::size_t at = stop_at.load(); at != never)
            fail(errc::aborted, "CPU: compute aborted by the callback after node " + std::to_string(at + 1) + " of " +
                                    std::to_string(nodes.size()));
    }

    compute_plan plan(const graph::cgraph& g) const { return plan(std::span<node* const>(g.nodes())); }

    // plan + run.
    void compute(std::span<node* const> nodes) { run(nodes, plan(nodes)); }
    void compute(const graph::cgraph& g) { compute(std::span<node* const>(g.nodes())); }

private:
    void reserve(std::size_t bytes) {
        if (bytes <= work_cap_ && work_) return;
        const std::size_t cap = std::max<std::size_t>(bytes, 64);
        work_.reset(static_cast<std::byte*>(::operator new(cap, std::align_val_t(64))));
        work_cap_ = cap;
    }
    struct del {
        void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t(64)); }
    };

    thread_pool pool_;
    std::function<bool()> abort_;
    std::unique_ptr<std::byte, del> work_;
    std::size_t work_cap_ = 0;
};

// Computes g with a one-off executor of n threads (convenience for tensors in host
// memory; keep an executor, or a CPU backend, to keep the workers alive across computes).
inline void compute(const graph::cgraph& g, int n_threads = 1) {
    executor ex(n_threads);
    ex.compute(g);
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
