// tessera::text::tokenizer: llama.cpp's llama_vocab::tokenize / token_to_piece /
// detokenize over a tessera::text::vocab: special-token partitioning, then the SPM,
// BPE, WPM or UGM session per raw fragment.
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/text/bpe.hpp"
#include "tessera/text/pretokenize.hpp"
#include "tessera/text/spm.hpp"
#include "tessera/text/ugm.hpp"
#include "tessera/text/unicode.hpp"
#include "tessera/text/vocab.hpp"
#include "tessera/text/wpm.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

// A piece of the input after special-token partitioning: raw text or a token.
struct fragment {
    token id = null_token;     // != null_token: a token fragment
    std::size_t offset = 0;    // raw text: [offset, offset + length) of the input
    std::size_t length = 0;
    bool is_token() const noexcept { return id != null_token; }
};

// Splits `text` on special tokens as llama.cpp's tokenizer_st_partition does.
inline std::vector<fragment> partition_special(const vocab& v, std::string_view text, bool parse_special) {
    std::list<fragment> buf;
    if (!text.empty()) buf.push_back({null_token, 0, text.size()});
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
    for (const token sid : v.special_tokens()) {
        const token_data& d = v.data(sid);
        if (!parse_special && (d.attr & (attr::control | attr::unknown))) continue;
        const std::string_view st = d.text;
        for (auto it = buf.begin(); it != buf.end();) {
            if (it->is_token()) {
                ++it;
                continue;
            }
            std::size_t base = it->offset, len = it->length;
            const auto source = it;
            auto insert_at = std::next(it);
            bool consumed = false;
            while (true) {
                const std::size_t match = text.substr(0, base + len).find(st, base);
                if (match == std::string_view::npos) break;
                consumed = true;
                if (match > base) {
                    std::size_t left_len = match - base;
                    if (d.attr & attr::lstrip)
                        while (left_len > 0 && is_space(text[base + left_len - 1])) --left_len;
                    if (left_len > 0) buf.insert(insert_at, {null_token, base, left_len});
                }
                buf.insert(insert_at, {sid, 0, 0});
                if (match + st.size() < base + len) {
                    std::size_t r_off = match + st.size();
                    std::size_t r_len = base + len - r_off;
                    if (d.attr & attr::rstrip)
                        while (r_len > 0 && is_space(text[r_off])) {
                            ++r_off;
                            --r_len;
                        }
                    base = r_off;
                    len = r_len;
                    if (r_len == 0) break;
                } else {
                    len = 0;
                    break;
                }
            }
            if (consumed) {
                if (len > 0) buf.insert(insert_at, {null_token, base, len});
                buf.erase(source);
            }
            it = insert_at;
        }
    }
    return {buf.begin(), buf.end()};
}

class tokenizer {
public:
    explicit tokenizer(vocab v) : v_(std::move(v)) {
        if (v_.type() == vocab_type::none) fail(errc::unsupported, "the model has no vocabulary");
        if (v_.type() == vocab_type::bpe) pre_ = std::make_unique<pretokenizer>(v_.pre_kind());
        if (v_.type() == vocab_type::ugm) ugm_ = std::make_unique<ugm_model>(v_);
        if (v_.type() == vocab_type::bpe || v_.type() == vocab_type::ugm) {
            const auto nl = tokenize("\n", false, false);
            v_.linefeed = nl.empty() ? v_.pad : nl[0];
        }
        pieces_.resize(v_.n_tokens());
        for (std::uint32_t id = 0; id < v_.n_tokens(); ++id) pieces_[id] = render_piece(static_cast<token>(id));
    }
    tokenizer(tokenizer&&) noexcept = default;

    const vocab& get_vocab() const noexcept { return v_; }

    // Tokenizes like llama_vocab::tokenize(text, add_special, parse_special).
    std::vector<token> tokenize(std::string_view text, bool add_special, bool parse_special = false) const {
        std::vector<token> out;
        const auto frags = partition_special(v_, text, parse_special);
        switch (v_.type()) {
            case vocab_type::spm: {
                bool prev_special = true;
                if (add_special && v_.add_bos) out.push_back(v_.bos);
                spm_session s(v_);
                std::string t;
                for (const fragment& f : frags) {
                    if (f.is_token()) {
                        out.push_back(f.id);
                        prev_special = true;
                        continue;
                    }
                    t.clear();
                    if (v_.add_space_prefix && prev_special) t.push_back(' ');
                    t.append(text.substr(f.offset, f.length));
                    escape_spaces(t);
                    s.tokenize(t, out);
                    prev_special = false;
                }
                if (add_special && v_.add_eos) out.push_back(v_.eos);
                break;
            }
            case vocab_type::bpe: {
                if (add_special && v_.add_bos) out.push_back(v_.bos);
                bpe_session s(v_, *pre_);
                std::string t;
                for (const fragment& f : frags) {
                    if (f.is_token()) {
                        out.push_back(f.id);
                        continue;
                    }
                    t.assign(text.substr(f.offset, f.length));
                    if (v_.escape_whitespaces) escape_spaces(t);
                    s.tokenize(t, out);
                }
                if (add_special && v_.add_eos) out.push_back(v_.eos);
                break;
            }
            case vocab_type::wpm: {
                // WordPiece frames every text in [CLS] ... [SEP] with add_special, whatever
                // add_bos / add_sep say (as llama.cpp), so both must exist then.
                if (add_special && v_.bos == null_token)
                    fail(errc::invalid_argument, "tokenize with add_special: the WPM vocabulary has no CLS token (tokenizer.ggml.bos_token_id)");
                if (add_special && v_.sep == null_token)
                    fail(errc::invalid_argument, "tokenize with add_special: the WPM vocabulary has no SEP token (tokenizer.ggml.seperator_token_id)");
                if (add_special) out.push_back(v_.bos);
                for (const fragment& f : frags) {
                    if (f.is_token()) out.push_back(f.id);
                    else wpm_tokenize(v_, text.substr(f.offset, f.length), out);
                }
                if (add_special) out.push_back(v_.sep);
                break;
            }
            case vocab_type::ugm: {
                if (add_special && v_.add_bos) out.push_back(v_.bos);
                for (const fragment& f : frags) {
                    if (f.is_token()) out.push_back(f.id);
                    else ugm_->tokenize(v_, text.substr(f.offset, f.length), out);
                }
                if (add_special && v_.add_eos) out.push_back(v_.eos);
                break;
            }
            default:
                fail(errc::unsupported, "tokenizer type not implemented");
        }
        return out;
    }

    // The piece of a token as llama_token_to_piece renders it. With special = false,
    // control and unknown tokens render empty. lstrip removes up to that many leading spaces.
    std::string_view token_to_piece(token id, bool special = true, int lstrip = 0) const {
        const std::uint32_t a = v_.attributes(id);
        if (!special && (a & (attr::unknown | attr::control))) return {};
        std::string_view p = pieces_[static_cast<std::size_t>(id)];
        for (int i = 0; i < lstrip && !p.empty() && p.front() == ' '; ++i) p.remove_prefix(1);
        return p;
    }

    // Joins pieces like llama_detokenize(remove_special, unparse_special), including
    // the leading-space removal and the clean_spaces passes.
    std::string detokenize(std::span<const token> toks, bool remove_special = false, bool unparse_special = false) const {
        std::string text;
        bool remove_space = v_.add_space_prefix;
        if (remove_special && v_.add_bos && !toks.empty() && toks.front() == v_.bos) {
            remove_space = false;
            toks = toks.subspan(1);
        }
        if (remove_special && v_.add_eos && !toks.empty() && toks.back() == v_.eos) toks = toks.first(toks.size() - 1);
        for (token t : toks) {
            text += token_to_piece(t, unparse_special, remove_space ? 1 : 0);
            remove_space = false;
        }
        if (v_.clean_spaces) text = clean_spaces(text);
        return text;
    }

private:
    static void escape_spaces(std::string& t) {
        std::string r;
        r.reserve(t.size() + t.size() / 2);
        for (char c : t) {
            if (c == ' ') r += "\xE2\x96\x81";
            else r.push_back(c);
        }
        t.swap(r);
    }
    static std::string unescape_spaces(std::string_view t) {
        std::string r;
        r.reserve(t.size());
        for (std::size_t i = 0; i < t.size(); ++i) {
            if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
                r.push_back(' ');
                i += 2;
            } else {
                r.push_back(t[i]);
            }
        }
        return r;
    }

    // Byte-level decoding of a BPE token text (code points back to raw bytes).
    static std::string decode_byte_level(std::string_view t) {
        std::string r;
        for (std::uint32_t cp : to_code_points(t)) {
            const int b = cp_to_byte(cp);
            if (b >= 0) {
                r.push_back(static_cast<char>(b));
            } else {
                static constexpr char hex[] = "0123456789abcdef";
                const std::string u = to_utf8(cp);
                r += "[UNK_BYTE_0x";
                for (unsigned char c : u) {
                    r.push_back(hex[c >> 4]);
                    r.push_back(hex[c & 15]);
                }
                r.append(t);
                r += "]";
            }
        }
        return r;
    }

    std::string render_piece(token id) const {
        const token_data& d = v_.data(id);
        const std::uint32_t a = d.attr;
        if (a & (attr::unknown | attr::control | attr::user_defined)) return d.text;
        switch (v_.type()) {
            case vocab_type::spm: case vocab_type::wpm: case vocab_type::ugm:
                if (a & attr::normal) return unescape_spaces(d.text);
                if (a & attr::byte) return std::string(1, static_cast<char>(v_.token_to_byte(id)));
                return {};
            case vocab_type::bpe:
                if (a & attr::normal) return v_.escape_whitespaces ? unescape_spaces(d.text) : decode_byte_level(d.text);
                if (a & attr::byte) return std::string(1, static_cast<char>(v_.token_to_byte(id)));
                return {};
            default:
                return {};
        }
    }

    // llama.cpp's three clean-up passes, done in place the same way.
    static std::string clean_spaces(std::string t) {
        std::size_t total = t.size();
        // " ?", " !", " .", " ," lose the space
        {
            const std::size_t n = total;
            total = n ? 1 : 0;
            for (std::size_t i = 1; i < n; ++i) {
                const char x = t[i];
                if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
                t[total++] = x;
            }
        }
        // " ' " becomes "'"
        {
            const std::size_t n = total;
            total = n ? 1 : 0;
            for (std::size_t i = 1; i < n; ++i) {
                const char x = t[i];
                if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
                    --total;
                    t[++i] = '\0';
                }
                t[total++] = x;
            }
        }
        // " 's", " 'm", " 're", " 've" lose the space
        {
            const std::size_t n = total;
            total = n ? 1 : 0;
            for (std::size_t i = 1; i < n; ++i) {
                const char x = t[i];
                if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
                    const char x1 = t[i + 1];
                    if (x1 == 's' || x1 == 'm') {
                        --total;
                    } else if (i + 2 < n) {
                        const char x2 = t[i + 2];
                        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
                    }
                }
                t[total++] = x;
            }
        }
        t.resize(total);
        return t;
    }

    vocab v_;
    std::unique_ptr<pretokenizer> pre_;
    std::unique_ptr<ugm_model> ugm_;
    std::vector<std::string> pieces_;
};

}  // namespace text
TESSERA_END_NAMESPACE
