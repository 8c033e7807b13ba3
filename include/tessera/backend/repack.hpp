// The CPU repack buffer type (the role of ggml's CPU_REPACK / AMX extra buffer types):
// quantized weights written into it are stored in the layout the packed GEMM reads
// fastest, so mul_mat does no per-call weight packing and reads them as one stream.
//
//   repack_buffer_type()  "CPU_REPACK": alignment 64, not host memory (its bytes are not
//                         in ggml's layout); alloc_size of a repacked tensor is
//                         kernels::repacked_bytes (q4_0/q8_0: the plain size when
//                         ne0 % 512 == 0; q4_K: 296 bytes per 288 when ne0 % 512 == 0)
//   repack_buffer         a q4_0 or q8_0 tensor (ne0 % 32 == 0) or a q4_K tensor
//                         (ne0 % 256 == 0) placed in it, contiguous and with ne1 % 4 == 0,
//                         is marked node::pack = rows4_x16 and stored in the
//                         layout of kernels/quant/repack.hpp; set_tensor repacks,
//                         get_tensor unpacks (reads give the original bytes back, also
//                         for partial ranges), memset and clear act on the plain bytes.
//                         Other tensors are stored as they are.
//   repack_device()       "CPU_REPACK", type ACCEL: computes on the CPU (init_backend
//                         gives a CPU stream); supports_op = mul_mat whose weights are
//                         repacked here; reads host buffers and its own.
// The CPU device lists the buffer type in extra_buffer_types() and can read it (only
// mul_mat may: graph/cpu/ops.hpp refuses any other use of a repacked tensor by name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/kernels/quant/repack.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

inline constexpr std::size_t repack_alignment = 64;

// Whether a tensor placed in a CPU_REPACK buffer is stored repacked.
inline bool repackable(const node& x) noexcept {
    return !x.is_view() && x.lay.is_contiguous() && x.lay.ne[1] % kernels::repack_rows == 0 &&
           kernels::can_repack(x.lay.type, x.lay.ne[0], x.lay.nrows());
}

class repack_buffer {
public:
    explicit repack_buffer(std::size_t n) : mem_(n, repack_alignment) {}

    std::string_view name() const noexcept { return "CPU_REPACK"; }
    std::byte* base() const noexcept { return mem_.base(); }
    std::size_t size() const noexcept { return mem_.size(); }

    void init_tensor(node& x) {
        if (!repackable(x)) return;
        x.pack = graph::packing::rows4_x16;
        packed_.push_back({static_cast<std::size_t>(x.bytes() - base()), x.lay.type, x.lay.ne[0], x.lay.nrows()});
    }
    void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) {
        if (x.pack == graph::packing::plain) return void(std::memcpy(x.bytes() + off, p, n));
        const entry e = entry_of(x);
        if (off == 0 && n == x.lay.nbytes()) return kernels::repack_matrix(e.type, e.k, e.nrows, p, x.bytes());
        std::vector<std::byte> plain = unpacked(e);  // a part: read, patch, write back
        std::memcpy(plain.data() + off, p, n);
        kernels::repack_matrix(e.type, e.k, e.nrows, plain.data(), x.bytes());
    }
    void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) const {
        if (x.pack == graph::packing::plain) return void(std::memcpy(q, x.bytes() + off, n));
        const entry e = entry_of(x);
        if (off == 0 && n == x.lay.nbytes()) return kernels::unpack_matrix(e.type, e.k, e.nrows, x.bytes(), q);
        const std::vector<std::byte> plain = unpacked(e);
        std::memcpy(q, plain.data() + off, n);
    }
    void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) {
        if (x.pack == graph::packing::plain) return void(std::memset(x.bytes() + off, v, n));
        const entry e = entry_of(x);
        std::vector<std::byte> plain = unpacked(e);
        std::memset(plain.data() + off, v, n);
        kernels::repack_matrix(e.type, e.k, e.nrows, plain.data(), x.bytes());
    }
    // Every byte of every tensor reads back as v; the padding of repacked tensors stays zero.
    void clear(std::uint8_t v) {
        if (size()) std::memset(base(), v, size());
        for (const entry& e : packed_) {
            std::vector<std::byte> plain(e.plain_bytes(), std::byte{v});
            kernels::repack_matrix(e.type, e.k, e.nrows, plain.data(), base() + e.offset);
        }
    }
    // Forgets the repacked tensors (the allocator is about to place new ones).
    void reset() { packed_.clear(); }

private:
    struct entry {
        std::size_t offset;
        type_id type;
        std::int64_t k, nrows;
        std::size_t plain_bytes() const { return static_cast<std::size_t>(row_size(type, k)) * static_cast<std::size_t>(nrows); }
    };
    entry entry_of(const node& x) const {
        const auto off = static_cast<std::size_t>(x.bytes() - base());
        for (const entry& e : packed_)
            if (e.offset == off) return e;
        fail(errc::invalid_argument, "CPU_REPACK: " + detail::tensor_desc(x) + " is marked repacked but was not placed in this buffer");
    }
    std::vector<std::byte> unpacked(const entry& e) const {
        std::vector<std::byte> plain(e.plain_bytes());
        kernels::unpack_matrix(e.type, e.k, e.nrows, base() + e.offset, plain.data());
        return plain;
    }

    cpu_buffer mem_;  // owned, zeroed memory
    std::vector<entry> packed_;
};
static_assert(buffer<repack_buffer>);

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
        if (x.op != graph::op_kind::mul_mat || !x.src[0] || x.src[0]->pack == graph::packing::plain) return false;
        const any_buffer b = buffer_of(*x.src[0]);
        return b && b.type() == repack_buffer_type() && graph::cpu::unsupported_reason(x).empty();
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
