#include <doctest/doctest.h>
#include "tessera/graph/all.hpp"
using namespace tessera;
using namespace tessera::graph;
TEST_CASE("smoke") {
    context ctx;
    auto a = new_tensor<float, 2>(ctx, {2, 4}, "a");
    auto b = new_tensor<float, 2>(ctx, {2, 3}, "b");
    auto c = mul_mat(a, b);
    auto g = build_forward(c);
    CHECK(g.n_nodes() == 1);
}
