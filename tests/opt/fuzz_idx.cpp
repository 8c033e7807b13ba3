// libFuzzer target for the IDX parser and the gunzip of mnist_io.hpp (built with
// -Dfuzz=true and clang; run it through tests/opt/run_fuzz_idx.sh). Every input goes
// to parse_idx, and to gunzip, whose output, when accepted, goes to parse_idx too.
// The properties: parse_idx throws nothing but tessera::error(errc::format) with the
// file and offset in its message, and what it accepts is exactly the header's dims and
// the elements decoded here independently, with no byte left over; gunzip throws nothing
// but tessera::error(errc::format), never returns more than its limit, and what it
// returns round-trips through zlib's deflate. Without zlib (TESSERA_FUZZ_GZIP unset)
// only parse_idx is fuzzed.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/opt/idx.hpp"

#if defined(TESSERA_FUZZ_GZIP) && TESSERA_FUZZ_GZIP
#include <zlib.h>

#include "mnist_io.hpp"
#endif

namespace {

using tessera::errc;
using tessera::opt::idx_type;

std::uint64_t be(const std::uint8_t* p, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
    return v;
}

[[noreturn]] void violated(const std::string& what) { throw std::logic_error(what); }

// The i-th element of the data at p decoded from its definition.
float reference_value(idx_type t, const std::uint8_t* p, std::size_t i) {
    switch (t) {
        case idx_type::u8: return static_cast<float>(p[i]);
        case idx_type::i8: return static_cast<float>(static_cast<std::int8_t>(p[i]));
        case idx_type::i16: return static_cast<float>(static_cast<std::int16_t>(be(p + 2 * i, 2)));
        case idx_type::i32: return static_cast<float>(static_cast<std::int32_t>(be(p + 4 * i, 4)));
        case idx_type::f32: return std::bit_cast<float>(static_cast<std::uint32_t>(be(p + 4 * i, 4)));
        case idx_type::f64: return static_cast<float>(std::bit_cast<double>(be(p + 8 * i, 8)));
    }
    violated("accepted an unknown type");
}

// Parses; checks the properties; returns whether the input was accepted.
bool check_idx(const std::uint8_t* data, std::size_t size, const char* what) {
    tessera::opt::idx_array a;
    try {
        a = tessera::opt::parse_idx(std::as_bytes(std::span(data, size)), what);
    } catch (const tessera::error& e) {
        if (e.code() != errc::format) violated(std::string("wrong error code: ") + e.what());
        if (std::string(e.what()).rfind(std::string("idx file '") + what + "': offset ", 0) != 0)
            violated(std::string("message without file and offset: ") + e.what());
        return false;
    }
    if (size < 4 || data[0] != 0 || data[1] != 0 || a.dims.size() != data[3] || a.dims.empty() || a.dims.size() > 4 ||
        static_cast<std::uint8_t>(a.type) != data[2])
        violated("accepted a bad magic, type or number of dims");
    const std::size_t header = 4 + 4 * a.dims.size();
    std::uint64_t count = 1;
    for (std::size_t i = 0; i < a.dims.size(); ++i) {
        const auto d = be(data + 4 + 4 * i, 4);
        if (d == 0 || static_cast<std::uint64_t>(a.dims[i]) != d) violated("dims differ from the header");
        count *= d;
    }
    const std::size_t esize = tessera::opt::idx_type_size(a.type);
    if (count > (std::uint64_t{1} << 31) || a.values.size() != count || size != header + count * esize)
        violated("accepted a file whose size is not the header plus its elements");
    for (std::size_t i = 0; i < a.values.size(); ++i) {
        const float want = reference_value(a.type, data + header, i);
        const float got = a.values[i];
        if (std::isnan(want) ? !std::isnan(got) : std::bit_cast<std::uint32_t>(want) != std::bit_cast<std::uint32_t>(got))
            violated("element " + std::to_string(i) + " decoded wrongly");
    }
    return true;
}

#if defined(TESSERA_FUZZ_GZIP) && TESSERA_FUZZ_GZIP
// 8 MiB inflated at most: parse_idx makes 32 MiB of floats of it, under run_fuzz_idx.sh's
// 64 MB limit on one allocation.
constexpr std::size_t gunzip_limit = std::size_t{8} << 20;

void check_gunzip(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> out;
    try {
        out = mnist::gunzip(std::as_bytes(std::span(data, size)), "fuzz.gz", gunzip_limit);
    } catch (const tessera::error& e) {
        if (e.code() != errc::format) violated(std::string("gunzip: wrong error code: ") + e.what());
        if (std::string(e.what()).rfind("gunzip 'fuzz.gz': ", 0) != 0)
            violated(std::string("gunzip: message without the file: ") + e.what());
        return;
    }
    if (out.size() > gunzip_limit) violated("gunzip returned more than its limit");
    if (out.size() <= (std::size_t{1} << 20)) {
        // deflate it again (gzip wrapper) and inflate: the same bytes
        z_stream z{};
        if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) violated("deflateInit2");
        std::vector<std::byte> gz(deflateBound(&z, static_cast<uLong>(out.size())) + 64);
        z.next_in = reinterpret_cast<Bytef*>(out.data());
        z.avail_in = static_cast<uInt>(out.size());
        z.next_out = reinterpret_cast<Bytef*>(gz.data());
        z.avail_out = static_cast<uInt>(gz.size());
        const int rc = deflate(&z, Z_FINISH);
        gz.resize(z.total_out);
        deflateEnd(&z);
        if (rc != Z_STREAM_END) violated("deflate did not finish");
        if (mnist::gunzip(gz, "again.gz", gunzip_limit) != out) violated("gunzip round trip differs");
    }
    (void)check_idx(reinterpret_cast<const std::uint8_t*>(out.data()), out.size(), "fuzz.gz");
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        (void)check_idx(data, size, "fuzz");
#if defined(TESSERA_FUZZ_GZIP) && TESSERA_FUZZ_GZIP
        check_gunzip(data, size);
#endif
    } catch (const std::exception& e) {
        std::fprintf(stderr, "idx fuzz property violated: %s\n", e.what());
        std::abort();
    }
    return 0;
}
