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
