#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

#include "tessera/memory/arena.hpp"

using namespace tessera;
using namespace tessera::memory;

// ---- compile time -------------------------------------------------------------------
constexpr bool bump_and_align() {
    static_arena<64> a;
    std::byte* p = a->allocate(3);      // [0, 3)
    std::byte* q = a->allocate(8, 8);   // padded to 8: [8, 16)
    std::byte* r = a->allocate(1, 32);  // [32, 33)
    for (int i = 0; i < 8; ++i) q[i] = std::byte(i + 1);
    *r = std::byte{42};
    return q - p == 8 && r - p == 32 && a->used() == 33 && q[7] == std::byte{8} && *r == std::byte{42} &&
           a.bytes()[32] == std::byte{42} && a->max_alignment() == 32;
}
static_assert(bump_and_align());

constexpr bool full_and_rewind() {
    static_arena<32> a;
    const auto m = a->mark();
    if (!a->try_allocate(32)) return false;
    if (a->try_allocate(1) != nullptr) return false;  // full: nothing changes
    if (a->used() != 32) return false;
    a->rewind(m);
    return a->used() == 0 && a->peak() == 32 && a->try_allocate_offset(16, 16) == std::size_t{0};
}
static_assert(full_and_rewind());

constexpr bool measuring_counts() {
    arena m = arena::measuring();
    (void)m.allocate_offset(10);
    (void)m.allocate_offset(20, 64);
    const auto mk = m.mark();
    (void)m.allocate_offset(100, 16);
    m.rewind(mk);
    (void)m.allocate_offset(1);
    return m.is_measuring() && m.peak() == 64 + 20 + 12 + 100 && m.used() == 85 && m.max_alignment() == 64 &&
           m.try_allocate(1) == nullptr;
}
static_assert(measuring_counts());
static_assert(align_up(65, 64) == 128 && align_up(0, 64) == 0 && is_power_of_two(64) && !is_power_of_two(48));

// ---- run time -----------------------------------------------------------------------
TEST_CASE("arena aligns to real addresses at run time") {
    alignas(64) std::byte storage[256];
    arena a(std::span<std::byte>(storage + 1, 255));  // a misaligned base
    std::byte* p = a.allocate(1, 1);
    CHECK(p == storage + 1);
    std::byte* q = a.allocate(8, 64);
    CHECK(reinterpret_cast<std::uintptr_t>(q) % 64 == 0);
    CHECK(q == storage + 64);
    CHECK(a.used() == 63 + 8);
}

TEST_CASE("measure, then allocate exactly") {
    auto build = [](arena& a) {
        auto xs = a.allocate_array<float>(7);
        auto ys = a.allocate_array<double>(3);
        auto zs = a.allocate_array<std::uint8_t>(5);
        if (!a.is_measuring()) {
            for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i);
            for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = 0.5 * static_cast<double>(i);
            std::memset(zs.data(), 0xab, zs.size());
            CHECK(reinterpret_cast<std::uintptr_t>(ys.data()) % alignof(double) == 0);
        }
    };
    arena m = arena::measuring();
    build(m);
    CHECK(m.peak() == 28 + 4 + 24 + 5);  // 7 floats, pad to 8, 3 doubles, 5 bytes
    alignas(16) std::byte buf[61];
    static_assert(sizeof(buf) == 61);
    REQUIRE(m.max_alignment() <= 16);
    arena real(std::span<std::byte>(buf, m.peak()));
    build(real);
    CHECK(real.used() == m.peak());
    CHECK(real.remaining() == 0);
    CHECK_THROWS_AS(real.allocate(1), error);
}

TEST_CASE("arena errors say what did not fit") {
    alignas(16) std::byte buf[16];
    arena a(buf);
    CHECK_THROWS_WITH_AS(a.allocate(17), "arena: 17 bytes (alignment 1) do not fit: 0 of 16 bytes in use", error);
    CHECK_THROWS_WITH_AS(a.allocate(1, 3), "arena: alignment 3 is not a power of two", error);
    arena m = arena::measuring(100);
    CHECK_THROWS_WITH_AS(m.allocate(1), "arena: a measuring arena has no memory; use allocate_offset", error);
    CHECK_THROWS_AS(m.allocate_offset(101), error);
    try {
        (void)a.allocate(100);
    } catch (const error& e) {
        CHECK(e.code() == errc::out_of_memory);
    }
    CHECK(a.allocate_array<std::uint32_t>(4).size() == 4);
}
