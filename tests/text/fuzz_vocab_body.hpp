// The property the vocabulary fuzzer (fuzz_vocab.cpp) checks, shared with the
// regression test that replays its findings (test_text_fuzz_regressions.cpp).
//
// run_one(data, size) interprets the input in one of three modes (first byte % 3):
//   0  a compact description of a vocabulary (below), then text. The description is
//      written as a GGUF file with the GGUF writer and loaded through the normal path
//      (gguf::file::from_buffer, vocab_from_gguf, tokenizer), so the real validation
//      runs; the tokenizer then tokenizes and detokenizes fixed strings and the text.
//   1  one of the fixed valid vocabularies of hostile_vocab.hpp (spm, bpe, wpm, ugm;
//      next byte % 4) tokenizes the rest as text and detokenizes the rest as ids.
//   2  the rest is a GGUF file, loaded and exercised like mode 0.
// A tessera::error anywhere is an accepted outcome (a refusal). Anything else thrown
// escapes run_one as an exception; a property violation (an id out of range, the
// pieces of a tokenization failing) throws std::logic_error. Crashes and sanitizer
// reports are findings by themselves.
//
// Description (a reader that runs out of input yields zeros):
//   u8 model        index into models[] below; >= size: a u8-length string
//   u8 pre          0: no tokenizer.ggml.pre; k: pres[(k - 1) % size]
//   u16 flags       bit 0 scores, 1 token types, 2 merges, 3 charsmap; pairs (present,
//                   value) for add_bos 4/5, add_eos 6/7, add_sep 8/9,
//                   add_space_prefix 10/11, remove_extra_whitespaces 12/13, lowercase 14/15
//   u16 n           tokens, each: u8 len, then len bytes; len >= 0xE0: dict[(len - 0xE0) % size]
//   scores          n × u8: (int8) / 4, 0x80 = NaN
//   types           n × u8: 0..6 as is, 0xFF = -1, others as is (out of range)
//   merges          u16 count, each u16 a, u16 b: "tokens[a] tokens[b]"; a >= n: a u8-length string
//   charsmap        u16 length, then the bytes
//   specials        u8 count, each u8 key (% size of special_keys), u16 id (0xFFFF = -1 as i32)
//   text            the rest
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hostile_vocab.hpp"

namespace fuzz_vocab {

namespace tt = tessera::text;

inline constexpr std::string_view models[] = {"llama", "gpt2", "bert", "t5", "gemma4", "none", "rwkv"};
inline constexpr std::string_view pres[] = {"default", "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "falcon",
                                            "starcoder", "mpt", "olmo", "gemma4", "dbrx", "smaug-bpe", "jais", "poro-chat",
                                            "viking", "chatglm-bpe", "deepseek-v3", "kimi-k2", "no-such-pre"};
inline constexpr std::string_view special_keys[] = {"bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "mask", "fim_pre",
                                                    "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep", "prefix", "suffix", "middle"};
inline constexpr std::string_view dict[] = {"<unk>", "<s>", "</s>", "<pad>", "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]",
                                            "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end|>", "<|return|>", "<|call|>",
                                            "<|tool_response>", "<mask>", "\xE2\x96\x81", "\xC4\xA0", "\xC4\x8A", "<0x0A>", "<0x20>",
                                            "<0xFF>", "<0x41>", "\n", " ", "a", "b", "ab", "\xE2\x96\x81" "a", "\xE2\x96\x81" "ab",
                                            "h", "e", "he", "\xC4\xA0" "h", "\xE2\x96\x81hello", "##a", "<|fim_prefix|>"};

class reader {
public:
    reader(const std::uint8_t* p, std::size_t n) : p_(p), n_(n) {}
    std::uint8_t u8() { return at_ < n_ ? p_[at_++] : 0; }
    std::uint16_t u16() {
        const std::uint16_t lo = u8();
        return static_cast<std::uint16_t>(lo | (u8() << 8));
    }
    std::string bytes(std::size_t k) {
        k = std::min(k, n_ - at_);
        std::string s(reinterpret_cast<const char*>(p_ + at_), k);
        at_ += k;
        return s;
    }
    std::string str() { return bytes(u8()); }
    std::string rest() { return bytes(n_ - at_); }

private:
    const std::uint8_t* p_;
    std::size_t n_, at_ = 0;
};

// The GGUF vocabulary a description stands for; the reader is left at the text.
inline tessera::gguf::writer decode(reader& r) {
    tessera::gguf::writer w;
    const std::uint8_t mi = r.u8();
    w.set("tokenizer.ggml.model", mi < std::size(models) ? std::string(models[mi]) : r.str());
    if (const std::uint8_t pi = r.u8(); pi != 0) w.set("tokenizer.ggml.pre", pres[(pi - 1) % std::size(pres)]);
    const std::uint16_t flags = r.u16();
    auto bit = [&](int b) { return ((flags >> b) & 1) != 0; };
    const std::size_t n = r.u16();
    std::vector<std::string> tokens(n);
    for (auto& t : tokens) {
        const std::uint8_t len = r.u8();
        t = len >= 0xE0 ? std::string(dict[(len - 0xE0) % std::size(dict)]) : r.bytes(len);
    }
    w.set_array("tokenizer.ggml.tokens", tokens);
    if (bit(0)) {
        std::vector<float> sc(n);
        for (auto& s : sc) {
            const std::uint8_t b = r.u8();
            s = b == 0x80 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(static_cast<std::int8_t>(b)) / 4.0f;
        }
        w.set_array("tokenizer.ggml.scores", sc);
    }
    if (bit(1)) {
        std::vector<std::int32_t> ty(n);
        for (auto& t : ty) {
            const std::uint8_t b = r.u8();
            t = b == 0xFF ? -1 : b;
        }
        w.set_array("tokenizer.ggml.token_type", ty);
    }
    if (bit(2)) {
        std::vector<std::string> merges(r.u16());
        for (auto& m : merges) {
            const std::uint16_t a = r.u16();
            if (a >= n) {
                m = r.str();
                continue;
            }
            const std::uint16_t b = r.u16();
            m = tokens[a] + " " + (b < n ? tokens[b] : std::string("?"));
        }
        w.set_array("tokenizer.ggml.merges", merges);
    }
    if (bit(3)) {
        const std::string cm = r.bytes(r.u16());
        w.set_array("tokenizer.ggml.precompiled_charsmap",
                    std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(cm.data()), cm.size()));
    }
    const char* bools[] = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_sep_token",
                           "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.remove_extra_whitespaces",
                           "tokenizer.ggml.normalizer.lowercase"};
    for (int i = 0; i < 6; ++i)
        if (bit(4 + 2 * i)) w.set(bools[i], bit(5 + 2 * i));
    for (std::uint8_t k = r.u8(); k > 0; --k) {
        const std::string key = "tokenizer.ggml." + std::string(special_keys[r.u8() % std::size(special_keys)]) + "_token_id";
        const std::uint16_t id = r.u16();
        if (id == 0xFFFF) w.set<std::int32_t>(key, -1);
        else w.set<std::uint32_t>(key, id);
    }
    return w;
}

inline void violated(const std::string& what) { throw std::logic_error("fuzz_vocab property violated: " + what); }

// Tokenizes and detokenizes `text` every way; ids must be in range and their pieces
// must render. Token ids read from `id_bytes` are detokenized too (errors allowed).
inline void exercise(const tt::tokenizer& t, std::string_view text, std::string_view id_bytes) {
    const std::uint32_t n = t.get_vocab().n_tokens();
    for (const bool special : {false, true}) {
        std::vector<tt::token> ids;
        try {
            ids = t.tokenize(text, special, special);
        } catch (const tessera::error&) {
            continue;  // e.g. an SPM byte with no token, a broken charsmap
        }
        for (tt::token id : ids)
            if (id < 0 || static_cast<std::uint32_t>(id) >= n) violated("tokenize returned id " + std::to_string(id) + " of " + std::to_string(n));
        (void)t.detokenize(ids, special, special);  // must not throw: every id is valid
        for (tt::token id : ids) (void)t.token_to_piece(id, special, 1);
    }
    std::vector<tt::token> raw;
    for (std::size_t i = 0; i + 1 < id_bytes.size() && raw.size() < 64; i += 2) {
        const auto lo = static_cast<std::uint8_t>(id_bytes[i]), hi = static_cast<std::uint8_t>(id_bytes[i + 1]);
        raw.push_back(static_cast<tt::token>(static_cast<std::int16_t>(lo | (hi << 8))));
    }
    try {
        (void)t.detokenize(raw, true, false);
    } catch (const tessera::error&) {
        for (tt::token id : raw)
            if (id >= 0 && static_cast<std::uint32_t>(id) < n) (void)t.token_to_piece(id);  // valid ids never fail
    }
}

inline constexpr std::string_view fixed_texts[] = {"Hello world", " \n\t  a", "<s>ab</s><unk>", "\xFF\xFE\xC3", "[CLS] unable, caf\xC3\xA9",
                                                   "hello w<|endoftext|>he", "ab<u>ba  a\xE4\xB8\xAD"};

inline void exercise_all(const tt::tokenizer& t, std::string_view text) {
    for (auto s : fixed_texts) exercise(t, s, {});
    exercise(t, text, text);
}

inline const std::vector<tt::tokenizer>& fixed_tokenizers() {
    static const std::vector<tt::tokenizer> ts = [] {
        std::vector<tt::tokenizer> v;
        for (const auto& w : {hostile_vocab::spm(), hostile_vocab::bpe(), hostile_vocab::wpm(), hostile_vocab::ugm()})
            v.push_back(hostile_vocab::load_tokenizer(w));
        return v;
    }();
    return ts;
}

inline void run_one(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return;
    reader r(data + 1, size - 1);
    switch (data[0] % 3) {
        case 0: {
            std::vector<std::byte> bytes;
            std::string text;
            {
                const tessera::gguf::writer w = decode(r);
                text = r.rest();
                bytes = w.to_bytes();
            }
            std::optional<tt::tokenizer> t;
            try {
                t.emplace(hostile_vocab::load_vocab(bytes));
            } catch (const tessera::error&) {
                return;  // refused at load
            }
            exercise_all(*t, text);
            break;
        }
        case 1: {
            const auto& ts = fixed_tokenizers();
            const auto& t = ts[r.u8() % ts.size()];
            const std::string text = r.rest();
            exercise(t, text, text);
            break;
        }
        default: {
            std::optional<tt::tokenizer> t;
            try {
                t.emplace(hostile_vocab::load_vocab(std::as_bytes(std::span(data + 1, size - 1))));
            } catch (const tessera::error&) {
                return;
            }
            exercise_all(*t, {});
            break;
        }
    }
}

// The inverse of decode for seeds: a description of a vocabulary.
struct description {
    std::uint8_t model = 0, pre = 0;
    std::uint16_t flags = 0;
    std::vector<std::string> tokens;
    std::vector<std::int8_t> scores;  // quarter units
    std::vector<std::int32_t> types;
    std::vector<std::pair<std::uint16_t, std::uint16_t>> merges;
    std::vector<std::uint8_t> charsmap;
    std::vector<std::pair<std::uint8_t, std::uint16_t>> specials;
    std::string text;

    std::vector<std::uint8_t> encode() const {
        std::vector<std::uint8_t> o{0, model, pre};
        auto u16 = [&](std::size_t v) {
            o.push_back(static_cast<std::uint8_t>(v & 0xFF));
            o.push_back(static_cast<std::uint8_t>((v >> 8) & 0xFF));
        };
        std::uint16_t f = flags;
        if (!scores.empty()) f |= 1;
        if (!types.empty()) f |= 2;
        if (!merges.empty()) f |= 4;
        if (!charsmap.empty()) f |= 8;
        u16(f);
        u16(tokens.size());
        for (const auto& t : tokens) {
            const std::size_t k = std::min<std::size_t>(t.size(), 0xDF);
            o.push_back(static_cast<std::uint8_t>(k));
            o.insert(o.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k));
        }
        for (auto s : scores) o.push_back(static_cast<std::uint8_t>(s));
        for (auto t : types) o.push_back(static_cast<std::uint8_t>(t));
        if (!merges.empty()) {
            u16(merges.size());
            for (auto [a, b] : merges) {
                u16(a);
                u16(b);
            }
        }
        if (!charsmap.empty()) {
            u16(charsmap.size());
            o.insert(o.end(), charsmap.begin(), charsmap.end());
        }
        o.push_back(static_cast<std::uint8_t>(specials.size()));
        for (auto [k, id] : specials) {
            o.push_back(k);
            u16(id);
        }
        o.insert(o.end(), text.begin(), text.end());
        return o;
    }
};

}  // namespace fuzz_vocab
