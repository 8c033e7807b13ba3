// The packed quantized GEMM (kernels/quant/gemm.hpp) against a double-precision
// definition: out[n][m] = sum_b d_x[m,b] * d_y[n,b] * sum_t wq[m,b,t] * yq[n,b,t], on
// every arch the machine has, for row counts and column counts around the tile sizes
// (4 x 4 tiles, 16-row panels) and block counts around the 16-block groups; the
// repacked-weight kernels (gemm_*_rows4) give the same bits as the plain-layout ones.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tessera/kernels/quant/gemm.hpp"
#include "tessera/kernels/quant/repack.hpp"
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
                const std::size_t ys = kernels::qgemm_act_row_bytes(k);
                std::vector<std::byte> yp(ys * static_cast<std::size_t>(n));
                for (std::int64_t c = 0; c < n; ++c)
                    kernels::qgemm_pack_act(k, yq.data() + c * nb, yp.data() + static_cast<std::size_t>(c) * ys);
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
                    auto* work = static_cast<std::byte*>(::operator new(kernels::qgemm_work_bytes(k), std::align_val_t(64)));
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
