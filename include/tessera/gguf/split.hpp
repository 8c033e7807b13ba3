// Models stored in several GGUF files, as llama.cpp's gguf-split and `llama-quantize
// --keep-split` write them: model-00001-of-00003.gguf, model-00002-of-00003.gguf, ...
//
//   auto parts = tessera::gguf::open_split("model-00001-of-00003.gguf");  // every part
//   auto one = tessera::gguf::open_split("model.gguf");                    // one part
//   tessera::gguf::split_path("out", 1, 3) == "out-00002-of-00003.gguf"
//
// The format (llama.cpp's conventions): every part carries `split.no` (u16, 0-based),
// `split.count` (u16) and `split.tensors.count` (i32, the tensors of all parts); the
// first part also holds the model's metadata; each tensor is in exactly one part. A
// part's name is PREFIX-NNNNN-of-MMMMM.gguf with its 1-based number and the count,
// five digits each.
//
// open_split opens the part it is given and, when that part says split.count > 1, the
// other parts named after it (from files, or through a caller's function: the fuzzer
// gives parts from memory). It refuses, naming the file and the key: a part given that
// is not the first, a name without the -NNNNN-of-MMMMM.gguf ending, a missing part, a
// part whose split.no or split.count disagrees, a tensor name in two parts, and a total
// tensor count other than split.tensors.count.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/gguf/reader.hpp"

TESSERA_BEGIN_NAMESPACE
namespace gguf {

inline constexpr std::string_view split_no_key = "split.no";
inline constexpr std::string_view split_count_key = "split.count";
inline constexpr std::string_view split_tensors_count_key = "split.tensors.count";
inline constexpr int max_split_count = 65535;  // split.count is a u16

// The name of part `no` (0-based) of `count`: PREFIX-NNNNN-of-MMMMM.gguf.
inline std::string split_path(std::string_view prefix, int no, int count) {
    if (count < 1 || count > max_split_count || no < 0 || no >= count)
        fail(errc::invalid_argument, "gguf::split_path: part " + std::to_string(no) + " of " + std::to_string(count) +
                                         " (need 0 <= part < count <= " + std::to_string(max_split_count) + ")");
    char tail[40];
    std::snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", no + 1, count);
    return std::string(prefix) + tail;
}

// The prefix of `path` when it is part `no` of `count` (split_path's inverse), else nullopt.
inline std::optional<std::string> split_prefix(std::string_view path, int no, int count) {
    if (count < 1 || count > max_split_count || no < 0 || no >= count) return std::nullopt;
    const std::string tail = split_path("", no, count);
    if (path.size() <= tail.size() || !path.ends_with(tail)) return std::nullopt;
    return std::string(path.substr(0, path.size() - tail.size()));
}

namespace detail {
// A split key's integer value (any integer type), or nullopt when absent; a
// non-integer or out-of-range value is a format error naming the file.
inline std::optional<std::int64_t> split_key(const file& f, std::string_view key, std::int64_t max) {
    const value* v = f.meta().find_value(key);
    if (v == nullptr) return std::nullopt;
    std::int64_t n = 0;
    switch (v->type()) {
        case value_type::u8: n = v->get<std::uint8_t>(key); break;
        case value_type::i8: n = v->get<std::int8_t>(key); break;
        case value_type::u16: n = v->get<std::uint16_t>(key); break;
        case value_type::i16: n = v->get<std::int16_t>(key); break;
        case value_type::u32: n = v->get<std::uint32_t>(key); break;
        case value_type::i32: n = v->get<std::int32_t>(key); break;
        case value_type::u64: n = v->get<std::uint64_t>(key) > static_cast<std::uint64_t>(max) ? max + 1 : static_cast<std::int64_t>(v->get<std::uint64_t>(key)); break;
        case value_type::i64: n = v->get<std::int64_t>(key); break;
        default:
            fail(errc::format, "gguf split '" + f.source() + "': key '" + std::string(key) + "' is a " +
                                   std::string(value_type_name(v->type())) + ", not an integer");
    }
    if (n < 0 || n > max)
        fail(errc::format, "gguf split '" + f.source() + "': " + std::string(key) + " = " + std::to_string(n) +
                               " (must be 0.." + std::to_string(max) + ")");
    return n;
}
}  // namespace detail

// The parts of the model whose first part is `first` (named by its source()), the others
// opened by open_part(name); just `first` when it has no split.count or split.count = 1.
inline std::vector<file> open_split(file first, const std::function<file(const std::string&)>& open_part) {
    const std::string path = first.source();
    std::vector<file> parts;
    parts.push_back(std::move(first));
    const std::int64_t count = detail::split_key(parts[0], split_count_key, max_split_count).value_or(1);
    if (count <= 1) return parts;
    const auto no = detail::split_key(parts[0], split_no_key, max_split_count);
    if (!no)
        fail(errc::format, "gguf split '" + path + "': split.count = " + std::to_string(count) + " but no split.no key");
    if (*no != 0) {
        const auto pre = split_prefix(path, static_cast<int>(*no), static_cast<int>(count));
        fail(errc::invalid_argument, "gguf split '" + path + "' is part " + std::to_string(*no + 1) + " of " +
                                         std::to_string(count) + ": open the first part" +
                                         (pre ? ", " + split_path(*pre, 0, static_cast<int>(count)) : std::string()));
    }
    const auto prefix = split_prefix(path, 0, static_cast<int>(count));
    if (!prefix)
        fail(errc::invalid_argument, "gguf split '" + path + "': split.count = " + std::to_string(count) +
                                         " but the name does not end in " + split_path("", 0, static_cast<int>(count)) +
                                         ", so the other parts cannot be named");
    std::unordered_set<std::string> names;
    std::int64_t n_tensors = 0;
    auto add_names = [&](const file& f) {
        for (const tensor_info& t : f.tensors()) {
            if (!names.insert(t.name).second)
                fail(errc::format, "gguf split '" + f.source() + "': tensor '" + t.name + "' is also in an earlier part");
            ++n_tensors;
        }
    };
    add_names(parts[0]);
    for (int i = 1; i < count; ++i) {
        const std::string p = split_path(*prefix, i, static_cast<int>(count));
        parts.push_back(open_part(p));  // (file::open: a missing part is errc::io naming it)
        const file& f = parts.back();
        const auto fno = detail::split_key(f, split_no_key, max_split_count);
        const auto fcount = detail::split_key(f, split_count_key, max_split_count);
        if (!fno || *fno != i)
            fail(errc::format, "gguf split '" + p + "': split.no is " + (fno ? std::to_string(*fno) : std::string("missing")) +
                                   ", expected " + std::to_string(i));
        if (!fcount || *fcount != count)
            fail(errc::format, "gguf split '" + p + "': split.count is " + (fcount ? std::to_string(*fcount) : std::string("missing")) +
                                   ", the first part says " + std::to_string(count));
        add_names(f);
    }
    const auto expected = detail::split_key(parts[0], split_tensors_count_key, INT32_MAX);
    if (expected && *expected != n_tensors)
        fail(errc::format, "gguf split '" + path + "': split.tensors.count = " + std::to_string(*expected) + " but the " +
                               std::to_string(count) + " parts hold " + std::to_string(n_tensors) + " tensors");
    return parts;
}

// The parts of the model whose (first) file is `path` (mapped, as file::open).
inline std::vector<file> open_split(const std::string& path) {
    return open_split(file::open(path), [](const std::string& p) { return file::open(p); });
}

}  // namespace gguf
TESSERA_END_NAMESPACE
