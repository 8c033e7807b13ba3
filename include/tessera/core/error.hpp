// tessera::error: the one exception type the library throws on bad input or misuse.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tessera/config.hpp"

TESSERA_BEGIN_NAMESPACE

// What kind of failure an error reports; lets callers react without parsing text.
enum class errc : std::uint8_t {
    invalid_argument,  // a value outside what the function accepts
    shape_mismatch,    // extents, strides or ranks that do not fit together
    unsupported,       // a type, op or arch that exists but is not implemented here
    format,            // a malformed file or byte stream (GGUF, tokenizer data)
    io,                // the operating system refused (open, mmap, read)
    out_of_memory,     // an allocation or a plan that does not fit
    aborted,           // a compute stopped by its abort callback
};

constexpr std::string_view errc_name(errc c) noexcept {
    switch (c) {
        case errc::invalid_argument: return "invalid argument";
        case errc::shape_mismatch: return "shape mismatch";
        case errc::unsupported: return "unsupported";
        case errc::format: return "format error";
        case errc::io: return "i/o error";
        case errc::out_of_memory: return "out of memory";
        case errc::aborted: return "aborted";
    }
    return "error";
}

class error : public std::runtime_error {
public:
    error(errc code, const std::string& what) : std::runtime_error(what), code_(code) {}
    errc code() const noexcept { return code_; }

private:
    errc code_;
};

// Throws tessera::error(code, message). Kept out of line of hot code paths.
[[noreturn]] inline void fail(errc code, const std::string& message) { throw error(code, message); }

namespace detail {
// One piece of an error message: text, or an integer formatted only when the error is
// raised. fail_cat builds its message from these in one out-of-line function, so a
// check costs its caller a call, not the inline string concatenations.
class msg_part {
public:
    constexpr msg_part(std::string_view s) noexcept : text_(s) {}  // NOLINT: implicit by design
    constexpr msg_part(const char* s) noexcept : text_(s) {}       // NOLINT
    msg_part(const std::string& s) noexcept : text_(s) {}          // NOLINT
    template <std::integral I>
        requires(!std::same_as<I, bool> && !std::same_as<I, char>)
    constexpr msg_part(I v) noexcept  // NOLINT
        : kind_(std::is_signed_v<I> ? kind::signed_int : kind::unsigned_int),
          bits_(static_cast<std::uint64_t>(v)) {}

    void append_to(std::string& out) const {
        switch (kind_) {
            case kind::text: out += text_; break;
            case kind::signed_int: out += std::to_string(static_cast<std::int64_t>(bits_)); break;
            case kind::unsigned_int: out += std::to_string(bits_); break;
        }
    }

private:
    enum class kind : std::uint8_t { text, signed_int, unsigned_int };
    kind kind_ = kind::text;
    std::string_view text_;
    std::uint64_t bits_ = 0;
};

[[noreturn, gnu::cold, gnu::noinline]] inline void fail_parts(errc code, std::initializer_list<msg_part> parts) {
    std::string message;
    for (const msg_part& p : parts) p.append_to(message);
    throw error(code, message);
}
}  // namespace detail

// Throws tessera::error(code, the parts written one after another): text and integers,
// e.g. fail_cat(errc::shape_mismatch, "row of ", n, " elements").
template <class... Parts>
[[noreturn]] inline void fail_cat(errc code, const Parts&... parts) {
    detail::fail_parts(code, {detail::msg_part(parts)...});
}

// A byte count for messages: "1310720 bytes (1.25 MiB)" (exact bytes, then a readable size).
inline std::string bytes_str(std::uint64_t n) {
    static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::string s = std::to_string(n) + (n == 1 ? " byte" : " bytes");
    if (n < 1024) return s;
    double v = static_cast<double>(n);
    int u = -1;
    while (v >= 1024.0 && u < 5) v /= 1024.0, ++u;
    char buf[32];
    const int k = std::snprintf(buf, sizeof buf, " (%.2f %s)", v, units[u]);
    return s + std::string(buf, static_cast<std::size_t>(k > 0 ? k : 0));
}

// Checks a precondition on user input; the message says what was wrong and where.
inline void require(bool ok, errc code, const char* message) {
    if (!ok) [[unlikely]]
        fail(code, message);
}

TESSERA_END_NAMESPACE
