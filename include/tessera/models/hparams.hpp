// Hyperparameters of a llama-architecture model, read from a GGUF file's metadata
// (the `<arch>.*` keys llama.cpp writes). Model code lives in tessera/models/, above
// the core layers: it only uses the public graph, backend, gguf and text APIs.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/gguf/metadata.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

// Architectures whose graph is llama's (same tensors, normal-mode rope, RMSNorm, SwiGLU).
inline bool is_llama_like(std::string_view arch) noexcept { return arch == "llama" || arch == "mistral"; }

namespace detail {

// An integer key of any GGUF integer type, as a signed 64-bit value.
inline std::optional<std::int64_t> meta_int(const gguf::metadata& m, const std::string& key) {
    const gguf::value* v = m.find_value(key);
    if (!v) return std::nullopt;
    using vt = gguf::value_type;
    switch (v->type()) {
        case vt::u8: return v->get<std::uint8_t>(key);
        case vt::i8: return v->get<std::int8_t>(key);
        case vt::u16: return v->get<std::uint16_t>(key);
        case vt::i16: return v->get<std::int16_t>(key);
        case vt::u32: return v->get<std::uint32_t>(key);
        case vt::i32: return v->get<std::int32_t>(key);
        case vt::u64: return static_cast<std::int64_t>(v->get<std::uint64_t>(key));
        case vt::i64: return v->get<std::int64_t>(key);
        default:
            fail(errc::format, "model metadata: '" + key + "' is a " + std::string(gguf::value_type_name(v->type())) +
                                   ", expected an integer");
    }
}

inline std::optional<float> meta_float(const gguf::metadata& m, const std::string& key) {
    const gguf::value* v = m.find_value(key);
    if (!v) return std::nullopt;
    if (v->type() == gguf::value_type::f32) return v->get<float>(key);
    if (v->type() == gguf::value_type::f64) return static_cast<float>(v->get<double>(key));
    fail(errc::format, "model metadata: '" + key + "' is a " + std::string(gguf::value_type_name(v->type())) +
                           ", expected a float");
}

// A float for messages: shortest round-trip-ish form ("0", "1e-05", "nan", "inf").
inline std::string float_str(float v) {
    char buf[32];
    const int k = std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
    return std::string(buf, static_cast<std::size_t>(k > 0 ? k : 0));
}

inline std::int64_t need_int(const gguf::metadata& m, const std::string& key) {
    const auto v = meta_int(m, key);
    if (!v) fail(errc::format, "model metadata: required key '" + key + "' is missing");
    return *v;
}

}  // namespace detail

struct llama_hparams {
    std::string arch = "llama";
    std::int64_t n_ctx_train = 0;  // <arch>.context_length
    std::int64_t n_embd = 0;       // <arch>.embedding_length
    std::int64_t n_layer = 0;      // <arch>.block_count
    std::int64_t n_ff = 0;         // <arch>.feed_forward_length
    std::int64_t n_head = 0;       // <arch>.attention.head_count
    std::int64_t n_head_kv = 0;    // <arch>.attention.head_count_kv (= n_head when absent)
    std::int64_t n_rot = 0;        // <arch>.rope.dimension_count (= head size when absent)
    std::int64_t n_vocab = 0;      // <arch>.vocab_size, else the token list's length (0: from token_embd)
    float rope_freq_base = 10000.0f;    // <arch>.rope.freq_base
    float rope_freq_scale = 1.0f;       // 1 / <arch>.rope.scaling.factor for linear scaling
    float rms_eps = 1e-5f;              // <arch>.attention.layer_norm_rms_epsilon

    // Limits on what a file may declare (far above any published model; a value past them
    // is a corrupt or hostile file, refused before it sizes an allocation).
    static constexpr std::int64_t max_context = std::int64_t{1} << 24;  // tokens (16 Mi)
    static constexpr std::int64_t max_dim = std::int64_t{1} << 20;      // embedding / feed-forward length
    static constexpr std::int64_t max_layers = 4096;
    static constexpr std::int64_t max_vocab = std::int64_t{1} << 24;

    std::int64_t n_embd_head() const noexcept { return n_head > 0 ? n_embd / n_head : 0; }
    std::int64_t n_embd_kv() const noexcept { return n_embd_head() * n_head_kv; }

    // Reads and checks the keys; errors name the key.
    static llama_hparams from_metadata(const gguf::metadata& m) {
        using detail::meta_float;
        using detail::meta_int;
        using detail::need_int;
        llama_hparams h;
        const gguf::value* a = m.find_value("general.architecture");
        if (!a) fail(errc::format, "model metadata: 'general.architecture' is missing");
        h.arch = a->get<std::string>("general.architecture");
        if (!is_llama_like(h.arch))
            fail(errc::unsupported, "model: architecture '" + h.arch + "' is not supported (supported: llama, mistral)");
        const std::string p = h.arch + ".";
        h.n_ctx_train = need_int(m, p + "context_length");
        h.n_embd = need_int(m, p + "embedding_length");
        h.n_layer = need_int(m, p + "block_count");
        h.n_ff = need_int(m, p + "feed_forward_length");
        h.n_head = need_int(m, p + "attention.head_count");
        h.n_head_kv = meta_int(m, p + "attention.head_count_kv").value_or(h.n_head);
        h.rope_freq_base = meta_float(m, p + "rope.freq_base").value_or(10000.0f);
        h.rms_eps = meta_float(m, p + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
        if (const gguf::value* st = m.find_value(p + "rope.scaling.type")) {
            const std::string t = st->get<std::string>(p + "rope.scaling.type");
            if (t == "linear") {
                const float f = meta_float(m, p + "rope.scaling.factor").value_or(1.0f);
                if (!(f > 0.0f)) fail(errc::format, "model metadata: '" + p + "rope.scaling.factor' must be > 0");
                h.rope_freq_scale = 1.0f / f;
            } else if (t != "none") {
                fail(errc::unsupported, "model: rope scaling '" + t + "' is not supported yet (only none and linear)");
            }
        }
        if (h.n_embd <= 0 || h.n_layer <= 0 || h.n_ff <= 0 || h.n_head <= 0 || h.n_head_kv <= 0 || h.n_ctx_train <= 0)
            fail(errc::format, "model metadata: sizes must be positive (" + h.summary() + ")");
        if (h.n_embd % h.n_head != 0)
            fail(errc::format, "model metadata: embedding length " + std::to_string(h.n_embd) +
                                   " is not a multiple of the head count " + std::to_string(h.n_head));
        if (h.n_head % h.n_head_kv != 0)
            fail(errc::format, "model metadata: head count " + std::to_string(h.n_head) +
                                   " is not a multiple of the KV head count " + std::to_string(h.n_head_kv));
        h.n_rot = meta_int(m, p + "rope.dimension_count").value_or(h.n_embd_head());
        if (h.n_rot <= 0 || h.n_rot > h.n_embd_head() || h.n_rot % 2 != 0)
            fail(errc::format, "model metadata: rope dimension count " + std::to_string(h.n_rot) +
                                   " must be even and at most the head size " + std::to_string(h.n_embd_head()));
        if (!std::isfinite(h.rope_freq_base) || !(h.rope_freq_base > 0.0f))
            fail(errc::format, "model metadata: '" + p + "rope.freq_base' is " + detail::float_str(h.rope_freq_base) +
                                   ", must be a finite number > 0");
        if (!std::isfinite(h.rope_freq_scale) || !(h.rope_freq_scale > 0.0f))
            fail(errc::format, "model metadata: '" + p + "rope.scaling.factor' gives the frequency scale " +
                                   detail::float_str(h.rope_freq_scale) + ", must be a finite number > 0");
        if (!std::isfinite(h.rms_eps) || !(h.rms_eps > 0.0f) || !(h.rms_eps < 1.0f))
            fail(errc::format, "model metadata: '" + p + "attention.layer_norm_rms_epsilon' is " + detail::float_str(h.rms_eps) +
                                   ", must be a finite number in (0, 1)");
        if (h.n_ctx_train > max_context)
            fail(errc::format, "model metadata: '" + p + "context_length' is " + std::to_string(h.n_ctx_train) +
                                   ", above the " + std::to_string(max_context) + " tokens tessera accepts");
        if (h.n_embd > max_dim || h.n_ff > max_dim || h.n_layer > max_layers)
            fail(errc::format, "model metadata: sizes above tessera's limits (embedding and feed-forward length <= " +
                                   std::to_string(max_dim) + ", block count <= " + std::to_string(max_layers) + "): " +
                                   h.summary());
        if (const auto v = meta_int(m, p + "vocab_size")) h.n_vocab = *v;
        else if (m.contains("tokenizer.ggml.tokens")) h.n_vocab = static_cast<std::int64_t>(m.array_size("tokenizer.ggml.tokens"));
        if (h.n_vocab < 0 || h.n_vocab > max_vocab)
            fail(errc::format, "model metadata: the vocabulary size " + std::to_string(h.n_vocab) + " is outside 0.." +
                                   std::to_string(max_vocab));
        return h;
    }

    std::string summary() const {
        return arch + ": n_embd " + std::to_string(n_embd) + ", n_layer " + std::to_string(n_layer) + ", n_ff " +
               std::to_string(n_ff) + ", n_head " + std::to_string(n_head) + ", n_head_kv " + std::to_string(n_head_kv) +
               ", n_rot " + std::to_string(n_rot) + ", n_vocab " + std::to_string(n_vocab) + ", n_ctx_train " +
               std::to_string(n_ctx_train);
    }
};

}  // namespace models
TESSERA_END_NAMESPACE
