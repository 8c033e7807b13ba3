// free_list against a brute-force model (a sorted vector of free blocks scanned
// linearly) on random allocate/release sequences, plus hand cases.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tessera/memory/free_list.hpp"

using namespace tessera;
using namespace tessera::memory;

namespace {
struct model {
    struct blk {
        std::size_t offset, size;
    };
    std::size_t alignment;
    bool high;
    std::vector<blk> free;  // sorted by offset, none touching `end`
    std::size_t end = 0, peak = 0;

    std::size_t allocate(std::size_t size) {
        size = align_up(size, alignment);
        int best = -1;
        for (int i = 0; i < static_cast<int>(free.size()); ++i) {
            const auto& b = free[static_cast<std::size_t>(i)];
            if (b.size < size) continue;
            if (best < 0) { best = i; continue; }
            const auto& c = free[static_cast<std::size_t>(best)];
            if (b.size < c.size || (b.size == c.size && high)) best = i;
        }
        if (best < 0) {
            const std::size_t at = end;
            end += size;
            peak = std::max(peak, end);
            return at;
        }
        auto& b = free[static_cast<std::size_t>(best)];
        const std::size_t at = b.offset;
        b.offset += size;
        b.size -= size;
        if (b.size == 0) free.erase(free.begin() + best);
        return at;
    }
    void release(std::size_t offset, std::size_t size) {
        size = align_up(size, alignment);
        free.push_back({offset, size});
        std::sort(free.begin(), free.end(), [](blk a, blk b) { return a.offset < b.offset; });
        std::vector<blk> merged;
        for (auto b : free) {
            if (!merged.empty() && merged.back().offset + merged.back().size == b.offset) merged.back().size += b.size;
            else merged.push_back(b);
        }
        if (!merged.empty() && merged.back().offset + merged.back().size == end) {
            end = merged.back().offset;
            merged.pop_back();
        }
        free = merged;
    }
};
}  // namespace

static_assert([] {
    free_list f(16);
    const auto a = f.allocate(10), b = f.allocate(40), c = f.allocate(16);  // 0, 16, 64
    f.release(b, 40);                                                       // hole [16, 64)
    const auto d = f.allocate(20);                                          // best fit: 16
    f.release(c, 16);                                                       // [48, 80) merges into the tail
    return a == 0 && b == 16 && c == 64 && d == 16 && f.end() == 48 && f.peak() == 80 && f.free_blocks() == 0;
}());

TEST_CASE("free_list: best fit, tie-breaks, merging and the shrinking end") {
    for (bool high : {false, true}) {
        free_list f(64, high);
        std::vector<std::size_t> at;
        for (int i = 0; i < 6; ++i) at.push_back(f.allocate(64));  // 0 .. 320
        f.release(at[1], 64);                                      // holes at 64 and 192, equal size
        f.release(at[3], 64);
        CHECK(f.free_blocks() == 2);
        CHECK(f.allocate(64) == (high ? 192u : 64u));
        CHECK(f.allocate(65) == 384);  // no hole is big enough: the end grows
        // low took 64 and left the hole at 192; high took 192 and left the hole at 64.
        f.release(at[4], 64);
        f.release(at[5], 64);  // low: 192..384 merges into one block; high: 64..128 and 256..384
        CHECK(f.end() == 512);  // 384..512 is in use: the end stays
        CHECK(f.free_blocks() == (high ? 2u : 1u));
        CHECK(f.live() == 3 * 64 + 128);
    }
    free_list f(64);
    CHECK_THROWS_AS(f.release(0, 64), error);  // never allocated
}

TEST_CASE("free_list equals a brute-force model on random sequences") {
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const std::size_t al = std::size_t{1} << (rng() % 7);
        const bool high = trial % 2;
        free_list f(al, high);
        model m{al, high, {}};
        std::vector<std::pair<std::size_t, std::size_t>> live;
        for (int step = 0; step < 300; ++step) {
            if (live.empty() || rng() % 100 < 55) {
                const std::size_t size = 1 + rng() % (rng() % 4 == 0 ? 4096 : 256);
                const std::size_t got = f.allocate(size), want = m.allocate(size);
                REQUIRE(got == want);
                live.emplace_back(got, size);
            } else {
                const std::size_t k = rng() % live.size();
                f.release(live[k].first, live[k].second);
                m.release(live[k].first, live[k].second);
                live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
            }
            REQUIRE(f.end() == m.end);
            REQUIRE(f.free_blocks() == m.free.size());
        }
        CHECK(f.peak() == m.peak);
    }
}
