// gguf_info: prints a GGUF file's header, metadata and tensor table, in the manner of
// gguf-py's gguf-dump, or all of it as one JSON document (--json). Exits 1 with the
// reader's error on stderr (one line) for a bad file, 2 on bad usage.
//
//   gguf_info [--json] [--no-tensors] [--max-array N] [--max-string N] model.gguf
//
// The JSON form (docs/gguf.md has an example):
//   {"file": PATH, "file_size": BYTES, "version": 3, "alignment": 32, "data_offset": BYTES,
//    "tensor_count": N, "kv_count": N,
//    "metadata": {KEY: {"type": "UINT32", "value": 5},
//                 KEY: {"type": "ARRAY", "element_type": "STRING", "count": N, "value": [...]}, ...},
//    "tensors": [{"name": ..., "type": "Q4_0", "shape": [ne0, ...], "n_elements": N,
//                 "offset": BYTES, "size": BYTES}, ...],
//    "tensor_data_bytes": BYTES}
// in the file's order. Nothing is cut unless asked: --max-array / --max-string apply to
// JSON only when given, and an entry they cut gets "truncated": true. Strings are the
// file's bytes as UTF-8; a byte sequence that is not UTF-8 becomes U+FFFD (one per
// maximal invalid subpart, as Python's errors="replace"). A float that is not finite is
// the string "nan", "inf" or "-inf" (JSON has no such numbers); -0 is written -0.0. 64-bit integers are
// printed exactly (a JavaScript reader loses digits above 2^53).
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "../common/cli.hpp"
#include "tessera/gguf/reader.hpp"

namespace {
using namespace tessera;

// gguf-py's names for the value types.
const char* long_type_name(gguf::value_type t) {
    switch (t) {
        case gguf::value_type::u8: return "UINT8";
        case gguf::value_type::i8: return "INT8";
        case gguf::value_type::u16: return "UINT16";
        case gguf::value_type::i16: return "INT16";
        case gguf::value_type::u32: return "UINT32";
        case gguf::value_type::i32: return "INT32";
        case gguf::value_type::f32: return "FLOAT32";
        case gguf::value_type::boolean: return "BOOL";
        case gguf::value_type::string: return "STRING";
        case gguf::value_type::array: return "ARRAY";
        case gguf::value_type::u64: return "UINT64";
        case gguf::value_type::i64: return "INT64";
        case gguf::value_type::f64: return "FLOAT64";
    }
    return "?";
}

// "[[INT16]]" for an array of arrays of i16; "UINT32" for a scalar.
std::string pretty_type(const gguf::value& v) {
    int depth = 0;
    const gguf::value* cur = &v;
    while (cur->is_array()) {
        ++depth;
        if (cur->array_type() != gguf::value_type::array) {
            return std::string(static_cast<std::size_t>(depth), '[') + long_type_name(cur->array_type()) +
                   std::string(static_cast<std::size_t>(depth), ']');
        }
        const auto nested = cur->get_nested();
        if (nested.empty())
            return std::string(static_cast<std::size_t>(depth + 1), '[') + "?" +
                   std::string(static_cast<std::size_t>(depth + 1), ']');
        cur = &nested[0];
    }
    return long_type_name(v.type());
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

// --- JSON ---------------------------------------------------------------------------

// The length of the UTF-8 sequence at s[i] if valid, else 0 and in bad the length of its
// maximal invalid subpart (the bytes that start a valid sequence but stop short; at
// least 1), which becomes one U+FFFD.
std::size_t utf8_length(std::string_view s, std::size_t i, std::size_t& bad) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b >= 0xE0 && b <= 0xEF) n = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    else if (b >= 0xF0 && b <= 0xF4) n = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    bad = 1;
    if (n == 0) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        if (i + k >= s.size()) return 0;
        const auto c = static_cast<unsigned char>(s[i + k]);
        if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return 0;
        bad = k + 1;
    }
    return n;
}

// s as a JSON string, at most max_bytes of s (whole characters); truncated set if cut.
void json_string(std::string& out, std::string_view s, std::size_t max_bytes, bool& truncated) {
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        std::size_t bad = 0;
        const std::size_t n = utf8_length(s, i, bad);
        const std::size_t take = n ? n : bad;
        if (i + take > max_bytes) {
            truncated = true;
            break;
        }
        if (n == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD
        } else if (n > 1) {
            out.append(s.substr(i, n));
        } else {
            const char c = s[i];
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                default:
                    if (static_cast<unsigned char>(c) < 0x20) {
                        char b[8];
                        std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(c));
                        out += b;
                    } else {
                        out += c;
                    }
            }
        }
        i += take;
    }
    out += '"';
}

void json_string(std::string& out, std::string_view s) {
    bool ignored = false;
    json_string(out, s, s.size(), ignored);
}

template <class T>
void json_number(std::string& out, T v) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) return void(out += "\"nan\"");
        if (std::isinf(v)) return void(out += v > 0 ? "\"inf\"" : "\"-inf\"");
        if (v == 0 && std::signbit(v)) return void(out += "-0.0");  // (JSON readers take "-0" for the integer 0)
    }
    char b[64];
    const auto r = std::to_chars(b, b + sizeof b, v);  // shortest form that reads back exactly
    out.append(b, r.ptr);
}

struct json_limits {
    std::size_t max_array, max_string;
};

// A scalar of type t stored at p (numbers, bools) or s (strings).
void json_scalar(std::string& out, gguf::value_type t, const std::byte* p, std::string_view s, const json_limits& lim,
                 bool& truncated) {
    auto num = [&](auto v) {
        std::memcpy(&v, p, sizeof v);
        json_number(out, v);
    };
    switch (t) {
        case gguf::value_type::u8: num(std::uint8_t{}); break;
        case gguf::value_type::i8: num(std::int8_t{}); break;
        case gguf::value_type::u16: num(std::uint16_t{}); break;
        case gguf::value_type::i16: num(std::int16_t{}); break;
        case gguf::value_type::u32: num(std::uint32_t{}); break;
        case gguf::value_type::i32: num(std::int32_t{}); break;
        case gguf::value_type::u64: num(std::uint64_t{}); break;
        case gguf::value_type::i64: num(std::int64_t{}); break;
        case gguf::value_type::f32: num(float{}); break;
        case gguf::value_type::f64: num(double{}); break;
        case gguf::value_type::boolean: out += *p != std::byte{0} ? "true" : "false"; break;
        case gguf::value_type::string: json_string(out, s, lim.max_string, truncated); break;
        case gguf::value_type::array: out += "null"; break;  // (not reached: arrays go through json_value)
    }
}

template <class T>
void json_array_of(std::string& out, const gguf::value& v, std::size_t shown, const json_limits& lim, bool& truncated) {
    const auto xs = v.get_array<T>();
    for (std::size_t i = 0; i < shown; ++i) {
        if (i) out += ", ";
        json_scalar(out, v.array_type(), reinterpret_cast<const std::byte*>(&xs[i]), {}, lim, truncated);
    }
}

void json_value(std::string& out, const gguf::value& v, const json_limits& lim, bool& truncated) {
    if (!v.is_array()) {
        json_scalar(out, v.type(), v.payload().data(), v.type() == gguf::value_type::string ? v.get<std::string_view>() : "",
                    lim, truncated);
        return;
    }
    const std::size_t n = v.array_size();
    const std::size_t shown = std::min(n, lim.max_array);
    if (shown < n) truncated = true;
    out += '[';
    switch (v.array_type()) {
        case gguf::value_type::u8: json_array_of<std::uint8_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::i8: json_array_of<std::int8_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::u16: json_array_of<std::uint16_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::i16: json_array_of<std::int16_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::u32: json_array_of<std::uint32_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::i32: json_array_of<std::int32_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::u64: json_array_of<std::uint64_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::i64: json_array_of<std::int64_t>(out, v, shown, lim, truncated); break;
        case gguf::value_type::f32: json_array_of<float>(out, v, shown, lim, truncated); break;
        case gguf::value_type::f64: json_array_of<double>(out, v, shown, lim, truncated); break;
        case gguf::value_type::boolean: json_array_of<bool>(out, v, shown, lim, truncated); break;
        case gguf::value_type::string: {
            const auto xs = v.get_string_array();
            for (std::size_t i = 0; i < shown; ++i) {
                if (i) out += ", ";
                json_string(out, xs[i], lim.max_string, truncated);
            }
            break;
        }
        case gguf::value_type::array: {
            const auto xs = v.get_nested();
            for (std::size_t i = 0; i < shown; ++i) {
                if (i) out += ", ";
                json_value(out, xs[i], lim, truncated);
            }
            break;
        }
    }
    out += ']';
}

// The whole file as one JSON document (the format is at the top of this file).
std::string to_json(const char* path, const gguf::file& f, bool tensors, const json_limits& lim) {
    std::string out = "{\n  \"file\": ";
    json_string(out, path);
    auto field = [&](const char* name, std::uint64_t v) {
        out += ",\n  \"";
        out += name;
        out += "\": ";
        json_number(out, v);
    };
    field("file_size", f.bytes().size());
    field("version", f.version());
    field("alignment", f.alignment());
    field("data_offset", f.data_offset());
    field("tensor_count", f.tensors().size());
    field("kv_count", f.meta().size());
    out += ",\n  \"metadata\": {";
    bool first = true;
    for (const auto& e : f.meta()) {
        out += first ? "\n    " : ",\n    ";
        first = false;
        json_string(out, e.key);
        out += ": {\"type\": \"";
        out += long_type_name(e.val.type());
        out += '"';
        if (e.val.is_array()) {
            out += ", \"element_type\": \"";
            out += long_type_name(e.val.array_type());
            out += "\", \"count\": ";
            json_number(out, e.val.array_size());
        }
        out += ", \"value\": ";
        bool truncated = false;
        json_value(out, e.val, lim, truncated);
        if (truncated) out += ", \"truncated\": true";
        out += '}';
    }
    out += first ? "}" : "\n  }";
    if (tensors) {
        out += ",\n  \"tensors\": [";
        std::uint64_t total = 0;
        first = true;
        for (const auto& t : f.tensors()) {
            out += first ? "\n    " : ",\n    ";
            first = false;
            out += "{\"name\": ";
            json_string(out, t.name);
            out += ", \"type\": ";
            json_string(out, upper(type_name(t.type)));
            out += ", \"shape\": [";
            for (int d = 0; d < t.n_dims; ++d) {
                if (d) out += ", ";
                json_number(out, t.ne[static_cast<std::size_t>(d)]);
            }
            out += "], \"n_elements\": ";
            json_number(out, t.n_elements());
            out += ", \"offset\": ";
            json_number(out, t.offset);
            out += ", \"size\": ";
            json_number(out, t.size_bytes);
            out += '}';
            total += t.size_bytes;
        }
        out += first ? "]" : "\n  ]";
        field("tensor_data_bytes", total);
    }
    out += "\n}\n";
    return out;
}

constexpr const char* usage_text =
    "usage: gguf_info [options] FILE.gguf\n"
    "Prints the header, metadata and tensor table of a GGUF file.\n"
    "  --json            all of it as one JSON document (every array element and\n"
    "                    string byte unless --max-array / --max-string are given)\n"
    "  --no-tensors      do not print the tensor table\n"
    "  --max-array N     array elements shown per array (default 8; --json: all)\n"
    "  --max-string N    bytes shown per string (default 60; --json: all)\n"
    "  -h, --help        this help\n"
    "  --version         version, compiler and SIMD arch\n";

int run(int argc, char** argv, cli::state& st) {
    bool tensors = true, json = false;
    std::optional<std::size_t> max_array, max_string;
    const char* path = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "-h" || a == "--help") {
            std::fputs(usage_text, stdout);
            return 0;
        }
        if (a == "--version") {
            cli::print_version();
            return 0;
        }
        if (a == "--json") {
            json = true;
        } else if (a == "--no-tensors") {
            tensors = false;
        } else if (a == "--max-array" || a == "--max-string") {
            if (i + 1 >= argc) throw cli::usage_error(std::string(a) + " needs a value");
            const auto n = static_cast<std::size_t>(cli::to_int(a, argv[++i], 0, 1LL << 40));
            (a == "--max-array" ? max_array : max_string) = n;
        } else if (a.size() > 1 && a[0] == '-') {
            throw cli::unknown_option(a);
        } else if (path == nullptr) {
            path = argv[i];
        } else {
            throw cli::usage_error("more than one file given ('" + std::string(path) + "', '" + std::string(a) + "')");
        }
    }
    if (path == nullptr) throw cli::usage_error("no FILE.gguf given");

    st.file = path;
    const auto f = gguf::file::open(path);
    if (json) {
        const std::size_t all = std::numeric_limits<std::size_t>::max();
        const std::string doc = to_json(path, f, tensors, {max_array.value_or(all), max_string.value_or(all)});
        std::fwrite(doc.data(), 1, doc.size(), stdout);
        return 0;
    }
    const auto& m = f.meta();
    std::printf("* File: %s (%zu bytes)\n", path, f.bytes().size());
    std::printf("* GGUF version %u, little-endian, alignment %u, data section at offset %llu\n", f.version(),
                f.alignment(), static_cast<unsigned long long>(f.data_offset()));
    // Like gguf-dump: three pseudo-keys for the header, then the file's pairs.
    std::printf("* Dumping %zu key/value pair(s)\n", m.size() + 3);
    std::printf("  %5d: %-10s | %8d | GGUF.version = %u\n", 1, "UINT32", 1, f.version());
    std::printf("  %5d: %-10s | %8d | GGUF.tensor_count = %zu\n", 2, "UINT64", 1, f.tensors().size());
    std::printf("  %5d: %-10s | %8d | GGUF.kv_count = %zu\n", 3, "UINT64", 1, m.size());
    int n = 4;
    for (const auto& e : m) {
        const std::size_t count = e.val.is_array() ? e.val.array_size() : 1;
        const std::string value = e.val.to_string(max_array.value_or(8), max_string.value_or(60));
        std::printf("  %5d: %-10s | %8zu | %.*s = %s\n", n++, pretty_type(e.val).c_str(), count,
                    static_cast<int>(e.key.size()), e.key.data(), value.c_str());
    }
    if (tensors) {
        std::printf("* Dumping %zu tensor(s)\n", f.tensors().size());
        n = 1;
        std::uint64_t total = 0;
        for (const auto& t : f.tensors()) {
            std::printf("  %5d: %10lld | %5lld, %5lld, %5lld, %5lld | %-7s | %s\n", n++,
                        static_cast<long long>(t.n_elements()), static_cast<long long>(t.ne[0]),
                        static_cast<long long>(t.ne[1]), static_cast<long long>(t.ne[2]),
                        static_cast<long long>(t.ne[3]), upper(type_name(t.type)).c_str(), t.name.c_str());
            total += t.size_bytes;
        }
        std::printf("* Tensor data: %llu bytes\n", static_cast<unsigned long long>(total));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return cli::run("gguf_info", "", [&](cli::state& st) { return run(argc, argv, st); });
}
