// tessera::text UGM (T5 unigram) tokenization, as llama.cpp's llm_tokenizer_ugm does
// it: precompiled-charsmap normalization (XCDA longest-prefix lookup), whitespace
// handling, then Viterbi over a token trie with double-precision scores.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/text/unicode.hpp"
#include "tessera/text/vocab.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

// A byte trie with an optional value per node.
class byte_trie {
public:
    void insert(std::string_view key, token value) {
        std::size_t n = 0;
        for (unsigned char c : key) {
            auto it = nodes_[n].kids.find(c);
            if (it == nodes_[n].kids.end()) {
                nodes_.push_back({});
                it = nodes_[n].kids.emplace(c, nodes_.size() - 1).first;
            }
            n = it->second;
        }
        nodes_[n].has_value = true;
        nodes_[n].value = value;
    }
    // Length of the longest key that is a prefix of s (0 if none).
    std::size_t longest_prefix(std::string_view s) const {
        std::size_t n = 0, best = 0;
        for (std::size_t i = 0; i < s.size(); ++i) {
            auto it = nodes_[n].kids.find(static_cast<unsigned char>(s[i]));
            if (it == nodes_[n].kids.end()) break;
            n = it->second;
            if (nodes_[n].has_value) best = i + 1;
        }
        return best;
    }
    // Calls f(length, value) for every key that is a prefix of s.
    template <class F>
    void prefixes(std::string_view s, F&& f) const {
        std::size_t n = 0;
        for (std::size_t i = 0; i < s.size(); ++i) {
            auto it = nodes_[n].kids.find(static_cast<unsigned char>(s[i]));
            if (it == nodes_[n].kids.end()) return;
            n = it->second;
            if (nodes_[n].has_value) f(i + 1, nodes_[n].value);
        }
    }

private:
    struct node {
        std::map<unsigned char, std::size_t> kids;
        bool has_value = false;
        token value = 0;
    };
    std::vector<node> nodes_{1};
};

// The unigram model holds what it derives from the vocabulary (charsmap tables, token
// trie, score range) but not the vocabulary itself: the caller passes the same vocab to
// every call. (Holding a reference made a moved tokenizer read the vocabulary of the
// object it was moved from — a use after scope.)
class ugm_model {
public:
    explicit ugm_model(const vocab& v) {
        const auto& cm = v.precompiled_charsmap();
        if (!cm.empty()) {
            const std::uint32_t blob = static_cast<std::uint32_t>(cm[0]) | (static_cast<std::uint32_t>(cm[1]) << 8) |
                                       (static_cast<std::uint32_t>(cm[2]) << 16) | (static_cast<std::uint32_t>(cm[3]) << 24);
            xcda_.resize(blob / 4);
            for (std::size_t i = 0; i < xcda_.size(); ++i) {
                const std::size_t o = 4 + 4 * i;
                xcda_[i] = static_cast<std::uint32_t>(cm[o]) | (static_cast<std::uint32_t>(cm[o + 1]) << 8) |
                           (static_cast<std::uint32_t>(cm[o + 2]) << 16) | (static_cast<std::uint32_t>(cm[o + 3]) << 24);
            }
            repl_.assign(cm.begin() + 4 + blob, cm.end());
        }
        for (std::uint32_t id = 0; id < v.n_tokens(); ++id) {
            const auto& d = v.data(static_cast<token>(id));
            if (d.attr & attr::normal) {
                min_score_ = std::min(min_score_, d.score);
                max_score_ = std::max(max_score_, d.score);
            }
            if (d.attr & (attr::normal | attr::user_defined | attr::unused)) tokens_.insert(d.text, static_cast<token>(id));
            if (d.attr & attr::user_defined) user_.insert(d.text, 0);
        }
        unknown_score_ = min_score_ - 10.0f;
    }

    // `v` is the vocabulary the model was made from.
    void tokenize(const vocab& v, std::string_view text, std::vector<token>& out) const {
        const std::size_t mark = out.size();
        const std::string s = normalize(v, text);
        const std::size_t n = s.size();
        if (n == 0) return;
        struct best {
            token id;
            std::size_t from;
            double score;
        };
        std::vector<best> dp(n + 1, {v.unk, 0, -DBL_MAX});
        dp[0] = {v.unk, 0, 0.0};
        for (std::size_t off = 0; off < n;) {
            const std::size_t cl = std::min(utf8_len(s[off]), n - off);
            const double base = dp[off].score;
            bool single = false;
            tokens_.prefixes(std::string_view(s).substr(off), [&](std::size_t len, token id) {
                if (len == cl) single = true;
                const double sc = base + ((v.attributes(id) & attr::user_defined) ? 0.0 : static_cast<double>(v.score(id)));
                if (sc > dp[off + len].score) dp[off + len] = {id, off, sc};
            });
            if (!single) {
                const double sc = base + static_cast<double>(unknown_score_);
                if (sc > dp[off + cl].score) dp[off + cl] = {v.unk, off, sc};
            }
            off += cl;
        }
        bool prev_unk = false;
        for (std::size_t at = n;;) {
            const best& b = dp[at];
            const bool is_unk = b.id == v.unk;
            if (!(prev_unk && is_unk)) out.push_back(b.id);
            if (b.from == 0) break;
            prev_unk = is_unk;
            at = b.from;
        }
        std::reverse(out.begin() + static_cast<std::ptrdiff_t>(mark), out.end());
    }

    std::string normalize(const vocab& v, std::string_view in) const {
        std::string out;
        out.reserve(in.size() * 3);
        const std::string_view space = v.escape_whitespaces ? std::string_view("\xE2\x96\x81") : std::string_view(" ");
        const bool prepend = !v.treat_whitespace_as_suffix && v.add_space_prefix;
        const bool append = v.treat_whitespace_as_suffix && v.add_space_prefix;
        const bool merge = v.remove_extra_whitespaces;
        bool prepended = false, in_word = false;
        for (std::size_t off = 0; off < in.size();) {
            std::string_view piece;
            std::size_t consumed;
            normalize_prefix(in, off, piece, consumed);
            for (char c : piece) {
                if (c != ' ') {
                    if (!in_word) {
                        in_word = true;
                        if ((prepend && !prepended) || merge) {
                            out.append(space);
                            prepended = true;
                        }
                    }
                    out.push_back(c);
                } else {
                    in_word = false;
                    if (!merge) out.append(space);
                }
            }
            off += consumed;
        }
        if (append) out.append(space);
        return out;
    }

private:
    void normalize_prefix(std::string_view in, std::size_t off, std::string_view& piece, std::size_t& consumed) const {
        const std::string_view rest = in.substr(off);
        if (const std::size_t u = user_.longest_prefix(rest); u > 0) {
            piece = rest.substr(0, u);
            consumed = u;
            return;
        }
        std::size_t best_len = 0, best_off = 0;
        if (!xcda_.empty()) {
            std::uint32_t node = base(0);
            for (std::size_t i = 0; i < rest.size(); ++i) {
                const auto c = static_cast<unsigned char>(rest[i]);
                if (c == 0) break;
                node ^= c;
                if (lcheck(node) != c) break;
                const bool leaf = is_leaf(node);
                node ^= base(node);
                if (leaf) {
                    best_len = i + 1;
                    best_off = value(node);
                }
            }
        }
        if (best_len > 0) {
            if (best_off >= repl_.size()) fail(errc::format, "precompiled charsmap: replacement offset past its end");
            std::size_t len = 0;
            while (best_off + len < repl_.size() && repl_[best_off + len] != 0) ++len;
            if (best_off + len == repl_.size()) fail(errc::format, "precompiled charsmap: unterminated replacement string");
            piece = std::string_view(reinterpret_cast<const char*>(repl_.data()) + best_off, len);
            consumed = best_len;
            return;
        }
        std::size_t o = off;
        if (decode_utf8(in, o) != invalid_cp) {
            piece = rest.substr(0, o - off);
            consumed = o - off;
        } else {
            piece = "\xEF\xBF\xBD";
            consumed = 1;
        }
    }

    std::uint32_t node_at(std::size_t i) const {
        if (i >= xcda_.size()) fail(errc::format, "precompiled charsmap: XCDA index out of bounds");
        return xcda_[i];
    }
    std::uint32_t base(std::size_t i) const {
        const std::uint32_t p = node_at(i);
        return (p >> 10) << ((p & (1u << 9)) >> 6);
    }
    std::uint32_t lcheck(std::size_t i) const { return node_at(i) & ((1u << 31) | 0xFFu); }
    bool is_leaf(std::size_t i) const { return (node_at(i) >> 8) & 1u; }
    std::uint32_t value(std::size_t i) const { return node_at(i) & ((1u << 31) - 1); }

    std::vector<std::uint32_t> xcda_;
    std::vector<std::uint8_t> repl_;
    byte_trie tokens_, user_;
    float min_score_ = FLT_MAX, max_score_ = -FLT_MAX, unknown_score_ = 0.0f;
};

}  // namespace text
TESSERA_END_NAMESPACE
