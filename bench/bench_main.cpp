// main() of every tessera benchmark: prints what the CPU has and which arch the
// dispatched kernels use, then runs Google Benchmark. TESSERA_ARCH=<name> forces an arch.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "tessera/simd/dispatch.hpp"

int main(int argc, char** argv) {
    try {
        std::fputs(tessera::simd::report().c_str(), stdout);
    } catch (const tessera::error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    std::fflush(stdout);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
