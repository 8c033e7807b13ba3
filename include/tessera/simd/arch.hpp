// The arch catalogue: one tag type per instruction-set level tessera has kernels for,
// written once in TESSERA_ARCH_LIST below. Everything else is derived from that list:
// the arch_id enum, the tag types, the names and TESSERA_ARCH parsing, with_arch_tag,
// the extern declarations and the dispatch table of simd/dispatch.hpp, and the Meson
// build's per-arch units (meson/archs.py reads the list, flags included).
//
// Tags inherit from the level below (x86: avx512vnni -> avx512bw -> avx2 -> sse4_2 ->
// xsimd_common -> scalar; ARM: sve -> i8mm -> dotprod -> neon -> xsimd_common). A kernel
// written for a base tag serves every level above it, and overload resolution on
// `requires_arch<Tag>` picks the most derived body.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <xsimd/xsimd.hpp>

#include "tessera/config.hpp"

// The wide arches of each ISA family, narrowest first, after the scalar reference:
//   X(C, name, base tag, xsimd arch, ISA family, "compiler flags of its unit")
// C is passed through for the caller. TESSERA_ARCH_LIST is the list of the family this
// unit is compiled for (config.hpp's TESSERA_X86 / TESSERA_AARCH64), so the arch_id
// values, tags and units of a build are those of its target; another CPU family gets
// the scalar reference only. Adding an arch = one line here, its tag's CPU check in
// cpu_features::supports, its TESSERA_PLAIN_<name> test below, and its kernel bodies.
#define TESSERA_ARCH_LIST_x86(X, C)                                                     \
    X(C, sse4_2, xsimd_common, xsimd::sse4_2, x86, "-march=x86-64-v2")                  \
    X(C, avx2, sse4_2, xsimd::fma3<xsimd::avx2>, x86, "-march=x86-64-v3")               \
    X(C, avx512bw, avx2, xsimd::avx512bw, x86, "-march=x86-64-v4")                      \
    X(C, avx512vnni, avx512bw, xsimd::avx512bw, x86, "-march=x86-64-v4 -mavx512vnni")

// AArch64: every level uses xsimd's neon64 batches for the float kernels (xsimd 8.1 has no
// length-agnostic SVE target); the dot-product, matrix-multiply and SVE bodies are ACLE
// intrinsics in kernels/arm/. Each level includes the one below it: i8mm also needs BF16
// (both are Armv8.6 features, present together on every core that has either), sve
// needs i8mm (Neoverse V1/V2, Graviton 3/4; an SVE core without I8MM runs dotprod).
#define TESSERA_ARCH_LIST_arm(X, C)                                                     \
    X(C, neon, xsimd_common, xsimd::neon64, arm, "-march=armv8-a")                      \
    X(C, dotprod, neon, xsimd::neon64, arm, "-march=armv8.2-a+dotprod")                  \
    X(C, i8mm, dotprod, xsimd::neon64, arm, "-march=armv8.2-a+dotprod+i8mm+bf16")        \
    X(C, sve, i8mm, xsimd::neon64, arm, "-march=armv8.2-a+dotprod+i8mm+bf16+sve")

#if defined(TESSERA_X86)
#define TESSERA_ARCH_LIST(X, C) TESSERA_ARCH_LIST_x86(X, C)
#elif defined(TESSERA_AARCH64)
#define TESSERA_ARCH_LIST(X, C) TESSERA_ARCH_LIST_arm(X, C)
#else
#define TESSERA_ARCH_LIST(X, C)
#endif

// Plain-include mode: whether this unit's compiler flags enable an arch's kernels.
#if defined(__SSE4_2__) && defined(__POPCNT__)
#define TESSERA_PLAIN_sse4_2 1
#else
#define TESSERA_PLAIN_sse4_2 0
#endif
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__BMI2__)
#define TESSERA_PLAIN_avx2 1
#else
#define TESSERA_PLAIN_avx2 0
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__)
#define TESSERA_PLAIN_avx512bw 1
#else
#define TESSERA_PLAIN_avx512bw 0
#endif
#if TESSERA_PLAIN_avx512bw && defined(__AVX512VNNI__)
#define TESSERA_PLAIN_avx512vnni 1
#else
#define TESSERA_PLAIN_avx512vnni 0
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#define TESSERA_PLAIN_neon 1
#else
#define TESSERA_PLAIN_neon 0
#endif
#if TESSERA_PLAIN_neon && defined(__ARM_FEATURE_DOTPROD)
#define TESSERA_PLAIN_dotprod 1
#else
#define TESSERA_PLAIN_dotprod 0
#endif
#if TESSERA_PLAIN_dotprod && defined(__ARM_FEATURE_MATMUL_INT8) && defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)
#define TESSERA_PLAIN_i8mm 1
#else
#define TESSERA_PLAIN_i8mm 0
#endif
#if TESSERA_PLAIN_i8mm && defined(__ARM_FEATURE_SVE)
#define TESSERA_PLAIN_sve 1
#else
#define TESSERA_PLAIN_sve 0
#endif

TESSERA_BEGIN_NAMESPACE
namespace simd {

enum class arch_id : std::uint8_t {
    scalar,
#define TESSERA_ARCH_ENUM_(C, n, base, xa, family, flags) n,
    TESSERA_ARCH_LIST(TESSERA_ARCH_ENUM_, _)
#undef TESSERA_ARCH_ENUM_
};

// The scalar reference: plain C++, no vector registers. Always available.
struct scalar {
    static constexpr arch_id id = arch_id::scalar;
    static constexpr std::string_view name = "scalar";
};
// Base of the xsimd-backed levels; portable SIMD code takes requires_arch<xsimd_common>
// and uses xsimd::batch<T, typename A::xsimd_arch>.
struct xsimd_common : scalar {};

#define TESSERA_ARCH_TAG_(C, n, base, xa, fam, flags) \
    struct n : base {                                 \
        using xsimd_arch = xa;                        \
        static constexpr arch_id id = arch_id::n;     \
        static constexpr std::string_view name = #n;  \
        static constexpr std::string_view family = #fam; \
        static constexpr std::string_view unit_flags = flags; \
    };
TESSERA_ARCH_LIST(TESSERA_ARCH_TAG_, _)
#undef TESSERA_ARCH_TAG_

// Every tag, in arch_id order.
using arch_tags = std::tuple<scalar
#define TESSERA_ARCH_TUPLE_(C, n, base, xa, fam, flags) , n
                             TESSERA_ARCH_LIST(TESSERA_ARCH_TUPLE_, _)
#undef TESSERA_ARCH_TUPLE_
                             >;
inline constexpr std::size_t arch_count = std::tuple_size_v<arch_tags>;
template <arch_id A>
using tag_of = std::tuple_element_t<static_cast<std::size_t>(A), arch_tags>;

// The last parameter of a kernel body: binds to the nearest base of the caller's tag.
template <class Tag>
using requires_arch = const Tag&;

// Whether arch A is B or a level above it (for `if constexpr` inside one ISA's body).
template <class A, class B>
inline constexpr bool at_least = std::is_base_of_v<B, A>;

template <class A>
concept arch_tag = std::derived_from<A, scalar> && requires { A::id; A::name; };

template <class A>
concept xsimd_arch_tag = arch_tag<A> && requires { typename A::xsimd_arch; };

inline constexpr std::array<std::string_view, arch_count> arch_names = {
    "scalar"
#define TESSERA_ARCH_NAME_(C, n, base, xa, fam, flags) , #n
    TESSERA_ARCH_LIST(TESSERA_ARCH_NAME_, _)
#undef TESSERA_ARCH_NAME_
};

// Whether the compiler flags of this translation unit enable each arch (plain include).
inline constexpr std::array<bool, arch_count> enabled_by_flags = {
    true
#define TESSERA_ARCH_PLAIN_(C, n, base, xa, fam, flags) , TESSERA_PLAIN_##n != 0
    TESSERA_ARCH_LIST(TESSERA_ARCH_PLAIN_, _)
#undef TESSERA_ARCH_PLAIN_
};

constexpr std::string_view name_of(arch_id a) noexcept { return arch_names[static_cast<std::size_t>(a)]; }

constexpr std::optional<arch_id> arch_from_name(std::string_view n) noexcept {
    for (std::size_t i = 0; i < arch_count; ++i)
        if (arch_names[i] == n) return static_cast<arch_id>(i);
    return std::nullopt;
}

namespace detail {
template <class F, std::size_t... I>
constexpr decltype(auto) with_arch_tag_impl(arch_id a, F&& f, std::index_sequence<I...>) {
    using R = decltype(f(scalar{}));
    if constexpr (std::is_void_v<R>) {
        (void)((static_cast<std::size_t>(a) == I ? (f(std::tuple_element_t<I, arch_tags>{}), true) : false) || ...);
    } else {
        R r{};
        (void)((static_cast<std::size_t>(a) == I ? (r = f(std::tuple_element_t<I, arch_tags>{}), true) : false) || ...);
        return r;
    }
}
}  // namespace detail

// Calls f(Tag{}) for the tag of a run-time arch id.
template <class F>
constexpr decltype(auto) with_arch_tag(arch_id a, F&& f) {
    return detail::with_arch_tag_impl(a, std::forward<F>(f), std::make_index_sequence<arch_count>{});
}

}  // namespace simd
TESSERA_END_NAMESPACE
