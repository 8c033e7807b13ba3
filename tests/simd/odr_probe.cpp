// Links every arch unit into one binary and checks each kernel path against the
// scalar reference, computed here in double. Exit code 0 only if all paths agree.
#include <cmath>
#include <cstdio>
#include <vector>

#include "tessera/kernels/all.hpp"

using namespace tessera;

int main() {
    const std::size_t n = 1000;
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = std::sin(static_cast<float>(i)) * 0.5f;
        y[i] = std::cos(static_cast<float>(i) * 0.3f);
    }
    double ref = 0;
    for (std::size_t i = 0; i < n; ++i) ref += static_cast<double>(x[i]) * y[i];
    int bad = 0;
    try {
        std::printf("active arch: %s\n", std::string(simd::name_of(simd::active_arch())).c_str());
        for (auto a : simd::available_archs()) {
            const float d = simd::kernel_for<kernels::dot_f32>(a)(x.data(), y.data(), n);
            const bool ok = std::fabs(d - ref) < 1e-4;
            std::printf("%-11s dot=%.7f ref=%.7f %s\n", std::string(simd::name_of(a)).c_str(), static_cast<double>(d),
                        ref, ok ? "ok" : "MISMATCH");
            bad += !ok;
        }
        const float d = simd::call<kernels::dot_f32>(x.data(), y.data(), n);
        bad += !(std::fabs(d - ref) < 1e-4);
    } catch (const error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return bad ? 1 : 0;
}
