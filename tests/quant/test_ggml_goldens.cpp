// ggml's own quantizer outputs (../shared/data/goldens/quant, made by ggml 0.18.1; its
// README gives the format): for every type tessera has kernels for, and every input set
// with and without importance weights,
//   - tessera's quantizer writes the same bytes (0 bytes differ),
//   - tessera's dequantization of ggml's bytes equals ggml's floats bit for bit,
//   - tessera's reference dot product of row 0 with ggml's activation row equals ggml's
//     portable C kernel (vec_dot_generic, same operations in the same order) bit for bit
//     and ggml's SIMD kernel (vec_dot) within 1e-5 of the dot's scale,
//   - and every SIMD arch this machine runs gives the reference's dot within the same bound
//     and the reference's dequantization bit for bit.
// Every type must quantize, dequantize and dot.
//
// ggml's bytes and generic dots were made with every float operation rounded as written
// (x86-64, no fused multiply-add). Where the compiler fuses multiply-adds (__FP_FAST_FMAF:
// AArch64, or x86 built for FMA), the quantizers' searches and the dots' sums round
// differently, as ggml's own code does when built there; in that build the test checks,
// instead of equal bytes, that the rms quantization error is within 2 % of that of ggml's
// bytes, and the generic dot within the SIMD dot's bound.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../shared_data.hpp"
#include "tessera/kernels/quant/table.hpp"
#include "tessera/quant/reference.hpp"
#include "tessera/simd/dispatch.hpp"

using namespace tessera;

namespace {

#if defined(__FP_FAST_FMAF)
constexpr bool exact_floats = false;
#else
constexpr bool exact_floats = true;
#endif

std::vector<unsigned char> read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "cannot open " << path);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
template <class T>
T at(const std::vector<unsigned char>& b, std::size_t off) {
    REQUIRE(off + sizeof(T) <= b.size());
    T v;
    std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
}

struct golden_inputs {
    std::uint32_t rows = 0, n_per_row = 0;
    std::vector<float> sets[4], imatrix, activation;
};
golden_inputs load_inputs(const std::string& path) {
    const auto b = read_all(path);
    REQUIRE(b.size() >= 128);
    REQUIRE(std::memcmp(b.data(), "TQGINPUT", 8) == 0);
    REQUIRE(at<std::uint32_t>(b, 8) == 1);
    golden_inputs in;
    in.rows = at<std::uint32_t>(b, 12);
    in.n_per_row = at<std::uint32_t>(b, 16);
    REQUIRE(at<std::uint32_t>(b, 20) == 4);
    const std::size_t set_n = std::size_t{in.rows} * in.n_per_row;
    REQUIRE(b.size() == 128 + 4 * (4 * set_n + 2 * in.n_per_row));
    std::size_t off = 128;
    auto take = [&](std::vector<float>& v, std::size_t n) {
        v.resize(n);
        std::memcpy(v.data(), b.data() + off, 4 * n);
        off += 4 * n;
    };
    for (auto& s : in.sets) take(s, set_n);
    take(in.imatrix, in.n_per_row);
    take(in.activation, in.n_per_row);
    return in;
}

// The dot product of row 0 with the activation row through the kernel of `arch`.
float kernel_dot(type_id t, simd::arch_id arch, std::int64_t n, const void* x, const void* y) {
    float r = NAN;
    quant::visit_block_type(t, [&]<class B>() {
        if constexpr (requires { sizeof(typename kernels::quant_kernels<B>::template vec_dot<simd::scalar>); }) {
            using P = typename quant::block_traits<B>::dot_partner;
            r = simd::kernel_for<kernels::quant_kernels<B>::template vec_dot>(arch)(n, static_cast<const B*>(x),
                                                                                    static_cast<const P*>(y));
        }
    });
    return r;
}
bool kernel_dequant(type_id t, simd::arch_id arch, const void* x, float* y, std::int64_t n) {
    bool done = false;
    quant::visit_block_type(t, [&]<class B>() {
        if constexpr (requires { sizeof(typename kernels::quant_kernels<B>::template dequantize<simd::scalar>); }) {
            simd::kernel_for<kernels::quant_kernels<B>::template dequantize>(arch)(static_cast<const B*>(x), y, n);
            done = true;
        }
    });
    return done;
}

std::size_t differing(const unsigned char* a, const unsigned char* b, std::size_t n, std::size_t& first) {
    std::size_t d = 0;
    first = n;
    for (std::size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) {
            if (d++ == 0) first = i;
        }
    return d;
}

}  // namespace

DATA_TEST_CASE("ggml's quantizer goldens: bytes, dequantization and dot products of every type",
               "goldens/quant/inputs.bin") {
    const std::string dir = test_data::path("goldens/quant");
    const golden_inputs in = load_inputs(dir + "/inputs.bin");
    const std::int64_t rows = in.rows, n = in.n_per_row;
    const auto archs = simd::available_archs();
    int cases = 0, types_checked = 0;
    std::string missing_types, no_quantizer;
    for (int id = 0; id < 64; ++id) {
        if (!is_valid_type_id(id)) continue;
        const auto t = static_cast<type_id>(id);
        // the types with a quantizer in ggml: every block type, and f32 / f16 / bf16
        if (!is_quantized(t) && t != type_id::f32 && t != type_id::f16 && t != type_id::bf16) continue;
        const std::string name(type_name(t));
        const std::string file = test_data::need("goldens/quant/" + name + ".bin");
        if (file.empty()) continue;
        const auto g = read_all(file);
        CAPTURE(name);
        REQUIRE(g.size() >= 128);
        REQUIRE(std::memcmp(g.data(), "TQGQUANT", 8) == 0);
        REQUIRE(at<std::int32_t>(g, 12) == id);
        REQUIRE(at<std::uint32_t>(g, 32) == block_size(t));
        REQUIRE(at<std::uint32_t>(g, 36) == type_size(t));
        REQUIRE(at<std::uint32_t>(g, 40) == in.rows);
        REQUIRE(at<std::uint32_t>(g, 44) == in.n_per_row);
        const auto row_bytes = at<std::uint64_t>(g, 48);
        REQUIRE(static_cast<std::int64_t>(row_bytes) == row_size(t, n));
        const auto n_variants = at<std::uint32_t>(g, 56);
        const auto flags = at<std::uint32_t>(g, 60);
        const auto act_type = at<std::int32_t>(g, 64);
        const auto act_len = at<std::uint32_t>(g, 68);
        const auto act_off = at<std::uint64_t>(g, 72);
        if (!quant::can_dequantize(t)) {
            missing_types += " " + name;
            continue;
        }
        const bool writes = quant::can_quantize(t);
        if (!writes) no_quantizer += " " + name;
        ++types_checked;
        if (act_type >= 0) {
            REQUIRE(static_cast<type_id>(act_type) == quant::dot_partner_type(t));
            REQUIRE(act_off + act_len <= g.size());
            REQUIRE(static_cast<std::int64_t>(act_len) == row_size(quant::dot_partner_type(t), n));
        }
        // the partner's own quantizer on the activation: q8_1 and q8_K are ggml's reference
        // routines; the stored q8_0 / q8_1 rows come from its AVX2 routine (ties to even),
        // so they are not compared here.
        for (std::uint32_t v = 0; v < n_variants; ++v) {
            const std::size_t e = 128 + 48 * std::size_t{v};
            const auto set = at<std::uint8_t>(g, e);
            const bool weighted = at<std::uint8_t>(g, e + 1) != 0;
            const bool has_dot = at<std::uint8_t>(g, e + 2) != 0, has_generic = at<std::uint8_t>(g, e + 3) != 0;
            const float dot = at<float>(g, e + 4), dot_generic = at<float>(g, e + 8);
            const auto q_off = at<std::uint64_t>(g, e + 16), q_len = at<std::uint64_t>(g, e + 24);
            const auto dq_off = at<std::uint64_t>(g, e + 32), dq_len = at<std::uint64_t>(g, e + 40);
            CAPTURE(int(set));
            CAPTURE(weighted);
            REQUIRE(set < 4);
            REQUIRE(q_len == row_bytes * in.rows);
            REQUIRE(q_off + q_len <= g.size());
            ++cases;
            const unsigned char* ref = g.data() + q_off;

            // 1. quantizer bytes
            std::vector<unsigned char> mine(q_len);
            if (writes) {
            CHECK(quant::quantize(t, in.sets[set].data(), mine.data(), rows, n, weighted ? in.imatrix.data() : nullptr) ==
                  q_len);
            std::size_t first = 0;
            const std::size_t nd = differing(mine.data(), ref, q_len, first);
            if (exact_floats) {
                CHECK_MESSAGE(nd == 0, nd << " of " << q_len << " bytes differ, the first at byte " << first << " (block "
                                          << first / static_cast<std::size_t>(type_size(t)) << ")");
            } else if (nd != 0) {  // the same quality as ggml's bytes
                std::vector<float> a(static_cast<std::size_t>(rows * n)), b(a.size());
                quant::dequantize_row(t, mine.data(), a.data(), rows * n);
                quant::dequantize_row(t, ref, b.data(), rows * n);
                double ea = 0, eb = 0;
                for (std::size_t i = 0; i < a.size(); ++i) {
                    const double x = in.sets[set][i];
                    ea += (a[i] - x) * (a[i] - x);
                    eb += (b[i] - x) * (b[i] - x);
                }
                CHECK_MESSAGE(ea <= eb * 1.0404 + 1e-30, nd << " of " << q_len << " bytes differ; squared error " << ea
                                                            << " against ggml's " << eb);
            }
            }

            // 2. dequantization of ggml's bytes, bit for bit, by the reference and every arch
            if ((flags & 16) && dq_len) {
                REQUIRE(dq_len == 4 * std::size_t{in.rows} * in.n_per_row);
                REQUIRE(dq_off + dq_len <= g.size());
                std::vector<float> want(dq_len / 4), got(dq_len / 4);
                std::memcpy(want.data(), g.data() + dq_off, dq_len);
                quant::dequantize_row(t, ref, got.data(), rows * n);
                CHECK_MESSAGE(std::memcmp(want.data(), got.data(), dq_len) == 0, "reference dequantization differs");
                for (const simd::arch_id a : archs) {
                    std::vector<float> k(got.size(), NAN);
                    if (!kernel_dequant(t, a, ref, k.data(), rows * n)) continue;
                    CHECK_MESSAGE(std::memcmp(want.data(), k.data(), dq_len) == 0,
                                  "dequantization differs on " << simd::name_of(a));
                }
            }

            // 3. dot products of row 0 with the activation row
            if (act_type >= 0 && (has_dot || has_generic)) {
                const unsigned char* y = g.data() + act_off;
                const float mine_dot = quant::vec_dot_row(t, n, ref, y);
                // the scale of the dot: sum |x_i y_i| of the dequantized row and activation
                std::vector<float> xr(static_cast<std::size_t>(n)), yr(static_cast<std::size_t>(n));
                quant::dequantize_row(t, ref, xr.data(), n);
                quant::dequantize_row(quant::dot_partner_type(t), y, yr.data(), n);
                double scale = 0;
                for (std::int64_t i = 0; i < n; ++i) scale += std::fabs(double(xr[i]) * double(yr[i]));
                const double tol = 1e-5 * std::max(scale, 1e-30);
                if (has_generic && exact_floats)
                    CHECK_MESSAGE(std::bit_cast<std::uint32_t>(mine_dot) == std::bit_cast<std::uint32_t>(dot_generic),
                                  "reference dot " << mine_dot << " != ggml's generic kernel " << dot_generic);
                if (has_generic && !exact_floats)
                    CHECK_MESSAGE(std::fabs(double(mine_dot) - double(dot_generic)) <= tol,
                                  "reference dot " << mine_dot << " vs ggml's generic kernel " << dot_generic);
                if (has_dot)
                    CHECK_MESSAGE(std::fabs(double(mine_dot) - double(dot)) <= tol,
                                  "reference dot " << mine_dot << " vs ggml's " << dot << " (scale " << scale << ")");
                for (const simd::arch_id a : archs) {
                    const float k = kernel_dot(t, a, n, ref, y);
                    if (std::isnan(k)) continue;
                    CHECK_MESSAGE(std::fabs(double(k) - double(mine_dot)) <= tol,
                                  simd::name_of(a) << " dot " << k << " vs the reference's " << mine_dot);
                }
            }
        }
    }
    MESSAGE(types_checked << " types, " << cases << " cases checked against ggml's goldens");
    CHECK(types_checked == 30);
    CHECK(cases == 180);
    CHECK_MESSAGE(missing_types.empty(), "types without kernels:" << missing_types);
    CHECK_MESSAGE(no_quantizer.empty(), "types without a quantizer:" << no_quantizer);
}
