// Hostile model files: a small valid random llama (models/random.hpp) rebuilt with one
// thing wrong each, one case per rule the model loader checks (issue 26, item 2). Each
// case carries the words its refusal must contain. test_model_hostile.cpp loads them
// through the library; make_hostile_models writes them as files for the CLI check
// (check_hostile_cli.py runs generate on each).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"
#include "tessera/models/random.hpp"

namespace hostile {

using namespace tessera;

inline models::random_llama_config base_config() {
    models::random_llama_config c;
    c.n_embd = 64;  // head size 16
    c.n_layer = 2;
    c.n_ff = 256;  // ffn_down rows hold a q8_K block
    c.n_head = 4;
    c.n_head_kv = 2;
    c.n_ctx = 64;
    c.seed = 3;
    return c;
}

// What a case may change while the base file is copied: its keys (after they are
// copied) and each tensor (return false to drop it; or replace its type/shape/bytes).
struct tensor_edit {
    std::string name;
    type_id type;
    std::vector<std::int64_t> ne;
    std::vector<std::byte> bytes;
};

struct model_case {
    std::string name;       // a file name stem
    std::string rule;       // the rule it breaks, in words
    std::vector<std::string> expect;  // substrings of the error message
    std::function<void(gguf::writer&)> keys;                      // may be empty
    std::function<bool(tensor_edit&)> tensor;                     // may be empty
    std::function<void(gguf::writer&)> extra_tensors;             // may be empty
};

// The base model with one case applied, as GGUF bytes.
inline std::vector<std::byte> build(const model_case& c) {
    static const std::vector<std::byte> base = models::random_llama(base_config()).to_bytes();  // made once
    const gguf::file f = gguf::file::from_buffer(base);
    gguf::writer out;
    out.copy_metadata(f.meta());
    if (c.keys) c.keys(out);
    for (const auto& t : f.tensors()) {
        tensor_edit e{t.name, t.type, std::vector<std::int64_t>(t.ne.begin(), t.ne.begin() + std::max(t.n_dims, 1)),
                      std::vector<std::byte>(t.bytes().begin(), t.bytes().end())};
        if (c.tensor && !c.tensor(e)) continue;
        out.add_tensor(e.name, e.type, std::span<const std::int64_t>(e.ne), e.bytes);
    }
    if (c.extra_tensors) c.extra_tensors(out);
    return out.to_bytes();
}

// A tensor's bytes in another type (zeros of the right size; the loader must refuse
// before it reads them).
inline bool retype(tensor_edit& e, type_id t) {
    e.type = t;
    e.bytes.assign(static_cast<std::size_t>(row_size(t, e.ne[0]) * (e.ne.size() > 1 ? e.ne[1] : 1)), std::byte{0});
    return true;
}

inline std::vector<model_case> model_cases() {
    std::vector<model_case> v;
    auto key_u32 = [](const char* k, std::uint32_t x) { return [=](gguf::writer& w) { w.set<std::uint32_t>(k, x); }; };
    auto key_f32 = [](const char* k, float x) { return [=](gguf::writer& w) { w.set<float>(k, x); }; };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();

    v.push_back({"missing_block_count", "a required key is present", {"llama.block_count", "missing"},
                 [](gguf::writer& w) { w.remove("llama.block_count"); }, {}, {}});
    v.push_back({"string_embedding_length", "an integer key holds an integer", {"llama.embedding_length", "expected an integer"},
                 [](gguf::writer& w) { w.set("llama.embedding_length", "sixty-four"); }, {}, {}});
    v.push_back({"zero_embedding", "dimensions are positive", {"sizes must be positive", "n_embd 0"},
                 key_u32("llama.embedding_length", 0), {}, {}});
    v.push_back({"negative_heads", "dimensions are positive", {"sizes must be positive", "n_head -4"},
                 [](gguf::writer& w) { w.set<std::int32_t>("llama.attention.head_count", -4); }, {}, {}});
    v.push_back({"zero_context", "dimensions are positive", {"sizes must be positive", "n_ctx_train 0"},
                 key_u32("llama.context_length", 0), {}, {}});
    v.push_back({"huge_embedding", "dimensions within limits", {"limits", "n_embd 1073741824"},
                 key_u32("llama.embedding_length", 1u << 30), {}, {}});
    v.push_back({"huge_block_count", "dimensions within limits", {"limits", "n_layer 100000"},
                 key_u32("llama.block_count", 100000), {}, {}});
    v.push_back({"heads_not_dividing_embedding", "the head count divides the embedding length",
                 {"embedding length 64", "not a multiple of the head count 3"}, key_u32("llama.attention.head_count", 3), {}, {}});
    v.push_back({"kv_heads_not_dividing_heads", "the KV head count divides the head count",
                 {"head count 4", "not a multiple of the KV head count 3"}, key_u32("llama.attention.head_count_kv", 3), {}, {}});
    v.push_back({"rope_dims_above_head", "rope dimensions <= head size", {"rope dimension count 32", "head size 16"},
                 key_u32("llama.rope.dimension_count", 32), {}, {}});
    v.push_back({"rope_dims_odd", "rope dimensions even", {"rope dimension count 7", "even"},
                 key_u32("llama.rope.dimension_count", 7), {}, {}});
    v.push_back({"rope_freq_base_zero", "rope frequency base finite and > 0", {"llama.rope.freq_base", "finite number > 0"},
                 key_f32("llama.rope.freq_base", 0.0f), {}, {}});
    v.push_back({"rope_freq_base_nan", "rope frequency base finite and > 0", {"llama.rope.freq_base", "finite number > 0"},
                 key_f32("llama.rope.freq_base", nan), {}, {}});
    v.push_back({"rope_freq_base_inf", "rope frequency base finite and > 0", {"llama.rope.freq_base", "finite number > 0"},
                 key_f32("llama.rope.freq_base", inf), {}, {}});
    v.push_back({"rope_scaling_zero", "rope scaling factor > 0", {"rope.scaling.factor", "> 0"},
                 [](gguf::writer& w) {
                     w.set("llama.rope.scaling.type", "linear");
                     w.set<float>("llama.rope.scaling.factor", 0.0f);
                 },
                 {}, {}});
    v.push_back({"rope_scaling_unknown", "a known rope scaling", {"rope scaling 'yarn-ish'", "not supported"},
                 [](gguf::writer& w) { w.set("llama.rope.scaling.type", "yarn-ish"); }, {}, {}});
    v.push_back({"rms_eps_zero", "RMS norm epsilon finite, in (0, 1)", {"layer_norm_rms_epsilon", "(0, 1)"},
                 key_f32("llama.attention.layer_norm_rms_epsilon", 0.0f), {}, {}});
    v.push_back({"rms_eps_nan", "RMS norm epsilon finite, in (0, 1)", {"layer_norm_rms_epsilon", "(0, 1)"},
                 key_f32("llama.attention.layer_norm_rms_epsilon", nan), {}, {}});
    v.push_back({"rms_eps_negative", "RMS norm epsilon finite, in (0, 1)", {"layer_norm_rms_epsilon", "(0, 1)"},
                 key_f32("llama.attention.layer_norm_rms_epsilon", -1e-5f), {}, {}});
    v.push_back({"context_2p40", "context length capped", {"llama.context_length", "1099511627776", "16777216"},
                 [](gguf::writer& w) { w.set<std::uint64_t>("llama.context_length", std::uint64_t{1} << 40); }, {}, {}});
    v.push_back({"vocab_size_not_embedding_rows", "vocabulary size = embedding rows",
                 {"'token_embd.weight' has", "rows but the vocabulary has", "llama.vocab_size"},
                 key_u32("llama.vocab_size", 100000), {}, {}});
    v.push_back({"tokens_not_embedding_rows", "token list length = embedding rows",
                 {"'tokenizer.ggml.tokens' has", "rows of 'token_embd.weight'"},
                 [](gguf::writer& w) {  // 10 more tokens than embedding rows, vocab_size kept
                     const auto base = models::detail::builtin_vocab(0);
                     auto tokens = base.tokens;
                     auto scores = base.scores;
                     auto types = base.types;
                     for (int i = 0; i < 10; ++i) {
                         tokens.push_back("<more_" + std::to_string(i) + ">");
                         scores.push_back(-2000.0f);
                         types.push_back(1);
                     }
                     w.set_array("tokenizer.ggml.tokens", tokens);
                     w.set_array("tokenizer.ggml.scores", std::span<const float>(scores));
                     w.set_array("tokenizer.ggml.token_type", std::span<const std::int32_t>(types));
                 },
                 {}, {}});
    v.push_back({"block_count_below_blocks", "block count = blocks present (no extra blocks)",
                 {"'blk.1.", "belongs to block 1", "'llama.block_count' is 1"}, key_u32("llama.block_count", 1), {}, {}});
    v.push_back({"block_count_above_blocks", "block count = blocks present (none missing)",
                 {"blk.2.", "missing"}, key_u32("llama.block_count", 3), {}, {}});
    v.push_back({"stray_block_tensor", "no tensor of a block past the count",
                 {"'blk.7.attn_norm.weight'", "belongs to block 7"}, {}, {},
                 [](gguf::writer& w) {
                     const std::vector<std::byte> b(64 * 4);
                     w.add_tensor("blk.7.attn_norm.weight", type_id::f32, {64}, b);
                 }});
    v.push_back({"q8_K_weight", "no activation-only type as a weight",
                 {"'blk.0.ffn_down.weight'", "q8_K", "quantized activations only"}, {},
                 [](tensor_edit& e) { return e.name == "blk.0.ffn_down.weight" ? retype(e, type_id::q8_K) : true; }, {}});
    v.push_back({"q8_1_weight", "no activation-only type as a weight",
                 {"'blk.1.attn_q.weight'", "q8_1", "quantized activations only"}, {},
                 [](tensor_edit& e) { return e.name == "blk.1.attn_q.weight" ? retype(e, type_id::q8_1) : true; }, {}});
    v.push_back({"f16_norm", "norm weights are f32", {"norm tensor 'output_norm.weight'", "must be f32"}, {},
                 [](tensor_edit& e) { return e.name == "output_norm.weight" ? retype(e, type_id::f16) : true; }, {}});
    v.push_back({"missing_tensor", "every weight present", {"'blk.1.ffn_up.weight'", "missing"}, {},
                 [](tensor_edit& e) { return e.name != "blk.1.ffn_up.weight"; }, {}});
    v.push_back({"missing_embedding", "token embeddings present", {"'token_embd.weight'", "missing"}, {},
                 [](tensor_edit& e) { return e.name != "token_embd.weight"; }, {}});
    v.push_back({"wrong_shape", "every weight has its shape", {"'blk.0.attn_k.weight'", "shape [64, 31]", "expected [64, 32]"}, {},
                 [](tensor_edit& e) {
                     if (e.name == "blk.0.attn_k.weight") {
                         e.ne = {64, 31};
                         e.bytes.resize(64 * 31 * 4);
                     }
                     return true;
                 },
                 {}});
    v.push_back({"unsupported_architecture", "a supported architecture", {"architecture 'gpt2'", "not supported"},
                 [](gguf::writer& w) { w.set("general.architecture", "gpt2"); }, {}, {}});
    return v;
}

}  // namespace hostile
