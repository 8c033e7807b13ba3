// A consumer of tessera as a subproject: dispatched kernels and core types.
#include <cmath>
#include <cstdio>
#include <vector>

#include "tessera/tessera.hpp"

int main() {
    using namespace tessera;
    std::vector<float> x(257, 0.5f), y(257, 2.0f);
    const float d = simd::call<kernels::dot_f32>(x.data(), y.data(), x.size());
    const bool ok = std::fabs(d - 257.0f) < 1e-3f && f16::from_float(1.5f).bits == 0x3e00 &&
                    type_name(type_id::q4_K) == "q4_K";
    std::printf("consumer: arch %s, dot = %.1f: %s\n", std::string(simd::name_of(simd::active_arch())).c_str(),
                static_cast<double>(d), ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
