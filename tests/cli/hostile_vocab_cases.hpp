// Hostile vocabularies for the CLI check: the small vocabularies of
// tests/text/hostile_vocab.hpp with one rule broken each (the same rules
// tests/text/test_text_hostile.cpp checks through the library), and the words each
// refusal must contain. make_hostile_models writes each as a vocabulary-only GGUF (for
// tokenize) and inside the base model of hostile_models.hpp (for generate).
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../text/hostile_vocab.hpp"

namespace hostile {

struct vocab_case {
    std::string name;
    std::vector<std::string> expect;
    std::function<hostile_vocab::writer()> make;
};

inline std::vector<vocab_case> vocab_cases() {
    using namespace hostile_vocab;
    std::vector<vocab_case> v;
    v.push_back({"vocab_empty_tokens", {"tokenizer.ggml.tokens is empty"}, [] {
                     writer w = spm();
                     w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{});
                     w.remove("tokenizer.ggml.scores");
                     w.remove("tokenizer.ggml.token_type");
                     w.set("tokenizer.ggml.add_bos_token", false);
                     w.set("tokenizer.ggml.add_eos_token", false);
                     return w;
                 }});
    v.push_back({"vocab_wpm_no_unknown", {"tokenizer.ggml.unknown_token_id", "WPM"}, [] {
                     writer w = wpm();
                     w.set<std::int32_t>("tokenizer.ggml.unknown_token_id", -1);
                     return w;
                 }});
    v.push_back({"vocab_scores_length", {"tokenizer.ggml.scores", "3 entries for 11 tokens"}, [] {
                     writer w = spm();
                     w.set_array("tokenizer.ggml.scores", std::vector<float>{0, 0, 0});
                     return w;
                 }});
    v.push_back({"vocab_nan_score", {"tokenizer.ggml.scores[5] is NaN"}, [] {
                     writer w = ugm();
                     std::vector<float> sc{0, 0, 0, -2, -1, -1.5f, -1.2f, -2, 0};
                     sc[5] = std::numeric_limits<float>::quiet_NaN();
                     w.set_array("tokenizer.ggml.scores", sc);
                     return w;
                 }});
    v.push_back({"vocab_token_type_length", {"tokenizer.ggml.token_type", "2 entries for 9 tokens"}, [] {
                     writer w = wpm();
                     w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, CTRL});
                     return w;
                 }});
    v.push_back({"vocab_token_type_enum", {"tokenizer.ggml.token_type[3] = 7"}, [] {
                     writer w = bpe();
                     w.set_array("tokenizer.ggml.token_type", std::vector<std::int32_t>{CTRL, N, N, 7, N, N, N, N, N, N, N, N});
                     return w;
                 }});
    v.push_back({"vocab_byte_token_text", {"tokenizer.ggml.token_type[7] = 6", "'b' is not <0xXX>"}, [] {
                     writer w = spm();
                     w.set_array("tokenizer.ggml.token_type",
                                 std::vector<std::int32_t>{UNK, CTRL, CTRL, BYTE, BYTE, N, N, BYTE, N, N, USER});
                     return w;
                 }});
    v.push_back({"vocab_merge_not_two_pieces", {"tokenizer.ggml.merges[1] = 'll'"}, [] {
                     writer w = bpe();
                     w.set_array("tokenizer.ggml.merges", std::vector<std::string>{"h e", "ll", "he ll"});
                     return w;
                 }});
    v.push_back({"vocab_merge_piece_missing", {"'lx' is not a token"}, [] {
                     writer w = bpe();
                     w.set_array("tokenizer.ggml.merges", std::vector<std::string>{"h e", "l l", "he lx"});
                     return w;
                 }});
    v.push_back({"vocab_bpe_no_merges", {"tokenizer.ggml.merges"}, [] {
                     writer w = bpe();
                     w.remove("tokenizer.ggml.merges");
                     return w;
                 }});
    return v;
}

}  // namespace hostile
