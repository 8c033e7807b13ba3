// ggml's test-quantize-fns method, on tessera's reference quantizers: data
// 0.1 + 2 cos(i + offset), 4096 values; quantization error sqrt(sum d^2) / n of
// x vs dequantize(quantize(x)); dot error |vec_dot(q(x), partner(y)) - x.y| / n.
// Each type must be strictly below ggml's bound. The figures are printed next to
// ggml's own (measured on this machine, ggml-inventory 8.2).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "tessera/quant/reference.hpp"

using namespace tessera;
using namespace tessera::quant;

namespace {

constexpr std::size_t test_size = 32 * 128;

std::vector<float> generate(float offset) {
    std::vector<float> v(test_size);
    for (std::size_t i = 0; i < test_size; ++i)
        v[i] = static_cast<float>(0.1 + 2 * std::cos(static_cast<float>(i) + offset));  // cosf, as ggml
    return v;
}

float array_rmse(const float* a, const float* b, std::size_t n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double d = a[i] - b[i];
        sum += d * d;
    }
    return std::sqrt(static_cast<float>(sum)) / static_cast<float>(n);
}

float dot_product(const float* a, const float* b, std::size_t n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return static_cast<float>(sum);
}

struct expectation {
    type_id t;
    float max_quant_error, max_dot_error;
    float ggml_quant_error, ggml_dot_error;  // ggml d0e49510 on this machine
};

const expectation expectations[] = {
    {type_id::f16, 0.002f, 0.02f, 0.000004f, 0.000430f},
    {type_id::bf16, 0.002f, 0.02f, 0.000036f, 0.000169f},
    {type_id::q4_0, 0.002f, 0.02f, 0.001121f, 0.001142f},
    {type_id::q4_1, 0.002f, 0.02f, 0.001144f, 0.007931f},
    {type_id::q5_0, 0.002f, 0.02f, 0.000591f, 0.001353f},
    {type_id::q5_1, 0.002f, 0.02f, 0.000556f, 0.001511f},
    {type_id::q8_0, 0.002f, 0.02f, 0.000074f, 0.000092f},
    {type_id::q2_K, 0.0075f, 0.04f, 0.004672f, 0.010715f},
    {type_id::q3_K, 0.004f, 0.02f, 0.002510f, 0.016686f},
    {type_id::q4_K, 0.002f, 0.02f, 0.000982f, 0.002318f},
    {type_id::q5_K, 0.002f, 0.02f, 0.000531f, 0.001038f},
    {type_id::q6_K, 0.002f, 0.02f, 0.000261f, 0.000211f},
    {type_id::iq4_nl, 0.002f, 0.02f, 0.001296f, 0.005155f},
    {type_id::iq4_xs, 0.002f, 0.02f, 0.001256f, 0.002499f},
    {type_id::tq1_0, 0.01f, 0.15f, 0.008681f, 0.141345f},
    {type_id::tq2_0, 0.01f, 0.15f, 0.008681f, 0.141345f},
    {type_id::mxfp4, 0.002f, 0.02f, 0.001881f, 0.005676f},
};

// quantize_row_ref with 3 arguments (ggml's from_float_ref) for type t, any type.
void quantize_ref(type_id t, const float* x, void* y, std::int64_t n) {
    switch (t) {
        case type_id::f32:
        case type_id::f16:
        case type_id::bf16: quantize(t, x, y, 1, n); return;
        default: break;
    }
    visit_block_type(t, [&]<class B>() {
        if constexpr (requires { quantize_row_ref(x, static_cast<B*>(y), n); }) quantize_row_ref(x, static_cast<B*>(y), n);
    });
}

}  // namespace

TEST_CASE("test-quantize-fns: quantization and dot-product error below ggml's bounds") {
    const std::vector<float> x = generate(0.0f), y = generate(1.0f);
    const float exact_dot = dot_product(x.data(), y.data(), test_size);
    std::printf("\n%-7s %12s %12s   %12s %12s\n", "type", "quant err", "ggml", "dot err", "ggml");
    for (const expectation& e : expectations) {
        CAPTURE(type_name(e.t));
        const auto bytes = static_cast<std::size_t>(row_size(e.t, test_size));
        std::vector<unsigned char> q(bytes), qy(4 * test_size);
        std::vector<float> out(test_size);
        quantize_ref(e.t, x.data(), q.data(), test_size);
        dequantize_row(e.t, q.data(), out.data(), test_size);
        const float qerr = array_rmse(x.data(), out.data(), test_size);

        const type_id partner = dot_partner_type(e.t);
        quantize_ref(partner, y.data(), qy.data(), test_size);
        const float dot = vec_dot_row(e.t, test_size, q.data(), qy.data());
        const float derr = std::fabs(dot - exact_dot) / static_cast<float>(test_size);

        std::printf("%-7s %12.6f %12.6f   %12.6f %12.6f\n", std::string(type_name(e.t)).c_str(), qerr,
                    e.ggml_quant_error, derr, e.ggml_dot_error);
        CHECK(qerr < e.max_quant_error);
        CHECK(derr < e.max_dot_error);
        // not worse than ggml's own figure by more than rounding noise
        CHECK(qerr <= e.ggml_quant_error * 1.02f + 1e-6f);
    }
}

TEST_CASE("test-quantize-fns: the imatrix entry points without weights stay within the bounds") {
    // quantize_row_ref(x, y, n, nullptr): for iq4_nl this is ggml's quantize_iq4_nl
    // (scale search), for the others ggml's reference.
    const std::vector<float> x = generate(0.0f);
    for (const expectation& e : expectations) {
        if (!is_quantized(e.t)) continue;
        CAPTURE(type_name(e.t));
        std::vector<unsigned char> q(static_cast<std::size_t>(row_size(e.t, test_size)));
        std::vector<float> out(test_size);
        quantize(e.t, x.data(), q.data(), 1, test_size, nullptr);
        dequantize_row(e.t, q.data(), out.data(), test_size);
        const float qerr = array_rmse(x.data(), out.data(), test_size);
        if (e.t == type_id::iq4_nl) std::printf("iq4_nl with scale search (quantize_iq4_nl): %.6f\n", qerr);
        CHECK(qerr < e.max_quant_error);
    }
}

TEST_CASE("test-quantize-fns: f32 dot for odd lengths") {
    std::vector<float> a(1023), b(1023);
    for (int i = 0; i < 1023; ++i) {
        a[i] = static_cast<float>(0.1 + 2 * std::cos(static_cast<float>(i)));
        b[i] = static_cast<float>(0.1 + 2 * std::cos(static_cast<float>(i) + 1.0f));
    }
    for (int n : {1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 67, 127, 129, 193, 255, 1023}) {
        CAPTURE(n);
        const float got = vec_dot_ref(n, a.data(), b.data());
        CHECK(std::fabs(got - dot_product(a.data(), b.data(), n)) / n < 1e-4f);
    }
}
