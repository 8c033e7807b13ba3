// libFuzzer target for vocabulary loading and tokenization (built with -Dfuzz=true and
// clang). The input format and the property are in fuzz_vocab_body.hpp; run it through
// tests/text/run_fuzz_vocab.sh, which prepares a seed corpus.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "fuzz_vocab_body.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        fuzz_vocab::run_one(data, size);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_vocab: %s\n", e.what());
        std::abort();
    }
    return 0;
}
