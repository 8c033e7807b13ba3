// The graph-only unit timed by bench/compile_time.sh: it includes the graph umbrella,
// builds a small graph and computes nothing (no kernel, no backend is compiled).
#include <cstdio>
#include "tessera/graph/all.hpp"
int main() {
    using namespace tessera::graph;
    context ctx;
    auto a = new_tensor<float, 2>(ctx, {64, 32}, "a");
    auto b = new_tensor<float, 2>(ctx, {64, 8}, "b");
    auto c = soft_max(scale(mul_mat(a, b), 0.5f));
    auto g = build_forward(c);
    std::printf("%zu nodes\n", g.n_nodes());
    return 0;
}
