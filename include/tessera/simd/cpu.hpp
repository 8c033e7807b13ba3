// What the CPU we run on can do, read once: cpuid/xgetbv on x86; on AArch64 the
// kernel's hwcaps (getauxval(AT_HWCAP / AT_HWCAP2)) on Linux and Android, sysctlbyname's
// hw.optional.* keys on macOS.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/config.hpp"
#include "tessera/simd/arch.hpp"

#if defined(TESSERA_X86)
#include <cpuid.h>
#elif defined(TESSERA_AARCH64) && defined(__linux__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#elif defined(TESSERA_AARCH64) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

TESSERA_BEGIN_NAMESPACE
namespace simd {

struct cpu_features {
    bool sse2 = false, sse3 = false, ssse3 = false, sse4_1 = false, sse4_2 = false, popcnt = false;
    bool avx = false, f16c = false, fma = false, avx2 = false, bmi2 = false;
    bool avx512f = false, avx512bw = false, avx512cd = false, avx512dq = false, avx512vl = false;
    bool avx512vnni = false, avx512bf16 = false, avx512vbmi = false, avx_vnni = false;
    bool amx_int8 = false;
    bool os_avx = false, os_avx512 = false;  // the OS saves the YMM / ZMM state
    // AArch64: Advanced SIMD, half-precision arithmetic, SDOT/UDOT, SMMLA/USMMLA, BFDOT/
    // BFMMLA, SVE (and its vector length in bytes, 0 without SVE), SVE2.
    bool asimd = false, asimd_hp = false, dotprod = false, i8mm = false, bf16 = false, sve = false, sve2 = false;
    unsigned sve_bytes = 0;

    // Whether this CPU can run the kernels of an arch level.
    constexpr bool supports(arch_id a) const noexcept {
        switch (a) {
            case arch_id::scalar: return true;
#if defined(TESSERA_X86)
            case arch_id::sse4_2: return sse4_2 && ssse3 && popcnt;
            case arch_id::avx2: return supports(arch_id::sse4_2) && os_avx && avx2 && fma && f16c && bmi2;
            case arch_id::avx512bw:
                return supports(arch_id::avx2) && os_avx512 && avx512f && avx512bw && avx512cd && avx512dq &&
                       avx512vl;
            case arch_id::avx512vnni: return supports(arch_id::avx512bw) && avx512vnni;
#elif defined(TESSERA_AARCH64)
            case arch_id::neon: return asimd;
            case arch_id::dotprod: return supports(arch_id::neon) && dotprod;
            case arch_id::i8mm: return supports(arch_id::dotprod) && i8mm && bf16;
            case arch_id::sve: return supports(arch_id::i8mm) && sve && sve_bytes >= 16;
#endif
        }
        return false;
    }

    // The widest arch level this CPU supports.
    constexpr arch_id best() const noexcept {
        arch_id b = arch_id::scalar;
        for (std::size_t i = 0; i < arch_count; ++i)
            if (supports(static_cast<arch_id>(i))) b = static_cast<arch_id>(i);
        return b;
    }

    // A space-separated list of the features found, for logs and benchmark headers.
    std::string to_string() const {
        std::string s;
        auto add = [&](bool on, const char* n) {
            if (!on) return;
            if (!s.empty()) s += ' ';
            s += n;
        };
        add(sse2, "SSE2"), add(sse3, "SSE3"), add(ssse3, "SSSE3"), add(sse4_1, "SSE4.1"), add(sse4_2, "SSE4.2");
        add(popcnt, "POPCNT"), add(avx, "AVX"), add(f16c, "F16C"), add(fma, "FMA"), add(avx2, "AVX2");
        add(bmi2, "BMI2"), add(avx512f, "AVX512F"), add(avx512bw, "AVX512BW"), add(avx512cd, "AVX512CD");
        add(avx512dq, "AVX512DQ"), add(avx512vl, "AVX512VL"), add(avx512vnni, "AVX512_VNNI");
        add(avx512bf16, "AVX512_BF16"), add(avx512vbmi, "AVX512_VBMI"), add(avx_vnni, "AVX_VNNI");
        add(amx_int8, "AMX_INT8");
        add(asimd, "ASIMD"), add(asimd_hp, "ASIMDHP"), add(dotprod, "DOTPROD"), add(i8mm, "I8MM");
        add(bf16, "BF16"), add(sve, "SVE"), add(sve2, "SVE2");
        if (sve_bytes) {
            s += '(';
            s += std::to_string(sve_bytes * 8);
            s += "-bit)";
        }
        return s;
    }
};

namespace detail {
inline cpu_features read_cpu_features() noexcept {
    cpu_features f;
#if defined(TESSERA_X86)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    const unsigned max_leaf = a;
    __get_cpuid(1, &a, &b, &c, &d);
    f.sse2 = d & (1u << 26);
    f.sse3 = c & (1u << 0);
    f.ssse3 = c & (1u << 9);
    f.fma = c & (1u << 12);
    f.sse4_1 = c & (1u << 19);
    f.sse4_2 = c & (1u << 20);
    f.popcnt = c & (1u << 23);
    f.avx = c & (1u << 28);
    f.f16c = c & (1u << 29);
    const bool osxsave = c & (1u << 27);
    if (osxsave) {
        unsigned lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        f.os_avx = (lo & 0x6u) == 0x6u;       // XMM and YMM state
        f.os_avx512 = (lo & 0xe6u) == 0xe6u;  // plus opmask, ZMM_Hi256, Hi16_ZMM
    }
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.avx2 = b & (1u << 5);
        f.bmi2 = b & (1u << 8);
        f.avx512f = b & (1u << 16);
        f.avx512dq = b & (1u << 17);
        f.avx512cd = b & (1u << 28);
        f.avx512bw = b & (1u << 30);
        f.avx512vl = b & (1u << 31);
        f.avx512vbmi = c & (1u << 1);
        f.avx512vnni = c & (1u << 11);
        f.amx_int8 = d & (1u << 25);
        __cpuid_count(7, 1, a, b, c, d);
        f.avx_vnni = a & (1u << 4);
        f.avx512bf16 = a & (1u << 5);
    }
    f.avx = f.avx && f.os_avx;
#elif defined(TESSERA_AARCH64)
    f.asimd = true;  // Advanced SIMD is part of every AArch64 CPU the ABI supports
#if defined(__linux__)
    // Bit numbers of the arm64 uapi <asm/hwcap.h>.
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f.asimd = hw & (1ul << 1);
    f.asimd_hp = hw & (1ul << 10);
    f.dotprod = hw & (1ul << 20);
    f.sve = hw & (1ul << 22);
    f.sve2 = hw2 & (1ul << 1);
    f.i8mm = hw2 & (1ul << 13);
    f.bf16 = hw2 & (1ul << 14);
#elif defined(__APPLE__)
    auto key = [](const char* name) {
        int v = 0;
        std::size_t len = sizeof v;
        return sysctlbyname(name, &v, &len, nullptr, 0) == 0 && v != 0;
    };
    f.asimd_hp = key("hw.optional.arm.FEAT_FP16");
    f.dotprod = key("hw.optional.arm.FEAT_DotProd");
    f.i8mm = key("hw.optional.arm.FEAT_I8MM");
    f.bf16 = key("hw.optional.arm.FEAT_BF16");
#endif
#if defined(__linux__)
    // The vector length this thread runs with (PR_SVE_GET_VL = 51: bytes in the low 16 bits).
    if (f.sve) {
        const int vl = prctl(51, 0, 0, 0, 0);
        f.sve_bytes = vl > 0 ? static_cast<unsigned>(vl & 0xffff) : 0;
    }
#endif
#endif
    return f;
}
}  // namespace detail

// The features of this CPU, detected on first call.
inline const cpu_features& cpu() noexcept {
    static const cpu_features f = detail::read_cpu_features();
    return f;
}

}  // namespace simd
TESSERA_END_NAMESPACE
