// tessera::text pre-tokenizers: the regex splits llama.cpp applies before BPE merges,
// selected by `tokenizer.ggml.pre`. The gpt2 and llama3/qwen2 patterns have exact
// hand-written matchers (as llama.cpp has); the others run on tessera::text::regex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/text/regex.hpp"
#include "tessera/text/unicode.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

namespace patterns {
inline constexpr std::string_view gpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
inline constexpr std::string_view llama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view llama3_ci =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
inline constexpr std::string_view qwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view qwen35 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
    "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view deepseek_llm_latin =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1F7Dᾀ-ᾴᾶ-ᾼ\u1FBEῂ-ῄῆ-ῌῐ-"
    "\u1FD3ῖ-\u1FDBῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212A-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
inline constexpr std::string_view deepseek3 =
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|"
    "\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
}  // namespace patterns

// The pre-tokenizer families tessera implements (llama.cpp's LLAMA_VOCAB_PRE_TYPE_*).
enum class pre_type : std::uint8_t {
    default_, llama3, dbrx, smaug, chatglm4, gpt2, mpt, olmo, jais, trillion, granite_docling, starcoder, refact,
    command_r, smollm, codeshell, exaone, minerva, mellum2, qwen2, stablelm2, hunyuan, solar_open, qwen35,
    deepseek_llm, deepseek_coder, deepseek3_llm, hunyuan_dense, joyai_llm, falcon, poro, bloom, gpt3_finnish,
    viking, gemma4, sarvam_moe
};

// What a `tokenizer.ggml.pre` value selects, with the flags it sets (llama.cpp's table).
struct pre_info {
    pre_type type = pre_type::default_;
    bool ignore_merges = false;
    bool add_bos = false;        // add_bos default becomes true
    bool clean_spaces = true;    // false where llama.cpp clears it
    bool add_sep = false;
    bool clear_bos_id = false;   // glm4
    bool escape_whitespaces = false;
};

// Maps a pre name to its type; throws for names tessera does not know.
inline pre_info pre_info_from_name(std::string_view pre) {
    pre_info p;
    auto any = [&](std::initializer_list<std::string_view> names) {
        for (auto n : names)
            if (pre == n) return true;
        return false;
    };
    if (pre.empty() || pre == "default") {
        p.type = pre_type::default_;
    } else if (any({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                    "jina-v5-nano"})) {
        p.type = pre_type::llama3;
        p.ignore_merges = true;
        p.add_bos = true;
    } else if (pre == "deepseek-llm") {
        p.type = pre_type::deepseek_llm;
        p.clean_spaces = false;
    } else if (pre == "deepseek-coder") {
        p.type = pre_type::deepseek_coder;
        p.clean_spaces = false;
    } else if (pre == "deepseek-v3") {
        p.type = pre_type::deepseek3_llm;
        p.clean_spaces = false;
    } else if (pre == "falcon") {
        p.type = pre_type::falcon;
    } else if (pre == "mpt") {
        p.type = pre_type::mpt;
    } else if (pre == "starcoder") {
        p.type = pre_type::starcoder;
    } else if (any({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
                    "modern-bert", "exaone4"})) {
        p.type = pre_type::gpt2;
    } else if (any({"jina-v1-en", "jina-v2-code", "roberta-bpe"})) {
        p.type = pre_type::gpt2;
        p.add_sep = true;
    } else if (any({"gemma4", "granite-embed-multi-311m"})) {
        p.type = pre_type::gemma4;
        p.escape_whitespaces = true;
    } else if (pre == "sarvam-moe") {
        p.type = pre_type::sarvam_moe;
        p.escape_whitespaces = true;
        p.clean_spaces = false;
    } else if (pre == "refact") {
        p.type = pre_type::refact;
    } else if (pre == "command-r") {
        p.type = pre_type::command_r;
        p.clean_spaces = false;
    } else if (any({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"})) {
        p.type = pre_type::qwen2;
        p.clean_spaces = false;
    } else if (pre == "qwen35") {
        p.type = pre_type::qwen35;
        p.clean_spaces = false;
    } else if (pre == "stablelm2") {
        p.type = pre_type::stablelm2;
    } else if (pre == "olmo") {
        p.type = pre_type::olmo;
    } else if (pre == "dbrx") {
        p.type = pre_type::dbrx;
    } else if (pre == "smaug-bpe") {
        p.type = pre_type::smaug;
    } else if (pre == "poro-chat") {
        p.type = pre_type::poro;
        p.clean_spaces = false;
    } else if (any({"glm4", "chatglm-bpe"})) {
        p.type = pre_type::chatglm4;
        p.clear_bos_id = true;
    } else if (pre == "viking") {
        p.type = pre_type::viking;
        p.clean_spaces = false;
    } else if (pre == "jais") {
        p.type = pre_type::jais;
    } else if (pre == "smollm") {
        p.type = pre_type::smollm;
        p.clean_spaces = false;
    } else if (pre == "codeshell") {
        p.type = pre_type::codeshell;
    } else if (pre == "bloom") {
        p.type = pre_type::bloom;
    } else if (pre == "gpt3-finnish") {
        p.type = pre_type::gpt3_finnish;
    } else if (pre == "exaone") {
        p.type = pre_type::exaone;
    } else if (pre == "minerva-7b") {
        p.type = pre_type::minerva;
    } else if (pre == "megrez") {
        p.type = pre_type::qwen2;
    } else if (pre == "trillion") {
        p.type = pre_type::trillion;
        p.clean_spaces = false;
    } else if (pre == "granite-docling") {
        p.type = pre_type::granite_docling;
        p.clean_spaces = false;
    } else if (pre == "hunyuan") {
        p.type = pre_type::hunyuan;
        p.clean_spaces = false;
    } else if (pre == "hunyuan-dense") {
        p.type = pre_type::hunyuan_dense;
        p.clean_spaces = false;
    } else if (pre == "joyai-llm") {
        p.type = pre_type::joyai_llm;
        p.clean_spaces = false;
    } else if (pre == "solar-open") {
        p.type = pre_type::solar_open;
        p.clean_spaces = false;
    } else if (pre == "mellum2") {
        p.type = pre_type::mellum2;
    } else {
        fail(errc::unsupported, "unknown pre-tokenizer type: '" + std::string(pre) + "'");
    }
    return p;
}

// The regexes of a pre type, applied in order, and whether words get GPT-2 byte encoding.
struct pre_regexes {
    std::vector<std::string_view> exprs;
    bool byte_encode = true;
};

inline pre_regexes regexes_for(pre_type t) {
    using namespace patterns;
    switch (t) {
        case pre_type::llama3: case pre_type::dbrx: case pre_type::smaug: case pre_type::chatglm4:
            return {{llama3}};
        case pre_type::deepseek_llm:
            return {{"[\r\n]", deepseek_llm_latin, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", "[一-龥ࠀ-一가-퟿]+", "\\p{N}+"}};
        case pre_type::deepseek3_llm: case pre_type::hunyuan_dense: case pre_type::joyai_llm:
            return {{"\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", deepseek3}};
        case pre_type::deepseek_coder:
            return {{"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-퟿]+", "\\p{N}"}};
        case pre_type::falcon:
            return {{"[\\p{P}\\$\\+<=>\\^~\\|`]+", gpt2, "[0-9][0-9][0-9]"}};
        case pre_type::starcoder: case pre_type::refact: case pre_type::command_r: case pre_type::smollm:
        case pre_type::codeshell: case pre_type::exaone: case pre_type::minerva: case pre_type::mellum2:
            return {{"\\p{N}", gpt2}};
        case pre_type::gpt2: case pre_type::mpt: case pre_type::olmo: case pre_type::jais: case pre_type::trillion:
        case pre_type::granite_docling:
            return {{gpt2}};
        case pre_type::stablelm2: case pre_type::qwen2: case pre_type::hunyuan: case pre_type::solar_open:
            return {{qwen2}};
        case pre_type::qwen35:
            return {{qwen35}};
        case pre_type::poro: case pre_type::bloom: case pre_type::gpt3_finnish:
            return {{" ?[^(\\s|.,!?…。，、।۔،)]+"}};
        case pre_type::viking:
            return {{" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"}};
        case pre_type::gemma4: case pre_type::sarvam_moe:
            return {{"[^\\n]+|[\\n]+"}, false};
        case pre_type::default_:
            break;
    }
    return {{"[\\p{P}\\$\\+<=>\\^~\\|]+", gpt2, "\\p{N}+", "[0-9][0-9][0-9]"}};
}

namespace detail {

// Exact matcher for the GPT-2 pattern (llama.cpp's hand-written one).
inline void split_gpt2(const std::vector<std::uint32_t>& cps, const std::vector<cpt_flags>& fl, std::size_t ini,
                       std::size_t end, std::vector<std::size_t>& out) {
    auto cp_at = [&](std::size_t p) -> std::uint32_t { return p < end ? cps[p] : 0xFFFFFFFFu; };
    auto fl_at = [&](std::size_t p) -> cpt_flags { return p < end ? fl[p] : cpt_flags{}; };
    std::size_t prev = ini;
    auto emit = [&](std::size_t e) {
        if (e > prev) out.push_back(e - prev);
        prev = e;
    };
    auto other = [](cpt_flags f) { return !(f.is_whitespace() || f.is_letter() || f.is_number()) && f.bits != 0; };
    for (std::size_t pos = ini; pos < end;) {
        const std::uint32_t c = cps[pos];
        const cpt_flags f = fl[pos];
        if (c == '\'' && pos + 1 < end) {
            const std::uint32_t n1 = cps[pos + 1];
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                emit(pos += 2);
                continue;
            }
            if (pos + 2 < end) {
                const std::uint32_t n2 = cps[pos + 2];
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    emit(pos += 3);
                    continue;
                }
            }
        }
        const cpt_flags f2 = c == ' ' ? fl_at(pos + 1) : f;
        if (f2.is_letter() || f2.is_number() || other(f2)) {
            pos += (c == ' ');
            if (f2.is_letter()) while (fl_at(pos).is_letter()) ++pos;
            else if (f2.is_number()) while (fl_at(pos).is_number()) ++pos;
            else while (other(fl_at(pos))) ++pos;
            emit(pos);
            continue;
        }
        std::size_t nws = 0;
        while (fl_at(pos + nws).is_whitespace()) ++nws;
        if (nws > 1 && cp_at(pos + nws) != 0xFFFFFFFFu) {
            emit(pos += nws - 1);
        } else if (nws > 0) {
            emit(pos += nws);
        } else {
            emit(++pos);
        }
    }
}

// Exact matcher for the llama3 pattern; max_digits 3 (llama3) or 1 (qwen2).
inline void split_llama3(const std::vector<std::uint32_t>& cps, const std::vector<cpt_flags>& fl, std::size_t ini,
                         std::size_t end, std::size_t max_digits, std::vector<std::size_t>& out) {
    auto cp_at = [&](std::size_t p) -> std::uint32_t { return p < end ? cps[p] : 0xFFFFFFFFu; };
    auto fl_at = [&](std::size_t p) -> cpt_flags { return p < end ? fl[p] : cpt_flags{}; };
    std::size_t prev = ini;
    auto emit = [&](std::size_t e) {
        if (e > prev) out.push_back(e - prev);
        prev = e;
    };
    auto other = [](cpt_flags f) { return !(f.is_whitespace() || f.is_letter() || f.is_number()) && f.bits != 0; };
    for (std::size_t pos = ini; pos < end;) {
        const std::uint32_t c = cps[pos];
        const cpt_flags f = fl[pos];
        if (c == '\'' && pos + 1 < end) {
            const std::uint32_t n1 = to_lower(cps[pos + 1]);
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                emit(pos += 2);
                continue;
            }
            if (pos + 2 < end) {
                const std::uint32_t n2 = to_lower(cps[pos + 2]);
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    emit(pos += 3);
                    continue;
                }
            }
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if (!(c == '\r' || c == '\n' || f.is_number()) && (f.is_letter() || fl_at(pos + 1).is_letter())) {
            ++pos;
            while (fl_at(pos).is_letter()) ++pos;
            emit(pos);
            continue;
        }
        // \p{N}{1,max}
        if (f.is_number()) {
            std::size_t run_start = pos;
            while (fl_at(pos).is_number()) {
                if (++pos - run_start >= max_digits) {
                    emit(pos);
                    run_start = pos;
                }
            }
            emit(pos);
            continue;
        }
        //  ?[^\s\p{L}\p{N}]+[\r\n]*
        const cpt_flags f2 = c == ' ' ? fl_at(pos + 1) : f;
        if (other(f2) || (c == ' ' && f2.bits == 0)) {
            pos += (c == ' ');
            while (other(fl_at(pos))) ++pos;
            while (cp_at(pos) == '\r' || cp_at(pos) == '\n') ++pos;
            emit(pos);
            continue;
        }
        std::size_t nws = 0, last_rn = 0;
        while (fl_at(pos + nws).is_whitespace()) {
            const std::uint32_t c2 = cps[pos + nws];
            if (c2 == '\r' || c2 == '\n') last_rn = pos + nws + 1;
            ++nws;
        }
        if (last_rn > 0) {
            emit(pos = last_rn);
        } else if (nws > 1 && cp_at(pos + nws) != 0xFFFFFFFFu) {
            emit(pos += nws - 1);
        } else if (nws > 0) {
            emit(pos += nws);
        } else {
            emit(++pos);
        }
    }
}

}  // namespace detail

// A pre-tokenizer: a list of split steps, then optional byte-level encoding.
class pretokenizer {
public:
    pretokenizer() = default;
    explicit pretokenizer(const pre_regexes& r) : byte_encode_(r.byte_encode) {
        for (auto e : r.exprs) {
            if (e == patterns::gpt2) steps_.emplace_back(custom::gpt2);
            else if (e == patterns::llama3 || e == patterns::llama3_ci) steps_.emplace_back(custom::llama3);
            else if (e == patterns::qwen2) steps_.emplace_back(custom::qwen2);
            else steps_.emplace_back(regex(e));
        }
    }
    explicit pretokenizer(pre_type t) : pretokenizer(regexes_for(t)) {}

    bool byte_encode() const noexcept { return byte_encode_; }

    // Chunk lengths (in code points) of `cps` after every step.
    std::vector<std::size_t> split_offsets(const std::vector<std::uint32_t>& cps) const {
        std::vector<std::size_t> chunks{cps.size()};
        if (cps.empty()) return {};
        std::vector<cpt_flags> fl;
        std::vector<std::uint32_t> mapped;
        for (const auto& step : steps_) {
            std::vector<std::size_t> next;
            next.reserve(chunks.size());
            if (const custom* c = std::get_if<custom>(&step)) {
                if (fl.empty()) {
                    fl.resize(cps.size());
                    for (std::size_t i = 0; i < cps.size(); ++i) fl[i] = flags_of(cps[i]);
                }
                std::size_t start = 0;
                for (std::size_t len : chunks) {
                    if (*c == custom::gpt2) detail::split_gpt2(cps, fl, start, start + len, next);
                    else detail::split_llama3(cps, fl, start, start + len, *c == custom::llama3 ? 3 : 1, next);
                    start += len;
                }
            } else {
                const regex& re = std::get<regex>(step);
                mapped.resize(cps.size());
                for (std::size_t i = 0; i < cps.size(); ++i) mapped[i] = re.map(cps[i]);
                next = re.split(mapped, chunks);
            }
            chunks = std::move(next);
        }
        return chunks;
    }

    // Words of `text`: invalid UTF-8 becomes U+FFFD; words are byte-encoded if enabled.
    std::vector<std::string> split(std::string_view text) const {
        const auto cps = to_code_points(text);
        const auto chunks = split_offsets(cps);
        std::vector<std::string> words;
        words.reserve(chunks.size());
        std::size_t start = 0;
        std::string raw;
        for (std::size_t len : chunks) {
            raw.clear();
            for (std::size_t i = start; i < start + len; ++i) append_utf8(raw, cps[i]);
            start += len;
            if (!byte_encode_) {
                words.push_back(raw);
                continue;
            }
            std::string enc;
            enc.reserve(raw.size() * 2);
            for (unsigned char b : raw) append_utf8(enc, byte_to_cp[b]);
            words.push_back(std::move(enc));
        }
        return words;
    }

private:
    enum class custom : std::uint8_t { gpt2, llama3, qwen2 };
    std::vector<std::variant<custom, regex>> steps_;
    bool byte_encode_ = true;
};

}  // namespace text
TESSERA_END_NAMESPACE
