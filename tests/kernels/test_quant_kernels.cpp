// The quantized-block kernels of every arch this machine has, against the scalar
// definitions (and, where the quant layer's reference functions exist, against those):
//   - dequantize: bit-exact, random blocks of every type, odd block counts;
//   - quantize q8_0 / q8_1 / q8_K: the same bytes, including rounding ties;
//   - vec_dot: exact with unit scales (the integer part), and within a stated f32
//     summation bound on random scales and on extreme quants (every quant byte one
//     pattern, the partner's quants all +127 or all -127);
//   - f16 / bf16 dot: |err| / n < 1e-4 against a double reference for the lengths of
//     ggml's test-quantize-fns.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/all.hpp"

#if __has_include("tessera/quant/reference.hpp")
#include "tessera/quant/reference.hpp"
#define TESSERA_TEST_HAVE_QUANT_REF 1
// the comparisons below are guarded by requires-expressions: make sure they bind
static_assert(requires(const tessera::quant::block_q4_K* p, float* o) {
    tessera::quant::dequantize_row_ref(p, o, std::int64_t{});
});
static_assert(requires(const float* x, tessera::quant::block_q8_K* y) {
    tessera::quant::quantize_row_ref(x, y, std::int64_t{});
});
static_assert(requires(const tessera::quant::block_q6_K* x, const tessera::quant::block_q8_K* y) {
    tessera::quant::vec_dot_ref(std::int64_t{}, x, y);
});
#endif

using namespace tessera;
namespace qk = tessera::kernels;
using simd::arch_id;

namespace {

std::string arch_str(arch_id a) { return std::string(simd::name_of(a)); }

template <class B>
std::string type_str() {
    return std::string(type_name(quant::block_traits<B>::id));
}

// Random blocks: random bytes, then scale fields set to finite values of a sane size
// (random bits there would give infinities and NaNs that no quantizer produces).
template <class B>
std::vector<B> random_blocks(std::size_t nb, unsigned seed, bool unit_scales = false) {
    // with unit scales the partner's quants are kept in [-2, 2], so that every partial
    // sum of the integer dot stays below 2^24 and the f32 result is exact
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> sc(-2.0f, 2.0f), pos(0.01f, 2.0f);
    std::vector<B> v(nb);
    for (auto& b : v) {
        auto* p = reinterpret_cast<unsigned char*>(&b);
        for (std::size_t k = 0; k < sizeof(B); ++k) p[k] = static_cast<unsigned char>(byte(rng));
        if constexpr (std::is_same_v<B, quant::block_mxfp4>) {
            b.e = static_cast<std::uint8_t>(unit_scales ? 128 : 110 + byte(rng) % 30);
        } else if constexpr (std::is_same_v<B, quant::block_iq1_m>) {  // the f16 scale in the words' top nibbles
            const std::uint16_t h = f16::from_float(unit_scales ? 1.0f : sc(rng)).bits;
            for (int w = 0; w < 4; ++w) {
                std::uint16_t word;
                std::memcpy(&word, b.scales + 2 * w, 2);
                word = static_cast<std::uint16_t>((word & 0x0fff) | (((h >> (4 * w)) & 0xf) << 12));
                std::memcpy(b.scales + 2 * w, &word, 2);
            }
        } else if constexpr (std::is_same_v<B, quant::block_nvfp4>) {
            for (auto& d : b.d) d = static_cast<std::uint8_t>(unit_scales ? 0x40 : byte(rng));  // every UE4M3 byte
        } else if constexpr (std::is_same_v<B, quant::block_q8_K>) {
            b.d = unit_scales ? 1.0f : sc(rng);
            for (auto& q : b.qs)
                if (q == -128 || (unit_scales && (q < -2 || q > 2))) q = static_cast<std::int8_t>(unit_scales ? q % 3 : -127);
            for (int j = 0; j < 16; ++j) {
                int s = 0;
                for (int l = 0; l < 16; ++l) s += b.qs[16 * j + l];
                b.bsums[j] = static_cast<std::int16_t>(s);
            }
        } else {
            b.d = f16::from_float(unit_scales ? 1.0f : sc(rng));
        }
        if constexpr (requires { b.dmin; }) b.dmin = f16::from_float(unit_scales ? 1.0f : pos(rng));
        if constexpr (requires { b.m; }) b.m = f16::from_float(unit_scales ? 1.0f : sc(rng));
        if constexpr (std::is_same_v<B, quant::block_q8_0> || std::is_same_v<B, quant::block_q8_1>)
            for (auto& q : b.qs)
                if (q == -128 || (unit_scales && (q < -2 || q > 2)))  // the quantizers never produce -128
                    q = static_cast<std::int8_t>(unit_scales ? q % 3 : -127);
        if constexpr (std::is_same_v<B, quant::block_q8_1>) {
            int s = 0;
            for (auto q : b.qs) s += q;
            b.s = f16::from_float(static_cast<float>(s) * b.d.to_float());
        }
    }
    return v;
}

std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

constexpr std::size_t block_counts[] = {1, 2, 3, 5, 7, 9, 17, 33};

template <class B>
void check_dequant() {
    constexpr auto bs = static_cast<std::size_t>(quant::block_traits<B>::block_size);
    for (std::size_t nb : block_counts) {
        const auto x = random_blocks<B>(nb, static_cast<unsigned>(nb * 7 + bs));
        const auto n = static_cast<std::int64_t>(nb * bs);
        std::vector<float> want(nb * bs), got(nb * bs);
        simd::kernel_for<qk::quant_kernels<B>::template dequantize>(arch_id::scalar)(x.data(), want.data(), n);
#if defined(TESSERA_TEST_HAVE_QUANT_REF)
        if constexpr (requires(const B* p, float* o) { quant::dequantize_row_ref(p, o, std::int64_t{}); }) {
            std::vector<float> ref(nb * bs);
            quant::dequantize_row_ref(x.data(), ref.data(), n);
            CAPTURE(type_str<B>());
            REQUIRE(std::memcmp(ref.data(), want.data(), ref.size() * sizeof(float)) == 0);
        }
#endif
        for (auto a : simd::available_archs()) {
            std::fill(got.begin(), got.end(), -12345.0f);
            simd::kernel_for<qk::quant_kernels<B>::template dequantize>(a)(x.data(), got.data(), n);
            CAPTURE(type_str<B>());
            CAPTURE(arch_str(a));
            CAPTURE(nb);
            for (std::size_t k = 0; k < got.size(); ++k) {
                CAPTURE(k);
                REQUIRE(std::memcmp(&got[k], &want[k], sizeof(float)) == 0);
            }
        }
    }
}

// Dequantized partner row (q8 types): x = d * q.
template <class P>
std::vector<double> partner_values(const std::vector<P>& y) {
    constexpr auto bs = static_cast<std::size_t>(quant::block_traits<P>::block_size);
    std::vector<double> v(y.size() * bs);
    for (std::size_t i = 0; i < y.size(); ++i) {
        double d;
        if constexpr (std::is_same_v<P, quant::block_q8_K>)
            d = y[i].d;
        else
            d = y[i].d.to_float();
        for (std::size_t j = 0; j < bs; ++j) v[i * bs + j] = d * y[i].qs[j];
    }
    return v;
}

// Every byte of a block but its f16 / f32 / E8M0 scale fields set to fill; a partner's
// sums (q8_1's s, q8_K's bsums) recomputed.
template <class B>
void fill_quants(B& b, unsigned char fill) {
    const B keep = b;
    std::memset(static_cast<void*>(&b), fill, sizeof(B));
    if constexpr (requires { b.d; }) std::memcpy(&b.d, &keep.d, sizeof(b.d));
    if constexpr (requires { b.dmin; }) b.dmin = keep.dmin;
    if constexpr (requires { b.m; }) b.m = keep.m;
    if constexpr (requires { b.e; }) b.e = keep.e;
    if constexpr (std::is_same_v<B, quant::block_iq1_m>)  // keep the f16 scale in the words' top nibbles
        for (int i = 1; i < 8; i += 2) b.scales[i] = static_cast<std::uint8_t>((b.scales[i] & 0x0f) | (keep.scales[i] & 0xf0));
    if constexpr (std::is_same_v<B, quant::block_q8_1>) {
        int s = 0;
        for (auto q : b.qs) s += q;
        b.s = f16::from_float(static_cast<float>(s) * b.d.to_float());
    }
    if constexpr (std::is_same_v<B, quant::block_q8_K>) {
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += b.qs[16 * j + l];
            b.bsums[j] = static_cast<std::int16_t>(s);
        }
    }
}

// x . y on every arch against the scalar kernel within the f32 summation bound, and the
// scalar kernel against a double dot of the dequantized rows.
template <class B, class P>
void check_dot_bound(const std::vector<B>& x, const std::vector<P>& y) {
    constexpr auto bs = static_cast<std::size_t>(quant::block_traits<B>::block_size);
    const std::size_t nb = x.size();
    const auto n = static_cast<std::int64_t>(nb * bs);
    const auto scalar_dot = simd::kernel_for<qk::quant_kernels<B>::template vec_dot>(arch_id::scalar);
    std::vector<float> xf(nb * bs);
    simd::kernel_for<qk::quant_kernels<B>::template dequantize>(arch_id::scalar)(x.data(), xf.data(), n);
    const auto yf = partner_values(y);
    double ref = 0, mag = 0, min_terms = 0;
    for (std::size_t k = 0; k < xf.size(); ++k) {
        ref += xf[k] * yf[k];
        mag += std::fabs(xf[k] * yf[k]);
    }
    if constexpr (requires { x[0].m; }) {  // q4_1/q5_1 use y.s = f16(d * sum q)
        for (std::size_t i = 0; i < nb; ++i) min_terms += std::fabs(x[i].m.to_float() * y[i].s.to_float());
        mag += min_terms;
    }
    if constexpr (requires { x[0].dmin; }) {
        for (std::size_t i = 0; i < nb; ++i)
            for (int j = 0; j < 16; ++j) mag += std::fabs(x[i].dmin.to_float() * 63.0 * y[i].d * y[i].bsums[j]);
    }
    const float s = scalar_dot(n, x.data(), y.data());
    // the dequantized values carry one rounding each; the min term of q8_1 is f16
    CHECK(std::fabs(s - ref) <= 1e-5 * mag + 2e-3 * min_terms + 1e-30);
    const double bound = 4.0 * static_cast<double>(nb + 16) * 0x1p-24 * mag;
    for (auto a : simd::available_archs()) {
        CAPTURE(arch_str(a));
        const float got = simd::kernel_for<qk::quant_kernels<B>::template vec_dot>(a)(n, x.data(), y.data());
        CHECK(std::fabs(got - s) <= bound);
    }
#if defined(TESSERA_TEST_HAVE_QUANT_REF)
    if constexpr (requires(const B* p, const P* o) { quant::vec_dot_ref(std::int64_t{}, p, o); }) {
        CHECK(std::fabs(quant::vec_dot_ref(n, x.data(), y.data()) - s) <= bound);
    }
#endif
}

template <class B>
void check_vec_dot() {
    using P = typename quant::block_traits<B>::dot_partner;
    constexpr auto bs = static_cast<std::size_t>(quant::block_traits<B>::block_size);
    const auto scalar_dot = simd::kernel_for<qk::quant_kernels<B>::template vec_dot>(arch_id::scalar);
    constexpr auto pbs = static_cast<std::size_t>(quant::block_traits<P>::block_size);
    for (std::size_t nb : block_counts) {
        const auto n = static_cast<std::int64_t>(nb * bs);
        const std::size_t np = nb * bs / pbs;  // partner blocks (q1_0, nvfp4, q2_0 blocks span several q8_0)
        CAPTURE(type_str<B>());
        CAPTURE(nb);
        // 1. unit scales: every term is an integer, the sum is exact in f32
        {
            const auto x = random_blocks<B>(nb, static_cast<unsigned>(3 * nb + 1), true);
            const auto y = random_blocks<P>(np, static_cast<unsigned>(5 * nb + 2), true);
            const float want = scalar_dot(n, x.data(), y.data());
            REQUIRE(want * 8 == std::floor(want * 8));  // integers; eighths for the i-quants' 1/8 factors
            for (auto a : simd::available_archs()) {
                CAPTURE(arch_str(a));
                CHECK(simd::kernel_for<qk::quant_kernels<B>::template vec_dot>(a)(n, x.data(), y.data()) == want);
            }
        }
        // 2. random scales: against the scalar kernel within the f32 summation bound,
        //    and the scalar kernel against a double dot of the dequantized rows
        check_dot_bound<B>(random_blocks<B>(nb, static_cast<unsigned>(11 * nb + 3)),
                           random_blocks<P>(np, static_cast<unsigned>(13 * nb + 4)));
        // 3. extreme quants (random scales): every quant byte of x one pattern (all bits
        //    set, none, 0x7F, 0x88; the K-quants' packed scales included), y's quants all
        //    +127 or all -127: the largest i16 pair sums of vpmaddubsw-style bodies
        for (int fx : {0xFF, 0x00, 0x7F, 0x88})
            for (int fy : {0x7F, 0x81}) {
                CAPTURE(fx);
                CAPTURE(fy);
                auto x = random_blocks<B>(nb, static_cast<unsigned>(17 * nb) + static_cast<unsigned>(fx));
                auto y = random_blocks<P>(np, static_cast<unsigned>(19 * nb) + static_cast<unsigned>(fy));
                for (auto& b : x) fill_quants(b, static_cast<unsigned char>(fx));
                for (auto& b : y) fill_quants(b, static_cast<unsigned char>(fy));
                check_dot_bound<B>(x, y);
            }
    }
}

template <class... B>
struct type_list {};
using weight_types = type_list<quant::block_q4_0, quant::block_q4_1, quant::block_q5_0, quant::block_q5_1,
                               quant::block_q8_0, quant::block_q8_1, quant::block_iq4_nl, quant::block_mxfp4,
                               quant::block_q2_K, quant::block_q3_K, quant::block_q4_K, quant::block_q5_K,
                               quant::block_q6_K, quant::block_iq4_xs, quant::block_tq1_0, quant::block_tq2_0,
                               quant::block_nvfp4, quant::block_q1_0, quant::block_q2_0, quant::block_iq2_xxs,
                               quant::block_iq2_xs, quant::block_iq2_s, quant::block_iq3_xxs, quant::block_iq3_s,
                               quant::block_iq1_s, quant::block_iq1_m>;
template <class... B>
void for_types(type_list<B...>, auto&& f) {
    (f.template operator()<B>(), ...);
}

// Runs a quantizer of every arch on x and checks the bytes equal the scalar kernel's.
template <class P>
void check_quantize_bytes(const std::vector<float>& x, const std::string what) {
    constexpr auto bs = static_cast<std::size_t>(quant::block_traits<P>::block_size);
    const std::size_t nb = x.size() / bs;
    std::vector<P> want(nb), got(nb);
    std::memset(want.data(), 0x5a, nb * sizeof(P));
    simd::kernel_for<qk::quant_kernels<P>::template quantize>(arch_id::scalar)(x.data(), want.data(),
                                                                              static_cast<std::int64_t>(x.size()));
#if defined(TESSERA_TEST_HAVE_QUANT_REF)
    {
        std::vector<P> ref(nb);
        std::memset(ref.data(), 0, nb * sizeof(P));
        quant::quantize_row_ref(x.data(), ref.data(), static_cast<std::int64_t>(x.size()));
        for (std::size_t i = 0; i < nb; ++i) {
            CAPTURE(what);
            CAPTURE(i);
            REQUIRE(std::memcmp(&ref[i].d, &want[i].d, sizeof(want[i].d)) == 0);
            REQUIRE(std::memcmp(ref[i].qs, want[i].qs, sizeof(want[i].qs)) == 0);
            if constexpr (std::is_same_v<P, quant::block_q8_1>) REQUIRE(ref[i].s == want[i].s);
            if constexpr (std::is_same_v<P, quant::block_q8_K>)
                if (want[i].d != 0.0f) REQUIRE(std::memcmp(ref[i].bsums, want[i].bsums, sizeof(want[i].bsums)) == 0);
        }
    }
#endif
    for (auto a : simd::available_archs()) {
        std::memset(got.data(), 0xa5, nb * sizeof(P));
        simd::kernel_for<qk::quant_kernels<P>::template quantize>(a)(x.data(), got.data(), static_cast<std::int64_t>(x.size()));
        for (std::size_t i = 0; i < nb; ++i) {
            CAPTURE(what);
            CAPTURE(arch_str(a));
            CAPTURE(i);
            REQUIRE(std::memcmp(&got[i], &want[i], sizeof(P)) == 0);
        }
    }
}

}  // namespace

template <class B>
void check_gemv() {
    using P = typename quant::block_traits<B>::dot_partner;
    constexpr auto bs = static_cast<std::size_t>(quant::block_traits<B>::block_size);
    constexpr auto pbs = static_cast<std::size_t>(quant::block_traits<P>::block_size);
    const auto scalar_dot = simd::kernel_for<qk::quant_kernels<B>::template vec_dot>(arch_id::scalar);
    for (std::size_t nb : {1, 5, 8}) {
        for (std::int64_t nrows : {1, 3, 4, 5, 9, 19}) {
            const std::size_t stride_blocks = nb + 1;  // rows with a gap between them
            const auto x = random_blocks<B>(stride_blocks * static_cast<std::size_t>(nrows), static_cast<unsigned>(nb * 31 + 7));
            const auto y = random_blocks<P>(nb * bs / pbs, static_cast<unsigned>(nb * 37 + 9));
            const auto n = static_cast<std::int64_t>(nb * bs);
            std::vector<float> out(static_cast<std::size_t>(nrows) + 1, -1.0f);
            for (auto a : simd::available_archs()) {
                CAPTURE(type_str<B>());
                CAPTURE(arch_str(a));
                CAPTURE(nb);
                CAPTURE(nrows);
                out.back() = 12345.0f;
                simd::kernel_for<qk::quant_kernels<B>::template gemv>(a)(n, nrows, x.data(), stride_blocks * sizeof(B), y.data(),
                                                                        out.data());
                CHECK(out.back() == 12345.0f);  // nothing written past nrows
                for (std::int64_t r = 0; r < nrows; ++r) {
                    const B* row = x.data() + static_cast<std::size_t>(r) * stride_blocks;
                    const float want = scalar_dot(n, row, y.data());
                    std::vector<float> xf(nb * bs);
                    simd::kernel_for<qk::quant_kernels<B>::template dequantize>(arch_id::scalar)(row, xf.data(), n);
                    const auto yf = partner_values(y);
                    double mag = 0;
                    for (std::size_t k = 0; k < xf.size(); ++k) mag += std::fabs(xf[k] * yf[k]);
                    if constexpr (requires { row[0].m; })
                        for (std::size_t i = 0; i < nb; ++i) mag += std::fabs(row[i].m.to_float() * y[i].s.to_float());
                    if constexpr (requires { row[0].dmin; })
                        for (std::size_t i = 0; i < nb; ++i)
                            for (int j = 0; j < 16; ++j) mag += std::fabs(row[i].dmin.to_float() * 63.0 * y[i].d * y[i].bsums[j]);
                    CHECK(std::fabs(out[static_cast<std::size_t>(r)] - want) <= 4.0 * static_cast<double>(nb + 16) * 0x1p-24 * mag);
                }
            }
        }
    }
}

TEST_CASE("gemv: several rows (with a row stride) equal vec_dot of each row, every arch") {
    for_types(weight_types{}, []<class B>() { check_gemv<B>(); });
}

TEST_CASE("dequantize rows: every arch is bit-exact with the scalar definition") {
    for_types(weight_types{}, []<class B>() { check_dequant<B>(); });
    check_dequant<quant::block_q8_K>();
}

TEST_CASE("vec_dot: every arch equals the scalar definition (exact integer part, bounded f32 sum)") {
    for_types(weight_types{}, []<class B>() { check_vec_dot<B>(); });
}

TEST_CASE_TEMPLATE("SIMD quantizers give the same bytes on every arch", P, quant::block_q8_0,
                   quant::block_q8_1, quant::block_q8_K, quant::block_q4_0) {
    constexpr auto bs = static_cast<std::size_t>(quant::block_traits<P>::block_size);
    for (std::size_t nb : block_counts) {
        auto x = random_floats(nb * bs, static_cast<unsigned>(nb + 100), -3.0f, 3.0f);
        check_quantize_bytes<P>(x, "random");
    }
    // special blocks: all zero, one spike, the extreme negative first, ties of magnitude
    std::vector<float> x(8 * bs, 0.0f);
    x[bs + 5] = 1e-3f;
    for (std::size_t j = 0; j < bs; ++j) x[2 * bs + j] = static_cast<float>(j % 7) - 3.0f;
    x[2 * bs + 9] = -10.0f;
    x[2 * bs + 20] = 10.0f;
    for (std::size_t j = 0; j < bs; ++j) x[3 * bs + j] = (j % 2 ? 1.0f : -1.0f) * 2.5f;
    for (std::size_t j = 0; j < bs; ++j) x[4 * bs + j] = 1e30f * (static_cast<float>(j) - 10.0f);
    for (std::size_t j = 0; j < bs; ++j) x[5 * bs + j] = 1e-30f * (static_cast<float>(j) + 1.0f);
    check_quantize_bytes<P>(x, "special");
}

TEST_CASE("q8_0 and q8_1 round halves away from zero like roundf, on every arch") {
    // amax = 127 -> d = 1, id = 1: x * id is exact, so the ties are real ties
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j - 16) + 0.5f;
    x[0] = 127.0f;
    for (auto a : simd::available_archs()) {
        quant::block_q8_0 b{};
        simd::kernel_for<qk::quantize_row_q8_0>(a)(x.data(), &b, 32);
        CAPTURE(arch_str(a));
        CHECK(b.d.to_float() == 1.0f);
        CHECK(b.qs[0] == 127);
        for (int j = 1; j < 32; ++j) CHECK(b.qs[j] == static_cast<int>(std::round(x[static_cast<std::size_t>(j)])));
        quant::block_q8_1 c{};
        simd::kernel_for<qk::quantize_row_q8_1>(a)(x.data(), &c, 32);
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += c.qs[j];
        CHECK(std::memcmp(c.qs, b.qs, 32) == 0);
        CHECK(c.s == f16::from_float(static_cast<float>(sum)));
    }
}

TEST_CASE("q8_K: the signed extreme maps to -127, ties round to even, bsums add up") {
    std::vector<float> x(256);
    for (int j = 0; j < 256; ++j) x[static_cast<std::size_t>(j)] = static_cast<float>(j % 9) - 4.5f;
    x[17] = -127.0f;  // max = -127 -> iscale = 1
    x[40] = 127.0f;   // same magnitude later: the first one wins
    for (auto a : simd::available_archs()) {
        quant::block_q8_K b{};
        simd::kernel_for<qk::quantize_row_q8_K>(a)(x.data(), &b, 256);
        CAPTURE(arch_str(a));
        CHECK(b.d == 1.0f);
        for (int j = 0; j < 256; ++j) {
            const float v = x[static_cast<std::size_t>(j)];
            CHECK(b.qs[j] == static_cast<int>(std::nearbyint(v)));  // default rounding: ties to even
        }
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += b.qs[16 * j + l];
            CHECK(b.bsums[j] == s);
        }
    }
}

TEST_CASE("f16 and bf16 dot: |err| / n < 1e-4 for the lengths of test-quantize-fns, every arch") {
    for (std::size_t n : {1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 67, 127, 129, 193, 255, 1023}) {
        const auto a = random_floats(n, static_cast<unsigned>(n), -2.0f, 2.0f);
        const auto b = random_floats(n, static_cast<unsigned>(n + 1), -2.0f, 2.0f);
        std::vector<f16> ha(n), hb(n);
        std::vector<bf16> ba(n), bb(n);
        for (std::size_t i = 0; i < n; ++i) {
            ha[i] = f16::from_float(a[i]), hb[i] = f16::from_float(b[i]);
            ba[i] = bf16::from_float(a[i]), bb[i] = bf16::from_float(b[i]);
        }
        double rh = 0, rb = 0, mh = 0, mb = 0;
        for (std::size_t i = 0; i < n; ++i) {
            rh += static_cast<double>(ha[i].to_float()) * hb[i].to_float();
            rb += static_cast<double>(ba[i].to_float()) * bb[i].to_float();
            mh += std::fabs(static_cast<double>(ha[i].to_float()) * hb[i].to_float());
            mb += std::fabs(static_cast<double>(ba[i].to_float()) * bb[i].to_float());
        }
        for (auto arch : simd::available_archs()) {
            CAPTURE(arch_str(arch));
            CAPTURE(n);
            const double gh = simd::kernel_for<qk::vec_dot_f16>(arch)(static_cast<std::int64_t>(n), ha.data(), hb.data());
            const double gb = simd::kernel_for<qk::vec_dot_bf16>(arch)(static_cast<std::int64_t>(n), ba.data(), bb.data());
            CHECK(std::fabs(gh - rh) / static_cast<double>(n) < 1e-4);
            CHECK(std::fabs(gb - rb) / static_cast<double>(n) < 1e-4);
            // products are exact in f32; only the f32 sum rounds
            CHECK(std::fabs(gh - rh) <= static_cast<double>(n) * 0x1p-23 * mh + 1e-30);
            CHECK(std::fabs(gb - rb) <= static_cast<double>(n) * 0x1p-23 * mb + 1e-30);
        }
    }
}
