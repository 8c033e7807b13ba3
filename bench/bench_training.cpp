// Training steps of ggml's two MNIST networks (examples/train_mnist/mnist_model.hpp) through
// opt::trainer, per image, at 1 and 2 threads, beside the forward pass alone, so the cost
// of the backward pass and the AdamW step shows as the ratio of the two rows
// ("step_over_forward" on the step rows, measured in the same process). GFLOP/s counts
// the matrix products (mul_mat, out_prod: 2 K M N each) of the nodes that ran, against
// the f32 FMA peak measured in the same run (fma_peak, ratio).
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "machine.hpp"
#include "mnist_model.hpp"
#include "tessera/opt/all.hpp"

namespace {
using namespace tessera;

// 2 K M N per mul_mat / out_prod node among the first n nodes.
double product_flops(const graph::cgraph& g, std::size_t n) {
    double f = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const graph::node* x = g.nodes()[i];
        if (x->op == graph::op_kind::mul_mat)
            f += 2.0 * static_cast<double>(x->src[0]->lay.ne[0]) * static_cast<double>(x->lay.nelements());
        else if (x->op == graph::op_kind::out_prod)
            f += 2.0 * static_cast<double>(x->src[0]->lay.ne[1]) * static_cast<double>(x->lay.nelements());
    }
    return f;
}

std::map<std::pair<std::string, int>, double>& forward_us() {
    static std::map<std::pair<std::string, int>, double> m;
    return m;
}

void bm(benchmark::State& st, const char* arch, bool step) {
    const int threads = static_cast<int>(st.range(0));
    const std::int64_t batch = 100;
    mnist::model m(arch, batch);
    opt::trainer_options to;
    to.n_threads = threads;
    opt::trainer tr(m.ctx, graph::any_tensor(m.images), graph::any_tensor(m.logits), to);
    m.init(1);
    opt::dataset d(mnist::n_pixels, mnist::n_outputs, batch);
    opt::rng64 r(5);
    for (float& v : d.data()) v = static_cast<float>(r.uniform());
    for (std::int64_t i = 0; i < batch; ++i) d.label(i)[static_cast<std::size_t>(i % mnist::n_outputs)] = 1;
    d.get_batch(tr.inputs(), tr.labels(), 0);
    if (step) tr.step();
    else tr.forward();
    const auto t0 = std::chrono::steady_clock::now();
    for (auto _ : st) {
        if (step) tr.step();
        else tr.forward();
    }
    const double n = static_cast<double>(st.iterations());
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / (n * static_cast<double>(batch));
    auto& fwd = forward_us()[{arch, threads}];
    if (!step) fwd = us;
    else if (fwd > 0) st.counters["step_over_forward"] = us / fwd;
    const std::size_t nodes = step ? tr.graph().nodes().size() : static_cast<std::size_t>(tr.n_forward_nodes());
    const double flops = product_flops(tr.graph(), nodes) * n;
    st.counters["images/s"] = benchmark::Counter(static_cast<double>(batch) * n, benchmark::Counter::kIsRate);
    st.counters["us/image"] = benchmark::Counter(static_cast<double>(batch) * n, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
    st.counters["fma_peak"] = tessera_bench::fma_peak_gflops(threads);
    st.SetLabel(std::string(arch) + (step ? " forward+backward+AdamW" : " forward"));
}

void bm_forward(benchmark::State& st, const char* arch) { bm(st, arch, false); }
void bm_step(benchmark::State& st, const char* arch) { bm(st, arch, true); }

}  // namespace

BENCHMARK_CAPTURE(bm_forward, fc, "fc")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_step, fc, "fc")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_forward, cnn, "cnn")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_step, cnn, "cnn")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
