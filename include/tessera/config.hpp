// tessera: build configuration, version and the ABI namespace.
#pragma once

#define TESSERA_VERSION_MAJOR 0
#define TESSERA_VERSION_MINOR 1
#define TESSERA_VERSION_PATCH 0
#define TESSERA_VERSION_STRING "0.1.0"

// Every public name lives in tessera::v0 (an inline namespace), so two vendored
// copies of different versions in one process do not merge their symbols.
#define TESSERA_ABI_NAMESPACE v0
#define TESSERA_BEGIN_NAMESPACE \
    namespace tessera {         \
    inline namespace TESSERA_ABI_NAMESPACE {
#define TESSERA_END_NAMESPACE \
    }                         \
    }

#if defined(__GNUC__) || defined(__clang__)
#define TESSERA_ALWAYS_INLINE inline __attribute__((always_inline))
#define TESSERA_RESTRICT __restrict__
#else
#define TESSERA_ALWAYS_INLINE inline
#define TESSERA_RESTRICT
#endif

// The CPU family this unit is compiled for. The ISA folders of the kernels
// (kernels/x86/, kernels/arm/) compile to nothing on the other family.
#if defined(__x86_64__) || defined(__i386__)
#define TESSERA_X86 1
#elif defined(__aarch64__)
#define TESSERA_AARCH64 1
#endif

// The ops unit. A build that links tessera's compiled units (TESSERA_MULTIARCH: Meson's
// tessera dependency, tessera.pc, CMake's tessera::tessera) also links the ops unit
// (meson/ops_unit.cpp), which holds the few function templates through which a program
// reaches most of the library: the CPU backend's op table with every op body, and (with
// TESSERA_VULKAN_LINKED) the Vulkan device. TESSERA_LINKED(declaration) after such a
// template makes it an explicit instantiation there and an extern one everywhere else, so
// a unit that includes tessera.hpp does not compile those bodies again (about half of its
// compile time). Without the units (plain include) the templates are instantiated where
// they are used, as any header-only code. The bodies are the same in both modes.
#if defined(TESSERA_OPS_UNIT)
#define TESSERA_LINKED(...) template __VA_ARGS__
#elif defined(TESSERA_MULTIARCH)
#define TESSERA_LINKED(...) extern template __VA_ARGS__
#else
#define TESSERA_LINKED(...) static_assert(true, "")
#endif
// The Vulkan device's part: only when the ops unit was compiled with the Vulkan headers.
#if defined(TESSERA_OPS_UNIT) || defined(TESSERA_VULKAN_LINKED)
#define TESSERA_LINKED_VULKAN(...) TESSERA_LINKED(__VA_ARGS__)
#else
#define TESSERA_LINKED_VULKAN(...) static_assert(true, "")
#endif
