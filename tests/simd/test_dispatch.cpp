#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "tessera/simd/dispatch.hpp"

using namespace tessera;
using simd::arch_id;

TEST_CASE("arch names round-trip and unknown names are refused") {
    for (std::size_t i = 0; i < simd::arch_count; ++i) {
        const auto a = static_cast<arch_id>(i);
        CHECK(simd::arch_from_name(simd::name_of(a)) == a);
    }
    CHECK_FALSE(simd::arch_from_name("avx9000").has_value());
#if defined(TESSERA_X86)
    const char* known = "unknown arch; known arches are scalar, sse4_2, avx2, avx512bw, avx512vnni";
#elif defined(TESSERA_AARCH64)
    const char* known = "unknown arch; known arches are scalar, neon, dotprod, i8mm, sve";
#else
    const char* known = "unknown arch; known arches are scalar";
#endif
    CHECK_THROWS_WITH_AS(simd::set_active_arch("avx9000"), doctest::Contains(known), error);
}

TEST_CASE("a CPU without the instructions is refused with what it has") {
    simd::cpu_features none;  // nothing detected
    CHECK(none.supports(arch_id::scalar));
    for (std::size_t i = 1; i < simd::arch_count; ++i) CHECK_FALSE(none.supports(static_cast<arch_id>(i)));
    CHECK(none.best() == arch_id::scalar);
    if (simd::arch_count < 2) return;
    const arch_id wide = static_cast<arch_id>(simd::arch_count - 1);  // the widest of this family
    if (!simd::compiled_in(wide)) return;
    const std::string name(simd::name_of(wide));
    try {
        simd::detail::checked_arch(name, "TESSERA_ARCH", none);
        FAIL("expected refusal");
    } catch (const error& e) {
        CHECK(e.code() == errc::unsupported);
        CHECK(std::string(e.what()).find("TESSERA_ARCH=" + name + ": this CPU lacks the instructions of " + name) ==
              0);
    }
}

TEST_CASE("feature levels are nested") {
    const auto& f = simd::cpu();
    for (std::size_t i = 1; i < simd::arch_count; ++i)
        if (f.supports(static_cast<arch_id>(i))) CHECK(f.supports(static_cast<arch_id>(i - 1)));
    CHECK(f.best() >= simd::best_available_arch());
    const auto avail = simd::available_archs();
    REQUIRE_FALSE(avail.empty());
    CHECK(avail.front() == arch_id::scalar);
    CHECK(avail.back() == simd::best_available_arch());
    MESSAGE(simd::report());
}

TEST_CASE("report() names the dispatch mode and the arch in use") {
    const std::string r = simd::report();
    if (simd::multiarch_build())  // the Meson dependency: the per-arch units are linked
        CHECK(r.find(" (run-time dispatch: per-arch kernel units linked)\n") != std::string::npos);
    else
        CHECK(r.find(" (single-arch mode: plain include without libtessera-kernels") != std::string::npos);
    CHECK(r.find("arch in use: " + std::string(simd::name_of(simd::active_arch())) + "\n") != std::string::npos);
}

TEST_CASE("set_active_arch switches every available arch") {
    const arch_id before = simd::active_arch();
    for (auto a : simd::available_archs()) {
        simd::set_active_arch(a);
        CHECK(simd::active_arch() == a);
    }
    simd::set_active_arch(before);
}

TEST_CASE("the environment selects the arch (TESSERA_ARCH)") {
    const char* expect = std::getenv("TESSERA_EXPECT_ARCH");
    if (!expect) {
        MESSAGE("TESSERA_EXPECT_ARCH not set: run via meson test simd_env_*");
        return;
    }
    const auto want = simd::arch_from_name(expect);
    REQUIRE(want.has_value());
    if (!simd::is_available(*want)) {
        CHECK_THROWS_AS(simd::active_arch(), error);
        MESSAGE("arch " << expect << " is not available here; refusal checked");
        return;
    }
    CHECK(simd::active_arch() == *want);
}
