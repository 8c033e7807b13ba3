// arena: a bump allocator over a caller-owned byte buffer, usable in constant
// evaluation, with a measuring mode that only counts.
//
// Buffers own memory; arenas only hand out aligned pieces of one. Typical use is
// "measure, then allocate exactly": run the code once over arena::measuring(), read
// peak() and max_alignment(), allocate a buffer of that size and alignment, and run
// it again over a real arena, which then never runs out.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace memory {

// The largest size a measuring arena (and the planners) will count to: half of
// size_t, so that sums of two sizes never overflow (ggml uses the same bound).
inline constexpr std::size_t max_measure_size = std::numeric_limits<std::size_t>::max() / 2;

constexpr bool is_power_of_two(std::size_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

// Rounds x up to a multiple of alignment (a power of two). Callers keep x below
// max_measure_size, so the sum cannot wrap.
constexpr std::size_t align_up(std::size_t x, std::size_t alignment) noexcept {
    return (x + alignment - 1) & ~(alignment - 1);
}

namespace detail {
// Constexpr-friendly checks: in constant evaluation a failing check is a compile
// error (the throw is not a constant expression); at run time it throws.
constexpr void check_alignment(std::size_t alignment, const char* where) {
    if (!is_power_of_two(alignment))
        fail(errc::invalid_argument,
             std::string(where) + ": alignment " + std::to_string(alignment) + " is not a power of two");
}
}  // namespace detail

class arena {
public:
    // A point to rewind to (see mark() and rewind()).
    struct marker {
        std::size_t used = 0;
    };

    constexpr arena() noexcept = default;

    // An arena over `buffer`. At run time, alignment is relative to real addresses;
    // in constant evaluation (where addresses have no value) it is relative to the
    // start of the buffer.
    constexpr explicit arena(std::span<std::byte> buffer) noexcept
        : base_(buffer.data()), capacity_(buffer.size()) {}

    // An arena that owns no memory and only counts: offsets are handed out as if
    // the buffer started at an address aligned to every request.
    static constexpr arena measuring(std::size_t capacity = max_measure_size) noexcept {
        arena a;
        a.capacity_ = capacity < max_measure_size ? capacity : max_measure_size;
        a.measuring_ = true;
        return a;
    }

    constexpr bool is_measuring() const noexcept { return measuring_; }
    constexpr std::byte* data() const noexcept { return base_; }
    constexpr std::size_t capacity() const noexcept { return capacity_; }
    constexpr std::size_t used() const noexcept { return used_; }
    constexpr std::size_t remaining() const noexcept { return capacity_ - used_; }
    // The most this arena ever had in use (rewinds do not lower it).
    constexpr std::size_t peak() const noexcept { return peak_; }
    // The largest alignment ever requested: the alignment a buffer needs so that a
    // real arena over it reproduces a measuring arena's offsets.
    constexpr std::size_t max_alignment() const noexcept { return max_alignment_; }

    // Reserves `size` bytes aligned to `alignment` and returns their offset from the
    // start of the buffer, or nullopt (changing nothing) when they do not fit.
    constexpr std::optional<std::size_t> try_allocate_offset(std::size_t size, std::size_t alignment = 1) {
        detail::check_alignment(alignment, "arena");
        const std::size_t start = used_ + padding(alignment);
        if (start > capacity_ || size > capacity_ - start) return std::nullopt;
        used_ = start + size;
        if (used_ > peak_) peak_ = used_;
        if (alignment > max_alignment_) max_alignment_ = alignment;
        return start;
    }

    // As try_allocate_offset, but running out of space is an error (errc::out_of_memory).
    constexpr std::size_t allocate_offset(std::size_t size, std::size_t alignment = 1) {
        if (auto off = try_allocate_offset(size, alignment)) return *off;
        fail(errc::out_of_memory, "arena: " + std::to_string(size) + " bytes (alignment " +
                                      std::to_string(alignment) + ") do not fit: " + std::to_string(used_) +
                                      " of " + std::to_string(capacity_) + " bytes in use");
    }

    // Reserves aligned bytes and returns a pointer to them; nullptr when they do not
    // fit. A measuring arena has no memory to point into: it counts and returns nullptr.
    constexpr std::byte* try_allocate(std::size_t size, std::size_t alignment = 1) {
        auto off = try_allocate_offset(size, alignment);
        if (!off || measuring_) return nullptr;
        return base_ + *off;
    }

    // As try_allocate, but running out of space (or asking a measuring arena for a
    // pointer) is an error.
    constexpr std::byte* allocate(std::size_t size, std::size_t alignment = 1) {
        if (measuring_)
            fail(errc::invalid_argument, "arena: a measuring arena has no memory; use allocate_offset");
        return base_ + allocate_offset(size, alignment);
    }

    // Run time only: storage for `n` objects of an implicit-lifetime type T (scalars,
    // f16, quant blocks), default-initialized. Measuring arenas count and return an
    // empty span.
    template <class T>
        requires std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>
    std::span<T> allocate_array(std::size_t n) {
        if (n > max_measure_size / sizeof(T))
            fail(errc::out_of_memory, "arena: array of " + std::to_string(n) + " elements is too large");
        if (measuring_) {
            (void)allocate_offset(n * sizeof(T), alignof(T));
            return {};
        }
        std::byte* p = allocate(n * sizeof(T), alignof(T));
        return {::new (static_cast<void*>(p)) T[n], n};
    }

    constexpr marker mark() const noexcept { return {used_}; }
    // Frees everything allocated since `m` was taken.
    constexpr void rewind(marker m) {
        if (m.used > used_)
            fail(errc::invalid_argument, "arena: rewind to a marker taken after later rewinds");
        used_ = m.used;
    }
    constexpr void reset() noexcept { used_ = 0; }

private:
    constexpr std::size_t padding(std::size_t alignment) const noexcept {
        if (std::is_constant_evaluated() || measuring_ || base_ == nullptr)
            return align_up(used_, alignment) - used_;
        const auto addr = reinterpret_cast<std::uintptr_t>(base_) + used_;
        return static_cast<std::size_t>((alignment - addr % alignment) % alignment);
    }

    std::byte* base_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t used_ = 0;
    std::size_t peak_ = 0;
    std::size_t max_alignment_ = 1;
    bool measuring_ = false;
};

// An arena together with its storage: N bytes in a std::array, so it works inside
// constant evaluation (and as a small stack scratch area at run time). Not copyable:
// the arena points into its own array.
template <std::size_t N, std::size_t Align = alignof(std::max_align_t)>
class static_arena {
    static_assert(is_power_of_two(Align), "static_arena: alignment must be a power of two");

public:
    constexpr static_arena() noexcept : arena_(std::span<std::byte>(storage_)) {}
    static_arena(const static_arena&) = delete;
    static_arena& operator=(const static_arena&) = delete;

    constexpr arena& get() noexcept { return arena_; }
    constexpr const arena& get() const noexcept { return arena_; }
    constexpr arena* operator->() noexcept { return &arena_; }
    constexpr std::span<std::byte, N> bytes() noexcept { return storage_; }

private:
    alignas(Align) std::array<std::byte, N> storage_{};
    arena arena_;
};

}  // namespace memory
TESSERA_END_NAMESPACE
