// examples/train_mnist/mnist_io.hpp: gunzip against zlib's own deflate (round trips,
// several members, corrupt, truncated and oversized streams), read_file on plain and
// gzipped files, and load_mnist on small synthetic data sets written to a temporary
// folder (plain, gzipped, mixed) and on broken ones, each error checked for the file
// and the reason it names.
#include <doctest/doctest.h>
#include <stdlib.h>  // mkdtemp
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "idx_test_util.hpp"
#include "mnist_io.hpp"

using namespace tessera;

namespace {

// A folder under the temporary directory, removed with its files at the end of the test.
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        std::string t = (std::filesystem::temp_directory_path() / "tessera-mnist-test.XXXXXX").string();
        REQUIRE(mkdtemp(t.data()) != nullptr);
        path = t;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    std::string str() const { return path.string(); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_file(const std::string& path, std::span<const std::byte> bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(f.good());
}

// Compresses with zlib's deflate: a gzip member (windowBits 15 + 16), or a zlib stream.
std::vector<std::byte> deflate_bytes(std::span<const std::byte> in, bool gzip = true, int level = 6) {
    z_stream z{};
    REQUIRE(deflateInit2(&z, level, Z_DEFLATED, gzip ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    std::vector<std::byte> out(deflateBound(&z, static_cast<uLong>(in.size())) + 64);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    REQUIRE(rc == Z_STREAM_END);
    return out;
}

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed, unsigned alphabet = 256) {
    std::mt19937 rng(seed);
    std::vector<std::byte> b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng() % alphabet);
    return b;
}

// The tessera::error that f throws; fails the test when it throws none.
template <class F>
error error_of(F&& f) {
    try {
        f();
    } catch (const error& e) {
        return e;
    }
    FAIL("no tessera::error thrown");
    return error(errc::format, "");
}

void check_error(const error& e, errc code, const std::string& needle1, const std::string& needle2 = {}) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(e.code() == code);
    CHECK(msg.find(needle1) != std::string::npos);
    if (!needle2.empty()) CHECK(msg.find(needle2) != std::string::npos);
}

// A synthetic split of n images: pixel j of image i is (7 i + j) % 256; label i is i % 10.
struct split_files {
    std::vector<std::byte> images, labels;
};
split_files synthetic(std::uint32_t n) {
    split_files s;
    s.images = idx_test::u8_file({n, 28, 28}, std::size_t{n} * 784, [](std::size_t k) { return (7 * (k / 784) + k % 784) % 256; });
    s.labels = idx_test::u8_file({n}, n, [](std::size_t i) { return i % 10; });
    return s;
}

void check_synthetic(const mnist::mnist_split& s, std::int64_t n) {
    REQUIRE(s.n == n);
    REQUIRE(s.images.size() == static_cast<std::size_t>(n) * 784);
    REQUIRE(s.labels.size() == static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
        CHECK(s.labels[static_cast<std::size_t>(i)] == i % 10);
        for (std::int64_t j : {0, 1, 27, 28, 400, 783}) {
            const float want = static_cast<float>((7 * i + j) % 256) / 255.0f;
            CHECK(s.images[static_cast<std::size_t>(i * 784 + j)] == want);
        }
    }
    for (float v : s.images) REQUIRE((v >= 0.0f && v <= 1.0f));
}

}  // namespace

TEST_CASE("gunzip: round trips through zlib's deflate") {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{300000}}) {
        for (unsigned alphabet : {2u, 256u}) {
            CAPTURE(n);
            CAPTURE(alphabet);
            const auto data = random_bytes(n, static_cast<unsigned>(n) + alphabet, alphabet);
            const auto gz = deflate_bytes(data);
            CHECK(mnist::is_gzip(gz));
            CHECK(mnist::gunzip(gz, "mem") == data);
            CHECK(mnist::gunzip(deflate_bytes(data, false), "mem") == data);  // a zlib stream too
            CHECK(mnist::gunzip(deflate_bytes(data, true, 0), "mem") == data);  // stored blocks
        }
    }
    // highly compressible: 8 MiB of zeros inflate from a few KiB (buffer grows past its guess)
    const std::vector<std::byte> zeros(8 << 20);
    auto gz = deflate_bytes(zeros, true, 9);
    CHECK(gz.size() < 20000);
    CHECK(mnist::gunzip(gz, "zeros") == zeros);
    // a wrong size in the trailer is only a hint: corrupting it fails the length check
    gz[gz.size() - 1] = std::byte{0x7f};
    check_error(error_of([&] { (void)mnist::gunzip(gz, "zeros"); }), errc::format, "gunzip 'zeros': corrupt compressed data");
}

TEST_CASE("gunzip: several gzip members one after another") {
    const auto a = random_bytes(5000, 1, 4), b = random_bytes(7000, 2);
    auto gz = deflate_bytes(a);
    const auto gz_b = deflate_bytes(b);
    gz.insert(gz.end(), gz_b.begin(), gz_b.end());
    auto want = a;
    want.insert(want.end(), b.begin(), b.end());
    CHECK(mnist::gunzip(gz, "two") == want);
}

TEST_CASE("gunzip: corrupt, truncated, trailing and oversized input") {
    const auto data = random_bytes(100000, 3, 16);
    const auto gz = deflate_bytes(data);
    SUBCASE("empty") {
        check_error(error_of([&] { (void)mnist::gunzip({}, "empty.gz"); }), errc::format,
                    "gunzip 'empty.gz': truncated compressed data");
    }
    SUBCASE("truncated at every few bytes") {
        for (std::size_t cut = 0; cut < gz.size(); cut += 1 + cut / 8) {
            CAPTURE(cut);
            const std::span<const std::byte> part(gz.data(), cut);
            const error e = error_of([&] { (void)mnist::gunzip(part, "cut.gz"); });
            const std::string msg = e.what();
            CAPTURE(msg);
            CHECK(e.code() == errc::format);
            CHECK(msg.find("gunzip 'cut.gz': ") == 0);
            CHECK((msg.find("truncated compressed data") != std::string::npos ||
                   msg.find("corrupt compressed data") != std::string::npos));
        }
        const std::span<const std::byte> most(gz.data(), gz.size() - 1);
        check_error(error_of([&] { (void)mnist::gunzip(most, "cut.gz"); }), errc::format,
                    "truncated compressed data (the stream ends after " + std::to_string(gz.size() - 1) + " bytes");
    }
    SUBCASE("corrupt bytes") {
        auto bad = gz;
        bad[2] = std::byte{0x07};  // compression method 7: not deflate
        check_error(error_of([&] { (void)mnist::gunzip(bad, "bad.gz"); }), errc::format,
                    "gunzip 'bad.gz': corrupt compressed data near offset", "unknown compression method");
        std::mt19937 rng(5);
        int rejected = 0;
        for (int i = 0; i < 300; ++i) {
            auto m = gz;
            m[10 + rng() % (m.size() - 10)] ^= static_cast<std::byte>(1 + rng() % 255);
            try {
                (void)mnist::gunzip(m, "flip.gz");
            } catch (const error& e) {
                CHECK(e.code() == errc::format);
                CHECK(std::string(e.what()).find("gunzip 'flip.gz': ") == 0);
                ++rejected;
            }
        }
        CHECK(rejected > 250);  // the CRC catches what inflate does not
    }
    SUBCASE("trailing bytes") {
        auto t = gz;
        t.push_back(std::byte{0});
        t.push_back(std::byte{1});
        check_error(error_of([&] { (void)mnist::gunzip(t, "t.gz"); }), errc::format,
                    "gunzip 't.gz': 2 trailing bytes after the compressed data at offset " + std::to_string(gz.size()));
    }
    SUBCASE("over the size limit") {
        check_error(error_of([&] { (void)mnist::gunzip(gz, "big.gz", 99999); }), errc::format,
                    "gunzip 'big.gz': inflates to more than 99999 bytes (the limit)");
        CHECK(mnist::gunzip(gz, "big.gz", 100000) == data);  // exactly the limit
        const std::vector<std::byte> zeros(1 << 20);
        check_error(error_of([&] { (void)mnist::gunzip(deflate_bytes(zeros), "bomb.gz", 1000); }), errc::format,
                    "inflates to more than 1000 bytes");
    }
}

TEST_CASE("read_file: plain and gzipped IDX files round trip") {
    temp_dir dir;
    const auto idx = idx_test::u8_file({4, 5}, 20, [](std::size_t i) { return 3 * i; });
    write_file(dir.file("plain.idx"), idx);
    CHECK(mnist::read_file(dir.file("plain.idx")) == idx);
    const auto a = opt::parse_idx(mnist::read_file(dir.file("plain.idx")), "plain.idx");
    CHECK(a.dims == std::vector<std::int64_t>{4, 5});
    CHECK(a.values[19] == 57.0f);

    write_file(dir.file("packed.idx.gz"), deflate_bytes(idx));
    CHECK(mnist::read_file(dir.file("packed.idx.gz")) == idx);
    CHECK(opt::parse_idx(mnist::read_file(dir.file("packed.idx.gz")), "packed").values == a.values);

    write_file(dir.file("empty"), std::span<const std::byte>{});
    CHECK(mnist::read_file(dir.file("empty")).empty());

    check_error(error_of([&] { (void)mnist::read_file(dir.file("absent")); }), errc::io,
                "cannot open '" + dir.file("absent") + "': No such file or directory");
    check_error(error_of([&] { (void)mnist::read_file(dir.str()); }), errc::io, "cannot read '" + dir.str() + "'");
    auto gz = deflate_bytes(idx);
    gz.resize(gz.size() - 6);
    write_file(dir.file("cut.gz"), gz);
    check_error(error_of([&] { (void)mnist::read_file(dir.file("cut.gz")); }), errc::format,
                "gunzip '" + dir.file("cut.gz") + "': truncated compressed data");
}

TEST_CASE("load_mnist: synthetic data sets, plain, gzipped and mixed") {
    temp_dir dir;
    const auto train = synthetic(7), test = synthetic(3);
    SUBCASE("plain") {
        write_file(dir.file("train-images-idx3-ubyte"), train.images);
        write_file(dir.file("train-labels-idx1-ubyte"), train.labels);
        write_file(dir.file("t10k-images-idx3-ubyte"), test.images);
        write_file(dir.file("t10k-labels-idx1-ubyte"), test.labels);
        check_synthetic(mnist::load_mnist(dir.str(), "train"), 7);
        check_synthetic(mnist::load_mnist(dir.str(), "t10k"), 3);
    }
    SUBCASE("gzipped") {
        write_file(dir.file("train-images-idx3-ubyte.gz"), deflate_bytes(train.images));
        write_file(dir.file("train-labels-idx1-ubyte.gz"), deflate_bytes(train.labels));
        write_file(dir.file("t10k-images-idx3-ubyte.gz"), deflate_bytes(test.images));
        write_file(dir.file("t10k-labels-idx1-ubyte.gz"), deflate_bytes(test.labels));
        check_synthetic(mnist::load_mnist(dir.str(), "train"), 7);
        check_synthetic(mnist::load_mnist(dir.str(), "t10k"), 3);
    }
    SUBCASE("mixed, and the plain file wins over the .gz") {
        write_file(dir.file("train-images-idx3-ubyte.gz"), deflate_bytes(train.images));
        write_file(dir.file("train-labels-idx1-ubyte"), train.labels);
        check_synthetic(mnist::load_mnist(dir.str(), "train"), 7);
        write_file(dir.file("train-images-idx3-ubyte"), test.images);  // 3 images: now the labels disagree
        check_error(error_of([&] { (void)mnist::load_mnist(dir.str(), "train"); }), errc::format,
                    dir.file("train-labels-idx1-ubyte") + ": 7 labels for 3 images in " + dir.file("train-images-idx3-ubyte"));
    }
}

TEST_CASE("load_mnist: missing and wrong files") {
    temp_dir dir;
    const auto good = synthetic(4);
    const std::string images = dir.file("train-images-idx3-ubyte"), labels = dir.file("train-labels-idx1-ubyte");
    const auto load = [&] { (void)mnist::load_mnist(dir.str(), "train"); };

    check_error(error_of(load), errc::io, "no file " + dir.str() + "/train-images-idx3-ubyte[.gz]");
    write_file(images, good.images);
    check_error(error_of(load), errc::io, "no file " + dir.str() + "/train-labels-idx1-ubyte[.gz]");
    check_error(error_of([&] { (void)mnist::load_mnist(dir.str() + "/nowhere", "t10k"); }), errc::io,
                "no file " + dir.str() + "/nowhere/t10k-images-idx3-ubyte[.gz]");
    check_error(error_of([&] { (void)mnist::load_mnist(dir.str(), "test"); }), errc::invalid_argument,
                "split 'test' is neither 'train' nor 't10k'");

    SUBCASE("a label of 10") {
        auto l = good.labels;
        l[8 + 2] = std::byte{10};
        write_file(labels, l);
        check_error(error_of(load), errc::format, labels + ": label 10 at index 2: labels must be 0..9");
    }
    SUBCASE("a label of 255, gzipped") {
        auto l = good.labels;
        l[8 + 3] = std::byte{255};
        write_file(labels + ".gz", deflate_bytes(l));
        check_error(error_of(load), errc::format, labels + ".gz: label 255 at index 3");
    }
    SUBCASE("images of 28x27") {
        write_file(labels, good.labels);
        write_file(images, idx_test::u8_file({4, 28, 27}, 4 * 28 * 27, [](std::size_t) { return 1; }));
        check_error(error_of(load), errc::format, images + ": images must be u8 with dims [n, 28, 28], the file has u8 [4, 28, 27]");
    }
    SUBCASE("images of i8") {
        write_file(labels, good.labels);
        auto im = good.images;
        im[2] = std::byte{0x09};
        write_file(images, im);
        check_error(error_of(load), errc::format, "the file has i8 [4, 28, 28]");
    }
    SUBCASE("flat images") {
        write_file(labels, good.labels);
        write_file(images, idx_test::u8_file({4 * 784}, 4 * 784, [](std::size_t) { return 1; }));
        check_error(error_of(load), errc::format, "the file has u8 [3136]");
    }
    SUBCASE("labels of two dims") {
        write_file(labels, idx_test::u8_file({4, 1}, 4, [](std::size_t) { return 1; }));
        check_error(error_of(load), errc::format, labels + ": labels must be u8 with dims [n], the file has u8 [4, 1]");
    }
    SUBCASE("a broken IDX file") {
        auto l = good.labels;
        l.pop_back();
        write_file(labels, l);
        check_error(error_of(load), errc::format, "idx file '" + labels + "': offset 8: truncated data: 4 elements of u8 need 4 bytes, only 3 present");
    }
    SUBCASE("a corrupt .gz") {
        auto gz = deflate_bytes(good.labels);
        gz[gz.size() / 2] ^= std::byte{0xff};
        gz[gz.size() - 5] ^= std::byte{0xff};  // and the CRC
        write_file(labels + ".gz", gz);
        check_error(error_of(load), errc::format, "gunzip '" + labels + ".gz': ");
    }
}
