// tessera/opt/idx.hpp: IDX files built byte by byte, one per type code, parsed to the
// expected dims and values; every malformed input rejected with errc::format and the
// message naming the file, the offset and the reason; random mutations of valid files
// either parse or throw tessera::error.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "idx_test_util.hpp"
#include "tessera/opt/idx.hpp"

using namespace tessera;
using opt::idx_type;
using idx_test::raw;

namespace {

opt::idx_array parse(const raw& r, const opt::idx_limits& limits = {}) {
    return opt::parse_idx(r.b, "case.idx", limits);
}

// Parses and returns the error; fails the test when parsing succeeds.
error parse_error(const raw& r, const opt::idx_limits& limits = {}) {
    try {
        (void)parse(r, limits);
    } catch (const error& e) {
        return e;
    }
    FAIL("parse_idx accepted a broken file");
    return error(errc::format, "");
}

// The message starts with the file and the offset and contains the reason.
void expect_rejected(const raw& r, std::uint64_t offset, const std::string& reason, const opt::idx_limits& limits = {}) {
    const error e = parse_error(r, limits);
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(e.code() == errc::format);
    CHECK(msg.find("idx file 'case.idx': offset " + std::to_string(offset) + ": ") == 0);
    CHECK(msg.find(reason) != std::string::npos);
}

}  // namespace

TEST_CASE("idx: u8 file") {
    raw r;
    r.header(0x08, {2, 3}).u8(0).u8(1).u8(127).u8(128).u8(254).u8(255);
    const auto a = parse(r);
    CHECK(a.type == idx_type::u8);
    CHECK(a.dims == std::vector<std::int64_t>{2, 3});
    CHECK(a.n_elements() == 6);
    CHECK(a.values == std::vector<float>{0, 1, 127, 128, 254, 255});
}

TEST_CASE("idx: i8 file") {
    raw r;
    r.header(0x09, {4}).u8(0x00).u8(0x7f).u8(0x80).u8(0xff);
    const auto a = parse(r);
    CHECK(a.type == idx_type::i8);
    CHECK(a.dims == std::vector<std::int64_t>{4});
    CHECK(a.values == std::vector<float>{0, 127, -128, -1});
}

TEST_CASE("idx: i16 file (big-endian)") {
    raw r;
    r.header(0x0B, {2, 2}).be16(0x0001).be16(0x7fff).be16(0x8000).be16(0xfffe);
    const auto a = parse(r);
    CHECK(a.type == idx_type::i16);
    CHECK(a.dims == std::vector<std::int64_t>{2, 2});
    CHECK(a.values == std::vector<float>{1, 32767, -32768, -2});
    // the bytes in order: 0x01 0x02 is 258, not 513
    raw s;
    s.header(0x0B, {1}).u8(0x01).u8(0x02);
    CHECK(parse(s).values == std::vector<float>{258});
}

TEST_CASE("idx: i32 file (big-endian; rounded to float beyond 2^24)") {
    raw r;
    r.header(0x0C, {5}).be32(1).be32(0x80000000u).be32(0x00ffffffu).be32(0xffffffffu).be32(0x01020304u);
    const auto a = parse(r);
    CHECK(a.type == idx_type::i32);
    CHECK(a.values == std::vector<float>{1, -2147483648.0f, 16777215, -1, static_cast<float>(0x01020304)});
}

TEST_CASE("idx: f32 file") {
    raw r;
    r.header(0x0D, {1, 1, 5}).be32(0x3f800000u).be32(0xc0490fdbu).be32(0x7f800000u).be32(0x7fc00000u).be32(0x00000001u);
    const auto a = parse(r);
    CHECK(a.type == idx_type::f32);
    CHECK(a.dims == std::vector<std::int64_t>{1, 1, 5});
    REQUIRE(a.values.size() == 5);
    CHECK(a.values[0] == 1.0f);
    CHECK(a.values[1] == std::bit_cast<float>(0xc0490fdbu));
    CHECK(a.values[1] == doctest::Approx(-3.14159265));
    CHECK(a.values[2] == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(a.values[3]));
    CHECK(a.values[4] == std::numeric_limits<float>::denorm_min());
}

TEST_CASE("idx: f64 file (rounded to float)") {
    raw r;
    r.header(0x0E, {2, 2})
        .be64(0x3ff0000000000000ull)   // 1
        .be64(0xbff8000000000000ull)   // -1.5
        .be64(0x3fd5555555555555ull)   // 1/3
        .be64(0x7e37e43c8800759cull);  // 1e300: beyond float
    const auto a = parse(r);
    CHECK(a.type == idx_type::f64);
    CHECK(a.values[0] == 1.0f);
    CHECK(a.values[1] == -1.5f);
    CHECK(a.values[2] == static_cast<float>(1.0 / 3.0));
    CHECK(a.values[3] == std::numeric_limits<float>::infinity());
}

TEST_CASE("idx: four dims, and the MNIST layouts") {
    raw r;
    r.header(0x08, {2, 1, 3, 2});
    for (int i = 0; i < 12; ++i) r.u8(static_cast<unsigned>(i));
    const auto a = parse(r);
    CHECK(a.dims == std::vector<std::int64_t>{2, 1, 3, 2});
    CHECK(a.values[11] == 11.0f);

    const auto images = opt::parse_idx(idx_test::u8_file({3, 28, 28}, 3 * 784, [](std::size_t i) { return i % 251; }), "img");
    CHECK(images.dims == std::vector<std::int64_t>{3, 28, 28});
    CHECK(images.values[2 * 784 + 5] == static_cast<float>((2 * 784 + 5) % 251));
    const auto labels = opt::parse_idx(idx_test::u8_file({3}, 3, [](std::size_t i) { return i * 3; }), "lbl");
    CHECK(labels.values == std::vector<float>{0, 3, 6});

    CHECK(opt::idx_type_name(idx_type::i16) == "i16");
    CHECK(opt::idx_type_size(idx_type::f64) == 8);
    CHECK(static_cast<int>(idx_type::f32) == 0x0D);
}

TEST_CASE("idx: short header") {
    expect_rejected(raw{}, 0, "short header: the magic needs 4 bytes, only 0 present");
    raw r;
    r.u8(0).u8(0).u8(0x08);
    expect_rejected(r, 0, "short header: the magic needs 4 bytes, only 3 present");
    raw d;  // 3 dims, the second one cut
    d.u8(0).u8(0).u8(0x08).u8(3).be32(1).u8(0).u8(0);
    expect_rejected(d, 8, "short header: 3 dimensions need 16 header bytes, only 10 present");
    raw e;  // 1 dim, none of its bytes
    e.u8(0).u8(0).u8(0x08).u8(1);
    expect_rejected(e, 4, "short header: 1 dimensions need 8 header bytes, only 4 present");
}

TEST_CASE("idx: bad magic") {
    raw a;
    a.u8(1).u8(0).u8(0x08).u8(1).be32(1).u8(7);
    expect_rejected(a, 0, "bad magic 0x01 0x00: an IDX file starts with two zero bytes");
    raw b;
    b.u8(0).u8(0x05).u8(0x08).u8(1).be32(1).u8(7);
    expect_rejected(b, 1, "bad magic 0x00 0x05");
    raw gz;
    gz.u8(0x1f).u8(0x8b).u8(0x08).u8(0x00).be32(0);
    expect_rejected(gz, 0, "this is a gzip file, decompress it first");
}

TEST_CASE("idx: unknown type code") {
    for (unsigned code : {0x00u, 0x01u, 0x07u, 0x0Au, 0x0Fu, 0x80u, 0xffu}) {
        CAPTURE(code);
        raw r;
        r.header(code, {1}).u8(0);
        static constexpr char digits[] = "0123456789abcdef";
        const std::string hex = std::string("0x") + digits[code >> 4] + digits[code & 15];
        expect_rejected(r, 2, "unknown type code " + hex + " (known: 0x08 u8");
    }
}

TEST_CASE("idx: number of dimensions") {
    raw zero;
    zero.u8(0).u8(0).u8(0x08).u8(0).u8(42);
    expect_rejected(zero, 3, "0 dimensions (at least 1 needed)");
    raw five;
    five.header(0x08, {1, 1, 1, 1, 1}).u8(0);
    expect_rejected(five, 3, "5 dimensions, more than the limit of 4");
    raw many;  // 255 dims, all 1
    many.u8(0).u8(0).u8(0x08).u8(255);
    for (int i = 0; i < 255; ++i) many.be32(1);
    many.u8(0);
    expect_rejected(many, 3, "255 dimensions, more than the limit of 4");
    opt::idx_limits two;
    two.max_dims = 2;
    raw three;
    three.header(0x08, {1, 1, 1}).u8(0);
    expect_rejected(three, 3, "3 dimensions, more than the limit of 2", two);
    two.max_dims = 255;  // a caller's wider limit accepts them
    CHECK(parse(many, two).dims.size() == 255);
}

TEST_CASE("idx: a zero dimension") {
    raw r;
    r.header(0x08, {2, 0, 3});
    expect_rejected(r, 8, "dimension 1 is 0");
    raw f;
    f.header(0x0D, {0});
    expect_rejected(f, 4, "dimension 0 is 0");
}

TEST_CASE("idx: element count overflow and limit") {
    raw o;
    o.header(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu, 2}).u8(0);
    expect_rejected(o, 4, "dimensions [4294967295, 4294967295, 4294967295, 2]: the element count overflows 64 bits");
    raw big;
    big.header(0x08, {65536, 32769}).u8(0);
    expect_rejected(big, 4, "dimensions [65536, 32769] make 2147549184 elements, more than the limit of 2147483648");
    raw max;  // exactly 2^31 elements: within the limit, so the data is what is missing
    max.header(0x0E, {65536, 32768}).u8(0);
    expect_rejected(max, 12, "truncated data: 2147483648 elements of f64 need 17179869184 bytes, only 1 present");
    opt::idx_limits small;
    small.max_elements = 5;
    raw six;
    six.header(0x08, {2, 3}).u8(1).u8(2).u8(3).u8(4).u8(5).u8(6);
    expect_rejected(six, 4, "dimensions [2, 3] make 6 elements, more than the limit of 5", small);
    small.max_elements = 6;
    CHECK(parse(six, small).n_elements() == 6);
    // a caller's huge limit: count * 8 overflows, still reported as truncated data
    opt::idx_limits huge;
    huge.max_elements = std::numeric_limits<std::uint64_t>::max();
    raw h;
    h.header(0x0E, {0x80000000u, 0x40000001u});  // 2^61 + 2^31 elements
    expect_rejected(h, 12, "elements of f64 need more than 2^64 bytes, only 0 present", huge);
    opt::idx_limits bad;
    bad.max_dims = 0;
    CHECK_THROWS_WITH_AS(parse(six, bad), doctest::Contains("limits need max_dims in 1..255"), error);
}

TEST_CASE("idx: truncated data") {
    raw r;
    r.header(0x0B, {3}).be16(1).be16(2).u8(3);
    expect_rejected(r, 8, "truncated data: 3 elements of i16 need 6 bytes, only 5 present");
    raw none;
    none.header(0x08, {10, 28, 28});
    expect_rejected(none, 16, "truncated data: 7840 elements of u8 need 7840 bytes, only 0 present");
    raw f;
    f.header(0x0E, {2}).be64(0);
    expect_rejected(f, 8, "truncated data: 2 elements of f64 need 16 bytes, only 8 present");
}

TEST_CASE("idx: trailing bytes") {
    raw r;
    r.header(0x08, {2}).u8(1).u8(2).u8(3);
    expect_rejected(r, 10, "1 trailing bytes after the data (2 elements of u8 end at offset 10, the file has 11 bytes)");
    raw f;
    f.header(0x0C, {1, 1}).be32(5).be32(6).be32(7);
    expect_rejected(f, 16, "8 trailing bytes after the data (1 elements of i32 end at offset 16");
}

TEST_CASE("idx: the file name is quoted as given") {
    raw r;
    CHECK_THROWS_WITH_AS(opt::parse_idx(r.b, "/data/train-images-idx3-ubyte.gz"),
                         "idx file '/data/train-images-idx3-ubyte.gz': offset 0: short header: the magic needs 4 bytes, only 0 present",
                         error);
}

TEST_CASE("idx: random mutations parse or throw tessera::error(format)") {
    std::mt19937 rng(1234);
    std::vector<raw> valid(6);
    valid[0].header(0x08, {3, 4}).b.resize(4 + 8 + 12, std::byte{9});
    valid[1].header(0x09, {5}).b.resize(4 + 4 + 5, std::byte{0x80});
    valid[2].header(0x0B, {2, 2}).b.resize(4 + 8 + 8, std::byte{1});
    valid[3].header(0x0C, {3}).b.resize(4 + 4 + 12, std::byte{2});
    valid[4].header(0x0D, {1, 2, 1}).b.resize(4 + 12 + 8, std::byte{0x3f});
    valid[5].header(0x0E, {2}).b.resize(4 + 4 + 16, std::byte{0x40});
    for (const raw& v : valid) CHECK_NOTHROW((void)parse(v));
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 20000; ++iter) {
        raw m = valid[static_cast<std::size_t>(iter) % valid.size()];
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits; ++k) {
            switch (rng() % 4) {
                case 0:  // flip a byte
                    if (!m.b.empty()) m.b[rng() % m.b.size()] = static_cast<std::byte>(rng());
                    break;
                case 1:  // cut
                    m.b.resize(rng() % (m.b.size() + 1));
                    break;
                case 2:  // append
                    m.b.push_back(static_cast<std::byte>(rng()));
                    break;
                default:  // a header byte
                    if (m.b.size() > 3) m.b[rng() % 4] = static_cast<std::byte>(rng() % 16);
            }
        }
        try {
            const auto a = parse(m);
            std::int64_t n = 1;
            for (std::int64_t d : a.dims) n *= d;
            REQUIRE(n == a.n_elements());
            ++accepted;
        } catch (const error& e) {
            REQUIRE(e.code() == errc::format);
            REQUIRE(std::string(e.what()).rfind("idx file 'case.idx': offset ", 0) == 0);
            ++rejected;
        }
    }
    CHECK(accepted > 0);
    CHECK(rejected > 0);
}
