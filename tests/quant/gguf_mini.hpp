// A minimal GGUF v2/v3 reader for the quant tests: tensor names, types, shapes and
// data bytes (metadata values are skipped, except general.alignment). Not the
// project's GGUF layer; just enough to compare tensors with llama.cpp's files.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gguf_mini {

struct tensor {
    std::string name;
    std::vector<std::uint64_t> ne;
    std::uint32_t type = 0;
    std::uint64_t offset = 0;  // from the start of the data section
};

struct file {
    std::vector<unsigned char> bytes;
    std::vector<tensor> tensors;
    std::uint64_t data_start = 0;

    const unsigned char* data(const tensor& t) const { return bytes.data() + data_start + t.offset; }
    const tensor* find(const std::string& name) const {
        for (const auto& t : tensors)
            if (t.name == name) return &t;
        return nullptr;
    }
};

namespace detail {
struct reader {
    const std::vector<unsigned char>& b;
    std::uint64_t pos = 0;
    void need(std::uint64_t n) const {
        if (pos + n > b.size()) throw std::runtime_error("gguf_mini: truncated file");
    }
    template <class T>
    T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, b.data() + pos, sizeof(T));
        pos += sizeof(T);
        return v;
    }
    std::string str() {
        const auto n = get<std::uint64_t>();
        need(n);
        std::string s(reinterpret_cast<const char*>(b.data() + pos), n);
        pos += n;
        return s;
    }
    void skip_value(std::uint32_t type) {
        static const int sizes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        if (type == 8) {
            (void)str();
        } else if (type == 9) {
            const auto et = get<std::uint32_t>();
            const auto n = get<std::uint64_t>();
            for (std::uint64_t i = 0; i < n; ++i) skip_value(et);
        } else if (type < 13) {
            need(static_cast<std::uint64_t>(sizes[type]));
            pos += static_cast<std::uint64_t>(sizes[type]);
        } else {
            throw std::runtime_error("gguf_mini: bad value type");
        }
    }
};
}  // namespace detail

inline file load(const std::string& path) {
    file f;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("gguf_mini: cannot open " + path);
    f.bytes.assign(std::istreambuf_iterator<char>(in), {});
    detail::reader r{f.bytes};
    if (r.get<std::uint32_t>() != 0x46554747u) throw std::runtime_error("gguf_mini: not a GGUF file");
    (void)r.get<std::uint32_t>();  // version
    const auto n_tensors = r.get<std::uint64_t>();
    const auto n_kv = r.get<std::uint64_t>();
    std::uint64_t alignment = 32;
    for (std::uint64_t i = 0; i < n_kv; ++i) {
        const std::string key = r.str();
        const auto type = r.get<std::uint32_t>();
        if (key == "general.alignment" && type == 4) alignment = r.get<std::uint32_t>();
        else r.skip_value(type);
    }
    for (std::uint64_t i = 0; i < n_tensors; ++i) {
        tensor t;
        t.name = r.str();
        const auto nd = r.get<std::uint32_t>();
        for (std::uint32_t d = 0; d < nd; ++d) t.ne.push_back(r.get<std::uint64_t>());
        t.type = r.get<std::uint32_t>();
        t.offset = r.get<std::uint64_t>();
        f.tensors.push_back(t);
    }
    f.data_start = (r.pos + alignment - 1) / alignment * alignment;
    return f;
}

}  // namespace gguf_mini
