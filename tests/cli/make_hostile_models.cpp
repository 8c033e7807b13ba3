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

#include "../models/hostile_models.hpp"
#include "hostile_vocab_cases.hpp"

namespace {
// The tokenizer.* keys of the base model (the ones a hostile vocabulary replaces).
std::vector<std::string> w_keys(const tessera::gguf::writer&) {
    const auto base = tessera::models::random_llama(hostile::base_config()).to_bytes();
    const tessera::gguf::file f = tessera::gguf::file::from_buffer(base);
    std::vector<std::string> keys;
    for (const auto& e : f.meta())
        if (e.key.starts_with("tokenizer.")) keys.emplace_back(e.key);
    return keys;
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
            const auto bytes = hostile::build(c);
            std::ofstream f(dir / (c.name + ".gguf"), std::ios::binary);
            f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            manifest << c.name;
            for (const auto& e : c.expect) manifest << '\t' << e;
            manifest << '\n';
        }
        std::ofstream vocab_manifest(dir / "vocab_manifest.tsv");
        for (const hostile::vocab_case& c : hostile::vocab_cases()) {
            const auto vbytes = c.make().to_bytes();
            std::ofstream vf(dir / (c.name + ".vocab.gguf"), std::ios::binary);
            vf.write(reinterpret_cast<const char*>(vbytes.data()), static_cast<std::streamsize>(vbytes.size()));
            const gguf::file voc = gguf::file::from_buffer(vbytes);
            const hostile::model_case in_model{c.name, "", {}, [&](gguf::writer& w) {
                                                  std::vector<std::string> drop;
                                                  for (const auto& e : w_keys(w)) drop.push_back(e);
                                                  for (const auto& k : drop) w.remove(k);
                                                  for (const auto& e : voc.meta())
                                                      if (e.key.starts_with("tokenizer.")) w.set_value(e.key, e.val);
                                              }, {}, {}};
            const auto mbytes = hostile::build(in_model);
            std::ofstream mf(dir / (c.name + ".gguf"), std::ios::binary);
            mf.write(reinterpret_cast<const char*>(mbytes.data()), static_cast<std::streamsize>(mbytes.size()));
            vocab_manifest << c.name;
            for (const auto& e : c.expect) vocab_manifest << '\t' << e;
            vocab_manifest << '\n';
        }
        const auto base = hostile::build({"none", "", {}, {}, {}, {}});
        std::ofstream f(dir / "base.gguf", std::ios::binary);
        f.write(reinterpret_cast<const char*>(base.data()), static_cast<std::streamsize>(base.size()));
        if (!manifest || !vocab_manifest || !f) {
            std::fprintf(stderr, "make_hostile_models: could not write into %s\n", argv[1]);
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_hostile_models: %s\n", e.what());
        return 1;
    }
    return 0;
}
