// A program that uses tessera, built by every consumer test: as a Meson subproject
// (tests/consumer, this folder), against the installed tessera with pkg-config and with a
// plain -I (tests/consumer_pkgconfig/run.sh), and with CMake (tests/consumer_cmake). It
// prints the dispatch report and the mode, then multiplies a q4_0 matrix by f32 columns
// with mul_mat on the CPU executor, on the arch dispatch picked and on the scalar
// reference, and checks both against a double-precision product computed here from the
// q4_0 definition. Exit 0 when both agree with it, 1 otherwise.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tessera/backend/cpu.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/quant/reference.hpp"
#include "tessera/simd/dispatch.hpp"

namespace {

using namespace tessera;

constexpr std::int64_t K = 256, M = 40, N = 5;  // w: M rows of K (q4_0); x: N columns of K

// Deterministic values in [-1, 1) (a 32-bit LCG; no <random> distribution, whose output
// differs between standard libraries).
std::vector<float> values(std::size_t n, std::uint32_t seed) {
    std::vector<float> v(n);
    for (auto& e : v) {
        seed = seed * 1664525u + 1013904223u;
        e = static_cast<float>(seed >> 8) / static_cast<float>(1u << 23) - 1.0f;
    }
    return v;
}

// The q4_0 definition (ggml): per block of 32, x[j] = d * (q[j] - 8), q[j] the low
// nibble of byte j for j < 16 and the high nibble of byte j - 16 otherwise.
double q4_0_value(const quant::block_q4_0& b, int j) {
    const int q = j < 16 ? (b.qs[j] & 0x0f) : (b.qs[j - 16] >> 4);
    return static_cast<double>(b.d.to_float()) * (q - 8);
}

std::vector<float> run_mul_mat(const std::vector<quant::block_q4_0>& wq, const std::vector<float>& x) {
    graph::context ctx;
    auto w = graph::new_tensor<quant::block_q4_0, 2>(ctx, {K, M}, "w");
    auto v = graph::new_tensor<float, 2>(ctx, {K, N}, "x");
    w.set(wq);
    v.set(x);
    auto y = graph::mul_mat(w, v);  // [M, N]: y[m, n] = dot(w row m, x column n)
    backend::cpu::executor(1).compute(graph::build_forward(y));
    std::vector<float> out(static_cast<std::size_t>(M * N));
    y.get(out);
    return out;
}

}  // namespace

int main() {
    try {
        std::fputs(simd::report().c_str(), stdout);
        std::printf("mode: %s\n", simd::multiarch_build() ? "run-time dispatch" : "single-arch");

        const auto wf = values(static_cast<std::size_t>(M * K), 12345u);
        const auto x = values(static_cast<std::size_t>(K * N), 777u);
        std::vector<quant::block_q4_0> wq(static_cast<std::size_t>(M * K / quant::qk4_0));
        for (std::int64_t m = 0; m < M; ++m)
            quant::quantize_row_ref(wf.data() + m * K, wq.data() + m * (K / quant::qk4_0), K);

        // The reference: q4_0 weights times x in double. The CPU backend rounds x to q8_0
        // (per 32: d8 = amax / 127 stored as f16, x ~ d8 * round(x / d8)), which moves each
        // x by at most d8 / 2 plus 127 * d8 * 2^-11 for the f16 scale: `bound` is the sum of
        // |w| times that, plus f32 rounding; a kernel that misreads a nibble or a scale is
        // far outside it.
        std::vector<double> ref(static_cast<std::size_t>(M * N)), bound(ref.size());
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t m = 0; m < M; ++m) {
                double s = 0, e = 0, mag = 0;
                for (std::int64_t b = 0; b < K / 32; ++b) {
                    double amax = 0;
                    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[static_cast<std::size_t>(n * K + b * 32 + j)]));
                    const double dx = amax / 127 * (0.5 + 127.0 / 2048);
                    for (int j = 0; j < 32; ++j) {
                        const double wv = q4_0_value(wq[static_cast<std::size_t>(m * (K / 32) + b)], j);
                        const double xv = x[static_cast<std::size_t>(n * K + b * 32 + j)];
                        s += wv * xv;
                        e += std::fabs(wv) * dx;
                        mag += std::fabs(wv * xv);
                    }
                }
                ref[static_cast<std::size_t>(n * M + m)] = s;
                bound[static_cast<std::size_t>(n * M + m)] = e + 1e-5 * mag;
            }

        bool ok = true;
        const auto check = [&](const std::vector<float>& y, const char* what) {
            double worst = 0;
            for (std::size_t i = 0; i < y.size(); ++i) {
                const double err = std::fabs(y[i] - ref[i]);
                worst = std::fmax(worst, err / bound[i]);
                if (!(err <= bound[i])) {
                    std::printf("FAIL: %s: y[%zu] = %.6f, reference %.6f (bound %.6f)\n", what, i, static_cast<double>(y[i]),
                                ref[i], bound[i]);
                    ok = false;
                    return;
                }
            }
            std::printf("q4_0 mul_mat %lldx%lldx%lld on %s: ok (largest error %.3f of the bound)\n", static_cast<long long>(M),
                        static_cast<long long>(N), static_cast<long long>(K), what, worst);
        };
        const std::string best(simd::name_of(simd::active_arch()));
        check(run_mul_mat(wq, x), best.c_str());
        simd::set_active_arch(simd::arch_id::scalar);
        check(run_mul_mat(wq, x), "scalar");
        return ok ? 0 : 1;
    } catch (const error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
