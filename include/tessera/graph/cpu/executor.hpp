// cpu_executor: computes a graph on the CPU with a persistent thread pool.
//
// compute(g): (1) plan — check that every node is supported and has memory, and size
// the work buffer (per-thread scratch plus a shared area, the largest any node needs),
// which is grown only when a graph needs more, so steady-state computes allocate
// nothing; (2) run — all threads walk the nodes in order, each computing its share of
// rows, with a barrier between nodes. Thread 0 polls the abort callback after each
// node; when it says stop, every thread leaves at the next barrier and compute throws
// tessera::error(errc::aborted) naming how far it got.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/cpu/ops.hpp"
#include "tessera/graph/cpu/thread_pool.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

struct compute_plan {
    std::size_t per_thread = 0;  // scratch bytes per thread
    std::size_t shared = 0;      // scratch bytes shared by a node's threads
    int n_threads = 1;
    std::size_t work_size() const noexcept { return shared + per_thread * static_cast<std::size_t>(n_threads); }
};

class cpu_executor {
public:
    explicit cpu_executor(int n_threads = 1) : pool_(n_threads) {}

    int n_threads() const noexcept { return pool_.size(); }
    void set_n_threads(int n) { pool_.resize(n); }
    // Called by thread 0 after each node; returning true stops the compute.
    void set_abort_callback(std::function<bool()> cb) { abort_ = std::move(cb); }

    // Checks g and sizes its scratch; throws tessera::error for an unsupported node or a
    // tensor without memory.
    compute_plan plan(const cgraph& g) const {
        compute_plan p;
        p.n_threads = pool_.size();
        for (const node* n : g.nodes()) {
            if (const std::string why = cpu::unsupported_reason(*n); !why.empty())
                fail(errc::unsupported, "cpu: node '" + n->name + "' (" + cgraph::op_label(*n) + " " + n->lay.to_string() +
                                            "): " + why);
            if (!n->bytes() && n->lay.nelements() > 0)
                fail(errc::invalid_argument, "cpu: node '" + n->name + "' has no memory; allocate the graph first (graph::allocate)");
            for (const node* s : n->src)
                if (s && !s->bytes() && s->lay.nelements() > 0)
                    fail(errc::invalid_argument, "cpu: tensor '" + s->name + "' has no memory; allocate the graph first");
            const auto need = cpu::scratch_for(*n);
            p.per_thread = std::max(p.per_thread, need.per_thread);
            p.shared = std::max(p.shared, need.shared);
        }
        return p;
    }

    void compute(const cgraph& g) {
        const compute_plan p = plan(g);
        reserve(p.work_size());
        const cpu::kernel_set ks = cpu::kernel_set::for_arch(simd::active_arch());
        const auto& nodes = g.nodes();
        // Index of the node after whose barrier every thread stops (none: SIZE_MAX). It is
        // set before that node's barrier and read after it, so a fast thread that stops
        // at a later node can never make a slow thread leave one node early.
        constexpr std::size_t no_stop = static_cast<std::size_t>(-1);
        std::atomic<std::size_t> stop_at{no_stop};
        auto request_stop = [&stop_at](std::size_t i) {
            std::size_t cur = stop_at.load(std::memory_order_relaxed);
            while (i < cur && !stop_at.compare_exchange_weak(cur, i, std::memory_order_relaxed)) {}
        };
        std::atomic<std::size_t> done{0};
        std::byte* work = work_.get();
        std::mutex err_mu;
        std::exception_ptr err;
        pool_.run([&](int ith, int nth) {
            cpu::exec_params ep;
            ep.ith = ith;
            ep.nth = nth;
            ep.k = &ks;
            ep.shared = work;
            ep.scratch = work + p.shared + p.per_thread * static_cast<std::size_t>(ith);
            ep.barrier_fn = [](void* c) { static_cast<thread_pool*>(c)->barrier(); };
            ep.barrier_ctx = &pool_;
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                const node& n = *nodes[i];
                if (cpu::is_noop(n.op)) continue;
                try {
                    cpu::compute_node(n, ep);
                } catch (...) {  // never leave the others waiting at the barrier
                    std::lock_guard<std::mutex> lk(err_mu);
                    if (!err) err = std::current_exception();
                    request_stop(i);
                }
                if (ith == 0) {
                    done.store(i + 1, std::memory_order_relaxed);
                    if (abort_ && i + 1 < nodes.size() && abort_()) request_stop(i);
                }
                pool_.barrier();
                if (stop_at.load(std::memory_order_relaxed) <= i) return;
            }
        });
        if (err) std::rethrow_exception(err);
        if (stop_at.load() != no_stop)
            fail(errc::aborted, "cpu: compute aborted by the callback after node " + std::to_string(done.load()) + " of " +
                                    std::to_string(nodes.size()));
    }

    std::size_t work_size() const noexcept { return work_cap_; }

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

// Computes g with a one-off executor of n threads (convenience; reuse a cpu_executor
// to keep the workers alive across computes).
inline void compute(const cgraph& g, int n_threads = 1) {
    cpu_executor ex(n_threads);
    ex.compute(g);
}

}  // namespace graph
TESSERA_END_NAMESPACE
