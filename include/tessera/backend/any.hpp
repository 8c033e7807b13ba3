// The type-erased handles: any_buffer_type, any_buffer, any_backend, any_event,
// any_device, any_reg. Each holds any model of its concept behind one small
// virtual interface, so the registry and the scheduler can hold heterogeneous
// backends. A handle is a shared reference (copies refer to the same object;
// == compares identity); an empty handle is false. Every handle also models its own
// concept, so generic code (the conformance tests) takes models and handles alike.
//
// Also here: the tensor <-> buffer association (ggml's tensor->buffer): tensor_alloc
// records the buffer in the node (node::buffer, a weak link), buffer_of(tensor) reads
// it back; tensors whose bytes belong to no buffer (a graph::context that allocates,
// memory the user binds) count as host memory.
// And the tensor I/O of ggml-backend.h: tensor_alloc, tensor_set/get/memset/copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tessera/backend/backend.hpp"
#include "tessera/backend/buffer.hpp"
#include "tessera/backend/buffer_type.hpp"
#include "tessera/backend/common.hpp"
#include "tessera/backend/device.hpp"
#include "tessera/backend/event.hpp"
#include "tessera/backend/reg.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/context.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

namespace detail {
template <class H, class T>
concept not_handle = !std::same_as<std::remove_cvref_t<T>, H>;

inline void require(bool ok, const char* what) {
    if (!ok) fail(errc::invalid_argument, std::string("empty ") + what + " handle");
}
}  // namespace detail

// ---- any_buffer_type ----------------------------------------------------------------------

class any_buffer_type {
    struct iface {
        virtual ~iface() = default;
        virtual std::string_view name() const = 0;
        virtual any_buffer alloc_buffer(std::size_t n) = 0;
        virtual std::size_t alignment() const = 0;
        virtual std::size_t max_size() const = 0;
        virtual std::size_t alloc_size(const node& x) const = 0;
        virtual bool is_host() const = 0;
        virtual any_device device() const = 0;
        virtual void* target(const std::type_info& t) noexcept = 0;
    };
    template <class T>
    struct model;

public:
    any_buffer_type() = default;
    template <buffer_type T>
        requires detail::not_handle<any_buffer_type, T>
    explicit any_buffer_type(T t);

    explicit operator bool() const noexcept { return p_ != nullptr; }
    friend bool operator==(const any_buffer_type& a, const any_buffer_type& b) noexcept { return a.p_ == b.p_; }

    std::string_view name() const { return get().name(); }
    any_buffer alloc_buffer(std::size_t n) const;
    std::size_t alignment() const { return get().alignment(); }
    std::size_t max_size() const { return get().max_size(); }
    std::size_t alloc_size(const node& x) const { return get().alloc_size(x); }
    bool is_host() const { return get().is_host(); }
    any_device device() const;
    // The model, if it is a T (for extension entries such as a backend's own settings).
    template <class T>
    T* target() const noexcept {
        return p_ ? static_cast<T*>(p_->target(typeid(T))) : nullptr;
    }

private:
    iface& get() const {
        detail::require(p_ != nullptr, "buffer type");
        return *p_;
    }
    std::shared_ptr<iface> p_;
};

// ---- any_buffer ---------------------------------------------------------------------------

class any_buffer {
    struct iface {
        virtual ~iface() = default;
        virtual std::string_view name() const = 0;
        virtual std::byte* base() const = 0;
        virtual std::size_t size() const = 0;
        virtual void init_tensor(node& x) = 0;
        virtual void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) = 0;
        virtual void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) = 0;
        virtual void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) = 0;
        virtual bool cpy_tensor(const node& src, node& dst) = 0;
        virtual void clear(std::uint8_t v) = 0;
        virtual void reset() = 0;
        virtual void* target(const std::type_info& t) noexcept = 0;
    };
    template <class B>
    struct model;
    struct state;

public:
    any_buffer() = default;
    // Wraps a buffer model; `type` is the buffer type that made it (any_buffer_type::
    // alloc_buffer fills it in when a model leaves it empty).
    template <buffer B>
        requires detail::not_handle<any_buffer, B>
    explicit any_buffer(B b, any_buffer_type type = {});

    explicit operator bool() const noexcept { return s_ != nullptr; }
    friend bool operator==(const any_buffer& a, const any_buffer& b) noexcept { return a.s_ == b.s_; }

    std::string_view name() const;
    std::byte* base() const;
    std::size_t size() const;
    any_buffer_type type() const;
    std::size_t alignment() const { return type() ? type().alignment() : 1; }
    std::size_t max_size() const { return type() ? type().max_size() : SIZE_MAX; }
    std::size_t alloc_size(const node& x) const { return type() ? type().alloc_size(x) : x.lay.nbytes(); }
    bool is_host() const { return type() && type().is_host(); }
    buffer_usage usage() const;
    void set_usage(buffer_usage u) const;
    void init_tensor(node& x) const;
    void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) const;
    void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) const;
    void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) const;
    bool cpy_tensor(const node& src, node& dst) const;
    void clear(std::uint8_t v) const;
    void reset() const;
    // Does [p, p + n) lie inside this buffer?
    bool contains(const std::byte* p, std::size_t n = 0) const noexcept;
    template <class T>
    T* target() const noexcept;

private:
    explicit any_buffer(std::shared_ptr<state> s) noexcept : s_(std::move(s)) {}
    state& get() const {
        detail::require(s_ != nullptr, "buffer");
        return *s_;
    }
    friend class any_buffer_type;
    friend any_buffer buffer_of(const node& t);
    friend void tensor_alloc(const any_buffer& buf, node& t, std::byte* addr);
    std::shared_ptr<state> s_;
};

struct any_buffer::state {
    std::unique_ptr<iface> impl;
    any_buffer_type type;
    buffer_usage usage = buffer_usage::any;
    std::byte* base = nullptr;
    std::size_t size = 0;
};

template <class B>
struct any_buffer::model final : any_buffer::iface {
    B b;
    explicit model(B x) : b(std::move(x)) {}
    std::string_view name() const override { return b.name(); }
    std::byte* base() const override { return b.base(); }
    std::size_t size() const override { return b.size(); }
    void init_tensor(node& x) override { backend::init_tensor(b, x); }
    void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) override { backend::set_tensor(b, x, p, off, n); }
    void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) override { backend::get_tensor(b, x, q, off, n); }
    void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) override {
        backend::memset_tensor(b, x, v, off, n);
    }
    bool cpy_tensor(const node& src, node& dst) override { return backend::cpy_tensor(b, src, dst); }
    void clear(std::uint8_t v) override { backend::clear(b, v); }
    void reset() override { backend::reset(b); }
    void* target(const std::type_info& t) noexcept override { return t == typeid(B) ? &b : nullptr; }
};

template <buffer B>
    requires detail::not_handle<any_buffer, B>
any_buffer::any_buffer(B b, any_buffer_type type) {
    auto s = std::make_shared<state>();
    s->impl = std::make_unique<model<B>>(std::move(b));
    s->type = std::move(type);
    s->base = s->impl->base();
    s->size = s->impl->size();
    s_ = std::move(s);
}

inline std::string_view any_buffer::name() const { return get().impl->name(); }
inline std::byte* any_buffer::base() const { return get().base; }
inline std::size_t any_buffer::size() const { return get().size; }
inline any_buffer_type any_buffer::type() const { return get().type; }
inline buffer_usage any_buffer::usage() const { return get().usage; }
inline void any_buffer::set_usage(buffer_usage u) const { get().usage = u; }
inline void any_buffer::init_tensor(node& x) const { get().impl->init_tensor(x); }
inline void any_buffer::set_tensor(node& x, const void* p, std::size_t off, std::size_t n) const {
    get().impl->set_tensor(x, p, off, n);
}
inline void any_buffer::get_tensor(const node& x, void* q, std::size_t off, std::size_t n) const {
    get().impl->get_tensor(x, q, off, n);
}
inline void any_buffer::memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) const {
    get().impl->memset_tensor(x, v, off, n);
}
inline bool any_buffer::cpy_tensor(const node& src, node& dst) const { return get().impl->cpy_tensor(src, dst); }
inline void any_buffer::clear(std::uint8_t v) const { get().impl->clear(v); }
inline void any_buffer::reset() const { get().impl->reset(); }
inline bool any_buffer::contains(const std::byte* p, std::size_t n) const noexcept {
    if (!s_ || !s_->base || !p) return false;
    const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(s_->base);
    return a >= b && a - b <= s_->size && n <= s_->size - (a - b);
}
template <class T>
T* any_buffer::target() const noexcept {
    return s_ ? static_cast<T*>(s_->impl->target(typeid(T))) : nullptr;
}

// ---- any_buffer_type (model) --------------------------------------------------------------

template <class T>
struct any_buffer_type::model final : any_buffer_type::iface {
    T t;
    explicit model(T x) : t(std::move(x)) {}
    std::string_view name() const override { return t.name(); }
    any_buffer alloc_buffer(std::size_t n) override { return t.alloc_buffer(n); }
    std::size_t alignment() const override { return t.alignment(); }
    std::size_t max_size() const override { return get_max_size(t); }
    std::size_t alloc_size(const node& x) const override { return get_alloc_size(t, x); }
    bool is_host() const override { return backend::is_host(t); }
    any_device device() const override;
    void* target(const std::type_info& ti) noexcept override { return ti == typeid(T) ? &t : nullptr; }
};

template <buffer_type T>
    requires detail::not_handle<any_buffer_type, T>
any_buffer_type::any_buffer_type(T t) : p_(std::make_shared<model<T>>(std::move(t))) {}

inline any_buffer any_buffer_type::alloc_buffer(std::size_t n) const {
    if (n > max_size())
        fail(errc::out_of_memory, "buffer type " + std::string(name()) + ": " + std::to_string(n) +
                                      " bytes exceed its maximum buffer size " + std::to_string(max_size()));
    any_buffer b = get().alloc_buffer(n);
    if (!b) fail(errc::out_of_memory, "buffer type " + std::string(name()) + ": could not allocate " + bytes_str(n));
    if (!b.s_->type) b.s_->type = *this;
    return b;
}

// ---- any_event ----------------------------------------------------------------------------

class any_event {
    struct iface {
        virtual ~iface() = default;
        virtual void record(any_backend& s) = 0;
        virtual void synchronize() = 0;
        virtual void wait(any_backend& s) = 0;
    };
    template <class E>
    struct model final : iface {
        E e;
        explicit model(E x) : e(std::move(x)) {}
        void record(any_backend& s) override { e.record(s); }
        void synchronize() override { e.synchronize(); }
        void wait(any_backend& s) override { event_wait(e, s); }
    };

public:
    any_event() = default;
    template <event E>
        requires detail::not_handle<any_event, E>
    explicit any_event(E e) : p_(std::make_shared<model<E>>(std::move(e))) {}
    explicit operator bool() const noexcept { return p_ != nullptr; }
    void record(any_backend& s) const { get().record(s); }
    void synchronize() const { get().synchronize(); }
    void wait(any_backend& s) const { get().wait(s); }

private:
    iface& get() const {
        detail::require(p_ != nullptr, "event");
        return *p_;
    }
    std::shared_ptr<iface> p_;
};

// ---- tensor I/O (ggml-backend.h) -----------------------------------------------------------

// The buffer that holds t's bytes (its view root's for a view), or an empty handle
// when t has no memory, its memory belongs to no buffer (a graph::context) or its
// buffer is gone.
inline any_buffer buffer_of(const node& t) {
    const node& root = t.view_src ? *t.view_src : t;
    if (!root.data) return {};
    return any_buffer(std::static_pointer_cast<any_buffer::state>(root.buffer.lock()));
}

// Can the CPU read t's bytes directly?
inline bool is_host_memory(const node& t) {
    const any_buffer b = buffer_of(t);
    return !b || b.is_host();
}

namespace detail {
inline void check_io(const node& t, std::size_t off, std::size_t n, const char* what) {
    if (!t.bytes()) fail(errc::invalid_argument, std::string(what) + ": " + tensor_desc(t) + " has no memory (allocate it first)");
    const std::size_t nb = t.lay.nbytes();
    if (off > nb || n > nb - off)
        fail(errc::invalid_argument, std::string(what) + ": bytes [" + std::to_string(off) + ", " + std::to_string(off + n) +
                                         ") are outside the " + std::to_string(nb) + " bytes of " + tensor_desc(t));
}
}  // namespace detail

// Places a (non-view) tensor at addr inside buf and lets the buffer initialize it
// (ggml_backend_tensor_alloc).
inline void tensor_alloc(const any_buffer& buf, node& t, std::byte* addr) {
    if (t.is_view()) fail(errc::invalid_argument, "tensor_alloc: " + detail::tensor_desc(t) + " is a view; place its root");
    if (t.data) fail(errc::invalid_argument, "tensor_alloc: " + detail::tensor_desc(t) + " already has memory");
    const std::size_t need = buf.alloc_size(t);
    if (!buf.contains(addr, need))
        fail(errc::invalid_argument, "tensor_alloc: " + detail::tensor_desc(t) + " (" + std::to_string(need) +
                                         " bytes) does not fit in buffer '" + std::string(buf.name()) + "' of " +
                                         std::to_string(buf.size()) + " bytes at that address");
    graph::context::bind(t, addr);
    t.buffer = buf.s_;
    buf.init_tensor(t);
}

inline void tensor_set(node& t, const void* data, std::size_t off, std::size_t n) {
    if (n == 0) return;
    detail::check_io(t, off, n, "tensor_set");
    if (const any_buffer b = buffer_of(t)) b.set_tensor(t, data, off, n);
    else std::memcpy(t.bytes() + off, data, n);
}
inline void tensor_set(node& t, const void* data, std::size_t n) { tensor_set(t, data, 0, n); }
inline void tensor_get(const node& t, void* data, std::size_t off, std::size_t n) {
    if (n == 0) return;
    detail::check_io(t, off, n, "tensor_get");
    if (const any_buffer b = buffer_of(t)) b.get_tensor(t, data, off, n);
    else std::memcpy(data, t.bytes() + off, n);
}
inline void tensor_memset(node& t, std::uint8_t v, std::size_t off, std::size_t n) {
    if (n == 0) return;
    detail::check_io(t, off, n, "tensor_memset");
    if (const any_buffer b = buffer_of(t)) b.memset_tensor(t, v, off, n);
    else std::memset(t.bytes() + off, v, n);
}

// Copies src's bytes into dst; both must have the same layout (type, ne, nb).
inline void tensor_copy(const node& src, node& dst) {
    if (src.lay.type != dst.lay.type || src.lay.ne != dst.lay.ne || src.lay.nb != dst.lay.nb)
        fail(errc::shape_mismatch, "tensor_copy: " + detail::tensor_desc(src) + " and " + detail::tensor_desc(dst) +
                                       " differ in layout");
    if (&src == &dst) return;
    const std::size_t n = src.lay.nbytes();
    detail::check_io(src, 0, n, "tensor_copy (source)");
    detail::check_io(dst, 0, n, "tensor_copy (destination)");
    if (is_host_memory(src)) {
        tensor_set(dst, src.bytes(), 0, n);
    } else if (is_host_memory(dst)) {
        tensor_get(src, dst.bytes(), 0, n);
    } else if (const any_buffer b = buffer_of(dst); !b.cpy_tensor(src, dst)) {
        std::vector<std::byte> staging(n);
        tensor_get(src, staging.data(), 0, n);
        tensor_set(dst, staging.data(), 0, n);
    }
}

// ---- any_backend --------------------------------------------------------------------------

class any_backend {
    struct iface {
        virtual ~iface() = default;
        virtual std::string_view name() const = 0;
        virtual backend::guid guid() const = 0;
        virtual any_device device() const = 0;
        virtual void graph_compute(graph_view g) = 0;
        virtual void graph_compute_async(graph_view g) = 0;
        virtual void set_tensor_async(node& x, const void* p, std::size_t off, std::size_t n) = 0;
        virtual void get_tensor_async(const node& x, void* q, std::size_t off, std::size_t n) = 0;
        virtual bool cpy_tensor_async(const node& src, node& dst) = 0;
        virtual bool ordered_copy_from(const any_backend& b) const = 0;
        virtual void synchronize() = 0;
        virtual graph_plan graph_plan_create(graph_view g) = 0;
        virtual void graph_plan_compute(graph_plan& p) = 0;
        virtual void* target(const std::type_info& t) noexcept = 0;
    };
    template <class S>
    struct model final : iface {
        S s;
        explicit model(S x) : s(std::move(x)) {}
        std::string_view name() const override { return s.name(); }
        backend::guid guid() const override { return s.guid(); }
        any_device device() const override;
        void graph_compute(graph_view g) override { s.graph_compute(g); }
        void graph_compute_async(graph_view g) override {
            if constexpr (requires { s.graph_compute_async(g); }) s.graph_compute_async(g);
            else s.graph_compute(g);
        }
        void set_tensor_async(node& x, const void* p, std::size_t off, std::size_t n) override {
            if constexpr (requires { s.set_tensor_async(x, p, off, n); }) s.set_tensor_async(x, p, off, n);
            else tensor_set(x, p, off, n);
        }
        void get_tensor_async(const node& x, void* q, std::size_t off, std::size_t n) override {
            if constexpr (requires { s.get_tensor_async(x, q, off, n); }) s.get_tensor_async(x, q, off, n);
            else tensor_get(x, q, off, n);
        }
        bool cpy_tensor_async(const node& src, node& dst) override {
            if constexpr (requires { { s.cpy_tensor_async(src, dst) } -> std::convertible_to<bool>; })
                return s.cpy_tensor_async(src, dst);
            else return false;
        }
        bool ordered_copy_from(const any_backend& b) const override {
            if constexpr (requires { { s.ordered_copy_from(b) } -> std::convertible_to<bool>; }) return s.ordered_copy_from(b);
            else return false;
        }
        void synchronize() override {
            if constexpr (requires { s.synchronize(); }) s.synchronize();
        }
        graph_plan graph_plan_create(graph_view g) override {
            if constexpr (requires { { s.graph_plan_create(g) } -> std::same_as<graph_plan>; }) return s.graph_plan_create(g);
            else return graph_plan{std::vector<node*>(g.nodes.begin(), g.nodes.end()), {}};
        }
        void graph_plan_compute(graph_plan& p) override {
            if constexpr (requires { s.graph_plan_compute(p); }) s.graph_plan_compute(p);
            else s.graph_compute(p.view());
        }
        void* target(const std::type_info& t) noexcept override { return t == typeid(S) ? &s : nullptr; }
    };

public:
    any_backend() = default;
    template <backend S>
        requires detail::not_handle<any_backend, S>
    explicit any_backend(S s) : p_(std::make_shared<model<S>>(std::move(s))) {}
    explicit operator bool() const noexcept { return p_ != nullptr; }
    friend bool operator==(const any_backend& a, const any_backend& b) noexcept { return a.p_ == b.p_; }

    std::string_view name() const { return get().name(); }
    backend::guid guid() const { return get().guid(); }
    any_device device() const;
    void graph_compute(graph_view g) const { get().graph_compute(g); }
    void graph_compute_async(graph_view g) const { get().graph_compute_async(g); }
    void set_tensor_async(node& x, const void* p, std::size_t off, std::size_t n) const { get().set_tensor_async(x, p, off, n); }
    void get_tensor_async(const node& x, void* q, std::size_t off, std::size_t n) const { get().get_tensor_async(x, q, off, n); }
    bool cpy_tensor_async(const node& src, node& dst) const { return get().cpy_tensor_async(src, dst); }
    // Is a cpy_tensor_async from a tensor b computes ordered after b's queued work without a host wait?
    bool ordered_copy_from(const any_backend& b) const { return get().ordered_copy_from(b); }
    void synchronize() const { get().synchronize(); }
    graph_plan graph_plan_create(graph_view g) const { return get().graph_plan_create(g); }
    void graph_plan_compute(graph_plan& p) const { get().graph_plan_compute(p); }
    // Convenience: the device's default buffer type, and a buffer of it.
    any_buffer_type default_buffer_type() const;
    any_buffer alloc_buffer(std::size_t n) const { return default_buffer_type().alloc_buffer(n); }
    template <class T>
    T* target() const noexcept {
        return p_ ? static_cast<T*>(p_->target(typeid(T))) : nullptr;
    }

private:
    iface& get() const {
        detail::require(p_ != nullptr, "backend");
        return *p_;
    }
    std::shared_ptr<iface> p_;
};

// ---- any_device ---------------------------------------------------------------------------

class any_device {
    struct iface {
        virtual ~iface() = default;
        virtual std::string_view name() const = 0;
        virtual std::string_view description() const = 0;
        virtual memory_info memory() const = 0;
        virtual device_type type() const = 0;
        virtual device_caps caps() const = 0;
        virtual any_backend init_backend(std::string_view params) = 0;
        virtual any_buffer_type buffer_type() = 0;
        virtual any_buffer_type host_buffer_type() = 0;
        virtual any_buffer buffer_from_host_ptr(void* p, std::size_t n, std::size_t max_tensor) = 0;
        virtual any_buffer buffer_from_file(const file_region& r) = 0;
        virtual bool supports_op(const node& x) const = 0;
        virtual bool supports_buft(const any_buffer_type& bt) const = 0;
        virtual bool offload_op(const node& x) const = 0;
        virtual bool emulated() const = 0;
        virtual any_event event_new() = 0;
        virtual std::vector<any_buffer_type> extra_buffer_types() = 0;
        virtual void* target(const std::type_info& t) noexcept = 0;
    };
    template <class D>
    struct model final : iface {
        D d;
        explicit model(D x) : d(std::move(x)) {}
        std::string_view name() const override { return d.name(); }
        std::string_view description() const override { return d.description(); }
        memory_info memory() const override { return d.memory(); }
        device_type type() const override { return d.type(); }
        device_caps caps() const override { return get_caps(d); }
        any_backend init_backend(std::string_view params) override { return d.init_backend(params); }
        any_buffer_type buffer_type() override { return d.buffer_type(); }
        any_buffer_type host_buffer_type() override {
            if constexpr (has_host_buffer_type<D>) return d.host_buffer_type();
            else return {};
        }
        any_buffer buffer_from_host_ptr(void* p, std::size_t n, std::size_t max_tensor) override {
            if constexpr (has_buffer_from_host_ptr<D>) return d.buffer_from_host_ptr(p, n, max_tensor);
            else fail(errc::unsupported, "device " + std::string(d.name()) + " cannot make a buffer from a host pointer");
        }
        any_buffer buffer_from_file(const file_region& r) override {
            if constexpr (has_buffer_from_file<D>) return d.buffer_from_file(r);
            else fail(errc::unsupported, "device " + std::string(d.name()) + " cannot map a file");
        }
        bool supports_op(const node& x) const override { return d.supports_op(x); }
        bool supports_buft(const any_buffer_type& bt) const override { return d.supports_buft(bt); }
        bool offload_op(const node& x) const override { return backend::offload_op(d, x); }
        bool emulated() const override { return backend::emulated(d); }
        any_event event_new() override {
            if constexpr (has_events<D>) return d.event_new();
            else return {};
        }
        std::vector<any_buffer_type> extra_buffer_types() override {
            if constexpr (requires { { d.extra_buffer_types() } -> std::convertible_to<std::vector<any_buffer_type>>; })
                return d.extra_buffer_types();
            else return {};
        }
        void* target(const std::type_info& t) noexcept override { return t == typeid(D) ? &d : nullptr; }
    };

public:
    any_device() = default;
    template <device D>
        requires detail::not_handle<any_device, D>
    explicit any_device(D d) : p_(std::make_shared<model<D>>(std::move(d))) {}
    explicit operator bool() const noexcept { return p_ != nullptr; }
    friend bool operator==(const any_device& a, const any_device& b) noexcept { return a.p_ == b.p_; }

    std::string_view name() const { return get().name(); }
    std::string_view description() const { return get().description(); }
    memory_info memory() const { return get().memory(); }
    device_type type() const { return get().type(); }
    device_caps caps() const { return get().caps(); }
    device_props props() const {
        const memory_info m = memory();
        return device_props{std::string(name()), std::string(description()), m.free, m.total, type(), caps()};
    }
    any_backend init_backend(std::string_view params = {}) const { return get().init_backend(params); }
    any_buffer_type buffer_type() const { return get().buffer_type(); }
    any_buffer_type host_buffer_type() const { return get().host_buffer_type(); }
    any_buffer buffer_from_host_ptr(void* p, std::size_t n, std::size_t max_tensor) const {
        return get().buffer_from_host_ptr(p, n, max_tensor);
    }
    // A buffer over a file region the device maps itself (caps().buffer_from_file).
    any_buffer buffer_from_file(const file_region& r) const { return get().buffer_from_file(r); }
    bool supports_op(const node& x) const { return get().supports_op(x); }
    bool supports_buft(const any_buffer_type& bt) const { return get().supports_buft(bt); }
    bool offload_op(const node& x) const { return get().offload_op(x); }
    // A device type emulated on the host's CPU (e.g. a software Vulkan driver): listed and
    // usable, but registry::init_best() passes over it.
    bool emulated() const { return get().emulated(); }
    any_event event_new() const { return get().event_new(); }
    std::vector<any_buffer_type> extra_buffer_types() const { return get().extra_buffer_types(); }
    template <class T>
    T* target() const noexcept {
        return p_ ? static_cast<T*>(p_->target(typeid(T))) : nullptr;
    }

private:
    iface& get() const {
        detail::require(p_ != nullptr, "device");
        return *p_;
    }
    std::shared_ptr<iface> p_;
};

// ---- any_reg ------------------------------------------------------------------------------

class any_reg {
    struct iface {
        virtual ~iface() = default;
        virtual std::string_view name() const = 0;
        virtual std::size_t device_count() const = 0;
        virtual any_device device(std::size_t i) = 0;
        virtual void* proc_address(std::string_view s) const = 0;
    };
    template <class R>
    struct model final : iface {
        R r;
        explicit model(R x) : r(std::move(x)) {}
        std::string_view name() const override { return r.name(); }
        std::size_t device_count() const override { return r.device_count(); }
        any_device device(std::size_t i) override { return r.device(i); }
        void* proc_address(std::string_view s) const override { return get_proc_address(r, s); }
    };

public:
    any_reg() = default;
    template <backend_reg R>
        requires detail::not_handle<any_reg, R>
    explicit any_reg(R r) : p_(std::make_shared<model<R>>(std::move(r))) {}
    explicit operator bool() const noexcept { return p_ != nullptr; }
    friend bool operator==(const any_reg& a, const any_reg& b) noexcept { return a.p_ == b.p_; }

    std::string_view name() const { return get().name(); }
    std::size_t device_count() const { return get().device_count(); }
    any_device device(std::size_t i) const {
        if (i >= device_count())
            fail(errc::invalid_argument, "backend " + std::string(name()) + ": device index " + std::to_string(i) +
                                             " out of range (" + std::to_string(device_count()) + " devices)");
        return get().device(i);
    }
    void* proc_address(std::string_view s) const { return get().proc_address(s); }
    // A well-known entry point as a typed function pointer, or null.
    template <class F>
    F proc(std::string_view s) const {
        return reinterpret_cast<F>(proc_address(s));
    }

private:
    iface& get() const {
        detail::require(p_ != nullptr, "backend registry");
        return *p_;
    }
    std::shared_ptr<iface> p_;
};

// ---- out-of-line members that need the later handles -----------------------------------------

template <class T>
any_device any_buffer_type::model<T>::device() const {
    if constexpr (requires { { t.device() } -> std::same_as<any_device>; }) return t.device();
    else return {};
}
inline any_device any_buffer_type::device() const { return get().device(); }
template <class S>
any_device any_backend::model<S>::device() const {
    return s.device();
}
inline any_device any_backend::device() const { return get().device(); }
inline any_buffer_type any_backend::default_buffer_type() const { return device().buffer_type(); }

// Every handle models its own concept.
static_assert(buffer_type<any_buffer_type>);
static_assert(buffer<any_buffer>);
static_assert(event<any_event>);
static_assert(backend<any_backend>);
static_assert(device<any_device>);
static_assert(backend_reg<any_reg>);

}  // namespace backend
TESSERA_END_NAMESPACE
