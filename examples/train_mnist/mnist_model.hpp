// The two networks of ggml's MNIST example, built with tessera's graph API, with ggml's
// tensor names (so the GGUF files name the same tensors):
//
//   fc:  784 -> 500 (relu) -> 10         fc1.weight [784, 500], fc1.bias [500], fc2.weight [500, 10], fc2.bias [10]
//   cnn: conv 3x3 1->C (pad 1) relu, max pool 2x2, conv 3x3 C->2C (pad 1) relu, max pool 2x2,
//        dense 7*7*2C -> 10              conv1.kernel [3, 3, 1, C], conv1.bias [1, 1, C], conv2.kernel [3, 3, C, 2C],
//                                        conv2.bias [1, 1, 2C], dense.weight [98C, 10], dense.bias [10]
//        (ggml's example has C = 8; the default here is 16, see docs/training.md)
//
// Images enter as f32 [784, B] (fc) or [28, 28, 1, B] (cnn), pixel values in [0, 1]; the
// output is f32 logits [10, B].
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tessera/graph/all.hpp"
#include "tessera/opt/dataset.hpp"

namespace mnist {

using namespace tessera;

inline constexpr std::int64_t n_pixels = 28 * 28;
inline constexpr std::int64_t n_outputs = 10;  // classes

struct model {
    std::string arch;  // "fc" or "cnn"
    std::int64_t batch;
    graph::context ctx{{.no_alloc = true}};
    std::vector<std::pair<std::string, graph::node*>> params;  // in file order
    graph::node* images = nullptr;
    graph::node* logits = nullptr;

    // cnn_channels: the first conv's output channels (the second has twice as many); ggml's
    // example uses 8.
    model(std::string a, std::int64_t b, std::int64_t cnn_channels = 16) : arch(std::move(a)), batch(b) {
        using namespace graph;
        if (batch < 1) fail(errc::invalid_argument, "mnist model: batch must be >= 1");
        auto param = [&](const char* name, std::array<std::int64_t, 4> ne) {
            any_tensor t = new_tensor(ctx, type_id::f32, ne, name);
            t.set_param();
            params.emplace_back(name, t.get());
            return t;
        };
        if (arch == "fc") {
            auto w1 = param("fc1.weight", {n_pixels, 500, 1, 1});
            auto b1 = param("fc1.bias", {500, 1, 1, 1});
            auto w2 = param("fc2.weight", {500, n_outputs, 1, 1});
            auto b2 = param("fc2.bias", {n_outputs, 1, 1, 1});
            any_tensor x = new_tensor(ctx, type_id::f32, {n_pixels, batch, 1, 1}, "images");
            any_tensor h = relu(add(mul_mat(w1, x), b1));
            logits = add(mul_mat(w2, h), b2).get();
            images = x.get();
        } else if (arch == "cnn") {
            const std::int64_t c1 = cnn_channels, c2 = 2 * cnn_channels;
            if (c1 < 1 || c1 > 256) fail(errc::invalid_argument, "mnist model: cnn channels must be 1..256");
            auto k1 = param("conv1.kernel", {3, 3, 1, c1});
            auto b1 = param("conv1.bias", {1, 1, c1, 1});
            auto k2 = param("conv2.kernel", {3, 3, c1, c2});
            auto b2 = param("conv2.bias", {1, 1, c2, 1});
            auto wd = param("dense.weight", {7 * 7 * c2, n_outputs, 1, 1});
            auto bd = param("dense.bias", {n_outputs, 1, 1, 1});
            any_tensor x = new_tensor(ctx, type_id::f32, {28, 28, 1, batch}, "images");
            const conv_params same{.s = {1, 1}, .p = {1, 1}, .d = {1, 1}};
            const pool_params pool{.op = pool_op::max, .k = {2, 2}, .s = {2, 2}, .p = {0, 0}};
            any_tensor h1 = pool_2d(relu(add(conv_2d(k1, x, same), b1)), pool);   // [14, 14, c1, B]
            any_tensor h2 = pool_2d(relu(add(conv_2d(k2, h1, same), b2)), pool);  // [7, 7, c2, B]
            any_tensor flat = reshape(h2, {7 * 7 * c2, batch, 1, 1});
            logits = add(mul_mat(wd, flat), bd).get();
            images = x.get();
        } else {
            fail(errc::invalid_argument, "mnist model: unknown architecture '" + arch + "' (fc or cnn)");
        }
        images->flags |= graph::flag_input;
        logits->name = "logits";
    }
    model(const model&) = delete;
    model& operator=(const model&) = delete;

    // Glorot-uniform weights (bound sqrt(6 / (fan_in + fan_out))), zero biases, drawn from seed.
    void init(std::uint64_t seed) {
        opt::rng64 r(seed);
        for (auto& [name, t] : params) {
            auto* p = reinterpret_cast<float*>(t->bytes());
            if (!p) fail(errc::invalid_argument, "mnist model: parameter " + name + " has no memory yet");
            const std::int64_t n = t->lay.nelements();
            if (name.ends_with(".bias")) {
                std::memset(p, 0, static_cast<std::size_t>(n) * 4);
                continue;
            }
            const auto& ne = t->lay.ne;
            // fan in / out: a matrix [in, out]; a kernel [kw, kh, in, out]
            const double fan_in = ne[2] > 1 || ne[3] > 1 ? static_cast<double>(ne[0] * ne[1] * ne[2]) : static_cast<double>(ne[0]);
            const double fan_out = ne[2] > 1 || ne[3] > 1 ? static_cast<double>(ne[0] * ne[1] * ne[3]) : static_cast<double>(ne[1]);
            const double bound = std::sqrt(6.0 / (fan_in + fan_out));
            for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>((2 * r.uniform() - 1) * bound);
        }
    }
};

// A dataset of n images (n * 784 floats) with one-hot labels.
inline opt::dataset make_dataset(const std::vector<float>& images, const std::vector<std::int32_t>& labels, std::int64_t n) {
    opt::dataset d(n_pixels, n_outputs, n);
    std::memcpy(d.data().data(), images.data(), static_cast<std::size_t>(n * n_pixels) * 4);
    for (std::int64_t i = 0; i < n; ++i) {
        const auto l = labels[static_cast<std::size_t>(i)];
        if (l < 0 || l >= n_outputs) fail(errc::format, "mnist: label " + std::to_string(l) + " of image " + std::to_string(i) + " is not 0..9");
        d.labels()[static_cast<std::size_t>(i * n_outputs + l)] = 1.0f;
    }
    return d;
}

}  // namespace mnist
