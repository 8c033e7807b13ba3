// Hostile vocabularies: each test writes a GGUF vocabulary (tests/text/hostile_vocab.hpp)
// that breaks exactly one rule, loads it through the normal path and checks that the
// load (or tokenize / detokenize) is refused with a tessera::error that names the key
// and the index or value that is wrong — never a crash, an out-of-range index or
// std::terminate.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "hostile_vocab.hpp"

using namespace hostile_vocab;
using tessera::text::token;
using ids = std::vector<token>;

namespace {

// f() must throw a tessera::error whose message contains every one of `parts`.
template <class F>
void refused(F&& f, std::initializer_list<std::string_view> parts) {
    try {
        f();
        FAIL_CHECK("accepted; expected an error containing '" << *parts.begin() << "'");
    } catch (const tessera::error& e) {
        const std::string msg = e.what();
        for (auto p : parts) CHECK_MESSAGE(msg.find(p) != std::string::npos, "'" << msg << "' does not contain '" << p << "'");
    }
}
void load_refused(const writer& w, std::initializer_list<std::string_view> parts) {
    refused([&] { (void)load_tokenizer(w); }, parts);
}

}  // namespace

TEST_CASE("hostile: the base vocabularies load and tokenize") {
    CHECK(load_tokenizer(spm()).tokenize("ab", false) == ids{9, 7});
    CHECK(load_tokenizer(bpe()).tokenize("hello w", false) == ids{10, 11});
    CHECK(load_tokenizer(wpm()).tokenize("hello, unable", true) == ids{1, 4, 8, 6, 7, 2});
    CHECK(load_tokenizer(ugm()).tokenize("ab", false) == ids{4, 5});
}

TEST_CASE("hostile: empty token list") {
    for (writer w : {spm(), bpe(), wpm(), ugm()}) {
        w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{});
        w.remove("tokenizer.ggml.scores");
        w.remove("tokenizer.ggml.token_type");
        if (w.contains("tokenizer.ggml.merges")) w.set_array("tokenizer.ggml.merges", std::vector<std::string>{});
        w.set("tokenizer.ggml.add_bos_token", false);
        w.set("tokenizer.ggml.add_eos_token", false);
        w.set("tokenizer.ggml.add_sep_token", false);
        load_refused(w, {"tokenizer.ggml.tokens is empty"});
    }
}

TEST_CASE("hostile: wpm without an unknown token") {
    writer w = wpm();
    w.remove("tokenizer.ggml.unknown_token_id");  // the default, 100, is out of range for 9 tokens
    load_refused(w, {"tokenizer.ggml.unknown_token_id", "WPM"});
}

TEST_CASE("hostile: wpm whose unknown-token id is -1") {
    writer w = wpm();
    w.set<std::int32_t>("tokenizer.ggml.unknown_token_id", -1);
    load_refused(w, {"tokenizer.ggml.unknown_token_id", "WPM"});
}

TEST_CASE("hostile: wpm with a single token and nothing else") {
    writer w;
    w.set("tokenizer.ggml.model", "bert");
    w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"x"});
    w.set("tokenizer.ggml.add_bos_token", false);
    w.set("tokenizer.ggml.add_sep_token", false);
    load_refused(w, {"tokenizer.ggml.unknown_token_id"});
}

TEST_CASE("hostile: wpm add_special without a CLS/SEP token is a tokenize error") {
    writer w = wpm();
    w.set<std::int32_t>("tokenizer.ggml.bos_token_id", -1);  // default 101 out of range
    w.set("tokenizer.ggml.add_bos_token", false);            // so the load accepts it
    const auto t = load_tokenizer(w);
    CHECK(t.tokenize("hello", false) == ids{4});
    refused([&] { (void)t.tokenize("hello", true); }, {"tokenizer.ggml.bos_token_id"});
    writer s = wpm();
    s.remove("tokenizer.ggml.seperator_token_id");
    s.set("tokenizer.ggml.add_sep_token", false);
    const auto ts = load_tokenizer(s);
    refused([&] { (void)ts.tokenize("hello", true); }, {"tokenizer.ggml.seperator_token_id"});
}

TEST_CASE("hostile: ugm without an unknown token") {
    writer w = ugm();
    w.set<std::uint32_t>("tokenizer.ggml.unknown_token_id", 0xFFFFFFFFu);  // "none": the default 2 stays...
    CHECK_NOTHROW((void)load_tokenizer(w));
    w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"<pad>", "</s>"});  // ...unless it is out of range
    w.set_array("tokenizer.ggml.scores", std::vector<float>{0, 0});
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, CTRL});
    load_refused(w, {"tokenizer.ggml.unknown_token_id", "UGM"});
}

TEST_CASE("hostile: scores array of the wrong length") {
    writer w = spm();
    w.set_array("tokenizer.ggml.scores", std::vector<float>{0, 0, 0});
    load_refused(w, {"tokenizer.ggml.scores", "3 entries for 11 tokens"});
    w.set_array("tokenizer.ggml.scores", std::vector<float>(12, 0.0f));
    load_refused(w, {"tokenizer.ggml.scores", "12 entries for 11 tokens"});
}

TEST_CASE("hostile: NaN score") {
    writer w = ugm();
    std::vector<float> sc{0, 0, 0, -2, -1, -1.5f, -1.2f, -2, 0};
    sc[5] = std::numeric_limits<float>::quiet_NaN();
    w.set_array("tokenizer.ggml.scores", sc);
    load_refused(w, {"tokenizer.ggml.scores[5] is NaN"});
}

TEST_CASE("hostile: token_type array of the wrong length") {
    writer w = wpm();
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, CTRL});
    load_refused(w, {"tokenizer.ggml.token_type", "2 entries for 9 tokens"});
}

TEST_CASE("hostile: token type outside the enum") {
    writer w = bpe();
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, N, N, 7, N, N, N, N, N, N, N, N});
    load_refused(w, {"tokenizer.ggml.token_type[3] = 7"});
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, N, N, N, N, N, N, N, N, N, N, -2});
    load_refused(w, {"tokenizer.ggml.token_type[11] = -2"});
}

TEST_CASE("hostile: byte token whose text is not <0xXX>") {
    writer w = spm();
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{UNK, CTRL, CTRL, BYTE, BYTE, N, N, BYTE, N, N, USER});
    load_refused(w, {"tokenizer.ggml.token_type[7] = 6", "'b' is not <0xXX>"});
    writer g = bpe();  // BPE renders byte tokens the same way
    g.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{BYTE, N, N, N, N, N, N, N, N, N, N, N});
    load_refused(g, {"tokenizer.ggml.token_type[0] = 6", "<|endoftext|>"});
}

TEST_CASE("hostile: merge that is not two pieces") {
    writer w = bpe();
    w.set_array("tokenizer.ggml.merges", std::vector<std::string>{"h e", "ll", "he ll"});
    load_refused(w, {"tokenizer.ggml.merges[1] = 'll'", "separated by a space"});
    w.set_array("tokenizer.ggml.merges", std::vector<std::string>{"h e", "l "});
    load_refused(w, {"tokenizer.ggml.merges[1] = 'l '"});
    w.set_array("tokenizer.ggml.merges", std::vector<std::string>{""});
    load_refused(w, {"tokenizer.ggml.merges[0] = ''"});
}

TEST_CASE("hostile: merge piece that is not in the vocabulary") {
    writer w = bpe();
    w.set_array("tokenizer.ggml.merges", std::vector<std::string>{"h e", "l l", "he lx"});
    load_refused(w, {"tokenizer.ggml.merges[2] = 'he lx'", "'lx' is not a token"});
    w.set_array("tokenizer.ggml.merges", std::vector<std::string>{"q e"});
    load_refused(w, {"tokenizer.ggml.merges[0]", "'q' is not a token"});
}

TEST_CASE("hostile: bpe without merges") {
    writer w = bpe();
    w.remove("tokenizer.ggml.merges");
    load_refused(w, {"tokenizer.ggml.merges"});
}

TEST_CASE("hostile: special ids out of range never become indices") {
    // As llama.cpp: an out-of-range id in the metadata is ignored (the type default
    // stays, or no token when the default is out of range too). Every id the
    // vocabulary ends up with is in range.
    for (writer w : {spm(), bpe(), wpm(), ugm()}) {
        for (const char* k : {"bos", "eos", "eot", "eom", "padding", "mask", "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep",
                              "fim_sep", "prefix", "suffix", "middle"})
            w.set<std::uint32_t>("tokenizer.ggml." + std::string(k) + "_token_id", 1000000);
        w.set<std::int32_t>("tokenizer.ggml.seperator_token_id", -7);
        w.set("tokenizer.ggml.add_bos_token", false);
        w.set("tokenizer.ggml.add_eos_token", false);
        w.set("tokenizer.ggml.add_sep_token", false);
        const auto bytes = w.to_bytes();
        tessera::text::vocab v = load_vocab(bytes);
        for (token id : {v.bos, v.eos, v.eot, v.eom, v.unk, v.sep, v.pad, v.mask, v.linefeed, v.fim_pre, v.fim_suf, v.fim_mid,
                         v.fim_pad, v.fim_rep, v.fim_sep}) {
            CAPTURE(id);
            CHECK((id == tessera::text::null_token || (id >= 0 && static_cast<std::uint32_t>(id) < v.n_tokens())));
        }
    }
}

TEST_CASE("hostile: add_bos / add_eos / add_sep with the id missing") {
    writer w = spm();
    w.set<std::uint32_t>("tokenizer.ggml.bos_token_id", 99);
    CHECK_NOTHROW((void)load_tokenizer(w));  // default 1 stays
    w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>"});
    w.set_array("tokenizer.ggml.scores", std::vector<float>{0});
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{UNK});
    load_refused(w, {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id"});
    writer u = ugm();  // UGM adds EOS by default; its default id 1 is out of range for one token
    u.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>"});
    u.set_array("tokenizer.ggml.scores", std::vector<float>{0});
    u.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{UNK});
    u.set<std::uint32_t>("tokenizer.ggml.unknown_token_id", 0);
    u.set<std::uint32_t>("tokenizer.ggml.eos_token_id", 40);
    load_refused(u, {"tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id"});
}

TEST_CASE("hostile: spm byte fallback without the byte token is a tokenize error") {
    // Decision: the 256 byte tokens are not required at load (llama.cpp's real SPM
    // vocabularies have them, small hand-made ones need not); a byte that has neither
    // <0xXX> nor a one-byte token fails when the text needs it, naming the byte.
    const auto t = load_tokenizer(spm());
    CHECK(t.tokenize("z\n", false) == ids{5, 4, 3});
    refused([&] { (void)t.tokenize("q", false); }, {"no token for byte 0x71"});
    refused([&] { (void)t.tokenize("\xFF", false); }, {"no token for byte 0xFF"});
}

TEST_CASE("hostile: detokenize and token_to_piece refuse ids outside the vocabulary") {
    for (const writer& w : {spm(), bpe(), wpm(), ugm()}) {
        const auto t = load_tokenizer(w);
        const token n = static_cast<token>(t.get_vocab().n_tokens());
        refused([&] { (void)t.detokenize(ids{0, n}); }, {"token id " + std::to_string(n) + " out of range"});
        refused([&] { (void)t.detokenize(ids{-1}); }, {"token id -1 out of range"});
        refused([&] { (void)t.detokenize(ids{std::numeric_limits<token>::min()}, true, true); }, {"token id -2147483648"});
        refused([&] { (void)t.token_to_piece(n + 5); }, {"token id " + std::to_string(n + 5)});
        CHECK_NOTHROW((void)t.detokenize(ids{0, n - 1}));
    }
}

TEST_CASE("hostile: keys of the wrong type") {
    writer w = spm();
    w.set_array("tokenizer.ggml.tokens", std::vector<std::int32_t>{1, 2, 3});
    load_refused(w, {"tokenizer.ggml.tokens"});
    writer s = spm();
    s.set_array("tokenizer.ggml.scores", std::vector<std::string>{"a"});
    load_refused(s, {"tokenizer.ggml.scores"});
    writer m = spm();
    m.set("tokenizer.ggml.model", 3.0f);
    load_refused(m, {"tokenizer.ggml.model"});
    writer b = wpm();
    b.set("tokenizer.ggml.unknown_token_id", "three");
    load_refused(b, {"tokenizer.ggml.unknown_token_id"});
}

TEST_CASE("hostile: ugm precompiled charsmap too small or running past its end") {
    writer w = ugm();
    w.set_array("tokenizer.ggml.precompiled_charsmap", std::vector<std::uint8_t>{1, 0});
    load_refused(w, {"tokenizer.ggml.precompiled_charsmap"});
    w.set_array("tokenizer.ggml.precompiled_charsmap", std::vector<std::uint8_t>{8, 0, 0, 0, 1, 2, 3});
    load_refused(w, {"tokenizer.ggml.precompiled_charsmap", "blob size 8"});
}

TEST_CASE("hostile: a moved ugm tokenizer still tokenizes (its model must not point into the old one)") {
    // Regression for a stack-use-after-scope: the unigram model kept a reference to
    // the vocabulary of the tokenizer it was made in.
    std::vector<tessera::text::tokenizer> v;
    {
        tessera::text::tokenizer t = load_tokenizer(ugm());
        v.push_back(std::move(t));
    }
    CHECK(v.front().tokenize("ab", false) == ids{4, 5});
    tessera::text::tokenizer moved = std::move(v.front());
    v.clear();
    CHECK(moved.tokenize("a<u>b", false) == ids{4, 8, 3, 5});
}
