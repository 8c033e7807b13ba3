// What every tessera benchmark's main() does once its process is ready: prints what the
// CPU has and which arch the dispatched kernels use, then runs Google Benchmark with the
// command line. TESSERA_ARCH=<name> forces an arch. Returns main()'s status.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>

#include "tessera/simd/dispatch.hpp"

namespace tessera_bench {

inline int run_benchmarks(int argc, char** argv) {
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

}  // namespace tessera_bench
