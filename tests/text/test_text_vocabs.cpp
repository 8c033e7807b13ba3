// Tokenizers on the real vocabularies of ../shared/data: the test-tokenizer-0 protocol
// (exact ids, no BOS, no special parsing), detokenize round trips, and every
// vocab-extra file loads and tokenizes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../shared_data.hpp"
#include "data.hpp"
#include "tessera/text/load.hpp"

using namespace tessera::text;

namespace {

std::string join(const std::vector<token>& v) {
    std::string s;
    for (auto t : v) {
        s.push_back(' ');
        s.append(std::to_string(t));
    }
    return s;
}

void run_tokenizer0(const std::string& name, std::size_t expected_cases) {
    const std::string dir = test_data::root();
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

DATA_TEST_CASE("test-tokenizer-0: llama-spm", "vocab") { run_tokenizer0("llama-spm", 46); }
DATA_TEST_CASE("test-tokenizer-0: gpt-2", "vocab") { run_tokenizer0("gpt-2", 46); }
DATA_TEST_CASE("test-tokenizer-0: bert-bge", "vocab") { run_tokenizer0("bert-bge", 46); }

namespace {

// The 46 standard test strings (from the llama-spm .inp; every vocab shares them).
std::vector<std::string> standard_inputs(const std::string& dir) {
    std::vector<std::string> v;
    for (const auto& c : text_test::load_cases(dir + "/vocab/ggml-vocab-llama-spm.gguf")) v.push_back(c.input);
    return v;
}

bool valid_utf8(const std::string& s) {
    for (std::size_t off = 0; off < s.size();)
        if (decode_utf8(s, off) == invalid_cp) return false;
    return true;
}

}  // namespace

DATA_TEST_CASE("upstream examples: special parsing, byte fallback, RSTRIP", "vocab") {
    const std::string dir = test_data::root();
    const tokenizer spm = load_tokenizer(dir + "/vocab/ggml-vocab-llama-spm.gguf");
    CHECK(spm.tokenize("Hello world", true) == std::vector<token>{1, 15043, 3186});
    CHECK(spm.tokenize(" ", false) == std::vector<token>{259});
    CHECK(spm.tokenize("\n", false) == std::vector<token>{29871, 13});
    CHECK(spm.tokenize("<s>Hello</s>", false, true) == std::vector<token>{1, 15043, 2});
    CHECK(spm.tokenize("<s>Hello</s>", false, false) == std::vector<token>{529, 29879, 29958, 10994, 829, 29879, 29958});
    CHECK(spm.tokenize("x\xffy\xc3", false) == std::vector<token>{921, 258, 124, 198});
    CHECK(spm.token_to_piece(3).size() == 1);  // <0x00> renders as one NUL byte
    const tokenizer phi3 = load_tokenizer(dir + "/vocab-extra/ggml-vocab-phi-3.gguf");
    CHECK(phi3.tokenize("<|user|>\nHello", false, true) == std::vector<token>{32010, 15043});
    const token eos_text = phi3.get_vocab().find("</s>");
    REQUIRE(eos_text != null_token);
    CHECK((phi3.get_vocab().attributes(eos_text) & attr::control) != 0);  // user-defined in the file, control by text
}

DATA_TEST_CASE("every vocabulary loads, tokenizes the standard inputs and round-trips", "vocab") {
    const std::string dir = test_data::root();
    const auto inputs = standard_inputs(dir);
    REQUIRE(inputs.size() == 46);
    std::vector<std::string> files;
    for (const char* sub : {"/vocab", "/vocab-extra"})
        for (const auto& e : std::filesystem::directory_iterator(dir + sub))
            if (e.path().extension() == ".gguf") files.push_back(e.path().string());
    files.push_back(dir + "/models/stories260K.gguf");
    files.push_back(dir + "/models/llama-2-tiny-random.gguf");
    std::sort(files.begin(), files.end());
    CHECK(files.size() == 14);
    for (const auto& path : files) {
        INFO(path);
        const tokenizer tok = load_tokenizer(path);
        const vocab& v = tok.get_vocab();
        int exact = 0, candidates = 0;
        for (const auto& s : inputs) {
            const auto ids = tok.tokenize(s, false, false);
            if (v.type() != vocab_type::wpm) CHECK(ids.empty() == s.empty());  // WPM drops whitespace-only text
            for (token id : ids) CHECK((id >= 0 && static_cast<std::uint32_t>(id) < v.n_tokens()));
            // Concatenated pieces give back the input for the lossless types: SPM (byte
            // fallback) and byte-level BPE, on valid UTF-8 without special-token text.
            if (v.type() == vocab_type::wpm || !valid_utf8(s)) continue;
            ++candidates;
            std::string back;
            for (token id : ids) back += tok.token_to_piece(id);
            if (v.type() == vocab_type::spm && v.add_space_prefix && !back.empty() && back[0] == ' ') back.erase(0, 1);
            if (back == s) ++exact;
            else MESSAGE(path << ": no round trip for '" << s << "' -> '" << back << "'");
        }
        MESSAGE(std::filesystem::path(path).filename().string() << " (" << vocab_type_name(v.type()) << ", pre '" << v.pre()
                << "'): " << exact << "/" << candidates << " round trips");
        if (v.type() != vocab_type::wpm) CHECK(exact == candidates);
        // detokenize (llama_detokenize) agrees with the pieces when clean_spaces is off
        if (!v.clean_spaces && v.type() != vocab_type::wpm) {
            const std::string s = "Hello world, this is a test.";
            CHECK(tok.detokenize(tok.tokenize(s, false)) == s);
        }
    }
}

DATA_TEST_CASE("bert-bge adds [CLS] ... [SEP] with special tokens", "vocab") {
    const std::string dir = test_data::root();
    const tokenizer bert = load_tokenizer(dir + "/vocab/ggml-vocab-bert-bge.gguf");
    CHECK(bert.tokenize("Hello world", true) == std::vector<token>{101, 7592, 2088, 102});
    CHECK(bert.token_to_piece(7592) == " hello");
    CHECK(bert.token_to_piece(101) == "[CLS]");
}

DATA_TEST_CASE("broken GGUF files fail to load with an error, not a crash", "vocab") {
    const std::string dir = test_data::root();
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/gguf-bad")) {
        INFO(e.path().string());
        CHECK_THROWS_AS(load_tokenizer(e.path().string()), tessera::error);
        ++n;
    }
    CHECK(n > 0);
    // a GGUF without tokenizer keys
    CHECK_THROWS_AS(load_tokenizer(dir + "/gguf/gguf-v3-q4-0.bin"), tessera::error);
}

DATA_TEST_CASE("random bytes never crash a tokenizer", "vocab") {
    const std::string dir = test_data::root();
    std::uint32_t state = 12345;
    auto next = [&] {
        state = state * 1664525u + 1013904223u;
        return state >> 24;
    };
    for (const char* f : {"/vocab/ggml-vocab-llama-spm.gguf", "/vocab/ggml-vocab-gpt-2.gguf", "/vocab/ggml-vocab-bert-bge.gguf",
                          "/vocab-extra/ggml-vocab-deepseek-llm.gguf", "/vocab-extra/ggml-vocab-phi-3.gguf"}) {
        INFO(f);
        const tokenizer tok = load_tokenizer(dir + f);
        for (int i = 0; i < 40; ++i) {
            std::string s;
            const std::uint32_t n = next() % 64;
            for (std::uint32_t k = 0; k < n; ++k) s.push_back(static_cast<char>(next()));
            if (i % 3 == 0) s += "<s></s>[CLS]<|endoftext|><|user|>";
            for (bool special : {false, true}) {
                const auto ids = tok.tokenize(s, special, special);
                for (token id : ids) {
                    CHECK(id >= 0);
                    CHECK(static_cast<std::uint32_t>(id) < tok.get_vocab().n_tokens());
                }
                (void)tok.detokenize(ids, special, special);
            }
        }
    }
}

DATA_TEST_CASE("one tokenizer used from several threads gives the same ids", "vocab") {
    const std::string dir = test_data::root();
    const auto inputs = standard_inputs(dir);
    for (const char* f : {"/vocab/ggml-vocab-llama-spm.gguf", "/vocab/ggml-vocab-gpt-2.gguf", "/vocab/ggml-vocab-bert-bge.gguf"}) {
        const tokenizer tok = load_tokenizer(dir + f);
        std::vector<std::vector<token>> want;
        for (const auto& s : inputs) want.push_back(tok.tokenize(s, false));
        std::vector<int> bad(3, 0);
        std::vector<std::thread> pool;
        for (int t = 0; t < 3; ++t)
            pool.emplace_back([&, t] {
                for (int rep = 0; rep < 3; ++rep)
                    for (std::size_t i = 0; i < inputs.size(); ++i)
                        if (tok.tokenize(inputs[i], false) != want[i]) ++bad[static_cast<std::size_t>(t)];
            });
        for (auto& th : pool) th.join();
        CHECK(bad == std::vector<int>{0, 0, 0});
    }
}
