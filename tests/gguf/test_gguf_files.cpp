// The real files in ../shared/data: each valid one parses with the metadata and tensor
// tables its README describes; the broken ones are rejected with clear errors; and a
// file written by llama.cpp's tools, re-written by tessera's writer, is byte-identical.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "../shared_data.hpp"
#include "gguf_test_util.hpp"
#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"

using namespace tessera;
namespace fs = std::filesystem;

// Every case here reads ../shared/data: DATA_TEST_CASE (tests/shared_data.hpp) skips it
// when the files are missing.
#define REQUIRE_SHARED_DATA(dir) const std::optional<fs::path> dir{fs::path(test_data::root())}

namespace {
// Every tensor lies inside the file, at its padded contiguous offset.
void check_layout(const gguf::file& f) {
    std::uint64_t off = 0;
    for (const auto& t : f.tensors()) {
        CAPTURE(t.name);
        CHECK(t.offset == off);
        CHECK(t.data == f.bytes().data() + f.data_offset() + t.offset);
        CHECK(t.data + t.size_bytes <= f.bytes().data() + f.bytes().size());
        CHECK(t.size_bytes == static_cast<std::uint64_t>(row_size(t.type, t.ne[0]) * t.ne[1] * t.ne[2] * t.ne[3]));
        off += gguf::pad_to(t.size_bytes, f.alignment());
    }
    CHECK(f.data_offset() % f.alignment() == 0);
}
}  // namespace

DATA_TEST_CASE("gguf/: the v2 f32 and v3 q4_0 single-tensor files", "gguf/gguf-v2-f32.bin", "gguf/gguf-v3-q4-0.bin") {
    REQUIRE_SHARED_DATA(data);
    {
        const auto f = gguf::file::open((*data / "gguf" / "gguf-v2-f32.bin").string());
        CHECK(f.version() == 2);
        CHECK(f.meta().empty());
        REQUIRE(f.tensors().size() == 1);
        const auto& t = f.tensors()[0];
        CHECK(t.name == "dense.weight");
        CHECK(t.type == type_id::f32);
        CHECK(t.n_dims == 1);
        CHECK(t.ne == std::array<std::int64_t, 4>{2, 1, 1, 1});
        CHECK(t.size_bytes == 8);
        CHECK(f.data_offset() == 96);
        CHECK(std::string_view(reinterpret_cast<const char*>(t.data), 8) == "ABCDEFGH");
    }
    {
        const auto f = gguf::file::open((*data / "gguf" / "gguf-v3-q4-0.bin").string());
        CHECK(f.version() == 3);
        REQUIRE(f.tensors().size() == 1);
        const auto& t = f.tensors()[0];
        CHECK(t.name == "quant.weight");
        CHECK(t.type == type_id::q4_0);
        CHECK(t.n_elements() == 32);
        CHECK(t.size_bytes == 18);
        for (int i = 0; i < 18; ++i) CHECK(static_cast<int>(t.data[i]) == i);
        CHECK(f.find_tensor("quant.weight") == &t);
    }
}

DATA_TEST_CASE("models/stories260K.gguf: 48 f32 tensors and llama metadata", "models/stories260K.gguf") {
    REQUIRE_SHARED_DATA(data);
    const auto f = gguf::file::open((*data / "models" / "stories260K.gguf").string());
    const auto& m = f.meta();
    CHECK(f.version() == 3);
    CHECK(m.get<std::string_view>("general.architecture") == "llama");
    CHECK(m.get<std::uint32_t>("llama.embedding_length") == 64);
    CHECK(m.get<std::uint32_t>("llama.block_count") == 5);
    CHECK(m.get<std::uint32_t>("llama.attention.head_count") == 8);
    CHECK(m.get<std::uint32_t>("llama.attention.head_count_kv") == 4);
    CHECK(m.get<std::uint32_t>("llama.feed_forward_length") == 172);
    CHECK(m.get<float>("llama.attention.layer_norm_rms_epsilon") == 1e-5f);
    CHECK(m.get<std::string_view>("tokenizer.ggml.model") == "llama");
    CHECK(m.array_size("tokenizer.ggml.tokens") == 512);
    CHECK(m.get_string_array("tokenizer.ggml.tokens")[1] == "<s>");
    CHECK(m.get_array<float>("tokenizer.ggml.scores").size() == 512);
    CHECK(m.get_array<std::int32_t>("tokenizer.ggml.token_type")[3] == 6);  // <0x00> is a byte token
    CHECK(m.get<std::uint32_t>("tokenizer.ggml.bos_token_id") == 1);
    REQUIRE(f.tensors().size() == 48);
    for (const auto& t : f.tensors()) CHECK(t.type == type_id::f32);
    const auto& emb = f.tensor("token_embd.weight");
    CHECK(emb.ne == std::array<std::int64_t, 4>{64, 512, 1, 1});
    CHECK(f.tensor("blk.4.ffn_down.weight").ne[0] == 172);
    CHECK(f.tensor("blk.0.attn_k.weight").ne[1] == 32);
    CHECK(f.tensor("output_norm.weight").n_dims == 1);
    check_layout(f);
}

DATA_TEST_CASE("models/llama-2-tiny-random.gguf: 9 f16 and 3 f32 tensors, full llama vocabulary", "models/llama-2-tiny-random.gguf") {
    REQUIRE_SHARED_DATA(data);
    const auto f = gguf::file::open((*data / "models" / "llama-2-tiny-random.gguf").string());
    CHECK(f.meta().get<std::uint32_t>("llama.embedding_length") == 8);
    CHECK(f.meta().array_size("tokenizer.ggml.tokens") == 32000);
    int f16 = 0, f32 = 0, other = 0;
    for (const auto& t : f.tensors()) {
        if (t.type == type_id::f16) ++f16;
        else if (t.type == type_id::f32) ++f32;
        else ++other;
    }
    CHECK(f16 == 9);
    CHECK(f32 == 3);
    CHECK(other == 0);
    check_layout(f);
}

DATA_TEST_CASE("models-quantized/: every stories260K conversion loads with its tensor types", "models/stories260K.gguf", "models-quantized") {
    REQUIRE_SHARED_DATA(data);
    // Tensor type counts of llama-quantize's output (64- and 172-wide rows never fit
    // 256-blocks, so the K mixtures fall back to 32-block and float types).
    using counts = std::map<type_id, int>;
    const std::map<std::string, counts> expected = {
        {"f16", {{type_id::f16, 37}, {type_id::f32, 11}}},
        {"q8_0", {{type_id::f32, 16}, {type_id::q8_0, 32}}},
        {"q4_0", {{type_id::f32, 16}, {type_id::q4_0, 31}, {type_id::q8_0, 1}}},
        {"q4_1", {{type_id::f32, 16}, {type_id::q4_1, 31}, {type_id::q8_0, 1}}},
        {"q5_0", {{type_id::f32, 16}, {type_id::q5_0, 31}, {type_id::q8_0, 1}}},
        {"q5_1", {{type_id::f32, 16}, {type_id::q5_1, 31}, {type_id::q8_0, 1}}},
        {"q4_K_M", {{type_id::f16, 5}, {type_id::f32, 11}, {type_id::q5_0, 29}, {type_id::q8_0, 3}}},
        {"q6_K", {{type_id::f16, 5}, {type_id::f32, 11}, {type_id::q8_0, 32}}},
    };
    for (const auto& kv : expected) {  // no structured binding: clang 14 cannot capture one
        const std::string& suffix = kv.first;
        const counts& want = kv.second;
        CAPTURE(suffix);
        const auto f = gguf::file::open((*data / "models-quantized" / ("stories260K-" + suffix + ".gguf")).string());
        REQUIRE(f.tensors().size() == 48);
        CHECK(f.meta().get<std::string_view>("general.architecture") == "llama");
        counts got;
        for (const auto& t : f.tensors()) ++got[t.type];
        CHECK(got == want);
        // ffn_down rows are 172 wide: never a 32- or 256-block type.
        for (int b = 0; b < 5; ++b) {
            const auto& t = f.tensor("blk." + std::to_string(b) + ".ffn_down.weight");
            CHECK(block_size(t.type) == 1);
        }
        if (suffix != "f16") CHECK(f.meta().get<std::uint32_t>("general.quantization_version") == 2);
        check_layout(f);
    }
}

DATA_TEST_CASE("vocab/ and vocab-extra/: tokenizer metadata of every vocabulary", "vocab", "vocab-extra") {
    REQUIRE_SHARED_DATA(data);
    struct v { const char* file; const char* model; std::size_t n_tokens; std::size_t n_merges; };
    const v vocabs[] = {
        {"vocab/ggml-vocab-llama-spm.gguf", "llama", 32000, 0},
        {"vocab/ggml-vocab-gpt-2.gguf", "gpt2", 50257, 50000},
        {"vocab/ggml-vocab-bert-bge.gguf", "bert", 30522, 0},
    };
    for (const auto& e : vocabs) {
        CAPTURE(e.file);
        const auto f = gguf::file::open((*data / e.file).string());
        const auto& m = f.meta();
        CHECK(f.tensors().empty());
        CHECK(m.get<std::string_view>("tokenizer.ggml.model") == e.model);
        CHECK(m.get_string_array("tokenizer.ggml.tokens").size() == e.n_tokens);
        CHECK(m.get_array<std::int32_t>("tokenizer.ggml.token_type").size() == e.n_tokens);
        if (e.n_merges) CHECK(m.get_string_array("tokenizer.ggml.merges").size() == e.n_merges);
        else CHECK_FALSE(m.contains("tokenizer.ggml.merges"));
    }
    {
        const auto f = gguf::file::open((*data / "vocab/ggml-vocab-gpt-2.gguf").string());
        CHECK(f.meta().get<std::string_view>("tokenizer.ggml.pre") == "gpt-2");
        CHECK(f.meta().get_string_array("tokenizer.ggml.merges")[0] == "\xc4\xa0 t");  // "Ġ t"
        CHECK(f.meta().get<std::uint32_t>("tokenizer.ggml.bos_token_id") == 50256);
    }
    {
        const auto f = gguf::file::open((*data / "vocab/ggml-vocab-llama-spm.gguf").string());
        CHECK(f.meta().get<bool>("tokenizer.ggml.add_bos_token"));
        CHECK_FALSE(f.meta().get<bool>("tokenizer.ggml.add_eos_token"));
    }
    const std::map<std::string, std::string> extra = {
        {"baichuan", "llama"}, {"deepseek-coder", "gpt2"}, {"deepseek-llm", "gpt2"}, {"falcon", "gpt2"},
        {"gpt-neox", "gpt2"},  {"mpt", "gpt2"},            {"phi-3", "llama"},       {"refact", "gpt2"},
        {"starcoder", "gpt2"},
    };
    for (const auto& kv : extra) {
        const std::string& name = kv.first;
        const std::string& model = kv.second;
        CAPTURE(name);
        const auto f = gguf::file::open((*data / "vocab-extra" / ("ggml-vocab-" + name + ".gguf")).string());
        CHECK(f.meta().get<std::string_view>("tokenizer.ggml.model") == model);
        CHECK(f.meta().array_size("tokenizer.ggml.tokens") > 1000);
    }
}

DATA_TEST_CASE("gguf-bad/: every broken file is rejected with a clear format error", "gguf-bad") {
    REQUIRE_SHARED_DATA(data);
    int n = 0;
    for (const auto& entry : fs::directory_iterator(*data / "gguf-bad")) {
        const std::string path = entry.path().string();
        CAPTURE(path);
        ++n;
        try {
            (void)gguf::file::open(path);
            FAIL("accepted a broken file");
        } catch (const error& e) {
            const std::string msg = e.what();
            CAPTURE(msg);
            CHECK(e.code() == errc::format);
            CHECK(msg.find("gguf file '" + path + "': offset ") == 0);
            const std::string name = entry.path().filename().string();
            if (name == "gguf-unknown-type.bin")
                CHECK(msg.find("offset 57: tensor 'future.weight' has unknown ggml type id 43") != std::string::npos);
            if (name == "gguf-unsupported-version.bin")
                CHECK(msg.find("offset 4: unsupported GGUF version 4") != std::string::npos);
        }
    }
    CHECK(n == 14);
}

DATA_TEST_CASE("re-writing llama.cpp's files with tessera's writer reproduces them byte for byte", "models/stories260K.gguf", "models/llama-2-tiny-random.gguf", "models-quantized/stories260K-q4_K_M.gguf", "vocab/ggml-vocab-gpt-2.gguf", "gguf/gguf-v3-q4-0.bin") {
    REQUIRE_SHARED_DATA(data);
    const char* files[] = {"models/stories260K.gguf", "models/llama-2-tiny-random.gguf",
                           "models-quantized/stories260K-q4_K_M.gguf", "vocab/ggml-vocab-gpt-2.gguf",
                           "gguf/gguf-v3-q4-0.bin"};
    for (const char* name : files) {
        CAPTURE(name);
        const auto f = gguf::file::open((*data / name).string());
        gguf::writer w;
        w.copy_metadata(f.meta());
        for (const auto& t : f.tensors()) w.add_tensor_view(t);
        const auto out = w.to_bytes();
        // gguf-py does not pad a file without tensors after its metadata; ggml's writer
        // (and tessera's) always pads the data section start, so allow trailing zeros.
        REQUIRE(out.size() >= f.bytes().size());
        CHECK(out.size() - f.bytes().size() < (f.tensors().empty() ? f.alignment() : 1u));
        CHECK(std::equal(f.bytes().begin(), f.bytes().end(), out.begin()));
        CHECK(std::all_of(out.begin() + static_cast<std::ptrdiff_t>(f.bytes().size()), out.end(),
                          [](std::byte b) { return b == std::byte{0}; }));
    }
}
