// Builds IDX files byte by byte for the tests of tessera/opt/idx.hpp and mnist_io.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace idx_test {

struct raw {
    std::vector<std::byte> b;

    raw& u8(unsigned v) {
        b.push_back(static_cast<std::byte>(v & 0xffu));
        return *this;
    }
    raw& be16(std::uint16_t v) { return u8(v >> 8).u8(v); }
    raw& be32(std::uint32_t v) { return u8(v >> 24).u8(v >> 16).u8(v >> 8).u8(v); }
    raw& be64(std::uint64_t v) { return be32(static_cast<std::uint32_t>(v >> 32)).be32(static_cast<std::uint32_t>(v)); }
    // The magic (0, 0, type code, number of dims) and the dims.
    raw& header(unsigned code, std::initializer_list<std::uint32_t> dims) {
        u8(0).u8(0).u8(code).u8(static_cast<unsigned>(dims.size()));
        for (std::uint32_t d : dims) be32(d);
        return *this;
    }
    std::size_t size() const { return b.size(); }
};

// An IDX u8 file of the given dims whose bytes are produced by f(i).
template <class F>
std::vector<std::byte> u8_file(std::initializer_list<std::uint32_t> dims, std::size_t n, F f) {
    raw r;
    r.header(0x08, dims);
    for (std::size_t i = 0; i < n; ++i) r.u8(static_cast<unsigned>(f(i)));
    return r.b;
}

}  // namespace idx_test
