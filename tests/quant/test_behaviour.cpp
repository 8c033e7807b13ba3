// Behaviour of the reference quantizers beyond the golden bytes: importance weights
// lower the weighted error, the typed API agrees with the per-type functions, the dot
// products agree with the dequantized rows, representable data round-trips exactly,
// and bad input (partial blocks, types without kernels, NaN/inf data) gives clear
// errors or finite work, never a crash.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tessera/quant/reference.hpp"

using namespace tessera;
using namespace tessera::quant;

namespace {

// Deterministic roughly Gaussian data: sum of 4 uniforms from a 64-bit LCG.
std::vector<float> gaussian(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
    std::vector<float> v(n);
    std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (auto& x : v) {
        float acc = 0;
        for (int k = 0; k < 4; ++k) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            acc += static_cast<float>(s >> 40) / static_cast<float>(1ull << 24) - 0.5f;
        }
        x = acc * scale;
    }
    return v;
}

const type_id all_types[] = {type_id::q4_0, type_id::q4_1, type_id::q5_0,   type_id::q5_1,   type_id::q8_0,
                             type_id::q8_1, type_id::q2_K, type_id::q3_K,   type_id::q4_K,   type_id::q5_K,
                             type_id::q6_K, type_id::q8_K, type_id::iq4_nl, type_id::iq4_xs, type_id::tq1_0,
                             type_id::tq2_0, type_id::mxfp4, type_id::nvfp4, type_id::q1_0, type_id::q2_0,
                             type_id::iq3_xxs, type_id::iq3_s, type_id::iq2_s, type_id::iq1_m};

const type_id imatrix_types[] = {type_id::q4_0, type_id::q4_1, type_id::q5_0, type_id::q5_1,
                                 type_id::q2_K, type_id::q3_K, type_id::q4_K, type_id::q5_K,
                                 type_id::q6_K, type_id::iq4_nl, type_id::iq4_xs, type_id::iq3_xxs,
                                 type_id::iq3_s, type_id::iq2_s, type_id::iq1_m};

// quantized only with importance weights (ggml asserts without them)
const type_id imatrix_required_types[] = {type_id::iq2_xxs, type_id::iq2_xs, type_id::iq1_s};

std::vector<unsigned char> quantize_vec(type_id t, const std::vector<float>& x, std::int64_t nrows,
                                        const float* imatrix = nullptr) {
    const std::int64_t n_per_row = static_cast<std::int64_t>(x.size()) / nrows;
    std::vector<unsigned char> q(static_cast<std::size_t>(row_size(t, n_per_row) * nrows));
    CHECK(quantize(t, x.data(), q.data(), nrows, n_per_row, imatrix) == q.size());
    return q;
}

std::vector<float> dequantize_vec(type_id t, const std::vector<unsigned char>& q, std::size_t n) {
    std::vector<float> y(n);
    dequantize_row(t, q.data(), y.data(), static_cast<std::int64_t>(n));
    return y;
}

}  // namespace

TEST_CASE("importance weights lower the weighted error") {
    const std::int64_t n_per_row = 1024, nrows = 4;
    const std::vector<float> x = gaussian(n_per_row * nrows, 7);
    // skewed: every 8th column 100x as important, and a smooth ramp on the rest
    std::vector<float> w(n_per_row);
    for (std::int64_t j = 0; j < n_per_row; ++j)
        w[j] = (j % 8 == 0 ? 100.0f : 1.0f) * (0.5f + static_cast<float>(j % 97) / 97.0f);
    for (type_id t : imatrix_types) {
        CAPTURE(type_name(t));
        const auto plain = dequantize_vec(t, quantize_vec(t, x, nrows), x.size());
        const auto weighted = dequantize_vec(t, quantize_vec(t, x, nrows, w.data()), x.size());
        double e_plain = 0, e_weighted = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double wi = w[i % n_per_row];
            e_plain += wi * (x[i] - plain[i]) * (x[i] - plain[i]);
            e_weighted += wi * (x[i] - weighted[i]) * (x[i] - weighted[i]);
        }
        MESSAGE(type_name(t) << ": weighted error " << e_weighted << " with imatrix, " << e_plain << " without");
        CHECK(e_weighted < e_plain);
    }
}

TEST_CASE("typed API equals the per-type functions, row by row") {
    const std::int64_t n_per_row = 512, nrows = 3;
    const std::vector<float> x = gaussian(n_per_row * nrows, 11, 3.0f);
    for (type_id t : all_types) {
        CAPTURE(type_name(t));
        CHECK(can_quantize(t));
        CHECK(can_dequantize(t));
        const auto q = quantize_vec(t, x, nrows);
        const std::int64_t rs = row_size(t, n_per_row);
        visit_block_type(t, [&]<class B>() {
            if constexpr (quant::detail::has_quantizer<B>) {
                std::vector<B> b(static_cast<std::size_t>(n_per_row / block_traits<B>::block_size));
                std::vector<float> y1(n_per_row), y2(n_per_row);
                for (std::int64_t r = 0; r < nrows; ++r) {
                    quantize_row_ref(x.data() + r * n_per_row, b.data(), n_per_row, nullptr);
                    CHECK(std::memcmp(b.data(), q.data() + r * rs, static_cast<std::size_t>(rs)) == 0);
                    dequantize_row_ref(b.data(), y1.data(), n_per_row);
                    dequantize_row(t, q.data() + r * rs, y2.data(), n_per_row);
                    CHECK(y1 == y2);
                }
            }
        });
    }
}

TEST_CASE("vec_dot_ref equals the dot of the dequantized rows") {
    // Integer parts are exact; only the float scaling order differs from a plain
    // f64 dot of the dequantized values.
    const std::int64_t n = 2048;
    const std::vector<float> x = gaussian(n, 3, 2.0f), y = gaussian(n, 5, 0.7f);
    for (type_id t : all_types) {
        CAPTURE(type_name(t));
        const type_id p = dot_partner_type(t);
        const auto qx = quantize_vec(t, x, 1);
        const auto qy = quantize_vec(p, y, 1);
        const auto dx = dequantize_vec(t, qx, n), dy = dequantize_vec(p, qy, n);
        double ref = 0, mag = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            ref += static_cast<double>(dx[i]) * dy[i];
            mag += std::fabs(static_cast<double>(dx[i]) * dy[i]);
        }
        if (p == type_id::q8_1 && t != type_id::q8_1) {
            // q4_1/q5_1 take the min term from q8_1's stored s = f16(d * sum q) instead of
            // the sum of the dequantized values: correct the reference by the difference.
            const auto* by = reinterpret_cast<const block_q8_1*>(qy.data());
            for (std::int64_t b = 0; b < n / 32; ++b) {
                const std::size_t off = static_cast<std::size_t>(b * row_size(t, 32));
                f16 mh;
                std::memcpy(&mh, qx.data() + off + 2, 2);  // q4_1 / q5_1: d, then m
                const float m = mh.to_float();
                double sum_y = 0;
                for (int j = 0; j < 32; ++j) sum_y += dy[static_cast<std::size_t>(32 * b + j)];
                ref += static_cast<double>(m) * (static_cast<double>(by[b].s.to_float()) - sum_y);
            }
        }
        const float got = vec_dot_row(t, n, qx.data(), qy.data());
        CHECK(std::fabs(got - ref) <= 2e-6 * mag);
    }
}

TEST_CASE("round trips: representable data comes back exactly") {
    // q8_0/q8_1: integers with block max 127 (scale 1); q8_K: signed max -127
    std::vector<float> x(512);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 37 % 255) - 127);
    for (std::size_t b = 0; b < x.size(); b += 256) x[b] = -127;
    for (std::size_t b = 0; b < x.size(); b += 32) x[b] = -127;
    for (type_id t : {type_id::q8_0, type_id::q8_1, type_id::q8_K, type_id::f32, type_id::f16, type_id::bf16}) {
        CAPTURE(type_name(t));
        CHECK(dequantize_vec(t, quantize_vec(t, x, 2), x.size()) == x);
    }
    // dequantized output re-quantizes to the same bytes for the symmetric 8-bit types
    const std::vector<float> g = gaussian(1024, 9);
    for (type_id t : {type_id::q8_0, type_id::q8_K}) {
        CAPTURE(type_name(t));
        const auto q1 = quantize_vec(t, g, 1);
        const auto q2 = quantize_vec(t, dequantize_vec(t, q1, g.size()), 1);
        CHECK(q1 == q2);
    }
}

TEST_CASE("random data: error relative to the data's scale, per type") {
    // Bounds are loose upper limits (about 1.5x what each format reaches), so a
    // broken scale, sign or nibble order fails them by far.
    struct bound { type_id t; double rel_rms; };
    const bound bounds[] = {
        {type_id::q4_0, 0.13}, {type_id::q4_1, 0.11},  {type_id::q5_0, 0.065}, {type_id::q5_1, 0.055},
        {type_id::q8_0, 0.008}, {type_id::q8_1, 0.008}, {type_id::q8_K, 0.008}, {type_id::q2_K, 0.45},
        {type_id::q3_K, 0.25}, {type_id::q4_K, 0.11},  {type_id::q5_K, 0.055}, {type_id::q6_K, 0.03},
        {type_id::iq4_nl, 0.11}, {type_id::iq4_xs, 0.11}, {type_id::tq1_0, 1.0}, {type_id::tq2_0, 1.0},
        {type_id::mxfp4, 0.2}, {type_id::nvfp4, 0.15}, {type_id::q1_0, 0.9}, {type_id::q2_0, 1.05},
        {type_id::iq3_xxs, 0.31}, {type_id::iq3_s, 0.25}, {type_id::iq2_s, 0.4}, {type_id::iq1_m, 0.87},
    };
    const std::vector<float> x = gaussian(4096, 21, 5.0f);
    double ms = 0;
    for (float v : x) ms += static_cast<double>(v) * v;
    const double rms = std::sqrt(ms / static_cast<double>(x.size()));
    for (const bound& b : bounds) {
        CAPTURE(type_name(b.t));
        const auto y = dequantize_vec(b.t, quantize_vec(b.t, x, 4), x.size());
        double e = 0;
        for (std::size_t i = 0; i < x.size(); ++i) e += (x[i] - y[i]) * static_cast<double>(x[i] - y[i]);
        const double rel = std::sqrt(e / static_cast<double>(x.size())) / rms;
        MESSAGE(type_name(b.t) << ": relative rms error " << rel);
        CHECK(rel < b.rel_rms);
    }
}

TEST_CASE("types that need importance weights: a clear error without them, ggml-like results with them") {
    std::vector<float> x = gaussian(1024, 17), y = gaussian(1024, 19), w(256);
    for (std::size_t j = 0; j < w.size(); ++j) w[j] = 0.5f + static_cast<float>(j % 13) / 13.0f;
    std::vector<unsigned char> buf(4096);
    for (type_id t : imatrix_required_types) {
        const std::string name(type_name(t));
        CAPTURE(name);
        CHECK(can_quantize(t));
        try {
            quantize(t, x.data(), buf.data(), 4, 256);
            FAIL("no exception");
        } catch (const tessera::error& e) {
            CHECK(e.code() == errc::invalid_argument);
            CHECK(std::string(e.what()).find("quantize_row_ref(" + name + "): this type needs importance weights") !=
                  std::string::npos);
        }
        // with weights: a bounded error, and the dot product of the dequantized rows
        const auto q = quantize_vec(t, x, 4, w.data());
        const auto dx = dequantize_vec(t, q, x.size());
        double e = 0, ms = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            e += (x[i] - dx[i]) * static_cast<double>(x[i] - dx[i]);
            ms += static_cast<double>(x[i]) * x[i];
        }
        MESSAGE(name << ": relative rms error " << std::sqrt(e / ms));
        CHECK(std::sqrt(e / ms) < (t == type_id::iq1_s ? 0.72 : 0.52));  // 1.5x of 0.48 / 0.34
        const type_id p = dot_partner_type(t);
        const auto qy = quantize_vec(p, std::vector<float>(y.begin(), y.begin() + 256), 1);
        const auto dy = dequantize_vec(p, qy, 256);
        double ref = 0, mag = 0;
        for (std::size_t i = 0; i < 256; ++i) {
            ref += static_cast<double>(dx[i]) * dy[i];
            mag += std::fabs(static_cast<double>(dx[i]) * dy[i]);
        }
        CHECK(std::fabs(vec_dot_row(t, 256, q.data(), qy.data()) - ref) <= 2e-6 * mag);
    }
    for (type_id t : {type_id::i8, type_id::i32, type_id::f64, static_cast<type_id>(4), static_cast<type_id>(99)}) {
        CHECK_FALSE(can_quantize(t));
        CHECK_THROWS_AS(quantize(t, x.data(), buf.data(), 1, 256), tessera::error);
        CHECK_THROWS_AS(dequantize_row(t, buf.data(), y.data(), 256), tessera::error);
    }
}

TEST_CASE("typed API: partial blocks and negative counts are refused") {
    std::vector<float> x(1024, 1.0f);
    std::vector<unsigned char> buf(4096);
    try {
        quantize(type_id::q4_K, x.data(), buf.data(), 2, 100);
        FAIL("no exception");
    } catch (const tessera::error& e) {
        CHECK(e.code() == errc::shape_mismatch);
        CHECK(std::string(e.what()) == "row of 100 elements is not a multiple of the q4_K block size 256");
    }
    CHECK_THROWS_AS(quantize(type_id::q8_0, x.data(), buf.data(), -1, 32), tessera::error);
    CHECK_THROWS_AS(dequantize_row(type_id::q5_1, buf.data(), x.data(), 48), tessera::error);
    CHECK_THROWS_AS((void)vec_dot_row(type_id::tq1_0, 255, buf.data(), buf.data()), tessera::error);
    CHECK(quantize(type_id::q6_K, x.data(), buf.data(), 0, 256) == 0);
    CHECK_THROWS_AS(quantize(type_id::q4_0, x.data(), buf.data(), INT64_MAX / 4, 64), tessera::error);
    CHECK_THROWS_AS(quantize(type_id::q4_0, x.data(), nullptr, 1, 64), tessera::error);
    CHECK_THROWS_AS(dequantize_row(type_id::q4_0, nullptr, x.data(), 64), tessera::error);
}

TEST_CASE("NaN and infinity in the data: finite work, no crash, no sanitizer report") {
    std::vector<float> x = gaussian(1024, 2);
    x[5] = std::numeric_limits<float>::quiet_NaN();
    x[300] = std::numeric_limits<float>::infinity();
    x[700] = -std::numeric_limits<float>::infinity();
    x[900] = 3e38f;
    for (std::size_t i = 512; i < 768; ++i) x[i] = 1e-41f;  // subnormals
    std::vector<float> w(1024, 1.0f);
    for (type_id t : all_types) {
        CAPTURE(type_name(t));
        for (const float* im : {static_cast<const float*>(nullptr), static_cast<const float*>(w.data())}) {
            const auto q = quantize_vec(t, x, 1, im);
            (void)dequantize_vec(t, q, x.size());
        }
    }
}

TEST_CASE("arbitrary block bytes dequantize and dot without undefined behaviour") {
    // Any bit pattern is a valid block to read (GGUF data is untrusted): random bytes,
    // all-ones and all-zeros blocks go through dequantize_row and vec_dot_row.
    const std::int64_t n = 512;
    std::vector<unsigned char> xb(4096), yb(4096);
    std::uint64_t s = 12345;
    for (int pattern = 0; pattern < 3; ++pattern) {
        for (std::size_t i = 0; i < xb.size(); ++i) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            xb[i] = pattern == 0 ? static_cast<unsigned char>(s >> 56) : (pattern == 1 ? 0xff : 0x00);
            yb[i] = static_cast<unsigned char>(s >> 48);
        }
        for (type_id t : all_types) {
            CAPTURE(type_name(t));
            std::vector<float> y(n);
            dequantize_row(t, xb.data(), y.data(), n);
            (void)vec_dot_row(t, n, xb.data(), yb.data());
        }
        for (type_id t : imatrix_required_types) {
            CAPTURE(type_name(t));
            std::vector<float> y(n);
            dequantize_row(t, xb.data(), y.data(), n);
            (void)vec_dot_row(t, n, xb.data(), yb.data());
        }
    }
}
