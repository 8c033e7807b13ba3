// The IDX format of MNIST and Fashion-MNIST: a validating parser that converts the
// values to float.
//
//   auto a = tessera::opt::parse_idx(bytes, "train-images-idx3-ubyte");
//   // a.type == idx_type::u8, a.dims == {60000, 28, 28}, a.values.size() == 47040000
//
// The layout (all integers big-endian):
//   bytes 0, 1   zero
//   byte 2       the element type: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
//   byte 3       the number of dimensions
//   then         one u32 per dimension
//   then         the elements, row-major, each big-endian, and nothing after them
//
// Every malformed input is rejected with tessera::error(errc::format) whose message
// names the file (`what`), the byte offset and the reason: a short header, bad magic,
// an unknown type, 0 or too many dimensions, a zero dimension, an element count that
// overflows or exceeds the limit, truncated data (bytes expected and present), trailing
// bytes. Nothing is allocated before the data has been found to be all there, so memory
// use is bounded by 4 bytes per input byte. The conversion to float is exact for u8, i8,
// i16 and f32; i32 values beyond 2^24 are rounded and f64 values are rounded to float
// (overflowing to +-infinity). Compressed files are the caller's business: this header
// uses only the standard library (examples/train_mnist/mnist_io.hpp gunzips with zlib).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace opt {

// The element types of IDX; each enumerator's value is its type code (byte 2).
enum class idx_type : std::uint8_t {
    u8 = 0x08,
    i8 = 0x09,
    i16 = 0x0B,
    i32 = 0x0C,
    f32 = 0x0D,
    f64 = 0x0E,
};

constexpr std::string_view idx_type_name(idx_type t) noexcept {
    switch (t) {
        case idx_type::u8: return "u8";
        case idx_type::i8: return "i8";
        case idx_type::i16: return "i16";
        case idx_type::i32: return "i32";
        case idx_type::f32: return "f32";
        case idx_type::f64: return "f64";
    }
    return "?";
}

// Bytes per element of the type (0 for a value that is no IDX type).
constexpr std::size_t idx_type_size(idx_type t) noexcept {
    switch (t) {
        case idx_type::u8:
        case idx_type::i8: return 1;
        case idx_type::i16: return 2;
        case idx_type::i32:
        case idx_type::f32: return 4;
        case idx_type::f64: return 8;
    }
    return 0;
}

// What parse_idx accepts. The defaults fit every MNIST-like file (3 dimensions at most)
// with room to spare.
struct idx_limits {
    int max_dims = 4;                              // 1..255
    std::uint64_t max_elements = std::uint64_t{1} << 31;  // product of the dimensions
};

// A parsed IDX file: its type, its dimensions (outermost first) and its elements
// converted to float, row-major; values.size() is the product of dims.
struct idx_array {
    idx_type type = idx_type::u8;
    std::vector<std::int64_t> dims;
    std::vector<float> values;

    std::int64_t n_elements() const noexcept { return static_cast<std::int64_t>(values.size()); }
};

namespace detail {

inline std::string idx_hex_byte(std::uint8_t v) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s = "0x";
    s += digits[v >> 4];
    s += digits[v & 15u];
    return s;
}

inline std::string idx_dims_string(std::span<const std::int64_t> dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(dims[i]);
    }
    return s + "]";
}

template <class... Parts>
[[noreturn]] void idx_fail(std::string_view what, std::uint64_t offset, const Parts&... parts) {
    fail_cat(errc::format, "idx file '", what, "': offset ", offset, ": ", parts...);
}

inline std::uint32_t idx_be32(const std::byte* p) noexcept {
    return (std::uint32_t{std::to_integer<std::uint8_t>(p[0])} << 24) |
           (std::uint32_t{std::to_integer<std::uint8_t>(p[1])} << 16) |
           (std::uint32_t{std::to_integer<std::uint8_t>(p[2])} << 8) | std::uint32_t{std::to_integer<std::uint8_t>(p[3])};
}

inline std::uint64_t idx_be64(const std::byte* p) noexcept {
    return (std::uint64_t{idx_be32(p)} << 32) | idx_be32(p + 4);
}

// Converts n big-endian elements of type t at p to float.
inline void idx_convert(idx_type t, const std::byte* p, std::size_t n, float* out) noexcept {
    switch (t) {
        case idx_type::u8:
            for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::to_integer<std::uint8_t>(p[i]));
            break;
        case idx_type::i8:
            for (std::size_t i = 0; i < n; ++i)
                out[i] = static_cast<float>(static_cast<std::int8_t>(std::to_integer<std::uint8_t>(p[i])));
            break;
        case idx_type::i16:
            for (std::size_t i = 0; i < n; ++i) {
                const auto hi = std::to_integer<std::uint8_t>(p[2 * i]);
                const auto lo = std::to_integer<std::uint8_t>(p[2 * i + 1]);
                out[i] = static_cast<float>(static_cast<std::int16_t>(static_cast<std::uint16_t>((hi << 8) | lo)));
            }
            break;
        case idx_type::i32:
            for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<std::int32_t>(idx_be32(p + 4 * i)));
            break;
        case idx_type::f32:
            for (std::size_t i = 0; i < n; ++i) out[i] = std::bit_cast<float>(idx_be32(p + 4 * i));
            break;
        case idx_type::f64:
            for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::bit_cast<double>(idx_be64(p + 8 * i)));
            break;
    }
}

}  // namespace detail

// Parses one IDX file held in memory; `what` names it in error messages (a file name).
inline idx_array parse_idx(std::span<const std::byte> bytes, std::string_view what, const idx_limits& limits = {}) {
    using detail::idx_fail;
    static_assert(sizeof(float) == 4 && sizeof(double) == 8 && std::numeric_limits<float>::is_iec559,
                  "IDX's f32/f64 are IEEE 754 binary32/binary64");
    if (limits.max_dims < 1 || limits.max_dims > 255 || limits.max_elements == 0)
        fail(errc::invalid_argument, "parse_idx: limits need max_dims in 1..255 and max_elements >= 1");
    const std::size_t size = bytes.size();
    const std::byte* p = bytes.data();

    // Magic: two zero bytes, the type code, the number of dimensions.
    if (size < 4) idx_fail(what, 0, "short header: the magic needs 4 bytes, only ", size, " present");
    const auto b0 = std::to_integer<std::uint8_t>(p[0]);
    const auto b1 = std::to_integer<std::uint8_t>(p[1]);
    if (b0 == 0x1f && b1 == 0x8b)
        idx_fail(what, 0, "bad magic 0x1f 0x8b: this is a gzip file, decompress it first");
    if (b0 != 0 || b1 != 0)
        idx_fail(what, b0 != 0 ? 0 : 1, "bad magic ", detail::idx_hex_byte(b0), " ", detail::idx_hex_byte(b1),
                 ": an IDX file starts with two zero bytes");
    const auto code = std::to_integer<std::uint8_t>(p[2]);
    const auto type = static_cast<idx_type>(code);
    if (idx_type_size(type) == 0)
        idx_fail(what, 2, "unknown type code ", detail::idx_hex_byte(code),
                 " (known: 0x08 u8, 0x09 i8, 0x0b i16, 0x0c i32, 0x0d f32, 0x0e f64)");
    const int n_dims = std::to_integer<std::uint8_t>(p[3]);
    if (n_dims == 0) idx_fail(what, 3, "0 dimensions (at least 1 needed)");
    if (n_dims > limits.max_dims) idx_fail(what, 3, n_dims, " dimensions, more than the limit of ", limits.max_dims);

    // Dimensions.
    const std::size_t header = 4 + 4 * static_cast<std::size_t>(n_dims);
    if (size < header)
        idx_fail(what, 4 + (size - 4) / 4 * 4, "short header: ", n_dims, " dimensions need ", header,
                 " header bytes, only ", size, " present");
    idx_array a;
    a.type = type;
    a.dims.resize(static_cast<std::size_t>(n_dims));
    std::uint64_t count = 1;
    bool overflow = false;
    for (int i = 0; i < n_dims; ++i) {
        const std::size_t off = 4 + 4 * static_cast<std::size_t>(i);
        const std::uint32_t d = detail::idx_be32(p + off);
        if (d == 0) idx_fail(what, off, "dimension ", i, " is 0");
        a.dims[static_cast<std::size_t>(i)] = d;
        if (count > std::numeric_limits<std::uint64_t>::max() / d) overflow = true;
        count *= d;  // wraps when overflow is set; unsigned, so defined and then unused
    }
    if (overflow)
        idx_fail(what, 4, "dimensions ", detail::idx_dims_string(a.dims), ": the element count overflows 64 bits");
    if (count > limits.max_elements)
        idx_fail(what, 4, "dimensions ", detail::idx_dims_string(a.dims), " make ", count,
                 " elements, more than the limit of ", limits.max_elements);

    // Data: exactly count elements.
    const std::uint64_t esize = idx_type_size(type);
    const std::uint64_t present = size - header;
    if (count > present / esize)  // also catches a count * esize that would overflow
        idx_fail(what, header, "truncated data: ", count, " elements of ", idx_type_name(type), " need ",
                 count > std::numeric_limits<std::uint64_t>::max() / esize ? std::string("more than 2^64")
                                                                         : std::to_string(count * esize),
                 " bytes, only ", present, " present");
    const std::uint64_t need = count * esize;
    if (present != need)
        idx_fail(what, header + need, present - need, " trailing bytes after the data (", count, " elements of ",
                 idx_type_name(type), " end at offset ", header + need, ", the file has ", size, " bytes)");

    a.values.resize(static_cast<std::size_t>(count));
    detail::idx_convert(type, p + header, a.values.size(), a.values.data());
    return a;
}

}  // namespace opt
TESSERA_END_NAMESPACE
