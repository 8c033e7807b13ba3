// Writes the model fuzzer's seeds (fuzz_model_body.hpp) into a folder.
//   usage: model_fuzz_seeds <folder>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>

#include "fuzz_model_body.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: model_fuzz_seeds <folder>\n");
        return 2;
    }
    try {
        std::filesystem::create_directories(argv[1]);
        for (const auto& s : model_fuzz::seeds()) {
            std::ofstream f(std::filesystem::path(argv[1]) / (s.name + ".gguf"), std::ios::binary);
            f.write(reinterpret_cast<const char*>(s.bytes.data()), static_cast<std::streamsize>(s.bytes.size()));
            if (!f) {
                std::fprintf(stderr, "model_fuzz_seeds: could not write %s\n", s.name.c_str());
                return 1;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "model_fuzz_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
