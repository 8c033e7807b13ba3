// tessera::text::vocab: a tokenizer vocabulary as llama.cpp holds it — token texts,
// scores and attributes, BPE merge ranks, special token ids and the flags that steer
// tokenization — built from GGUF `tokenizer.ggml.*` metadata or by hand.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/text/pretokenize.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

using token = std::int32_t;
inline constexpr token null_token = -1;

enum class vocab_type : std::uint8_t { none, spm, bpe, wpm, ugm, rwkv, plamo2 };

constexpr std::string_view vocab_type_name(vocab_type t) noexcept {
    switch (t) {
        case vocab_type::none: return "no vocab";
        case vocab_type::spm: return "SPM";
        case vocab_type::bpe: return "BPE";
        case vocab_type::wpm: return "WPM";
        case vocab_type::ugm: return "UGM";
        case vocab_type::rwkv: return "RWKV";
        case vocab_type::plamo2: return "PLaMo2";
    }
    return "unknown";
}

// GGUF token types (tokenizer.ggml.token_type).
enum class token_type : std::int32_t { undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

// Token attributes, numbered like llama.cpp's llama_token_attr.
namespace attr {
inline constexpr std::uint32_t undefined = 0;
inline constexpr std::uint32_t unknown = 1u << 0;
inline constexpr std::uint32_t unused = 1u << 1;
inline constexpr std::uint32_t normal = 1u << 2;
inline constexpr std::uint32_t control = 1u << 3;
inline constexpr std::uint32_t user_defined = 1u << 4;
inline constexpr std::uint32_t byte = 1u << 5;
inline constexpr std::uint32_t normalized = 1u << 6;
inline constexpr std::uint32_t lstrip = 1u << 7;
inline constexpr std::uint32_t rstrip = 1u << 8;
inline constexpr std::uint32_t single_word = 1u << 9;
}  // namespace attr

constexpr std::uint32_t attr_of_type(std::int32_t t) noexcept {
    switch (static_cast<token_type>(t)) {
        case token_type::normal: return attr::normal;
        case token_type::unknown: return attr::unknown;
        case token_type::control: return attr::control;
        case token_type::user_defined: return attr::user_defined;
        case token_type::unused: return attr::unused;
        case token_type::byte: return attr::byte;
        case token_type::undefined: return attr::undefined;
    }
    return attr::undefined;
}

struct token_data {
    std::string text;
    float score = 0.0f;
    std::uint32_t attr = attr::normal;
};

// Everything a vocabulary is made from, before derivation. Fill it by hand (tests) or
// with vocab_source_from_metadata (GGUF).
struct vocab_source {
    std::string model;                    // tokenizer.ggml.model
    std::optional<std::string> pre;       // tokenizer.ggml.pre
    std::vector<std::string> tokens;
    std::vector<float> scores;            // empty: all 0
    std::vector<std::int32_t> types;      // empty: all normal
    std::vector<std::string> merges;
    std::vector<std::uint8_t> precompiled_charsmap;
    // special ids and flags that the metadata sets; unset ones keep the type defaults
    std::vector<std::pair<std::string, std::uint32_t>> special_ids;  // key suffix ("bos", "eos", ...) -> id
    std::optional<bool> add_bos, add_eos, add_sep, add_space_prefix, remove_extra_whitespaces;
    std::optional<bool> lowercase, strip_accents;
    std::string general_name, general_architecture;
};

// Transparent string hashing, so lookups by string_view do not allocate.
struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

class vocab {
public:
    vocab() = default;

    // Builds and derives everything as llama.cpp's llama_vocab::load does.
    explicit vocab(vocab_source src) { build(std::move(src)); }

    vocab_type type() const noexcept { return type_; }
    const std::string& model() const noexcept { return model_; }
    const std::string& pre() const noexcept { return pre_; }
    pre_type pre_kind() const noexcept { return pre_kind_; }
    std::uint32_t n_tokens() const noexcept { return static_cast<std::uint32_t>(tokens_.size()); }
    const token_data& data(token id) const {
        check_id(id);
        return tokens_[static_cast<std::size_t>(id)];
    }
    const std::string& text(token id) const { return data(id).text; }
    float score(token id) const { return data(id).score; }
    std::uint32_t attributes(token id) const { return data(id).attr; }
    bool is(token id, std::uint32_t a) const { return (data(id).attr & a) != 0; }
    bool is_eog(token id) const { return id != null_token && eog_.count(id) != 0; }
    const std::set<token>& eog_ids() const noexcept { return eog_; }

    // Id of a token text, or null_token.
    token find(std::string_view text) const noexcept {
        auto it = index_.find(text);
        return it == index_.end() ? null_token : it->second;
    }
    // BPE merge rank of (left, right), or -1.
    int merge_rank(std::string_view left, std::string_view right) const {
        std::string key;  // local: lookups from several threads at once are fine
        key.reserve(left.size() + right.size() + 1);
        key.append(left);
        key.push_back('\0');
        key.append(right);
        auto it = merges_.find(std::string_view(key));
        return it == merges_.end() ? -1 : it->second;
    }
    // Merge rank by token ids, for the common case where both sides are tokens
    // (then it equals merge_rank of their texts).
    int merge_rank(token left, token right) const noexcept {
        auto it = id_merges_.find(pair_key(left, right));
        return it == id_merges_.end() ? -1 : it->second;
    }
    std::size_t n_merges() const noexcept { return merges_.size(); }
    int max_token_len() const noexcept { return max_token_len_; }

    // The SPM/UGM byte token for b: <0xXX>, else the one-byte text; throws if neither.
    token byte_to_token(std::uint8_t b) const {
        static constexpr char hex[] = "0123456789ABCDEF";
        if (type_ == vocab_type::spm || type_ == vocab_type::ugm) {
            const char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            if (token t = find(std::string_view(buf, 6)); t != null_token) return t;
            const char one = static_cast<char>(b);
            if (token t = find(std::string_view(&one, 1)); t != null_token) return t;
        } else {
            const std::string s = to_utf8(byte_to_cp[b]);
            if (token t = find(s); t != null_token) return t;
        }
        fail(errc::format, "vocabulary has no token for byte 0x" + std::string{hex[b >> 4], hex[b & 15]});
    }
    // Byte value of a byte token (<0xXX>).
    std::uint8_t token_to_byte(token id) const {
        const std::string& t = text(id);
        if (t.size() != 6 || t.compare(0, 3, "<0x") != 0) fail(errc::format, "token " + std::to_string(id) + " is not a byte token");
        auto hexval = [&](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            fail(errc::format, "token " + std::to_string(id) + " is not a byte token");
        };
        return static_cast<std::uint8_t>(hexval(t[3]) * 16 + hexval(t[4]));
    }

    // special tokens (null_token when absent)
    token bos = null_token, eos = null_token, eot = null_token, eom = null_token, unk = null_token, sep = null_token,
          pad = null_token, mask = null_token, linefeed = null_token;
    token fim_pre = null_token, fim_suf = null_token, fim_mid = null_token, fim_pad = null_token, fim_rep = null_token,
          fim_sep = null_token;

    // flags
    bool add_space_prefix = false, add_bos = false, add_eos = false, add_sep = false, ignore_merges = false,
         clean_spaces = false, remove_extra_whitespaces = false, escape_whitespaces = true,
         treat_whitespace_as_suffix = false, lowercase = true, strip_accents = true;

    const std::vector<std::uint8_t>& precompiled_charsmap() const noexcept { return charsmap_; }
    // Ids considered by special-token partitioning, longest text first.
    const std::vector<token>& special_tokens() const noexcept { return special_cache_; }

private:
    static constexpr std::uint64_t pair_key(token l, token r) noexcept {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) | static_cast<std::uint32_t>(r);
    }

    // After the tokens are indexed: the merges whose both sides are tokens, by id.
    void index_merges() {
        id_merges_.reserve(merges_.size());
        for (const auto& [key, rank] : merges_) {
            const std::size_t z = key.find('\0');
            const token l = find(std::string_view(key).substr(0, z));
            const token r = find(std::string_view(key).substr(z + 1));
            if (l != null_token && r != null_token) id_merges_.emplace(pair_key(l, r), rank);
        }
    }

    static bool is_byte_text(std::string_view t) noexcept {
        auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
        return t.size() == 6 && t.substr(0, 3) == "<0x" && hex(t[3]) && hex(t[4]) && t[5] == '>';
    }
    // A token text for an error message: at most 40 bytes, control bytes as \xHH.
    static std::string printable(std::string_view t) {
        static constexpr char hex[] = "0123456789abcdef";
        std::string r;
        for (std::size_t i = 0; i < t.size() && i < 40; ++i) {
            const auto c = static_cast<unsigned char>(t[i]);
            if (c < 0x20 || c == 0x7F) {
                r += "\\x";
                r.push_back(hex[c >> 4]);
                r.push_back(hex[c & 15]);
            } else {
                r.push_back(static_cast<char>(c));
            }
        }
        if (t.size() > 40) r += "...";
        return r;
    }

    void check_id(token id) const {
        if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size())
            fail(errc::invalid_argument, "token id " + std::to_string(id) + " out of range (vocabulary has " +
                                             std::to_string(tokens_.size()) + " tokens)");
    }

    void build(vocab_source src) {
        model_ = src.model;
        const std::string& m = src.model;
        if (m == "no_vocab" || m == "none") {
            type_ = vocab_type::none;
            return;
        }
        pre_info pinfo;
        if (m == "llama") {
            type_ = vocab_type::spm;
            bos = 1; eos = 2; unk = 0;
        } else if (m == "bert") {
            type_ = vocab_type::wpm;
            bos = 101; unk = 100; sep = 102; pad = 0; mask = 103;
        } else if (m == "gpt2" || m == "gemma4") {
            type_ = vocab_type::bpe;
            if (m == "gemma4") src.pre = "gemma4";
            else { bos = 11; eos = 11; }
            merges_.reserve(src.merges.size());
            for (std::size_t i = 0; i < src.merges.size(); ++i) {
                const std::string& w = src.merges[i];
                // "left right": the separator is the first space after the first byte
                // (so a left side may be a space itself); the right side is not empty.
                const std::size_t p = w.size() > 1 ? w.find(' ', 1) : std::string::npos;
                if (p == std::string::npos || p + 1 == w.size())
                    fail(errc::format, "tokenizer.ggml.merges[" + std::to_string(i) + "] = '" + printable(w) +
                                           "' is not two pieces separated by a space");
                std::string key = w.substr(0, p);
                key.push_back('\0');
                key.append(w, p + 1);
                merges_.emplace(std::move(key), static_cast<int>(i));
            }
        } else if (m == "t5") {
            type_ = vocab_type::ugm;
            eos = 1; unk = 2; pad = 0;
            charsmap_ = std::move(src.precompiled_charsmap);
            if (!charsmap_.empty()) {
                if (charsmap_.size() < 4) fail(errc::format, "tokenizer.ggml.precompiled_charsmap too small for its header");
                const std::uint32_t blob = static_cast<std::uint32_t>(charsmap_[0]) | (static_cast<std::uint32_t>(charsmap_[1]) << 8) |
                                           (static_cast<std::uint32_t>(charsmap_[2]) << 16) | (static_cast<std::uint32_t>(charsmap_[3]) << 24);
                if (std::uint64_t(blob) + 4 >= charsmap_.size())
                    fail(errc::format, "tokenizer.ggml.precompiled_charsmap: XCDA blob size " + std::to_string(blob) + " runs past its end");
            }
        } else if (m == "rwkv" || m == "plamo2" || m == "hybriddna" || m == "whitespace") {
            fail(errc::unsupported, "tokenizer model '" + m + "' is not implemented");
        } else {
            fail(errc::format, "unknown tokenizer: '" + m + "'");
        }
        pre_ = src.pre.value_or("");

        if (type_ == vocab_type::bpe) {
            pinfo = pre_info_from_name(pre_);
            pre_kind_ = pinfo.type;
            add_space_prefix = false;
            escape_whitespaces = pinfo.escape_whitespaces;
            clean_spaces = pinfo.clean_spaces;
            ignore_merges = pinfo.ignore_merges;
            add_bos = pinfo.add_bos;
            add_sep = pinfo.add_sep;
            if (pinfo.clear_bos_id) bos = null_token;
            if (m == "gemma4") { bos = eos = unk = sep = pad = mask = null_token; }
        } else if (type_ == vocab_type::spm) {
            add_space_prefix = true; clean_spaces = false; add_bos = true; add_eos = false;
        } else if (type_ == vocab_type::wpm) {
            add_space_prefix = false; clean_spaces = true; add_bos = true; add_eos = false; add_sep = true;
        } else if (type_ == vocab_type::ugm) {
            add_bos = false; add_eos = true;
        }
        if (src.add_space_prefix) add_space_prefix = *src.add_space_prefix;
        if (src.remove_extra_whitespaces) remove_extra_whitespaces = *src.remove_extra_whitespaces;

        // tokens
        const std::size_t n = src.tokens.size();
        if (n == 0) fail(errc::format, "tokenizer.ggml.tokens is empty (a " + m + " vocabulary needs at least one token)");
        if (n > 0x7FFFFFFF) fail(errc::format, "tokenizer.ggml.tokens: too many tokens (" + std::to_string(n) + ")");
        // Per-token arrays are optional, but when present they describe every token.
        if (!src.scores.empty() && src.scores.size() != n)
            fail(errc::format, "tokenizer.ggml.scores has " + std::to_string(src.scores.size()) + " entries for " + std::to_string(n) + " tokens");
        if (!src.types.empty() && src.types.size() != n)
            fail(errc::format, "tokenizer.ggml.token_type has " + std::to_string(src.types.size()) + " entries for " + std::to_string(n) + " tokens");
        for (std::size_t i = 0; i < src.scores.size(); ++i)
            if (src.scores[i] != src.scores[i])  // NaN has no place in the score order the tokenizers sort by
                fail(errc::format, "tokenizer.ggml.scores[" + std::to_string(i) + "] is NaN");
        for (std::size_t i = 0; i < src.types.size(); ++i)
            if (src.types[i] < static_cast<std::int32_t>(token_type::undefined) || src.types[i] > static_cast<std::int32_t>(token_type::byte))
                fail(errc::format, "tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(src.types[i]) +
                                       " is not a token type (0 undefined .. 6 byte)");
        tokens_.resize(n);
        index_.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            std::string w = std::move(src.tokens[i]);
            if (w.empty()) w = "[EMPTY_" + std::to_string(i) + "]";
            auto [it, fresh] = index_.emplace(w, static_cast<token>(i));
            if (!fresh)
                fail(errc::format, "duplicate token in vocabulary: '" + w + "' has ids " + std::to_string(it->second) + " and " + std::to_string(i));
            max_token_len_ = std::max(max_token_len_, static_cast<int>(w.size()));
            token_data& d = tokens_[i];
            d.text = std::move(w);
            d.score = src.scores.empty() ? 0.0f : src.scores[i];
            d.attr = src.types.empty() ? attr::normal : attr_of_type(src.types[i]);
        }

        // A byte token renders as its byte, so its text must say which byte: <0xXX>.
        for (std::size_t i = 0; i < n; ++i)
            if ((tokens_[i].attr & attr::byte) && !is_byte_text(tokens_[i].text))
                fail(errc::format, "tokenizer.ggml.token_type[" + std::to_string(i) + "] = 6 (byte), but the token text '" +
                                       printable(tokens_[i].text) + "' is not <0xXX>");

        if (type_ == vocab_type::bpe) {
            // Both pieces of every merge are tokens (a merge of pieces that never occur
            // would be dead weight at best and a sign of a mismatched merges array).
            for (std::size_t i = 0; i < src.merges.size(); ++i) {
                const std::string_view w = src.merges[i];
                const std::size_t p = w.find(' ', 1);
                for (const std::string_view piece : {w.substr(0, p), w.substr(p + 1)})
                    if (find(piece) == null_token)
                        fail(errc::format, "tokenizer.ggml.merges[" + std::to_string(i) + "] = '" + printable(w) + "': '" +
                                               printable(piece) + "' is not a token");
            }
            index_merges();
        }

        // newline token
        if (type_ == vocab_type::spm) {
            try { linefeed = byte_to_token('\n'); } catch (const error&) { linefeed = pad; }
        } else if (type_ == vocab_type::wpm) {
            linefeed = pad;
        }
        // (BPE/UGM: the tokenizer fills linefeed by tokenizing "\n".)

        // special ids: defaults out of range are disabled; metadata ids in range win
        token* slots[] = {&bos, &eos, &eot, &eom, &unk, &sep, &pad, &mask, &fim_pre, &fim_suf, &fim_mid, &fim_pad, &fim_rep, &fim_sep};
        for (token* s : slots)
            if (*s >= 0 && static_cast<std::size_t>(*s) >= n) *s = null_token;
        for (const auto& [key, id] : src.special_ids) {
            token* slot = slot_for(key);
            if (slot == nullptr) continue;
            if (id < n) *slot = static_cast<token>(id);
        }
        if (src.add_bos) add_bos = *src.add_bos;
        if (src.add_eos) add_eos = *src.add_eos;
        if (src.add_sep) add_sep = *src.add_sep;
        if (type_ == vocab_type::bpe && pre_kind_ == pre_type::gemma4) add_bos = true;
        if (add_bos && bos == null_token) fail(errc::format, "tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set");
        if (add_eos && eos == null_token) fail(errc::format, "tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set");
        if (add_sep && sep == null_token) fail(errc::format, "tokenizer.ggml.add_sep_token is true, but tokenizer.ggml.seperator_token_id is not set");

        // The tokenizers emit unk for what they cannot match (WordPiece: a word that does
        // not match completely; unigram: the Viterbi fallback), so it must exist.
        if ((type_ == vocab_type::wpm || type_ == vocab_type::ugm) && unk == null_token)
            fail(errc::format, "tokenizer.ggml.unknown_token_id is not set or out of range (" + std::to_string(n) + " tokens), but a " +
                                   std::string(vocab_type_name(type_)) + " vocabulary needs an unknown token");

        if (src.lowercase) lowercase = *src.lowercase;
        strip_accents = lowercase;
        if (src.strip_accents) strip_accents = *src.strip_accents;

        derive_attributes();
        build_special_cache();
        name_rules(src.general_name, src.general_architecture);
    }

    token* slot_for(std::string_view k) noexcept {
        if (k == "bos") return &bos;
        if (k == "eos") return &eos;
        if (k == "eot") return &eot;
        if (k == "eom") return &eom;
        if (k == "unknown") return &unk;
        if (k == "seperator") return &sep;
        if (k == "padding") return &pad;
        if (k == "mask") return &mask;
        if (k == "fim_pre" || k == "prefix") return &fim_pre;
        if (k == "fim_suf" || k == "suffix") return &fim_suf;
        if (k == "fim_mid" || k == "middle") return &fim_mid;
        if (k == "fim_pad") return &fim_pad;
        if (k == "fim_rep") return &fim_rep;
        if (k == "fim_sep") return &fim_sep;
        return nullptr;
    }

    // Text-based detection of EOT/EOM/FIM/EOG tokens, as llama.cpp does at load time.
    void derive_attributes() {
        auto mark_control = [&](token id) { tokens_[static_cast<std::size_t>(id)].attr |= attr::control; };
        auto detect = [&](token& slot, std::initializer_list<std::string_view> texts) {
            if (slot != null_token) return;
            // llama.cpp walks its hash map; the first hit in that order wins. We take the
            // lowest id among the matches, which is the same whenever only one matches.
            token best = null_token;
            for (auto t : texts)
                if (token id = find(t); id != null_token && (best == null_token || id < best)) best = id;
            if (best != null_token) {
                slot = best;
                mark_control(best);
            }
        };
        detect(eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
                     "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"});
        detect(eom, {"<|eom_id|>"});
        detect(fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"});
        detect(fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"});
        detect(fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"});
        detect(fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
        detect(fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
        detect(fim_sep, {"<|file_sep|>"});

        for (auto& d : tokens_)
            if ((d.attr & attr::control) && !(d.attr & attr::unused) && d.text.find("unused") != std::string::npos)
                d.attr |= attr::unused;

        eog_.clear();
        for (token t : {fim_pad, fim_rep, fim_sep})
            if (t != null_token) eog_.insert(t);
        for (std::string_view t : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                                   "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                                   "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                                   "<｜end▁of▁sentence｜>", "[e~["}) {
            if (token id = find(t); id != null_token) {
                eog_.insert(id);
                mark_control(id);
            }
        }
        for (std::string_view t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
            if (token id = find(t); id != null_token) tokens_[static_cast<std::size_t>(id)].attr = attr::user_defined;
        for (token t : {eos, eot, eom})
            if (t != null_token) eog_.insert(t);

        auto text_is = [&](token id, std::string_view s) { return id >= 0 && static_cast<std::size_t>(id) < tokens_.size() && tokens_[static_cast<std::size_t>(id)].text == s; };
        {
            bool has_return = false, has_call = false, has_flush = false;
            token end_id = null_token;
            for (token id : eog_) {
                if (text_is(id, "<|return|>")) has_return = true;
                else if (text_is(id, "<|call|>") || text_is(id, "<|calls|>")) has_call = true;
                else if (text_is(id, "<|flush|>")) has_flush = true;
                else if (text_is(id, "<|end|>")) end_id = id;
            }
            if (end_id != null_token && ((has_return && has_call) || (has_call && has_flush))) {
                eog_.erase(end_id);
                tokens_[static_cast<std::size_t>(end_id)].attr = attr::user_defined;
            }
        }
        {
            bool has_tool_response = false;
            token s_id = null_token;
            for (token id : eog_) {
                if (text_is(id, "<|tool_response>")) has_tool_response = true;
                else if (text_is(id, "</s>")) s_id = id;
            }
            if (has_tool_response && s_id != null_token) {
                eog_.erase(s_id);
                tokens_[static_cast<std::size_t>(s_id)].attr = attr::normal;
            }
        }
    }

    void build_special_cache() {
        special_cache_.clear();
        for (std::size_t i = 0; i < tokens_.size(); ++i)
            if (tokens_[i].attr & (attr::control | attr::user_defined | attr::unknown)) special_cache_.push_back(static_cast<token>(i));
        // llama.cpp uses an unstable sort by length; ties here go to the lower id.
        std::stable_sort(special_cache_.begin(), special_cache_.end(), [&](token a, token b) {
            return tokens_[static_cast<std::size_t>(a)].text.size() > tokens_[static_cast<std::size_t>(b)].text.size();
        });
    }

    void name_rules(std::string name, const std::string& arch) {
        for (char& c : name) c = static_cast<char>((c >= 'A' && c <= 'Z') ? c + 32 : c);
        auto contains_any = [](const std::string& s, std::initializer_list<std::string_view> subs) {
            for (auto x : subs)
                if (s.find(x) != std::string::npos) return true;
            return false;
        };
        auto set = [&](token id, std::uint32_t a, bool on) {
            if (id == null_token) return;
            auto& v = tokens_[static_cast<std::size_t>(id)].attr;
            v = on ? (v | a) : (v & ~a);
        };
        if (contains_any(pre_, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) || contains_any(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
            set(find("<mask>"), attr::lstrip, true);
        } else if (contains_any(name, {"phi-3", "phi3"})) {
            for (token id : special_cache_) set(id, attr::rstrip, true);
            set(find("</s>"), attr::rstrip, true);
            for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set(find(t), attr::rstrip, false);
        } else if (contains_any(name, {"modern-bert"})) {
            set(find("[MASK]"), attr::lstrip, true);
        }
    }

    vocab_type type_ = vocab_type::none;
    std::string model_, pre_;
    pre_type pre_kind_ = pre_type::default_;
    std::vector<token_data> tokens_;
    std::unordered_map<std::string, token, string_hash, std::equal_to<>> index_;
    std::unordered_map<std::string, int, string_hash, std::equal_to<>> merges_;
    std::unordered_map<std::uint64_t, int> id_merges_;
    int max_token_len_ = 0;
    std::vector<std::uint8_t> charsmap_;
    std::vector<token> special_cache_;
    std::set<token> eog_;
};

// Reads the `tokenizer.ggml.*` keys of a GGUF metadata object into a vocab_source.
// `Meta` is tessera::gguf::metadata or anything with the same contains / find<T> /
// get_array<T> / get_string_array members.
template <class Meta>
vocab_source vocab_source_from_metadata(const Meta& meta) {
    vocab_source s;
    auto opt_string = [&](std::string_view k) -> std::optional<std::string> {
        if (!meta.contains(k)) return std::nullopt;
        return std::string(meta.template get<std::string>(k));
    };
    auto opt_bool = [&](std::string_view k) -> std::optional<bool> {
        if (!meta.contains(k)) return std::nullopt;
        return meta.template get<bool>(k);
    };
    auto m = opt_string("tokenizer.ggml.model");
    if (!m) fail(errc::format, "missing key tokenizer.ggml.model");
    s.model = *m;
    s.pre = opt_string("tokenizer.ggml.pre");
    if (s.model == "no_vocab" || s.model == "none") return s;
    if (!meta.contains("tokenizer.ggml.tokens")) fail(errc::format, "cannot find tokenizer vocab in model file (tokenizer.ggml.tokens)");
    for (const auto& t : meta.get_string_array("tokenizer.ggml.tokens")) s.tokens.emplace_back(t);
    if (meta.contains("tokenizer.ggml.scores")) {
        try {
            auto sc = meta.template get_array<float>("tokenizer.ggml.scores");
            s.scores.assign(sc.begin(), sc.end());
        } catch (const error&) {
            auto sc = meta.template get_array<std::int32_t>("tokenizer.ggml.scores");
            for (auto v : sc) s.scores.push_back(static_cast<float>(v));
        }
    }
    if (meta.contains("tokenizer.ggml.token_type")) {
        auto tt = meta.template get_array<std::int32_t>("tokenizer.ggml.token_type");
        s.types.assign(tt.begin(), tt.end());
    }
    if (meta.contains("tokenizer.ggml.merges"))
        for (const auto& t : meta.get_string_array("tokenizer.ggml.merges")) s.merges.emplace_back(t);
    else if ((s.model == "gpt2" && s.pre.value_or("") != "kimi-k2") || s.model == "gemma4")
        fail(errc::format, "cannot find tokenizer merges in model file (tokenizer.ggml.merges)");
    if (meta.contains("tokenizer.ggml.precompiled_charsmap")) {
        try {
            auto cm = meta.template get_array<std::uint8_t>("tokenizer.ggml.precompiled_charsmap");
            s.precompiled_charsmap.assign(cm.begin(), cm.end());
        } catch (const error&) {
            auto cm = meta.template get_array<std::int8_t>("tokenizer.ggml.precompiled_charsmap");
            for (auto v : cm) s.precompiled_charsmap.push_back(static_cast<std::uint8_t>(v));
        }
    }
    for (std::string_view k : {"bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "mask", "fim_pre", "fim_suf", "fim_mid",
                               "fim_pad", "fim_rep", "fim_sep", "prefix", "suffix", "middle"}) {
        const std::string key = "tokenizer.ggml." + std::string(k) + "_token_id";
        if (!meta.contains(key)) continue;
        std::uint32_t id;
        try {
            id = meta.template get<std::uint32_t>(key);
        } catch (const error&) {
            id = static_cast<std::uint32_t>(meta.template get<std::int32_t>(key));
        }
        s.special_ids.emplace_back(std::string(k), id);
    }
    s.add_bos = opt_bool("tokenizer.ggml.add_bos_token");
    s.add_eos = opt_bool("tokenizer.ggml.add_eos_token");
    s.add_sep = opt_bool("tokenizer.ggml.add_sep_token");
    s.add_space_prefix = opt_bool("tokenizer.ggml.add_space_prefix");
    s.remove_extra_whitespaces = opt_bool("tokenizer.ggml.remove_extra_whitespaces");
    s.lowercase = opt_bool("tokenizer.ggml.normalizer.lowercase");
    s.strip_accents = opt_bool("tokenizer.ggml.normalizer.strip_accents");
    if (auto n = opt_string("general.name")) s.general_name = *n;
    if (auto a = opt_string("general.architecture")) s.general_architecture = *a;
    return s;
}

}  // namespace text
TESSERA_END_NAMESPACE
