// tensor_allocator: places tensors one after another in a buffer (ggml's tallocr),
// and sizes a whole set of tensors (a context's weights, a KV cache) into buffers of
// exactly the needed size, splitting over several buffers when one would exceed the
// buffer type's maximum size (ggml_backend_alloc_ctx_tensors_from_buft).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/memory/arena.hpp"
#include "tessera/memory/host_buffer.hpp"

TESSERA_BEGIN_NAMESPACE
namespace memory {

// Linear placement in one buffer of `capacity` bytes: each tensor takes its size
// rounded up to the alignment, at the next aligned offset. Offsets are relative to a
// buffer base that is itself aligned (buffer providers guarantee it).
class tensor_allocator {
public:
    constexpr tensor_allocator(std::size_t capacity, std::size_t alignment)
        : capacity_(capacity), alignment_(alignment) {
        detail::check_alignment(alignment, "tensor_allocator");
    }

    // The offset of a tensor of `size` bytes; errc::out_of_memory when it does not fit.
    constexpr std::size_t allocate(std::size_t size) {
        if (size > max_measure_size || align_up(size, alignment_) > capacity_ - offset_)
            fail(errc::out_of_memory, "tensor_allocator: tensor of " + std::to_string(size) +
                                          " bytes does not fit: " + std::to_string(capacity_ - offset_) +
                                          " of " + std::to_string(capacity_) + " bytes left");
        const std::size_t at = offset_;
        offset_ += align_up(size, alignment_);
        return at;
    }

    constexpr std::size_t used() const noexcept { return offset_; }
    constexpr std::size_t capacity() const noexcept { return capacity_; }
    constexpr std::size_t alignment() const noexcept { return alignment_; }

private:
    std::size_t capacity_;
    std::size_t alignment_;
    std::size_t offset_ = 0;
};

// Where each tensor of a set goes: buffer[i] and offset[i] per tensor, and the exact
// size of each buffer.
struct tensor_set_layout {
    std::vector<int> buffer;
    std::vector<std::size_t> offset;
    std::vector<std::size_t> buffer_sizes;
};

// Lays out tensors of the given sizes, in order, into as few buffers as the greedy
// rule gives: a new buffer starts when the next tensor would push the current one
// past max_size. A tensor larger than max_size on its own is an error.
constexpr tensor_set_layout plan_tensor_set(std::span<const std::size_t> sizes, std::size_t alignment,
                                            std::size_t max_size = max_measure_size) {
    detail::check_alignment(alignment, "plan_tensor_set");
    if (max_size > max_measure_size) max_size = max_measure_size;
    tensor_set_layout out;
    out.buffer.reserve(sizes.size());
    out.offset.reserve(sizes.size());
    std::size_t current = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] > max_size || align_up(sizes[i], alignment) > max_size)
            fail(errc::out_of_memory, "plan_tensor_set: tensor " + std::to_string(i) + " of " +
                                          std::to_string(sizes[i]) +
                                          " bytes is larger than the buffer type's maximum size " +
                                          std::to_string(max_size));
        const std::size_t padded = align_up(sizes[i], alignment);
        if (out.buffer_sizes.empty() || (current > 0 && padded > max_size - current)) {
            if (!out.buffer_sizes.empty()) out.buffer_sizes.back() = current;
            out.buffer_sizes.push_back(0);
            current = 0;
        }
        out.buffer.push_back(static_cast<int>(out.buffer_sizes.size()) - 1);
        out.offset.push_back(current);
        current += padded;
    }
    if (!out.buffer_sizes.empty()) out.buffer_sizes.back() = current;
    return out;
}

// A tensor set with its memory: the buffers, and a pointer per tensor.
template <class Buffer>
struct tensor_set {
    std::vector<Buffer> buffers;
    std::vector<std::byte*> data;
    tensor_set_layout layout;

    std::size_t total_size() const noexcept {
        std::size_t s = 0;
        for (auto n : layout.buffer_sizes) s += n;
        return s;
    }
};

// Allocates buffers of exactly the planned sizes from `provider` and places each
// tensor with a tensor_allocator (so the placement is checked a second time).
template <buffer_provider P>
tensor_set<buffer_of<P>> alloc_tensor_set(P& provider, std::span<const std::size_t> sizes) {
    tensor_set<buffer_of<P>> set;
    set.layout = plan_tensor_set(sizes, provider.alignment(), provider.max_size());
    set.buffers.reserve(set.layout.buffer_sizes.size());
    std::vector<tensor_allocator> tallocs;
    tallocs.reserve(set.layout.buffer_sizes.size());
    for (std::size_t b = 0; b < set.layout.buffer_sizes.size(); ++b) {
        set.buffers.push_back(provider.alloc(set.layout.buffer_sizes[b]));
        tallocs.emplace_back(set.layout.buffer_sizes[b], provider.alignment());
    }
    set.data.reserve(sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        const auto b = static_cast<std::size_t>(set.layout.buffer[i]);
        const std::size_t off = tallocs[b].allocate(sizes[i]);
        set.data.push_back(set.buffers[b].data() ? set.buffers[b].data() + off : nullptr);
    }
    return set;
}

}  // namespace memory
TESSERA_END_NAMESPACE
