// The GGUF writer: metadata of every type and tensors, laid out exactly as the GGUF v3
// spec (and ggml's gguf writer) lay them out, so llama.cpp loads what it writes.
//
//   tessera::gguf::writer w;
//   w.set("general.architecture", "llama");
//   w.set<std::uint32_t>("llama.block_count", 5);
//   w.set_array("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "<s>"});
//   w.add_tensor("token_embd.weight", tessera::type_id::f32, {64, 512}, bytes);
//   w.write_to_file("out.gguf");
//
// Layout: header (magic, version 3, u64 tensor count, u64 kv count), the key/value
// pairs in insertion order, the tensor infos, zero padding to the alignment, then each
// tensor's data padded with zeros to the alignment (the last one too).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/gguf/format.hpp"
#include "tessera/gguf/metadata.hpp"
#include "tessera/gguf/reader.hpp"

TESSERA_BEGIN_NAMESPACE
namespace gguf {

namespace detail {
inline void put_bytes(std::vector<std::byte>& out, const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out.insert(out.end(), b, b + n);
}
template <class T>
void put(std::vector<std::byte>& out, T v) {
    put_bytes(out, &v, sizeof v);
}
inline void put_string(std::vector<std::byte>& out, std::string_view s) {
    put<std::uint64_t>(out, s.size());
    put_bytes(out, s.data(), s.size());
}

template <class T>
concept string_like = std::is_convertible_v<const T&, std::string_view>;
}  // namespace detail

// An array value under construction: elements of one type, which may itself be
// value_type::array (GGUF allows nested arrays; note that llama.cpp rejects them).
class array_builder {
public:
    explicit array_builder(value_type element_type) : elem_(element_type) {
        if (!is_valid_value_type(static_cast<std::uint32_t>(element_type)))
            fail(errc::invalid_argument, "gguf::array_builder: invalid element type");
    }

    template <scalar_value T>
    array_builder& push(T v) {
        check(value_type_v<T>);
        if constexpr (std::is_same_v<T, bool>)
            detail::put<std::uint8_t>(payload_, v ? 1 : 0);
        else
            detail::put(payload_, v);
        ++n_;
        return *this;
    }
    array_builder& push(std::string_view s) {
        check(value_type::string);
        detail::put_string(payload_, s);
        ++n_;
        return *this;
    }
    array_builder& push(const char* s) { return push(std::string_view(s)); }
    array_builder& push(const std::string& s) { return push(std::string_view(s)); }
    array_builder& push(const array_builder& nested) {
        check(value_type::array);
        const auto enc = nested.encode();
        payload_.insert(payload_.end(), enc.begin(), enc.end());
        ++n_;
        return *this;
    }

    value_type element_type() const noexcept { return elem_; }
    std::size_t size() const noexcept { return static_cast<std::size_t>(n_); }

    // The encoded array (element type, count, elements), as it follows the type tag.
    std::vector<std::byte> encode() const {
        std::vector<std::byte> out;
        out.reserve(12 + payload_.size());
        detail::put<std::uint32_t>(out, static_cast<std::uint32_t>(elem_));
        detail::put<std::uint64_t>(out, n_);
        out.insert(out.end(), payload_.begin(), payload_.end());
        return out;
    }

private:
    void check(value_type t) const {
        if (t != elem_)
            fail(errc::invalid_argument, "gguf::array_builder: pushing a " + std::string(value_type_name(t)) +
                                             " into an array of " + std::string(value_type_name(elem_)));
    }

    value_type elem_;
    std::uint64_t n_ = 0;
    std::vector<std::byte> payload_;
};

class writer {
public:
    writer() = default;

    // --- metadata ---
    // Sets key to a scalar or string (overwrites an existing key in place, else appends).
    // The GGUF type follows the C++ type: set<std::uint32_t>("k", 5), set("k", 1.5f),
    // set("k", true), set("k", "text").
    template <metadata_value T>
    void set(std::string_view key, const T& v) {
        std::vector<std::byte> p;
        if constexpr (std::is_same_v<T, bool>)
            detail::put<std::uint8_t>(p, v ? 1 : 0);
        else if constexpr (scalar_value<T>)
            detail::put(p, v);
        else
            detail::put_string(p, v);
        store(key, value_type_v<T>, std::move(p));
    }
    void set(std::string_view key, const char* s) { set(key, std::string_view(s)); }

    // Sets key to an array of numbers or bools (element type from T).
    template <scalar_value T>
    void set_array(std::string_view key, std::span<const T> values) {
        std::vector<std::byte> p;
        p.reserve(12 + values.size() * sizeof(T));
        detail::put<std::uint32_t>(p, static_cast<std::uint32_t>(value_type_v<T>));
        detail::put<std::uint64_t>(p, values.size());
        if constexpr (std::is_same_v<T, bool>)
            for (bool b : values) detail::put<std::uint8_t>(p, b ? 1 : 0);
        else
            detail::put_bytes(p, values.data(), values.size() * sizeof(T));
        store(key, value_type::array, std::move(p));
    }
    // Any other range: numbers/bools become a typed array, string-likes a string array.
    template <std::ranges::input_range R>
        requires(scalar_value<std::ranges::range_value_t<R>> ||
                 detail::string_like<std::ranges::range_value_t<R>>)
    void set_array(std::string_view key, const R& r) {
        using E = std::ranges::range_value_t<R>;
        if constexpr (scalar_value<E>) {
            if constexpr (std::ranges::contiguous_range<R> && !std::is_same_v<E, bool>) {
                set_array<E>(key, std::span<const E>(std::ranges::data(r), std::ranges::size(r)));
            } else {
                array_builder a(value_type_v<E>);
                for (const auto& v : r) a.push(static_cast<E>(v));
                set_array(key, a);
            }
        } else {
            std::vector<std::byte> p;
            detail::put<std::uint32_t>(p, static_cast<std::uint32_t>(value_type::string));
            const std::size_t count_at = p.size();
            detail::put<std::uint64_t>(p, 0);
            std::uint64_t n = 0;
            for (const auto& s : r) {
                detail::put_string(p, std::string_view(s));
                ++n;
            }
            std::memcpy(p.data() + count_at, &n, sizeof n);
            store(key, value_type::array, std::move(p));
        }
    }
    template <class T>
        requires(scalar_value<T> || detail::string_like<T>)
    void set_array(std::string_view key, std::initializer_list<T> values) {
        set_array(key, std::span<const T>(values.begin(), values.size()));
    }
    // An array built element by element (any element type, nesting included).
    void set_array(std::string_view key, const array_builder& a) { store(key, value_type::array, a.encode()); }

    // Copies one value read from a file (same type, same bytes).
    void set_value(std::string_view key, const value& v) {
        const auto p = v.payload();
        store(key, v.type(), std::vector<std::byte>(p.begin(), p.end()));
    }
    // Copies every key/value pair of m, in its order (existing keys are overwritten).
    void copy_metadata(const metadata& m) {
        for (const auto& e : m) set_value(e.key, e.val);
    }

    bool contains(std::string_view key) const { return index_.find(key) != index_.end(); }
    // Removes key; returns whether it was there.
    bool remove(std::string_view key) {
        auto it = index_.find(key);
        if (it == index_.end()) return false;
        if (it->first == alignment_key) alignment_ = default_alignment;
        kvs_.erase(kvs_.begin() + static_cast<std::ptrdiff_t>(it->second));
        index_.clear();
        for (std::size_t i = 0; i < kvs_.size(); ++i) index_.emplace(kvs_[i].key, i);
        return true;
    }
    std::size_t n_kv() const noexcept { return kvs_.size(); }

    // Sets general.alignment (a u32 power of two); tensor data is aligned to it.
    void set_alignment(std::uint32_t a) { set<std::uint32_t>(alignment_key, a); }
    std::uint32_t alignment() const noexcept { return alignment_; }

    // --- tensors ---
    // Adds a tensor with ne = {ne0, ne1, ...} (1 to 4 dims, written as given) whose
    // bytes are copied now. data.size() must equal the tensor's byte size.
    void add_tensor(std::string_view name, type_id type, std::span<const std::int64_t> ne,
                    std::span<const std::byte> data) {
        const std::size_t i = add_info(name, type, ne, data.size());
        tensors_[i].owned.assign(data.begin(), data.end());
        tensors_[i].is_owned = true;
    }
    void add_tensor(std::string_view name, type_id type, std::initializer_list<std::int64_t> ne,
                    std::span<const std::byte> data) {
        add_tensor(name, type, std::span<const std::int64_t>(ne.begin(), ne.size()), data);
    }
    // As add_tensor, without copying: data must stay valid until the last write.
    void add_tensor_view(std::string_view name, type_id type, std::span<const std::int64_t> ne,
                         std::span<const std::byte> data) {
        const std::size_t i = add_info(name, type, ne, data.size());
        tensors_[i].data = data.data();
    }
    // A tensor of a file being read (same name, type, shape; data viewed, not copied).
    void add_tensor_view(std::string_view name, type_id type, std::initializer_list<std::int64_t> ne,
                         std::span<const std::byte> data) {
        add_tensor_view(name, type, std::span<const std::int64_t>(ne.begin(), ne.size()), data);
    }
    // A file's tensor of n_dims 0 (a scalar) is written with one dimension of 1.
    void add_tensor_view(const tensor_info& t) {
        const std::size_t nd = t.n_dims > 0 ? static_cast<std::size_t>(t.n_dims) : 1;
        add_tensor_view(t.name, t.type, std::span<const std::int64_t>(t.ne.data(), nd), t.bytes());
    }
    std::size_t n_tensors() const noexcept { return tensors_.size(); }

    // --- output ---
    // Bytes before the data section: header, key/values, tensor infos and padding.
    std::uint64_t meta_size() const {
        std::uint64_t n = 0;
        write_meta([&](const std::byte*, std::size_t k) { n += k; });
        return n;
    }

    // Streams the whole file to sink(const std::byte*, std::size_t).
    template <class Sink>
    void write(Sink&& sink) const {
        write_meta(sink);
        write_data(sink);
    }

    std::vector<std::byte> to_bytes() const {
        std::vector<std::byte> out;
        write([&](const std::byte* p, std::size_t n) { out.insert(out.end(), p, p + n); });
        return out;
    }

    // Writes the file; throws errc::io naming the path if the OS refuses.
    void write_to_file(const std::string& path) const {
        std::FILE* fp = std::fopen(path.c_str(), "wb");
        if (fp == nullptr) fail(errc::io, "gguf writer: cannot open '" + path + "' for writing: " + std::strerror(errno));
        bool ok = true;
        try {
            write([&](const std::byte* p, std::size_t n) {
                if (ok && std::fwrite(p, 1, n, fp) != n) ok = false;
            });
        } catch (...) {
            std::fclose(fp);
            throw;
        }
        const int err = ok ? 0 : errno;
        if (std::fclose(fp) != 0 && ok) ok = false;
        if (!ok)
            fail(errc::io, "gguf writer: writing '" + path + "' failed: " + std::strerror(err ? err : errno));
    }

private:
    struct kv {
        std::string key;
        value_type type;
        std::vector<std::byte> payload;  // encoded value after the type tag
    };
    struct tensor {
        std::string name;
        type_id type;
        std::vector<std::int64_t> ne;
        std::uint64_t size;
        const std::byte* data = nullptr;
        std::vector<std::byte> owned;
        bool is_owned = false;
        const std::byte* bytes() const noexcept { return is_owned ? owned.data() : data; }
    };

    // Sets key to an encoded value: in place when the key exists, else appended.
    void store(std::string_view key, value_type t, std::vector<std::byte> payload) {
        if (key.empty()) fail(errc::invalid_argument, "gguf writer: empty key");
        if (key == alignment_key) alignment_ = alignment_of(t, payload);
        if (auto it = index_.find(key); it != index_.end()) {
            kvs_[it->second].type = t;
            kvs_[it->second].payload = std::move(payload);
            return;
        }
        kvs_.push_back({std::string(key), t, std::move(payload)});
        index_.emplace(kvs_.back().key, kvs_.size() - 1);
    }

    // The value of a general.alignment being stored: a u32 power of two.
    static std::uint32_t alignment_of(value_type t, const std::vector<std::byte>& payload) {
        std::uint32_t a = 0;
        if (t != value_type::u32 || payload.size() != 4)
            fail(errc::invalid_argument,
                 "gguf writer: general.alignment must be a u32, not " + std::string(value_type_name(t)));
        std::memcpy(&a, payload.data(), 4);
        if (!is_power_of_two(a))
            fail(errc::invalid_argument,
                 "gguf writer: general.alignment = " + std::to_string(a) + " is not a non-zero power of two");
        return a;
    }

    // Checks a new tensor (name, shape, type, data size) and appends its entry; returns its index.
    std::size_t add_info(std::string_view name, type_id type, std::span<const std::int64_t> ne, std::size_t data_size) {
        const std::string label = "gguf writer: tensor " + detail::quote(name);
        check_tensor_name(label, name);
        check_tensor_dims(label, type, ne);
        const std::uint64_t bytes = tensor_bytes(label, type, ne);
        if (bytes != data_size)
            fail(errc::invalid_argument, label + ": data has " + std::to_string(data_size) + " bytes, the " +
                                             std::string(type_name(type)) + " shape needs " + std::to_string(bytes));
        tensors_.push_back({std::string(name), type, std::vector<std::int64_t>(ne.begin(), ne.end()), bytes, nullptr, {}, false});
        return tensors_.size() - 1;
    }

    // Within ggml's name limit and not the name of a tensor already added.
    void check_tensor_name(const std::string& label, std::string_view name) const {
        if (name.size() >= max_name_size)
            fail(errc::invalid_argument, label + ": name longer than ggml's limit of " +
                                             std::to_string(max_name_size - 1) + " bytes");
        for (const auto& t : tensors_)
            if (t.name == name) fail(errc::invalid_argument, label + ": duplicate tensor name");
    }

    // 1 to 4 dims of a valid type.
    static void check_tensor_dims(const std::string& label, type_id type, std::span<const std::int64_t> ne) {
        if (ne.empty() || ne.size() > static_cast<std::size_t>(max_dims))
            fail(errc::invalid_argument, label + ": " + std::to_string(ne.size()) +
                                             " dimensions (ggml supports 1 to " + std::to_string(max_dims) + ")");
        if (!is_valid_type_id(static_cast<std::int64_t>(type)))
            fail(errc::invalid_argument, label + ": invalid type id " + std::to_string(static_cast<int>(type)));
    }

    // The byte size of the shape: no negative extent, whole blocks in ne[0], no overflow.
    static std::uint64_t tensor_bytes(const std::string& label, type_id type, std::span<const std::int64_t> ne) {
        const std::int64_t blck = block_size(type);
        std::int64_t nel = 1;
        for (std::int64_t v : ne) {
            if (v < 0) fail(errc::invalid_argument, label + ": negative dimension " + std::to_string(v));
            if (__builtin_mul_overflow(nel, v, &nel))
                fail(errc::invalid_argument, label + ": element count overflows 64 bits");
        }
        if (ne[0] % blck != 0)
            fail(errc::invalid_argument, label + ": ne[0] = " + std::to_string(ne[0]) +
                                             " is not a multiple of the " + std::string(type_name(type)) +
                                             " block size " + std::to_string(blck));
        std::uint64_t bytes = 0;
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(nel / blck), static_cast<std::uint64_t>(type_size(type)),
                                   &bytes))
            fail(errc::invalid_argument, label + ": byte size overflows 64 bits");
        return bytes;
    }

    // Everything before the data section, sent to sink in chunks of about 1 MiB (a larger
    // value is sent straight from its payload); returns the bytes sent.
    template <class Sink>
    std::uint64_t write_meta(Sink&& sink) const {
        std::vector<std::byte> buf;
        std::uint64_t total = 0;
        auto flush = [&] {
            if (!buf.empty()) sink(buf.data(), buf.size());
            total += buf.size();
            buf.clear();
        };
        put_header(buf);
        for (const auto& e : kvs_) {
            detail::put_string(buf, e.key);
            detail::put<std::uint32_t>(buf, static_cast<std::uint32_t>(e.type));
            if (buf.size() + e.payload.size() > (1u << 20)) flush();
            if (e.payload.size() > (1u << 20)) {
                sink(e.payload.data(), e.payload.size());
                total += e.payload.size();
            } else {
                buf.insert(buf.end(), e.payload.begin(), e.payload.end());
            }
        }
        put_tensor_infos(buf);
        const std::uint64_t end = total + buf.size();
        buf.resize(buf.size() + static_cast<std::size_t>(pad_to(end, alignment_) - end));
        flush();
        return total;
    }

    // Magic, version, tensor count, key/value count.
    void put_header(std::vector<std::byte>& buf) const {
        detail::put_bytes(buf, magic, 4);
        detail::put<std::uint32_t>(buf, current_version);
        detail::put<std::uint64_t>(buf, tensors_.size());
        detail::put<std::uint64_t>(buf, kvs_.size());
    }

    // Name, n_dims, extents, type and data offset of each tensor; the offsets advance by
    // each tensor's size padded to the alignment.
    void put_tensor_infos(std::vector<std::byte>& buf) const {
        std::uint64_t offset = 0;
        for (const auto& t : tensors_) {
            detail::put_string(buf, t.name);
            detail::put<std::uint32_t>(buf, static_cast<std::uint32_t>(t.ne.size()));
            for (std::int64_t v : t.ne) detail::put<std::int64_t>(buf, v);
            detail::put<std::int32_t>(buf, static_cast<std::int32_t>(t.type));
            detail::put<std::uint64_t>(buf, offset);
            offset += pad_to(t.size, alignment_);
        }
    }

    // Each tensor's bytes, then zeros to the alignment (after the last one too).
    template <class Sink>
    void write_data(Sink&& sink) const {
        static constexpr std::byte zeros[256] = {};
        const std::uint64_t a = alignment_;
        for (const auto& t : tensors_) {
            if (t.size > 0) sink(t.bytes(), static_cast<std::size_t>(t.size));
            for (std::uint64_t pad = pad_to(t.size, a) - t.size; pad > 0;) {
                const std::size_t k = static_cast<std::size_t>(pad < sizeof zeros ? pad : sizeof zeros);
                sink(zeros, k);
                pad -= k;
            }
        }
    }

    std::vector<kv> kvs_;
    std::map<std::string, std::size_t, std::less<>> index_;
    std::vector<tensor> tensors_;
    std::uint32_t alignment_ = default_alignment;
};

}  // namespace gguf
TESSERA_END_NAMESPACE
