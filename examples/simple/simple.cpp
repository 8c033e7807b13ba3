// simple: ggml's "simple" example in tessera — two matrices, one mul_mat, print.
#include <cstdio>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/backend/cpu.hpp"

int main(int argc, char** argv) {
    using namespace tessera::graph;
    return cli::run("simple", "", [&](cli::state&) {
        if (cli::help_only(argc, argv, "usage: simple\nMultiplies two small matrices with mul_mat and prints the result.\n  -h, --help   this text\n  --version    version, compiler and SIMD arch\n")) return 0;
        // a: 4 rows of K = 2 (ggml's [K, M] = [2, 4]); b: 3 rows of K = 2 ([2, 3]).
        const std::vector<float> A = {2, 8, 5, 1, 4, 2, 8, 6};
        const std::vector<float> B = {10, 5, 9, 9, 5, 4};
        context ctx;
        auto a = new_tensor<float, 2>(ctx, {2, 4}, "a");
        auto b = new_tensor<float, 2>(ctx, {2, 3}, "b");
        a.set(A);
        b.set(B);
        auto c = mul_mat(a, b);  // [M, N] = [4, 3]: c[m, n] = dot(a row m, b row n)
        tessera::backend::cpu::executor(1).compute(build_forward(c));

        std::vector<float> out(static_cast<std::size_t>(c.nelements()));
        c.get(out);
        std::printf("mul mat (%lld x %lld) (transposed result):\n[", static_cast<long long>(c.ne(0)), static_cast<long long>(c.ne(1)));
        for (std::int64_t n = 0; n < c.ne(1); ++n) {
            for (std::int64_t m = 0; m < c.ne(0); ++m) std::printf(" %.2f", static_cast<double>(out[static_cast<std::size_t>(n * c.ne(0) + m)]));
            std::printf(n + 1 < c.ne(1) ? "\n" : " ]\n");
        }
        return 0;
    });
}
