// Replays the vocabulary fuzzer's property (fuzz_vocab_body.hpp) on every input it
// found (tests/text/fuzz-regressions, one file per finding, named after what it
// broke) and on descriptions of the small vocabularies, so a fixed crash stays fixed.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_vocab_body.hpp"

#ifndef TEXT_FUZZ_REGRESSIONS
#error "TEXT_FUZZ_REGRESSIONS (the folder of fuzzer findings) must be defined by the build"
#endif

namespace {
void replay(const std::vector<std::uint8_t>& b) { fuzz_vocab::run_one(b.data(), b.size()); }
}  // namespace

TEST_CASE("fuzz_vocab regressions: every input the fuzzer found holds the property") {
    const std::filesystem::path dir = TEXT_FUZZ_REGRESSIONS;
    REQUIRE(std::filesystem::is_directory(dir));
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (!e.is_regular_file() || e.path().filename() == "README.md") continue;
        CAPTURE(e.path().filename().string());
        std::ifstream f(e.path(), std::ios::binary);
        const std::vector<std::uint8_t> b{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
        CHECK_NOTHROW(replay(b));
        ++n;
    }
    MESSAGE(n << " regression inputs replayed");
}

TEST_CASE("fuzz_vocab property on descriptions of the small vocabularies") {
    // A description round trip: decode(encode(d)) loads, and every mode runs.
    fuzz_vocab::description d;
    d.model = 2;  // bert
    d.tokens = {"[PAD]", "[CLS]", "[SEP]", "[UNK]", "\xE2\x96\x81hello"};
    d.types = {3, 3, 3, 2, 1};
    d.specials = {{1, 3}, {0, 1}, {5, 2}};  // eos -> 3 (unused), bos -> 1, seperator -> 2
    d.specials.emplace_back(4, 3);          // unknown -> 3
    d.text = "hello there";
    CHECK_NOTHROW(replay(d.encode()));
    d.specials.pop_back();
    d.specials.emplace_back(4, 0xFFFF);  // unknown = -1: refused at load, not a crash
    CHECK_NOTHROW(replay(d.encode()));
    for (std::uint8_t k = 0; k < 4; ++k) CHECK_NOTHROW(replay({1, k, 'h', 'e', 0xFF, ' ', 'a', 0, 0x80}));
    const auto g = hostile_vocab::ugm().to_bytes();
    std::vector<std::uint8_t> b{2};
    for (std::byte x : g) b.push_back(static_cast<std::uint8_t>(x));
    CHECK_NOTHROW(replay(b));
    b.resize(b.size() / 2);  // a truncated GGUF file is refused by the reader
    CHECK_NOTHROW(replay(b));
}
