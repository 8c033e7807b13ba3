// mapped_file: a read-only POSIX memory mapping of a whole file, owned RAII-style.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace gguf {

// The bytes of a file, mapped read-only and private. Move-only; unmaps on destruction.
// An empty file maps to an empty span (mmap cannot map zero bytes). The mapping stays
// valid while the object lives; if another process truncates the file meanwhile,
// touching the lost pages raises SIGBUS, as with any mapping.
class mapped_file {
public:
    mapped_file() noexcept = default;

    // Opens and maps path; throws tessera::error(errc::io) naming the path and the
    // system's reason when it cannot.
    static mapped_file open(const std::string& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail_errno("cannot open", path);
        struct ::stat st {};
        if (::fstat(fd, &st) != 0) {
            const int e = errno;
            ::close(fd);
            errno = e;
            fail_errno("cannot stat", path);
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(fd);
            fail(errc::io, "gguf file '" + path + "': not a regular file");
        }
        mapped_file m;
        m.size_ = static_cast<std::size_t>(st.st_size);
        if (m.size_ > 0) {
            void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                const int e = errno;
                ::close(fd);
                errno = e;
                fail_errno("cannot mmap", path);
            }
            m.data_ = static_cast<const std::byte*>(p);
        }
        ::close(fd);  // the mapping keeps the file referenced
        return m;
    }

    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
    mapped_file(mapped_file&& o) noexcept
        : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
    mapped_file& operator=(mapped_file&& o) noexcept {
        if (this != &o) {
            reset();
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
        }
        return *this;
    }
    ~mapped_file() { reset(); }

    const std::byte* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

    // Hints the kernel to read the mapping ahead (useful before touching all weights).
    void advise_willneed() const noexcept {
        if (data_ != nullptr) (void)::madvise(const_cast<std::byte*>(data_), size_, MADV_WILLNEED);
    }

private:
    void reset() noexcept {
        if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
        data_ = nullptr;
        size_ = 0;
    }

    [[noreturn]] static void fail_errno(const char* what, const std::string& path) {
        const int e = errno;
        fail(errc::io, "gguf file '" + path + "': " + what + ": " + std::strerror(e));
    }

    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace gguf
TESSERA_END_NAMESPACE
