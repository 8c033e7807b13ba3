// The arch catalogue: one tag type per instruction-set level tessera has kernels for.
//
// Tags inherit from the level below (avx512vnni -> avx512bw -> avx2 -> sse4_2 ->
// xsimd_common -> scalar). A kernel written for a base tag serves every level above
// it, and overload resolution on `requires_arch<Tag>` picks the most derived body.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include <xsimd/xsimd.hpp>

#include "tessera/config.hpp"

TESSERA_BEGIN_NAMESPACE
namespace simd {

enum class arch_id : std::uint8_t { scalar, sse4_2, avx2, avx512bw, avx512vnni };
inline constexpr std::size_t arch_count = 5;

// The scalar reference: plain C++, no vector registers. Always available.
struct scalar {
    static constexpr arch_id id = arch_id::scalar;
    static constexpr std::string_view name = "scalar";
};
// Base of the xsimd-backed levels; portable SIMD code takes requires_arch<xsimd_common>
// and uses xsimd::batch<T, typename A::xsimd_arch>.
struct xsimd_common : scalar {};
struct sse4_2 : xsimd_common {
    using xsimd_arch = xsimd::sse4_2;
    static constexpr arch_id id = arch_id::sse4_2;
    static constexpr std::string_view name = "sse4_2";
};
struct avx2 : sse4_2 {  // AVX2 + FMA + F16C + BMI2 (x86-64-v3)
    using xsimd_arch = xsimd::fma3<xsimd::avx2>;
    static constexpr arch_id id = arch_id::avx2;
    static constexpr std::string_view name = "avx2";
};
struct avx512bw : avx2 {  // AVX-512 F/BW/CD/DQ/VL (x86-64-v4)
    using xsimd_arch = xsimd::avx512bw;
    static constexpr arch_id id = arch_id::avx512bw;
    static constexpr std::string_view name = "avx512bw";
};
struct avx512vnni : avx512bw {  // x86-64-v4 + AVX-512 VNNI (vpdpbusd)
    using xsimd_arch = xsimd::avx512bw;
    static constexpr arch_id id = arch_id::avx512vnni;
    static constexpr std::string_view name = "avx512vnni";
};

// The last parameter of a kernel body: binds to the nearest base of the caller's tag.
template <class Tag>
using requires_arch = const Tag&;

template <class A>
concept arch_tag = std::derived_from<A, scalar> && requires { A::id; A::name; };

template <class A>
concept xsimd_arch_tag = arch_tag<A> && requires { typename A::xsimd_arch; };

inline constexpr std::array<std::string_view, arch_count> arch_names = {
    "scalar", "sse4_2", "avx2", "avx512bw", "avx512vnni"};

constexpr std::string_view name_of(arch_id a) noexcept { return arch_names[static_cast<std::size_t>(a)]; }

constexpr std::optional<arch_id> arch_from_name(std::string_view n) noexcept {
    for (std::size_t i = 0; i < arch_count; ++i)
        if (arch_names[i] == n) return static_cast<arch_id>(i);
    return std::nullopt;
}

// Calls f(Tag{}) for the tag of a run-time arch id.
template <class F>
constexpr decltype(auto) with_arch_tag(arch_id a, F&& f) {
    switch (a) {
        case arch_id::sse4_2: return f(sse4_2{});
        case arch_id::avx2: return f(avx2{});
        case arch_id::avx512bw: return f(avx512bw{});
        case arch_id::avx512vnni: return f(avx512vnni{});
        case arch_id::scalar: break;
    }
    return f(scalar{});
}

}  // namespace simd
TESSERA_END_NAMESPACE
