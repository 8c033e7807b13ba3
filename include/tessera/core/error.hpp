// tessera::error: the one exception type the library throws on bad input or misuse.
#pragma once

#include <cstdint>
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

// Checks a precondition on user input; the message says what was wrong and where.
inline void require(bool ok, errc code, const char* message) {
    if (!ok) [[unlikely]]
        fail(code, message);
}

TESSERA_END_NAMESPACE
