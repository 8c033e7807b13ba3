// GGUF metadata as read from a file: typed values (views into the file's bytes) and an
// ordered key/value store with typed, checked access.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/gguf/format.hpp"

TESSERA_BEGIN_NAMESPACE
namespace gguf {

namespace detail {
struct parser;
}

// A read-only view of a string array: size(), operator[], at() (checked), iteration.
// Converts implicitly to std::vector<std::string_view>. The strings are views into
// the file and live as long as the gguf::file they came from.
class string_array {
public:
    using value_type = std::string_view;
    using const_iterator = const std::string_view*;
    using iterator = const_iterator;

    string_array() noexcept = default;
    explicit string_array(std::span<const std::string_view> s) noexcept : s_(s) {}

    std::size_t size() const noexcept { return s_.size(); }
    bool empty() const noexcept { return s_.empty(); }
    std::string_view operator[](std::size_t i) const noexcept { return s_[i]; }
    std::string_view at(std::size_t i) const {
        if (i >= s_.size())
            fail(errc::invalid_argument, "string array index " + std::to_string(i) + " out of range (size " +
                                             std::to_string(s_.size()) + ")");
        return s_[i];
    }
    const_iterator begin() const noexcept { return s_.data(); }
    const_iterator end() const noexcept { return s_.data() + s_.size(); }
    std::span<const std::string_view> span() const noexcept { return s_; }
    operator std::vector<std::string_view>() const { return {s_.begin(), s_.end()}; }

private:
    std::span<const std::string_view> s_;
};

namespace detail {
// Appends a string as a quoted literal, escaping quotes, backslashes and control bytes.
inline void append_quoted(std::string& out, std::string_view s, std::size_t max_bytes) {
    out += '\'';
    std::size_t n = 0;
    for (char ch : s) {
        if (n++ == max_bytes) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '\'': out += "\\'"; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    static constexpr char hex[] = "0123456789abcdef";
                    out += "\\x";
                    out += hex[c >> 4];
                    out += hex[c & 15];
                } else {
                    out += ch;
                }
        }
    }
    out += '\'';
}

// s as a quoted, escaped literal of at most max_bytes bytes, for error messages.
inline std::string quote(std::string_view s, std::size_t max_bytes = 96) {
    std::string out;
    append_quoted(out, s, max_bytes);
    return out;
}

[[noreturn]] inline void type_mismatch(std::string_view key, value_type have, std::string_view want) {
    fail(errc::invalid_argument, "gguf: key " + quote(key) + " has type " +
                                     std::string(value_type_name(have)) + ", not " + std::string(want));
}
[[noreturn]] inline void array_type_mismatch(std::string_view key, value_type have, value_type want) {
    fail(errc::invalid_argument, "gguf: key " + quote(key) + " is an array of " +
                                     std::string(value_type_name(have)) + ", not of " +
                                     std::string(value_type_name(want)));
}

template <class T>
void append_number(std::string& out, T v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}
}  // namespace detail

// One metadata value: a scalar, a string or an array (of scalars, strings or arrays).
// Strings and aligned numeric arrays are views into the file's bytes; a value lives as
// long as the gguf::file (or the buffer) it was read from.
class value {
public:
    value() = default;

    value_type type() const noexcept { return type_; }
    bool is_array() const noexcept { return type_ == value_type::array; }
    // File offset of the encoded value (just after its type tag).
    std::uint64_t offset() const noexcept { return offset_; }
    // The encoded bytes after the type tag, exactly as in the file (for copying).
    std::span<const std::byte> payload() const noexcept { return payload_; }

    // The value as T, which must match the stored type exactly (T = std::uint8_t ...
    // std::int64_t, float, double, bool, std::string_view, std::string).
    template <metadata_value T>
    T get(std::string_view key = "<value>") const {
        constexpr value_type want = value_type_v<T>;
        if (type_ != want) detail::type_mismatch(key, type_, value_type_name(want));
        if constexpr (std::is_same_v<T, std::string_view>) {
            return str_;
        } else if constexpr (std::is_same_v<T, std::string>) {
            return std::string(str_);
        } else if constexpr (std::is_same_v<T, bool>) {
            return payload_[0] != std::byte{0};
        } else {
            T v;
            std::memcpy(&v, payload_.data(), sizeof v);
            return v;
        }
    }

    // Element type and length of an array; throws invalid_argument if not an array.
    value_type array_type(std::string_view key = "<value>") const {
        require_array(key);
        return elem_;
    }
    std::size_t array_size(std::string_view key = "<value>") const {
        require_array(key);
        return static_cast<std::size_t>(count_);
    }

    // The elements of a numeric or bool array whose element type is exactly T.
    // Zero-copy when the file bytes are aligned for T; otherwise a copy made at load.
    template <scalar_value T>
    std::span<const T> get_array(std::string_view key = "<value>") const {
        require_array(key);
        if (elem_ != value_type_v<T>) detail::array_type_mismatch(key, elem_, value_type_v<T>);
        const std::byte* p = owned_ ? copy_.data() : payload_.data() + 12;
        return {reinterpret_cast<const T*>(p), static_cast<std::size_t>(count_)};
    }

    // The elements of a string array.
    string_array get_string_array(std::string_view key = "<value>") const {
        require_array(key);
        if (elem_ != value_type::string) detail::array_type_mismatch(key, elem_, value_type::string);
        return string_array(strings_);
    }

    // The elements of an array of arrays (GGUF allows nesting; ggml does not write it).
    std::span<const value> get_nested(std::string_view key = "<value>") const {
        require_array(key);
        if (elem_ != value_type::array) detail::array_type_mismatch(key, elem_, value_type::array);
        return nested_;
    }

    // Human-readable rendering: numbers, true/false, quoted strings, arrays as
    // [a, b, c, ...] showing at most max_elements elements per array level.
    std::string to_string(std::size_t max_elements = 8, std::size_t max_string = 80) const {
        std::string out;
        append_to(out, max_elements, max_string);
        return out;
    }

    void append_to(std::string& out, std::size_t max_elements, std::size_t max_string) const {
        if (type_ != value_type::array) {
            append_scalar(out, type_, payload_.data(), str_, max_string);
            return;
        }
        out += '[';
        const std::size_t n = static_cast<std::size_t>(count_);
        const std::size_t shown = n < max_elements ? n : max_elements;
        for (std::size_t i = 0; i < shown; ++i) {
            if (i) out += ", ";
            if (elem_ == value_type::string) {
                detail::append_quoted(out, strings_[i], max_string);
            } else if (elem_ == value_type::array) {
                nested_[i].append_to(out, max_elements, max_string);
            } else {
                const std::byte* base = owned_ ? copy_.data() : payload_.data() + 12;
                append_scalar(out, elem_, base + i * value_type_size(elem_), {}, max_string);
            }
        }
        if (shown < n) out += shown ? ", ..." : "...";
        out += ']';
    }

private:
    friend struct detail::parser;

    void require_array(std::string_view key) const {
        if (type_ != value_type::array) detail::type_mismatch(key, type_, "arr");
    }

    static void append_scalar(std::string& out, value_type t, const std::byte* p, std::string_view s,
                              std::size_t max_string) {
        auto num = [&](auto v) {
            std::memcpy(&v, p, sizeof v);
            detail::append_number(out, v);
        };
        switch (t) {
            case value_type::u8: num(std::uint8_t{}); break;
            case value_type::i8: num(std::int8_t{}); break;
            case value_type::u16: num(std::uint16_t{}); break;
            case value_type::i16: num(std::int16_t{}); break;
            case value_type::u32: num(std::uint32_t{}); break;
            case value_type::i32: num(std::int32_t{}); break;
            case value_type::u64: num(std::uint64_t{}); break;
            case value_type::i64: num(std::int64_t{}); break;
            case value_type::f32: num(float{}); break;
            case value_type::f64: num(double{}); break;
            case value_type::boolean: out += (*p != std::byte{0}) ? "true" : "false"; break;
            case value_type::string: detail::append_quoted(out, s, max_string); break;
            case value_type::array: out += "[...]"; break;
        }
    }

    value_type type_ = value_type::u8;
    value_type elem_ = value_type::u8;  // arrays: element type
    std::uint64_t count_ = 0;           // arrays: element count
    std::uint64_t offset_ = 0;
    std::span<const std::byte> payload_;
    std::string_view str_;               // strings
    bool owned_ = false;                 // numeric arrays: elements live in copy_
    std::vector<std::byte> copy_;
    std::vector<std::string_view> strings_;  // string arrays
    std::vector<value> nested_;              // arrays of arrays
};

// The ordered key/value store of a GGUF file. Lookups are hashed; iteration follows
// the file's order. Accessors throw tessera::error(errc::invalid_argument) naming the
// key (and both types) for a missing key or a type mismatch.
class metadata {
public:
    struct entry {
        std::string_view key;
        gguf::value val;
        std::uint64_t offset = 0;  // file offset of the key
    };
    using const_iterator = std::vector<entry>::const_iterator;

    std::size_t size() const noexcept { return entries_.size(); }
    bool empty() const noexcept { return entries_.empty(); }
    const_iterator begin() const noexcept { return entries_.begin(); }
    const_iterator end() const noexcept { return entries_.end(); }
    std::span<const entry> entries() const noexcept { return entries_; }
    const entry& operator[](std::size_t i) const noexcept { return entries_[i]; }

    bool contains(std::string_view key) const { return index_.find(key) != index_.end(); }
    // Position of key in file order, or nullopt.
    std::optional<std::size_t> index_of(std::string_view key) const {
        auto it = index_.find(key);
        if (it == index_.end()) return std::nullopt;
        return it->second;
    }
    // The value of key, or nullptr when missing.
    const gguf::value* find_value(std::string_view key) const {
        auto it = index_.find(key);
        return it == index_.end() ? nullptr : &entries_[it->second].val;
    }
    // The value of key; throws when missing.
    const gguf::value& at(std::string_view key) const {
        if (const gguf::value* v = find_value(key)) return *v;
        missing(key);
    }

    value_type type_of(std::string_view key) const { return at(key).type(); }

    template <metadata_value T>
    T get(std::string_view key) const {
        return at(key).template get<T>(key);
    }
    template <metadata_value T>
    std::optional<T> find(std::string_view key) const {
        if (const gguf::value* v = find_value(key)) return v->template get<T>(key);
        return std::nullopt;
    }
    // get<T>(key) if present, else fallback (still throws on a wrong type).
    template <metadata_value T>
    T get_or(std::string_view key, T fallback) const {
        if (const gguf::value* v = find_value(key)) return v->template get<T>(key);
        return fallback;
    }

    template <scalar_value T>
    std::span<const T> get_array(std::string_view key) const {
        return at(key).template get_array<T>(key);
    }
    string_array get_string_array(std::string_view key) const { return at(key).get_string_array(key); }
    value_type array_type(std::string_view key) const { return at(key).array_type(key); }
    std::size_t array_size(std::string_view key) const { return at(key).array_size(key); }

private:
    friend struct detail::parser;

    [[noreturn]] void missing(std::string_view key) const {
        fail(errc::invalid_argument,
             "gguf: key " + detail::quote(key) + " not found in the metadata of " + source_);
    }

    std::vector<entry> entries_;
    std::unordered_map<std::string_view, std::size_t> index_;
    std::string source_ = "<unnamed>";
};

}  // namespace gguf
TESSERA_END_NAMESPACE
