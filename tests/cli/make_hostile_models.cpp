// Writes the hostile models of tests/models/hostile_models.hpp into a folder, one
// <name>.gguf each, and a manifest (manifest.tsv: name, then the substrings its
// refusal must contain, tab-separated) for check_hostile_cli.py; then the hostile
// vocabularies of hostile_vocab_cases.hpp, each as <name>.gguf (the base model carrying
// that vocabulary instead of its own) and <name>.vocab.gguf (the vocabulary alone),
// listed in vocab_manifest.tsv.
//   usage: make_hostile_models <folder>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../models/hostile_models.hpp"
#include "hostile_vocab_cases.hpp"

namespace {
// Writes bytes to path; throws when the file cannot be written.
void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw std::runtime_error("could not write " + path.string());
}

// Writes a manifest line: the name, then the expected substrings, tab-separated.
void manifest_line(std::ofstream& m, const std::string& name, const std::vector<std::string>& expect) {
    m << name;
    for (const auto& e : expect) m << '\t' << e;
    m << '\n';
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_hostile_models <folder>\n");
        return 2;
    }
    using namespace tessera;
    try {
        const std::filesystem::path dir = argv[1];
        std::filesystem::create_directories(dir);
        std::ofstream manifest(dir / "manifest.tsv");
        for (const hostile::model_case& c : hostile::model_cases()) {
            write_bytes(dir / (c.name + ".gguf"), hostile::build(c));
            manifest_line(manifest, c.name, c.expect);
        }
        // the base model's tokenizer.* keys, which a hostile vocabulary replaces
        const auto base = hostile::build({"none", "", {}, {}, {}, {}});
        std::vector<std::string> base_vocab_keys;
        const gguf::file base_file = gguf::file::from_buffer(base);
        for (const auto& e : base_file.meta())
            if (e.key.starts_with("tokenizer.")) base_vocab_keys.emplace_back(e.key);
        std::ofstream vocab_manifest(dir / "vocab_manifest.tsv");
        for (const hostile::vocab_case& c : hostile::vocab_cases()) {
            const auto vbytes = c.make().to_bytes();
            write_bytes(dir / (c.name + ".vocab.gguf"), vbytes);
            const gguf::file voc = gguf::file::from_buffer(vbytes);
            const hostile::model_case in_model{c.name, "", {}, [&](gguf::writer& w) {
                                                  for (const auto& k : base_vocab_keys) w.remove(k);
                                                  for (const auto& e : voc.meta())
                                                      if (e.key.starts_with("tokenizer.")) w.set_value(e.key, e.val);
                                              }, {}, {}};
            write_bytes(dir / (c.name + ".gguf"), hostile::build(in_model));
            manifest_line(vocab_manifest, c.name, c.expect);
        }
        write_bytes(dir / "base.gguf", base);
        if (!manifest || !vocab_manifest) {
            std::fprintf(stderr, "make_hostile_models: could not write the manifests into %s\n", argv[1]);
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_hostile_models: %s\n", e.what());
        return 1;
    }
    return 0;
}
