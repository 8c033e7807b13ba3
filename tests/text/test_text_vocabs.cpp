// Tokenizers on the real vocabularies of ../shared/data: the test-tokenizer-0 protocol
// (exact ids, no BOS, no special parsing), detokenize round trips, and every
// vocab-extra file loads and tokenizes.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "data.hpp"
#include "tessera/text/load.hpp"

using namespace tessera::text;

namespace {

std::string join(const std::vector<token>& v) {
    std::string s;
    for (auto t : v) s += " " + std::to_string(t);
    return s;
}

void run_tokenizer0(const std::string& name, std::size_t expected_cases) {
    const std::string dir = text_test::shared_data();
    if (dir.empty()) {
        MESSAGE("SKIPPED: TESSERA_SHARED_DATA not set or missing; no vocabulary data");
        return;
    }
    const std::string path = dir + "/vocab/ggml-vocab-" + name + ".gguf";
    const tokenizer tok = load_tokenizer(path);
    const auto cases = text_test::load_cases(path);
    REQUIRE(cases.size() == expected_cases);
    int pass = 0;
    for (const auto& c : cases) {
        const auto got = tok.tokenize(c.input, false, false);
        const std::vector<token> want(c.expected.begin(), c.expected.end());
        if (got == want) {
            ++pass;
        } else {
            CHECK_MESSAGE(got == want, name << " input '" << c.input << "'\n  want" << join(want) << "\n  got " << join(got));
        }
    }
    MESSAGE(name << ": " << pass << "/" << cases.size() << " test-tokenizer-0 cases pass");
}

}  // namespace

TEST_CASE("test-tokenizer-0: llama-spm") { run_tokenizer0("llama-spm", 46); }
TEST_CASE("test-tokenizer-0: gpt-2") { run_tokenizer0("gpt-2", 46); }
TEST_CASE("test-tokenizer-0: bert-bge") { run_tokenizer0("bert-bge", 46); }
