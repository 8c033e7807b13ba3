// Unicode tables, UTF-8 coding, the GPT-2 byte map, and the regex matcher: the
// generic matcher and the hand-written gpt2/llama3/qwen2 matchers must agree.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/text/pretokenize.hpp"
#include "tessera/text/regex.hpp"
#include "tessera/text/unicode.hpp"

using namespace tessera::text;

TEST_CASE("unicode: categories of known code points") {
    CHECK(flags_of('A').is_letter());
    CHECK(flags_of('z').is_letter());
    CHECK(flags_of('7').is_number());
    CHECK(flags_of(0x00BD).is_number());      // ½ (No)
    CHECK(flags_of(0x0301).is_accent_mark());  // combining acute
    CHECK(flags_of('!').is_punctuation());
    CHECK(flags_of('$').is_symbol());
    CHECK(flags_of(0x20AC).is_symbol());       // €
    CHECK(flags_of(0x1F999).is_symbol());      // 🦙
    CHECK(flags_of(0x3000).is_separator());
    CHECK(flags_of(0x3000).is_whitespace());
    CHECK(flags_of('\n').is_whitespace());
    CHECK(flags_of('\n').is_control());
    CHECK(flags_of(0x0085).is_whitespace());
    CHECK_FALSE(flags_of(0x200B).is_whitespace());  // zero width space is Cf, not White_Space
    CHECK(flags_of(0xE000).is_control());           // private use (Co)
    CHECK(flags_of(0xD800).is_control());           // surrogate (Cs)
    CHECK(flags_of(0x0378).is_undefined());         // unassigned
    CHECK(flags_of(0x4E00).is_letter());            // CJK ideograph (range in UnicodeData)
    CHECK(flags_of(0x9FFF).is_letter());
    CHECK(flags_of(0xAC00).is_letter());            // Hangul syllable range
    CHECK(flags_of(0x110000).is_undefined());
    CHECK(general_category(0x00C4) == ucd::gc::Lu);
    CHECK(general_category(0x01C5) == ucd::gc::Lt);
}

TEST_CASE("unicode: every code point's category matches UnicodeData.txt") {
    std::ifstream f("/usr/share/unicode/UnicodeData.txt");
    if (!f) {
        MESSAGE("SKIPPED: /usr/share/unicode/UnicodeData.txt absent");
        return;
    }
    static const char* names[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
                                  "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
    std::vector<int> cat(max_code_point, 0);
    std::string line;
    std::uint32_t first = 0;
    while (std::getline(f, line)) {
        std::vector<std::string> fld;
        std::stringstream ss(line);
        std::string x;
        while (std::getline(ss, x, ';')) fld.push_back(x);
        if (fld.size() < 3) continue;
        const auto cp = static_cast<std::uint32_t>(std::stoul(fld[0], nullptr, 16));
        int c = -1;
        for (int i = 0; i < 30; ++i)
            if (fld[2] == names[i]) c = i;
        REQUIRE(c >= 0);
        if (fld[1].find(", First>") != std::string::npos) {
            first = cp;
            continue;
        }
        if (fld[1].find(", Last>") != std::string::npos) {
            for (std::uint32_t q = first; q <= cp; ++q) cat[q] = c;
            continue;
        }
        cat[cp] = c;
    }
    std::size_t bad = 0;
    for (std::uint32_t cp = 0; cp < max_code_point; ++cp)
        if (static_cast<int>(general_category(cp)) != cat[cp]) ++bad;
    CHECK(bad == 0);
}

TEST_CASE("unicode: lowercase and NFD-first") {
    CHECK(to_lower('A') == 'a');
    CHECK(to_lower(0x00C4) == 0x00E4);  // Ä -> ä
    CHECK(to_lower(0x03A3) == 0x03C3);  // Σ -> σ
    CHECK(to_lower(0x0130) == 0x0069);  // İ -> i (simple mapping)
    CHECK(to_lower(0x00E4) == 0x00E4);
    CHECK(nfd_first(0x00E9) == 'e');    // é
    CHECK(nfd_first(0x01D6) == 'u');    // ǖ -> ü -> u (recursive)
    CHECK(nfd_first(0xD55C) == 0x1112); // 한 -> ᄒ
    CHECK(nfd_first('a') == 'a');
    CHECK(nfd_first(0x4E00) == 0x4E00);
}

TEST_CASE("unicode: UTF-8 round trip of every scalar value, invalid bytes become U+FFFD") {
    std::string all;
    std::vector<std::uint32_t> want;
    for (std::uint32_t cp = 0; cp < max_code_point; cp += 7) {
        append_utf8(all, cp);
        want.push_back(cp);
    }
    CHECK(to_code_points(all) == want);
    CHECK(to_code_points("a\xff" "b") == std::vector<std::uint32_t>{'a', 0xFFFD, 'b'});
    CHECK(to_code_points("\xc3") == std::vector<std::uint32_t>{0xFFFD});
    CHECK(to_code_points("\xe2\x96") == std::vector<std::uint32_t>{0xFFFD, 0xFFFD});
    CHECK(utf8_len('\xff') == 4);
    CHECK(utf8_len('\x80') == 1);
}

TEST_CASE("unicode: GPT-2 byte map") {
    CHECK(byte_to_cp[' '] == 0x120);
    CHECK(byte_to_cp['\n'] == 0x10A);
    CHECK(byte_to_cp['a'] == 'a');
    CHECK(byte_to_cp[0xAD] == 0x143);
    std::vector<bool> seen(512, false);
    for (int b = 0; b < 256; ++b) {
        const auto cp = byte_to_cp[static_cast<std::size_t>(b)];
        CHECK_FALSE(seen[cp]);
        seen[cp] = true;
        CHECK(cp_to_byte(cp) == b);
    }
    CHECK(cp_to_byte(0x144) == -1);
}

namespace {

std::vector<std::string> split_with(const pretokenizer& p, const std::string& s) {
    std::vector<std::string> out;
    const auto cps = to_code_points(s);
    std::size_t start = 0;
    for (auto len : p.split_offsets(cps)) {
        std::string w;
        for (std::size_t i = start; i < start + len; ++i) append_utf8(w, cps[i]);
        out.push_back(w);
        start += len;
    }
    return out;
}

std::vector<std::string> split_regex(std::string_view pattern, const std::string& s) {
    return split_with(pretokenizer(pre_regexes{{pattern}, false}), s);
}

// Random text over a mixed alphabet that exercises every branch of the matchers.
std::string random_text(std::mt19937& rng, std::size_t n) {
    static const std::uint32_t alphabet[] = {'a', 'b', 'Z', 'x', '0', '7', ' ', ' ', ' ', '\n', '\r', '\t', '\'', 's', 't', 'l',
                                             'r', 'e', 'v', 'm', 'd', 'S', 'T', 'L', 'E', '.', ',', '!', '$', '+', '~', '`',
                                             '|', 0xE9, 0xC4, 0x3B1, 0x4E00, 0x0661, 0x00BD, 0x0301, 0x3000, 0x00A0, 0x2028,
                                             0x20AC, 0x1F999, 0x0378, 0xE000, 0x200B, 0xFF01, 0x00B5};
    std::uniform_int_distribution<std::size_t> pick(0, std::size(alphabet) - 1);
    std::string s;
    for (std::size_t i = 0; i < n; ++i) append_utf8(s, alphabet[pick(rng)]);
    return s;
}

}  // namespace

TEST_CASE("regex: generic matcher agrees with the hand-written gpt2, llama3 and qwen2 matchers") {
    std::mt19937 rng(1234);
    const pretokenizer gpt2(pre_regexes{{patterns::gpt2}, false});
    const pretokenizer llama3(pre_regexes{{patterns::llama3}, false});
    const pretokenizer qwen2(pre_regexes{{patterns::qwen2}, false});
    const regex g(patterns::gpt2), l(patterns::llama3), q(patterns::qwen2);
    auto generic = [](const regex& re, const std::string& s) {
        const auto cps = to_code_points(s);
        std::vector<std::uint32_t> mapped(cps.size());
        for (std::size_t i = 0; i < cps.size(); ++i) mapped[i] = re.map(cps[i]);
        return re.split(mapped, {cps.size()});
    };
    auto custom = [](const pretokenizer& p, const std::string& s) { return p.split_offsets(to_code_points(s)); };
    int mismatches = 0;
    for (int iter = 0; iter < 600; ++iter) {
        const std::string s = random_text(rng, 1 + iter % 40);
        const auto a = generic(g, s), b = custom(gpt2, s);
        const auto c = generic(l, s), d = custom(llama3, s);
        const auto e = generic(q, s), f = custom(qwen2, s);
        if (a != b || c != d || e != f) {
            ++mismatches;
            if (mismatches < 5) MESSAGE("mismatch on " << s);
        }
    }
    CHECK(mismatches == 0);
}

TEST_CASE("regex: known splits") {
    using v = std::vector<std::string>;
    CHECK(split_regex(patterns::gpt2, "Hello world's 123  x") == v{"Hello", " world", "'s", " 123", " ", " x"});
    CHECK(split_regex(patterns::llama3, "I'M 12345 ok!!\n\n  x") == v{"I", "'M", " ", "123", "45", " ok", "!!\n\n", " ", " x"});
    CHECK(split_regex("[0-9][0-9][0-9]", "a12345b6789") == v{"a", "123", "45b", "678", "9"});
    CHECK(split_regex("\\s+$", "ab  cd   ") == v{"ab  cd", "   "});
    CHECK(split_regex("\\p{N}", "a12b") == v{"a", "1", "2", "b"});
    CHECK(split_regex("[\\p{P}\\$\\+<=>\\^~\\|]+", "a+b,,c~d") == v{"a", "+", "b", ",,", "c", "~", "d"});
    CHECK(split_regex("[\r\n]", "a\nb\r\nc") == v{"a", "\n", "b", "\r", "\n", "c"});
    CHECK(split_regex("\\s?\\p{L}+", "ab cd 1e") == v{"ab", " cd", " 1", "e"});
    // deepseek-llm: U+3000 becomes 0x0B before matching, so it leaves the class and is \s
    CHECK(split_regex("\\s?[!-/:-~！-／：-～‘-‟　-。]+", "1！2\u3000。") == v{"1", "！", "2", "\u3000。"});
    CHECK(split_regex("[一-龥ࠀ-一가-퟿]+", "ab中文cd한국") == v{"ab", "中文", "cd", "한국"});
    // collapsed mode: \p{S} does not contain '~' for ASCII (llama.cpp's list)
    CHECK(split_regex("\\p{S}+", "a~b$c") == v{"a~b", "$", "c"});
}

TEST_CASE("regex: long runs neither recurse per character nor go quadratic on X+$") {
    std::string letters(1 << 20, 'a');
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(split_regex("\\s?\\p{L}+", letters).size() == 1);
    std::string spaces(200000, ' ');
    spaces += "x";
    CHECK(split_regex("\\s+$", spaces).size() == 1);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s < 20.0);
}

TEST_CASE("regex: malformed patterns are rejected with a message") {
    CHECK_THROWS_AS(regex("(ab"), tessera::error);
    CHECK_THROWS_AS(regex("[ab"), tessera::error);
    CHECK_THROWS_AS(regex("a{3,1}"), tessera::error);
    CHECK_THROWS_AS(regex("\\p{Q}"), tessera::error);
    CHECK_THROWS_AS(regex("a+?"), tessera::error);
}

TEST_CASE("pretokenize: every supported pre name selects a working pre-tokenizer") {
    for (const char* name : {"default", "llama-bpe", "llama3", "dbrx", "smaug-bpe", "glm4", "gpt-2", "mpt", "olmo", "jais",
                             "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "qwen2",
                             "stablelm2", "megrez", "qwen35", "deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon",
                             "poro-chat", "bloom", "gpt3-finnish", "viking", "gemma4", "trillion", "hunyuan", "solar-open"}) {
        INFO(name);
        const pre_info info = pre_info_from_name(name);
        const pretokenizer p(info.type);
        const auto w = p.split("Hello, world! 1234567 ünïcödé 中文 \t\n  end");
        CHECK(w.size() > 1);
    }
    CHECK_THROWS_AS(pre_info_from_name("no-such-pre"), tessera::error);
}

TEST_CASE("pretokenize: default, falcon, starcoder and deepseek splits") {
    using v = std::vector<std::string>;
    auto words = [](pre_type t, const std::string& s) { return split_with(pretokenizer(t), s); };
    CHECK(words(pre_type::starcoder, "x 2024 y") == v{"x", " ", "2", "0", "2", "4", " y"});
    CHECK(words(pre_type::falcon, "a1234 b") == v{"a", "123", "4", " b"});
    CHECK(words(pre_type::default_, "a+1234567") == v{"a", "+", "123", "456", "7"});
    CHECK(words(pre_type::deepseek_coder, "ab 12\ncd") == v{"ab", " ", "1", "2", "\n", "cd"});
    CHECK(words(pre_type::deepseek_llm, "Hi 中文 42!") == v{"Hi", " ", "中文", " ", "42", "!"});
}
