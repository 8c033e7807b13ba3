// gguf_info: prints a GGUF file's header, metadata and tensor table, in the manner of
// gguf-py's gguf-dump. Exits 1 with the reader's error on stderr (one line) for a bad
// file, 2 on bad usage.
//
//   gguf_info [--no-tensors] [--max-array N] [--max-string N] model.gguf
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

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

constexpr const char* usage_text =
    "usage: gguf_info [options] FILE.gguf\n"
    "Prints the header, metadata and tensor table of a GGUF file.\n"
    "  --no-tensors      do not print the tensor table\n"
    "  --max-array N     array elements shown per array (default 8)\n"
    "  --max-string N    bytes shown per string (default 60)\n"
    "  -h, --help        this help\n";

int run(int argc, char** argv, cli::state& st) {
    bool tensors = true;
    std::size_t max_array = 8, max_string = 60;
    const char* path = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "-h" || a == "--help") {
            std::fputs(usage_text, stdout);
            return 0;
        }
        if (a == "--no-tensors") {
            tensors = false;
        } else if (a == "--max-array" || a == "--max-string") {
            if (i + 1 >= argc) throw cli::usage_error(std::string(a) + " needs a value");
            const auto n = static_cast<std::size_t>(cli::to_int(a, argv[++i], 0, 1LL << 40));
            (a == "--max-array" ? max_array : max_string) = n;
        } else if (a.size() > 1 && a[0] == '-') {
            throw cli::usage_error("unknown option '" + std::string(a) + "'");
        } else if (path == nullptr) {
            path = argv[i];
        } else {
            throw cli::usage_error("more than one file given ('" + std::string(path) + "', '" + std::string(a) + "')");
        }
    }
    if (path == nullptr) throw cli::usage_error("no FILE.gguf given");

    st.file = path;
    const auto f = gguf::file::open(path);
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
        const std::string value = e.val.to_string(max_array, max_string);
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
