// Random-weight llama models written with tessera's GGUF writer: a whole pipeline
// (GGUF -> weights -> graph -> tokens) to try and to test without downloading a model.
// The weights come from a seeded splitmix64 stream, so a configuration always gives
// the same file; the vocabulary is a small SPM one (control tokens, the 256 byte
// tokens, letters and common English words), padded to n_vocab when asked.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/gguf/writer.hpp"
#include "tessera/quant/reference.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

struct random_llama_config {
    std::int64_t n_embd = 64;
    std::int64_t n_layer = 2;
    std::int64_t n_ff = 128;
    std::int64_t n_head = 4;
    std::int64_t n_head_kv = 2;
    std::int64_t n_ctx = 512;        // llama.context_length
    std::int64_t n_vocab = 0;        // 0: the built-in vocabulary's size; larger: padded with extra tokens
    type_id weight_type = type_id::f32;  // of the 2-D weights; norms stay f32
    bool tied_output = false;        // no output.weight: logits from token_embd
    // Zero output rows (logit 0) for the control, byte and padding tokens, so that the
    // pieces a random model writes are words and letters and it does not stop at once.
    bool text_tokens_only = true;
    float rope_freq_base = 10000.0f;
    float rms_eps = 1e-5f;
    std::uint64_t seed = 1;

    // About 110 M parameters (n_embd 768, 12 layers of 12 heads, n_ff 2048, 16000 tokens,
    // context 2048): the model bench_models times and `generate --random-size 110M` writes.
    static random_llama_config llama_110m(type_id weights) {
        random_llama_config c;
        c.n_embd = 768;
        c.n_layer = 12;
        c.n_ff = 2048;
        c.n_head = 12;
        c.n_head_kv = 12;
        c.n_ctx = 2048;
        c.n_vocab = 16000;
        c.weight_type = weights;
        return c;
    }
};

namespace detail {

struct splitmix64 {
    std::uint64_t s;
    std::uint64_t next() noexcept {
        std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // uniform in [-1, 1)
    float sym() noexcept { return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0); }
};

// The built-in SPM vocabulary: pieces, scores, token types (llama.cpp's numbering:
// 1 normal, 2 unknown, 3 control, 6 byte).
struct spm_vocab {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<std::int32_t> types;
};

inline spm_vocab builtin_vocab(std::int64_t n_vocab) {
    spm_vocab v;
    auto add = [&](std::string t, float score, std::int32_t type) {
        v.tokens.push_back(std::move(t));
        v.scores.push_back(score);
        v.types.push_back(type);
    };
    add("<unk>", 0.0f, 2);
    add("<s>", 0.0f, 3);
    add("</s>", 0.0f, 3);
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0.0f, 6);
    static const char* const words[] = {
        "the", "and", "to", "was", "he", "she", "it", "they", "in", "of", "on", "with", "said", "day", "time",
        "once", "upon", "there", "little", "big", "girl", "boy", "dog", "cat", "sun", "tree", "ball", "happy", "play",
        "saw", "went", "wanted", "friend", "mom", "home", "park", "red", "blue", "very", "her", "his", "one", "named"};
    const std::string sp = "\xE2\x96\x81";  // U+2581, SPM's word boundary
    float score = -1.0f;
    for (const char* w : words) add(sp + w, score -= 0.01f, 1);
    add(sp, score -= 0.01f, 1);
    for (const char* p = ".,!?'"; *p; ++p) add(std::string(1, *p), score -= 0.01f, 1);
    for (char c = 'a'; c <= 'z'; ++c) add(std::string(1, c), score -= 0.01f, 1);
    for (char c = 'A'; c <= 'Z'; ++c) add(std::string(1, c), score -= 0.01f, 1);
    for (char c = 'a'; c <= 'z'; ++c) add(sp + c, score -= 0.01f, 1);
    if (n_vocab > 0 && n_vocab < static_cast<std::int64_t>(v.tokens.size()))
        fail(errc::invalid_argument, "random_llama: n_vocab " + std::to_string(n_vocab) + " is below the " +
                                         std::to_string(v.tokens.size()) + " tokens of the built-in vocabulary");
    for (std::int64_t i = static_cast<std::int64_t>(v.tokens.size()); i < n_vocab; ++i)
        add("<extra_" + std::to_string(i) + ">", -1000.0f, 1);
    return v;
}

// A tensor's bytes: rows of f32 values converted to type t.
inline std::vector<std::byte> encode(type_id t, const std::vector<float>& x, std::int64_t row) {
    const std::int64_t nrows = static_cast<std::int64_t>(x.size()) / row;
    std::vector<std::byte> out(static_cast<std::size_t>(row_size(t, row) * static_cast<std::size_t>(nrows)));
    if (t == type_id::f32) {
        std::memcpy(out.data(), x.data(), out.size());
    } else if (t == type_id::f16) {
        for (std::size_t i = 0; i < x.size(); ++i) {
            const f16 h = f16::from_float(x[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    } else if (t == type_id::bf16) {
        for (std::size_t i = 0; i < x.size(); ++i) {
            const bf16 h = bf16::from_float(x[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        }
    } else {
        quant::quantize(t, x.data(), out.data(), nrows, row);
    }
    return out;
}

}  // namespace detail

// A GGUF file (as a writer holding its tensors) of a llama model with random weights.
inline gguf::writer random_llama(const random_llama_config& c) {
    if (c.n_embd <= 0 || c.n_layer <= 0 || c.n_ff <= 0 || c.n_head <= 0 || c.n_head_kv <= 0 || c.n_ctx <= 0)
        fail(errc::invalid_argument, "random_llama: sizes must be positive");
    if (c.n_embd % c.n_head != 0 || c.n_head % c.n_head_kv != 0 || (c.n_embd / c.n_head) % 2 != 0)
        fail(errc::invalid_argument, "random_llama: n_embd must split into an even head size, n_head into KV groups");
    const type_id wt = c.weight_type;
    const bool float_w = wt == type_id::f32 || wt == type_id::f16 || wt == type_id::bf16;
    if (!float_w && !quant::can_quantize(wt))
        fail(errc::unsupported, "random_llama: cannot write weights of type " + std::string(type_name(wt)));
    const detail::spm_vocab voc = detail::builtin_vocab(c.n_vocab);
    const auto V = static_cast<std::int64_t>(voc.tokens.size());
    const std::int64_t E = c.n_embd, D = E / c.n_head, EKV = D * c.n_head_kv, F = c.n_ff;
    // a row length the type cannot hold stays f32 (as llama-quantize keeps such tensors)
    auto type_for = [&](std::int64_t row) { return row % block_size(wt) == 0 ? wt : type_id::f32; };

    gguf::writer w;
    w.set("general.architecture", "llama");
    w.set("general.name", "tessera random llama");
    w.set<std::uint32_t>("llama.context_length", static_cast<std::uint32_t>(c.n_ctx));
    w.set<std::uint32_t>("llama.embedding_length", static_cast<std::uint32_t>(E));
    w.set<std::uint32_t>("llama.block_count", static_cast<std::uint32_t>(c.n_layer));
    w.set<std::uint32_t>("llama.feed_forward_length", static_cast<std::uint32_t>(F));
    w.set<std::uint32_t>("llama.attention.head_count", static_cast<std::uint32_t>(c.n_head));
    w.set<std::uint32_t>("llama.attention.head_count_kv", static_cast<std::uint32_t>(c.n_head_kv));
    w.set<std::uint32_t>("llama.rope.dimension_count", static_cast<std::uint32_t>(D));
    w.set<float>("llama.rope.freq_base", c.rope_freq_base);
    w.set<float>("llama.attention.layer_norm_rms_epsilon", c.rms_eps);
    w.set<std::uint32_t>("llama.vocab_size", static_cast<std::uint32_t>(V));
    w.set("tokenizer.ggml.model", "llama");
    w.set_array("tokenizer.ggml.tokens", voc.tokens);
    w.set_array("tokenizer.ggml.scores", std::span<const float>(voc.scores));
    w.set_array("tokenizer.ggml.token_type", std::span<const std::int32_t>(voc.types));
    w.set<std::uint32_t>("tokenizer.ggml.bos_token_id", 1);
    w.set<std::uint32_t>("tokenizer.ggml.eos_token_id", 2);
    w.set<std::uint32_t>("tokenizer.ggml.unknown_token_id", 0);
    w.set<bool>("tokenizer.ggml.add_bos_token", true);
    w.set<bool>("tokenizer.ggml.add_eos_token", false);

    detail::splitmix64 rng{c.seed};
    // weights ~ U(-a, a) with a = sqrt(3 / fan_in): unit-variance outputs for unit-variance inputs
    auto is_text_token = [&](std::int64_t id) { return voc.types[static_cast<std::size_t>(id)] == 1 && voc.scores[static_cast<std::size_t>(id)] > -1000.0f; };
    auto matrix = [&](const std::string& name, std::int64_t in, std::int64_t out) {
        std::vector<float> x(static_cast<std::size_t>(in * out));
        const float a = std::sqrt(3.0f / static_cast<float>(in));
        for (float& v : x) v = a * rng.sym();
        if (name == "output.weight" && c.text_tokens_only)
            for (std::int64_t r = 0; r < out; ++r)
                if (!is_text_token(r)) std::fill_n(x.begin() + r * in, in, 0.0f);
        const type_id t = type_for(in);
        const std::int64_t ne[2] = {in, out};
        w.add_tensor(name, t, std::span<const std::int64_t>(ne, 2), detail::encode(t, x, in));
    };
    auto norm = [&](const std::string& name) {
        std::vector<float> x(static_cast<std::size_t>(E));
        for (float& v : x) v = 1.0f + 0.1f * rng.sym();
        const std::int64_t ne[1] = {E};
        w.add_tensor(name, type_id::f32, std::span<const std::int64_t>(ne, 1), detail::encode(type_id::f32, x, E));
    };
    {  // embeddings: unit-scale rows
        std::vector<float> x(static_cast<std::size_t>(E * V));
        for (float& v : x) v = rng.sym();
        if (c.tied_output && c.text_tokens_only)
            for (std::int64_t r = 0; r < V; ++r)
                if (!is_text_token(r)) std::fill_n(x.begin() + r * E, E, 0.0f);
        const type_id t = type_for(E);
        const std::int64_t ne[2] = {E, V};
        w.add_tensor("token_embd.weight", t, std::span<const std::int64_t>(ne, 2), detail::encode(t, x, E));
    }
    norm("output_norm.weight");
    if (!c.tied_output) matrix("output.weight", E, V);
    for (std::int64_t i = 0; i < c.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        norm(p + "attn_norm.weight");
        matrix(p + "attn_q.weight", E, E);
        matrix(p + "attn_k.weight", E, EKV);
        matrix(p + "attn_v.weight", E, EKV);
        matrix(p + "attn_output.weight", E, E);
        norm(p + "ffn_norm.weight");
        matrix(p + "ffn_gate.weight", E, F);
        matrix(p + "ffn_up.weight", E, F);
        matrix(p + "ffn_down.weight", F, E);
    }
    return w;
}

}  // namespace models
TESSERA_END_NAMESPACE
