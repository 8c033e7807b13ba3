// The foundation kernels under every arch this machine has, against scalar and
// double-precision references.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "tessera/kernels/all.hpp"

using namespace tessera;

namespace {
std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}
std::string arch_str(simd::arch_id a) { return std::string(simd::name_of(a)); }
}  // namespace

TEST_CASE("dot_f32 matches a double reference for every arch and length") {
    for (auto a : simd::available_archs()) {
        const auto dot = simd::kernel_for<kernels::dot_f32>(a);
        for (std::size_t n : {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 67, 127, 129, 193, 255, 1023, 4099}) {
            const auto x = random_floats(n, 1 + static_cast<unsigned>(n));
            const auto y = random_floats(n, 1000 + static_cast<unsigned>(n));
            double ref = 0, mag = 0;
            for (std::size_t i = 0; i < n; ++i) {
                ref += static_cast<double>(x[i]) * y[i];
                mag += std::fabs(static_cast<double>(x[i]) * y[i]);
            }
            CAPTURE(arch_str(a));
            CAPTURE(n);
            const double got = dot(x.data(), y.data(), n);
            // f32 summation error bound: n * eps * sum|x*y|, as in test-quantize-fns (|err|/n < 1e-4)
            CHECK(std::fabs(got - ref) <= 1e-6 * mag + 1e-30);
            if (n) CHECK(std::fabs(got - ref) / static_cast<double>(n) < 1e-4);
        }
    }
}

TEST_CASE("axpy_f32 matches the scalar reference within one rounding of each term") {
    for (auto a : simd::available_archs()) {
        const auto axpy = simd::kernel_for<kernels::axpy_f32>(a);
        for (std::size_t n : {0, 1, 3, 8, 15, 16, 17, 33, 100, 1031}) {
            const auto x = random_floats(n, 7);
            auto y = random_floats(n, 8);
            const auto y0 = y;
            const float alpha = 0.75f;
            axpy(alpha, x.data(), y.data(), n);
            CAPTURE(arch_str(a));
            CAPTURE(n);
            for (std::size_t i = 0; i < n; ++i) {
                const double exact = static_cast<double>(y0[i]) + static_cast<double>(alpha) * x[i];
                const double tol = 1.2e-7 * (std::fabs(static_cast<double>(y0[i])) +
                                             std::fabs(static_cast<double>(alpha) * x[i]));
                REQUIRE(std::fabs(y[i] - exact) <= tol);
            }
        }
    }
}

TEST_CASE("axpy_rows (f32 and f16 rows) matches a double reference for every arch, width and row count") {
    for (auto a : simd::available_archs()) {
        const auto rows32 = simd::kernel_for<kernels::axpy_rows_f32>(a);
        const auto rows16 = simd::kernel_for<kernels::axpy_rows_f16_f32>(a);
        for (std::size_t n : {0, 1, 3, 8, 15, 16, 17, 33, 64, 80, 100, 128, 129, 256, 300}) {
            for (std::size_t rows : {0, 1, 2, 7, 128}) {
                const std::size_t ldx = n + 5;  // rows apart by more than their width
                const auto xf = random_floats(rows * ldx, 11 + static_cast<unsigned>(n * 131 + rows), -4.f, 4.f);
                std::vector<f16> xh(xf.size());
                for (std::size_t i = 0; i < xf.size(); ++i) xh[i] = f16::from_float(xf[i]);
                auto p = random_floats(rows, 21 + static_cast<unsigned>(rows));
                // every third weight is 0 and its row holds NaN: such a row must not be read
                std::vector<float> x32 = xf;
                for (std::size_t j = 0; j < rows; j += 3) {
                    p[j] = 0.f;
                    for (std::size_t i = 0; i < n; ++i) {
                        x32[j * ldx + i] = std::nanf("");
                        xh[j * ldx + i] = f16::from_float(std::nanf(""));
                    }
                }
                const auto y0 = random_floats(n, 31 + static_cast<unsigned>(n));
                auto y32 = y0, y16 = y0;
                rows32(p.data(), x32.data(), ldx, rows, y32.data(), n);
                rows16(p.data(), xh.data(), ldx, rows, y16.data(), n);
                CAPTURE(arch_str(a));
                CAPTURE(n);
                CAPTURE(rows);
                for (std::size_t i = 0; i < n; ++i) {
                    double r32 = y0[i], r16 = y0[i], m32 = std::fabs(static_cast<double>(y0[i])), m16 = m32;
                    for (std::size_t j = 0; j < rows; ++j) {
                        if (p[j] == 0.f) continue;
                        const double t32 = static_cast<double>(p[j]) * x32[j * ldx + i];
                        const double t16 = static_cast<double>(p[j]) * xh[j * ldx + i].to_float();
                        r32 += t32, r16 += t16, m32 += std::fabs(t32), m16 += std::fabs(t16);
                    }
                    // one f32 rounding per term: rows * eps of the sum of magnitudes
                    const double tol = 1.2e-7 * static_cast<double>(rows + 1);
                    REQUIRE(std::fabs(y32[i] - r32) <= tol * m32);
                    REQUIRE(std::fabs(y16[i] - r16) <= tol * m16);
                }
            }
        }
    }
}

TEST_CASE("f16 row conversions are bit-exact with the scalar conversion for every arch") {
    // all 65536 f16 patterns (f16 -> f32), then the f32 images of all of them plus
    // random f32 and the midpoints (f32 -> f16); odd lengths exercise the tails.
    std::vector<f16> all(65536 + 13);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = f16::from_bits(static_cast<std::uint16_t>(i * 40503u));
    for (std::size_t i = 0; i < 65536; ++i) all[i] = f16::from_bits(static_cast<std::uint16_t>(i));
    std::vector<float> fx(all.size());
    std::mt19937 rng(5);
    std::uniform_int_distribution<std::uint32_t> bits;
    std::vector<float> rx(100003);
    for (auto& v : rx) v = std::bit_cast<float>(bits(rng));
    for (std::size_t i = 0; i < 0x7c00; i += 3)
        rx.push_back((f16::from_bits(static_cast<std::uint16_t>(i)).to_float() +
                      f16::from_bits(static_cast<std::uint16_t>(i + 1)).to_float()) * 0.5f);
    for (auto a : simd::available_archs()) {
        CAPTURE(arch_str(a));
        simd::kernel_for<kernels::f16_to_f32>(a)(all.data(), fx.data(), all.size());
        for (std::size_t i = 0; i < all.size(); ++i)
            REQUIRE(std::bit_cast<std::uint32_t>(fx[i]) == std::bit_cast<std::uint32_t>(all[i].to_float()));
        std::vector<f16> back(rx.size());
        simd::kernel_for<kernels::f32_to_f16>(a)(rx.data(), back.data(), rx.size());
        for (std::size_t i = 0; i < rx.size(); ++i) {
            CAPTURE(std::bit_cast<std::uint32_t>(rx[i]));
            REQUIRE(back[i].bits == f16::from_float(rx[i]).bits);
        }
    }
}

TEST_CASE("bf16 row conversions are bit-exact with the scalar conversion for every arch") {
    std::mt19937 rng(6);
    std::uniform_int_distribution<std::uint32_t> bits;
    std::vector<float> x(200017);
    for (auto& v : x) v = std::bit_cast<float>(bits(rng));
    x[0] = INFINITY, x[1] = -INFINITY, x[2] = std::bit_cast<float>(0x7f800001u), x[3] = 1e-45f;
    std::vector<bf16> h(x.size());
    std::vector<float> back(x.size());
    for (auto a : simd::available_archs()) {
        CAPTURE(arch_str(a));
        simd::kernel_for<kernels::f32_to_bf16>(a)(x.data(), h.data(), x.size());
        simd::kernel_for<kernels::bf16_to_f32>(a)(h.data(), back.data(), h.size());
        for (std::size_t i = 0; i < x.size(); ++i) {
            REQUIRE(h[i].bits == bf16::from_float(x[i]).bits);
            REQUIRE(std::bit_cast<std::uint32_t>(back[i]) == (static_cast<std::uint32_t>(h[i].bits) << 16));
        }
    }
}
