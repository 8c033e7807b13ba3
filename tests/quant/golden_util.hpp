// Helpers for the golden-byte tests: a block's bytes, and building expected blocks.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

template <class B>
std::vector<std::uint8_t> bytes_of(const B& b) {
    std::vector<std::uint8_t> v(sizeof(B));
    std::memcpy(v.data(), &b, sizeof(B));
    return v;
}

inline std::string hex(const std::vector<std::uint8_t>& v) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (auto c : v) {
        s += digits[c >> 4];
        s += digits[c & 15];
    }
    return s;
}

// Appends a little-endian u16.
inline void put16(std::vector<std::uint8_t>& v, std::uint16_t x) {
    v.push_back(static_cast<std::uint8_t>(x & 0xff));
    v.push_back(static_cast<std::uint8_t>(x >> 8));
}
