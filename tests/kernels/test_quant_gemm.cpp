// The packed quantized GEMM (kernels/quant/gemm.hpp) against a double-precision
// definition: out[n][m] = sum_b d_x[m,b] * d_y[n,b] * sum_t wq[m,b,t] * yq[n,b,t], on
// every arch the machine has, for row counts and column counts around the tile sizes
// (4 x 4 tiles, 16-row panels) and block counts around the 16-block groups; the
// repacked-weight kernels (gemm_*_rows4) give the same bits as the plain-layout ones;
// q4_K x q8_K the same, against its own definition and the gemv path.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tessera/kernels/quant/gemm.hpp"
#include "tessera/kernels/quant/repack.hpp"
#include "tessera/kernels/quant/vec_dot.hpp"
#include "tessera/quant/reference.hpp"
#include "tessera/simd/dispatch.hpp"

using namespace tessera;

namespace {

template <class B>
int weight_q(const B& b, int e) {
    if constexpr (std::is_same_v<B, quant::block_q4_0>)
        return (e < 16 ? (b.qs[e] & 15) : (b.qs[e - 16] >> 4)) - 8;
    else
        return b.qs[e];
}

template <class B, template <class> class K, template <class> class K4>
void check_gemm() {
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (std::int64_t nb : {1, 15, 16, 17, 40}) {
        const std::int64_t k = nb * 32;
        for (std::int64_t m : {1, 3, 4, 5, 16, 19, 37}) {
            std::vector<float> wf(static_cast<std::size_t>(m * k));
            for (float& v : wf) v = nd(rng);
            const std::size_t xs = static_cast<std::size_t>(row_size(quant::block_traits<B>::id, k)) + 2 * sizeof(B);  // a row stride larger than the row
            std::vector<std::byte> x(xs * static_cast<std::size_t>(m));
            for (std::int64_t r = 0; r < m; ++r)
                quant::quantize(quant::block_traits<B>::id, wf.data() + r * k, x.data() + static_cast<std::size_t>(r) * xs, 1, k);
            // the same rows repacked (kernels/quant/repack.hpp) when m is a multiple of 4
            constexpr type_id tid = quant::block_traits<B>::id;
            const bool r4 = kernels::can_repack(tid, k, m);
            std::vector<std::byte> packed;
            if (r4) {
                const std::size_t rb = static_cast<std::size_t>(row_size(tid, k));
                std::vector<std::byte> plain(rb * static_cast<std::size_t>(m)), back(plain.size());
                for (std::int64_t r = 0; r < m; ++r)
                    std::memcpy(plain.data() + static_cast<std::size_t>(r) * rb, x.data() + static_cast<std::size_t>(r) * xs, rb);
                packed.resize(kernels::repacked_bytes(tid, k, m));
                kernels::repack_matrix(tid, k, m, plain.data(), packed.data());
                kernels::unpack_matrix(tid, k, m, packed.data(), back.data());
                CHECK(back == plain);  // the repack is a permutation of the bytes
                if (nb % 16 == 0) CHECK(packed.size() == plain.size());
            }
            for (std::int64_t n : {1, 2, 3, 4, 5, 8, 11}) {
                std::vector<float> yf(static_cast<std::size_t>(n * k));
                for (float& v : yf) v = nd(rng);
                std::vector<quant::block_q8_0> yq(static_cast<std::size_t>(n * nb));
                quant::quantize(type_id::q8_0, yf.data(), yq.data(), n, k);
                const std::size_t ys = kernels::qgemm_act_row_bytes(tid, k);
                std::vector<std::byte> yp(ys * static_cast<std::size_t>(n));
                for (std::int64_t c = 0; c < n; ++c)
                    kernels::qgemm_pack_act<B>(k, yq.data() + c * nb, yp.data() + static_cast<std::size_t>(c) * ys);
                // the definition in double
                std::vector<double> want(static_cast<std::size_t>(n * m)), mag(want.size());
                for (std::int64_t c = 0; c < n; ++c)
                    for (std::int64_t r = 0; r < m; ++r) {
                        const B* xr = reinterpret_cast<const B*>(x.data() + static_cast<std::size_t>(r) * xs);
                        double s = 0, a = 0;
                        for (std::int64_t b = 0; b < nb; ++b) {
                            const auto& yb = yq[static_cast<std::size_t>(c * nb + b)];
                            long isum = 0;
                            for (int e = 0; e < 32; ++e) isum += weight_q(xr[b], e) * yb.qs[e];
                            const double t = static_cast<double>(xr[b].d.to_float()) * yb.d.to_float() * static_cast<double>(isum);
                            s += t;
                            a += std::fabs(t);
                        }
                        want[static_cast<std::size_t>(c * m + r)] = s;
                        mag[static_cast<std::size_t>(c * m + r)] = a;
                    }
                for (simd::arch_id arch : simd::available_archs()) {
                    CAPTURE(simd::name_of(arch));
                    CAPTURE(k);
                    CAPTURE(m);
                    CAPTURE(n);
                    const std::size_t ldo = static_cast<std::size_t>(m) + 3;
                    std::vector<float> out(ldo * static_cast<std::size_t>(n), -7.0f);
                    auto* work = static_cast<std::byte*>(::operator new(kernels::qgemm_work_bytes(tid, k), std::align_val_t(64)));
                    simd::kernel_for<K>(arch)(k, m, n, reinterpret_cast<const B*>(x.data()), xs, yp.data(), ys, out.data(), ldo, work);
                    ::operator delete(work, std::align_val_t(64));
                    int bad = 0;
                    for (std::int64_t c = 0; c < n; ++c) {
                        for (std::int64_t r = 0; r < m; ++r) {
                            const double got = out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)];
                            const std::size_t i = static_cast<std::size_t>(c * m + r);
                            if (!(std::fabs(got - want[i]) <= 4.0 * static_cast<double>(nb + 16) * 0x1p-24 * mag[i])) ++bad;
                        }
                        for (std::size_t r = static_cast<std::size_t>(m); r < ldo; ++r)  // padding columns untouched
                            if (out[static_cast<std::size_t>(c) * ldo + r] != -7.0f) ++bad;
                    }
                    CHECK(bad == 0);
                    if (r4) {  // same tiles, same bytes: bit-equal to the plain-layout kernel
                        std::vector<float> out4(out.size(), -7.0f);
                        simd::kernel_for<K4>(arch)(k, m, n, packed.data(), yp.data(), ys, out4.data(), ldo);
                        CHECK(std::memcmp(out4.data(), out.data(), out.size() * sizeof(float)) == 0);
                    }
                }
            }
        }
    }
}

}  // namespace

TEST_CASE("quantized GEMM q4_0 x q8_0: every arch equals the definition, repacked weights too") {
    check_gemm<quant::block_q4_0, kernels::gemm_q4_0, kernels::gemm_q4_0_rows4>();
}

TEST_CASE("quantized GEMM q8_0 x q8_0: every arch equals the definition, repacked weights too") {
    check_gemm<quant::block_q8_0, kernels::gemm_q8_0, kernels::gemm_q8_0_rows4>();
}

// q4_K x q8_K: the definition per sub-block j of a super-block (d, dmin, sc_j, m_j):
//   d * sc_j * dy * sum_e q_e * yq_e  -  dmin * m_j * dy * sum_e yq_e,
// in double. The kernels keep the integer dot exact and add per-lane f32 terms
// (d*sc*dy * s and dmin*m * dy*bsum, the second with dy*bsum rounded once): each term
// is within 3 f32 roundings of its exact value and the sum of L = k/32 terms of each
// kind within (L + 16) more, so |got - want| <= 4 * (L + 16) * 2^-24 * mag with mag the
// sum of |terms| of both kinds. The weights have random scale bytes and nibbles (every
// 6-bit scale and min and every nibble 0..15 occurs), the d / dmin of a real quantization.
TEST_CASE("quantized GEMM q4_K x q8_K: every arch equals the definition and the gemv path, repacked weights too") {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_int_distribution<int> byte(0, 255);
    constexpr type_id tid = type_id::q4_K;
    for (std::int64_t nsb : {1, 2, 3, 5, 8}) {
        const std::int64_t k = nsb * 256;
        for (std::int64_t m : {1, 3, 4, 5, 16, 19, 36}) {
            std::vector<float> wf(static_cast<std::size_t>(m * k));
            for (float& v : wf) v = nd(rng);
            const std::size_t rb = static_cast<std::size_t>(row_size(tid, k));
            const std::size_t xs = rb + 144;  // a row stride larger than the row
            std::vector<std::byte> x(xs * static_cast<std::size_t>(m)), plain(rb * static_cast<std::size_t>(m));
            for (std::int64_t r = 0; r < m; ++r) {
                auto* row = reinterpret_cast<quant::block_q4_K*>(x.data() + static_cast<std::size_t>(r) * xs);
                quant::quantize(tid, wf.data() + r * k, row, 1, k);
                for (std::int64_t b = 0; b < nsb; ++b) {
                    for (auto& s : row[b].scales) s = static_cast<std::uint8_t>(byte(rng));
                    for (auto& q : row[b].qs) q = static_cast<std::uint8_t>(byte(rng));
                }
                std::memcpy(plain.data() + static_cast<std::size_t>(r) * rb, row, rb);
            }
            const bool r4 = kernels::can_repack(tid, k, m);
            CHECK(r4 == (m % 4 == 0));
            std::vector<std::byte> packed;
            if (r4) {
                std::vector<std::byte> back(plain.size());
                packed.resize(kernels::repacked_bytes(tid, k, m));
                CHECK(packed.size() == static_cast<std::size_t>(m / 4 * 4 * ((nsb + 1) / 2)) * 296);
                kernels::repack_matrix(tid, k, m, plain.data(), packed.data());
                kernels::unpack_matrix(tid, k, m, packed.data(), back.data());
                CHECK(back == plain);  // the repack is invertible: every byte comes back
            }
            for (std::int64_t n : {1, 2, 3, 4, 5, 8, 11}) {
                std::vector<float> yf(static_cast<std::size_t>(n * k));
                for (float& v : yf) v = nd(rng);
                std::vector<quant::block_q8_K> yq(static_cast<std::size_t>(n * nsb));
                quant::quantize(type_id::q8_K, yf.data(), yq.data(), n, k);
                const std::size_t ys = kernels::qgemm_act_row_bytes(tid, k);
                std::vector<std::byte> yp(ys * static_cast<std::size_t>(n));
                for (std::int64_t c = 0; c < n; ++c)
                    kernels::qgemm_pack_act<quant::block_q4_K>(k, yq.data() + c * nsb, yp.data() + static_cast<std::size_t>(c) * ys);
                std::vector<double> want(static_cast<std::size_t>(n * m)), mag(want.size());
                for (std::int64_t c = 0; c < n; ++c)
                    for (std::int64_t r = 0; r < m; ++r) {
                        const auto* xr = reinterpret_cast<const quant::block_q4_K*>(x.data() + static_cast<std::size_t>(r) * xs);
                        double s = 0, a = 0;
                        for (std::int64_t b = 0; b < nsb; ++b) {
                            const auto& yb = yq[static_cast<std::size_t>(c * nsb + b)];
                            const std::uint8_t* q = xr[b].scales;
                            for (int j = 0; j < 8; ++j) {
                                const int sc = j < 4 ? q[j] & 63 : (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
                                const int mn = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
                                long dot = 0, sum = 0;
                                for (int e = 0; e < 32; ++e) {
                                    const int w = (xr[b].qs[32 * (j / 2) + e] >> (4 * (j % 2))) & 15;
                                    dot += w * yb.qs[32 * j + e];
                                    sum += yb.qs[32 * j + e];
                                }
                                const double t1 = static_cast<double>(xr[b].d.to_float()) * sc * yb.d * static_cast<double>(dot);
                                const double t2 = static_cast<double>(xr[b].dmin.to_float()) * mn * yb.d * static_cast<double>(sum);
                                s += t1 - t2;
                                a += std::fabs(t1) + std::fabs(t2);
                            }
                        }
                        want[static_cast<std::size_t>(c * m + r)] = s;
                        mag[static_cast<std::size_t>(c * m + r)] = a;
                    }
                const double rel = 4.0 * static_cast<double>(k / 32 + 16) * 0x1p-24;
                for (simd::arch_id arch : simd::available_archs()) {
                    CAPTURE(simd::name_of(arch));
                    CAPTURE(k);
                    CAPTURE(m);
                    CAPTURE(n);
                    const std::size_t ldo = static_cast<std::size_t>(m) + 3;
                    std::vector<float> out(ldo * static_cast<std::size_t>(n), -7.0f);
                    auto* work = static_cast<std::byte*>(::operator new(kernels::qgemm_work_bytes(tid, k), std::align_val_t(64)));
                    simd::kernel_for<kernels::gemm_q4_K>(arch)(k, m, n, reinterpret_cast<const quant::block_q4_K*>(x.data()), xs,
                                                               yp.data(), ys, out.data(), ldo, work);
                    ::operator delete(work, std::align_val_t(64));
                    // the gemv path (row kernels of mul_mat with few columns) on the same data
                    std::vector<float> gv(static_cast<std::size_t>(m));
                    int bad = 0, bad_gemv = 0;
                    for (std::int64_t c = 0; c < n; ++c) {
                        simd::kernel_for<kernels::gemv_q4_K>(arch)(k, m, reinterpret_cast<const quant::block_q4_K*>(x.data()), xs,
                                                                   yq.data() + c * nsb, gv.data());
                        for (std::int64_t r = 0; r < m; ++r) {
                            const std::size_t i = static_cast<std::size_t>(c * m + r);
                            const double got = out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)];
                            if (!(std::fabs(got - want[i]) <= rel * mag[i])) ++bad;
                            if (!(std::fabs(got - gv[static_cast<std::size_t>(r)]) <= 2 * rel * mag[i])) ++bad_gemv;
                        }
                        for (std::size_t r = static_cast<std::size_t>(m); r < ldo; ++r)  // padding columns untouched
                            if (out[static_cast<std::size_t>(c) * ldo + r] != -7.0f) ++bad;
                    }
                    CHECK(bad == 0);
                    CHECK(bad_gemv == 0);
                    if (r4) {  // same tiles, same integer and f32 operations: bit-equal to the plain-layout kernel
                        std::vector<float> out4(out.size(), -7.0f);
                        simd::kernel_for<kernels::gemm_q4_K_rows4>(arch)(k, m, n, packed.data(), yp.data(), ys, out4.data(), ldo);
                        CHECK(std::memcmp(out4.data(), out.data(), out.size() * sizeof(float)) == 0);
                    }
                }
            }
        }
    }
}

TEST_CASE("q4_K repack: byte layout of a record, padding, and the 6-bit scale re-encoding") {
    constexpr type_id tid = type_id::q4_K;
    CHECK_FALSE(kernels::can_repack(tid, 128, 4));  // not whole super-blocks
    CHECK_FALSE(kernels::can_repack(tid, 256, 6));
    CHECK(kernels::can_repack(tid, 768, 8));
    // 3 super-blocks per row, 4 rows: 2 groups, the second with one super-block
    const std::int64_t k = 768, m = 4;
    std::mt19937 rng(3);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<unsigned char> plain(static_cast<std::size_t>(row_size(tid, k) * m));
    for (auto& b : plain) b = static_cast<unsigned char>(byte(rng));
    std::vector<unsigned char> packed(kernels::repacked_bytes(tid, k, m), 0xEE);
    REQUIRE(packed.size() == 4 * 2 * 296);
    kernels::repack_matrix(tid, k, m, plain.data(), packed.data());
    // row 1, super-block 2 -> group 1, h = 0: record (1 * 4 + 1)
    const unsigned char* sb = plain.data() + 1 * 3 * 144 + 2 * 144;
    const unsigned char* rec = packed.data() + (1 * 4 + 1) * 296;
    CHECK(std::memcmp(rec + 288, sb, 2) == 0);      // d
    CHECK(std::memcmp(rec + 292, sb + 2, 2) == 0);  // dmin
    for (int c = 0; c < 4; ++c)
        for (int e = 0; e < 32; ++e) CHECK(rec[(e / 8) * 64 + 8 * c + e % 8] == sb[16 + 32 * c + e]);
    for (int j = 0; j < 8; ++j) {
        const unsigned char* q = sb + 4;
        const int sc = j < 4 ? q[j] & 63 : (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        const int mn = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
        CHECK(rec[256 + j] == sc);
        CHECK(rec[272 + j] == mn);
    }
    // its h = 1 half is padding: zero nibbles, scales and d
    for (int s = 0; s < 4; ++s)
        for (int i = 32; i < 64; ++i) CHECK(rec[s * 64 + i] == 0);
    for (int l = 8; l < 16; ++l) CHECK((rec[256 + l] | rec[272 + l]) == 0);
    CHECK((rec[290] | rec[291] | rec[294] | rec[295]) == 0);
    std::vector<unsigned char> back(plain.size());
    kernels::unpack_matrix(tid, k, m, packed.data(), back.data());
    CHECK(back == plain);
}
