// tessera::text unicode helpers: UTF-8 coding as llama.cpp does it, code point flags
// from the generated UCD tables, lowercase and NFD-first mappings, and GPT-2's
// byte <-> unicode mapping.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/text/unicode_data.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

// Coarse flags of a code point, as tokenizers test them. Exactly one category bit is
// set for every code point (undefined for unassigned ones); whitespace is separate.
struct cpt_flags {
    enum : std::uint16_t {
        undefined = 1 << 0,
        number = 1 << 1,
        letter = 1 << 2,
        separator = 1 << 3,
        accent_mark = 1 << 4,
        punctuation = 1 << 5,
        symbol = 1 << 6,
        control = 1 << 7,
        category_mask = 0xFF,
        whitespace = 1 << 8,
    };
    std::uint16_t bits = 0;

    constexpr bool is_undefined() const noexcept { return bits & undefined; }
    constexpr bool is_number() const noexcept { return bits & number; }
    constexpr bool is_letter() const noexcept { return bits & letter; }
    constexpr bool is_separator() const noexcept { return bits & separator; }
    constexpr bool is_accent_mark() const noexcept { return bits & accent_mark; }
    constexpr bool is_punctuation() const noexcept { return bits & punctuation; }
    constexpr bool is_symbol() const noexcept { return bits & symbol; }
    constexpr bool is_control() const noexcept { return bits & control; }
    constexpr bool is_whitespace() const noexcept { return bits & whitespace; }
    constexpr std::uint16_t category() const noexcept { return bits & category_mask; }
};

inline constexpr std::uint32_t max_code_point = 0x110000;

namespace detail {

constexpr std::uint16_t flags_of_gc(std::uint8_t g) noexcept {
    using ucd::gc;
    switch (static_cast<gc>(g)) {
        case gc::Lu: case gc::Ll: case gc::Lt: case gc::Lm: case gc::Lo: return cpt_flags::letter;
        case gc::Mn: case gc::Mc: case gc::Me: return cpt_flags::accent_mark;
        case gc::Nd: case gc::Nl: case gc::No: return cpt_flags::number;
        case gc::Pc: case gc::Pd: case gc::Ps: case gc::Pe: case gc::Pi: case gc::Pf: case gc::Po:
            return cpt_flags::punctuation;
        case gc::Sm: case gc::Sc: case gc::Sk: case gc::So: return cpt_flags::symbol;
        case gc::Zs: case gc::Zl: case gc::Zp: return cpt_flags::separator;
        case gc::Cc: case gc::Cf: case gc::Cs: case gc::Co: return cpt_flags::control;
        case gc::Cn: return cpt_flags::undefined;
    }
    return cpt_flags::undefined;
}

// One byte per code point, built once: category bits (low 8) and whitespace as bit 0
// of a parallel set. 1.1 MB, like llama.cpp's flag array.
struct flag_table {
    std::vector<std::uint16_t> flags;
    flag_table() : flags(max_code_point, cpt_flags::undefined) {
        for (std::uint32_t i = 0; i < ucd::run_count; ++i) {
            const std::uint32_t lo = ucd::run_first[i];
            const std::uint32_t hi = i + 1 < ucd::run_count ? ucd::run_first[i + 1] : max_code_point;
            const std::uint16_t f = flags_of_gc(ucd::run_gc[i]);
            std::fill(flags.begin() + lo, flags.begin() + hi, f);
        }
        for (const auto& r : ucd::white_space)
            for (std::uint32_t c = r.first; c <= r.last; ++c) flags[c] |= cpt_flags::whitespace;
    }
};

inline const flag_table& flags_instance() {
    static const flag_table t;
    return t;
}

}  // namespace detail

// Flags of a code point; values past U+10FFFF are undefined.
inline cpt_flags flags_of(std::uint32_t cp) noexcept {
    if (cp >= max_code_point) return {cpt_flags::undefined};
    return {detail::flags_instance().flags[cp]};
}

// General category index (ucd::gc) by binary search over the runs.
inline ucd::gc general_category(std::uint32_t cp) noexcept {
    if (cp >= max_code_point) return ucd::gc::Cn;
    const auto* end = ucd::run_first + ucd::run_count;
    const auto* it = std::upper_bound(ucd::run_first, end, cp);
    return static_cast<ucd::gc>(ucd::run_gc[(it - ucd::run_first) - 1]);
}

// Simple lowercase mapping (identity when none).
inline std::uint32_t to_lower(std::uint32_t cp) noexcept {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    const auto* b = std::begin(ucd::lowercase);
    const auto* e = std::end(ucd::lowercase);
    const auto* it = std::lower_bound(b, e, cp, [](const ucd::mapping& m, std::uint32_t v) { return m.from < v; });
    return (it != e && it->from == cp) ? it->to : cp;
}

// First code point of the canonical decomposition (the code point itself when none).
inline std::uint32_t nfd_first(std::uint32_t cp) noexcept {
    if (cp < 0xC0) return cp;
    if (cp >= 0xAC00 && cp <= 0xD7A3) return 0x1100 + (cp - 0xAC00) / 588;  // Hangul L jamo
    const auto* b = std::begin(ucd::nfd_first);
    const auto* e = std::end(ucd::nfd_first);
    const auto* it = std::lower_bound(b, e, cp, [](const ucd::mapping& m, std::uint32_t v) { return m.from < v; });
    return (it != e && it->from == cp) ? it->to : cp;
}

// ---- UTF-8 -------------------------------------------------------------------------

// Length of a UTF-8 sequence from its lead byte's high nibble (llama.cpp's rule:
// continuation and invalid bytes count 1, 0xF8..0xFF count 4).
constexpr std::size_t utf8_len(char lead) noexcept {
    constexpr std::uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[static_cast<std::uint8_t>(lead) >> 4];
}

inline constexpr std::uint32_t invalid_cp = 0xFFFFFFFF;

// Decodes one code point at `off` (no overlong/surrogate checks, like llama.cpp).
// Returns invalid_cp and leaves `off` unchanged for an invalid sequence.
constexpr std::uint32_t decode_utf8(std::string_view s, std::size_t& off) noexcept {
    const auto b = [&](std::size_t i) { return static_cast<std::uint8_t>(s[i]); };
    const std::uint8_t c0 = b(off);
    if (!(c0 & 0x80)) { off += 1; return c0; }
    if (!(c0 & 0x40)) return invalid_cp;
    const auto cont = [&](std::size_t i) { return (b(i) & 0xC0) == 0x80; };
    if (!(c0 & 0x20)) {
        if (off + 1 >= s.size() || !cont(off + 1)) return invalid_cp;
        std::uint32_t r = ((c0 & 0x1Fu) << 6) | (b(off + 1) & 0x3Fu);
        off += 2;
        return r;
    }
    if (!(c0 & 0x10)) {
        if (off + 2 >= s.size() || !cont(off + 1) || !cont(off + 2)) return invalid_cp;
        std::uint32_t r = ((c0 & 0x0Fu) << 12) | ((b(off + 1) & 0x3Fu) << 6) | (b(off + 2) & 0x3Fu);
        off += 3;
        return r;
    }
    if (!(c0 & 0x08)) {
        if (off + 3 >= s.size() || !cont(off + 1) || !cont(off + 2) || !cont(off + 3)) return invalid_cp;
        std::uint32_t r = ((c0 & 0x07u) << 18) | ((b(off + 1) & 0x3Fu) << 12) | ((b(off + 2) & 0x3Fu) << 6) |
                          (b(off + 3) & 0x3Fu);
        off += 4;
        return r;
    }
    return invalid_cp;
}

// Code points of a UTF-8 string; each invalid byte becomes U+FFFD.
inline std::vector<std::uint32_t> to_code_points(std::string_view s) {
    std::vector<std::uint32_t> out;
    out.reserve(s.size());
    std::size_t off = 0;
    while (off < s.size()) {
        const std::uint32_t cp = decode_utf8(s, off);
        if (cp == invalid_cp) {
            ++off;
            out.push_back(0xFFFD);
        } else {
            out.push_back(cp);
        }
    }
    return out;
}

// Appends the UTF-8 encoding of cp (values above U+10FFFF are written as U+FFFD).
inline void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp <= 0x7F) {
        out.push_back(static_cast<char>(cp));
    } else if (cp <= 0x7FF) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp <= 0xFFFF) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp <= 0x10FFFF) {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        append_utf8(out, 0xFFFD);
    }
}

inline std::string to_utf8(std::uint32_t cp) {
    std::string s;
    append_utf8(s, cp);
    return s;
}

// ---- GPT-2 byte-level mapping -----------------------------------------------------

// bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes in
// increasing order to U+0100, U+0101, ...
constexpr std::array<std::uint16_t, 256> make_byte_to_cp() noexcept {
    std::array<std::uint16_t, 256> t{};
    std::uint16_t n = 0;
    for (int b = 0; b < 256; ++b) {
        const bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        t[static_cast<std::size_t>(b)] = keep ? static_cast<std::uint16_t>(b) : static_cast<std::uint16_t>(256 + n++);
    }
    return t;
}
inline constexpr std::array<std::uint16_t, 256> byte_to_cp = make_byte_to_cp();

// Inverse of byte_to_cp: the byte for a code point, or -1.
constexpr int cp_to_byte(std::uint32_t cp) noexcept {
    if (cp < 256) {
        const bool keep = (cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE);
        return keep ? static_cast<int>(cp) : -1;
    }
    if (cp < 256 + 68) {
        for (int b = 0; b < 256; ++b)
            if (byte_to_cp[static_cast<std::size_t>(b)] == cp) return b;
    }
    return -1;
}

}  // namespace text
TESSERA_END_NAMESPACE
