// Golden bytes, continued: inputs whose fits are exact, so every scale, min and quant
// follows by hand from the format definitions (see each case), checked byte for byte;
// the dequantized values are checked exactly against the format's formula.
#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <vector>

#include "golden_util.hpp"
#include "tessera/quant/reference.hpp"

using namespace tessera;
using namespace tessera::quant;

namespace {
float h(std::uint16_t bits) { return f16::from_bits(bits).to_float(); }
}  // namespace

TEST_CASE("q4_1 golden: unit step, negative min, zeros") {
    std::array<float, 32> x{}, y{};
    block_q4_1 b;
    std::vector<std::uint8_t> want;
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j % 16) - 4.5f;  // min -4.5, max 10.5: d = 15/15
    quantize_row_ref(x.data(), &b, 32);
    put16(want, 0x3c00);
    put16(want, 0xc480);  // m = -4.5
    for (int j = 0; j < 16; ++j) want.push_back(static_cast<std::uint8_t>(0x11 * j));
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 32);
    CHECK(y == x);

    x.fill(0.0f);
    quantize_row_ref(x.data(), &b, 32);
    want.assign(20, 0);  // d = 0, m = 0, q = trunc(0.5) = 0
    CHECK(hex(bytes_of(b)) == hex(want));
}

TEST_CASE("q5_0 and q5_1 golden: the fifth bit in qh") {
    std::array<float, 32> x{}, y{};
    {
        // -16..15: max = -16, d = 1, q = x + 16 = j; elements 16..31 have the fifth bit
        for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
        block_q5_0 b;
        quantize_row_ref(x.data(), &b, 32);
        std::vector<std::uint8_t> want;
        put16(want, 0x3c00);
        for (auto v : {0x00, 0x00, 0xff, 0xff}) want.push_back(static_cast<std::uint8_t>(v));
        for (int j = 0; j < 16; ++j) want.push_back(static_cast<std::uint8_t>(0x11 * j));
        CHECK(hex(bytes_of(b)) == hex(want));
        dequantize_row_ref(&b, y.data(), 32);
        CHECK(y == x);
    }
    {
        // 0..31 + 0.25: min 0.25, d = 31/31, q = j
        for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j) + 0.25f;
        block_q5_1 b;
        quantize_row_ref(x.data(), &b, 32);
        std::vector<std::uint8_t> want;
        put16(want, 0x3c00);
        put16(want, 0x3400);  // m = 0.25
        for (auto v : {0x00, 0x00, 0xff, 0xff}) want.push_back(static_cast<std::uint8_t>(v));
        for (int j = 0; j < 16; ++j) want.push_back(static_cast<std::uint8_t>(0x11 * j));
        CHECK(hex(bytes_of(b)) == hex(want));
        dequantize_row_ref(&b, y.data(), 32);
        CHECK(y == x);
    }
}

TEST_CASE("q2_K golden: exact 2-bit sub-blocks with a min") {
    // x = e%4 - 1.5: every sub-block fits exactly with scale 1, min 1.5. Scales
    // quantize to 15/15 against their maximum: d = f16(1/15), dmin = f16(1.5/15).
    std::vector<float> x(256), y(256);
    for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(e % 4) - 1.5f;
    block_q2_K b;
    quantize_row_ref(x.data(), &b, 256);
    std::vector<std::uint8_t> want(16, 0xff);  // scale 15 | min 15 << 4
    for (int i = 0; i < 64; ++i) want.push_back(static_cast<std::uint8_t>(0x55 * (i % 4)));  // 4 copies of e%4
    put16(want, 0x2c44);
    put16(want, 0x2e66);
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 256);
    for (int e = 0; e < 256; ++e) CHECK(y[e] == h(0x2c44) * 15 * static_cast<float>(e % 4) - h(0x2e66) * 15);
}

TEST_CASE("q3_K golden: exact 3-bit sub-blocks, scale -32 with d < 0") {
    // x = e%8 - 4: each sub-block's fit is scale 1 (signed max -4), so all 16 scales
    // quantize to -32 (stored 0) against d = 1/-32; quants x + 4, high bit for x >= 0.
    std::vector<float> x(256), y(256);
    for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(e % 8 - 4);
    block_q3_K b;
    quantize_row_ref(x.data(), &b, 256);
    std::vector<std::uint8_t> want;
    for (int m = 0; m < 32; ++m) want.push_back(m % 8 >= 4 ? 0xff : 0x00);             // hmask
    for (int i = 0; i < 64; ++i) want.push_back(static_cast<std::uint8_t>(0x55 * (i % 4)));  // low 2 bits
    want.insert(want.end(), 12, 0x00);                                                // scales
    put16(want, 0xa800);
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 256);
    CHECK(y == x);
}

TEST_CASE("q4_K and q5_K golden: 6-bit scales at 63, packed scale bytes") {
    // q4_K: x = e%16 fits scale 1, min 0 in every sub-block: scales 63/63, d = f16(1/63),
    // dmin 0. Packing of (sc 63, m 0): bytes 0-3 = 63 | (63>>4)<<6, 4-7 = 0, 8-11 = 63&15.
    std::vector<float> x(256), y(256);
    const std::vector<std::uint8_t> scale_bytes = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0x0f, 0x0f, 0x0f, 0x0f};
    const float dj = h(0x2410) * 63;
    {
        for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(e % 16);
        block_q4_K b;
        quantize_row_ref(x.data(), &b, 256);
        std::vector<std::uint8_t> want;
        put16(want, 0x2410);
        put16(want, 0x0000);
        want.insert(want.end(), scale_bytes.begin(), scale_bytes.end());
        for (int i = 0; i < 128; ++i) want.push_back(static_cast<std::uint8_t>(0x11 * (i % 16)));
        CHECK(hex(bytes_of(b)) == hex(want));
        dequantize_row_ref(&b, y.data(), 256);
        for (int e = 0; e < 256; ++e) CHECK(y[e] == dj * static_cast<float>(e % 16) - 0.0f);
    }
    {
        // q5_K: x = e%32; fifth bit for e%32 >= 16 lands in qh[l], bits 2c and 2c+1.
        for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(e % 32);
        block_q5_K b;
        quantize_row_ref(x.data(), &b, 256);
        std::vector<std::uint8_t> want;
        put16(want, 0x2410);
        put16(want, 0x0000);
        want.insert(want.end(), scale_bytes.begin(), scale_bytes.end());
        for (int l = 0; l < 32; ++l) want.push_back(l >= 16 ? 0xff : 0x00);
        for (int i = 0; i < 128; ++i) want.push_back(static_cast<std::uint8_t>(0x11 * (i % 16)));
        CHECK(hex(bytes_of(b)) == hex(want));
        dequantize_row_ref(&b, y.data(), 256);
        for (int e = 0; e < 256; ++e) CHECK(y[e] == dj * static_cast<float>(e % 32));
    }
}

TEST_CASE("q6_K golden: int8 scale -128 with d = -1/128") {
    // x = 4 (e%16) - 32: every sub-block fits scale 1 exactly (signed max -32), the
    // scales quantize to -128 against d = 1/-128, and q = x + 32.
    std::vector<float> x(256), y(256);
    for (int e = 0; e < 256; ++e) x[e] = static_cast<float>(4 * (e % 16) - 32);
    block_q6_K b;
    quantize_row_ref(x.data(), &b, 256);
    std::vector<std::uint8_t> want;
    // ql: byte l of each 64-byte half = (q[l] & 15) | (q[l+64] & 15) << 4, byte l+32 the
    // same for l+32 / l+96; qh: top 2 bits of q[l], q[l+32], q[l+64], q[l+96].
    // q[e] = 4 (e%16), equal for e, e+32, e+64, e+96.
    for (int half = 0; half < 2; ++half)
        for (int l = 0; l < 64; ++l) {
            const int q = 4 * (l % 16);
            want.push_back(static_cast<std::uint8_t>((q & 15) | ((q & 15) << 4)));
        }
    for (int half = 0; half < 2; ++half)
        for (int l = 0; l < 32; ++l) want.push_back(static_cast<std::uint8_t>(0x55 * ((4 * (l % 16)) >> 4)));
    want.insert(want.end(), 16, 0x80);  // scales -128
    put16(want, 0xa000);
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 256);
    CHECK(y == x);

    std::vector<float> z(256, 0.0f);
    quantize_row_ref(z.data(), &b, 256);
    CHECK(hex(bytes_of(b)) == hex(std::vector<std::uint8_t>(210, 0)));  // all-zero block
}

TEST_CASE("iq4_nl and iq4_xs golden: the level table itself") {
    std::vector<float> x(256), y(256);
    for (int e = 0; e < 256; ++e) x[e] = kvalues_iq4nl[e % 16];
    {
        // signed max -127 = level 0: d = 1 (with or without the scale search)
        for (int pass = 0; pass < 2; ++pass) {
            block_iq4_nl b;
            if (pass == 0) quantize_row_ref(x.data(), &b, 32);
            else quantize_row_ref(x.data(), &b, 32, nullptr);
            std::vector<std::uint8_t> want;
            put16(want, 0x3c00);
            for (int j = 0; j < 16; ++j) want.push_back(static_cast<std::uint8_t>(0x11 * j));
            CHECK(hex(bytes_of(b)) == hex(want));
            dequantize_row_ref(&b, y.data(), 32);
            for (int j = 0; j < 32; ++j) CHECK(y[j] == x[j]);
        }
    }
    {
        // every sub-block scale 1; super-block d = -1/32, sub-block scales -32 (stored 0)
        block_iq4_xs b;
        quantize_row_ref(x.data(), &b, 256);
        std::vector<std::uint8_t> want;
        put16(want, 0xa800);
        put16(want, 0x0000);
        want.insert(want.end(), 4, 0x00);
        for (int i = 0; i < 128; ++i) want.push_back(static_cast<std::uint8_t>(0x11 * (i % 16)));
        CHECK(hex(bytes_of(b)) == hex(want));
        dequantize_row_ref(&b, y.data(), 256);
        CHECK(y == x);
    }
}

TEST_CASE("tq2_0 and tq1_0 golden: ternary digits") {
    // x = 2 (e%3 - 1): d = amax = 2, trit t + 1 = e%3.
    std::vector<float> x(256), y(256);
    for (int e = 0; e < 256; ++e) x[e] = 2.0f * static_cast<float>(e % 3 - 1);
    {
        block_tq2_0 b;
        quantize_row_ref(x.data(), &b, 256);
        std::vector<std::uint8_t> want;
        for (int c = 0; c < 2; ++c)
            for (int m = 0; m < 32; ++m) {
                int v = 0;
                for (int l = 0; l < 4; ++l) v |= ((128 * c + 32 * l + m) % 3) << (2 * l);
                want.push_back(static_cast<std::uint8_t>(v));
            }
        put16(want, 0x4000);
        CHECK(hex(bytes_of(b)) == hex(want));
        dequantize_row_ref(&b, y.data(), 256);
        CHECK(y == x);
    }
    {
        // byte = ceil(243-fraction * 256): v = 5 base-3 digits, first element most
        // significant; elements of byte i: i + 32k (i < 32), 160 + (i-32) + 16k (i < 48),
        // qh byte j: 240 + j + 4k with 4 digits and a trailing 0 digit.
        block_tq1_0 b;
        quantize_row_ref(x.data(), &b, 256);
        std::vector<std::uint8_t> want;
        const auto byte_of = [&](auto element_of, int ndigits) {
            int v = 0;
            for (int k = 0; k < 5; ++k) v = 3 * v + (k < ndigits ? element_of(k) % 3 : 0);
            return static_cast<std::uint8_t>((v * 256 + 242) / 243);
        };
        for (int i = 0; i < 32; ++i) want.push_back(byte_of([i](int k) { return i + 32 * k; }, 5));
        for (int i = 0; i < 16; ++i) want.push_back(byte_of([i](int k) { return 160 + i + 16 * k; }, 5));
        for (int j = 0; j < 4; ++j) want.push_back(byte_of([j](int k) { return 240 + j + 4 * k; }, 4));
        put16(want, 0x4000);
        CHECK(hex(bytes_of(b)) == hex(want));
        dequantize_row_ref(&b, y.data(), 256);
        CHECK(y == x);
    }
}

TEST_CASE("mxfp4 golden: the E2M1 grid") {
    // x = the 16 E2M1 values (0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, ...): amax 6,
    // e = floor(log2 6) - 2 + 127 = 127 (scale 2^-1 on the doubled table); -0 takes
    // index 0 (first of the two zeros).
    std::array<float, 32> x{}, y{};
    for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(kvalues_mxfp4[j % 16]);
    block_mxfp4 b;
    quantize_row_ref(x.data(), &b, 32);
    std::vector<std::uint8_t> want = {127};
    for (int j = 0; j < 16; ++j) {
        const int q = j == 8 ? 0 : j;
        want.push_back(static_cast<std::uint8_t>(q | (q << 4)));
    }
    CHECK(hex(bytes_of(b)) == hex(want));
    dequantize_row_ref(&b, y.data(), 32);
    CHECK(y == x);

    x.fill(0.0f);
    x[0] = 1.0f;  // amax 1: e = 0 - 2 + 127 = 125; 1.0 = E2M1 4 * 2^-2 = doubled 8 -> index 6
    quantize_row_ref(x.data(), &b, 32);
    CHECK(b.e == 125);
    CHECK(b.qs[0] == 6);
    CHECK(b.qs[1] == 0);
}

TEST_CASE("f16 and bf16 rows through the typed API") {
    const float x[2] = {1.0f / 3, -65504.0f};
    std::uint16_t out[2];
    CHECK(quantize(type_id::f16, x, out, 1, 2) == 4);
    CHECK(out[0] == 0x3555);
    CHECK(out[1] == 0xfbff);
    CHECK(quantize(type_id::bf16, x, out, 1, 2) == 4);
    CHECK(out[0] == 0x3eab);  // 0x3eaaaaab rounded to nearest even
    float back[2];
    dequantize_row(type_id::bf16, out, back, 2);
    CHECK(back[0] == std::bit_cast<float>(0x3eab0000u));
}
