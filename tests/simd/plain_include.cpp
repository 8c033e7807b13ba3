// Plain-include mode (no Meson arch units): compiled with -march=x86-64-v3 the
// dispatcher offers exactly scalar, sse4_2 and avx2 (on AArch64, with
// -march=armv8.2-a+dotprod: scalar, neon and dotprod), and every one computes right.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/tessera.hpp"

using namespace tessera;
using simd::arch_id;

TEST_CASE("plain include: arches come from the compiler flags") {
    static_assert(!simd::multiarch_build());
#if defined(TESSERA_AARCH64)
    static_assert(simd::compiled_in(arch_id::scalar) && simd::compiled_in(arch_id::neon) &&
                  simd::compiled_in(arch_id::dotprod));
    static_assert(!simd::compiled_in(arch_id::i8mm) && !simd::compiled_in(arch_id::sve));
    CHECK_THROWS_WITH_AS(simd::set_active_arch(arch_id::i8mm),
                         doctest::Contains("arch is not compiled into this build (built: scalar, neon, dotprod)"),
                         error);
#else
    static_assert(simd::compiled_in(arch_id::scalar) && simd::compiled_in(arch_id::sse4_2) &&
                  simd::compiled_in(arch_id::avx2));
    static_assert(!simd::compiled_in(arch_id::avx512bw) && !simd::compiled_in(arch_id::avx512vnni));
    CHECK_THROWS_WITH_AS(simd::set_active_arch(arch_id::avx512bw),
                         doctest::Contains("arch is not compiled into this build (built: scalar, sse4_2, avx2)"),
                         error);
#endif
}

TEST_CASE("plain include: report() says single-arch mode") {
    const std::string r = simd::report();
    CHECK(r.find(" (single-arch mode: plain include without libtessera-kernels, the arch of the compiler flags)\n") !=
          std::string::npos);
    CHECK(r.find("run-time dispatch") == std::string::npos);
}

TEST_CASE("plain include: each compiled arch matches a double reference") {
    std::vector<float> x(1001), y(1001);
    double ref = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = std::sin(static_cast<float>(i));
        y[i] = std::cos(static_cast<float>(i) * 0.7f);
        ref += static_cast<double>(x[i]) * static_cast<double>(y[i]);
    }
    for (auto a : simd::available_archs()) {
        CAPTURE(std::string(simd::name_of(a)));
        CHECK(std::fabs(simd::kernel_for<kernels::dot_f32>(a)(x.data(), y.data(), x.size()) - ref) < 1e-3);
        std::vector<f16> h(x.size());
        simd::kernel_for<kernels::f32_to_f16>(a)(x.data(), h.data(), x.size());
        for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(h[i].bits == f16::from_float(x[i]).bits);
    }
}
