// Replaces the global operator new / delete with versions that count the allocations made
// while `alloc_count::counting` is set (the no-allocation tests). Include it in exactly one
// unit of a test binary: the replacements are program-wide definitions.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

// ThreadSanitizer's runtime defines operator new / delete itself (a static archive the
// replacements below would clash with at link time): there the counter is absent, and
// the tests that count are skipped (doctest::skip(!alloc_count::available)).
#if defined(__SANITIZE_THREAD__)
#define TESSERA_COUNTING_NEW 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_COUNTING_NEW 0
#endif
#endif
#ifndef TESSERA_COUNTING_NEW
#define TESSERA_COUNTING_NEW 1
#endif

namespace alloc_count {
inline constexpr bool available = TESSERA_COUNTING_NEW != 0;
inline std::atomic<bool> counting{false};
inline std::atomic<long> news{0};
inline void* counted(std::size_t n, std::size_t align) {
    if (counting.load(std::memory_order_relaxed)) news.fetch_add(1, std::memory_order_relaxed);
    void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    return p;
}
}  // namespace alloc_count

#if TESSERA_COUNTING_NEW
void* operator new(std::size_t n) { return alloc_count::counted(n, 0); }
void* operator new[](std::size_t n) { return alloc_count::counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return alloc_count::counted(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return alloc_count::counted(n, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#endif
