// libFuzzer target for the legacy imatrix (.dat) parser, models::parse_imatrix_dat
// (built with -Dfuzz=true and clang; run it through tests/quantize_model/run_fuzz_imatrix.sh).
// The properties: it throws nothing but tessera::error(errc::format) with "offset" in
// its message, and what it accepts is what an independent walk of the bytes finds: the
// entry names, each with nval values equal to sums / ncall, every value finite, and the
// bytes used up exactly (an optional chunk count and dataset name at the end).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/models/imatrix.hpp"

namespace {

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "fuzz_imatrix: %s\n", what);
    std::abort();
}

std::int32_t rd(const std::uint8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::span<const std::byte> b(reinterpret_cast<const std::byte*>(data), size);
    std::unordered_map<std::string, std::vector<float>> got;
    tessera::models::imatrix_metadata meta;
    try {
        got = tessera::models::parse_imatrix_dat(b, "fuzz", &meta);
    } catch (const tessera::error& e) {
        if (e.code() != tessera::errc::format) die("an error other than errc::format");
        if (std::string(e.what()).find("offset ") == std::string::npos) die("an error without its offset");
        return 0;
    } catch (...) {
        die("an exception other than tessera::error");
    }
    // accepted: walk the bytes again
    std::size_t at = 0;
    if (size < 4) die("accepted fewer than 4 bytes");
    const std::int32_t n = rd(data);
    at = 4;
    if (n < 0 || static_cast<std::size_t>(n) != got.size()) die("entry count differs");
    for (std::int32_t e = 0; e < n; ++e) {
        const std::int32_t len = rd(data + at);
        at += 4;
        const std::string name(reinterpret_cast<const char*>(data + at), static_cast<std::size_t>(len));
        at += static_cast<std::size_t>(len);
        const std::int32_t ncall = rd(data + at), nval = rd(data + at + 4);
        at += 8;
        const auto it = got.find(name);
        if (it == got.end() || static_cast<std::int32_t>(it->second.size()) != nval) die("an entry differs");
        for (std::int32_t j = 0; j < nval; ++j) {
            float s;
            std::memcpy(&s, data + at + 4 * static_cast<std::size_t>(j), 4);
            const float w = ncall > 0 ? s / static_cast<float>(ncall) : s;
            if (!std::isfinite(s) || std::memcmp(&w, &it->second[static_cast<std::size_t>(j)], 4) != 0) die("a value differs");
        }
        at += 4 * static_cast<std::size_t>(nval);
    }
    if (at != size) {
        const std::int32_t dlen = rd(data + at + 4);
        at += 8;
        if (meta.dataset != std::string(reinterpret_cast<const char*>(data + at), static_cast<std::size_t>(dlen))) die("dataset differs");
        at += static_cast<std::size_t>(dlen);
        if (at != size) die("bytes left over");
    }
    return 0;
}
