// Reading MNIST-like data sets (MNIST, Fashion-MNIST) for the training example: files
// read whole and gunzipped when compressed (zlib), parsed by tessera/opt/idx.hpp, and
// checked to be 28x28 u8 images with u8 labels 0..9.
//
//   auto train = mnist::load_mnist(std::string(mnist::default_data_dir), "train");
//   // train.n == 60000, train.images: n*784 floats in [0, 1], train.labels: n labels 0..9
//
// Errors are tessera::error: errc::io when a file cannot be found or read, errc::format
// when its bytes are wrong (corrupt or truncated gzip, a bad IDX file, wrong shapes or
// labels); every message names the file.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/opt/idx.hpp"

namespace mnist {

// Where Debian's dataset-fashion-mnist package puts Fashion-MNIST (gzipped IDX files).
inline constexpr std::string_view default_data_dir = "/usr/share/datasets/fashion-mnist";

// The most gunzip inflates by default (Fashion-MNIST's largest file is 47 MB).
inline constexpr std::size_t default_max_inflated = std::size_t{256} << 20;

inline constexpr std::int64_t image_rows = 28, image_cols = 28, image_size = image_rows * image_cols;
inline constexpr int n_classes = 10;

// True when bytes start with the gzip magic 1f 8b.
inline bool is_gzip(std::span<const std::byte> bytes) noexcept {
    return bytes.size() >= 2 && bytes[0] == std::byte{0x1f} && bytes[1] == std::byte{0x8b};
}

// Inflates gzip (or zlib) data: one stream or several gzip members one after another,
// as gzip writes them. Corrupt or truncated data, bytes after the last stream and an
// output over max_bytes are refused with errc::format naming `what`.
inline std::vector<std::byte> gunzip(std::span<const std::byte> in, std::string_view what,
                                     std::size_t max_bytes = default_max_inflated) {
    using tessera::errc;
    using tessera::fail_cat;
    struct stream {
        z_stream z{};
        bool live = false;
        ~stream() {
            if (live) inflateEnd(&z);
        }
    } s;
    // windowBits 15 + 32: the largest window, and a gzip or zlib header detected.
    if (inflateInit2(&s.z, 15 + 32) != Z_OK) fail_cat(errc::out_of_memory, "gunzip '", what, "': inflateInit2 failed");
    s.live = true;
    max_bytes = std::min(max_bytes, std::numeric_limits<std::size_t>::max() / 4);  // max_bytes + 1 stays finite

    // The first buffer: the size the last gzip member states in its trailer (a hint,
    // bounded by deflate's largest ratio, 1032:1, and by the limit), else 4 x the input.
    std::size_t guess = std::min(in.size(), (max_bytes + 1) / 4) * 4;
    if (is_gzip(in) && in.size() >= 18) {
        const std::byte* t = in.data() + in.size() - 4;
        const std::size_t stated = std::to_integer<std::size_t>(t[0]) | std::to_integer<std::size_t>(t[1]) << 8 |
                                   std::to_integer<std::size_t>(t[2]) << 16 | std::to_integer<std::size_t>(t[3]) << 24;
        guess = std::min(stated, std::min(in.size(), (max_bytes + 1) / 1032) * 1032);
    }
    std::vector<std::byte> out(std::min(std::max<std::size_t>(guess + 1, 4096), max_bytes + 1));
    std::size_t in_pos = 0;   // input bytes handed to zlib so far
    std::size_t produced = 0; // output bytes written so far
    const auto feed = [&] {
        const std::size_t n = std::min<std::size_t>(in.size() - in_pos, UINT_MAX);
        // zlib's next_in is not const (it never writes through it).
        s.z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + in_pos));
        s.z.avail_in = static_cast<uInt>(n);
        in_pos += n;
    };
    const auto consumed = [&] { return in_pos - s.z.avail_in; };
    feed();
    for (;;) {
        if (s.z.avail_in == 0 && in_pos < in.size()) feed();
        if (produced == out.size()) {
            if (out.size() > max_bytes)
                fail_cat(errc::format, "gunzip '", what, "': inflates to more than ", max_bytes,
                         " bytes (the limit); corrupt, or not a data file");
            out.resize(std::min(out.size() * 2, max_bytes + 1));
        }
        const std::size_t room = std::min<std::size_t>(out.size() - produced, UINT_MAX);
        s.z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
        s.z.avail_out = static_cast<uInt>(room);
        const int rc = inflate(&s.z, Z_NO_FLUSH);
        produced += room - s.z.avail_out;
        if (produced > max_bytes)
            fail_cat(errc::format, "gunzip '", what, "': inflates to more than ", max_bytes,
                     " bytes (the limit); corrupt, or not a data file");
        if (rc == Z_STREAM_END) {
            const std::size_t at = consumed();
            if (at == in.size()) break;
            // Another gzip member follows (gzip -c a b, or a multi-member file).
            if (!is_gzip(in.subspan(at)))
                fail_cat(errc::format, "gunzip '", what, "': ", in.size() - at,
                         " trailing bytes after the compressed data at offset ", at);
            if (inflateReset(&s.z) != Z_OK) fail_cat(errc::format, "gunzip '", what, "': inflateReset failed");
            continue;
        }
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR) {
            if (s.z.avail_out == 0) continue;  // the output is full: grown at the top
            if (s.z.avail_in == 0 && in_pos == in.size())
                fail_cat(errc::format, "gunzip '", what, "': truncated compressed data (the stream ends after ",
                         in.size(), " bytes without its end marker)");
            fail_cat(errc::format, "gunzip '", what, "': inflate made no progress at offset ", consumed());
        }
        const char* msg = s.z.msg ? s.z.msg : "unknown zlib error";
        if (rc == Z_MEM_ERROR) fail_cat(errc::out_of_memory, "gunzip '", what, "': out of memory inflating");
        fail_cat(errc::format, "gunzip '", what, "': corrupt compressed data near offset ", consumed(), ": ",
                 std::string_view(msg));
    }
    out.resize(produced);
    if (out.capacity() - produced > produced / 4) out.shrink_to_fit();
    return out;
}

// The bytes of a file, gunzipped when it starts with the gzip magic 1f 8b.
inline std::vector<std::byte> read_file(const std::string& path, std::size_t max_inflated = default_max_inflated) {
    using tessera::errc;
    using tessera::fail_cat;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) fail_cat(errc::io, "cannot open '", path, "': ", std::string_view(std::strerror(errno)));
    struct closer {
        std::FILE* f;
        ~closer() { std::fclose(f); }
    } close_f{f};
    std::vector<std::byte> bytes;
    std::byte buf[1 << 16];
    for (;;) {
        const std::size_t n = std::fread(buf, 1, sizeof buf, f);
        bytes.insert(bytes.end(), buf, buf + n);
        if (n < sizeof buf) break;
    }
    if (std::ferror(f)) fail_cat(errc::io, "cannot read '", path, "': ", std::string_view(std::strerror(errno)));
    if (is_gzip(bytes)) return gunzip(bytes, path, max_inflated);
    return bytes;
}

// One split of the data set: n images of 28x28 pixels, row-major, scaled to [0, 1], and
// their labels 0..9.
struct mnist_split {
    std::int64_t n = 0;
    std::vector<float> images;  // n * 784
    std::vector<std::int32_t> labels;  // n
};

namespace detail {
// <dir>/<name>, or <dir>/<name>.gz when only that exists; errc::io when neither does.
inline std::string find_data_file(const std::string& dir, const std::string& name) {
    const std::string plain = dir + "/" + name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(plain, ec)) return plain;
    if (std::filesystem::is_regular_file(plain + ".gz", ec)) return plain + ".gz";
    tessera::fail_cat(tessera::errc::io, "no file ", plain, "[.gz]");
}

inline tessera::opt::idx_array load_idx(const std::string& path) {
    const std::vector<std::byte> bytes = read_file(path);
    return tessera::opt::parse_idx(bytes, path);
}
}  // namespace detail

// Loads split "train" or "t10k" from dir: <split>-images-idx3-ubyte and
// <split>-labels-idx1-ubyte, each plain or with .gz (the plain file first).
inline mnist_split load_mnist(const std::string& dir, std::string_view split) {
    using tessera::errc;
    using tessera::fail_cat;
    using tessera::opt::idx_type;
    if (split != "train" && split != "t10k")
        fail_cat(errc::invalid_argument, "load_mnist: split '", split, "' is neither 'train' nor 't10k'");
    const std::string s(split);
    const std::string images_path = detail::find_data_file(dir, s + "-images-idx3-ubyte");
    const std::string labels_path = detail::find_data_file(dir, s + "-labels-idx1-ubyte");

    tessera::opt::idx_array images = detail::load_idx(images_path);
    if (images.type != idx_type::u8 || images.dims.size() != 3 || images.dims[1] != image_rows ||
        images.dims[2] != image_cols)
        fail_cat(errc::format, images_path, ": images must be u8 with dims [n, 28, 28], the file has ",
                 tessera::opt::idx_type_name(images.type), " ", tessera::opt::detail::idx_dims_string(images.dims));
    const tessera::opt::idx_array labels = detail::load_idx(labels_path);
    if (labels.type != idx_type::u8 || labels.dims.size() != 1)
        fail_cat(errc::format, labels_path, ": labels must be u8 with dims [n], the file has ",
                 tessera::opt::idx_type_name(labels.type), " ", tessera::opt::detail::idx_dims_string(labels.dims));
    if (labels.dims[0] != images.dims[0])
        fail_cat(errc::format, labels_path, ": ", labels.dims[0], " labels for ", images.dims[0], " images in ",
                 images_path);

    mnist_split out;
    out.n = images.dims[0];
    out.labels.resize(labels.values.size());
    for (std::size_t i = 0; i < labels.values.size(); ++i) {
        const float v = labels.values[i];  // a u8: 0..255, exact
        if (v >= static_cast<float>(n_classes))
            fail_cat(errc::format, labels_path, ": label ", static_cast<int>(v), " at index ", i,
                     ": labels must be 0..9");
        out.labels[i] = static_cast<std::int32_t>(v);
    }
    out.images = std::move(images.values);
    for (float& v : out.images) v /= 255.0f;
    return out;
}

}  // namespace mnist
