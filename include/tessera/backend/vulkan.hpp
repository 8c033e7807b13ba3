// The Vulkan device (issue 20, slice 1): one device per physical device the Vulkan loader
// reports (Vulkan 1.2 with timeline semaphores), found at run time: the loader is
// dlopen'ed, so a binary built with Vulkan runs where there is none and simply lists no
// Vulkan device. Built only when TESSERA_VULKAN is set (Meson's `vulkan` option, auto:
// on when the Vulkan headers are found); without it this header declares nothing.
//
//   vulkan_reg()                 "Vulkan": device_count() and device(i); registry::global()
//                                registers it when a device exists and this header is part of the
//                                program (a fresh registry() does not)
//   vulkan_device(i)             "Vulkan<i>": type gpu, memory of its device-local heap,
//                                caps {async, host_buffer, events}; supports_op: the op table of
//                                backend/vulkan/ops.hpp, every other op refused by name
//   vulkan_buffer_type(i)        device-local memory; base() is an inaccessible address range
//                                (PROT_NONE), tensor I/O goes through the device
//   vulkan_host_buffer_type(i)   "Vulkan<i>_Host": host-visible memory, mapped (is_host)
//   init_backend()               a stream: graph_compute(_async), set/get/cpy_tensor_async,
//                                synchronize; one command buffer per call, submitted at once
//                                with a timeline-semaphore signal
//   event_new()                  an event: a (stream, timeline value) pair
//   vulkan_status()              what the loader found, or why there is no device
//
// Environment: TESSERA_VULKAN=0 hides every Vulkan device; TESSERA_VULKAN_LOADER names
// the loader library; TESSERA_VULKAN_STAGING=1 sends all host I/O through staging
// buffers even where device memory is host-visible (the discrete-GPU path).
#pragma once

#if defined(TESSERA_VULKAN) && TESSERA_VULKAN

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/backend/registry.hpp"
#include "tessera/backend/vulkan/context.hpp"
#include "tessera/backend/vulkan/loader.hpp"
#include "tessera/backend/vulkan/ops.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

any_device vulkan_device(std::size_t i);
any_buffer_type vulkan_buffer_type(std::size_t i);
any_buffer_type vulkan_host_buffer_type(std::size_t i);

inline std::size_t vulkan_device_count() { return vulkan::contexts().list.size(); }
inline std::string vulkan_status() { return vulkan::contexts().status; }

namespace vulkan {
inline context& context_at(std::size_t i) {
    const auto& l = contexts().list;
    if (i >= l.size())
        fail(errc::invalid_argument, "Vulkan: device index " + std::to_string(i) + " out of range (" + std::to_string(l.size()) +
                                         " devices; " + contexts().status + ")");
    return *l[i];
}
}  // namespace vulkan

// ---- buffers ----------------------------------------------------------------------------------

// Device-local memory. The host never dereferences it: base() is the start of a
// PROT_NONE reservation of size() bytes, unique per buffer (so addresses identify the
// buffer and a stray host read faults at once); a tensor's device offset is
// t.bytes() - base().
class vulkan_buffer {
    struct state {
        vulkan::context* ctx = nullptr;
        vulkan::memory_block block;
        std::byte* base = nullptr;
        std::size_t size = 0;
        ~state() {
            if (block.buf) {
                try {
                    ctx->wait_idle();  // no queued work may still use it
                } catch (...) {
                }
                ctx->free(block);
            }
            if (base) ::munmap(base, size);
        }
    };

public:
    vulkan_buffer(vulkan::context& c, std::size_t n) : s_(std::make_shared<state>()) {
        s_->ctx = &c;
        s_->size = n;
        if (!n) return;
        void* p = ::mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) fail(errc::out_of_memory, c.name() + ": could not reserve " + std::to_string(n) + " bytes of address space");
        s_->base = static_cast<std::byte*>(p);
        s_->block = c.alloc(n, false);
    }
    std::string_view name() const noexcept { return s_->ctx->name(); }
    std::byte* base() const noexcept { return s_->base; }
    std::size_t size() const noexcept { return s_->size; }
    vulkan::context& ctx() const noexcept { return *s_->ctx; }
    const vulkan::memory_block& block() const noexcept { return s_->block; }

    // Byte offset of x's first byte in this buffer (x must lie inside it).
    std::size_t offset_of(const node& x, std::size_t n = 0) const {
        const std::byte* p = x.bytes();
        if (!p || p < s_->base || static_cast<std::size_t>(p - s_->base) > s_->size || n > s_->size - static_cast<std::size_t>(p - s_->base))
            fail(errc::invalid_argument, std::string(name()) + " buffer: " + detail::tensor_desc(x) + " is not inside this buffer");
        return static_cast<std::size_t>(p - s_->base);
    }
    void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) { ctx().write(s_->block, offset_of(x, off + n) + off, p, n); }
    void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) const {
        ctx().read(s_->block, offset_of(x, off + n) + off, q, n);
    }
    void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) { ctx().fill(s_->block, offset_of(x, off + n) + off, n, v); }
    // A device-side copy when src is in a buffer of the same device.
    bool cpy_tensor(const node& src, node& dst) {
        const any_buffer sb = buffer_of(src);
        const vulkan_buffer* s = sb ? sb.target<vulkan_buffer>() : nullptr;
        if (!s || &s->ctx() != &ctx()) return false;
        const std::size_t n = src.lay.nbytes();
        ctx().copy(s->block(), s->offset_of(src, n), s_->block, offset_of(dst, n), n);
        return true;
    }
    void clear(std::uint8_t v) {
        if (!s_->size) return;
        // vkCmdFillBuffer fills whole words: the buffer's size rounded down, then the tail bytes
        const std::size_t words = s_->size / 4 * 4;
        ctx().fill(s_->block, 0, words, v);
        if (words < s_->size) {
            const std::vector<std::uint8_t> tail(s_->size - words, v);
            ctx().write(s_->block, words, tail.data(), tail.size());
        }
    }

private:
    std::shared_ptr<state> s_;
};
static_assert(buffer<vulkan_buffer>);

// Host-visible memory of the device (its staging / pinned type): the real mapping, so the
// memcpy defaults of the buffer concept are right.
class vulkan_host_buffer {
    struct state {
        vulkan::context* ctx = nullptr;
        vulkan::memory_block block;
        std::string name;
        ~state() {
            if (block.buf) {
                try {
                    ctx->wait_idle();
                } catch (...) {
                }
                ctx->free(block);
            }
        }
    };

public:
    vulkan_host_buffer(vulkan::context& c, std::size_t n) : s_(std::make_shared<state>()) {
        s_->ctx = &c;
        s_->name = c.name() + "_Host";
        if (n) s_->block = c.alloc(n, true);
    }
    std::string_view name() const noexcept { return s_->name; }
    std::byte* base() const noexcept { return static_cast<std::byte*>(s_->block.map); }
    std::size_t size() const noexcept { return static_cast<std::size_t>(s_->block.size); }

private:
    std::shared_ptr<state> s_;
};
static_assert(buffer<vulkan_host_buffer>);

struct vulkan_buffer_type_model {
    std::size_t index = 0;
    std::string_view name() const { return vulkan::context_at(index).name(); }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(vulkan_buffer(vulkan::context_at(index), n)); }
    std::size_t alignment() const { return vulkan::context_at(index).alignment(); }
    std::size_t max_size() const { return vulkan::context_at(index).max_alloc(); }
    // whole 32-bit words (fills and shader accesses)
    std::size_t alloc_size(const node& x) const { return (x.lay.nbytes() + 3) / 4 * 4; }
    bool is_host() const noexcept { return false; }
    any_device device() const { return vulkan_device(index); }
};
static_assert(buffer_type<vulkan_buffer_type_model>);

struct vulkan_host_buffer_type_model {
    std::size_t index = 0;
    std::string name_ = vulkan::context_at(index).name() + "_Host";
    std::string_view name() const noexcept { return name_; }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(vulkan_host_buffer(vulkan::context_at(index), n)); }
    std::size_t alignment() const { return vulkan::context_at(index).alignment(); }
    std::size_t max_size() const { return vulkan::context_at(index).max_alloc(); }
    bool is_host() const noexcept { return true; }
    any_device device() const { return vulkan_device(index); }
};
static_assert(buffer_type<vulkan_host_buffer_type_model>);

namespace vulkan {
// The handle of device i's Model, made once per device (handles compare by identity).
template <class Handle, class Model>
Handle per_device(std::size_t i) {
    static const std::vector<Handle> v = [] {
        std::vector<Handle> r;
        for (std::size_t k = 0; k < vulkan_device_count(); ++k) r.emplace_back(Model{k});
        return r;
    }();
    context_at(i);  // the range check and its message
    return v[i];
}
}  // namespace vulkan

// (The ops unit compiles the three handles and, through them, the device: TESSERA_LINKED.)
TESSERA_LINKED_VULKAN(any_buffer_type vulkan::per_device<any_buffer_type, vulkan_buffer_type_model>(std::size_t));
TESSERA_LINKED_VULKAN(any_buffer_type vulkan::per_device<any_buffer_type, vulkan_host_buffer_type_model>(std::size_t));

inline any_buffer_type vulkan_buffer_type(std::size_t i) { return vulkan::per_device<any_buffer_type, vulkan_buffer_type_model>(i); }
inline any_buffer_type vulkan_host_buffer_type(std::size_t i) {
    return vulkan::per_device<any_buffer_type, vulkan_host_buffer_type_model>(i);
}

// ---- stream -----------------------------------------------------------------------------------

namespace vulkan {

// A stream's state, shared by its handle copies and by the events recorded on it. Each call
// records one command buffer and submits it at once, signalling the stream's timeline
// semaphore to the next value; finished submissions are retired (their host copies run,
// their command buffers, descriptor pools and staging buffers freed) by synchronize(),
// an event's synchronize() and later submissions.
class stream_state {
public:
    explicit stream_state(context& c) : c_(c) {
        auto ci = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
        ci.queueFamilyIndex = c.queue_family();
        check(fn().vkCreateCommandPool(c.device(), &ci, nullptr, &pool_), "vkCreateCommandPool");
        sem_ = c.new_timeline();
        gate_ = c.new_timeline();
    }
    stream_state(const stream_state&) = delete;
    stream_state& operator=(const stream_state&) = delete;
    ~stream_state() {
        try {
            release();
            synchronize();
        } catch (...) {
        }
        std::lock_guard<std::mutex> lk(mu_);
        for (inflight& f : q_) free(f);
        fn().vkDestroySemaphore(c_.device(), sem_, nullptr);
        fn().vkDestroySemaphore(c_.device(), gate_, nullptr);
        fn().vkDestroyCommandPool(c_.device(), pool_, nullptr);
    }

    context& ctx() const noexcept { return c_; }
    VkSemaphore semaphore() const noexcept { return sem_; }
    std::uint64_t submitted() const {
        std::lock_guard<std::mutex> lk(mu_);
        return submitted_;
    }
    std::uint64_t completed() const { return c_.value(sem_); }

    // Where t is on this device (a Vulkan buffer of this device), or a clear error.
    location locate(const node& t, const char* use) const {
        const any_buffer b = buffer_of(t);
        const vulkan_buffer* vb = b ? b.target<vulkan_buffer>() : nullptr;
        if (!vb || &vb->ctx() != &c_)
            fail(errc::invalid_argument, c_.name() + ": tensor " + detail::tensor_desc(t) + " (" + use + ") is in " +
                                             (b ? "buffer '" + std::string(b.name()) + "'" : std::string("host memory")) + ", not in a " +
                                             c_.name() + " buffer; copy it there or run the graph through a scheduler");
        return location{&vb->block(), vb->offset_of(t, t.lay.nbytes())};
    }

    void graph_compute_async(graph_view g) {
        std::size_t n = 0;
        for (const node* x : g.nodes) {
            if (graph::op_is_view(x->op) || x->op == graph::op_kind::none) continue;
            if (const std::string why = unsupported_reason(*x, c_); !why.empty())
                fail(errc::unsupported, c_.name() + ": node '" + x->name + "': " + why);
            ++n;
        }
        if (!n) return;
        inflight f;
        f.cb = c_.new_command_buffer(pool_);
        try {
            const VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, static_cast<std::uint32_t>(n * max_bindings)};
            auto pi = make<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
            pi.maxSets = static_cast<std::uint32_t>(n);
            pi.poolSizeCount = 1;
            pi.pPoolSizes = &ps;
            check(fn().vkCreateDescriptorPool(c_.device(), &pi, nullptr, &f.dpool), "vkCreateDescriptorPool");
            recorder r(c_, f.cb, f.dpool, [this](const node& t) { return locate(t, "an operand"); });
            for (const node* x : g.nodes) {
                if (graph::op_is_view(x->op) || x->op == graph::op_kind::none || x->lay.nelements() == 0) continue;
                find_op(x->op)->record(r, *x);
            }
        } catch (...) {
            std::lock_guard<std::mutex> lk(mu_);
            free(f);
            throw;
        }
        submit(std::move(f));
    }
    void graph_compute(graph_view g) {
        graph_compute_async(g);
        synchronize();
    }

    // host -> device: the bytes are copied into a staging buffer now (the caller may reuse
    // p at once), the device copies them when the queue gets there
    void set_tensor_async(node& x, const void* p, std::size_t off, std::size_t n) {
        if (!n) return;
        const location l = locate(x, "set_tensor_async");
        inflight f;
        f.staging.push_back(c_.alloc(n, true));
        std::memcpy(f.staging.back().map, p, n);
        f.cb = c_.new_command_buffer(pool_);
        const VkBufferCopy cp{0, l.offset + off, n};
        fn().vkCmdCopyBuffer(f.cb, f.staging.back().buf, l.block->buf, 1, &cp);
        submit(std::move(f));
    }
    // device -> host: q is written when the copy is done and the stream (or an event after
    // it) is synchronized
    void get_tensor_async(const node& x, void* q, std::size_t off, std::size_t n) {
        if (!n) return;
        const location l = locate(x, "get_tensor_async");
        inflight f;
        f.staging.push_back(c_.alloc(n, true));
        f.cb = c_.new_command_buffer(pool_);
        const VkBufferCopy cp{l.offset + off, 0, n};
        fn().vkCmdCopyBuffer(f.cb, l.block->buf, f.staging.back().buf, 1, &cp);
        const void* from = f.staging.back().map;
        f.after.emplace_back([q, from, n] { std::memcpy(q, from, n); });
        submit(std::move(f));
    }
    // Into a tensor of this device: from host memory (staged now) or from a buffer of this
    // device (a device copy); anything else is not this stream's to do (false).
    bool cpy_tensor_async(const node& src, node& dst) {
        const any_buffer db = buffer_of(dst);
        const vulkan_buffer* dv = db ? db.target<vulkan_buffer>() : nullptr;
        if (!dv || &dv->ctx() != &c_ || src.lay.nbytes() != dst.lay.nbytes() || !src.bytes()) return false;
        const std::size_t n = src.lay.nbytes();
        if (!n) return true;
        const location d = locate(dst, "cpy_tensor_async");
        const any_buffer sb = buffer_of(src);
        const vulkan_buffer* sv = sb ? sb.target<vulkan_buffer>() : nullptr;
        inflight f;
        VkBuffer from = VK_NULL_HANDLE;
        std::size_t from_off = 0;
        if (sv && &sv->ctx() == &c_) {
            from = sv->block().buf;
            from_off = sv->offset_of(src, n);
        } else if (is_host_memory(src)) {
            f.staging.push_back(c_.alloc(n, true));
            std::memcpy(f.staging.back().map, src.bytes(), n);
            from = f.staging.back().buf;
        } else {
            return false;
        }
        f.cb = c_.new_command_buffer(pool_);
        const VkBufferCopy cp{from_off, d.offset, n};
        fn().vkCmdCopyBuffer(f.cb, from, d.block->buf, 1, &cp);
        submit(std::move(f));
        return true;
    }

    // Waits for the submissions up to `value` and retires them.
    void wait(std::uint64_t value) {
        if (value) c_.wait(sem_, value);
        retire();
    }
    void synchronize() { wait(submitted()); }

    // The next submission also waits (on the device) for sem to reach value.
    void wait_on(VkSemaphore sem, std::uint64_t value) {
        std::lock_guard<std::mutex> lk(mu_);
        waits_.push_back({sem, value});
    }

    // Test hook: while held, every submission also waits for the host to release the gate,
    // so a test can see work that is queued but not done, deterministically.
    void hold() {
        std::lock_guard<std::mutex> lk(mu_);
        if (!held_) held_ = true;
    }
    void release() {
        std::lock_guard<std::mutex> lk(mu_);
        if (!held_) return;
        held_ = false;
        auto si = make<VkSemaphoreSignalInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO);
        si.semaphore = gate_;
        si.value = ++gate_value_;
        check(fn().vkSignalSemaphore(c_.device(), &si), "vkSignalSemaphore");
    }

private:
    struct inflight {
        std::uint64_t value = 0;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        VkDescriptorPool dpool = VK_NULL_HANDLE;
        std::vector<memory_block> staging;
        std::vector<std::function<void()>> after;  // host copies once done
    };
    void free(inflight& f) {
        if (f.cb) fn().vkFreeCommandBuffers(c_.device(), pool_, 1, &f.cb);
        if (f.dpool) fn().vkDestroyDescriptorPool(c_.device(), f.dpool, nullptr);
        for (memory_block& b : f.staging) c_.free(b);
        f = inflight{};
    }
    void submit(inflight&& f) {
        context::end_command_buffer(f.cb);
        std::lock_guard<std::mutex> lk(mu_);
        std::vector<context::wait_point> w = std::move(waits_);
        waits_.clear();
        if (held_) w.push_back({gate_, gate_value_ + 1});
        f.value = submitted_ + 1;
        try {
            c_.submit(f.cb, sem_, f.value, w);
        } catch (...) {
            free(f);
            throw;
        }
        ++submitted_;
        q_.push_back(std::move(f));
        retire_locked(c_.value(sem_), false);
    }
    void retire() {
        const std::uint64_t done = c_.value(sem_);
        std::lock_guard<std::mutex> lk(mu_);
        retire_locked(done, true);
    }
    // frees the submissions up to `done`; their host copies run only when asked (the
    // caller synchronizes), so get_tensor_async's destination is written at a sync point
    void retire_locked(std::uint64_t done, bool run_after) {
        while (!q_.empty() && q_.front().value <= done && (run_after || q_.front().after.empty())) {
            for (auto& a : q_.front().after) a();
            free(q_.front());
            q_.pop_front();
        }
    }

    context& c_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkSemaphore sem_ = VK_NULL_HANDLE;
    VkSemaphore gate_ = VK_NULL_HANDLE;
    std::uint64_t gate_value_ = 0;
    bool held_ = false;
    mutable std::mutex mu_;
    std::uint64_t submitted_ = 0;
    std::deque<inflight> q_;
    std::vector<context::wait_point> waits_;
};

}  // namespace vulkan

class vulkan_backend {
public:
    static constexpr backend::guid vk_guid = {0x74, 0x65, 0x73, 0x73, 0x65, 0x72, 0x61, 0x2d,
                                              0x76, 0x75, 0x6c, 0x6b, 0x61, 0x6e, 0x00, 0x01};
    explicit vulkan_backend(vulkan::context& c) : s_(std::make_shared<vulkan::stream_state>(c)) {}
    std::string_view name() const noexcept { return s_->ctx().name(); }
    backend::guid guid() const noexcept { return vk_guid; }
    any_device device() const { return vulkan_device(s_->ctx().index()); }
    void graph_compute(graph_view g) { s_->graph_compute(g); }
    void graph_compute_async(graph_view g) { s_->graph_compute_async(g); }
    void set_tensor_async(node& x, const void* p, std::size_t off, std::size_t n) { s_->set_tensor_async(x, p, off, n); }
    void get_tensor_async(const node& x, void* q, std::size_t off, std::size_t n) { s_->get_tensor_async(x, q, off, n); }
    bool cpy_tensor_async(const node& src, node& dst) { return s_->cpy_tensor_async(src, dst); }
    void synchronize() { s_->synchronize(); }
    const std::shared_ptr<vulkan::stream_state>& state() const noexcept { return s_; }

private:
    std::shared_ptr<vulkan::stream_state> s_;
};
static_assert(backend<vulkan_backend>);

inline vulkan_backend* as_vulkan(const any_backend& b) noexcept { return b ? b.target<vulkan_backend>() : nullptr; }
inline bool is_vulkan(const any_backend& b) noexcept { return as_vulkan(b) != nullptr; }

// ---- event ------------------------------------------------------------------------------------

// A point on a Vulkan stream's timeline: record(s) takes s's last submitted value;
// synchronize() waits for it on the host; wait(s) makes a Vulkan stream of the same
// device wait for it on the device (its next submission), any other stream waits on the
// host. Copies of the handle are one event.
class vulkan_event {
    struct state {
        vulkan::context* ctx = nullptr;
        std::shared_ptr<vulkan::stream_state> stream;
        std::uint64_t value = 0;
    };

public:
    explicit vulkan_event(vulkan::context& c) : s_(std::make_shared<state>()) { s_->ctx = &c; }
    void record(any_backend& b) {
        const vulkan_backend* v = as_vulkan(b);
        if (!v)
            fail(errc::invalid_argument, s_->ctx->name() + " event: record needs a stream of " + s_->ctx->name() + ", not '" +
                                             std::string(b ? b.name() : "(empty)") + "'");
        if (&v->state()->ctx() != s_->ctx)
            fail(errc::invalid_argument, s_->ctx->name() + " event: record needs a stream of " + s_->ctx->name() + ", not one of " +
                                             v->state()->ctx().name());
        s_->stream = v->state();
        s_->value = s_->stream->submitted();
    }
    void synchronize() {
        if (s_->stream) s_->stream->wait(s_->value);
    }
    void wait(any_backend& b) {
        const vulkan_backend* v = as_vulkan(b);
        if (!s_->stream) return;
        if (v && &v->state()->ctx() == s_->ctx) {
            if (v->state() != s_->stream) v->state()->wait_on(s_->stream->semaphore(), s_->value);
        } else {
            synchronize();
        }
    }
    // Has the recorded work finished? (true when nothing was recorded)
    bool query() const { return !s_->stream || s_->stream->completed() >= s_->value; }
    std::uint64_t value() const noexcept { return s_->value; }

private:
    std::shared_ptr<state> s_;
};
static_assert(event<vulkan_event>);

// ---- device and registry ----------------------------------------------------------------------

// The reason device i refuses node x ("" when it computes it).
inline std::string vulkan_unsupported_reason(std::size_t i, const node& x) {
    return vulkan::unsupported_reason(x, vulkan::context_at(i));
}

struct vulkan_device_model {
    std::size_t index = 0;
    vulkan::context& ctx() const { return vulkan::context_at(index); }
    std::string_view name() const { return ctx().name(); }
    std::string_view description() const { return ctx().description(); }
    memory_info memory() const { return {ctx().heap_size(), ctx().heap_size()}; }  // (no VK_EXT_memory_budget read yet)
    device_type type() const noexcept { return device_type::gpu; }
    // A CPU-type Vulkan device (lavapipe, SwiftShader): registry::init_best() passes over it.
    bool emulated() const { return ctx().emulated(); }
    device_caps caps() const noexcept { return {true, true, false, true}; }
    // params: "" (none yet)
    any_backend init_backend(std::string_view) const { return any_backend(vulkan_backend(ctx())); }
    any_buffer_type buffer_type() const { return vulkan_buffer_type(index); }
    any_buffer_type host_buffer_type() const { return vulkan_host_buffer_type(index); }
    bool supports_op(const node& x) const { return vulkan::unsupported_reason(x, ctx()).empty(); }
    bool supports_buft(const any_buffer_type& bt) const { return bt == vulkan_buffer_type(index); }
    // not yet: the scheduler moves ops here only where their weights are
    bool offload_op(const node&) const noexcept { return false; }
    any_event event_new() const { return any_event(vulkan_event(ctx())); }
};
static_assert(device<vulkan_device_model>);

TESSERA_LINKED_VULKAN(any_device vulkan::per_device<any_device, vulkan_device_model>(std::size_t));
inline any_device vulkan_device(std::size_t i) { return vulkan::per_device<any_device, vulkan_device_model>(i); }

struct vulkan_reg_model {
    std::string_view name() const noexcept { return "Vulkan"; }
    std::size_t device_count() const { return vulkan_device_count(); }
    any_device device(std::size_t i) const { return vulkan_device(i); }
};
static_assert(backend_reg<vulkan_reg_model>);

inline any_reg vulkan_reg() {
    static const any_reg r{vulkan_reg_model{}};
    return r;
}
// A stream on device i.
inline any_backend vulkan_init(std::size_t i = 0) { return vulkan_device(i).init_backend(); }


namespace detail {
// registry::global() lists the Vulkan family in every program that includes this header
// (registry.hpp itself does not, so units without Vulkan do not compile it).
inline any_reg vulkan_family_source() { return vulkan_reg().device_count() > 0 ? vulkan_reg() : any_reg{}; }
[[maybe_unused]] inline const bool vulkan_family_added = add_family_source(&vulkan_family_source);
}  // namespace detail

}  // namespace backend
TESSERA_END_NAMESPACE

#endif  // TESSERA_VULKAN
