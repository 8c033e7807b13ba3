// Writes a small seed corpus for the GGUF fuzzer into the folder given as argv[1]:
// valid files from the writer (every value type, nested arrays, tensors of several
// types and alignments) and handcrafted broken ones. run_fuzz.sh adds the small files
// of ../shared/data at run time; nothing here copies that data.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf_test_util.hpp"
#include "tessera/gguf/writer.hpp"

using namespace tessera;
using gguf::value_type;

namespace {
void save(const std::filesystem::path& dir, const std::string& name, const std::vector<std::byte>& b) {
    const auto path = (dir / name).string();
    std::FILE* fp = std::fopen(path.c_str(), "wb");
    if (fp == nullptr || std::fwrite(b.data(), 1, b.size(), fp) != b.size()) {
        std::perror(path.c_str());
        std::exit(1);
    }
    std::fclose(fp);
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <output-dir>\n", argv[0]);
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);

    {  // every scalar and array type
        gguf::writer w;
        w.set<std::uint8_t>("u8", 1);
        w.set<std::int8_t>("i8", -1);
        w.set<std::uint16_t>("u16", 2);
        w.set<std::int16_t>("i16", -2);
        w.set<std::uint32_t>("u32", 3);
        w.set<std::int32_t>("i32", -3);
        w.set("f32", 0.5f);
        w.set("bool", true);
        w.set("str", "hello");
        w.set<std::uint64_t>("u64", 4);
        w.set<std::int64_t>("i64", -4);
        w.set("f64", 0.25);
        w.set_array("a.u32", std::vector<std::uint32_t>{1, 2, 3});
        w.set_array("a.f32", std::vector<float>{1.f, 2.f});
        w.set_array("a.bool", std::vector<bool>{true, false});
        w.set_array("a.str", std::vector<std::string>{"a", "bc", ""});
        gguf::array_builder in(value_type::i16), out(value_type::array);
        in.push<std::int16_t>(5).push<std::int16_t>(6);
        out.push(in).push(in);
        w.set_array("a.nested", out);
        save(dir, "kv-all-types.gguf", w.to_bytes());
    }
    for (std::uint32_t align : {32u, 1u, 64u}) {  // tensors of several types
        gguf::writer w;
        w.set("general.architecture", "llama");
        if (align != 32) w.set_alignment(align);
        const type_id types[] = {type_id::f32, type_id::f16, type_id::q4_0, type_id::q8_0, type_id::q4_K};
        int i = 0;
        for (type_id t : types) {
            const std::int64_t ne0 = block_size(t);
            std::vector<std::byte> d(static_cast<std::size_t>(type_size(t) * 2), std::byte{0x3c});
            w.add_tensor(std::string("t").append(std::to_string(i++)), t, {ne0, 2}, d);
        }
        save(dir, "tensors-align" + std::to_string(align) + ".gguf", w.to_bytes());
    }
    {  // the first part of a model in two parts (gguf/split.hpp: the split keys)
        gguf::writer w;
        w.set("general.architecture", "llama");
        w.set<std::uint16_t>("split.no", 0);
        w.set<std::uint16_t>("split.count", 2);
        w.set<std::int32_t>("split.tensors.count", 2);
        std::vector<std::byte> d(16, std::byte{0x3c});
        w.add_tensor("t0", type_id::f32, {4}, d);
        save(dir, "split-part1.gguf", w.to_bytes());
    }
    {  // handcrafted: empty, and a few broken headers / infos
        gguf_test::raw r;
        r.header(0, 0);
        save(dir, "empty.gguf", r.b);
        gguf_test::raw v2;
        v2.header(1, 0, 2).tensor("w", {2, 3}, 0, 0).pad(32).zeros(32);
        save(dir, "v2-tensor.gguf", v2.b);
        gguf_test::raw bad_off;
        bad_off.header(2, 0).tensor("a", {2}, 0, 0).tensor("b", {2}, 0, 8).pad(32).zeros(64);
        save(dir, "bad-offset.gguf", bad_off.b);
        gguf_test::raw bad_align;
        bad_align.header(0, 1).str("general.alignment").u32(4).u32(13);
        save(dir, "bad-alignment.gguf", bad_align.b);
        gguf_test::raw dims;
        dims.header(1, 0).str("t").u32(5).i64(1).i64(1).i64(1).i64(1).i64(1).i32(0).u64(0);
        save(dir, "bad-dims.gguf", dims.b);
    }
    std::printf("seeds written to %s\n", dir.string().c_str());
    return 0;
}
