// tessera::text::regex: a small backtracking matcher for the pre-tokenizer regexes of
// llama.cpp vocabularies. It understands the subset those patterns use: literals,
// classes with ranges and negation, \s \S \d \D \r \n \t, \p{L|N|P|S|M|Lu|Ll|Lt|Lm|Lo},
// groups (capturing or (?:...)), (?=...) and (?!...), alternation, ? * + {n} {n,m}
// (greedy), and $ (end of the chunk).
//
// Matching follows what llama.cpp does with std::regex (ECMAScript, leftmost, first
// alternative that succeeds): a pattern that uses \p{..} runs over a "collapsed" text
// where each non-ASCII code point is replaced by one byte per category (0xD1 N, 0xD2 L,
// 0xD3 P, 0xD4 M, 0xD5 S, 0xD0 other) and non-ASCII whitespace by 0x0B, and \p{X}
// becomes that byte plus the ASCII members llama.cpp lists; other patterns run over code
// points with non-ASCII whitespace mapped to 0x0B.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/text/unicode.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

class regex {
public:
    explicit regex(std::string_view pattern) : pattern_(pattern) {
        collapsed_ = uses_categories(pattern);
        std::size_t i = 0;
        root_ = parse_alt(i);
        if (i != pattern_.size()) bad("unbalanced ')'", i);
    }

    const std::string& pattern() const noexcept { return pattern_; }
    bool collapsed() const noexcept { return collapsed_; }

    // The value a code point takes in this pattern's matching alphabet.
    std::uint32_t map(std::uint32_t cp) const noexcept {
        if (cp < 128) return cp;
        const cpt_flags f = flags_of(cp);
        if (f.is_whitespace()) return 0x0B;
        if (!collapsed_) return cp;
        switch (f.category()) {
            case cpt_flags::number: return 0xD1;
            case cpt_flags::letter: return 0xD2;
            case cpt_flags::punctuation: return 0xD3;
            case cpt_flags::accent_mark: return 0xD4;
            case cpt_flags::symbol: return 0xD5;
            default: return 0xD0;
        }
    }

    // Splits the mapped text's chunks: `chunks` are lengths (in code points) that cover
    // `text`; each chunk is searched on its own, and both matches and the text between
    // them become chunks of the result.
    std::vector<std::size_t> split(const std::vector<std::uint32_t>& mapped, const std::vector<std::size_t>& chunks) const {
        std::vector<std::size_t> out;
        out.reserve(chunks.size());
        std::size_t start = 0;
        for (const std::size_t len : chunks) {
            const std::size_t end = start + len;
            std::size_t prev = start, pos = start;
            if (const node* body = trailing_run_class()) {
                // X+$ (e.g. \s+$): the only possible match is the longest run of X that
                // ends the chunk; finding it directly avoids a quadratic search.
                std::size_t b = end;
                while (b > start && body->contains(mapped[b - 1])) --b;
                if (end - b >= root_->kids[0]->min && end > b) {
                    if (b > start) out.push_back(b - start);
                    out.push_back(end - b);
                    prev = end;
                }
                pos = end;
            }
            while (pos < end) {
                std::size_t m_begin = end, m_end = end;
                bool found = false;
                for (std::size_t s = pos; s < end; ++s) {
                    std::size_t e;
                    if (match_at(mapped, start, end, s, e) && e > s) {
                        m_begin = s;
                        m_end = e;
                        found = true;
                        break;
                    }
                }
                if (!found) break;
                if (m_begin > prev) out.push_back(m_begin - prev);
                out.push_back(m_end - m_begin);
                prev = pos = m_end;
            }
            if (end > prev) out.push_back(end - prev);
            start = end;
        }
        return out;
    }

    // Whole-pattern match at `s` inside [lo, hi); on success `e` is the match end.
    bool match_at(const std::vector<std::uint32_t>& t, std::size_t lo, std::size_t hi, std::size_t s, std::size_t& e) const {
        ctx c{t.data(), lo, hi, 0};
        const cont done{nullptr, 0, nullptr, 0};
        if (!m(root_.get(), s, &done, c)) return false;
        e = c.result;
        return true;
    }

private:
    enum class kind : std::uint8_t { seq, alt, repeat, cls, end_anchor, look_ahead, neg_look_ahead };
    struct node {
        kind k;
        std::vector<std::unique_ptr<node>> kids;
        std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;  // cls
        bool negate = false;                                          // cls
        std::size_t min = 1, max = 1;                                 // repeat
        bool contains(std::uint32_t v) const noexcept {
            bool in = false;
            for (const auto& r : ranges)
                if (v >= r.first && v <= r.second) { in = true; break; }
            return in != negate;
        }
    };
    struct ctx {
        const std::uint32_t* t;
        std::size_t lo, hi;
        std::size_t result;
    };
    // Continuation: what to match after the current node. For a sequence, `idx` is the
    // next child; for a repeat, `idx` is the count done so far and `start` the position
    // where the current iteration began.
    struct cont {
        const node* n;
        std::size_t idx;
        const cont* up;
        std::size_t start;
    };

    bool run(const cont* k, std::size_t pos, ctx& c) const {
        if (k->n == nullptr) {
            c.result = pos;
            return true;
        }
        const node* n = k->n;
        if (n->k == kind::seq) {
            if (k->idx == n->kids.size()) return run(k->up, pos, c);
            const cont next{n, k->idx + 1, k->up, 0};
            return m(n->kids[k->idx].get(), pos, &next, c);
        }
        // repeat: one more iteration has just ended at pos
        if (pos == k->start) return false;  // an empty iteration ends the loop
        return rep(n, k->idx, pos, k->up, c);
    }

    bool rep(const node* n, std::size_t count, std::size_t pos, const cont* up, ctx& c) const {
        if (count < n->max) {
            const cont again{n, count + 1, up, pos};
            if (m(n->kids[0].get(), pos, &again, c)) return true;
        }
        if (count >= n->min) return run(up, pos, c);
        return false;
    }

    bool m(const node* n, std::size_t pos, const cont* k, ctx& c) const {
        switch (n->k) {
            case kind::cls:
                if (pos < c.hi && n->contains(c.t[pos])) return run(k, pos + 1, c);
                return false;
            case kind::seq: {
                if (n->kids.empty()) return run(k, pos, c);
                const cont next{n, 1, k, 0};
                return m(n->kids[0].get(), pos, &next, c);
            }
            case kind::alt:
                for (const auto& a : n->kids)
                    if (m(a.get(), pos, k, c)) return true;
                return false;
            case kind::end_anchor:
                return pos == c.hi && run(k, pos, c);
            case kind::look_ahead:
            case kind::neg_look_ahead: {
                ctx inner{c.t, c.lo, c.hi, 0};
                const cont done{nullptr, 0, nullptr, 0};
                const bool ok = m(n->kids[0].get(), pos, &done, inner);
                if (ok != (n->k == kind::look_ahead)) return false;
                return run(k, pos, c);
            }
            case kind::repeat: {
                const node* body = n->kids[0].get();
                if (body->k == kind::cls) {
                    // Single-class loop: count the run, then back off greedily. No
                    // recursion per character, so long runs cannot exhaust the stack.
                    std::size_t run_len = 0;
                    while (run_len < n->max && pos + run_len < c.hi && body->contains(c.t[pos + run_len])) ++run_len;
                    if (run_len < n->min) return false;
                    if (k->n != nullptr && k->n->k == kind::seq && k->idx < k->n->kids.size() &&
                        k->n->kids[k->idx]->k == kind::end_anchor) {
                        // X+$: only the longest run can reach the end.
                        return run(k, pos + run_len, c);
                    }
                    for (std::size_t l = run_len + 1; l-- > n->min;)
                        if (run(k, pos + l, c)) return true;
                    return false;
                }
                return rep(n, 0, pos, k, c);
            }
        }
        return false;
    }

    // The class X when the whole pattern is X+ / X* / X{n,} followed by $, else null.
    const node* trailing_run_class() const noexcept {
        const node* r = root_.get();
        if (r->k != kind::seq || r->kids.size() != 2 || r->kids[1]->k != kind::end_anchor) return nullptr;
        const node* rep = r->kids[0].get();
        if (rep->k != kind::repeat || rep->max != SIZE_MAX || rep->kids[0]->k != kind::cls) return nullptr;
        return rep->kids[0].get();
    }

    // ---- parser -------------------------------------------------------------------
    [[noreturn]] void bad(const char* what, std::size_t at) const {
        fail(errc::invalid_argument,
             std::string("regex: ") + what + " at offset " + std::to_string(at) + " in '" + pattern_ + "'");
    }

    static bool uses_categories(std::string_view p) {
        for (const char* cat : {"\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}", "\\p{Lu}", "\\p{Ll}", "\\p{Lt}",
                                "\\p{Lm}", "\\p{Lo}"})
            if (p.find(cat) != std::string_view::npos) return true;
        return false;
    }

    std::uint32_t next_cp(std::size_t& i) const {
        std::size_t off = i;
        const std::uint32_t cp = decode_utf8(pattern_, off);
        if (cp == invalid_cp) bad("invalid UTF-8", i);
        i = off;
        return cp;
    }

    using range_list = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

    static void add_space(range_list& r) {
        r.push_back({0x09, 0x0D});
        r.push_back({0x20, 0x20});
    }
    static range_list complement(const range_list& in) {
        range_list sorted = in, out;
        std::sort(sorted.begin(), sorted.end());
        std::uint32_t next = 0;
        for (const auto& r : sorted) {
            if (r.first > next) out.push_back({next, r.first - 1});
            if (r.second + 1 > next) next = r.second + 1;
        }
        if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
        return out;
    }

    // \p{X}: the collapsed byte plus llama.cpp's ASCII members.
    void add_category(range_list& r, std::string_view name, std::size_t at) const {
        if (!collapsed_) bad("unicode category in a non-collapsed pattern", at);
        if (name == "N") {
            r.push_back({0xD1, 0xD1});
            r.push_back({'0', '9'});
        } else if (name == "L" || name == "Lu" || name == "Ll" || name == "Lt" || name == "Lm" || name == "Lo") {
            r.push_back({0xD2, 0xD2});
            r.push_back({'A', 'Z'});
            r.push_back({'a', 'z'});
        } else if (name == "P") {
            r.push_back({0xD3, 0xD3});
            for (auto p : {std::pair<std::uint32_t, std::uint32_t>{0x21, 0x23}, {0x25, 0x2A}, {0x2C, 0x2F},
                           {0x3A, 0x3B}, {0x3F, 0x40}, {0x5B, 0x5D}, {0x5F, 0x5F}, {0x7B, 0x7B}, {0x7D, 0x7D}})
                r.push_back(p);
        } else if (name == "M") {
            r.push_back({0xD4, 0xD4});
        } else if (name == "S") {
            r.push_back({0xD5, 0xD5});
            for (auto p : {std::pair<std::uint32_t, std::uint32_t>{0x24, 0x24}, {0x2B, 0x2B}, {0x3C, 0x3E},
                           {0x5E, 0x5E}, {0x60, 0x60}, {0x7C, 0x7C}})
                r.push_back(p);
        } else {
            bad("unsupported unicode category", at);
        }
    }

    // Parses an escape after '\'; fills ranges (a class) and returns true, or returns
    // false with `lit` set for a literal.
    bool parse_escape(std::size_t& i, range_list& r, std::uint32_t& lit) const {
        if (i >= pattern_.size()) bad("dangling '\\'", i);
        const char e = pattern_[i++];
        switch (e) {
            case 's': add_space(r); return true;
            case 'S': { range_list s; add_space(s); for (auto x : complement(s)) r.push_back(x); return true; }
            case 'd': r.push_back({'0', '9'}); return true;
            case 'D': for (auto x : complement({{'0', '9'}})) r.push_back(x); return true;
            case 'r': lit = '\r'; return false;
            case 'n': lit = '\n'; return false;
            case 't': lit = '\t'; return false;
            case 'f': lit = '\f'; return false;
            case 'v': lit = '\v'; return false;
            case 'p': {
                if (i >= pattern_.size() || pattern_[i] != '{') bad("expected '{' after \\p", i);
                const std::size_t close = pattern_.find('}', i);
                if (close == std::string::npos) bad("unterminated \\p{", i);
                add_category(r, std::string_view(pattern_).substr(i + 1, close - i - 1), i);
                i = close + 1;
                return true;
            }
            default:
                --i;
                lit = next_cp(i);
                return false;
        }
    }

    std::unique_ptr<node> parse_class(std::size_t& i) const {
        auto n = std::make_unique<node>();
        n->k = kind::cls;
        if (i < pattern_.size() && pattern_[i] == '^') {
            n->negate = true;
            ++i;
        }
        bool first = true;
        while (true) {
            if (i >= pattern_.size()) bad("unterminated '['", i);
            if (pattern_[i] == ']' && !first) {
                ++i;
                break;
            }
            first = false;
            std::uint32_t lo;
            if (pattern_[i] == '\\') {
                ++i;
                if (parse_escape(i, n->ranges, lo)) continue;
            } else {
                lo = next_cp(i);
            }
            std::uint32_t hi = lo;
            if (i + 1 < pattern_.size() && pattern_[i] == '-' && pattern_[i + 1] != ']') {
                ++i;
                if (pattern_[i] == '\\') {
                    ++i;
                    range_list dummy;
                    if (parse_escape(i, dummy, hi)) bad("class escape as range end", i);
                } else {
                    hi = next_cp(i);
                }
                if (hi < lo) bad("reversed range", i);
            }
            n->ranges.push_back({lo, hi});
        }
        return n;
    }

    std::unique_ptr<node> parse_atom(std::size_t& i) const {
        const char ch = pattern_[i];
        if (ch == '(') {
            ++i;
            kind k = kind::seq;
            if (pattern_.compare(i, 2, "?:") == 0) {
                i += 2;
            } else if (pattern_.compare(i, 2, "?=") == 0) {
                i += 2;
                k = kind::look_ahead;
            } else if (pattern_.compare(i, 2, "?!") == 0) {
                i += 2;
                k = kind::neg_look_ahead;
            } else if (i < pattern_.size() && pattern_[i] == '?') {
                bad("unsupported group", i);
            }
            auto inner = parse_alt(i);
            if (i >= pattern_.size() || pattern_[i] != ')') bad("missing ')'", i);
            ++i;
            if (k == kind::seq) return inner;
            auto n = std::make_unique<node>();
            n->k = k;
            n->kids.push_back(std::move(inner));
            return n;
        }
        if (ch == '[') {
            ++i;
            return parse_class(i);
        }
        if (ch == '$') {
            ++i;
            auto n = std::make_unique<node>();
            n->k = kind::end_anchor;
            return n;
        }
        auto n = std::make_unique<node>();
        n->k = kind::cls;
        if (ch == '.') {
            ++i;
            n->ranges = {{'\n', '\n'}, {'\r', '\r'}};
            n->negate = true;
            return n;
        }
        std::uint32_t lit;
        if (ch == '\\') {
            ++i;
            if (parse_escape(i, n->ranges, lit)) return n;
        } else {
            lit = next_cp(i);
        }
        n->ranges.push_back({lit, lit});
        return n;
    }

    std::size_t parse_number(std::size_t& i) const {
        std::size_t v = 0;
        bool any = false;
        while (i < pattern_.size() && pattern_[i] >= '0' && pattern_[i] <= '9') {
            v = v * 10 + static_cast<std::size_t>(pattern_[i++] - '0');
            any = true;
            if (v > 100000) bad("repeat count too large", i);
        }
        if (!any) bad("expected a number", i);
        return v;
    }

    std::unique_ptr<node> parse_seq(std::size_t& i) const {
        auto seq = std::make_unique<node>();
        seq->k = kind::seq;
        while (i < pattern_.size() && pattern_[i] != '|' && pattern_[i] != ')') {
            auto atom = parse_atom(i);
            if (i < pattern_.size() && (pattern_[i] == '?' || pattern_[i] == '*' || pattern_[i] == '+' || pattern_[i] == '{')) {
                auto r = std::make_unique<node>();
                r->k = kind::repeat;
                const char q = pattern_[i++];
                if (q == '?') { r->min = 0; r->max = 1; }
                else if (q == '*') { r->min = 0; r->max = SIZE_MAX; }
                else if (q == '+') { r->min = 1; r->max = SIZE_MAX; }
                else {
                    r->min = r->max = parse_number(i);
                    if (i < pattern_.size() && pattern_[i] == ',') {
                        ++i;
                        r->max = parse_number(i);
                    }
                    if (i >= pattern_.size() || pattern_[i] != '}') bad("missing '}'", i);
                    ++i;
                    if (r->max < r->min) bad("bad repeat bounds", i);
                }
                if (i < pattern_.size() && (pattern_[i] == '?' || pattern_[i] == '+')) bad("lazy/possessive quantifier", i);
                r->kids.push_back(std::move(atom));
                atom = std::move(r);
            }
            seq->kids.push_back(std::move(atom));
        }
        return seq;
    }

    std::unique_ptr<node> parse_alt(std::size_t& i) const {
        auto first = parse_seq(i);
        if (i >= pattern_.size() || pattern_[i] != '|') return first;
        auto alt = std::make_unique<node>();
        alt->k = kind::alt;
        alt->kids.push_back(std::move(first));
        while (i < pattern_.size() && pattern_[i] == '|') {
            ++i;
            alt->kids.push_back(parse_seq(i));
        }
        return alt;
    }

    std::string pattern_;
    bool collapsed_ = false;
    std::unique_ptr<node> root_;
};

}  // namespace text
TESSERA_END_NAMESPACE
