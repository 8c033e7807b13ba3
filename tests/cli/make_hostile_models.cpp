// Writes the hostile models of tests/models/hostile_models.hpp into a folder, one
// <name>.gguf each, and a manifest (manifest.tsv: name, then the substrings its
// refusal must contain, tab-separated) for check_hostile_cli.py.
//   usage: make_hostile_models <folder>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>

#include "../models/hostile_models.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_hostile_models <folder>\n");
        return 2;
    }
    try {
        const std::filesystem::path dir = argv[1];
        std::filesystem::create_directories(dir);
        std::ofstream manifest(dir / "manifest.tsv");
        for (const hostile::model_case& c : hostile::model_cases()) {
            const auto bytes = hostile::build(c);
            std::ofstream f(dir / (c.name + ".gguf"), std::ios::binary);
            f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            manifest << c.name;
            for (const auto& e : c.expect) manifest << '\t' << e;
            manifest << '\n';
        }
        const auto base = hostile::build({"none", "", {}, {}, {}, {}});
        std::ofstream f(dir / "base.gguf", std::ios::binary);
        f.write(reinterpret_cast<const char*>(base.data()), static_cast<std::streamsize>(base.size()));
        if (!manifest || !f) {
            std::fprintf(stderr, "make_hostile_models: could not write into %s\n", argv[1]);
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_hostile_models: %s\n", e.what());
        return 1;
    }
    return 0;
}
