// libFuzzer target for the MPI graph decoder and worker core (built with -Dfuzz=true and
// clang). Run it through tests/backend/mpi/run_fuzz_graph.sh, which prepares the seeds.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "fuzz_graph_body.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        (void)graph_fuzz::check_one(data, size);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graph fuzz property violated: %s\n", e.what());
        std::abort();
    }
    return 0;
}
