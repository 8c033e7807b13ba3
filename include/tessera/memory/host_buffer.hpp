// host_buffer: the minimal buffer-type interface the memory layer needs, and a host
// (plain RAM) implementation of it.
//
// The backend layer defines the full buffer-type concept (name, is_host, alloc_size,
// ...). The allocators here need only three things of it, so they are written
// against this small concept and any backend buffer type that has these members
// works with them unchanged.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/memory/arena.hpp"

TESSERA_BEGIN_NAMESPACE
namespace memory {

// A buffer provider (the part of a backend buffer type the allocators use):
//   p.alignment()  -> size_t   alignment of every buffer it returns (power of two)
//   p.max_size()   -> size_t   largest single buffer it can return
//   p.alloc(n)     -> buffer   a buffer of at least n bytes, where buffer has
//                              data() -> std::byte* and size() -> size_t and owns
//                              its memory (movable, frees on destruction)
template <class P>
concept buffer_provider = requires(P& p, const P& cp, std::size_t n) {
    { cp.alignment() } -> std::convertible_to<std::size_t>;
    { cp.max_size() } -> std::convertible_to<std::size_t>;
    { p.alloc(n) };
    { p.alloc(n).data() } -> std::convertible_to<std::byte*>;
    { p.alloc(n).size() } -> std::convertible_to<std::size_t>;
};

template <buffer_provider P>
using buffer_of = decltype(std::declval<P&>().alloc(std::size_t{}));

// Owning, aligned host memory. Zero-sized buffers hold no memory (data() is null).
class host_buffer {
public:
    host_buffer() noexcept = default;
    host_buffer(std::size_t size, std::size_t alignment) : size_(size), alignment_(alignment) {
        detail::check_alignment(alignment, "host_buffer");
        if (size > 0) data_ = static_cast<std::byte*>(::operator new(size, std::align_val_t{alignment}));
    }
    host_buffer(host_buffer&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), alignment_(o.alignment_) {}
    host_buffer& operator=(host_buffer&& o) noexcept {
        if (this != &o) {
            release();
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
            alignment_ = o.alignment_;
        }
        return *this;
    }
    host_buffer(const host_buffer&) = delete;
    host_buffer& operator=(const host_buffer&) = delete;
    ~host_buffer() { release(); }

    std::byte* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::size_t alignment() const noexcept { return alignment_; }

private:
    void release() noexcept {
        if (data_) ::operator delete(data_, std::align_val_t{alignment_});
        data_ = nullptr;
    }
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t alignment_ = 1;
};

// Host RAM as a buffer provider. The defaults match ggml's CPU buffer type closely
// (ggml aligns CPU tensors to 32 bytes and has no size limit); 64 keeps every tensor
// on its own cache line. Counts what it handed out, for tests and statistics.
class host_buffer_type {
public:
    constexpr host_buffer_type() noexcept = default;
    constexpr explicit host_buffer_type(std::size_t alignment, std::size_t max_size = max_measure_size)
        : alignment_(alignment), max_size_(max_size) {
        detail::check_alignment(alignment, "host_buffer_type");
    }

    constexpr std::size_t alignment() const noexcept { return alignment_; }
    constexpr std::size_t max_size() const noexcept { return max_size_; }

    host_buffer alloc(std::size_t size) {
        if (size > max_size_)
            fail(errc::out_of_memory, "host_buffer_type: " + std::to_string(size) +
                                          " bytes exceed the maximum buffer size " + std::to_string(max_size_));
        ++allocations_;
        bytes_allocated_ += size;
        return host_buffer(size, alignment_);
    }

    std::size_t allocations() const noexcept { return allocations_; }
    std::size_t bytes_allocated() const noexcept { return bytes_allocated_; }

private:
    std::size_t alignment_ = 64;
    std::size_t max_size_ = max_measure_size;
    std::size_t allocations_ = 0;
    std::size_t bytes_allocated_ = 0;
};

static_assert(buffer_provider<host_buffer_type>);

}  // namespace memory
TESSERA_END_NAMESPACE
