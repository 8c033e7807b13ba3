// The property the GGUF fuzzer checks, shared with the regression test that replays
// inputs the fuzzer found: parsing any bytes either throws tessera::error(errc::format)
// or yields a file whose every accessor works, which gguf::open_split takes as a first
// part or refuses with a clear error, and which, re-written by the writer, parses again to
// the same metadata and tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/split.hpp"
#include "tessera/gguf/writer.hpp"

namespace gguf_fuzz {

// Throws std::logic_error when the property is violated (the fuzzer turns that into a
// crash); returns whether the input was accepted.
inline bool check_one(const std::uint8_t* data, std::size_t size) {
    using namespace tessera;
    const auto bytes = std::as_bytes(std::span(data, size));
    gguf::file f;
    try {
        f = gguf::file::from_buffer(bytes, "fuzz");
    } catch (const error& e) {
        if (e.code() != errc::format) throw std::logic_error(std::string("wrong error code: ") + e.what());
        return false;
    }
    // Every accessor on every entry.
    std::size_t sink = 0;
    for (const auto& e : f.meta()) {
        sink += e.val.to_string(4, 16).size();
        if (!f.meta().contains(e.key) || f.meta().find_value(e.key) != &e.val)
            throw std::logic_error("lookup does not find a key in the file");
        if (e.val.is_array()) {
            switch (e.val.array_type()) {
                case gguf::value_type::string: sink += e.val.get_string_array().size(); break;
                case gguf::value_type::array: sink += e.val.get_nested().size(); break;
                case gguf::value_type::f64: sink += e.val.get_array<double>().size(); break;
                case gguf::value_type::boolean:
                    for (bool b : e.val.get_array<bool>()) sink += b;
                    break;
                default: sink += e.val.array_size();
            }
        }
    }
    for (const auto& t : f.tensors()) {
        for (std::byte b : t.bytes()) sink += static_cast<unsigned>(b);
        if (f.find_tensor(t.name) != &t) throw std::logic_error("find_tensor does not find " + t.name);
    }
    (void)sink;
    // As the first part of a model in parts (the same bytes standing for every part): the
    // split keys, whatever their types and values, give a clear error or the parts.
    try {
        const auto parts = gguf::open_split(gguf::file::from_buffer(bytes, "fuzz-00001-of-00002.gguf"),
                                            [&](const std::string& p) { return gguf::file::from_buffer(bytes, p); });
        if (parts.empty()) throw std::logic_error("open_split returned no part");
    } catch (const error& e) {
        if (e.code() != errc::format && e.code() != errc::invalid_argument)
            throw std::logic_error(std::string("open_split: wrong error code: ") + e.what());
    }
    // Re-write and re-read: the same metadata payloads and tensors. A legal but huge
    // general.alignment (up to 2^31) would make the writer emit that much padding; the
    // round trip is checked for alignments up to 1 MiB only.
    if (f.alignment() > (1u << 20)) return true;
    gguf::writer w;
    w.copy_metadata(f.meta());
    for (const auto& t : f.tensors()) w.add_tensor_view(t);
    const auto out = w.to_bytes();
    gguf::file g;
    try {
        g = gguf::file::from_buffer(out, "rewritten");
    } catch (const error& e) {
        throw std::logic_error(std::string("a re-written accepted file is rejected: ") + e.what());
    }
    if (g.meta().size() != f.meta().size() || g.tensors().size() != f.tensors().size() ||
        g.alignment() != f.alignment())
        throw std::logic_error("re-written file differs in counts or alignment");
    for (std::size_t i = 0; i < f.meta().size(); ++i) {
        const auto& a = f.meta()[i];
        const auto& b = g.meta()[i];
        if (a.key != b.key || a.val.type() != b.val.type() ||
            !std::equal(a.val.payload().begin(), a.val.payload().end(), b.val.payload().begin(), b.val.payload().end()))
            throw std::logic_error("re-written metadata differs at key #" + std::to_string(i));
    }
    for (std::size_t i = 0; i < f.tensors().size(); ++i) {
        const auto& a = f.tensors()[i];
        const auto& b = g.tensors()[i];
        if (a.name != b.name || a.type != b.type || a.ne != b.ne || a.offset != b.offset ||
            a.size_bytes != b.size_bytes || !std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end()))
            throw std::logic_error("re-written tensor differs: " + a.name);
    }
    return true;
}

}  // namespace gguf_fuzz
