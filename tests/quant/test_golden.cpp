// Golden bytes: small inputs whose encoded blocks follow by hand from each format's
// definition (scales, rounding rule, nibble order), checked byte for byte, and the
// dequantization of those blocks checked exactly.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <vector>

#include "golden_util.hpp"
#include "tessera/quant/reference.hpp"

using namespace tessera;
using namespace tessera::quant;

TEST_CASE("q8_0 golden: unit scale, round half away from zero") {
    std::array<float, 32> x{};
    x[0] = -127;
    x[1] = 0.5f;
    x[2] = -0.5f;
    x[3] = 1.5f;
    x[4] = 2.5f;  // round-half-even would give 2
    x[31] = 126.4f;
    block_q8_0 b;
    quantize_row_ref(x.data(), &b, 32);
    std::vector<std::uint8_t> want;
    put16(want, 0x3c00);  // d = 127/127 = 1
    std::array<std::int8_t, 32> q{};
    q[0] = -127, q[1] = 1, q[2] = -1, q[3] = 2, q[4] = 3, q[31] = 126;
    for (auto v : q) want.push_back(static_cast<std::uint8_t>(v));
    CHECK(hex(bytes_of(b)) == hex(want));
    std::array<float, 32> y{};
    dequantize_row_ref(&b, y.data(), 32);
    for (int j = 0; j < 32; ++j) CHECK(y[j] == static_cast<float>(q[j]));
}

TEST_CASE("q8_0 golden: zeros, spike, two blocks") {
    std::array<float, 64> x{};
    x[32 + 5] = 3.0f;
    block_q8_0 b[2];
    quantize_row_ref(x.data(), b, 64);
    std::vector<std::uint8_t> want;
    put16(want, 0x0000);
    want.insert(want.end(), 32, 0);
    put16(want, 0x260c);  // f16(3/127) = 0x260c (round to nearest even)
    for (int j = 0; j < 32; ++j) want.push_back(j == 5 ? 127 : 0);
    std::vector<std::uint8_t> got = bytes_of(b[0]);
    auto g1 = bytes_of(b[1]);
    got.insert(got.end(), g1.begin(), g1.end());
    CHECK(hex(got) == hex(want));
    std::array<float, 64> y{};
    dequantize_row_ref(b, y.data(), 64);
    const float d = f16::from_bits(0x260c).to_float();
    for (int j = 0; j < 64; ++j) CHECK(y[j] == (j == 37 ? 127 * d : 0.0f));
}

TEST_CASE("q8_1 golden: sum term") {
    std::array<float, 32> x{};
    x[0] = -127, x[1] = 0.5f, x[2] = -0.5f, x[3] = 1.5f, x[4] = 2.5f;
    block_q8_1 b;
    quantize_row_ref(x.data(), &b, 32);
    std::vector<std::uint8_t> want;
    put16(want, 0x3c00);
    put16(want, 0xd7a0);  // s = d * (-127 + 1 - 1 + 2 + 3) = -122
    std::array<std::int8_t, 32> q{};
    q[0] = -127, q[1] = 1, q[2] = -1, q[3] = 2, q[4] = 3;
    for (auto v : q) want.push_back(static_cast<std::uint8_t>(v));
    CHECK(hex(bytes_of(b)) == hex(want));
}

TEST_CASE("q8_K golden: signed max, nearest-even rounding, f32 scale, bsums") {
    std::vector<float> x(256, 0.0f);
    x[0] = -127;   // the signed max: iscale = -127 / -127 = 1
    x[1] = 0.5f;   // -> 0 (ties to even)
    x[2] = 1.5f;   // -> 2
    x[3] = -2.5f;  // -> -2
    x[17] = 7.0f;
    block_q8_K b;
    quantize_row_ref(x.data(), &b, 256);
    CHECK(b.d == 1.0f);
    CHECK(b.qs[0] == -127);
    CHECK(b.qs[1] == 0);
    CHECK(b.qs[2] == 2);
    CHECK(b.qs[3] == -2);
    CHECK(b.qs[17] == 7);
    CHECK(b.bsums[0] == -127);
    CHECK(b.bsums[1] == 7);
    for (int g = 2; g < 16; ++g) CHECK(b.bsums[g] == 0);

    std::vector<float> z(256, 0.0f);
    z[9] = 254.0f;  // positive max -> negative scale
    quantize_row_ref(z.data(), &b, 256);
    CHECK(b.d == -2.0f);
    CHECK(b.qs[9] == -127);
    std::vector<float> y(256);
    dequantize_row_ref(&b, y.data(), 256);
    CHECK(y[9] == 254.0f);
    CHECK(y[8] == 0.0f);
}

TEST_CASE("q4_0 golden: ramp, spike, zeros, +-max with clamping") {
    block_q4_0 b;
    std::vector<std::uint8_t> want;
    std::array<float, 32> x{}, y{};

    // ramp -8..7 twice: max = -8 (first of largest magnitude), d = 1, q = x + 8
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j % 16 - 8);
    quantize_row_ref(x.data(), &b, 32);
    put16(want, 0x3c00);
    for (int j = 0; j < 16; ++j) want.push_back(static_cast<std::uint8_t>(0x11 * j));
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 32);
    CHECK(y == x);

    // spike +8 at element 3: d = 8 / -8 = -1, the spike maps to q = 0, zeros to q = 8
    x.fill(0.0f);
    x[3] = 8.0f;
    quantize_row_ref(x.data(), &b, 32);
    want.clear();
    put16(want, 0xbc00);
    for (int j = 0; j < 16; ++j) want.push_back(j == 3 ? 0x80 : 0x88);
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 32);
    CHECK(y == x);

    // all zeros: d = 0 / -8 = -0 (f16 0x8000, as ggml writes it), every nibble 8
    x.fill(0.0f);
    quantize_row_ref(x.data(), &b, 32);
    want.clear();
    put16(want, 0x8000);
    want.insert(want.end(), 16, 0x88);
    CHECK(hex(bytes_of(b)) == hex(want));

    // +4, -4 alternating: max = +4, d = -0.5; -4 -> 16.5 -> clamped to 15 (= -3.5)
    for (int j = 0; j < 32; ++j) x[j] = j % 2 ? -4.0f : 4.0f;
    quantize_row_ref(x.data(), &b, 32);
    want.clear();
    put16(want, 0xb800);
    for (int j = 0; j < 16; ++j) want.push_back(j % 2 ? 0xff : 0x00);
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 32);
    for (int j = 0; j < 32; ++j) CHECK(y[j] == (j % 2 ? -3.5f : 4.0f));
}

TEST_CASE("row length not a multiple of the block size is refused") {
    std::vector<float> x(64, 1.0f);
    block_q4_0 b[2];
    CHECK_THROWS_WITH_AS(quantize_row_ref(x.data(), b, 33),
                         "quantize_row_ref(q4_0): row of 33 elements is not a multiple of the q4_0 block size 32",
                         tessera::error);
    try {
        block_q8_K k;
        quantize_row_ref(x.data(), &k, 64);
        FAIL("no throw");
    } catch (const tessera::error& e) {
        CHECK(e.code() == errc::shape_mismatch);
    }
    CHECK_THROWS_AS(dequantize_row_ref(b, x.data(), -32), tessera::error);
    CHECK_THROWS_AS((void)vec_dot_ref(31, b, static_cast<const block_q8_0*>(nullptr)), tessera::error);
}

TEST_CASE("round_away_i8 is roundf, on every float that maps into int8 and at the halves") {
    // exhaustive over [-129, 129]: every float with |v| <= 129 (about 2.2e9 values is
    // too many, so: all halves and their neighbours, plus a dense sweep)
    for (int k = -258; k <= 258; ++k) {
        const float half = static_cast<float>(k) * 0.5f;
        for (float v : {half, std::nextafter(half, -1000.0f), std::nextafter(half, 1000.0f)}) {
            CAPTURE(v);
            CHECK(quant::detail::round_away_i8(v) == quant::detail::trunc_i8(std::round(v)));
        }
    }
    for (float v = -130.0f; v <= 130.0f; v += 0.0009765625f * 3.7f)
        REQUIRE(quant::detail::round_away_i8(v) == quant::detail::trunc_i8(std::round(v)));
    CHECK(quant::detail::round_away_i8(std::nanf("")) == 0);
}
