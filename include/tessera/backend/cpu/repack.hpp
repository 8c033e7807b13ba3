// repack_buffer: the memory of the CPU_REPACK buffer type (the role of ggml's CPU
// extra buffer types and their tensor traits). A q4_0 or q8_0 tensor (ne0 % 32 == 0) or
// a q4_K tensor (ne0 % 256 == 0) placed in it, contiguous and with ne1 % 4 == 0, is
// stored in a layout of kernels/quant/repack.hpp (rows interleaved four or eight at a
// time, what the packed GEMM reads), the one repack_layout_for gives for the arch active
// when the tensor is placed (on AArch64 q4_0 and iq4_nl take the interleave of that
// arch's GEMM; iq4_nl is repacked on AArch64 only);
// the buffer records which tensors it repacked and how, so the graph node carries no
// layout, and every arch's GEMM reads every layout. set_tensor repacks, get_tensor unpacks (reads give the
// original bytes back, also for partial ranges), memset and clear act on the plain
// bytes. Other tensors are stored as they are. is_repacked(t) is what the CPU ops ask.
// The buffer type and the CPU_REPACK device are in backend/cpu.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/backend/cpu/buffer.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/kernels/quant/repack.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

inline constexpr std::size_t repack_alignment = 64;

// The layout a tensor placed now is stored in (the active arch's; groups of rows never
// cross a matrix, so the choice looks at ne1).
inline kernels::repack_layout repack_layout_now(const node& x) {
    return kernels::repack_layout_for(x.lay.type, x.lay.ne[1], simd::active_arch());
}
// Whether a tensor placed in a CPU_REPACK buffer is stored repacked.
inline bool repackable(const node& x) {
    const kernels::repack_layout l = repack_layout_now(x);
    return !x.is_view() && x.lay.is_contiguous() && x.lay.ne[1] % kernels::repack_group_rows(l) == 0 &&
           kernels::can_repack(x.lay.type, x.lay.ne[0], x.lay.nrows(), l);
}
// Bytes a tensor takes in a CPU_REPACK buffer.
inline std::size_t repack_alloc_size(const node& x) {
    return repackable(x) ? kernels::repacked_bytes(x.lay.type, x.lay.ne[0], x.lay.nrows(), repack_layout_now(x))
                         : x.lay.nbytes();
}

class repack_buffer {
public:
    explicit repack_buffer(std::size_t n) : mem_(n, repack_alignment) {}

    std::string_view name() const noexcept { return "CPU_REPACK"; }
    std::byte* base() const noexcept { return mem_.base(); }
    std::size_t size() const noexcept { return mem_.size(); }

    // Is x (placed in this buffer) stored repacked? (ggml's tensor traits of an extra
    // buffer type: the buffer, not the tensor, knows the layout.)
    bool repacked(const node& x) const noexcept { return find(x) != nullptr; }
    // The layout x is stored in (repacked(x) must hold).
    kernels::repack_layout layout(const node& x) const noexcept { return find(x)->lay; }

    void init_tensor(node& x) {
        if (!repackable(x)) return;
        packed_.push_back({static_cast<std::size_t>(x.bytes() - base()), x.lay.type, x.lay.ne[0], x.lay.nrows(), repack_layout_now(x)});
    }
    void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) {
        const entry* e = find(x);
        if (!e) return void(std::memcpy(x.bytes() + off, p, n));
        if (off == 0 && n == x.lay.nbytes()) return kernels::repack_matrix(e->type, e->k, e->nrows, p, x.bytes(), e->lay);
        std::vector<std::byte> plain = unpacked(*e);  // a part: read, patch, write back
        std::memcpy(plain.data() + off, p, n);
        kernels::repack_matrix(e->type, e->k, e->nrows, plain.data(), x.bytes(), e->lay);
    }
    void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) const {
        const entry* e = find(x);
        if (!e) return void(std::memcpy(q, x.bytes() + off, n));
        if (off == 0 && n == x.lay.nbytes()) return kernels::unpack_matrix(e->type, e->k, e->nrows, x.bytes(), q, e->lay);
        const std::vector<std::byte> plain = unpacked(*e);
        std::memcpy(q, plain.data() + off, n);
    }
    void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) {
        const entry* e = find(x);
        if (!e) return void(std::memset(x.bytes() + off, v, n));
        std::vector<std::byte> plain = unpacked(*e);
        std::memset(plain.data() + off, v, n);
        kernels::repack_matrix(e->type, e->k, e->nrows, plain.data(), x.bytes(), e->lay);
    }
    // Every byte of every tensor reads back as v; the padding of repacked tensors stays zero.
    void clear(std::uint8_t v) {
        if (size()) std::memset(base(), v, size());
        for (const entry& e : packed_) {
            std::vector<std::byte> plain(e.plain_bytes(), std::byte{v});
            kernels::repack_matrix(e.type, e.k, e.nrows, plain.data(), base() + e.offset, e.lay);
        }
    }
    // Forgets the repacked tensors (the allocator is about to place new ones).
    void reset() { packed_.clear(); }

private:
    struct entry {
        std::size_t offset;
        type_id type;
        std::int64_t k, nrows;
        kernels::repack_layout lay;
        std::size_t plain_bytes() const { return static_cast<std::size_t>(row_size(type, k)) * static_cast<std::size_t>(nrows); }
    };
    const entry* find(const node& x) const noexcept {
        const std::byte* p = x.bytes();
        if (!p || p < base() || p >= base() + size()) return nullptr;
        const auto off = static_cast<std::size_t>(p - base());
        for (const entry& e : packed_)
            if (e.offset == off && e.type == x.lay.type && e.k == x.lay.ne[0] && e.nrows == x.lay.nrows()) return &e;
        return nullptr;
    }
    std::vector<std::byte> unpacked(const entry& e) const {
        std::vector<std::byte> plain(e.plain_bytes());
        kernels::unpack_matrix(e.type, e.k, e.nrows, base() + e.offset, plain.data(), e.lay);
        return plain;
    }

    cpu_buffer mem_;  // owned, zeroed memory
    std::vector<entry> packed_;
};
static_assert(buffer<repack_buffer>);

// Is t stored repacked (in a CPU_REPACK buffer, in the packed GEMM's layout)? Views
// are never repacked themselves; a view of a repacked tensor is checked by the ops.
inline bool is_repacked(const node& t) {
    if (t.is_view() || !t.data) return false;
    const any_buffer b = buffer_of(t);
    const repack_buffer* rb = b ? b.target<repack_buffer>() : nullptr;
    return rb && rb->repacked(t);
}
// The layout of a repacked tensor (is_repacked(t) must hold).
inline kernels::repack_layout repacked_layout(const node& t) { return buffer_of(t).target<repack_buffer>()->layout(t); }

}  // namespace backend
TESSERA_END_NAMESPACE
