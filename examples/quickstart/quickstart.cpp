// quickstart: what tessera found on this CPU, and a small computation through the
// run-time dispatched kernels.
#include <cstdio>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/tessera.hpp"

int main(int argc, char** argv) {
    using namespace tessera;
    return cli::run("quickstart", "", [&](cli::state&) {
        if (cli::help_only(argc, argv, "usage: quickstart\nPrints what tessera found on this CPU and runs a few kernels and a small graph.\n  -h, --help   this text\n  --version    version, compiler and SIMD arch\n"))
            return 0;
        std::fputs(simd::report().c_str(), stdout);

        // A dot product and an axpy on 1000 floats, with the arch chosen at run time.
        std::vector<float> x(1000), y(1000);
        for (std::size_t i = 0; i < x.size(); ++i) {
            x[i] = static_cast<float>(i) * 0.001f;
            y[i] = 1.0f - static_cast<float>(i) * 0.0005f;
        }
        const float d = simd::call<kernels::dot_f32>(x.data(), y.data(), x.size());
        simd::call<kernels::axpy_f32>(2.0f, x.data(), y.data(), y.size());
        std::printf("dot(x, y) = %.4f   y[999] after y += 2x: %.4f\n", static_cast<double>(d),
                    static_cast<double>(y[999]));

        // Round a row to f16 and back.
        std::vector<f16> h(x.size());
        simd::call<kernels::f32_to_f16>(x.data(), h.data(), x.size());
        std::vector<float> back(x.size());
        simd::call<kernels::f16_to_f32>(h.data(), back.data(), h.size());
        std::printf("x[123] = %.6f, as f16 = 0x%04x = %.6f\n", static_cast<double>(x[123]), h[123].bits,
                    static_cast<double>(back[123]));

        // A small graph: y = rms_norm(W x) with W quantized to q8_0, on 2 threads.
        graph::context ctx;
        auto w = graph::new_tensor<float, 2>(ctx, {64, 8}, "w");
        auto v = graph::new_tensor<float, 2>(ctx, {64, 1}, "x");
        std::vector<float> wv(64 * 8), xv(64);
        for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
        for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 5) - 2.0f;
        w.set(wv);
        v.set(xv);
        auto wq = graph::cast<quant::block_q8_0>(w);  // quantize the weights inside the graph
        auto r = graph::rms_norm(graph::mul_mat(wq, v), 1e-6f);
        backend::cpu::executor(2).compute(graph::build_forward(r));
        std::vector<float> out(8);
        r.get(out);
        std::printf("rms_norm(W_q8_0 x) =");
        for (float o : out) std::printf(" %.3f", static_cast<double>(o));
        std::printf("\n");
        return 0;
    });
}
