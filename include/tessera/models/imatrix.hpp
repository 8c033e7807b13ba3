// Importance matrices (llama-imatrix's output) for the quantizers: its GGUF format and
// the legacy .dat, read into per-weight importance vectors (name -> n_per_row floats), and
// what llama-quantize records of them (quantize.imatrix.dataset and .chunks_count). Every
// count and length in a file is checked before it is used (fuzzed: tests/quantize_model/
// fuzz_imatrix.cpp); errors name the file, and the offset and entry for the .dat.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/gguf/reader.hpp"
#include "tessera/models/hparams.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

namespace detail {
// "tensor 'name' [shape] type", for the messages of the imatrix readers and the quantizer.
inline std::string tensor_label(const gguf::tensor_info& t) {
    return "tensor " + gguf::detail::quote(t.name) + " " + gguf::detail::shape_string(t.ne, t.n_dims) + " " +
           std::string(type_name(t.type));
}
}  // namespace detail

// Reads an importance matrix in llama-imatrix's GGUF format: for each weight W a tensor
// "W.in_sum2" (f32, ne = [n_per_row, n_mat]: sums of squared activations per column)
// and "W.counts" (f32, ne = [1, n_mat]: how many activations were summed). The result
// maps W to in_sum2 / counts (n_per_row * n_mat values, matrix after matrix); a matrix
// with count 0 gets weights 1 (no information). load_imatrix reads this or the legacy .dat.
inline std::unordered_map<std::string, std::vector<float>> load_imatrix_gguf(const std::string& path) {
    const gguf::file f = gguf::file::open(path);
    std::unordered_map<std::string, std::vector<float>> out;
    constexpr std::string_view sums_suffix = ".in_sum2", counts_suffix = ".counts";
    for (const auto& t : f.tensors()) {
        if (!t.name.ends_with(sums_suffix)) continue;
        const std::string base = t.name.substr(0, t.name.size() - sums_suffix.size());
        const std::string label = "load_imatrix_gguf: '" + path + "': " + detail::tensor_label(t);
        const auto* c = f.find_tensor(base + std::string(counts_suffix));
        if (c == nullptr) fail(errc::format, label + " has no '" + base + std::string(counts_suffix) + "' tensor");
        if (t.type != type_id::f32 || c->type != type_id::f32)
            fail(errc::format, label + " and " + detail::tensor_label(*c) + " must both be f32");
        const std::int64_t n = t.ne[0], n_mat = t.n_elements() / std::max<std::int64_t>(n, 1);
        if (c->n_elements() != n_mat)
            fail(errc::format, label + ": " + detail::tensor_label(*c) + " should hold " + std::to_string(n_mat) +
                                   " counts");
        std::vector<float> sums(static_cast<std::size_t>(t.n_elements())), counts(static_cast<std::size_t>(n_mat));
        std::memcpy(sums.data(), t.data, sums.size() * sizeof(float));
        std::memcpy(counts.data(), c->data, counts.size() * sizeof(float));
        for (std::int64_t m = 0; m < n_mat; ++m)
            for (std::int64_t j = 0; j < n; ++j) {
                float& v = sums[static_cast<std::size_t>(m * n + j)];
                const float k = counts[static_cast<std::size_t>(m)];
                v = k > 0 ? v / k : 1.0f;
            }
        out.emplace(base, std::move(sums));
    }
    for (const auto& t : f.tensors())
        if (t.name.ends_with(counts_suffix) &&
            !f.find_tensor(t.name.substr(0, t.name.size() - counts_suffix.size()) + std::string(sums_suffix)))
            fail(errc::format, "load_imatrix_gguf: '" + path + "': " + detail::tensor_label(t) + " has no .in_sum2 tensor");
    return out;
}

// What llama-quantize records of an imatrix file (quantize.imatrix.dataset and
// .chunks_count): the first of imatrix.datasets and imatrix.chunk_count, when present.
struct imatrix_metadata {
    std::string dataset;
    std::optional<std::uint32_t> chunks;
};
inline imatrix_metadata read_imatrix_metadata(const std::string& path) {
    const gguf::file f = gguf::file::open(path);
    imatrix_metadata m;
    if (const gguf::value* v = f.meta().find_value("imatrix.datasets");
        v && v->is_array() && v->array_type("imatrix.datasets") == gguf::value_type::string) {
        const auto a = v->get_string_array("imatrix.datasets");
        if (a.size() > 0) m.dataset = std::string(a[0]);
    }
    if (const auto c = detail::meta_int(f.meta(), "imatrix.chunk_count"); c && *c >= 0 && *c <= 0xffffffffll)
        m.chunks = static_cast<std::uint32_t>(*c);
    return m;
}

// Reads llama.cpp's legacy imatrix (.dat) from bytes: i32 entry count; per entry i32
// name length, the name, i32 ncall, i32 nval, nval f32 sums; then optionally i32 chunk
// count, i32 dataset name length and the name. The weights are sums / ncall (as
// llama-quantize divides them; ncall 0 leaves the sums). Every count and length is checked
// against the bytes left; errors name the offset and the entry. `what` names the source.
inline std::unordered_map<std::string, std::vector<float>> parse_imatrix_dat(std::span<const std::byte> b, const std::string& what,
                                                                            imatrix_metadata* meta = nullptr) {
    std::size_t at = 0;
    auto bad = [&](const std::string& why) -> void {
        fail(errc::format, "load_imatrix: '" + what + "': offset " + std::to_string(at) + ": " + why);
    };
    auto i32 = [&](const char* field) {
        if (b.size() - at < 4) bad(std::string("the file ends inside ") + field);
        std::int32_t v = 0;
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return v;
    };
    std::unordered_map<std::string, std::vector<float>> out;
    const std::int32_t n = i32("the entry count");
    if (n < 0 || static_cast<std::uint64_t>(n) > (b.size() - at) / 16) bad("entry count " + std::to_string(n) + " does not fit the file");
    for (std::int32_t e = 0; e < n; ++e) {
        const std::string entry = "entry " + std::to_string(e);
        const std::int32_t len = i32("a name length");
        if (len < 1 || static_cast<std::size_t>(len) > b.size() - at || len > 4096)
            bad(entry + ": name length " + std::to_string(len) + " (1..4096 and within the file)");
        std::string name(reinterpret_cast<const char*>(b.data() + at), static_cast<std::size_t>(len));
        at += static_cast<std::size_t>(len);
        if (name.find('\0') != std::string::npos) bad(entry + ": the name holds a NUL byte");
        const std::int32_t ncall = i32("a call count");
        const std::int32_t nval = i32("a value count");
        if (nval < 1 || static_cast<std::uint64_t>(nval) > (b.size() - at) / 4)
            bad(entry + " '" + name + "': value count " + std::to_string(nval) + " (at least 1 and within the file)");
        std::vector<float> v(static_cast<std::size_t>(nval));
        std::memcpy(v.data(), b.data() + at, v.size() * 4);
        at += v.size() * 4;
        for (float& x : v) {
            if (!std::isfinite(x)) bad(entry + " '" + name + "': a value is not finite");
            if (ncall > 0) x /= static_cast<float>(ncall);
        }
        if (!out.emplace(name, std::move(v)).second) bad(entry + ": '" + name + "' appears twice");
    }
    if (at < b.size()) {  // the newer legacy files: chunk count and dataset name
        const std::int32_t chunks = i32("the chunk count");
        const std::int32_t dlen = i32("the dataset name length");
        if (dlen < 0 || static_cast<std::size_t>(dlen) > b.size() - at) bad("dataset name length " + std::to_string(dlen) + " does not fit the file");
        if (meta) {
            meta->dataset.assign(reinterpret_cast<const char*>(b.data() + at), static_cast<std::size_t>(dlen));
            if (chunks >= 0) meta->chunks = static_cast<std::uint32_t>(chunks);
        }
        at += static_cast<std::size_t>(dlen);
        if (at != b.size()) bad(std::to_string(b.size() - at) + " bytes after the dataset name");
    }
    return out;
}

// An importance matrix in either of llama-imatrix's formats: GGUF (by its magic) or the
// legacy .dat; meta (optional) gets what llama-quantize records of it.
inline std::unordered_map<std::string, std::vector<float>> load_imatrix(const std::string& path, imatrix_metadata* meta = nullptr) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(errc::io, "load_imatrix: '" + path + "': cannot open");
    char magic[4] = {};
    f.read(magic, 4);
    if (f.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) {
        if (meta) *meta = read_imatrix_metadata(path);
        return load_imatrix_gguf(path);
    }
    f.clear();
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    if (size < 0 || size > (std::streamoff{1} << 32)) fail(errc::io, "load_imatrix: '" + path + "': cannot read its size, or over 4 GiB");
    std::vector<std::byte> bytes(static_cast<std::size_t>(size));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(bytes.data()), size);
    if (f.gcount() != size) fail(errc::io, "load_imatrix: '" + path + "': read failed");
    return parse_imatrix_dat(bytes, path, meta);
}

}  // namespace models
TESSERA_END_NAMESPACE
