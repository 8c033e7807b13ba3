// tessera::text WPM (BERT WordPiece) tokenization, as llama.cpp's
// llm_tokenizer_wpm_session does it: BERT normalization (NFD-first + accent strip,
// lowercase), punctuation and CJK split, then greedy longest match with "▁" prefixed
// to each word.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/text/unicode.hpp"
#include "tessera/text/vocab.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

constexpr bool is_chinese_char(std::uint32_t c) noexcept {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Words of `text` after BERT normalization.
inline std::vector<std::string> wpm_preprocess(std::string_view text, bool lowercase, bool strip_accents) {
    auto cps = to_code_points(text);
    if (strip_accents)
        for (auto& c : cps) c = nfd_first(c);
    std::vector<std::string> words(1);
    for (const std::uint32_t c : cps) {
        const cpt_flags f = flags_of(c);
        if (f.is_whitespace()) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        if (c == 0 || c == 0xFFFD || f.is_control()) continue;
        if (strip_accents && f.is_accent_mark()) continue;
        const std::uint32_t out = lowercase ? to_lower(c) : c;
        if (f.is_punctuation() || (c < 0x7F && f.is_symbol()) || is_chinese_char(c)) {
            if (!words.back().empty()) words.emplace_back();
            append_utf8(words.back(), out);
            words.emplace_back();
        } else {
            append_utf8(words.back(), out);
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

inline void wpm_tokenize(const vocab& v, std::string_view text, std::vector<token>& out) {
    const auto words = wpm_preprocess(text, v.lowercase, v.strip_accents);
    std::string w;
    for (const std::string& word : words) {
        if (word.empty()) continue;
        w = "\xE2\x96\x81";
        w += word;
        const std::size_t n = w.size();
        const std::size_t mark = out.size();
        for (std::size_t i = 0; i < n; ++i) {
            bool matched = false;
            for (std::size_t j = std::min(n, i + static_cast<std::size_t>(v.max_token_len()) + 1); j > i; --j) {
                if (const token id = v.find(std::string_view(w).substr(i, j - i)); id != null_token) {
                    out.push_back(id);
                    matched = true;
                    i = j - 1;
                    break;
                }
            }
            if (!matched) {
                out.resize(mark);
                break;
            }
        }
        if (out.size() == mark) out.push_back(v.unk);
    }
}

}  // namespace text
TESSERA_END_NAMESPACE
