// libFuzzer target: GGUF bytes -> llama model -> a prompt and one token with a tiny
// context (fuzz_model_body.hpp). Built with -Dfuzz=true and clang; run it through
// tests/models/run_fuzz_model.sh, which writes the seeds.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "fuzz_model_body.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        (void)model_fuzz::run_one(data, size);
    } catch (const std::exception& e) {  // only tessera::error is an accepted refusal
        std::fprintf(stderr, "model fuzz: an exception other than tessera::error: %s\n", e.what());
        std::abort();
    }
    return 0;
}
