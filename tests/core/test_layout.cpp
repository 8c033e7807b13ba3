// layout (ggml ne/nb) and tensor_view: strides, views, permute, reshape, checked
// against element addresses computed by hand.
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "tessera/core/tensor_view.hpp"
#include "tessera/quant/blocks.hpp"

using namespace tessera;

TEST_CASE("layout: packed strides and sizes follow ggml (nb1 = row size in bytes)") {
    const auto l = layout::contiguous(type_id::f16, {10, 3, 2, 1});
    CHECK(l.nb == std::array<std::size_t, 4>{2, 20, 60, 120});
    CHECK(l.nbytes() == 120);
    CHECK(l.nrows() == 6);
    CHECK(l.n_dims() == 3);
    CHECK(l.is_contiguous());
    const auto q = layout::contiguous(type_id::q4_K, {512, 4, 1, 1});
    CHECK(q.nb == std::array<std::size_t, 4>{144, 288, 1152, 1152});
    CHECK(q.nbytes() == 1152);
    CHECK_THROWS_WITH_AS(layout::contiguous(type_id::q4_0, {33, 1, 1, 1}),
                         "row of 33 elements is not a multiple of the q4_0 block size 32", error);
}

TEST_CASE("layout: permute, transpose, reshape and views") {
    const auto l = layout::contiguous(type_id::f32, {4, 3, 2, 5});
    const auto p = l.permute({2, 0, 1, 3});  // old dim0 -> pos 2, dim1 -> 0, dim2 -> 1
    CHECK(p.ne == std::array<std::int64_t, 4>{3, 2, 4, 5});
    CHECK(p.nb == std::array<std::size_t, 4>{16, 48, 4, 96});
    CHECK(p.is_permuted());
    CHECK_FALSE(p.is_contiguous());
    CHECK(p.nbytes() == l.nbytes());
    CHECK_THROWS_AS(l.permute({0, 0, 1, 2}), error);
    const auto t = l.transpose();
    CHECK(t.is_transposed());
    CHECK(t.offset_of(2, 1) == l.offset_of(1, 2));
    CHECK_THROWS_WITH_AS(t.reshape({24, 5, 1, 1}), "reshape: the tensor is not contiguous (call cont first)", error);
    const auto r = l.reshape({12, 10, 1, 1});
    CHECK(r.nb == std::array<std::size_t, 4>{4, 48, 480, 480});
    CHECK_THROWS_AS(l.reshape({7, 7, 1, 1}), error);
    // a view of rows 1..2 of each matrix
    const auto v = l.view({4, 2, 2, 5}, {l.nb[1], l.nb[2], l.nb[3]}, l.nb[1]);
    CHECK(v.nbytes() + l.nb[1] <= l.nbytes());
    CHECK_FALSE(v.is_contiguous());
    CHECK_THROWS_AS(l.view({4, 3, 2, 5}, {l.nb[1], l.nb[2], l.nb[3]}, 4), error);
    CHECK(l.can_repeat(layout::contiguous(type_id::f32, {4, 1, 2, 1})));
    CHECK_FALSE(l.can_repeat(layout::contiguous(type_id::f32, {3, 1, 1, 1})));
}

TEST_CASE("tensor_view: element access, permute and slice address the same memory") {
    std::vector<float> buf(4 * 3 * 2);
    std::iota(buf.begin(), buf.end(), 0.0f);
    tensor_view<float, 3> v(buf.data(), dextents<3>(4, 3, 2));
    CHECK(v.is_contiguous());
    CHECK(v(1, 2, 1) == buf[1 + 4 * 2 + 12 * 1]);
    const auto t = v.transpose();
    CHECK(t.extent(0) == 3);
    CHECK(t.extent(1) == 4);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) CHECK(&t(j, i, 1) == &v(i, j, 1));
    CHECK_FALSE(t.is_contiguous());
    const auto p = v.permute({1, 2, 0});
    CHECK(&p(2, 0, 1) == &v(0, 1, 2));  // old dim d moves to position axes[d]
    const auto s = v.slice(1, 1, 3);
    CHECK(s.extent(1) == 2);
    CHECK(&s(0, 0, 0) == &v(0, 1, 0));
    CHECK_THROWS_AS(v.slice(1, 2, 4), error);
    const auto r = v.reshape(dextents<2>(6, 4));
    CHECK(&r(5, 3) == &buf[23]);
    CHECK_THROWS_AS(v.reshape(dextents<2>(5, 4)), error);
    CHECK_THROWS_AS(t.reshape(dextents<2>(6, 4)), error);
    const layout l = v.to_layout();
    CHECK(l.ne == std::array<std::int64_t, 4>{4, 3, 2, 1});
    CHECK(l.nb == std::array<std::size_t, 4>{4, 16, 48, 96});
}

TEST_CASE("tensor_view: static extents store nothing; block types index rows of blocks") {
    static_assert(sizeof(basic_tensor_view<float, extents<64, 8>>) == sizeof(void*) + 2 * sizeof(std::size_t));
    std::vector<float> a(64 * 8);
    basic_tensor_view<float, extents<64, 8>> sv(a.data(), extents<64, 8>{});
    CHECK(&sv(3, 2) == &a[2 * 64 + 3]);
    std::vector<quant::block_q4_0> blocks(4 * 3);
    tensor_view<quant::block_q4_0, 2> q(blocks.data(), dextents<2>(128, 3));
    CHECK(q.row(2) == &blocks[8]);
    CHECK(q.stride_bytes(1) == 4 * 18);
    CHECK(q.to_layout().nbytes() == 12 * 18);
    CHECK_THROWS_WITH_AS((tensor_view<quant::block_q4_0, 2>(blocks.data(), dextents<2>(100, 3))),
                         "tensor_view: dim 0 (100) is not a multiple of the block size 32", error);
    CHECK_THROWS_AS(q.slice(0, 16, 64), error);
    CHECK(q.slice(0, 32, 96).row(1) == &blocks[5]);
}
