// A small ordered set (a treap over a vector pool) that works in constant evaluation,
// where std::set and std::map do not. Expected O(log n) insert, erase and search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/config.hpp"

TESSERA_BEGIN_NAMESPACE
namespace memory::detail {

// Keys are ordered by Less; equal keys (neither less than the other) are not stored
// twice by the callers here.
template <class Key, class Less>
class ordered_set {
    struct node {
        Key key;
        std::uint32_t priority;
        int left;
        int right;
    };

public:
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }

    constexpr void insert(const Key& key) {
        int n;
        if (!free_.empty()) {
            n = free_.back();
            free_.pop_back();
            nodes_[static_cast<std::size_t>(n)] = node{key, next_priority(), -1, -1};
        } else {
            n = static_cast<int>(nodes_.size());
            nodes_.push_back(node{key, next_priority(), -1, -1});
        }
        int lo = -1, hi = -1;
        split_less(root_, key, lo, hi);
        root_ = merge(merge(lo, n), hi);
        ++size_;
    }

    // Removes the key equal to `key`; returns false when there is none.
    constexpr bool erase(const Key& key) {
        int lo = -1, rest = -1, mid = -1, hi = -1;
        split_less(root_, key, lo, rest);      // lo < key <= rest
        split_not_greater(rest, key, mid, hi);  // mid == key < hi
        bool found = mid >= 0;
        if (found) {
            // mid holds exactly one node: callers never insert equal keys twice.
            free_.push_back(mid);
            --size_;
        }
        root_ = merge(lo, hi);
        return found;
    }

    // The smallest key not less than `key`, or nullptr.
    constexpr const Key* lower_bound(const Key& key) const {
        const Key* best = nullptr;
        int t = root_;
        while (t >= 0) {
            const node& n = nodes_[static_cast<std::size_t>(t)];
            if (Less{}(n.key, key)) {
                t = n.right;
            } else {
                best = &n.key;
                t = n.left;
            }
        }
        return best;
    }

    // The largest key less than `key`, or nullptr.
    constexpr const Key* predecessor(const Key& key) const {
        const Key* best = nullptr;
        int t = root_;
        while (t >= 0) {
            const node& n = nodes_[static_cast<std::size_t>(t)];
            if (Less{}(n.key, key)) {
                best = &n.key;
                t = n.right;
            } else {
                t = n.left;
            }
        }
        return best;
    }

    // Calls f(key) for every key in order (for tests and statistics).
    template <class F>
    constexpr void for_each(F&& f) const {
        walk(root_, f);
    }

private:
    constexpr std::uint32_t next_priority() noexcept {
        // xorshift32: deterministic, so plans are reproducible.
        seed_ ^= seed_ << 13;
        seed_ ^= seed_ >> 17;
        seed_ ^= seed_ << 5;
        return seed_;
    }

    constexpr node& at(int i) { return nodes_[static_cast<std::size_t>(i)]; }

    // Splits t into keys < key (lo) and keys >= key (hi).
    constexpr void split_less(int t, const Key& key, int& lo, int& hi) {
        if (t < 0) {
            lo = hi = -1;
            return;
        }
        if (Less{}(at(t).key, key)) {
            int r_lo = -1, r_hi = -1;
            split_less(at(t).right, key, r_lo, r_hi);
            at(t).right = r_lo;
            lo = t;
            hi = r_hi;
        } else {
            int l_lo = -1, l_hi = -1;
            split_less(at(t).left, key, l_lo, l_hi);
            at(t).left = l_hi;
            lo = l_lo;
            hi = t;
        }
    }

    // Splits t into keys <= key (lo) and keys > key (hi).
    constexpr void split_not_greater(int t, const Key& key, int& lo, int& hi) {
        if (t < 0) {
            lo = hi = -1;
            return;
        }
        if (!Less{}(key, at(t).key)) {
            int r_lo = -1, r_hi = -1;
            split_not_greater(at(t).right, key, r_lo, r_hi);
            at(t).right = r_lo;
            lo = t;
            hi = r_hi;
        } else {
            int l_lo = -1, l_hi = -1;
            split_not_greater(at(t).left, key, l_lo, l_hi);
            at(t).left = l_hi;
            lo = l_lo;
            hi = t;
        }
    }

    // Joins a and b, every key of a being less than every key of b.
    constexpr int merge(int a, int b) {
        if (a < 0) return b;
        if (b < 0) return a;
        if (at(a).priority > at(b).priority) {
            at(a).right = merge(at(a).right, b);
            return a;
        }
        at(b).left = merge(a, at(b).left);
        return b;
    }

    template <class F>
    constexpr void walk(int t, F& f) const {
        if (t < 0) return;
        const node& n = nodes_[static_cast<std::size_t>(t)];
        walk(n.left, f);
        f(n.key);
        walk(n.right, f);
    }

    std::vector<node> nodes_;
    std::vector<int> free_;
    int root_ = -1;
    std::size_t size_ = 0;
    std::uint32_t seed_ = 2463534242u;
};

}  // namespace memory::detail
TESSERA_END_NAMESPACE
