// cpu_buffer: host memory for the CPU device's buffer types: owned, aligned and zeroed,
// or user memory wrapped without a copy ("CPU_Mapped": an mmap'ed GGUF's tensor data),
// never freed by the buffer. The buffer types themselves are in backend/cpu.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/backend/any.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

inline constexpr std::size_t cpu_alignment = 32;  // ggml's TENSOR_ALIGNMENT

// ---- buffer -------------------------------------------------------------------------------

class cpu_buffer {
public:
    // Owned, zeroed memory of n bytes aligned to `align` (n = 0: no memory, base() is null).
    explicit cpu_buffer(std::size_t n, std::size_t align = cpu_alignment) : size_(n), align_(align), owned_(true) {
        if (n) {
            try {
                base_ = static_cast<std::byte*>(::operator new(n, std::align_val_t(align_)));
            } catch (const std::bad_alloc&) {
                fail(errc::out_of_memory, "CPU buffer: could not allocate " + bytes_str(n));
            }
            std::memset(base_, 0, n);
        }
    }
    // Wraps user memory without copying; the caller keeps it alive.
    cpu_buffer(void* p, std::size_t n) noexcept : base_(static_cast<std::byte*>(p)), size_(n), owned_(false) {}
    cpu_buffer(cpu_buffer&& o) noexcept
        : base_(std::exchange(o.base_, nullptr)), size_(o.size_), align_(o.align_), owned_(o.owned_) {}
    cpu_buffer& operator=(cpu_buffer&&) = delete;
    cpu_buffer(const cpu_buffer&) = delete;
    ~cpu_buffer() {
        if (owned_ && base_) ::operator delete(base_, std::align_val_t(align_));
    }

    std::string_view name() const noexcept { return owned_ ? "CPU" : "CPU_Mapped"; }
    std::byte* base() const noexcept { return base_; }
    std::size_t size() const noexcept { return size_; }
    bool owns_memory() const noexcept { return owned_; }
    // Both ends are host memory: a device-side copy is a memcpy.
    bool cpy_tensor(const node& src, node& dst) const {
        if (!is_host_memory(src)) return false;
        std::memcpy(dst.bytes(), src.bytes(), src.lay.nbytes());
        return true;
    }

private:
    std::byte* base_ = nullptr;
    std::size_t size_ = 0;
    std::size_t align_ = cpu_alignment;
    bool owned_ = true;
};
static_assert(buffer<cpu_buffer>);

}  // namespace backend
TESSERA_END_NAMESPACE
