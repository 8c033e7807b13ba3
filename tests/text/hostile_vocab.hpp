// Small valid GGUF vocabularies of each tokenizer type, written with the GGUF writer,
// for the hostile-vocabulary tests and the vocabulary fuzzer: a test takes one, breaks
// exactly one rule, and loads it through the normal path (gguf::file::from_buffer,
// vocab_from_gguf, tokenizer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"
#include "tessera/text/load.hpp"

namespace hostile_vocab {

namespace tt = tessera::text;
using tessera::gguf::writer;

inline constexpr std::int32_t N = 1, UNK = 2, CTRL = 3, USER = 4, BYTE = 6;

// llama SPM: <unk> <s> </s>, two byte tokens, ▁ and a few pieces.
inline writer spm() {
    writer w;
    w.set("tokenizer.ggml.model", "llama");
    w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "<s>", "</s>", "<0x0A>", "<0x7A>", "\xE2\x96\x81", "a", "b",
                                                                  "ab", "\xE2\x96\x81" "a", "<user>"});
    w.set_array("tokenizer.ggml.scores", std::vector<float>{0, 0, 0, 0, 0, -1, -1, -1, -0.5f, -0.2f, 0});
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{UNK, CTRL, CTRL, BYTE, BYTE, N, N, N, N, N, USER});
    return w;
}

// gpt2 BPE with the gpt-2 pre-tokenizer and a handful of merges.
inline writer bpe() {
    writer w;
    w.set("tokenizer.ggml.model", "gpt2");
    w.set("tokenizer.ggml.pre", "gpt-2");
    w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"<|endoftext|>", "h", "e", "l", "o", "\xC4\xA0", "w", "he", "ll",
                                                                  "hell", "hello", "\xC4\xA0w"});
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, N, N, N, N, N, N, N, N, N, N, N});
    w.set_array("tokenizer.ggml.merges", std::vector<std::string>{"h e", "l l", "he ll", "hell o", "\xC4\xA0 w"});
    w.set<std::uint32_t>("tokenizer.ggml.bos_token_id", 0);
    w.set<std::uint32_t>("tokenizer.ggml.eos_token_id", 0);
    return w;
}

// bert WordPiece: [PAD] [CLS] [SEP] [UNK] and some ▁-prefixed words.
inline writer wpm() {
    writer w;
    w.set("tokenizer.ggml.model", "bert");
    w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"[PAD]", "[CLS]", "[SEP]", "[UNK]", "\xE2\x96\x81hello",
                                                                  "\xE2\x96\x81world", "\xE2\x96\x81un", "able", "\xE2\x96\x81,"});
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, CTRL, CTRL, UNK, N, N, N, N, N});
    w.set<std::uint32_t>("tokenizer.ggml.bos_token_id", 1);
    w.set<std::uint32_t>("tokenizer.ggml.seperator_token_id", 2);
    w.set<std::uint32_t>("tokenizer.ggml.unknown_token_id", 3);
    w.set<std::uint32_t>("tokenizer.ggml.padding_token_id", 0);
    return w;
}

// t5 unigram: <pad> </s> <unk> and a few scored pieces (no charsmap).
inline writer ugm() {
    writer w;
    w.set("tokenizer.ggml.model", "t5");
    w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"<pad>", "</s>", "<unk>", "\xE2\x96\x81", "\xE2\x96\x81" "a", "b",
                                                                  "ab", "a", "<u>"});
    w.set_array("tokenizer.ggml.scores", std::vector<float>{0, 0, 0, -2, -1, -1.5f, -1.2f, -2, 0});
    w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, CTRL, UNK, N, N, N, N, N, USER});
    w.set("tokenizer.ggml.add_space_prefix", true);
    return w;
}

// Loads a vocabulary from the bytes of a GGUF file through the normal path.
inline tt::vocab load_vocab(std::span<const std::byte> bytes) {
    return tt::vocab_from_gguf(tessera::gguf::file::from_buffer(bytes, "<hostile vocabulary>"));
}
inline tt::tokenizer load_tokenizer(const writer& w) {
    const auto bytes = w.to_bytes();
    return tt::tokenizer(load_vocab(bytes));
}

}  // namespace hostile_vocab
