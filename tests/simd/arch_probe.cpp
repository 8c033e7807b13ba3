// Prints the dispatch report; exits 1 with the error when TESSERA_ARCH is refused.
#include <cstdio>

#include "tessera/simd/dispatch.hpp"

int main() {
    try {
        std::fputs(tessera::simd::report().c_str(), stdout);
        return 0;
    } catch (const tessera::error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
