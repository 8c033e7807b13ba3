// Links the one-unit-per-header library; fails if meson found no headers.
#include <cstdio>

int main() {
    std::printf("%d public headers compiled alone\n", TESSERA_HEADER_COUNT);
    return TESSERA_HEADER_COUNT > 0 ? 0 : 1;
}
