// GGUF on-disk constants and the metadata value types, numbered as the GGUF spec numbers
// them. Shared by the reader and the writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "tessera/config.hpp"

TESSERA_BEGIN_NAMESPACE
namespace gguf {

// "GGUF" as the first four bytes of a file.
inline constexpr std::byte magic[4] = {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}};
inline constexpr std::uint32_t current_version = 3;  // what the writer writes
inline constexpr std::uint32_t min_version = 2;      // v1 (32-bit counts) is no longer read
inline constexpr std::uint32_t default_alignment = 32;
inline constexpr std::string_view alignment_key = "general.alignment";
inline constexpr int max_dims = 4;                 // ggml's GGML_MAX_DIMS
inline constexpr std::size_t max_name_size = 64;   // ggml's GGML_MAX_NAME, including its NUL:
                                                   // tensor names have at most 63 bytes
inline constexpr int max_array_depth = 16;         // nesting limit for arrays of arrays

// Metadata value types (GGUF's gguf_type).
enum class value_type : std::uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
    string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
inline constexpr std::uint32_t value_type_count = 13;

constexpr bool is_valid_value_type(std::uint64_t raw) noexcept { return raw < value_type_count; }

// GGUF's short names: u8 i8 u16 i16 u32 i32 f32 bool str arr u64 i64 f64.
constexpr std::string_view value_type_name(value_type t) noexcept {
    switch (t) {
        case value_type::u8: return "u8";
        case value_type::i8: return "i8";
        case value_type::u16: return "u16";
        case value_type::i16: return "i16";
        case value_type::u32: return "u32";
        case value_type::i32: return "i32";
        case value_type::f32: return "f32";
        case value_type::boolean: return "bool";
        case value_type::string: return "str";
        case value_type::array: return "arr";
        case value_type::u64: return "u64";
        case value_type::i64: return "i64";
        case value_type::f64: return "f64";
    }
    return "?";
}

// Bytes of one value of a fixed-size type; 0 for string and array.
constexpr std::size_t value_type_size(value_type t) noexcept {
    switch (t) {
        case value_type::u8: case value_type::i8: case value_type::boolean: return 1;
        case value_type::u16: case value_type::i16: return 2;
        case value_type::u32: case value_type::i32: case value_type::f32: return 4;
        case value_type::u64: case value_type::i64: case value_type::f64: return 8;
        case value_type::string: case value_type::array: return 0;
    }
    return 0;
}

// The smallest number of bytes a value of type t occupies in a file (a string is at
// least its u64 length; an array at least its element type and count).
constexpr std::size_t min_encoded_size(value_type t) noexcept {
    if (t == value_type::string) return 8;
    if (t == value_type::array) return 12;
    return value_type_size(t);
}

// C++ type <-> value type. Defined for the integer types (by size and signedness, so
// long long maps like std::int64_t; the character types are excluded), float, double,
// bool, and the string types (std::string_view, std::string) which map to
// value_type::string.
template <class T>
struct value_type_of;  // primary template: "T is not a GGUF metadata type"

namespace detail {
template <class T>
inline constexpr bool is_gguf_integer =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> && !std::is_same_v<T, wchar_t> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

constexpr value_type integer_value_type(std::size_t size, bool is_signed) noexcept {
    switch (size) {
        case 1: return is_signed ? value_type::i8 : value_type::u8;
        case 2: return is_signed ? value_type::i16 : value_type::u16;
        case 4: return is_signed ? value_type::i32 : value_type::u32;
        default: return is_signed ? value_type::i64 : value_type::u64;
    }
}
}  // namespace detail

template <class T>
    requires(detail::is_gguf_integer<T> && sizeof(T) <= 8)
struct value_type_of<T> {
    static constexpr value_type value = detail::integer_value_type(sizeof(T), std::is_signed_v<T>);
};
template <> struct value_type_of<float> { static constexpr value_type value = value_type::f32; };
template <> struct value_type_of<double> { static constexpr value_type value = value_type::f64; };
template <> struct value_type_of<bool> { static constexpr value_type value = value_type::boolean; };
template <> struct value_type_of<std::string_view> { static constexpr value_type value = value_type::string; };
template <> struct value_type_of<std::string> { static constexpr value_type value = value_type::string; };

// A fixed-size element type of GGUF metadata (numbers and bool).
template <class T>
concept scalar_value = requires { value_type_of<T>::value; } && (std::is_arithmetic_v<T>);

// Any type get<T>() accepts: scalars and the two string types.
template <class T>
concept metadata_value = requires { value_type_of<T>::value; };

template <class T>
inline constexpr value_type value_type_v = value_type_of<T>::value;

static_assert(value_type_v<std::uint8_t> == value_type::u8 && value_type_v<std::int16_t> == value_type::i16 &&
              value_type_v<std::uint32_t> == value_type::u32 && value_type_v<long long> == value_type::i64 &&
              value_type_v<unsigned long> == value_type::u64 && value_type_v<bool> == value_type::boolean);

// Rounds n up to a multiple of a power-of-two alignment (callers check overflow).
constexpr std::uint64_t pad_to(std::uint64_t n, std::uint64_t alignment) noexcept {
    return (n + alignment - 1) / alignment * alignment;
}

constexpr bool is_power_of_two(std::uint64_t x) noexcept { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace gguf
TESSERA_END_NAMESPACE
