// The real Fashion-MNIST through load_mnist: 60000 training and 10000 test images, each
// class 6000 and 1000 times, the first labels and the mean pixel of the published files.
// The folder is TESSERA_MNIST_DIR, else /usr/share/datasets/fashion-mnist (Debian's
// dataset-fashion-mnist, which scripts/install-deps.sh installs). When one of its four
// files is missing this prints SKIP and exits 77, Meson's "skipped".
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "mnist_io.hpp"

namespace {

std::string data_dir() {
    const char* env = std::getenv("TESSERA_MNIST_DIR");
    return env && *env ? std::string(env) : std::string(mnist::default_data_dir);
}

bool has(const std::string& dir, const std::string& name) {
    std::error_code ec;
    return std::filesystem::is_regular_file(dir + "/" + name, ec) || std::filesystem::is_regular_file(dir + "/" + name + ".gz", ec);
}

void check_split(const mnist::mnist_split& s, std::int64_t n, std::array<int, 4> first_labels, double mean_pixel,
                 double first_image_sum) {
    REQUIRE(s.n == n);
    REQUIRE(s.images.size() == static_cast<std::size_t>(n) * 784);
    REQUIRE(s.labels.size() == static_cast<std::size_t>(n));
    std::array<std::int64_t, 10> per_class{};
    for (std::int32_t l : s.labels) {
        REQUIRE((l >= 0 && l < 10));
        ++per_class[static_cast<std::size_t>(l)];
    }
    for (std::size_t c = 0; c < 10; ++c) {
        CAPTURE(c);
        CHECK(per_class[c] == n / 10);
    }
    for (std::size_t i = 0; i < first_labels.size(); ++i) CHECK(s.labels[i] == first_labels[i]);
    double sum = 0, first = 0;
    float lo = 1, hi = 0;
    for (std::size_t i = 0; i < s.images.size(); ++i) {
        const float v = s.images[i];
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum += v;
        if (i < 784) first += v;
    }
    CHECK(lo == 0.0f);
    CHECK(hi == 1.0f);
    CHECK(sum / static_cast<double>(s.images.size()) == doctest::Approx(mean_pixel).epsilon(1e-4));
    CHECK(first * 255.0 == doctest::Approx(first_image_sum).epsilon(1e-6));
}

}  // namespace

TEST_CASE("fashion-mnist: train split") {
    // Fashion-MNIST's published training mean is 0.2860; label 9 is "ankle boot".
    check_split(mnist::load_mnist(data_dir(), "train"), 60000, {9, 0, 0, 3}, 0.2860406, 76247);
}

TEST_CASE("fashion-mnist: t10k split") {
    check_split(mnist::load_mnist(data_dir(), "t10k"), 10000, {9, 2, 1, 1}, 0.2868493, 33456);
}

int main(int argc, char** argv) {
    const std::string dir = data_dir();
    for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
        if (!has(dir, name)) {
            std::printf("SKIP: no %s/%s[.gz] (install Debian's dataset-fashion-mnist, or set TESSERA_MNIST_DIR)\n", dir.c_str(), name);
            return 77;
        }
    }
    std::printf("Fashion-MNIST from %s\n", dir.c_str());
    doctest::Context ctx;
    ctx.applyCommandLine(argc, argv);
    return ctx.run();
}
