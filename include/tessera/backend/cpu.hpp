// The CPU backend: a full model of every backend concept.
//
//   cpu_buffer_type  "CPU": host memory, alignment 32 (ggml's TENSOR_ALIGNMENT)
//   cpu_buffer       owned aligned memory, or "CPU_Mapped": user memory wrapped without
//                    a copy (an mmap'ed GGUF's tensor data), never freed by the buffer
//   cpu_device       "CPU": description from /proc/cpuinfo, memory from sysconf, caps
//                    {buffer_from_host_ptr}; supports_op = what the graph layer's CPU
//                    kernels compute (graph/cpu/ops.hpp)
//   cpu_backend      the stream: n_threads (a persistent thread pool), abort callback,
//                    graph plans; computes through the graph layer's CPU kernels
//   cpu_reg          devices CPU and CPU_REPACK (backend/repack.hpp, an ACCEL device whose
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
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "tessera/backend/any.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/cpu/executor.hpp"
#include "tessera/graph/cpu/ops.hpp"
#include "tessera/graph/cpu/thread_pool.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

inline constexpr std::size_t cpu_alignment = 32;

any_device cpu_device();
any_buffer_type cpu_buffer_type();
any_device repack_device();            // backend/repack.hpp (included at the end)
any_buffer_type repack_buffer_type();

// ---- buffer -------------------------------------------------------------------------------

class cpu_buffer {
public:
    // Owned, zeroed memory of n bytes aligned to `align` (n = 0: no memory, base() is null).
    explicit cpu_buffer(std::size_t n, std::size_t align = cpu_alignment) : size_(n), align_(align), owned_(true) {
        if (n) {
            try {
                base_ = static_cast<std::byte*>(::operator new(n, std::align_val_t(align_)));
            } catch (const std::bad_alloc&) {
                fail(errc::out_of_memory, "CPU buffer: could not allocate " + std::to_string(n) + " bytes");
            }
            std::memset(base_, 0, n);
        }
    }
    // Wraps user memory without copying; the caller keeps it alive.
    cpu_buffer(void* p, std::size_t n) noexcept : base_(static_cast<std::byte*>(p)), size_(n), owned_(false) {}
    cpu_buffer(cpu_buffer&& o) noexcept
        : base_(std::exchange(o.base_, nullptr)), size_(o.size_), align_(o.align_), owned_(o.owned_) {}
    cpu_buffer& operator=(cpu_buffer&&) = delete;
    cpu_buffer(const cpu_buffer&) = delete;
    ~cpu_buffer() {
        if (owned_ && base_) ::operator delete(base_, std::align_val_t(align_));
    }

    std::string_view name() const noexcept { return owned_ ? "CPU" : "CPU_Mapped"; }
    std::byte* base() const noexcept { return base_; }
    std::size_t size() const noexcept { return size_; }
    bool owns_memory() const noexcept { return owned_; }
    // Both ends are host memory: a device-side copy is a memcpy.
    bool cpy_tensor(const node& src, node& dst) const {
        if (!is_host_memory(src)) return false;
        std::memcpy(dst.bytes(), src.bytes(), src.lay.nbytes());
        return true;
    }

private:
    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
    std::size_t align_ = cpu_alignment;
    bool owned_ = true;
};
static_assert(buffer<cpu_buffer>);

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
    struct state {
        explicit state(int n) : pool(n) {}
        graph::thread_pool pool;
        std::function<bool()> abort;
        std::unique_ptr<std::byte, void (*)(std::byte*)> work{nullptr, [](std::byte* p) {
                                                                 ::operator delete(p, std::align_val_t(64));
                                                             }};
        std::size_t work_cap = 0;
    };

public:
    explicit cpu_backend(int n_threads = 4) : s_(std::make_unique<state>(check_threads(n_threads))) {}
    // A CPU stream created by another device that computes on the CPU (CPU_REPACK).
    cpu_backend(int n_threads, any_device dev) : cpu_backend(n_threads) { dev_ = std::move(dev); }

    static constexpr backend::guid cpu_guid = {0xaa, 0x67, 0xc7, 0x43, 0x96, 0xe6, 0xa3, 0x8a,
                                               0xe3, 0xaf, 0xea, 0x92, 0x36, 0xbc, 0xfc, 0x89};
    std::string_view name() const noexcept { return "CPU"; }
    backend::guid guid() const noexcept { return cpu_guid; }
    any_device device() const { return dev_ ? dev_ : cpu_device(); }

    int n_threads() const noexcept { return s_->pool.size(); }
    void set_n_threads(int n) { s_->pool.resize(check_threads(n)); }
    // Polled after each node; returning true stops the compute (errc::aborted).
    void set_abort_callback(std::function<bool()> cb) { s_->abort = std::move(cb); }
    std::size_t work_size() const noexcept { return s_->work_cap; }

    graph_plan graph_plan_create(graph_view g) const {
        graph_plan p{std::vector<node*>(g.nodes.begin(), g.nodes.end()), {}};
        p.state = check(g);
        return p;
    }
    void graph_plan_compute(graph_plan& p) {
        const auto* need = std::any_cast<graph::compute_plan>(&p.state);
        run(p.view(), need ? *need : check(p.view()));
    }
    void graph_compute(graph_view g) { run(g, check(g)); }

private:
    static int check_threads(int n) {
        if (n < 1 || n > 512) fail(errc::invalid_argument, "cpu backend: n_threads " + std::to_string(n) + " is not in 1..512");
        return n;
    }

    // Refuses the graph before computing anything: unsupported ops, tensors without
    // memory, tensors in memory the CPU cannot read. Returns the scratch plan.
    graph::compute_plan check(graph_view g) const {
        graph::compute_plan p;
        p.n_threads = s_->pool.size();
        auto readable = [](const node& t, const node& user) {
            if (!t.bytes() && t.lay.nelements() > 0)
                fail(errc::invalid_argument, "CPU: tensor " + detail::tensor_desc(t) + " used by '" + user.name +
                                                 "' has no memory; allocate the graph first");
            if (const any_buffer b = buffer_of(t); b && !b.is_host() && !cpu_device().supports_buft(b.type()))
                fail(errc::invalid_argument, "CPU: tensor " + detail::tensor_desc(t) + " is in buffer '" + std::string(b.name()) +
                                                 "' (buffer type " + std::string(b.type() ? b.type().name() : "?") +
                                                 "), which the CPU cannot read; copy it to a host buffer or run the graph "
                                                 "through a scheduler");
        };
        for (const node* n : g.nodes) {
            if (const std::string why = graph::cpu::unsupported_reason(*n); !why.empty())
                fail(errc::unsupported, "CPU: node '" + n->name + "' (" + graph::cgraph::op_label(*n) + " " +
                                            n->lay.to_string() + "): " + why);
            if (graph::cpu::is_noop(n->op)) continue;
            readable(*n, *n);
            for (const node* src : n->src)
                if (src) readable(*src, *n);
            const auto need = graph::cpu::scratch_for(*n);
            p.per_thread = std::max(p.per_thread, need.per_thread);
            p.shared = std::max(p.shared, need.shared);
        }
        return p;
    }

    void run(graph_view g, const graph::compute_plan& p) {
        state& st = *s_;
        const std::size_t per_thread = p.per_thread;
        const std::size_t bytes = p.shared + per_thread * static_cast<std::size_t>(st.pool.size());
        if (bytes > st.work_cap || !st.work) {
            const std::size_t cap = std::max<std::size_t>(bytes, 64);
            st.work.reset(static_cast<std::byte*>(::operator new(cap, std::align_val_t(64))));
            st.work_cap = cap;
        }
        const graph::cpu::kernel_set ks = graph::cpu::kernel_set::for_arch(simd::active_arch());
        // The node after which every thread leaves: set before that node's barrier and
        // read after it, so a thread that is already further on cannot make a slower one
        // leave a node early (which would leave the others waiting at the barrier).
        constexpr std::size_t never = SIZE_MAX;
        std::atomic<std::size_t> stop_at{never};
        auto request_stop = [&](std::size_t i) {
            std::size_t cur = stop_at.load(std::memory_order_relaxed);
            while (i < cur && !stop_at.compare_exchange_weak(cur, i, std::memory_order_relaxed)) {
            }
        };
        std::byte* work = st.work.get();
        std::mutex err_mu;
        std::exception_ptr err;
        const auto nodes = g.nodes;
        st.pool.run([&](int ith, int nth) {
            graph::cpu::exec_params ep;
            ep.ith = ith;
            ep.nth = nth;
            ep.k = &ks;
            ep.shared = work;
            ep.scratch = work + p.shared + per_thread * static_cast<std::size_t>(ith);
            ep.barrier_fn = [](void* c) { static_cast<graph::thread_pool*>(c)->barrier(); };
            ep.barrier_ctx = &st.pool;
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                const node& n = *nodes[i];
                if (graph::cpu::is_noop(n.op)) continue;
                try {
                    graph::cpu::compute_node(n, ep);
                } catch (...) {
                    std::lock_guard<std::mutex> lk(err_mu);
                    if (!err) err = std::current_exception();
                    request_stop(i);
                }
                if (ith == 0 && st.abort && i + 1 < nodes.size() && st.abort()) request_stop(i);
                st.pool.barrier();
                if (stop_at.load(std::memory_order_relaxed) <= i) return;
            }
        });
        if (err) std::rethrow_exception(err);
        if (const std::size_t at = stop_at.load(); at != never)
            fail(errc::aborted, "CPU: compute aborted by the callback after node " + std::to_string(at + 1) + " of " +
                                    std::to_string(nodes.size()));
    }

    std::unique_ptr<state> s_;
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
    bool supports_op(const node& x) const { return graph::cpu::unsupported_reason(x).empty(); }
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

}  // namespace backend
TESSERA_END_NAMESPACE

#include "tessera/backend/repack.hpp"  // IWYU pragma: export (the CPU device's extra buffer type)
