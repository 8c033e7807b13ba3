// train_mnist: trains ggml's two MNIST networks (a fully connected 784-500-10 net, or a
// small CNN) on Fashion-MNIST (or MNIST) with tessera's autodiff and AdamW, reports the
// test accuracy, and saves the weights as GGUF; --eval evaluates a saved model instead.
//
//   train_mnist --model fc|cnn [--data DIR] [--epochs N] [-t THREADS] [-o out.gguf]
//   train_mnist --eval model.gguf [--data DIR] [-t THREADS]
//
// DIR holds train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte, each optionally gzip-compressed (.gz); the default is where
// Debian's dataset-fashion-mnist puts them. One progress line per epoch goes to stderr; the
// last line on stdout is
//   test accuracy: 89.20% (loss 0.31), 10 epochs, 20.7 s
// Exit status: 0, 1 on a failure (or an accuracy under --min-accuracy), 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../common/cli.hpp"
#include "mnist_io.hpp"
#include "mnist_model.hpp"
#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"
#include "tessera/opt/all.hpp"

namespace {

using namespace tessera;

constexpr const char* usage_text =
    "usage: train_mnist --model fc|cnn [options]      train, test, save\n"
    "       train_mnist --eval model.gguf [options]   test a saved model\n"
    "  --data DIR            the IDX files (default /usr/share/datasets/fashion-mnist)\n"
    "  --epochs N            training epochs (default 10)\n"
    "  -t, --threads N       threads (default 1)\n"
    "  -o, --output FILE     where to save the trained weights (GGUF; default none)\n"
    "  --batch N             images per batch (default 100)\n"
    "  --cnn-channels C      the CNN's channels: C, then 2C (default 16; ggml's example: 8)\n"
    "  --lr X                AdamW learning rate (default: fc 0.001, cnn 0.002)\n"
    "  --schedule S          constant, or cosine: decay to lr/10 over the run (default cosine)\n"
    "  --seed N              initialisation and shuffling seed (default 1)\n"
    "  --val-split X         fraction of the training images kept for validation (default 0.05)\n"
    "  --train-subset N      train on the first N training images only\n"
    "  --test-subset N       test on the first N test images only\n"
    "  --min-accuracy X      exit 1 when the test accuracy is below X (0..1)\n"
    "  -h, --help            this text\n"
    "  --version             version, compiler and SIMD arch\n";

using cli::usage_error;

struct options {
    std::string model, eval, data = std::string(mnist::default_data_dir), output;
    std::optional<std::int64_t> epochs;
    int threads = 1;
    std::int64_t batch = 100, train_subset = 0, test_subset = 0, cnn_channels = 16;
    std::uint64_t seed = 1;
    std::optional<float> lr;
    bool cosine = true;
    double val_split = 0.05, min_accuracy = -1;
};

std::int64_t to_int(std::string_view opt, const std::string& v, std::int64_t lo, std::int64_t hi) { return cli::to_int(opt, v, lo, hi); }
double to_double(std::string_view opt, const std::string& v, double lo, double hi) { return cli::to_float(opt, v, lo, hi); }

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw usage_error(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::fputs(usage_text, stdout);
            std::exit(0);
        } else if (a == "--version") {
            cli::print_version_and_exit();
        } else if (a == "--model") {
            o.model = value();
            if (o.model != "fc" && o.model != "cnn") throw usage_error("--model: '" + o.model + "' is not fc or cnn");
        } else if (a == "--eval") {
            o.eval = value();
        } else if (a == "--data") {
            o.data = value();
        } else if (a == "--epochs") {
            o.epochs = to_int(a, value(), 1, 100000);
        } else if (a == "-t" || a == "--threads") {
            o.threads = static_cast<int>(to_int(a, value(), 1, 512));
        } else if (a == "-o" || a == "--output") {
            o.output = value();
        } else if (a == "--batch") {
            o.batch = to_int(a, value(), 1, 60000);
        } else if (a == "--cnn-channels") {
            o.cnn_channels = to_int(a, value(), 1, 256);
        } else if (a == "--lr") {
            o.lr = static_cast<float>(to_double(a, value(), 0.0, 10.0));
        } else if (a == "--schedule") {
            const std::string v = value();
            if (v != "constant" && v != "cosine") throw usage_error("--schedule: '" + v + "' is not constant or cosine");
            o.cosine = v == "cosine";
        } else if (a == "--seed") {
            o.seed = static_cast<std::uint64_t>(to_int(a, value(), 0, INT64_MAX));
        } else if (a == "--val-split") {
            o.val_split = to_double(a, value(), 0.0, 0.9);
        } else if (a == "--train-subset") {
            o.train_subset = to_int(a, value(), 1, INT64_MAX);
        } else if (a == "--test-subset") {
            o.test_subset = to_int(a, value(), 1, INT64_MAX);
        } else if (a == "--min-accuracy") {
            o.min_accuracy = to_double(a, value(), 0.0, 1.0);
        } else {
            if (a.size() > 1 && a[0] == '-') throw cli::unknown_option(a);
            throw usage_error("unexpected argument '" + std::string(a) + "'");
        }
    }
    if (o.model.empty() == o.eval.empty()) throw usage_error("give exactly one of --model fc|cnn and --eval FILE");
    if (!o.eval.empty() && !o.output.empty()) throw usage_error("-o is for training (--model); --eval writes no file");
    return o;
}

// The architecture a saved model was trained as (general.architecture mnist-fc / mnist-cnn).
std::string saved_arch(const gguf::file& f, const std::string& path) {
    const auto a = f.meta().find<std::string>("general.architecture");
    if (a == "mnist-fc") return "fc";
    if (a == "mnist-cnn") return "cnn";
    throw std::runtime_error(path + ": general.architecture is '" + a.value_or("(missing)") + "', not mnist-fc or mnist-cnn");
}

void load_weights(mnist::model& m, const gguf::file& f, const std::string& path) {
    for (auto& [name, t] : m.params) {
        const gguf::tensor_info* ti = f.find_tensor(name);
        if (!ti) throw std::runtime_error(path + ": no tensor '" + name + "'");
        if (ti->type != type_id::f32 || ti->ne != t->lay.ne)
            throw std::runtime_error(path + ": tensor '" + name + "' is " + std::string(type_name(ti->type)) + " " +
                                     layout::contiguous(ti->type, ti->ne).to_string() + ", the " + m.arch + " model needs f32 " +
                                     t->lay.to_string());
        std::memcpy(t->bytes(), ti->data, t->lay.nbytes());
    }
}

void save_weights(const mnist::model& m, const std::string& path) {
    gguf::writer w;
    w.set("general.architecture", std::string("mnist-") + m.arch);
    w.set("general.name", std::string("tessera train_mnist ") + m.arch);
    for (const auto& [name, t] : m.params) {
        const int nd = t->lay.n_dims();
        w.add_tensor(name, type_id::f32, std::span<const std::int64_t>(t->lay.ne.data(), static_cast<std::size_t>(std::max(nd, 1))),
                     std::span<const std::byte>(t->bytes(), t->lay.nbytes()));
    }
    cli::atomic_output out(path);  // a failure leaves no partial file and path as it was
    w.write_to_file(out.tmp_path());
    out.commit();
}

int run(const options& o, cli::state& st) {
    const auto t_start = std::chrono::steady_clock::now();
    std::optional<gguf::file> saved;
    std::string arch = o.model;
    if (!o.output.empty()) cli::check_output_folder("-o", o.output);  // before training, not after
    if (!o.eval.empty()) {
        st.file = o.eval;
        saved.emplace(gguf::file::open(o.eval));
        arch = saved_arch(*saved, o.eval);
        st.file.clear();
    }
    std::int64_t channels = o.cnn_channels;
    if (saved && arch == "cnn") {  // the saved kernel says how many channels it was trained with
        const gguf::tensor_info* k1 = saved->find_tensor("conv1.kernel");
        if (!k1 || k1->ne[3] < 1 || k1->ne[3] > 256) throw std::runtime_error(o.eval + ": no usable tensor 'conv1.kernel'");
        channels = k1->ne[3];
    }
    mnist::model m(arch, o.batch, channels);
    opt::trainer_options to;
    const float lr = o.lr.value_or(arch == "cnn" ? 2e-3f : 1e-3f);
    to.optimizer.lr = lr;
    if (o.cosine) to.optimizer.schedule = opt::cosine_decay(0.1);
    to.n_threads = o.threads;
    opt::trainer tr(m.ctx, graph::any_tensor(m.images), graph::any_tensor(m.logits), to);

    const mnist::mnist_split test = mnist::load_mnist(o.data, "t10k");
    const std::int64_t n_test = o.test_subset ? std::min(o.test_subset, test.n) : test.n;
    opt::dataset test_set = mnist::make_dataset(test.images, test.labels, n_test);
    std::int64_t epochs = 0;

    if (saved) {
        load_weights(m, *saved, o.eval);
        std::fprintf(stderr, "train_mnist: evaluating %s (%s) on %lld test images from %s\n", o.eval.c_str(), arch.c_str(),
                     static_cast<long long>(n_test), o.data.c_str());
    } else {
        const mnist::mnist_split train = mnist::load_mnist(o.data, "train");
        const std::int64_t n_train = o.train_subset ? std::min(o.train_subset, train.n) : train.n;
        opt::dataset train_set = mnist::make_dataset(train.images, train.labels, n_train);
        m.init(o.seed);
        epochs = o.epochs.value_or(10);
        std::fprintf(stderr, "train_mnist: %s, %lld training images (%.0f%% kept for validation), %lld test images from %s; "
                             "batch %lld, AdamW lr %g%s, %d thread%s\n",
                     arch == "fc" ? "fully connected 784-500-10" : "CNN (2 x conv 3x3 + max pool 2x2, dense)",
                     static_cast<long long>(n_train), 100 * o.val_split, static_cast<long long>(n_test), o.data.c_str(),
                     static_cast<long long>(o.batch), static_cast<double>(lr), o.cosine ? " (cosine decay to 1/10)" : "", o.threads, o.threads == 1 ? "" : "s");
        opt::fit_options fo;
        fo.epochs = epochs;
        fo.val_split = o.val_split;
        fo.seed = o.seed;
        opt::fit(tr, train_set, fo);
        if (!o.output.empty()) {
            st.file = o.output;
            save_weights(m, o.output);
            st.file.clear();
            std::fprintf(stderr, "train_mnist: saved the weights to %s\n", o.output.c_str());
        }
    }
    const opt::result r = opt::evaluate(tr, test_set);
    const auto [acc, acc_unc] = r.accuracy();
    const auto [loss, loss_unc] = r.loss();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    std::printf("test accuracy: %.2f%% (loss %.2f), %lld epochs, %.1f s\n", 100 * acc, loss, static_cast<long long>(epochs), secs);
    (void)acc_unc;
    (void)loss_unc;
    if (o.min_accuracy >= 0 && acc < o.min_accuracy) {
        std::fprintf(stderr, "train_mnist: test accuracy %.2f%% is below the required %.2f%%\n", 100 * acc, 100 * o.min_accuracy);
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return cli::run("train_mnist", "try a smaller --batch, --cnn-channels or fewer threads (-t)",
                    [&](cli::state& st) { return run(parse(argc, argv), st); });
}
