// Helpers for the GGUF tests: a little-endian byte builder for handcrafted files, and
// the shared test data folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gguf_test {

// Appends little-endian fields; mirrors the GGUF encoding without using the writer, so
// the tests check the reader against an independent encoder.
struct raw {
    std::vector<std::byte> b;

    template <class T>
    raw& put(T v) {
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    raw& u8(std::uint8_t v) { return put(v); }
    raw& u16(std::uint16_t v) { return put(v); }
    raw& u32(std::uint32_t v) { return put(v); }
    raw& i32(std::int32_t v) { return put(v); }
    raw& u64(std::uint64_t v) { return put(v); }
    raw& i64(std::int64_t v) { return put(v); }
    raw& bytes(std::string_view s) {
        const auto* p = reinterpret_cast<const std::byte*>(s.data());
        b.insert(b.end(), p, p + s.size());
        return *this;
    }
    raw& str(std::string_view s) { return u64(s.size()).bytes(s); }
    raw& zeros(std::size_t n) {
        b.insert(b.end(), n, std::byte{0});
        return *this;
    }
    raw& pad(std::size_t alignment) { return zeros((alignment - b.size() % alignment) % alignment); }
    // GGUF header: magic, version, tensor count, kv count.
    raw& header(std::uint64_t n_tensors, std::uint64_t n_kv, std::uint32_t version = 3) {
        return bytes("GGUF").u32(version).u64(n_tensors).u64(n_kv);
    }
    // A tensor info: name, n_dims, ne..., type, offset.
    raw& tensor(std::string_view name, std::vector<std::int64_t> ne, std::int32_t type, std::uint64_t offset) {
        str(name).u32(static_cast<std::uint32_t>(ne.size()));
        for (auto v : ne) i64(v);
        return i32(type).u64(offset);
    }
    std::size_t size() const { return b.size(); }
};

}  // namespace gguf_test
