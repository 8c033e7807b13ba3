// Writes the seed corpus of fuzz_vocab into a folder:
//   make_vocab_fuzz_seeds <out-dir> [vocabulary.gguf ...]
// - descriptions (mode 0) of the four small vocabularies of hostile_vocab.hpp, each with
//   a few texts, and of hostile variants of them (no unk, bad merges, bad types, ...);
// - each of those small vocabularies as a whole GGUF file (mode 2);
// - mode 1 inputs (fixed vocabularies, arbitrary text);
// - for every vocabulary file given: a description of a slice of it (its first 300
//   tokens, every 97th token after that, and the merges among them), since whole
//   vocabularies are megabytes and slow to load per input.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_vocab_body.hpp"

namespace {
namespace fs = std::filesystem;
using fuzz_vocab::description;

void put(const fs::path& p, const std::vector<std::uint8_t>& b) {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::uint8_t model_index(std::string_view m) {
    for (std::size_t i = 0; i < std::size(fuzz_vocab::models); ++i)
        if (fuzz_vocab::models[i] == m) return static_cast<std::uint8_t>(i);
    return 0;
}
std::uint8_t pre_index(std::string_view p) {
    for (std::size_t i = 0; i < std::size(fuzz_vocab::pres); ++i)
        if (fuzz_vocab::pres[i] == p) return static_cast<std::uint8_t>(i + 1);
    return 0;
}
std::uint8_t key_index(std::string_view k) {
    for (std::size_t i = 0; i < std::size(fuzz_vocab::special_keys); ++i)
        if (fuzz_vocab::special_keys[i] == k) return static_cast<std::uint8_t>(i);
    return 0;
}

// A description of (a slice of) a loaded vocabulary.
description describe(const tessera::text::vocab& v, const std::vector<std::string>& merges, std::size_t max_tokens) {
    namespace tt = tessera::text;
    description d;
    d.model = model_index(v.model());
    d.pre = pre_index(v.pre());
    std::vector<tt::token> keep;
    for (std::uint32_t i = 0; i < v.n_tokens(); ++i)
        if (i < 300 || i % 97 == 0) keep.push_back(static_cast<tt::token>(i));
    if (keep.size() > max_tokens) keep.resize(max_tokens);
    std::vector<int> new_id(v.n_tokens(), -1);
    for (std::size_t i = 0; i < keep.size(); ++i) {
        const auto& td = v.data(keep[i]);
        new_id[static_cast<std::size_t>(keep[i])] = static_cast<int>(i);
        d.tokens.push_back(td.text);
        const float s = td.score * 4.0f;
        d.scores.push_back(static_cast<std::int8_t>(s < -127 ? -127 : s > 127 ? 127 : s));
        const std::uint32_t a = td.attr;
        d.types.push_back(a & tt::attr::unknown ? 2 : a & tt::attr::control ? 3 : a & tt::attr::user_defined ? 4 : a & tt::attr::unused ? 5 : a & tt::attr::byte ? 6 : 1);
    }
    for (const auto& m : merges) {
        const std::size_t p = m.find(' ', 1);
        if (p == std::string::npos) continue;
        const tt::token a = v.find(std::string_view(m).substr(0, p)), b = v.find(std::string_view(m).substr(p + 1));
        if (a == tt::null_token || b == tt::null_token) continue;
        const int na = new_id[static_cast<std::size_t>(a)], nb = new_id[static_cast<std::size_t>(b)];
        if (na >= 0 && nb >= 0 && d.merges.size() < 2000) d.merges.emplace_back(static_cast<std::uint16_t>(na), static_cast<std::uint16_t>(nb));
    }
    auto special = [&](std::string_view k, tt::token id) {
        if (id != tt::null_token && new_id[static_cast<std::size_t>(id)] >= 0)
            d.specials.emplace_back(key_index(k), static_cast<std::uint16_t>(new_id[static_cast<std::size_t>(id)]));
    };
    special("bos", v.bos);
    special("eos", v.eos);
    special("unknown", v.unk);
    special("seperator", v.sep);
    special("padding", v.pad);
    d.flags = static_cast<std::uint16_t>((1u << 4) | (v.add_bos ? 1u << 5 : 0) | (1u << 6) | (v.add_eos ? 1u << 7 : 0) |
                                         (1u << 8) | (v.add_sep ? 1u << 9 : 0));
    return d;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: make_vocab_fuzz_seeds <out-dir> [vocabulary.gguf ...]\n");
        return 2;
    }
    const fs::path out = argv[1];
    fs::create_directories(out);
    const char* texts[] = {"Hello world", "ab ba  a\n", "<s>hello</s> [CLS] unable, caf\xC3\xA9", "\xE4\xB8\xAD\xFF z"};
    int n = 0;
    const char* names[] = {"spm", "bpe", "wpm", "ugm"};
    int k = 0;
    for (const auto& w : {hostile_vocab::spm(), hostile_vocab::bpe(), hostile_vocab::wpm(), hostile_vocab::ugm()}) {
        const auto bytes = w.to_bytes();
        std::vector<std::uint8_t> g{2};
        for (std::byte b : bytes) g.push_back(static_cast<std::uint8_t>(b));
        put(out / (std::string("gguf-") + names[k]), g);
        const auto v = hostile_vocab::load_vocab(bytes);
        const auto f = tessera::gguf::file::from_buffer(bytes);
        std::vector<std::string> merges;
        if (f.meta().contains("tokenizer.ggml.merges"))
            for (const auto& m : f.meta().get_string_array("tokenizer.ggml.merges")) merges.emplace_back(m);
        description d = describe(v, merges, 400);
        if (std::string_view(names[k]) == "ugm") d.flags |= (1u << 10) | (1u << 11);
        for (const char* t : texts) {
            d.text = t;
            put(out / ("desc-" + std::string(names[k]) + "-" + std::to_string(n++)), d.encode());
            std::vector<std::uint8_t> fixed{1, static_cast<std::uint8_t>(k)};
            fixed.insert(fixed.end(), t, t + std::char_traits<char>::length(t));
            put(out / ("fixed-" + std::to_string(n++)), fixed);
        }
        // hostile variants
        description bad = d;
        std::erase_if(bad.specials, [](const auto& kv) { return kv.first == key_index("unknown"); });
        bad.specials.emplace_back(key_index("unknown"), 0xFFFF);
        put(out / ("desc-" + std::string(names[k]) + "-nounk"), bad.encode());
        bad = d;
        if (!bad.types.empty()) bad.types[1] = 9;
        put(out / ("desc-" + std::string(names[k]) + "-badtype"), bad.encode());
        bad = d;
        bad.merges.emplace_back(0, 0xFFFE);
        put(out / ("desc-" + std::string(names[k]) + "-badmerge"), bad.encode());
        ++k;
    }
    for (int i = 2; i < argc; ++i) {
        try {
            const auto f = tessera::gguf::file::open(argv[i]);
            const auto v = tessera::text::vocab_from_gguf(f);
            std::vector<std::string> merges;
            if (f.meta().contains("tokenizer.ggml.merges"))
                for (const auto& m : f.meta().get_string_array("tokenizer.ggml.merges")) merges.emplace_back(m);
            description d = describe(v, merges, 1200);
            d.text = texts[i % 4];
            put(out / ("real-" + fs::path(argv[i]).filename().string()), d.encode());
        } catch (const tessera::error& e) {
            std::fprintf(stderr, "make_vocab_fuzz_seeds: %s: %s\n", argv[i], e.what());
        }
    }
    std::printf("%zu seeds in %s\n", static_cast<std::size_t>(std::distance(fs::directory_iterator(out), fs::directory_iterator{})),
                out.string().c_str());
    return 0;
}
