// mapped_file: a read-only POSIX memory mapping of a whole file, owned RAII-style; and
// prefix_fingerprint, which identifies a file by its first bytes and its size. The GGUF
// reader maps its files with it, and so does a remote device (backend/mpi/worker.hpp)
// that maps a region of a file itself.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
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

// The bytes of a file, mapped read-only and private. Move-only; unmaps on destruction.
// An empty file maps to an empty span (mmap cannot map zero bytes). The mapping stays
// valid while the object lives; if another process truncates the file meanwhile,
// touching the lost pages raises SIGBUS, as with any mapping.
class mapped_file {
public:
    mapped_file() noexcept = default;

    // Opens and maps path; throws tessera::error(errc::io) naming the path (as "<kind>
    // '<path>'") and the system's reason when it cannot, or when it is not a regular file.
    static mapped_file open(const std::string& path, const char* kind = "file") {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail_errno(kind, "cannot open", path);
        struct ::stat st {};
        if (::fstat(fd, &st) != 0) {
            const int e = errno;
            ::close(fd);
            errno = e;
            fail_errno(kind, "cannot stat", path);
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(fd);
            fail(errc::io, std::string(kind) + " '" + path + "': not a regular file");
        }
        mapped_file m;
        m.size_ = static_cast<std::size_t>(st.st_size);
        if (m.size_ > 0) {
            void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                const int e = errno;
                ::close(fd);
                errno = e;
                fail_errno(kind, "cannot mmap", path);
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

    [[noreturn]] static void fail_errno(const char* kind, const char* what, const std::string& path) {
        const int e = errno;
        fail(errc::io, std::string(kind) + " '" + path + "': " + what + ": " + std::strerror(e));
    }

    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

// FNV-1a 64 over the first `prefix` bytes of a file (all of it when shorter) and then the
// file's size as 8 little-endian bytes: for a GGUF file with prefix = its data offset,
// the header and tensor table, so two files with the same value have the same tensors at
// the same offsets (gguf::header_fingerprint).
inline std::uint64_t prefix_fingerprint(std::span<const std::byte> file, std::uint64_t prefix) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    const auto mix = [&h](std::uint8_t b) {
        h ^= b;
        h *= 0x100000001b3ull;
    };
    const std::size_t n = prefix < file.size() ? static_cast<std::size_t>(prefix) : file.size();
    for (std::size_t i = 0; i < n; ++i) mix(std::to_integer<std::uint8_t>(file[i]));
    std::uint64_t size = file.size();
    for (int i = 0; i < 8; ++i, size >>= 8) mix(static_cast<std::uint8_t>(size & 0xffu));
    return h;
}

TESSERA_END_NAMESPACE
