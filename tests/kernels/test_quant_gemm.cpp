// The packed quantized GEMM (kernels/quant/gemm.hpp) against a double-precision
// definition: out[n][m] = sum_b d_x[m,b] * d_y[n,b] * sum_t wq[m,b,t] * yq[n,b,t], on
// every arch the machine has, for row counts and column counts around the tile sizes
// (4 x 4 tiles, 16-row panels) and block counts around the 16-block groups; the
// repacked-weight kernels (gemm_*_rows4) give the same bits as the plain-layout ones;
// q4_K x q8_K the same, against its own definition and the gemv path; every other type
// with a vec_dot (the lane kernels) against its definition and its gemv.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "../shared_data.hpp"
#include "tessera/kernels/quant/gemm.hpp"
#include "tessera/kernels/quant/table.hpp"
#include "tessera/kernels/quant/repack.hpp"
#include "tessera/kernels/quant/vec_dot.hpp"
#include "tessera/quant/tables.hpp"
#include "tessera/quant/reference.hpp"
#include "tessera/simd/dispatch.hpp"

using namespace tessera;

namespace {

constexpr kernels::repack_layout all_layouts[] = {kernels::repack_layout::rows4_x16, kernels::repack_layout::rows4_b4,
                                                  kernels::repack_layout::rows4_b8, kernels::repack_layout::rows8_b8};

template <class B>
int weight_q(const B& b, int e) {
    if constexpr (std::is_same_v<B, quant::block_q4_0>)
        return (e < 16 ? (b.qs[e] & 15) : (b.qs[e - 16] >> 4)) - 8;
    else if constexpr (std::is_same_v<B, quant::block_iq4_nl>)
        return quant::kvalues_iq4nl[e < 16 ? (b.qs[e] & 15) : (b.qs[e - 16] >> 4)];
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
            // the same rows repacked (kernels/quant/repack.hpp) in every layout that takes them
            constexpr type_id tid = quant::block_traits<B>::id;
            std::vector<std::pair<kernels::repack_layout, std::vector<std::byte>>> packs;
            for (kernels::repack_layout lay : all_layouts) {
                if (!kernels::can_repack(tid, k, m, lay)) continue;
                CAPTURE(kernels::repack_layout_name(lay));
                const std::size_t rb = static_cast<std::size_t>(row_size(tid, k));
                std::vector<std::byte> plain(rb * static_cast<std::size_t>(m)), back(plain.size());
                for (std::int64_t r = 0; r < m; ++r)
                    std::memcpy(plain.data() + static_cast<std::size_t>(r) * rb, x.data() + static_cast<std::size_t>(r) * xs, rb);
                std::vector<std::byte> packed(kernels::repacked_bytes(tid, k, m, lay));
                kernels::repack_matrix(tid, k, m, plain.data(), packed.data(), lay);
                kernels::unpack_matrix(tid, k, m, packed.data(), back.data(), lay);
                CHECK(back == plain);  // the repack is a permutation of the bytes
                if (nb % 16 == 0 || lay != kernels::repack_layout::rows4_x16) CHECK(packed.size() == plain.size());
                packs.emplace_back(lay, std::move(packed));
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
                    for (const auto& pk : packs) {  // same tiles, same sums: bit-equal to the plain-layout kernel
                        const kernels::repack_layout lay = pk.first;
                        const std::vector<std::byte>& packed = pk.second;
                        CAPTURE(kernels::repack_layout_name(lay));
                        std::vector<float> out4(out.size(), -7.0f);
                        simd::kernel_for<K4>(arch)(k, m, n, packed.data(), lay, yp.data(), ys, out4.data(), ldo);
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
// iq4_nl in the ARM layouts (every arch reads them; on x86 CPU_REPACK keeps iq4_nl plain)
TEST_CASE("quantized GEMM iq4_nl x q8_0: every arch equals the definition, repacked weights too") {
    check_gemm<quant::block_iq4_nl, kernels::gemm_iq4_nl, kernels::gemm_iq4_nl_rows4>();
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
                        simd::kernel_for<kernels::gemm_q4_K_rows4>(arch)(k, m, n, packed.data(), kernels::repack_layout::rows4_x16, yp.data(), ys,
                                                                      out4.data(), ldo);
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

TEST_CASE("ARM q4_0 / iq4_nl repack layouts: byte positions, which layout each arch gets, sizes") {
    constexpr type_id tid = type_id::q4_0;
    using L = kernels::repack_layout;
    CHECK_FALSE(kernels::can_repack(tid, 64, 4, L::rows8_b8));  // 8-row groups
    CHECK(kernels::can_repack(tid, 64, 8, L::rows8_b8));
    CHECK(kernels::can_repack(type_id::iq4_nl, 64, 8, L::rows8_b8));
    CHECK_FALSE(kernels::can_repack(type_id::iq4_nl, 64, 8, L::rows4_x16));   // no x16 record
    CHECK_FALSE(kernels::can_repack(type_id::q8_0, 64, 8, L::rows4_b4));  // q4_0 and iq4_nl only
    CHECK_FALSE(kernels::can_repack(type_id::q4_K, 256, 8, L::rows8_b8));
    // 3 blocks per row, 16 rows, bytes at random: every quant byte and scale where the
    // header of kernels/quant/repack.hpp puts it
    const std::int64_t k = 96, m = 16, nb = 3;
    std::mt19937 rng(4);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<unsigned char> plain(static_cast<std::size_t>(row_size(tid, k) * m));
    for (auto& b : plain) b = static_cast<unsigned char>(byte(rng));
    for (L lay : {L::rows4_b4, L::rows4_b8, L::rows8_b8}) {
        CAPTURE(kernels::repack_layout_name(lay));
        const int R = lay == L::rows8_b8 ? 8 : 4, I = lay == L::rows4_b4 ? 4 : 8;
        CHECK(kernels::repack_group_rows(lay) == R);
        std::vector<unsigned char> packed(kernels::repacked_bytes(tid, k, m, lay), 0xEE);
        REQUIRE(packed.size() == plain.size());  // no padding
        kernels::repack_matrix(tid, k, m, plain.data(), packed.data(), lay);
        int bad = 0;
        for (int r = 0; r < m; ++r)
            for (int b = 0; b < nb; ++b) {
                const unsigned char* blk = plain.data() + (r * nb + b) * 18;
                const unsigned char* rec = packed.data() + (r / R) * R * nb * 18 + b * 18 * R;
                const int i = r % R;
                if (rec[2 * i] != blk[0] || rec[2 * i + 1] != blk[1]) ++bad;
                for (int q = 0; q < 16; ++q)
                    if (rec[2 * R + ((q / I) * R + i) * I + q % I] != blk[2 + q]) ++bad;
            }
        CHECK(bad == 0);
        std::vector<unsigned char> back(plain.size());
        kernels::unpack_matrix(tid, k, m, packed.data(), back.data(), lay);
        CHECK(back == plain);
    }
    // CPU_REPACK's choice per arch (docs/kernels.md): x86 and every other type rows4_x16;
    // on AArch64 q4_0 by the GEMM's interleave
    for (simd::arch_id a : simd::available_archs()) {
        CAPTURE(simd::name_of(a));
        CHECK(kernels::repack_layout_for(type_id::q8_0, 8, a) == L::rows4_x16);
        CHECK(kernels::repack_layout_for(type_id::q4_K, 8, a) == L::rows4_x16);
        const std::string_view nm = simd::name_of(a);
        const L want8 = nm == "sve" ? L::rows8_b8 : nm == "i8mm" ? L::rows4_b8 : L::rows4_b4;
        const L want4 = nm == "sve" || nm == "i8mm" ? L::rows4_b8 : L::rows4_b4;
#if defined(TESSERA_AARCH64)
        for (type_id t : {tid, type_id::iq4_nl}) {
            CHECK(kernels::repack_layout_for(t, 16, a) == want8);
            CHECK(kernels::repack_layout_for(t, 12, a) == want4);
        }
#else
        (void)want8, (void)want4;
        CHECK(kernels::repack_layout_for(tid, 16, a) == L::rows4_x16);
        CHECK(kernels::repack_layout_for(type_id::iq4_nl, 16, a) == L::rows4_x16);  // which cannot hold it: plain
#endif
    }
}

// ---- the lane codecs of the other block types (kernels/quant/gemm.hpp) -------------------
namespace {

// A block as lanes, written here from the formats (ggml's dequantize_row_* semantics):
// x_e = scale * w_e + min for the lane's elements, w integer; the dot with the partner is
// sum over lanes of scale * dy * sum(w * yq) + min * ysum, ysum = q8_1's s for q8_1
// partners, else dy * sum(yq). Checked against the quant layer's reference dequantizer.
struct test_lane {
    int w[32] = {};
    double scale = 0, min = 0;
};
constexpr int iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr int mxfp4_doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void k_scale_min(int j, const std::uint8_t* q, int& sc, int& mn) {  // q4_K / q5_K 6-bit scale and min j
    sc = j < 4 ? q[j] & 63 : (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    mn = j < 4 ? q[j + 4] & 63 : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
}

template <class B>
constexpr bool is_lattice =
    std::is_same_v<B, quant::block_iq2_xxs> || std::is_same_v<B, quant::block_iq2_xs> || std::is_same_v<B, quant::block_iq2_s> ||
    std::is_same_v<B, quant::block_iq3_xxs> || std::is_same_v<B, quant::block_iq3_s> || std::is_same_v<B, quant::block_iq1_s> ||
    std::is_same_v<B, quant::block_iq1_m>;
template <class B>
std::vector<test_lane> test_lanes(const B& x) {
    using namespace quant;
    const auto h = [](f16 v) { return static_cast<double>(v.to_float()); };
    std::vector<test_lane> out;
    if constexpr (std::is_same_v<B, block_q4_1> || std::is_same_v<B, block_q5_0> || std::is_same_v<B, block_q5_1>) {
        test_lane ln;
        std::uint32_t qh = 0;
        if constexpr (!std::is_same_v<B, block_q4_1>) std::memcpy(&qh, x.qh, 4);
        for (int e = 0; e < 32; ++e) {
            const int nib = e < 16 ? x.qs[e] & 15 : x.qs[e - 16] >> 4;
            ln.w[e] = nib | static_cast<int>(((qh >> e) & 1) << 4);
            if constexpr (std::is_same_v<B, block_q5_0>) ln.w[e] -= 16;
        }
        ln.scale = h(x.d);
        if constexpr (!std::is_same_v<B, block_q5_0>) ln.min = h(x.m);
        out.push_back(ln);
    } else if constexpr (std::is_same_v<B, block_q8_1>) {
        test_lane ln;
        for (int e = 0; e < 32; ++e) ln.w[e] = x.qs[e];
        ln.scale = h(x.d);
        out.push_back(ln);
    } else if constexpr (std::is_same_v<B, block_iq4_nl> || std::is_same_v<B, block_mxfp4>) {
        test_lane ln;
        const int* table = std::is_same_v<B, block_iq4_nl> ? iq4nl_values : mxfp4_doubled;
        for (int e = 0; e < 32; ++e) ln.w[e] = table[e < 16 ? x.qs[e] & 15 : x.qs[e - 16] >> 4];
        if constexpr (std::is_same_v<B, block_iq4_nl>)
            ln.scale = h(x.d);
        else
            ln.scale = std::ldexp(1.0, x.e - 128);  // 2^(e-127) times the halved table
        out.push_back(ln);
    } else if constexpr (std::is_same_v<B, block_q2_K> || std::is_same_v<B, block_q3_K>) {
        out.resize(16);
        int sc3[16] = {};
        if constexpr (std::is_same_v<B, block_q3_K>) {  // ggml's 12-byte packing of sixteen 6-bit scales
            std::uint32_t aux[4];
            std::memcpy(aux, x.scales, 12);
            const std::uint32_t tmp = aux[2], m1 = 0x03030303, m2 = 0x0f0f0f0f;
            aux[2] = ((aux[0] >> 4) & m2) | (((tmp >> 4) & m1) << 4);
            aux[3] = ((aux[1] >> 4) & m2) | (((tmp >> 6) & m1) << 4);
            aux[0] = (aux[0] & m2) | (((tmp >> 0) & m1) << 4);
            aux[1] = (aux[1] & m2) | (((tmp >> 2) & m1) << 4);
            for (int j = 0; j < 16; ++j) sc3[j] = static_cast<int>(reinterpret_cast<const std::int8_t*>(aux)[j]) - 32;
        }
        for (int hf = 0; hf < 2; ++hf)
            for (int s = 0; s < 4; ++s)
                for (int l = 0; l < 32; ++l) {
                    const int e = 128 * hf + 32 * s + l;
                    int q = (x.qs[32 * hf + l] >> (2 * s)) & 3;
                    if constexpr (std::is_same_v<B, block_q3_K>) q -= (x.hmask[l] >> (4 * hf + s)) & 1 ? 0 : 4;
                    out[static_cast<std::size_t>(e / 16)].w[e % 16] = q;
                }
        for (int j = 0; j < 16; ++j) {
            if constexpr (std::is_same_v<B, block_q2_K>) {
                out[static_cast<std::size_t>(j)].scale = h(x.d) * (x.scales[j] & 15);
                out[static_cast<std::size_t>(j)].min = -h(x.dmin) * (x.scales[j] >> 4);
            } else {
                out[static_cast<std::size_t>(j)].scale = h(x.d) * sc3[j];
            }
        }
    } else if constexpr (std::is_same_v<B, block_q5_K>) {
        out.resize(8);
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) {
                out[static_cast<std::size_t>(2 * j)].w[l] = (x.qs[32 * j + l] & 15) + 16 * ((x.qh[l] >> (2 * j)) & 1);
                out[static_cast<std::size_t>(2 * j + 1)].w[l] = (x.qs[32 * j + l] >> 4) + 16 * ((x.qh[l] >> (2 * j + 1)) & 1);
            }
        for (int j = 0; j < 8; ++j) {
            int sc, mn;
            k_scale_min(j, x.scales, sc, mn);
            out[static_cast<std::size_t>(j)].scale = h(x.d) * sc;
            out[static_cast<std::size_t>(j)].min = -h(x.dmin) * mn;
        }
    } else if constexpr (std::is_same_v<B, block_q6_K>) {
        out.resize(16);
        for (int hf = 0; hf < 2; ++hf)
            for (int l = 0; l < 32; ++l) {
                const std::uint8_t* ql = x.ql + 64 * hf;
                const std::uint8_t qh = x.qh[32 * hf + l];
                const int q[4] = {(ql[l] & 15) | ((qh & 3) << 4), (ql[l + 32] & 15) | (((qh >> 2) & 3) << 4),
                                  (ql[l] >> 4) | (((qh >> 4) & 3) << 4), (ql[l + 32] >> 4) | (((qh >> 6) & 3) << 4)};
                for (int s = 0; s < 4; ++s) {
                    const int e = 128 * hf + 32 * s + l;
                    out[static_cast<std::size_t>(e / 16)].w[e % 16] = q[s] - 32;
                }
            }
        for (int j = 0; j < 16; ++j) out[static_cast<std::size_t>(j)].scale = h(x.d) * x.scales[j];
    } else if constexpr (std::is_same_v<B, block_iq4_xs>) {
        out.resize(8);
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | (((x.scales_h >> (2 * ib)) & 3) << 4);
            out[static_cast<std::size_t>(ib)].scale = h(x.d) * (ls - 32);
            for (int e = 0; e < 32; ++e)
                out[static_cast<std::size_t>(ib)].w[e] = iq4nl_values[e < 16 ? x.qs[16 * ib + e] & 15 : x.qs[16 * ib + e - 16] >> 4];
        }
    } else if constexpr (std::is_same_v<B, block_tq1_0> || std::is_same_v<B, block_tq2_0>) {
        out.resize(8);
        int v[256];
        if constexpr (std::is_same_v<B, block_tq1_0>) {  // base-3 digits, most significant first, of bytes scaled by 243/256
            const auto trit = [](std::uint8_t b, int n) {
                static constexpr int pow3[5] = {1, 3, 9, 27, 81};
                return ((static_cast<std::uint8_t>(b * pow3[n]) * 3) >> 8) - 1;
            };
            int e = 0;
            for (int n = 0; n < 5; ++n)
                for (int m = 0; m < 32; ++m) v[e++] = trit(x.qs[m], n);
            for (int n = 0; n < 5; ++n)
                for (int m = 0; m < 16; ++m) v[e++] = trit(x.qs[32 + m], n);
            for (int n = 0; n < 4; ++n)
                for (int m = 0; m < 4; ++m) v[e++] = trit(x.qh[m], n);
        } else {
            for (int j = 0; j < 2; ++j)
                for (int l = 0; l < 4; ++l)
                    for (int m = 0; m < 32; ++m) v[128 * j + 32 * l + m] = ((x.qs[32 * j + m] >> (2 * l)) & 3) - 1;
        }
        for (int e = 0; e < 256; ++e) out[static_cast<std::size_t>(e / 32)].w[e % 32] = v[e];
        for (auto& ln : out) ln.scale = h(x.d);
    } else if constexpr (std::is_same_v<B, block_nvfp4>) {  // 4 groups of 16, UE4M3 scale, E2M1 doubled / 2
        out.resize(4);
        for (int g = 0; g < 4; ++g) {
            const int ex = (x.d[g] >> 3) & 15, mant = x.d[g] & 7;
            out[static_cast<std::size_t>(g)].scale =
                x.d[g] == 0 || x.d[g] == 0x7F ? 0.0 : (ex == 0 ? std::ldexp(mant, -10) : std::ldexp(8 + mant, ex - 11));
            for (int e = 0; e < 16; ++e)
                out[static_cast<std::size_t>(g)].w[e] = mxfp4_doubled[e < 8 ? x.qs[8 * g + e] & 15 : x.qs[8 * g + e - 8] >> 4];
        }
    } else if constexpr (std::is_same_v<B, block_q1_0>) {  // signs: bit set is +d
        out.resize(4);
        for (int e = 0; e < 128; ++e) out[static_cast<std::size_t>(e / 32)].w[e % 32] = (x.qs[e / 8] >> (e % 8)) & 1 ? 1 : -1;
        for (auto& ln : out) ln.scale = h(x.d);
    } else if constexpr (std::is_same_v<B, block_q2_0>) {  // q - 1 in -1..2
        out.resize(2);
        for (int e = 0; e < 64; ++e) out[static_cast<std::size_t>(e / 32)].w[e % 32] = ((x.qs[e / 4] >> (2 * (e % 4))) & 3) - 1;
        for (auto& ln : out) ln.scale = h(x.d);
    } else if constexpr (is_lattice<B>) {
        // ggml's dequantize_row_iq*: per group of 8 (iq3: 4) a grid entry, bit j of the
        // group's sign byte negating value j; the iq1 values g + delta (delta = +-1/8) are
        // taken as 8 g +- 1 with the scale / 8.
        constexpr int lane = std::is_same_v<B, block_iq2_xs> || std::is_same_v<B, block_iq2_s> || std::is_same_v<B, block_iq1_m> ? 16 : 32;
        out.resize(256 / lane);
        const auto u8 = [](std::uint64_t g, int j) { return static_cast<int>((g >> (8 * j)) & 0xFF); };
        const auto i8 = [](std::uint64_t g, int j) { return static_cast<int>(static_cast<std::int8_t>((g >> (8 * j)) & 0xFF)); };
        const auto sign_code = [](std::uint32_t c7) {  // 7 stored bits, the eighth makes the parity even
            c7 &= 127;
            return static_cast<int>(c7 | ((static_cast<std::uint32_t>(__builtin_popcount(c7)) & 1) << 7));
        };
        const auto set = [&](int e, int w) { out[static_cast<std::size_t>(e / lane)].w[e % lane] = w; };
        const auto scale = [&](int e, double v) { out[static_cast<std::size_t>(e / lane)].scale = v; };
        for (int ib = 0; ib < 8; ++ib)
            for (int l = 0; l < 4; ++l) {
                const int e0 = 32 * ib + 8 * l;
                if constexpr (std::is_same_v<B, block_iq2_xxs>) {
                    std::uint8_t q[8];
                    std::memcpy(q, x.qs + 4 * ib, 8);
                    const std::uint32_t aux = static_cast<std::uint32_t>(q[4] | q[5] << 8 | q[6] << 16) | static_cast<std::uint32_t>(q[7]) << 24;
                    const int sg = sign_code(aux >> (7 * l));
                    for (int j = 0; j < 8; ++j) set(e0 + j, (sg >> j & 1 ? -1 : 1) * u8(quant::iq2xxs_grid[q[l]], j));
                    scale(e0, h(x.d) * (0.5 + (aux >> 28)) * 0.25);
                } else if constexpr (std::is_same_v<B, block_iq2_xs>) {
                    const int q = x.qs[4 * ib + l], sg = sign_code(static_cast<std::uint32_t>(q >> 9));
                    for (int j = 0; j < 8; ++j) set(e0 + j, (sg >> j & 1 ? -1 : 1) * u8(quant::iq2xs_grid[q & 511], j));
                    scale(e0, h(x.d) * (0.5 + ((x.scales[ib] >> (4 * (l / 2))) & 15)) * 0.25);
                } else if constexpr (std::is_same_v<B, block_iq2_s>) {
                    const int idx = x.qs[4 * ib + l] | (((x.qh[ib] >> (2 * l)) & 3) << 8), sg = x.qs[32 + 4 * ib + l];
                    for (int j = 0; j < 8; ++j) set(e0 + j, (sg >> j & 1 ? -1 : 1) * u8(quant::iq2s_grid[idx], j));
                    scale(e0, h(x.d) * (0.5 + ((x.scales[ib] >> (4 * (l / 2))) & 15)) * 0.25);
                } else if constexpr (std::is_same_v<B, block_iq3_xxs>) {
                    const std::uint8_t* sb = x.qs + 64 + 4 * ib;
                    const std::uint32_t aux = static_cast<std::uint32_t>(sb[0] | sb[1] << 8 | sb[2] << 16) | static_cast<std::uint32_t>(sb[3]) << 24;
                    const int sg = sign_code(aux >> (7 * l));
                    for (int j = 0; j < 8; ++j)
                        set(e0 + j, (sg >> j & 1 ? -1 : 1) * u8(quant::iq3xxs_grid[x.qs[8 * ib + 2 * l + j / 4]], j % 4));
                    scale(e0, h(x.d) * (0.5 + (aux >> 28)) * 0.5);
                } else if constexpr (std::is_same_v<B, block_iq3_s>) {
                    const int sg = x.signs[4 * ib + l];
                    for (int j = 0; j < 8; ++j) {
                        const int k = 2 * l + j / 4, idx = x.qs[8 * ib + k] | (((x.qh[ib] >> k) & 1) << 8);
                        set(e0 + j, (sg >> j & 1 ? -1 : 1) * u8(quant::iq3s_grid[idx], j % 4));
                    }
                    scale(e0, h(x.d) * (1 + 2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 15)));
                } else if constexpr (std::is_same_v<B, block_iq1_s>) {
                    const int qh = x.qh[ib], idx = x.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8);
                    for (int j = 0; j < 8; ++j) set(e0 + j, 8 * i8(quant::iq1s_grid[idx], j) + (qh & 0x8000 ? -1 : 1));
                    scale(e0, h(x.d) * (2 * ((qh >> 12) & 7) + 1) / 8.0);
                } else {  // iq1_m: d in the top nibbles of the four u16 scale words, 3-bit scales per 16
                    std::uint16_t sc[4];
                    std::memcpy(sc, x.scales, 8);
                    f16 d;
                    d.bits = static_cast<std::uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0xF0) | ((sc[2] >> 4) & 0xF00) | (sc[3] & 0xF000));
                    const int qh = x.qh[2 * ib + l / 2] >> (4 * (l % 2)), idx = x.qs[4 * ib + l] | ((qh & 7) << 8);
                    for (int j = 0; j < 8; ++j) set(e0 + j, 8 * i8(quant::iq1s_grid[idx], j) + (qh & 8 ? -1 : 1));
                    const int ls = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2))) & 7) + 1;
                    scale(e0, h(d) * ls / 8.0);
                }
            }
    }
    return out;
}

std::uint16_t f16_bits(float v) { return f16::from_float(v).bits; }
double act_scale(const quant::block_q8_K& b) { return b.d; }
template <class P>
double act_scale(const P& b) {
    return b.d.to_float();
}

// Random bytes in every quant and scale field (all values occur), scale fields sane (or
// exactly 1 with `unit`, so that every term is a small integer).
template <class B>
void randomize(B& x, std::mt19937& rng, bool unit) {
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> word(0, 65535);
    const auto fill = [&](auto& arr) {  // every bit of the elements (the i-quants keep u16 codes)
        for (auto& v : arr) v = static_cast<std::remove_reference_t<decltype(v)>>(sizeof v == 1 ? byte(rng) : word(rng));
    };
    if constexpr (requires { x.qs; }) fill(x.qs);
    if constexpr (requires { x.qh; }) fill(x.qh);
    if constexpr (requires { x.ql; }) fill(x.ql);
    if constexpr (requires { x.hmask; }) fill(x.hmask);
    if constexpr (requires { x.scales; }) fill(x.scales);
    if constexpr (requires { x.scales_l; }) {
        fill(x.scales_l);
        x.scales_h = static_cast<std::uint16_t>(byte(rng) | (byte(rng) << 8));
    }
    if (unit) {
        if constexpr (requires { x.d.bits; }) x.d.bits = f16_bits(1.0f);
        if constexpr (std::is_same_v<B, quant::block_nvfp4>)
            for (auto& d : x.d) d = 0x40;  // UE4M3 2.0, halved with the doubled levels: 1
        if constexpr (requires { x.dmin; }) x.dmin.bits = f16_bits(1.0f);
        if constexpr (requires { x.m; }) x.m.bits = f16_bits(static_cast<float>(byte(rng) % 7 - 3));
        if constexpr (requires { x.e; }) x.e = 128;
    }
    if constexpr (std::is_same_v<B, quant::block_iq1_m>) {  // its f16 d is in the scale words' top nibbles: keep it sane
        const std::uint16_t d = unit ? f16_bits(1.0f) : f16_bits(std::ldexp(1.0f + static_cast<float>(byte(rng)) / 256.0f, -byte(rng) % 8));
        for (int i = 0; i < 4; ++i) {
            std::uint16_t sc;
            std::memcpy(&sc, x.scales + 2 * i, 2);
            sc = static_cast<std::uint16_t>((sc & 0x0FFF) | (((d >> (4 * i)) & 15) << 12));
            std::memcpy(x.scales + 2 * i, &sc, 2);
        }
    }
}

// Activations: random rows quantized to the partner, or (unit) partner blocks with d = 1
// and quants in -2..2 (sums within f32's exact integers on every summation order).
template <class P>
std::vector<P> make_act(std::int64_t n, std::int64_t k, std::mt19937& rng, bool unit) {
    constexpr type_id pid = quant::block_traits<P>::id;
    const std::int64_t qp = quant::block_traits<P>::block_size;
    std::vector<P> yq(static_cast<std::size_t>(n * k / qp));
    if (!unit) {
        std::normal_distribution<float> nd(0.0f, 1.0f);
        std::vector<float> yf(static_cast<std::size_t>(n * k));
        for (float& v : yf) v = nd(rng);
        quant::quantize(pid, yf.data(), yq.data(), n, k);
        return yq;
    }
    std::uniform_int_distribution<int> small(-2, 2);
    for (P& b : yq) {
        int sum = 0;
        for (auto& q : b.qs) sum += q = static_cast<std::int8_t>(small(rng));
        if constexpr (std::is_same_v<P, quant::block_q8_K>) {
            b.d = 1.0f;
            for (int j = 0; j < 16; ++j) {
                int s = 0;
                for (int e = 0; e < 16; ++e) s += b.qs[16 * j + e];
                b.bsums[j] = static_cast<std::int16_t>(s);
            }
        } else {
            b.d.bits = f16_bits(1.0f);
            if constexpr (std::is_same_v<P, quant::block_q8_1>) b.s.bits = f16_bits(static_cast<float>(sum));
        }
    }
    return yq;
}

// Under emulation (TESSERA_TEST_EMULATED=1: .ci/run's qemu-aarch64 runs, where the full
// grids took 200 s at SVE 512) q4_1 and q6_K keep the full grid of shapes, the engine's
// tile, panel and group edges for 32-element blocks and super-blocks; the other lane types
// take the light grid, every codec still on every arch.
using test_env::emulated;

// light: fewer shapes (1 and 3 super-blocks or 1 and 17 32-element blocks, 1 / 5 / 19
// rows, 1 / 4 / 5 / 11 columns; the lattice i-quants always: their codecs are what is new,
// the engine's tiles, panels and group edges are covered by the other types at the full
// grid).
template <class B>
void check_lane_gemm(bool light = false) {
    using P = typename quant::block_traits<B>::dot_partner;
    constexpr type_id tid = quant::block_traits<B>::id;
    constexpr std::int64_t qk = quant::block_traits<B>::block_size, qp = quant::block_traits<P>::block_size;
    constexpr int lane = kernels::qgemm_lane(tid);
    const auto gemm = [](simd::arch_id a) { return simd::kernel_for<kernels::quant_kernels<B>::template gemm>(a); };
    const auto gemv = [](simd::arch_id a) { return simd::kernel_for<kernels::quant_kernels<B>::template gemv>(a); };
    std::mt19937 rng(11);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const std::vector<std::int64_t> nbs = light      ? (qk == 32 ? std::vector<std::int64_t>{1, 17} : std::vector<std::int64_t>{1, 3})
                                          : qk == 32 ? std::vector<std::int64_t>{1, 15, 16, 17, 40}
                                                     : std::vector<std::int64_t>{1, 2, 3, 5};
    const std::vector<std::int64_t> ms = light ? std::vector<std::int64_t>{1, 5, 19} : std::vector<std::int64_t>{1, 2, 3, 5, 16, 19, 37};
    const std::vector<std::int64_t> ns = light ? std::vector<std::int64_t>{1, 4, 5, 11} : std::vector<std::int64_t>{1, 2, 3, 4, 5, 8, 11};
    for (const bool unit : {false, true})
        for (std::int64_t nb : nbs) {
            const std::int64_t k = nb * qk;
            if (unit && k > 1024) continue;
            for (std::int64_t m : ms) {
                const std::size_t rb = static_cast<std::size_t>(row_size(tid, k)), xs = rb + 2 * sizeof(B);  // stride > row
                std::vector<std::byte> x(xs * static_cast<std::size_t>(m));
                std::vector<float> wf(static_cast<std::size_t>(k));
                std::vector<std::vector<test_lane>> lanes(static_cast<std::size_t>(m));
                for (std::int64_t r = 0; r < m; ++r) {
                    auto* row = reinterpret_cast<B*>(x.data() + static_cast<std::size_t>(r) * xs);
                    for (float& v : wf) v = nd(rng);
                    const std::vector<float> imatrix(static_cast<std::size_t>(k), 1.0f);  // iq2_xxs, iq2_xs, iq1_s need one
                    quant::quantize(tid, wf.data(), row, 1, k, imatrix.data());
                    for (std::int64_t b = 0; b < nb; ++b) randomize(row[b], rng, unit);
                    // the test's lanes against the reference dequantizer
                    std::vector<float> deq(static_cast<std::size_t>(k));
                    quant::dequantize_row(tid, row, deq.data(), k);
                    int bad_lane = 0;
                    for (std::int64_t b = 0; b < nb; ++b)
                        for (const test_lane& ln : test_lanes(row[b])) {
                            const std::size_t base = lanes[static_cast<std::size_t>(r)].size() * static_cast<std::size_t>(lane);  // its first element
                            for (int e = 0; e < lane; ++e) {
                                const double want = ln.scale * ln.w[e] + ln.min;
                                if (!(std::fabs(deq[base + static_cast<std::size_t>(e)] - want) <= 0x1p-20 * (std::fabs(ln.scale * ln.w[e]) + std::fabs(ln.min))))
                                    ++bad_lane;
                            }
                            lanes[static_cast<std::size_t>(r)].push_back(ln);
                        }
                    CHECK(bad_lane == 0);
                }
                for (std::int64_t n : ns) {
                    const std::vector<P> yq = make_act<P>(n, k, rng, unit);
                    const std::size_t ys = kernels::qgemm_act_row_bytes(tid, k);
                    auto* yp = static_cast<std::byte*>(::operator new(ys * static_cast<std::size_t>(n), std::align_val_t(64)));
                    for (std::int64_t c = 0; c < n; ++c)
                        kernels::qgemm_pack_act<B>(k, yq.data() + c * (k / qp), yp + static_cast<std::size_t>(c) * ys);
                    // the definition in double
                    std::vector<double> want(static_cast<std::size_t>(n * m)), mag(want.size()), emag(want.size());
                    for (std::int64_t c = 0; c < n; ++c)
                        for (std::int64_t r = 0; r < m; ++r) {
                            double s = 0, a = 0, ea = 0;
                            const auto& lr = lanes[static_cast<std::size_t>(r)];
                            for (std::size_t j = 0; j < lr.size(); ++j) {
                                const std::int64_t e0 = static_cast<std::int64_t>(j) * lane;
                                const P& yb = yq[static_cast<std::size_t>(c * (k / qp) + e0 / qp)];
                                const double dy = act_scale(yb);
                                long dot = 0, ysum = 0, adot = 0;
                                for (int e = 0; e < lane; ++e) {
                                    dot += static_cast<long>(lr[j].w[e]) * yb.qs[(e0 + e) % qp];
                                    adot += std::labs(static_cast<long>(lr[j].w[e]) * yb.qs[(e0 + e) % qp]);
                                    ysum += yb.qs[(e0 + e) % qp];
                                }
                                double ys_term = dy * static_cast<double>(ysum);
                                if constexpr (std::is_same_v<P, quant::block_q8_1>) ys_term = yb.s.to_float();
                                const double t1 = lr[j].scale * dy * static_cast<double>(dot), t2 = lr[j].min * ys_term;
                                s += t1 + t2;
                                a += std::fabs(t1) + std::fabs(t2);
                                ea += std::fabs(lr[j].scale * dy) * static_cast<double>(adot) + std::fabs(t2);
                            }
                            want[static_cast<std::size_t>(c * m + r)] = s;
                            mag[static_cast<std::size_t>(c * m + r)] = a;
                            emag[static_cast<std::size_t>(c * m + r)] = ea;
                        }
                    const double rel = unit ? 0.0 : 4.0 * static_cast<double>(k / lane + 16) * 0x1p-24;
                    for (simd::arch_id arch : simd::available_archs()) {
                        CAPTURE(simd::name_of(arch));
                        CAPTURE(unit);
                        CAPTURE(k);
                        CAPTURE(m);
                        CAPTURE(n);
                        const std::size_t ldo = static_cast<std::size_t>(m) + 3;
                        std::vector<float> out(ldo * static_cast<std::size_t>(n), -7.0f), gv(static_cast<std::size_t>(m));
                        auto* work = static_cast<std::byte*>(::operator new(kernels::qgemm_work_bytes(tid, k), std::align_val_t(64)));
                        gemm(arch)(k, m, n, reinterpret_cast<const B*>(x.data()), xs, yp, ys, out.data(), ldo, work);
                        ::operator delete(work, std::align_val_t(64));
                        int bad = 0, bad_gemv = 0;
                        for (std::int64_t c = 0; c < n; ++c) {
                            gemv(arch)(k, m, reinterpret_cast<const B*>(x.data()), xs, yq.data() + c * (k / qp), gv.data());
                            for (std::int64_t r = 0; r < m; ++r) {
                                const std::size_t i = static_cast<std::size_t>(c * m + r);
                                const double got = out[static_cast<std::size_t>(c) * ldo + static_cast<std::size_t>(r)];
                                if (!(std::fabs(got - want[i]) <= rel * mag[i])) ++bad;
                                // the gemv may sum a block's products in f32 lanes before the block
                                // is whole (as ggml's AVX2 bodies do): bounded by the products' sizes
                                if (!(std::fabs(got - gv[static_cast<std::size_t>(r)]) <= rel * (mag[i] + emag[i]))) ++bad_gemv;
                            }
                            for (std::size_t r = static_cast<std::size_t>(m); r < ldo; ++r)  // padding columns untouched
                                if (out[static_cast<std::size_t>(c) * ldo + r] != -7.0f) ++bad;
                        }
                        CHECK(bad == 0);
                        CHECK(bad_gemv == 0);
                    }
                    ::operator delete(yp, std::align_val_t(64));
                }
            }
        }
}

}  // namespace

// Each type against its definition (in double; exactly on unit scales, where every term
// is a small integer) and against its gemv, on every arch, row / column counts around the
// 2 x 4 tiles and 16-row panels, block counts around the 16-lane groups.
TEST_CASE("quantized GEMM, lane kernels: q4_1, q5_0, q5_1, q8_1, iq4_nl, mxfp4 (32-element blocks)") {
    SUBCASE("q4_1") { check_lane_gemm<quant::block_q4_1>(); }
    SUBCASE("q5_0") { check_lane_gemm<quant::block_q5_0>(emulated()); }
    SUBCASE("q5_1") { check_lane_gemm<quant::block_q5_1>(emulated()); }
    SUBCASE("q8_1") { check_lane_gemm<quant::block_q8_1>(emulated()); }
    SUBCASE("iq4_nl") { check_lane_gemm<quant::block_iq4_nl>(emulated()); }
    SUBCASE("mxfp4") { check_lane_gemm<quant::block_mxfp4>(emulated()); }
}
TEST_CASE("quantized GEMM, lane kernels: nvfp4 (lanes of 16 against q8_0), q1_0, q2_0 (several lanes per block)") {
    SUBCASE("nvfp4") { check_lane_gemm<quant::block_nvfp4>(emulated()); }
    SUBCASE("q1_0") { check_lane_gemm<quant::block_q1_0>(emulated()); }
    SUBCASE("q2_0") { check_lane_gemm<quant::block_q2_0>(emulated()); }
}
TEST_CASE("quantized GEMM, lane kernels: q2_K, q3_K, q5_K, q6_K, iq4_xs, tq1_0, tq2_0 (super-blocks)") {
    SUBCASE("q2_K") { check_lane_gemm<quant::block_q2_K>(emulated()); }
    SUBCASE("q3_K") { check_lane_gemm<quant::block_q3_K>(emulated()); }
    SUBCASE("q5_K") { check_lane_gemm<quant::block_q5_K>(emulated()); }
    SUBCASE("q6_K") { check_lane_gemm<quant::block_q6_K>(); }
    SUBCASE("iq4_xs") { check_lane_gemm<quant::block_iq4_xs>(emulated()); }
    SUBCASE("tq1_0") { check_lane_gemm<quant::block_tq1_0>(emulated()); }
    SUBCASE("tq2_0") { check_lane_gemm<quant::block_tq2_0>(emulated()); }
}

// Every block type with a vec_dot has a packed GEMM, and use_qgemm's table agrees.
TEST_CASE("quantized GEMM: every type with row kernels has one") {
    int with = 0;
    for (std::int64_t id = 0; id < 64; ++id) {
        if (!is_valid_type_id(id)) continue;
        const auto t = static_cast<type_id>(id);
        if (!is_quantized(t)) continue;
        quant::visit_block_type(t, [&]<class B>() {
            constexpr bool rk = kernels::has_gemv<B>;
            CAPTURE(type_name(t));
            CHECK(kernels::has_qgemm<B> == rk);
            CHECK(kernels::qgemm_supported(t) == rk);
            with += rk;
        });
    }
    CHECK(with == 26);
}
// (a lighter grid of shapes: 1 and 3 super-blocks, 1 / 5 / 19 rows, 1 / 4 / 5 / 11 columns)
TEST_CASE("quantized GEMM, lane kernels: the lattice i-quants (wide iq2 / iq3_xxs, offset iq3_s / iq1)") {
    SUBCASE("iq2_xxs") { check_lane_gemm<quant::block_iq2_xxs>(true); }
    SUBCASE("iq2_xs") { check_lane_gemm<quant::block_iq2_xs>(true); }
    SUBCASE("iq2_s") { check_lane_gemm<quant::block_iq2_s>(true); }
    SUBCASE("iq3_xxs") { check_lane_gemm<quant::block_iq3_xxs>(true); }
    SUBCASE("iq3_s") { check_lane_gemm<quant::block_iq3_s>(true); }
    SUBCASE("iq1_s") { check_lane_gemm<quant::block_iq1_s>(true); }
    SUBCASE("iq1_m") { check_lane_gemm<quant::block_iq1_m>(true); }
}
