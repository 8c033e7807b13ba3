// The CPU backend: a full model of every backend concept.
//
//   cpu_buffer_type  "CPU": host memory, alignment 32 (ggml's TENSOR_ALIGNMENT)
//   cpu_buffer       owned aligned memory, or "CPU_Mapped": user memory wrapped without
//                    a copy (an mmap'ed GGUF's tensor data), never freed by the buffer
//   cpu_device       "CPU": description from /proc/cpuinfo, memory from sysconf, caps
//                    {buffer_from_host_ptr}; supports_op = what the CPU op table
//                    computes (backend/cpu/ops.hpp)
//   cpu::executor    the one loop that computes a graph's nodes on the CPU (plan, run;
//                    a persistent thread pool; the op bodies of backend/cpu/ops*.hpp)
//   cpu_backend      the stream: n_threads, abort callback, graph plans; computes
//                    through its executor
//   cpu_reg          devices CPU and CPU_REPACK (below; its buffer is backend/cpu/repack.hpp), an ACCEL device whose
//                    buffer type is also the CPU device's extra buffer type), proc
//                    addresses "set_n_threads", "set_abort_callback"
#pragma once

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "tessera/backend/any.hpp"
#include "tessera/backend/common.hpp"
#include "tessera/backend/cpu/buffer.hpp"
#include "tessera/backend/cpu/ops.hpp"
#include "tessera/backend/cpu/repack.hpp"
#include "tessera/backend/cpu/thread_pool.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {

// ---- the executor ---------------------------------------------------------------------------
// The one loop that computes a graph's nodes on the CPU with a persistent thread pool; the
// CPU backend below computes through it, and so does the convenience cpu::compute(g, n).
//
// plan(nodes): refuses the graph before anything runs (an op the CPU does not compute, a
// tensor without memory, and whatever the caller's per-tensor check refuses) and sizes the
// work buffer: per-thread scratch plus an area shared by a node's threads, the largest
// any node needs. run(nodes, plan): grows the work buffer only when a graph needs more
// (steady-state computes allocate nothing), then every thread walks the nodes in order,
// computing its share, with a barrier between nodes. Thread 0 polls the abort callback
// after each node; when it says stop, every thread leaves at the next barrier and run
// throws tessera::error(errc::aborted) naming how far it got.
//
// Solo nodes: an element-wise or row-wise node whose elements (its own and its sources')
// number at most solo_cost() runs on thread 0 alone, whole (nth = 1): at two threads a
// barrier costs about as much as computing 4096 elements of such an op. Consecutive solo
// nodes need no barrier between them (thread 0 computes them in order); a barrier stands
// only where a node computed by several threads meets another node. The decision is made
// once per run from the nodes, so every thread calls the same barriers. solo_cost 0 splits
// every node over all threads, as before (the op tests use it to keep the split paths
// covered at two threads).

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
    // Largest cost (elements of the node and its sources) a light node runs alone at.
    static constexpr std::int64_t default_solo_cost = 4096;
    std::int64_t solo_cost() const noexcept { return solo_cost_; }
    void set_solo_cost(std::int64_t elements) noexcept { solo_cost_ = elements < 0 ? 0 : elements; }
    // Whether run() computes n on thread 0 alone (with more than one thread).
    bool solo(const node& n) const noexcept { return pool_.size() > 1 && light(n) && cost(n) <= solo_cost_; }
    // Barriers the last run() placed between nodes (for the benchmarks and tests).
    std::size_t last_barriers() const noexcept { return last_barriers_; }

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
        // Per node: 1 = solo, 2 = a barrier after it (before the next computed node), so
        // that every thread meets the same barriers. The vector keeps its capacity.
        constexpr std::uint8_t is_solo = 1, sync_after = 2;
        flags_.assign(nodes.size(), 0);
        std::size_t prev = SIZE_MAX, barriers = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (is_noop(nodes[i]->op)) continue;
            if (solo(*nodes[i])) flags_[i] = is_solo;
            if (prev != SIZE_MAX && (!(flags_[prev] & is_solo) || !(flags_[i] & is_solo))) {
                flags_[prev] |= sync_after;
                ++barriers;
            }
            prev = i;
        }
        if (pool_.size() == 1) barriers = 0;
        last_barriers_ = barriers;
        const std::uint8_t* flags = flags_.data();
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
            exec_params alone = ep;  // a solo node: thread 0, the whole node, no barriers inside
            alone.nth = 1;
            alone.barrier_fn = nullptr;
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                const node& n = *nodes[i];
                if (is_noop(n.op)) continue;
                const bool by_me = !(flags[i] & is_solo) || ith == 0;
                // after a stop inside a run of solo nodes thread 0 computes nothing more and
                // goes on to the next barrier, where the others wait
                if (by_me && stop_at.load(std::memory_order_relaxed) == never) {
                    try {
                        compute_node(n, flags[i] & is_solo ? alone : ep);
                    } catch (...) {  // never leave the others waiting at the barrier
                        std::lock_guard<std::mutex> lk(err_mu);
                        if (!err) err = std::current_exception();
                        request_stop(i);
                    }
                    if (ith == 0 && abort_ && i + 1 < nodes.size() && abort_()) request_stop(i);
                }
                if (flags[i] & sync_after) {
                    pool_.barrier();
                    if (stop_at.load(std::memory_order_relaxed) <= i) return;
                }
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
    // Ops whose work is proportional to the elements they read and write (the rest, matrix
    // products, convolutions, attention, scans, custom callbacks, always split).
    static bool light(const node& n) noexcept {
        switch (n.op) {
            case op_kind::dup: case op_kind::add: case op_kind::add1: case op_kind::sub: case op_kind::mul:
            case op_kind::div: case op_kind::sqr: case op_kind::sqrt: case op_kind::log: case op_kind::sin:
            case op_kind::cos: case op_kind::scale: case op_kind::cpy: case op_kind::cont: case op_kind::norm:
            case op_kind::rms_norm: case op_kind::l2_norm: case op_kind::get_rows: case op_kind::set_rows:
            case op_kind::soft_max: case op_kind::rope: case op_kind::clamp: case op_kind::leaky_relu:
            case op_kind::unary: case op_kind::glu: case op_kind::diag_mask_inf: case op_kind::diag_mask_zero:
            case op_kind::fill: case op_kind::arange: case op_kind::sum_rows: case op_kind::mean:
            case op_kind::repeat: case op_kind::concat: case op_kind::pad:
                return true;
            default:
                return false;
        }
    }
    // Elements the node writes and reads (get_rows reads its rows, not the whole table).
    static std::int64_t cost(const node& n) noexcept {
        std::int64_t c = n.lay.nelements();
        for (std::size_t k = 0; k < n.src.size(); ++k)
            if (n.src[k] && !(n.op == op_kind::get_rows && k == 0)) c += n.src[k]->lay.nelements();
        return c;
    }

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
    std::int64_t solo_cost_ = default_solo_cost;
    std::vector<std::uint8_t> flags_;
    std::size_t last_barriers_ = 0;
};

// Computes g with a one-off executor of n threads (convenience for tensors in host
// memory; keep an executor, or a CPU backend, to keep the workers alive across computes).
inline void compute(const graph::cgraph& g, int n_threads = 1) {
    executor ex(n_threads);
    ex.compute(g);
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE

TESSERA_BEGIN_NAMESPACE
namespace backend {

any_device cpu_device();
any_buffer_type cpu_buffer_type();
any_device repack_device();  // below
any_buffer_type repack_buffer_type();

// ---- buffer type --------------------------------------------------------------------------

struct cpu_buffer_type_model {
    std::string_view name() const noexcept { return "CPU"; }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(cpu_buffer(n)); }
    std::size_t alignment() const noexcept { return cpu_alignment; }
    std::size_t max_size() const noexcept { return static_cast<std::size_t>(PTRDIFF_MAX); }
    bool is_host() const noexcept { return true; }
    any_device device() const { return cpu_device(); }
};
static_assert(buffer_type<cpu_buffer_type_model>);

// The CPU buffer type (one shared instance).
inline any_buffer_type cpu_buffer_type() {
    static const any_buffer_type t{cpu_buffer_type_model{}};
    return t;
}

// A buffer over user memory (zero copy): ptr must be aligned to cpu_alignment.
inline any_buffer cpu_buffer_from_ptr(void* ptr, std::size_t size) {
    if (!ptr && size) fail(errc::invalid_argument, "cpu_buffer_from_ptr: null pointer for " + std::to_string(size) + " bytes");
    if (reinterpret_cast<std::uintptr_t>(ptr) % cpu_alignment != 0)
        fail(errc::invalid_argument, "cpu_buffer_from_ptr: pointer is not aligned to " + std::to_string(cpu_alignment) + " bytes");
    return any_buffer(cpu_buffer(ptr, size), cpu_buffer_type());
}

// ---- backend (stream) ---------------------------------------------------------------------

class cpu_backend {
public:
    explicit cpu_backend(int n_threads = 4) : ex_(std::make_unique<cpu::executor>(check_threads(n_threads))) {}
    // A CPU stream created by another device that computes on the CPU (CPU_REPACK).
    cpu_backend(int n_threads, any_device dev) : cpu_backend(n_threads) { dev_ = std::move(dev); }

    static constexpr backend::guid cpu_guid = {0xaa, 0x67, 0xc7, 0x43, 0x96, 0xe6, 0xa3, 0x8a,
                                               0xe3, 0xaf, 0xea, 0x92, 0x36, 0xbc, 0xfc, 0x89};
    std::string_view name() const noexcept { return "CPU"; }
    backend::guid guid() const noexcept { return cpu_guid; }
    any_device device() const { return dev_ ? dev_ : cpu_device(); }

    int n_threads() const noexcept { return ex_->n_threads(); }
    void set_n_threads(int n) { ex_->set_n_threads(check_threads(n)); }
    // Polled after each node; returning true stops the compute (errc::aborted).
    void set_abort_callback(std::function<bool()> cb) { ex_->set_abort_callback(std::move(cb)); }
    std::size_t work_size() const noexcept { return ex_->work_size(); }

    graph_plan graph_plan_create(graph_view g) const {
        graph_plan p{std::vector<node*>(g.nodes.begin(), g.nodes.end()), {}};
        p.state = check(g);
        return p;
    }
    void graph_plan_compute(graph_plan& p) {
        const auto* need = std::any_cast<cpu::compute_plan>(&p.state);
        ex_->run(p.view().nodes, need ? *need : check(p.view()));
    }
    void graph_compute(graph_view g) { ex_->run(g.nodes, check(g)); }

private:
    static int check_threads(int n) {
        if (n < 1 || n > 512) fail(errc::invalid_argument, "cpu backend: n_threads " + std::to_string(n) + " is not in 1..512");
        return n;
    }

    // Refuses the graph before computing anything: unsupported ops, tensors without
    // memory (the executor's checks) and tensors in memory the CPU cannot read.
    cpu::compute_plan check(graph_view g) const {
        return ex_->plan(g.nodes, [](const node& t, const node&) {
            if (const any_buffer b = buffer_of(t); b && !b.is_host() && !cpu_device().supports_buft(b.type()))
                fail(errc::invalid_argument, "CPU: tensor " + detail::tensor_desc(t) + " is in buffer '" + std::string(b.name()) +
                                                 "' (buffer type " + std::string(b.type() ? b.type().name() : "?") +
                                                 "), which the CPU cannot read; copy it to a host buffer or run the graph "
                                                 "through a scheduler");
        });
    }

    std::unique_ptr<cpu::executor> ex_;
    any_device dev_;
};
static_assert(backend<cpu_backend>);

// ---- device -------------------------------------------------------------------------------

namespace detail {
inline std::string cpu_brand() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto c = line.find(':');
            if (c != std::string::npos) {
                auto s = line.substr(c + 1);
                s.erase(0, s.find_first_not_of(" \t"));
                return s;
            }
        }
    }
    return "CPU";
}
inline memory_info system_memory() {
    memory_info m;
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) m.total = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
#if defined(_SC_AVPHYS_PAGES)
    const long avail = ::sysconf(_SC_AVPHYS_PAGES);
    if (avail > 0 && page > 0) m.free = static_cast<std::size_t>(avail) * static_cast<std::size_t>(page);
#endif
#endif
    if (!m.free) m.free = m.total;
    return m;
}

// "4", "n_threads=4" or "" (the default, 4).
inline int parse_n_threads(std::string_view params, int dflt) {
    if (params.empty()) return dflt;
    if (params.rfind("n_threads=", 0) == 0) params.remove_prefix(10);
    int n = 0;
    const auto r = std::from_chars(params.data(), params.data() + params.size(), n);
    if (r.ec != std::errc() || r.ptr != params.data() + params.size())
        fail(errc::invalid_argument, "CPU backend parameters '" + std::string(params) + "': expected n_threads=<N>");
    return n;
}
}  // namespace detail

class cpu_device_model {
public:
    std::string_view name() const noexcept { return "CPU"; }
    std::string_view description() const {
        static const std::string d = detail::cpu_brand();
        return d;
    }
    memory_info memory() const { return detail::system_memory(); }
    device_type type() const noexcept { return device_type::cpu; }
    device_caps caps() const noexcept { return {false, false, true, false}; }
    any_backend init_backend(std::string_view params) const {
        return any_backend(cpu_backend(detail::parse_n_threads(params, 4)));
    }
    any_buffer_type buffer_type() const { return cpu_buffer_type(); }
    any_buffer buffer_from_host_ptr(void* p, std::size_t n, std::size_t /*max_tensor*/) const {
        return cpu_buffer_from_ptr(p, n);
    }
    bool supports_op(const node& x) const { return cpu::unsupported_reason(x).empty(); }
    // host memory, and CPU_REPACK (whose weights only mul_mat reads)
    bool supports_buft(const any_buffer_type& bt) const { return bt && (bt.is_host() || bt == repack_buffer_type()); }
    std::vector<any_buffer_type> extra_buffer_types() const { return {repack_buffer_type()}; }
};
static_assert(device<cpu_device_model>);
static_assert(has_buffer_from_host_ptr<cpu_device_model> && !has_events<cpu_device_model>);

inline any_device cpu_device() {
    static const any_device d{cpu_device_model{}};
    return d;
}

// ---- registry -----------------------------------------------------------------------------

any_backend& cpu_checked(any_backend& b, const char* what);

struct cpu_reg_model {
    std::string_view name() const noexcept { return "CPU"; }
    std::size_t device_count() const noexcept { return 2; }
    any_device device(std::size_t i) const { return i == 0 ? cpu_device() : repack_device(); }
    void* proc_address(std::string_view s) const noexcept;
};
static_assert(backend_reg<cpu_reg_model>);

inline any_reg cpu_reg() {
    static const any_reg r{cpu_reg_model{}};
    return r;
}

// ---- the ggml-cpu.h entry points ----------------------------------------------------------

inline any_backend cpu_init(int n_threads = 4) { return any_backend(cpu_backend(n_threads)); }
inline bool is_cpu(const any_backend& b) noexcept { return b.target<cpu_backend>() != nullptr; }
inline any_backend& cpu_checked(any_backend& b, const char* what) {
    if (!is_cpu(b)) fail(errc::invalid_argument, std::string(what) + ": backend " + std::string(b ? b.name() : "(empty)") + " is not the CPU backend");
    return b;
}
inline void cpu_set_n_threads(any_backend& b, int n) { cpu_checked(b, "cpu_set_n_threads").target<cpu_backend>()->set_n_threads(n); }
inline void cpu_set_abort_callback(any_backend& b, std::function<bool()> cb) {
    cpu_checked(b, "cpu_set_abort_callback").target<cpu_backend>()->set_abort_callback(std::move(cb));
}

namespace detail {
inline void cpu_proc_set_n_threads(any_backend& b, int n) { cpu_set_n_threads(b, n); }
inline void cpu_proc_set_abort(any_backend& b, bool (*cb)(void*), void* ud) {
    if (cb) cpu_set_abort_callback(b, [cb, ud] { return cb(ud); });
    else cpu_set_abort_callback(b, {});
}
}  // namespace detail

inline void* cpu_reg_model::proc_address(std::string_view s) const noexcept {
    if (s == "set_n_threads") return reinterpret_cast<void*>(static_cast<set_n_threads_fn>(&detail::cpu_proc_set_n_threads));
    if (s == "set_abort_callback")
        return reinterpret_cast<void*>(static_cast<set_abort_callback_fn>(&detail::cpu_proc_set_abort));
    return nullptr;
}

// ---- CPU_REPACK: the CPU device's extra buffer type, and its device ----------------------

struct repack_buffer_type_model {
    std::string_view name() const noexcept { return "CPU_REPACK"; }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(repack_buffer(n)); }
    std::size_t alignment() const noexcept { return repack_alignment; }
    std::size_t max_size() const noexcept { return static_cast<std::size_t>(PTRDIFF_MAX); }
    std::size_t alloc_size(const node& x) const {
        return repack_alloc_size(x);
    }
    bool is_host() const noexcept { return false; }
    any_device device() const { return repack_device(); }
};
static_assert(buffer_type<repack_buffer_type_model>);

inline any_buffer_type repack_buffer_type() {
    static const any_buffer_type t{repack_buffer_type_model{}};
    return t;
}

class repack_device_model {
public:
    std::string_view name() const noexcept { return "CPU_REPACK"; }
    std::string_view description() const noexcept {
        return "CPU, q4_0/q8_0/q4_K (and on AArch64 iq4_nl) weights repacked for the packed GEMM (kernels/quant/repack.hpp)";
    }
    memory_info memory() const { return detail::system_memory(); }
    device_type type() const noexcept { return device_type::accel; }
    device_caps caps() const noexcept { return {}; }
    any_backend init_backend(std::string_view params) const {
        return any_backend(cpu_backend(detail::parse_n_threads(params, 4), repack_device()));
    }
    any_buffer_type buffer_type() const { return repack_buffer_type(); }
    // mul_mat whose weights are repacked in a CPU_REPACK buffer (and that the CPU computes).
    bool supports_op(const node& x) const {
        if (x.op != graph::op_kind::mul_mat || !x.src[0] || !is_repacked(*x.src[0])) return false;
        const any_buffer b = buffer_of(*x.src[0]);
        return b && b.type() == repack_buffer_type() && cpu::unsupported_reason(x).empty();
    }
    bool supports_buft(const any_buffer_type& bt) const { return bt && (bt == repack_buffer_type() || bt.is_host()); }
    // the weights live here: worth running their mul_mat here
    bool offload_op(const node& x) const { return supports_op(x); }
};
static_assert(device<repack_device_model>);

inline any_device repack_device() {
    static const any_device d{repack_device_model{}};
    return d;
}

}  // namespace backend
TESSERA_END_NAMESPACE

