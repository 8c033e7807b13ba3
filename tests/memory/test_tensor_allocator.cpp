#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "tessera/memory/tensor_allocator.hpp"

using namespace tessera;
using namespace tessera::memory;

// ---- compile time -------------------------------------------------------------------
constexpr bool linear_placement() {
    tensor_allocator t(1024, 32);
    return t.allocate(10) == 0 && t.allocate(32) == 32 && t.allocate(33) == 64 && t.used() == 128;
}
static_assert(linear_placement());

constexpr std::array<std::size_t, 5> planned_sizes = {100, 300, 64, 1000, 1};
static_assert([] {
    auto l = plan_tensor_set(planned_sizes, 64);  // one buffer: 128 + 320 + 64 + 1024 + 64
    return l.buffer_sizes.size() == 1 && l.buffer_sizes[0] == 1600 && l.offset[3] == 512 && l.offset[4] == 1536;
}());
static_assert([] {
    // max 1100: [100,300,64] = 512, then 1000 (1024) would make 1536 -> new buffer; then 1 fits (1088)
    auto l = plan_tensor_set(planned_sizes, 64, 1100);
    return l.buffer_sizes.size() == 2 && l.buffer_sizes[0] == 512 && l.buffer_sizes[1] == 1088 &&
           l.buffer[3] == 1 && l.offset[3] == 0 && l.buffer[4] == 1 && l.offset[4] == 1024;
}());

// ---- run time -----------------------------------------------------------------------
TEST_CASE("a tensor set goes into buffers of exactly the needed size") {
    host_buffer_type host(64);
    const std::vector<std::size_t> sizes = {4096, 17, 256, 100};
    auto set = alloc_tensor_set(host, sizes);
    REQUIRE(set.buffers.size() == 1);
    CHECK(set.buffers[0].size() == 4096 + 64 + 256 + 128);
    CHECK(set.total_size() == 4544);
    CHECK(host.allocations() == 1);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        CHECK(reinterpret_cast<std::uintptr_t>(set.data[i]) % 64 == 0);
        if (i + 1 < sizes.size()) CHECK(set.data[i] + align_up(sizes[i], 64) == set.data[i + 1]);
    }
    // Every tensor can be written end to end without touching the next (ASan checks the end).
    for (std::size_t i = 0; i < sizes.size(); ++i)
        for (std::size_t j = 0; j < sizes[i]; ++j) set.data[i][j] = std::byte(i);
    CHECK(set.data[1][16] == std::byte{1});
}

TEST_CASE("a set larger than the maximum buffer size is split") {
    host_buffer_type host(32, 1000);
    std::vector<std::size_t> sizes(10, 300);  // 300 -> 320 each; three fit in 1000
    auto set = alloc_tensor_set(host, sizes);
    CHECK(set.buffers.size() == 4);
    CHECK(set.layout.buffer_sizes == std::vector<std::size_t>{960, 960, 960, 320});
    CHECK(set.layout.buffer == std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3});
    for (std::size_t b = 0; b < set.buffers.size(); ++b) CHECK(set.buffers[b].size() <= 1000);
    CHECK(set.data[3] == set.buffers[1].data());
}

TEST_CASE("a tensor larger than the maximum size is an error naming it") {
    const std::vector<std::size_t> sizes = {10, 2000};
    CHECK_THROWS_WITH_AS(plan_tensor_set(sizes, 32, 1000),
                         "plan_tensor_set: tensor 1 of 2000 bytes is larger than the buffer type's maximum size 1000",
                         error);
    tensor_allocator t(64, 16);
    (void)t.allocate(48);
    CHECK_THROWS_WITH_AS(t.allocate(17),
                         "tensor_allocator: tensor of 17 bytes does not fit: 16 of 64 bytes left", error);
    CHECK(t.allocate(16) == 48);
    CHECK_THROWS_AS(plan_tensor_set(sizes, 24), error);
    const std::vector<std::size_t> none;
    CHECK(plan_tensor_set(none, 32).buffer_sizes.empty());
}
