// libFuzzer target for the GGUF reader (built with -Dfuzz=true and clang).
// Run it through tests/gguf/run_fuzz.sh, which prepares a seed corpus.
#include <cstdio>
#include <cstdlib>

#include "fuzz_body.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        (void)gguf_fuzz::check_one(data, size);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gguf fuzz property violated: %s\n", e.what());
        std::abort();
    }
    return 0;
}
