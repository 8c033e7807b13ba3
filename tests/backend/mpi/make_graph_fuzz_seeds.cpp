// Writes the MPI graph decoder fuzzer's seeds (graph_fuzz_seeds.hpp) into a folder.
//   usage: graph_fuzz_seeds <folder>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "graph_fuzz_seeds.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <folder>\n", argv[0]);
        return 2;
    }
    try {
        std::filesystem::create_directories(argv[1]);
        const auto seeds = graph_fuzz::make_seeds();
        for (const auto& s : seeds) {
            std::ofstream f(std::filesystem::path(argv[1]) / s.name, std::ios::binary);
            f.write(reinterpret_cast<const char*>(s.bytes.data()), static_cast<std::streamsize>(s.bytes.size()));
            if (!f) {
                std::fprintf(stderr, "graph_fuzz_seeds: cannot write %s\n", s.name.c_str());
                return 1;
            }
        }
        std::printf("graph_fuzz_seeds: %zu seeds in %s\n", seeds.size(), argv[1]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graph_fuzz_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
