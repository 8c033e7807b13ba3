// f16/bf16 conversions against references that share no code with them: the f16
// values decoded with ldexp, and rounding done by searching the sorted value table.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tessera/core/f16.hpp"

using namespace tessera;

namespace {

// Decodes binary16 from its definition.
double f16_reference_value(std::uint16_t h) {
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0) v = std::ldexp(m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = std::ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

// Nearest binary16 to a finite or infinite f32, ties to even, by table search.
std::uint16_t f16_reference_round(float f) {
    static const std::vector<double> table = [] {  // all non-negative finite values, ascending
        std::vector<double> t;
        for (std::uint32_t h = 0; h < 0x7c00; ++h) t.push_back(f16_reference_value(static_cast<std::uint16_t>(h)));
        return t;
    }();
    const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(f));
    const double max_half = 65504.0, overflow_at = 65520.0;  // midpoint to the next binade step
    if (a >= overflow_at) return sign | 0x7c00;
    if (a >= max_half) return sign | 0x7bff;
    auto it = std::lower_bound(table.begin(), table.end(), a);  // first >= a
    const auto hi = static_cast<std::uint16_t>(it - table.begin());
    if (table[hi] == a || hi == 0) return sign | hi;
    const auto lo = static_cast<std::uint16_t>(hi - 1);
    const double dlo = a - table[lo], dhi = table[hi] - a;
    if (dlo < dhi) return sign | lo;
    if (dhi < dlo) return sign | hi;
    return sign | ((lo & 1) ? hi : lo);
}

bool is_f16_nan(std::uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

}  // namespace

TEST_CASE("f16 -> f32 decodes all 65536 values exactly") {
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float f = f16::from_bits(h).to_float();
        CAPTURE(i);
        if (is_f16_nan(h)) {
            REQUIRE(std::isnan(f));
            const auto b = std::bit_cast<std::uint32_t>(f);
            CHECK((b >> 31) == (h >> 15u));                  // sign kept
            CHECK(((b >> 13) & 0x1ff) == (h & 0x1ff));       // payload kept
            CHECK((b & 0x400000u) != 0);                     // quiet
        } else {
            REQUIRE(static_cast<double>(f) == f16_reference_value(h));
            CHECK(std::signbit(f) == bool(h & 0x8000));
        }
    }
}

TEST_CASE("f32 -> f16 -> f32 is the identity on every non-NaN f16, and NaNs stay NaN") {
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const f16 back = f16::from_float(f16::from_bits(h).to_float());
        CAPTURE(i);
        if (is_f16_nan(h)) {
            CHECK(is_f16_nan(back.bits));
            CHECK((back.bits & 0x8000) == (h & 0x8000));
            CHECK((back.bits & 0x200) != 0);
            CHECK((back.bits & 0x1ff) == (h & 0x1ff));
        } else {
            CHECK(back.bits == h);
        }
    }
}

TEST_CASE("f32 -> f16 rounds to nearest even (random f32, midpoints, edges)") {
    std::mt19937 rng(1234);
    std::vector<float> cases;
    std::uniform_int_distribution<std::uint32_t> bits;
    for (int i = 0; i < 200000; ++i) {
        float f = std::bit_cast<float>(bits(rng));
        if (!std::isnan(f)) cases.push_back(f);
    }
    std::uniform_real_distribution<float> mag(-20.f, 20.f);
    for (int i = 0; i < 200000; ++i) cases.push_back(std::exp2(mag(rng)) * (i & 1 ? -1.f : 1.f));
    // exact midpoints between adjacent f16 values, and one f32 ulp either side
    for (std::uint32_t h = 0; h < 0x7bff; h += 7) {
        const double mid = (f16_reference_value(static_cast<std::uint16_t>(h)) +
                            f16_reference_value(static_cast<std::uint16_t>(h + 1))) / 2;
        const float m = static_cast<float>(mid);
        REQUIRE(static_cast<double>(m) == mid);
        cases.push_back(m);
        cases.push_back(std::nextafter(m, 0.f));
        cases.push_back(std::nextafter(m, INFINITY));
        cases.push_back(-m);
    }
    for (float f : {0.f, -0.f, 65504.f, 65519.99f, 65520.f, 65536.f, 1e30f, INFINITY, -INFINITY, 5.96e-8f,
                    2.98e-8f, 2.9802322e-8f, 2.99e-8f, 1e-40f, -1e-45f, 6.1035156e-05f, 6.1e-05f})
        cases.push_back(f);
    for (float f : cases) {
        CAPTURE(f);
        REQUIRE(f16::from_float(f).bits == f16_reference_round(f));
    }
}

TEST_CASE("f32 NaN -> f16 stays NaN with sign and top payload bits") {
    for (std::uint32_t b : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu, 0x7fffe000u}) {
        const auto h = f16::from_float(std::bit_cast<float>(b)).bits;
        CAPTURE(b);
        CHECK(is_f16_nan(h));
        CHECK((h >> 15) == (b >> 31));
        CHECK((h & 0x3ff) == (0x200 | ((b >> 13) & 0x3ff)));
    }
}

TEST_CASE("bf16 conversions: round to nearest even, NaN quiet") {
    // Reference: nearest of the two bf16 neighbours computed in double.
    std::mt19937 rng(99);
    std::uniform_int_distribution<std::uint32_t> bits;
    for (int i = 0; i < 300000; ++i) {
        const std::uint32_t b = bits(rng);
        const float f = std::bit_cast<float>(b);
        const std::uint16_t got = bf16::from_float(f).bits;
        CAPTURE(b);
        if (std::isnan(f)) {
            CHECK(std::isnan(bf16::from_bits(got).to_float()));
            CHECK((got & 0x40) != 0);
            CHECK((got >> 15) == (b >> 31));
            continue;
        }
        const std::uint32_t lo = b & 0xffff0000u, hi = lo + 0x10000u;
        const double d = std::fabs(static_cast<double>(f));
        const double dlo = std::fabs(static_cast<double>(std::bit_cast<float>(lo))) ;
        // hi may step into inf (0x7f80...), whose distance we treat as the next binade step
        const double dhi = (hi & 0x7fffffffu) == 0x7f800000u
                               ? std::ldexp(1.0, 128)
                               : std::fabs(static_cast<double>(std::bit_cast<float>(hi)));
        std::uint16_t expect;
        if (d - dlo < dhi - d) expect = static_cast<std::uint16_t>(lo >> 16);
        else if (dhi - d < d - dlo) expect = static_cast<std::uint16_t>(hi >> 16);
        else expect = static_cast<std::uint16_t>(((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
        REQUIRE(got == expect);
    }
    for (std::uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float f = bf16::from_bits(h).to_float();
        CHECK(std::bit_cast<std::uint32_t>(f) == (i << 16));
        if (!std::isnan(f)) CHECK(bf16::from_float(f).bits == h);
    }
}

TEST_CASE("conversions are usable in constant expressions") {
    static_assert(f16::from_float(1.0f).bits == 0x3c00);
    static_assert(f16::from_float(-2.0f).bits == 0xc000);
    static_assert(f16::from_bits(0x3555).to_float() == 0.333251953125f);
    static_assert(bf16::from_float(1.0f).bits == 0x3f80);
    static_assert(f16::from_float(65520.f).bits == 0x7c00);
    CHECK(true);
}
