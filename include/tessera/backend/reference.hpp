// The reference backend "REF": a second, independent implementation of every backend
// concept, used to check the CPU backend through the generic API. It computes a
// subset of ops one element at a time, in double, on one thread, written from the
// ops' definitions (not from the CPU kernels). Its buffers are not host buffers
// (is_host false), so it behaves like a device with its own memory: the CPU cannot
// read them, and a scheduler copies tensors that cross between the two.
//
// Ops: none/view/reshape/permute/transpose, cpy/cont/dup (f32, f16, bf16, i32),
// add/sub/mul/div (broadcast), scale, rms_norm, norm, mul_mat (a f32/f16/bf16, b f32),
// get_rows, rope (normal, neox; ext_factor 0, no freq factors), soft_max (scale,
// f32/f16 mask, no ALiBi, no sinks), unary silu/relu/neg, glu swiglu. Everything else is
// refused by supports_op (and by graph_compute, with the reason). Tests make it refuse
// more ops with reference_options().refuse.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/f16.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

// Settings of the (single) reference device.
struct reference_settings {
    std::set<graph::op_kind> refuse;  // ops it claims not to support, on top of its own limits
};
inline reference_settings& reference_options() {
    static reference_settings s;
    return s;
}

any_device reference_device();
any_buffer_type reference_buffer_type();

// ---- buffer, buffer type ---------------------------------------------------------------------

inline constexpr std::size_t reference_alignment = 64;

class reference_buffer {
public:
    explicit reference_buffer(std::size_t n) : size_(n) {
        if (n) {
            try {
                base_ = static_cast<std::byte*>(::operator new(n, std::align_val_t(reference_alignment)));
            } catch (const std::bad_alloc&) {
                fail(errc::out_of_memory, "REF buffer: could not allocate " + bytes_str(n));
            }
            std::memset(base_, 0, n);
        }
    }
    reference_buffer(reference_buffer&& o) noexcept : base_(std::exchange(o.base_, nullptr)), size_(o.size_) {}
    reference_buffer& operator=(reference_buffer&&) = delete;
    ~reference_buffer() {
        if (base_) ::operator delete(base_, std::align_val_t(reference_alignment));
    }
    std::string_view name() const noexcept { return "REF"; }
    std::byte* base() const noexcept { return base_; }
    std::size_t size() const noexcept { return size_; }
    // "Device" I/O: explicit, and checked against the buffer's bounds.
    void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) { std::memcpy(at(x, off, n), p, n); }
    void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) const { std::memcpy(q, at(x, off, n), n); }
    void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) { std::memset(at(x, off, n), v, n); }
    bool cpy_tensor(const node& src, node& dst) {
        const any_buffer sb = buffer_of(src);
        if (!sb || !sb.target<reference_buffer>()) return false;  // only REF -> REF on the device
        std::memcpy(at(dst, 0, dst.lay.nbytes()), src.bytes(), src.lay.nbytes());
        return true;
    }
    void clear(std::uint8_t v) {
        if (base_) std::memset(base_, v, size_);
    }

private:
    std::byte* at(const node& x, std::size_t off, std::size_t n) const {
        std::byte* p = x.bytes() + off;
        if (p < base_ || p + n > base_ + size_)
            fail(errc::invalid_argument, "REF buffer: " + detail::tensor_desc(x) + " is not inside this buffer");
        return p;
    }
    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
};
static_assert(buffer<reference_buffer>);

struct reference_buffer_type_model {
    std::string_view name() const noexcept { return "REF"; }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(reference_buffer(n)); }
    std::size_t alignment() const noexcept { return reference_alignment; }
    std::size_t max_size() const noexcept { return std::size_t{1} << 40; }
    bool is_host() const noexcept { return false; }
    any_device device() const { return reference_device(); }
};
static_assert(buffer_type<reference_buffer_type_model>);

inline any_buffer_type reference_buffer_type() {
    static const any_buffer_type t{reference_buffer_type_model{}};
    return t;
}

// ---- the op implementations ------------------------------------------------------------------

namespace ref {

using graph::op_kind;


inline double load(const node& t, std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
    const std::byte* p = t.bytes() + static_cast<std::size_t>(i0) * t.lay.nb[0] + static_cast<std::size_t>(i1) * t.lay.nb[1] +
                         static_cast<std::size_t>(i2) * t.lay.nb[2] + static_cast<std::size_t>(i3) * t.lay.nb[3];
    switch (t.lay.type) {
        case type_id::f32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case type_id::f16: {
            std::uint16_t b;
            std::memcpy(&b, p, 2);
            return f16::from_bits(b).to_float();
        }
        case type_id::bf16: {
            std::uint16_t b;
            std::memcpy(&b, p, 2);
            return bf16::from_bits(b).to_float();
        }
        case type_id::i32: {
            std::int32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        default: return 0.0;
    }
}
inline void store(const node& t, std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3, double v) {
    std::byte* p = t.bytes() + static_cast<std::size_t>(i0) * t.lay.nb[0] + static_cast<std::size_t>(i1) * t.lay.nb[1] +
                   static_cast<std::size_t>(i2) * t.lay.nb[2] + static_cast<std::size_t>(i3) * t.lay.nb[3];
    switch (t.lay.type) {
        case type_id::f32: {
            const auto f = static_cast<float>(v);
            std::memcpy(p, &f, 4);
            break;
        }
        case type_id::f16: {
            const auto b = f16::from_float(static_cast<float>(v)).bits;
            std::memcpy(p, &b, 2);
            break;
        }
        case type_id::bf16: {
            const auto b = bf16::from_float(static_cast<float>(v)).bits;
            std::memcpy(p, &b, 2);
            break;
        }
        case type_id::i32: {
            const auto i = static_cast<std::int32_t>(v);
            std::memcpy(p, &i, 4);
            break;
        }
        default: break;
    }
}

template <class F>
void for_each(const node& t, F&& f) {
    const auto& ne = t.lay.ne;
    for (std::int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (std::int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (std::int64_t i0 = 0; i0 < ne[0]; ++i0) f(i0, i1, i2, i3);
}

// Empty when supported; otherwise why not.
inline std::string unsupported_reason(const node& n) {
    const node* a = n.src[0];
    const node* b = n.src[1];
    const auto tn = [](type_id t) { return std::string(type_name(t)); };
    const bool plain = n.lay.type == type_id::f32 || n.lay.type == type_id::f16 || n.lay.type == type_id::bf16 ||
                       n.lay.type == type_id::i32;
    if (reference_options().refuse.count(n.op)) return "refused by reference_options()";
    switch (n.op) {
        case op_kind::none:
        case op_kind::view:
        case op_kind::reshape:
        case op_kind::permute:
        case op_kind::transpose: return {};
        case op_kind::cpy:
        case op_kind::cont:
        case op_kind::dup: {
            const type_id ta = a->lay.type;
            const bool pa = is_float(ta) || ta == type_id::i32;
            return pa && plain ? std::string() : "copy " + tn(ta) + " -> " + tn(n.lay.type);
        }
        case op_kind::add:
        case op_kind::sub:
        case op_kind::mul:
        case op_kind::div:
            return is_float(n.lay.type) && is_float(a->lay.type) && is_float(b->lay.type) ? std::string()
                                                                                           : "binary op on non-float types";
        case op_kind::scale:
        case op_kind::rms_norm:
        case op_kind::norm: return is_float(n.lay.type) && is_float(a->lay.type) ? std::string() : "needs float tensors";
        case op_kind::unary: {
            const auto u = n.param<graph::unary_params>().op;
            if (u != graph::unary_op::silu && u != graph::unary_op::relu && u != graph::unary_op::neg)
                return "unary " + std::string(graph::unary_name(u));
            return is_float(n.lay.type) ? std::string() : "unary on " + tn(n.lay.type);
        }
        case op_kind::glu: return n.param<graph::glu_params>().op == graph::glu_op::swiglu ? std::string() : "glu other than swiglu";
        case op_kind::mul_mat:
            if (!is_float(a->lay.type)) return "mul_mat with a " + tn(a->lay.type) + " weight";
            return b->lay.type == type_id::f32 ? std::string() : "mul_mat with b " + tn(b->lay.type);
        case op_kind::get_rows: return is_float(a->lay.type) ? std::string() : "get_rows of " + tn(a->lay.type);
        case op_kind::rope: {
            const auto& p = n.param<graph::rope_params>();
            if (p.mode != graph::rope_mode_normal && p.mode != graph::rope_mode_neox) return "rope mode " + std::to_string(p.mode);
            if (p.ext_factor != 0.0f) return "rope with YaRN ext_factor";
            if (n.src[2]) return "rope with frequency factors";
            return is_float(n.lay.type) ? std::string() : "rope on " + tn(n.lay.type);
        }
        case op_kind::soft_max:
            if (n.param<graph::soft_max_params>().max_bias != 0.0f) return "soft_max with ALiBi";
            if (n.src[2]) return "soft_max with sinks";
            return is_float(n.lay.type) ? std::string() : "soft_max on " + tn(n.lay.type);
        default: return "op " + std::string(graph::op_name(n.op)) + " is not implemented by the reference backend";
    }
}

inline void copy(const node& d) {
    const node& a = *d.src[0];
    const auto& ne = a.lay.ne;
    const auto& de = d.lay.ne;
    std::int64_t k = 0;
    for_each(a, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        std::int64_t r = k++;
        const std::int64_t j0 = r % de[0];
        r /= de[0];
        const std::int64_t j1 = r % de[1];
        r /= de[1];
        const std::int64_t j2 = r % de[2];
        const std::int64_t j3 = r / de[2];
        store(d, j0, j1, j2, j3, load(a, i0, i1, i2, i3));
    });
    (void)ne;
}

inline void binary(const node& d) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& be = b.lay.ne;
    for_each(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        const double x = load(a, i0, i1, i2, i3);
        const double y = load(b, i0 % be[0], i1 % be[1], i2 % be[2], i3 % be[3]);
        double r = 0;
        switch (d.op) {
            case op_kind::add: r = x + y; break;
            case op_kind::sub: r = x - y; break;
            case op_kind::mul: r = x * y; break;
            default: r = x / y; break;
        }
        store(d, i0, i1, i2, i3, r);
    });
}

inline double silu(double x) { return x / (1.0 + std::exp(-x)); }

inline void elementwise(const node& d) {
    const node& a = *d.src[0];
    for_each(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        const double x = load(a, i0, i1, i2, i3);
        double r = x;
        if (d.op == op_kind::scale) {
            const auto& p = d.param<graph::scale_params>();
            r = x * static_cast<double>(p.s) + static_cast<double>(p.b);
        } else {
            switch (d.param<graph::unary_params>().op) {
                case graph::unary_op::silu: r = silu(x); break;
                case graph::unary_op::relu: r = x > 0 ? x : 0; break;
                default: r = -x; break;
            }
        }
        store(d, i0, i1, i2, i3, r);
    });
}

inline void norm(const node& d) {
    const node& a = *d.src[0];
    const double eps = d.param<graph::norm_params>().eps;
    const std::int64_t n0 = a.lay.ne[0];
    for (std::int64_t i3 = 0; i3 < d.lay.ne[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < d.lay.ne[2]; ++i2)
            for (std::int64_t i1 = 0; i1 < d.lay.ne[1]; ++i1) {
                double mean = 0, sq = 0;
                for (std::int64_t i0 = 0; i0 < n0; ++i0) mean += load(a, i0, i1, i2, i3);
                mean /= static_cast<double>(n0);
                if (d.op == op_kind::rms_norm) mean = 0;
                for (std::int64_t i0 = 0; i0 < n0; ++i0) {
                    const double v = load(a, i0, i1, i2, i3) - mean;
                    sq += v * v;
                }
                const double s = 1.0 / std::sqrt(sq / static_cast<double>(n0) + eps);
                for (std::int64_t i0 = 0; i0 < n0; ++i0) store(d, i0, i1, i2, i3, (load(a, i0, i1, i2, i3) - mean) * s);
            }
}

inline void glu(const node& d) {
    const node& a = *d.src[0];
    const node* b = d.src[1];
    const bool swapped = d.param<graph::glu_params>().swapped;
    const std::int64_t half = d.lay.ne[0];
    for_each(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        double x, g;
        if (b) {
            x = load(a, i0, i1, i2, i3);
            g = load(*b, i0, i1, i2, i3);
        } else {
            x = load(a, i0 + (swapped ? half : 0), i1, i2, i3);
            g = load(a, i0 + (swapped ? 0 : half), i1, i2, i3);
        }
        store(d, i0, i1, i2, i3, silu(x) * g);
    });
}

inline void mul_mat(const node& d) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const std::int64_t K = a.lay.ne[0];
    const std::int64_t r2 = b.lay.ne[2] / a.lay.ne[2], r3 = b.lay.ne[3] / a.lay.ne[3];
    for_each(d, [&](std::int64_t m, std::int64_t n, std::int64_t i2, std::int64_t i3) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k) s += load(a, k, m, i2 / r2, i3 / r3) * load(b, k, n, i2, i3);
        store(d, m, n, i2, i3, s);
    });
}

inline void get_rows(const node& d) {
    const node& a = *d.src[0];
    const node& idx = *d.src[1];
    for_each(d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        const auto r = static_cast<std::int64_t>(load(idx, i1, i2, i3, 0));
        if (r < 0 || r >= a.lay.ne[1])
            fail(errc::invalid_argument, "REF get_rows: index " + std::to_string(r) + " out of range for " + detail::tensor_desc(a));
        store(d, i0, i1, i2, i3, load(a, i0, r, i2, i3));
    });
}

inline void rope(const node& d) {
    const node& a = *d.src[0];
    const node& pos = *d.src[1];
    const auto& p = d.param<graph::rope_params>();
    const bool neox = p.mode == graph::rope_mode_neox;
    const std::int64_t nd = p.n_dims;
    for (std::int64_t i3 = 0; i3 < d.lay.ne[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < d.lay.ne[2]; ++i2) {
            const double position = load(pos, i2, 0, 0, 0);
            for (std::int64_t i1 = 0; i1 < d.lay.ne[1]; ++i1) {
                for (std::int64_t i0 = nd; i0 < d.lay.ne[0]; ++i0) store(d, i0, i1, i2, i3, load(a, i0, i1, i2, i3));
                for (std::int64_t k = 0; k < nd / 2; ++k) {
                    const double theta = static_cast<double>(p.freq_scale) * position *
                                         std::pow(static_cast<double>(p.freq_base), -2.0 * static_cast<double>(k) / static_cast<double>(nd));
                    const double c = std::cos(theta) * static_cast<double>(p.attn_factor);
                    const double s = std::sin(theta) * static_cast<double>(p.attn_factor);
                    const std::int64_t j0 = neox ? k : 2 * k, j1 = neox ? k + nd / 2 : 2 * k + 1;
                    const double x0 = load(a, j0, i1, i2, i3), x1 = load(a, j1, i1, i2, i3);
                    store(d, j0, i1, i2, i3, x0 * c - x1 * s);
                    store(d, j1, i1, i2, i3, x0 * s + x1 * c);
                }
            }
        }
}

inline void soft_max(const node& d) {
    const node& a = *d.src[0];
    const node* mask = d.src[1];
    const double scale = d.param<graph::soft_max_params>().scale;
    const std::int64_t n0 = d.lay.ne[0];
    std::vector<double> row(static_cast<std::size_t>(n0));
    for (std::int64_t i3 = 0; i3 < d.lay.ne[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < d.lay.ne[2]; ++i2)
            for (std::int64_t i1 = 0; i1 < d.lay.ne[1]; ++i1) {
                double mx = -std::numeric_limits<double>::infinity();
                for (std::int64_t i0 = 0; i0 < n0; ++i0) {
                    double v = load(a, i0, i1, i2, i3) * scale;
                    if (mask) v += load(*mask, i0, i1, i2 % mask->lay.ne[2], i3 % mask->lay.ne[3]);
                    row[static_cast<std::size_t>(i0)] = v;
                    mx = std::max(mx, v);
                }
                double sum = 0;
                for (auto& v : row) {
                    v = mx == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(v - mx);
                    sum += v;
                }
                for (std::int64_t i0 = 0; i0 < n0; ++i0)
                    store(d, i0, i1, i2, i3, sum > 0 ? row[static_cast<std::size_t>(i0)] / sum : 0.0);
            }
}

inline void compute(const node& n) {
    switch (n.op) {
        case op_kind::cpy:
        case op_kind::cont:
        case op_kind::dup: return copy(n);
        case op_kind::add:
        case op_kind::sub:
        case op_kind::mul:
        case op_kind::div: return binary(n);
        case op_kind::scale:
        case op_kind::unary: return elementwise(n);
        case op_kind::rms_norm:
        case op_kind::norm: return norm(n);
        case op_kind::glu: return glu(n);
        case op_kind::mul_mat: return mul_mat(n);
        case op_kind::get_rows: return get_rows(n);
        case op_kind::rope: return rope(n);
        case op_kind::soft_max: return soft_max(n);
        default: return;  // views and leafs
    }
}

}  // namespace ref

// ---- backend, event, device, registry --------------------------------------------------------

class reference_backend {
public:
    static constexpr backend::guid ref_guid = {0x52, 0x45, 0x46, 0x2d, 0x74, 0x65, 0x73, 0x73,
                                               0x65, 0x72, 0x61, 0x2d, 0x72, 0x65, 0x66, 0x01};
    std::string_view name() const noexcept { return "REF"; }
    backend::guid guid() const noexcept { return ref_guid; }
    any_device device() const { return reference_device(); }
    void graph_compute(graph_view g) const {
        for (const node* n : g.nodes) {
            if (const std::string why = ref::unsupported_reason(*n); !why.empty())
                fail(errc::unsupported, "REF: node '" + n->name + "' (" + graph::cgraph::op_label(*n) + "): " + why);
            auto check = [&](const node& t) {
                if (!t.bytes() && t.lay.nelements() > 0)
                    fail(errc::invalid_argument, "REF: tensor " + detail::tensor_desc(t) + " has no memory");
                const any_buffer b = buffer_of(t);
                if (!b || !b.target<reference_buffer>())
                    fail(errc::invalid_argument, "REF: tensor " + detail::tensor_desc(t) + " used by '" + n->name + "' is in " +
                                                     (b ? "buffer '" + std::string(b.name()) + "'" : std::string("host memory")) +
                                                     ", not in a REF buffer; copy it there or run the graph through a scheduler");
            };
            if (n->op == graph::op_kind::none || n->is_view()) {
                if (n->op != graph::op_kind::cpy) continue;
            }
            check(*n);
            for (const node* s : n->src)
                if (s) check(*s);
        }
        for (const node* n : g.nodes) ref::compute(*n);
    }
    void synchronize() const noexcept {}
};
static_assert(backend<reference_backend>);

// Events of a synchronous device: recording marks the point; there is never anything
// to wait for.
struct reference_event {
    std::shared_ptr<int> records = std::make_shared<int>(0);
    void record(any_backend& s) const {
        s.synchronize();
        ++*records;
    }
    void synchronize() const noexcept {}
};
static_assert(event<reference_event>);

struct reference_device_model {
    std::string_view name() const noexcept { return "REF"; }
    std::string_view description() const noexcept { return "tessera reference backend (scalar, double, one thread)"; }
    memory_info memory() const noexcept { return {std::size_t{1} << 30, std::size_t{1} << 30}; }
    device_type type() const noexcept { return device_type::gpu; }
    any_backend init_backend(std::string_view) const { return any_backend(reference_backend{}); }
    any_buffer_type buffer_type() const { return reference_buffer_type(); }
    bool supports_op(const node& x) const { return ref::unsupported_reason(x).empty(); }
    bool supports_buft(const any_buffer_type& bt) const { return bt == reference_buffer_type(); }
    any_event event_new() const { return any_event(reference_event{}); }
};
static_assert(device<reference_device_model>);
static_assert(has_events<reference_device_model> && !has_buffer_from_host_ptr<reference_device_model>);

inline any_device reference_device() {
    static const any_device d{reference_device_model{}};
    return d;
}

struct reference_reg_model {
    std::string_view name() const noexcept { return "REF"; }
    std::size_t device_count() const noexcept { return 1; }
    any_device device(std::size_t) const { return reference_device(); }
};
static_assert(backend_reg<reference_reg_model>);

inline any_reg reference_reg() {
    static const any_reg r{reference_reg_model{}};
    return r;
}
inline any_backend reference_init() { return any_backend(reference_backend{}); }

}  // namespace backend
TESSERA_END_NAMESPACE
