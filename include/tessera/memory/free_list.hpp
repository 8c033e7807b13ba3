// free_list: the dynamic allocator behind the graph planner. It hands out offsets in
// a buffer that grows at its end: best fit among the free blocks inside the buffer,
// else the end (a free block touching the end is part of the end), and freed blocks
// merge with their free neighbours. Both searches are O(log n), so planning a graph
// of n tensors costs O(n log n). It runs in constant evaluation.
#pragma once

#include <cstddef>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/memory/arena.hpp"
#include "tessera/memory/detail/ordered_set.hpp"

TESSERA_BEGIN_NAMESPACE
namespace memory {

class free_list {
public:
    struct block {
        std::size_t offset;
        std::size_t size;
    };

    // prefer_high_offset: among free blocks of the best-fitting size take the highest
    // (ggml's choice) rather than the lowest.
    constexpr explicit free_list(std::size_t alignment = 64, bool prefer_high_offset = false)
        : alignment_(alignment), prefer_high_(prefer_high_offset) {
        detail::check_alignment(alignment, "free_list");
    }

    constexpr std::size_t alignment() const noexcept { return alignment_; }
    // Bytes a tensor of `size` bytes takes here (its size rounded up to the alignment).
    constexpr std::size_t padded(std::size_t size) const noexcept { return align_up(size, alignment_); }

    // The offset of `size` bytes (rounded up to the alignment).
    constexpr std::size_t allocate(std::size_t size) {
        if (size > max_measure_size - end_)
            fail(errc::out_of_memory, "free_list: cannot place " + std::to_string(size) + " more bytes above " +
                                          std::to_string(end_));
        size = padded(size);
        if (size == 0) return end_;  // no bytes: any offset inside the buffer does
        live_ += size;
        if (live_ > max_live_) max_live_ = live_;
        if (const block* b = by_size_.lower_bound(block{0, size})) {
            if (prefer_high_ && b->size < max_measure_size) b = by_size_.predecessor(block{0, b->size + 1});
            const block found = *b;
            by_size_.erase(found);
            by_offset_.erase(found);
            if (found.size > size) insert(block{found.offset + size, found.size - size});
            return found.offset;
        }
        const std::size_t at = end_;
        end_ += size;
        if (end_ > peak_) peak_ = end_;
        return at;
    }

    // Returns [offset, offset + size) (size rounded up to the alignment) to the free blocks.
    constexpr void release(std::size_t offset, std::size_t size) {
        size = padded(size);
        if (size == 0) return;
        if (offset > end_ || size > end_ - offset)
            fail(errc::invalid_argument, "free_list: block at " + std::to_string(offset) + " of " +
                                             std::to_string(size) + " bytes was never allocated here");
        live_ -= size;
        block merged{offset, size};
        if (const block* prev = by_offset_.predecessor(merged); prev && prev->offset + prev->size == offset) {
            const block p = *prev;
            by_offset_.erase(p);
            by_size_.erase(p);
            merged = block{p.offset, p.size + merged.size};
        }
        if (const block* next = by_offset_.lower_bound(block{offset + size, 0});
            next && next->offset == offset + size) {
            const block q = *next;
            by_offset_.erase(q);
            by_size_.erase(q);
            merged.size += q.size;
        }
        if (merged.offset + merged.size == end_)
            end_ = merged.offset;  // the end shrinks back: the tail is free
        else
            insert(merged);
    }

    // Forgets every allocation (the high-water marks stay).
    constexpr void reset() {
        by_offset_ = {};
        by_size_ = {};
        end_ = 0;
        live_ = 0;
    }

    constexpr std::size_t end() const noexcept { return end_; }                 // one past the highest byte in use
    constexpr std::size_t peak() const noexcept { return peak_; }               // the largest end ever
    constexpr std::size_t live() const noexcept { return live_; }               // bytes in use now
    constexpr std::size_t max_live() const noexcept { return max_live_; }       // the most bytes ever in use at once
    constexpr std::size_t free_blocks() const noexcept { return by_offset_.size(); }
    constexpr std::size_t max_free_blocks() const noexcept { return max_free_blocks_; }

    template <class F>
    constexpr void for_each_free_block(F&& f) const {
        by_offset_.for_each(f);
    }

private:
    struct by_offset_less {
        constexpr bool operator()(const block& a, const block& b) const noexcept { return a.offset < b.offset; }
    };
    struct by_size_less {
        constexpr bool operator()(const block& a, const block& b) const noexcept {
            return a.size != b.size ? a.size < b.size : a.offset < b.offset;
        }
    };

    constexpr void insert(block b) {
        by_offset_.insert(b);
        by_size_.insert(b);
        if (by_offset_.size() > max_free_blocks_) max_free_blocks_ = by_offset_.size();
    }

    std::size_t alignment_;
    bool prefer_high_ = false;
    std::size_t end_ = 0;
    std::size_t peak_ = 0;
    std::size_t live_ = 0;
    std::size_t max_live_ = 0;
    std::size_t max_free_blocks_ = 0;
    detail::ordered_set<block, by_offset_less> by_offset_;
    detail::ordered_set<block, by_size_less> by_size_;
};

}  // namespace memory
TESSERA_END_NAMESPACE
