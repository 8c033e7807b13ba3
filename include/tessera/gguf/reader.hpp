// The GGUF reader: memory-maps a file (or reads a caller's buffer), validates every
// field, and exposes the metadata and zero-copy tensor views into the bytes.
//
//   auto f = tessera::gguf::file::open("model.gguf");
//   auto arch = f.meta().get<std::string_view>("general.architecture");
//   for (const auto& t : f.tensors()) use(t.name, t.type, t.ne, t.data, t.size_bytes);
//
// Every malformed input is rejected with tessera::error(errc::format) whose message
// names the file, the byte offset and the key or tensor concerned; OS failures raise
// errc::io. Nothing is allocated from a count before the count has been checked
// against the bytes that remain, so memory use is bounded by a small multiple of the
// input size.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/gguf/format.hpp"
#include "tessera/gguf/metadata.hpp"
#include "tessera/core/mapped_file.hpp"

TESSERA_BEGIN_NAMESPACE
namespace gguf {

using tessera::mapped_file;  // (core/mapped_file.hpp; it was gguf::mapped_file first)

static_assert(std::endian::native == std::endian::little,
              "tessera's GGUF reader reads little-endian files on a little-endian host");

// One tensor of a GGUF file. ne is padded with 1s to four entries; data points into
// the file's bytes (the mapping or the caller's buffer) and lives as long as it.
struct tensor_info {
    std::string name;
    type_id type = type_id::f32;
    std::array<std::int64_t, 4> ne{1, 1, 1, 1};
    int n_dims = 0;
    std::uint64_t offset = 0;      // relative to the data section
    std::uint64_t size_bytes = 0;  // bytes of data (without padding)
    const std::byte* data = nullptr;

    std::int64_t n_elements() const noexcept { return ne[0] * ne[1] * ne[2] * ne[3]; }
    // ggml's byte strides of the contiguous layout: nb[0] = type size, nb[1] = row bytes.
    std::array<std::uint64_t, 4> nb() const {
        std::array<std::uint64_t, 4> s{};
        s[0] = static_cast<std::uint64_t>(type_size(type));
        s[1] = s[0] * static_cast<std::uint64_t>(ne[0] / block_size(type));
        s[2] = s[1] * static_cast<std::uint64_t>(ne[1]);
        s[3] = s[2] * static_cast<std::uint64_t>(ne[2]);
        return s;
    }
    std::span<const std::byte> bytes() const noexcept {
        return {data, static_cast<std::size_t>(data ? size_bytes : 0)};
    }
};

class file;

namespace detail {

inline std::string hex_u64(std::uint64_t v) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s = "0x";
    bool started = false;
    for (int shift = 60; shift >= 0; shift -= 4) {
        const unsigned d = static_cast<unsigned>((v >> shift) & 15u);
        if (d || started || shift == 0) {
            s += digits[d];
            started = true;
        }
    }
    return s;
}

inline std::string shape_string(const std::array<std::int64_t, 4>& ne, int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) {
        if (i) s += ", ";
        s += std::to_string(ne[static_cast<std::size_t>(i)]);
    }
    return s + "]";
}

// Reads and validates the byte stream; fills a gguf::file. All bounds checks live here:
// the values (parse_value and its helpers) below, one function per section of the file
// (parse and the functions it calls) after gguf::file.
struct parser {
    const std::byte* base;
    std::size_t size;
    std::size_t pos = 0;
    const std::string& source;

    // Where we are inside a value, for messages: the key and the array indices.
    std::string_view cur_key;
    std::uint64_t cur_key_index = 0;
    std::array<std::uint64_t, max_array_depth> idx{};
    int cur_depth = 0;

    std::size_t remaining() const noexcept { return size - pos; }

    [[noreturn]] void fail_at(std::uint64_t off, const std::string& msg) const {
        fail(errc::format, "gguf file '" + source + "': offset " + std::to_string(off) + ": " + msg);
    }

    std::string where() const {
        // Built by appending: GCC 12 gives a false -Wrestrict on "literal" + std::string&&.
        std::string s = "key ";
        if (cur_key.empty()) {
            s += '#';
            s += std::to_string(cur_key_index);
        } else {
            s += quote(cur_key);
        }
        for (int d = 0; d < cur_depth; ++d) {
            s += '[';
            s += std::to_string(idx[static_cast<std::size_t>(d)]);
            s += ']';
        }
        return s;
    }

    [[noreturn]] void truncated(std::size_t need, const std::string& what) const {
        fail_at(pos, "truncated file: " + what + " needs " + std::to_string(need) + " bytes, only " +
                         std::to_string(remaining()) + " remain");
    }

    template <class T, class What>
    T read(What&& what) {
        if (remaining() < sizeof(T)) truncated(sizeof(T), what());
        T v;
        std::memcpy(&v, base + pos, sizeof v);
        pos += sizeof v;
        return v;
    }

    template <class What>
    std::string_view read_string(What&& what) {
        const std::size_t at = pos;
        const auto len = read<std::uint64_t>([&] { return "the length of " + what(); });
        if (len > remaining())
            fail_at(at, what() + ": string length " + std::to_string(len) + " runs past the end of the file (" +
                            std::to_string(remaining()) + " bytes remain)");
        std::string_view s(reinterpret_cast<const char*>(base + pos), static_cast<std::size_t>(len));
        pos += static_cast<std::size_t>(len);
        return s;
    }

    // One value of type t at pos (a key's value, or an element of an array of arrays).
    void parse_value(value& v, value_type t) {
        v.type_ = t;
        v.offset_ = pos;
        const std::size_t start = pos;
        switch (t) {
            case value_type::string:
                v.str_ = read_string([&] { return where(); });
                break;
            case value_type::array:
                parse_array(v);
                break;
            default: {
                const std::size_t n = value_type_size(t);
                if (remaining() < n) truncated(n, "the " + std::string(value_type_name(t)) + " value of " + where());
                pos += n;
            }
        }
        v.payload_ = {base + start, pos - start};
    }

    // An array: its element type and count, then the elements (by element kind).
    void parse_array(value& v) {
        read_array_header(v);
        const auto n = static_cast<std::size_t>(v.count_);  // checked against remaining() by the header
        if (v.elem_ == value_type::string) parse_string_elements(v, n);
        else if (v.elem_ == value_type::array) parse_nested_elements(v, n);
        else parse_scalar_elements(v, n);
    }

    // The element type and count of an array; the count is checked against the bytes
    // that remain before anything is allocated from it.
    void read_array_header(value& v) {
        const std::size_t type_at = pos;
        const auto raw_elem = read<std::uint32_t>([&] { return "the element type of " + where(); });
        if (!is_valid_value_type(raw_elem))
            fail_at(type_at, where() + ": array has unknown element type " + std::to_string(raw_elem) +
                                 " (valid types are 0.." + std::to_string(value_type_count - 1) + ")");
        const auto elem = static_cast<value_type>(raw_elem);
        const std::size_t count_at = pos;
        const auto count = read<std::uint64_t>([&] { return "the element count of " + where(); });
        if (elem == value_type::array && cur_depth + 1 >= max_array_depth)
            fail_at(type_at, where() + ": arrays nested deeper than " + std::to_string(max_array_depth) +
                                 " levels are not supported");
        const std::size_t min = min_encoded_size(elem);
        if (count > remaining() / min)
            fail_at(count_at, where() + ": array of " + std::to_string(count) + " " +
                                  std::string(value_type_name(elem)) + " elements needs at least " +
                                  (count > std::numeric_limits<std::uint64_t>::max() / min
                                       ? std::string("2^64")
                                       : std::to_string(count * min)) +
                                  " bytes, only " + std::to_string(remaining()) + " remain");
        v.elem_ = elem;
        v.count_ = count;
    }

    // Calls element(i) for i in [0, n) one array level down, so where() names the index.
    template <class Element>
    void for_each_element(std::size_t n, Element&& element) {
        ++cur_depth;
        for (std::size_t i = 0; i < n; ++i) {
            idx[static_cast<std::size_t>(cur_depth - 1)] = i;
            element(i);
        }
        --cur_depth;
    }

    void parse_string_elements(value& v, std::size_t n) {
        v.strings_.reserve(n);
        for_each_element(n, [&](std::size_t) { v.strings_.push_back(read_string([&] { return where(); })); });
    }

    void parse_nested_elements(value& v, std::size_t n) {
        v.nested_.resize(n);
        for_each_element(n, [&](std::size_t i) { parse_value(v.nested_[i], value_type::array); });
    }

    // Numbers and bools are viewed in place, or copied when they are misaligned for
    // their type or (bools) hold bytes other than 0 and 1, which the copy normalizes.
    void parse_scalar_elements(value& v, std::size_t n) {
        const std::size_t min = min_encoded_size(v.elem_);
        const std::size_t bytes = n * min;  // fits: checked against remaining() by the header
        const std::byte* p = base + pos;
        bool copy = reinterpret_cast<std::uintptr_t>(p) % min != 0;
        bool normalize = false;
        if (v.elem_ == value_type::boolean)
            for (std::size_t i = 0; i < n; ++i)
                if (static_cast<unsigned char>(p[i]) > 1) normalize = copy = true;
        if (copy) {
            v.copy_.assign(p, p + bytes);
            if (normalize)
                for (auto& b : v.copy_) b = b != std::byte{0} ? std::byte{1} : std::byte{0};
            v.owned_ = true;
        }
        pos += bytes;
    }

    // ---- the sections of a file, in file order (defined after gguf::file) ----
    struct header_counts {
        std::uint64_t n_tensors, n_kv;
    };
    static constexpr std::size_t min_kv = 8 + 4 + 1;        // key length, type, smallest value
    static constexpr std::size_t min_info = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

    void parse(file& f);
    void check_magic() const;
    std::uint32_t read_version();
    header_counts read_counts();
    void parse_metadata(metadata& m, std::uint64_t n_kv);
    void parse_key_value(metadata& m, std::uint64_t i);
    std::string_view read_key(const metadata& m, std::uint64_t i);
    std::uint32_t read_alignment(const metadata& m, std::uint32_t fallback) const;
    std::vector<std::uint64_t> parse_tensor_infos(file& f, std::uint64_t n_tensors);
    std::string_view read_tensor_name(const file& f, std::size_t i);
    void read_tensor_shape(tensor_info& t, std::size_t dims_at);
    void read_tensor_type(tensor_info& t);
    void compute_tensor_size(tensor_info& t, std::size_t dims_at) const;
    void place_tensor_data(file& f, std::span<const std::uint64_t> info_at) const;
};

}  // namespace detail

// A parsed GGUF file. Move-only: owns the mapping (open) or views a caller's buffer
// (from_buffer), and every string, array and tensor view points into those bytes.
class file {
public:
    file() = default;
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    file(file&&) noexcept = default;
    file& operator=(file&&) noexcept = default;

    // Maps path read-only and validates it.
    static file open(const std::string& path) {
        file f;
        f.map_ = mapped_file::open(path, "gguf file");
        f.bytes_ = f.map_.bytes();
        f.source_ = path;
        f.parse();
        return f;
    }

    // Validates a caller's buffer, which must outlive the file (nothing is copied).
    static file from_buffer(std::span<const std::byte> bytes, std::string name = "<memory>") {
        file f;
        f.bytes_ = bytes;
        f.source_ = std::move(name);
        f.parse();
        return f;
    }

    std::uint32_t version() const noexcept { return version_; }
    std::uint32_t alignment() const noexcept { return alignment_; }
    // Start of the data section: the end of the tensor infos, padded to alignment().
    std::uint64_t data_offset() const noexcept { return data_offset_; }
    const metadata& meta() const noexcept { return meta_; }
    std::span<const tensor_info> tensors() const noexcept { return tensors_; }
    // The tensor called name, or nullptr.
    const tensor_info* find_tensor(std::string_view name) const {
        auto it = tensor_index_.find(name);
        return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
    }
    // The tensor called name; throws invalid_argument when there is none.
    const tensor_info& tensor(std::string_view name) const {
        if (const tensor_info* t = find_tensor(name)) return *t;
        fail(errc::invalid_argument, "gguf file '" + source_ + "': no tensor named " + detail::quote(name));
    }

    // The whole file, and the data section (all tensor bytes, for placing into a
    // backend buffer from a host pointer without a copy).
    std::span<const std::byte> bytes() const noexcept { return bytes_; }
    std::span<const std::byte> data_section() const noexcept {
        if (data_offset_ >= bytes_.size()) return {};
        return bytes_.subspan(static_cast<std::size_t>(data_offset_));
    }
    // The path given to open(), or the name given to from_buffer().
    const std::string& source() const noexcept { return source_; }
    bool is_mapped() const noexcept { return map_.data() != nullptr; }
    const mapped_file& mapping() const noexcept { return map_; }

private:
    friend struct detail::parser;

    void parse() {
        detail::parser p{bytes_.data(), bytes_.size(), 0, source_, {}, 0, {}, 0};
        p.parse(*this);
    }

    mapped_file map_;
    std::span<const std::byte> bytes_;
    std::string source_;
    std::uint32_t version_ = 0;
    std::uint32_t alignment_ = default_alignment;
    std::uint64_t data_offset_ = 0;
    metadata meta_;
    std::vector<tensor_info> tensors_;
    std::unordered_map<std::string_view, std::size_t> tensor_index_;  // views into bytes_
};

namespace detail {

// A file is: header (magic, version, tensor count, key/value count), the key/value
// pairs, the tensor infos, padding to the alignment, the data section.
inline void parser::parse(file& f) {
    check_magic();
    f.version_ = read_version();
    const header_counts n = read_counts();
    parse_metadata(f.meta_, n.n_kv);
    f.alignment_ = read_alignment(f.meta_, f.alignment_);
    const std::vector<std::uint64_t> info_at = parse_tensor_infos(f, n.n_tensors);
    place_tensor_data(f, info_at);
}

// ---- header ----

inline void parser::check_magic() const {
    if (size < 4)
        fail_at(0, "truncated file: " + std::to_string(size) + " bytes, too short for the GGUF magic");
    if (std::memcmp(base, magic, 4) != 0) {
        std::string got;
        for (int i = 0; i < 4; ++i) {
            const auto c = static_cast<unsigned char>(base[i]);
            got += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
        }
        std::uint32_t raw;
        std::memcpy(&raw, base, 4);
        fail_at(0, "bad magic '" + got + "' (" + hex_u64(raw) + "): not a GGUF file (expected 'GGUF')");
    }
}

inline std::uint32_t parser::read_version() {
    pos = 4;
    const auto version = read<std::uint32_t>([] { return std::string("the version"); });
    if (version == 0) fail_at(4, "invalid GGUF version 0");
    if ((version & 0xffffu) == 0)
        fail_at(4, "GGUF version " + hex_u64(version) +
                       " looks byte-swapped: big-endian GGUF files are not supported on this host");
    if (version == 1) fail_at(4, "GGUF version 1 is no longer supported (it used 32-bit counts)");
    if (version > current_version)
        fail_at(4, "unsupported GGUF version " + std::to_string(version) + " (this reader supports versions 2 and 3)");
    return version;
}

// The two counts, each checked against what the rest of the file could hold.
inline parser::header_counts parser::read_counts() {
    const auto n_tensors = read<std::uint64_t>([] { return std::string("the tensor count"); });
    const auto n_kv = read<std::uint64_t>([] { return std::string("the metadata key/value count"); });
    if (n_tensors > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        n_tensors > remaining() / min_info)
        fail_at(8, "tensor count " + std::to_string(n_tensors) + " is impossible: the " +
                       std::to_string(remaining()) + " bytes after the header hold at most " +
                       std::to_string(remaining() / min_info) + " tensor infos");
    if (n_kv > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) || n_kv > remaining() / min_kv)
        fail_at(16, "metadata key/value count " + std::to_string(n_kv) + " is impossible: the " +
                        std::to_string(remaining()) + " bytes after the header hold at most " +
                        std::to_string(remaining() / min_kv) + " key/value pairs");
    return {n_tensors, n_kv};
}

// ---- metadata ----

inline void parser::parse_metadata(metadata& m, std::uint64_t n_kv) {
    m.source_ = "gguf file '" + source + "'";
    m.entries_.reserve(static_cast<std::size_t>(n_kv));
    m.index_.reserve(static_cast<std::size_t>(n_kv));
    for (std::uint64_t i = 0; i < n_kv; ++i) parse_key_value(m, i);
}

// Key #i: its name, value type and value.
inline void parser::parse_key_value(metadata& m, std::uint64_t i) {
    const std::size_t key_at = pos;
    const std::string_view key = read_key(m, i);
    cur_key = key;
    const std::size_t type_at = pos;
    const auto raw_type = read<std::uint32_t>([&] { return "the value type of " + where(); });
    if (!is_valid_value_type(raw_type))
        fail_at(type_at, where() + " has unknown value type " + std::to_string(raw_type) + " (valid types are 0.." +
                             std::to_string(value_type_count - 1) + ")");
    metadata::entry& e = m.entries_.emplace_back();
    e.key = key;
    e.offset = key_at;
    parse_value(e.val, static_cast<value_type>(raw_type));
    m.index_.emplace(key, static_cast<std::size_t>(i));
}

// The name of key #i: not empty, not one of the keys before it.
inline std::string_view parser::read_key(const metadata& m, std::uint64_t i) {
    const std::size_t key_at = pos;
    cur_key = {};
    cur_key_index = i;
    cur_depth = 0;
    const std::string_view key = read_string([&] { return "the name of key #" + std::to_string(i); });
    if (key.empty()) fail_at(key_at, "key #" + std::to_string(i) + " is empty");
    if (auto it = m.index_.find(key); it != m.index_.end())
        fail_at(key_at, "duplicate key " + quote(key) + " (key #" + std::to_string(i) + " repeats key #" +
                            std::to_string(it->second) + " at offset " + std::to_string(m.entries_[it->second].offset) +
                            ")");
    return key;
}

// general.alignment when the metadata has it (a u32 power of two), else fallback.
inline std::uint32_t parser::read_alignment(const metadata& m, std::uint32_t fallback) const {
    auto it = m.index_.find(alignment_key);
    if (it == m.index_.end()) return fallback;
    const metadata::entry& e = m.entries_[it->second];
    if (e.val.type() != value_type::u32)
        fail_at(e.offset,
                "key 'general.alignment' must have type u32, not " + std::string(value_type_name(e.val.type())));
    const auto a = e.val.get<std::uint32_t>();
    if (!is_power_of_two(a))
        fail_at(e.offset, "general.alignment = " + std::to_string(a) + " is not a non-zero power of two");
    return a;
}

// ---- tensor infos ----

// Reads every tensor info into f; returns the file offset of each one's data offset
// field, for the messages of place_tensor_data.
inline std::vector<std::uint64_t> parser::parse_tensor_infos(file& f, std::uint64_t n_tensors) {
    if (n_tensors > remaining() / min_info)
        fail_at(pos, "tensor count " + std::to_string(n_tensors) + " is impossible: the " +
                         std::to_string(remaining()) + " bytes after the metadata hold at most " +
                         std::to_string(remaining() / min_info) + " tensor infos");
    const auto nt = static_cast<std::size_t>(n_tensors);
    f.tensors_.reserve(nt);
    f.tensor_index_.reserve(nt);
    std::vector<std::uint64_t> info_at;
    info_at.reserve(nt);
    for (std::size_t i = 0; i < nt; ++i) {
        const std::string_view name = read_tensor_name(f, i);
        tensor_info t;
        t.name = std::string(name);
        const std::size_t dims_at = pos;
        read_tensor_shape(t, dims_at);
        read_tensor_type(t);
        compute_tensor_size(t, dims_at);
        info_at.push_back(pos);  // the offset field
        t.offset = read<std::uint64_t>([&] { return "the data offset of tensor " + quote(t.name); });
        f.tensor_index_.emplace(name, i);
        f.tensors_.push_back(std::move(t));
    }
    return info_at;
}

// The name of tensor #i: within ggml's limit, not one of the tensors before it.
inline std::string_view parser::read_tensor_name(const file& f, std::size_t i) {
    const std::size_t at = pos;
    // Messages are built only on failure.
    const auto tensor_no = [i] { return "tensor #" + std::to_string(i); };
    const std::string_view name = read_string([&] { return "the name of " + tensor_no(); });
    if (name.size() >= max_name_size)
        fail_at(at, tensor_no() + " has a name of " + std::to_string(name.size()) +
                        " bytes; ggml limits tensor names to " + std::to_string(max_name_size - 1) + " bytes");
    if (auto it = f.tensor_index_.find(name); it != f.tensor_index_.end())
        fail_at(at, "duplicate tensor name " + quote(name) + " (" + tensor_no() + " repeats tensor #" +
                        std::to_string(it->second) + ")");
    return name;
}

// n_dims and the extents (dims_at: where n_dims is).
inline void parser::read_tensor_shape(tensor_info& t, std::size_t dims_at) {
    const auto label = [&t] { return "tensor " + quote(t.name); };
    const auto n_dims = read<std::uint32_t>([&] { return "n_dims of " + label(); });
    if (n_dims > static_cast<std::uint32_t>(max_dims))
        fail_at(dims_at, label() + " has " + std::to_string(n_dims) + " dimensions; ggml supports at most " +
                             std::to_string(max_dims));
    t.n_dims = static_cast<int>(n_dims);
    for (std::uint32_t d = 0; d < n_dims; ++d) {
        const std::size_t ne_at = pos;
        const auto v = read<std::int64_t>([&] { return "ne[" + std::to_string(d) + "] of " + label(); });
        if (v < 0) fail_at(ne_at, label() + ": ne[" + std::to_string(d) + "] = " + std::to_string(v) + " is negative");
        t.ne[d] = v;
    }
}

// The ggml type id: a current type whose block size divides ne[0].
inline void parser::read_tensor_type(tensor_info& t) {
    const auto label = [&t] { return "tensor " + quote(t.name); };
    const std::size_t type_at = pos;
    const auto raw_type = read<std::int32_t>([&] { return "the type of " + label(); });
    if (!is_valid_type_id(raw_type))
        fail_at(type_at, label() + " has unknown ggml type id " + std::to_string(raw_type) +
                             (raw_type >= 0 && raw_type < type_id_count ? " (a removed type)" : "") +
                             " (valid ids are below " + std::to_string(type_id_count) + ")");
    t.type = static_cast<type_id>(raw_type);
    const std::int64_t blck = block_size(t.type);
    if (t.ne[0] % blck != 0)
        fail_at(type_at, label() + " of type " + std::string(type_name(t.type)) + ": ne[0] = " +
                             std::to_string(t.ne[0]) + " is not a multiple of the block size " + std::to_string(blck));
}

// size_bytes from the shape and type; the element count and the byte size must not overflow.
inline void parser::compute_tensor_size(tensor_info& t, std::size_t dims_at) const {
    const auto label = [&t] { return "tensor " + quote(t.name); };
    const std::int64_t blck = block_size(t.type);
    std::int64_t nel = 1;
    for (std::int64_t v : t.ne)
        if (__builtin_mul_overflow(nel, v, &nel))
            fail_at(dims_at, label() + " with shape " + shape_string(t.ne, t.n_dims) +
                                 ": the element count overflows 64 bits");
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(nel / blck), static_cast<std::uint64_t>(type_size(t.type)),
                               &bytes) ||
        bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail_at(dims_at, label() + " with shape " + shape_string(t.ne, t.n_dims) + " of type " +
                             std::string(type_name(t.type)) + ": the byte size overflows 63 bits");
    t.size_bytes = bytes;
}

// ---- data section ----

// The data section starts at the end of the tensor infos padded to the alignment; each
// tensor's data follows the one before it, padded, inside the file. Sets each data pointer.
inline void parser::place_tensor_data(file& f, std::span<const std::uint64_t> info_at) const {
    const std::uint64_t align = f.alignment_;
    f.data_offset_ = pad_to(pos, align);
    std::uint64_t expected = 0;
    for (std::size_t i = 0; i < f.tensors_.size(); ++i) {
        tensor_info& t = f.tensors_[i];
        const auto label = [&t] { return "tensor " + quote(t.name); };
        if (t.offset % align != 0)
            fail_at(info_at[i], label() + " has data offset " + std::to_string(t.offset) +
                                    ", not a multiple of the alignment " + std::to_string(align));
        if (t.offset != expected)
            fail_at(info_at[i], label() + " has data offset " + std::to_string(t.offset) + ", expected " +
                                    std::to_string(expected) + ": tensor data must be contiguous in file order, " +
                                    "each tensor padded to " + std::to_string(align) +
                                    " bytes (gaps, overlaps and reordering are rejected)");
        const std::uint64_t start = f.data_offset_ + t.offset;  // both below 2^63 + size
        std::uint64_t end = 0;
        if (start < f.data_offset_ || __builtin_add_overflow(start, t.size_bytes, &end) || end > size)
            fail_at(info_at[i], label() + " data (" + std::to_string(t.size_bytes) + " bytes at file offset " +
                                    std::to_string(start) + ") runs past the end of the file (" +
                                    std::to_string(size) + " bytes)");
        t.data = t.size_bytes > 0 || start <= size ? base + start : nullptr;
        // size_bytes <= file size here, so the padded running sum cannot overflow.
        expected += pad_to(t.size_bytes, align);
    }
}

}  // namespace detail

// FNV-1a 64 over the bytes before the data section (header, metadata, tensor infos) and
// the file's size: what tells two copies of a model apart without reading its weights
// (a remote rank that maps the file itself checks it, backend::file_region).
inline std::uint64_t header_fingerprint(const file& f) noexcept { return prefix_fingerprint(f.bytes(), f.data_offset()); }

}  // namespace gguf
TESSERA_END_NAMESPACE
