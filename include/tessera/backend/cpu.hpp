// The CPU backend: a full model of every backend concept.
//
//   cpu_buffer_type  "CPU": host memory, alignment 32 (ggml's TENSOR_ALIGNMENT)
//   cpu_buffer       owned aligned memory, or "CPU_Mapped": user memory wrapped without
//                    a copy (an mmap'ed GGUF's tensor data), never freed by the buffer
//   cpu_device       "CPU": description from /proc/cpuinfo, memory from sysconf, caps
//                    {buffer_from_host_ptr}; supports_op = what the graph layer's CPU
//                    kernels compute (backend/cpu/ops.hpp)
//   cpu_backend      the stream: n_threads (a persistent thread pool), abort callback,
//                    graph plans; computes through the graph layer's CPU kernels
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
#include "tessera/backend/cpu/buffer.hpp"
#include "tessera/backend/cpu/executor.hpp"
#include "tessera/backend/cpu/repack.hpp"
#include "tessera/simd/dispatch.hpp"

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
        return repackable(x) ? kernels::repacked_bytes(x.lay.type, x.lay.ne[0], x.lay.nrows()) : x.lay.nbytes();
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
        return "CPU, q4_0/q8_0/q4_K weights repacked for the packed GEMM (kernels/quant/repack.hpp)";
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

