// What the CPU we run on can do, read once from cpuid/xgetbv.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/config.hpp"
#include "tessera/simd/arch.hpp"

#if defined(TESSERA_X86)
#include <cpuid.h>
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

    // Whether this CPU can run the kernels of an arch level.
    constexpr bool supports(arch_id a) const noexcept {
        switch (a) {
            case arch_id::scalar: return true;
            case arch_id::sse4_2: return sse4_2 && ssse3 && popcnt;
            case arch_id::avx2: return supports(arch_id::sse4_2) && os_avx && avx2 && fma && f16c && bmi2;
            case arch_id::avx512bw:
                return supports(arch_id::avx2) && os_avx512 && avx512f && avx512bw && avx512cd && avx512dq &&
                       avx512vl;
            case arch_id::avx512vnni: return supports(arch_id::avx512bw) && avx512vnni;
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
