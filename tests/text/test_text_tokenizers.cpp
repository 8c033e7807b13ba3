// Tokenizers on hand-made vocabularies whose results are worked out by hand from the
// algorithms llama.cpp uses (merge order by score/rank, byte fallback, dummy prefix,
// special-token partitioning, WordPiece, unigram Viterbi, piece rendering).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tessera/text/tokenizer.hpp"

using namespace tessera::text;
using ids = std::vector<token>;

namespace {

constexpr std::int32_t N = 1, UNK = 2, CTRL = 3, USER = 4, BYTE = 6;

vocab_source spm_source() {
    vocab_source s;
    s.model = "llama";
    s.tokens = {"<unk>", "<s>", "</s>", "<0x0A>", "<0x7A>", "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "a",
                "\xE2\x96\x81" "ab", "c", "bc", "<user>", "<|user|>", "<a>", "<a><b>"};
    s.scores = {0, 0, 0, 0, 0, -1, -1, -1, -0.5f, -0.2f, -0.1f, -1, -0.3f, 0, 0, 0, 0};
    s.types = {UNK, CTRL, CTRL, BYTE, BYTE, N, N, N, N, N, N, N, N, USER, CTRL, USER, USER};
    return s;
}

vocab_source bpe_source() {
    vocab_source s;
    s.model = "gpt2";
    s.pre = "gpt-2";
    s.tokens = {"<|endoftext|>", "h", "e", "l", "o", "\xC4\xA0", "w", "r", "d", "he", "ll", "hell", "hello", "\xC4\xA0w",
                "or", "\xC4\xA0wor", "\xC4\xA0worl", "\xC4\xA0world", "!", "a", "b", "c", "ab", "bc"};
    s.types.assign(s.tokens.size(), N);
    s.types[0] = CTRL;
    s.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or", "\xC4\xA0wor l", "\xC4\xA0worl d", "b c", "a b"};
    return s;
}

}  // namespace

TEST_CASE("spm: merges by score, highest first, and resegments") {
    const tokenizer t{vocab(spm_source())};
    // ▁ a b c: ▁a (-0.2) first, then ▁ab (-0.1); ab and bc are stale afterwards
    CHECK(t.tokenize("abc", false) == ids{10, 11});
    CHECK(t.tokenize("abc", true) == ids{1, 10, 11});
    // byte fallback: 'z' has no token, <0x7A> has
    CHECK(t.tokenize("bz", false) == ids{5, 7, 4});
    CHECK(t.tokenize("\n", false) == ids{5, 3});
    CHECK(t.tokenize("", false).empty());
    CHECK(t.tokenize("", true) == ids{1});
    // a byte with neither <0xXX> nor a one-byte token cannot be encoded
    CHECK_THROWS_AS(t.tokenize("q", false), tessera::error);
}

TEST_CASE("spm: special tokens, dummy prefix after them, user-defined always split") {
    const tokenizer t{vocab(spm_source())};
    // user-defined <user> splits even without parse_special; "b" after it gets the prefix
    CHECK(t.tokenize("a<user>b", false, false) == ids{9, 13, 5, 7});
    CHECK(t.tokenize("<s>ab", false, true) == ids{1, 10});
    // the longest special text wins
    CHECK(t.tokenize("<a><b>", false, false) == ids{16});
    CHECK(t.tokenize("<a>a", false, false) == ids{15, 9});
    // control tokens only with parse_special
    CHECK(t.tokenize("ab<|user|>ab", false, true) == ids{10, 14, 10});
    CHECK_THROWS(t.tokenize("<|user|>", false, false));  // '<' has no token and no byte token
}

TEST_CASE("spm: phi-3 name rule gives special tokens RSTRIP") {
    vocab_source s = spm_source();
    s.general_name = "Phi-3 mini";
    const tokenizer t{vocab(std::move(s))};
    CHECK((t.get_vocab().attributes(14) & attr::rstrip) != 0);
    CHECK((t.get_vocab().attributes(1) & attr::rstrip) == 0);  // <s> is excluded
    CHECK(t.tokenize("<|user|>\n ab", false, true) == ids{14, 10});
    const tokenizer plain{vocab(spm_source())};
    CHECK((plain.get_vocab().attributes(14) & attr::rstrip) == 0);
}

TEST_CASE("spm: pieces and detokenize") {
    const tokenizer t{vocab(spm_source())};
    CHECK(t.token_to_piece(10) == " ab");
    CHECK(t.token_to_piece(4) == "z");
    CHECK(t.token_to_piece(3) == "\n");
    CHECK(t.token_to_piece(1) == "<s>");
    CHECK(t.token_to_piece(1, false).empty());
    CHECK(t.token_to_piece(0) == "<unk>");
    CHECK(t.token_to_piece(13) == "<user>");
    CHECK(t.detokenize(ids{10, 11}) == "abc");
    CHECK(t.detokenize(ids{1, 10, 11}, true) == " abc");  // BOS removed: the leading space stays
    CHECK(t.detokenize(ids{1, 10, 11}, false, true) == "<s> abc");
    CHECK(t.detokenize(t.tokenize("ab abc\nbz", true), true).size() > 0);
    CHECK(t.detokenize(t.tokenize("ab abc\nbz", false)) == "ab abc\nbz");
}

TEST_CASE("bpe: byte-level words, merge ranks lowest first, ties to the left") {
    const tokenizer t{vocab(bpe_source())};
    CHECK(t.tokenize("hello world!", false) == ids{12, 17, 18});
    CHECK(t.tokenize("low", false) == ids{3, 4, 6});
    CHECK(t.tokenize("abc", false) == ids{19, 23});  // "b c" (rank 9) beats "a b" (rank 10)
    CHECK(t.tokenize("ab", false) == ids{22});
    CHECK(t.tokenize("hz", false) == ids{1});        // 'z' has no token: dropped like llama.cpp
    CHECK(t.tokenize("hello", true) == ids{12});     // gpt-2: no BOS
    CHECK(t.tokenize("<|endoftext|>", false, true) == ids{0});
    CHECK(t.tokenize("<|endoftext|>", false, false) != ids{0});
}

TEST_CASE("bpe: pieces decode the byte map, detokenize cleans spaces") {
    const tokenizer t{vocab(bpe_source())};
    CHECK(t.token_to_piece(17) == " world");
    CHECK(t.token_to_piece(5) == " ");
    CHECK(t.token_to_piece(0) == "<|endoftext|>");
    CHECK(t.detokenize(ids{12, 17, 18}) == "hello world!");
    CHECK(t.detokenize(ids{12, 5, 18}) == "hello!");  // clean_spaces: " !" -> "!"
    CHECK(t.get_vocab().clean_spaces);
    CHECK(t.get_vocab().is_eog(0));
}

TEST_CASE("bpe: llama3 pre sets ignore_merges and add_bos") {
    vocab_source s = bpe_source();
    s.pre = "llama-bpe";
    s.special_ids = {{"bos", 0}};
    const tokenizer t{vocab(std::move(s))};
    CHECK(t.get_vocab().ignore_merges);
    CHECK(t.get_vocab().add_bos);
    CHECK(t.tokenize("hello world!", true) == ids{0, 12, 17, 18});
}

TEST_CASE("wpm: BERT normalization, greedy longest match, [UNK] for unmatched words") {
    vocab_source s;
    s.model = "bert";
    s.tokens = {"[PAD]", "[CLS]", "[SEP]", "[UNK]", "\xE2\x96\x81hello", "\xE2\x96\x81world", "\xE2\x96\x81un", "able",
                "\xE2\x96\x81,", "\xE2\x96\x81" "cafe", "\xE2\x96\x81\xE4\xB8\xAD"};
    s.types = {CTRL, CTRL, CTRL, UNK, N, N, N, N, N, N, N};
    s.special_ids = {{"bos", 1}, {"seperator", 2}, {"unknown", 3}, {"padding", 0}};
    const tokenizer t{vocab(std::move(s))};
    CHECK(t.tokenize("Hello, WORLD unable caf\xC3\xA9 \xE4\xB8\xADx", true) == ids{1, 4, 8, 5, 6, 7, 9, 10, 3, 2});
    CHECK(t.tokenize("unx", false) == ids{3});
    CHECK(t.tokenize("  ", false).empty());
    CHECK(t.tokenize("[CLS]hello", false, true) == ids{1, 4});
    CHECK(t.token_to_piece(4) == " hello");
    CHECK(wpm_preprocess("A\xCC\x81" "b\tc!", true, true) == std::vector<std::string>{"ab", "c", "!"});
    CHECK(wpm_preprocess("A\xCC\x81", false, false) == std::vector<std::string>{"A\xCC\x81"});
}

TEST_CASE("ugm: Viterbi picks the best-scoring path, unknowns merge") {
    vocab_source s;
    s.model = "t5";
    s.tokens = {"<pad>", "</s>", "<unk>", "\xE2\x96\x81", "\xE2\x96\x81" "a", "b", "ab", "\xE2\x96\x81" "ab", "a"};
    s.scores = {0, 0, 0, -2, -1, -1.5f, -1.2f, -3.0f, -2};
    s.types = {CTRL, CTRL, UNK, N, N, N, N, N, N};
    s.add_space_prefix = true;
    const tokenizer t{vocab(std::move(s))};
    CHECK(t.tokenize("ab", false) == ids{4, 5});       // -2.5 beats ▁ab (-3.0) and ▁+ab (-3.2)
    CHECK(t.tokenize("abq", false) == ids{4, 5, 2});
    CHECK(t.tokenize("qq", false) == ids{3, 2});       // two unknown code points -> one <unk>
    CHECK(t.tokenize("ab", true) == ids{4, 5, 1});     // UGM adds EOS by default
    CHECK(t.tokenize("a  b", false) == ids{4, 3, 3, 5});
}

TEST_CASE("vocab: load errors are reported") {
    vocab_source dup = spm_source();
    dup.tokens[7] = "a";
    CHECK_THROWS_AS(vocab(std::move(dup)), tessera::error);
    vocab_source unknown = spm_source();
    unknown.model = "klingon";
    CHECK_THROWS_AS(vocab(std::move(unknown)), tessera::error);
    vocab_source pre = bpe_source();
    pre.pre = "no-such-pre";
    CHECK_THROWS_AS(vocab(std::move(pre)), tessera::error);
    vocab_source short_scores = spm_source();
    short_scores.scores.resize(3);
    CHECK_THROWS_AS(vocab(std::move(short_scores)), tessera::error);
    vocab_source bos = bpe_source();  // default BPE bos 11 exists; an out-of-range metadata id keeps it
    bos.special_ids = {{"bos", 999}};
    CHECK(vocab(std::move(bos)).bos == 11);
    vocab_source nobos = bpe_source();
    nobos.tokens.resize(5);
    nobos.types.resize(5);
    nobos.add_bos = true;  // default bos 11 is out of range -> disabled -> add_bos fails
    CHECK_THROWS_AS(vocab(std::move(nobos)), tessera::error);
    vocab_source empty = spm_source();
    empty.tokens[5] = "";
    CHECK(vocab(std::move(empty)).text(5) == "[EMPTY_5]");
}

TEST_CASE("partition: lstrip and rstrip trim C whitespace next to the token") {
    vocab_source s = spm_source();
    s.general_name = "phi3";
    const vocab v(std::move(s));
    const std::string text = "ab  <|user|> \t b";
    const auto f = partition_special(v, text, true);
    REQUIRE(f.size() == 3);
    CHECK(text.substr(f[0].offset, f[0].length) == "ab  ");
    CHECK(f[1].id == 14);
    CHECK(text.substr(f[2].offset, f[2].length) == "b");
}
