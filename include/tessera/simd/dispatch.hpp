// Run-time kernel dispatch.
//
// A kernel is a class template on the arch tag, `template <class A> struct K`, with
// a const call operator defined out of class (so it is not implicitly inline). Its
// header ends with `TESSERA_KERNEL(K)`:
//   - in a multiarch build (the Meson dependency) that line declares K<A> extern for
//     every arch, and the generated unit of arch A, compiled with A's flags,
//     explicitly instantiates K<A>;
//   - in plain-include mode it expands to nothing, and the kernels of the arches the
//     compiler flags enable are instantiated where they are used.
// `kernel_for<K>(arch)` returns a plain function pointer to K<arch>, and
// `call<K>(args...)` runs K for the active arch: the best this CPU supports among the
// compiled ones, or the one TESSERA_ARCH (or set_active_arch) names.
#pragma once

#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <tuple>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/simd/arch.hpp"
#include "tessera/simd/cpu.hpp"

#if defined(TESSERA_MULTIARCH)
#define TESSERA_KERNEL_EXTERN_(K, n, base, xa, fam, flags) extern template struct K<::tessera::simd::n>;
#if defined(TESSERA_ARCH_UNIT)
#define TESSERA_KERNEL_DEFINE_(K) template struct K<::tessera::simd::TESSERA_ARCH_UNIT>;
#else
#define TESSERA_KERNEL_DEFINE_(K)
#endif
#define TESSERA_KERNEL(K)                                                                  \
    extern template struct K<::tessera::simd::scalar>;                                     \
    TESSERA_ARCH_LIST(TESSERA_KERNEL_EXTERN_, K) TESSERA_KERNEL_DEFINE_(K) static_assert(true, "")
#else
#define TESSERA_KERNEL(K) static_assert(true, "")
#endif

TESSERA_BEGIN_NAMESPACE
namespace simd {

// Whether kernels for an arch exist in this build (not whether the CPU has it). A
// multiarch build is told by the build (Meson's dependency, tessera.pc, CMake's
// tessera::tessera) which units it compiled: TESSERA_UNITS holds one 1 or 0 per arch, in
// arch_id order (meson/archs.py writes it from the arch list). It is a bare number,
// 11111, so that it passes through pkg-config and CMake without shell quoting; a quoted
// "11111" is accepted too. In plain-include mode it is what this unit's compiler flags
// enable.
#define TESSERA_UNITS_STRING_(x) #x
#define TESSERA_UNITS_STRING(x) TESSERA_UNITS_STRING_(x)
namespace detail {
// "11111" stringized is "\"11111\"": the quotes are dropped.
constexpr std::string_view unquoted(std::string_view s) noexcept {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}
}  // namespace detail

constexpr bool compiled_in(arch_id a) noexcept {
    if (a == arch_id::scalar) return true;
#if defined(TESSERA_MULTIARCH) && defined(TESSERA_UNITS)
    constexpr std::string_view units = detail::unquoted(TESSERA_UNITS_STRING(TESSERA_UNITS));
    return static_cast<std::size_t>(a) < units.size() && units[static_cast<std::size_t>(a)] == '1';
#elif defined(TESSERA_MULTIARCH)
    return false;  // inside a kernel unit: it dispatches nothing itself
#else
    return static_cast<std::size_t>(a) < arch_count && enabled_by_flags[static_cast<std::size_t>(a)];
#endif
}

constexpr bool multiarch_build() noexcept {
#if defined(TESSERA_MULTIARCH)
    return true;
#else
    return false;
#endif
}

// Arches that are both compiled in and supported by this CPU, narrowest first.
inline std::vector<arch_id> available_archs() {
    std::vector<arch_id> v;
    for (std::size_t i = 0; i < arch_count; ++i) {
        const auto a = static_cast<arch_id>(i);
        if (compiled_in(a) && cpu().supports(a)) v.push_back(a);
    }
    return v;
}

inline bool is_available(arch_id a) noexcept { return compiled_in(a) && cpu().supports(a); }

inline arch_id best_available_arch() noexcept {
    arch_id best = arch_id::scalar;
    for (std::size_t i = 0; i < arch_count; ++i)
        if (is_available(static_cast<arch_id>(i))) best = static_cast<arch_id>(i);
    return best;
}

namespace detail {

inline std::string arch_list_string(bool (*pred)(arch_id)) {
    std::string s;
    for (std::size_t i = 0; i < arch_count; ++i)
        if (pred(static_cast<arch_id>(i))) {
            if (!s.empty()) s += ", ";
            s += name_of(static_cast<arch_id>(i));
        }
    return s;
}

// Checks that `name` is an arch this process can run; returns it or throws.
inline arch_id checked_arch(std::string_view name, std::string_view origin, const cpu_features& f = cpu()) {
    const auto a = arch_from_name(name);
    const std::string who = std::string(origin) + "=" + std::string(name);
    if (!a)
        fail(errc::invalid_argument, who + ": unknown arch; known arches are " +
                                         arch_list_string([](arch_id) { return true; }));
    if (!compiled_in(*a))
        fail(errc::unsupported, who + ": arch is not compiled into this build (built: " +
                                    arch_list_string([](arch_id x) { return compiled_in(x); }) + ")");
    if (!f.supports(*a))
        fail(errc::unsupported, who + ": this CPU lacks the instructions of " + std::string(name) +
                                    " (it has: " + f.to_string() + ")");
    return *a;
}

inline std::atomic<int>& active_state() noexcept {
    static std::atomic<int> s{-1};
    return s;
}

}  // namespace detail

// The arch the dispatched kernels use. On first call it reads TESSERA_ARCH; an
// unknown arch, or one this CPU or build cannot run, throws tessera::error.
inline arch_id active_arch() {
    const int v = detail::active_state().load(std::memory_order_relaxed);
    if (v >= 0) return static_cast<arch_id>(v);
    arch_id a = best_available_arch();
    if (const char* env = std::getenv("TESSERA_ARCH"); env && *env) a = detail::checked_arch(env, "TESSERA_ARCH");
    detail::active_state().store(static_cast<int>(a), std::memory_order_relaxed);
    return a;
}

// Forces the arch of dispatched kernels (tests, benchmarks); throws if unavailable.
inline void set_active_arch(arch_id a) {
    detail::checked_arch(name_of(a), "set_active_arch");
    detail::active_state().store(static_cast<int>(a), std::memory_order_relaxed);
}
inline void set_active_arch(std::string_view name) { set_active_arch(detail::checked_arch(name, "set_active_arch")); }

// A one-paragraph report: detected features, arches built and usable, arch in use,
// and the mode: run-time dispatch over the per-arch kernel units (the Meson dependency,
// or libtessera-kernels through tessera.pc / CMake), or the single-arch mode of a plain
// include, where the kernels are those this unit's compiler flags enable.
inline std::string report() {
    std::string s = "cpu features: " + cpu().to_string() + "\n";
    s += "arches compiled: " + detail::arch_list_string([](arch_id a) { return compiled_in(a); }) +
         (multiarch_build() ? " (run-time dispatch: per-arch kernel units linked)\n"
                            : " (single-arch mode: plain include without libtessera-kernels, the arch of the "
                              "compiler flags)\n");
    s += "arches usable: " + detail::arch_list_string(is_available) + "\n";
    s += "arch in use: " + std::string(name_of(active_arch())) + "\n";
    return s;
}

namespace detail {
template <class M>
struct call_signature;
template <class C, class R, class... Args>
struct call_signature<R (C::*)(Args...) const> {
    using fn = R (*)(Args...);
    template <template <class> class K, class A>
    static R thunk(Args... args) {
        return K<A>{}(static_cast<Args>(args)...);
    }
};
template <template <class> class K>
using kernel_signature = call_signature<decltype(&K<scalar>::operator())>;
}  // namespace detail

// The plain function type of kernel K.
template <template <class> class K>
using kernel_fn = typename detail::kernel_signature<K>::fn;

namespace detail {
// The dispatch table, from the arch list: K's instantiation for arch a (only arches
// compiled into this build are ever named, so no other instantiation is needed).
template <template <class> class K, std::size_t... I>
kernel_fn<K> kernel_pick(arch_id a, std::index_sequence<I...>) {
    using sig = kernel_signature<K>;
    kernel_fn<K> f = &sig::template thunk<K, scalar>;
    (
        [&] {
            constexpr auto id = static_cast<arch_id>(I);
            if constexpr (I > 0 && compiled_in(id))
                if (a == id) f = &sig::template thunk<K, tag_of<id>>;
        }(),
        ...);
    return f;
}
}  // namespace detail

// A function pointer to K for the given arch. Throws if the arch is not available.
template <template <class> class K>
kernel_fn<K> kernel_for(arch_id a) {
    if (!is_available(a)) detail::checked_arch(name_of(a), "kernel_for");
    return detail::kernel_pick<K>(a, std::make_index_sequence<arch_count>{});
}

// K for the active arch. Fetch once outside hot loops.
template <template <class> class K>
kernel_fn<K> kernel() {
    return kernel_for<K>(active_arch());
}

// Runs K for the active arch.
template <template <class> class K, class... Args>
decltype(auto) call(Args&&... args) {
    return kernel<K>()(std::forward<Args>(args)...);
}

}  // namespace simd
TESSERA_END_NAMESPACE
