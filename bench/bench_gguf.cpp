// GGUF benchmarks: open (mmap + validate) and metadata-only parse of a file with many
// tensors, written to /tmp in the setup; open of the vocabulary files of the shared
// test data (large string arrays); and the writer.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"

namespace {
using namespace tessera;

// A llama-like file with n tensors of 256 f32 each, plus a few metadata keys.
gguf::writer many_tensors_writer(int n) {
    static const std::vector<float> row(256, 0.5f);
    gguf::writer w;
    w.set("general.architecture", "llama");
    w.set<std::uint32_t>("llama.block_count", static_cast<std::uint32_t>(n / 10));
    w.set<std::uint32_t>("llama.embedding_length", 256);
    for (int i = 0; i < n; ++i)
        w.add_tensor_view("blk." + std::to_string(i / 10) + ".w" + std::to_string(i % 10) + ".weight", type_id::f32,
                          {16, 16}, std::as_bytes(std::span(row)));
    return w;
}

// The file is written once per process and removed at exit.
struct temp_gguf {
    std::string path;
    explicit temp_gguf(int n)
        : path((std::filesystem::temp_directory_path() /
                ("tessera-bench-gguf-" + std::to_string(n) + "-" + std::to_string(::getpid()) + ".gguf"))
                   .string()) {
        many_tensors_writer(n).write_to_file(path);
    }
    ~temp_gguf() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
};

const std::string& many_tensors_path() {
    static const temp_gguf f(10000);
    return f.path;
}

void BM_open_many_tensors(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    const std::string& path = many_tensors_path();
    std::uint64_t meta = 0;
    for (auto _ : state) {
        auto f = gguf::file::open(path);
        meta = f.data_offset();
        benchmark::DoNotOptimize(f.tensors().data());
    }
    state.SetItemsProcessed(state.iterations() * n);  // tensors/s
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(meta));
    state.counters["meta_bytes"] = static_cast<double>(meta);
}
BENCHMARK(BM_open_many_tensors)->Arg(10000)->Unit(benchmark::kMicrosecond);

// Metadata parse only: the header, KVs and tensor infos of the same file, in memory.
void BM_parse_many_tensors(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    const auto w = many_tensors_writer(n);
    const auto full = w.to_bytes();  // parsing reads the metadata, never the tensor data
    for (auto _ : state) {
        auto f = gguf::file::from_buffer(full);
        benchmark::DoNotOptimize(f.tensors().data());
    }
    state.SetItemsProcessed(state.iterations() * n);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(w.meta_size()));
}
BENCHMARK(BM_parse_many_tensors)->Arg(10000)->Arg(1000)->Unit(benchmark::kMicrosecond);

std::string shared_data() {
    if (const char* env = std::getenv("TESSERA_SHARED_DATA")) return env;
    for (const char* p : {"../shared/data", "../../shared/data", "../../../shared/data"})
        if (std::filesystem::is_directory(p)) return p;
    return {};
}

const char* const vocab_files[] = {
    "vocab/ggml-vocab-llama-spm.gguf",       // SPM, 32000 tokens with scores
    "vocab/ggml-vocab-gpt-2.gguf",           // BPE, 50257 tokens, 50000 merges
    "vocab/ggml-vocab-bert-bge.gguf",        // WPM, 30522 tokens
    "vocab-extra/ggml-vocab-deepseek-llm.gguf",  // BPE, 102400 tokens
};

void BM_open_vocab(benchmark::State& state) {
    const std::string dir = shared_data();
    const std::string path = dir + "/" + vocab_files[state.range(0)];
    if (dir.empty() || !std::filesystem::exists(path)) {
        state.SkipWithError("shared data absent: set TESSERA_SHARED_DATA");
        return;
    }
    state.SetLabel(std::filesystem::path(path).filename().string());
    std::size_t size = 0, tokens = 0;
    for (auto _ : state) {
        auto f = gguf::file::open(path);
        const auto t = f.meta().get_string_array("tokenizer.ggml.tokens");
        tokens = t.size();
        size = f.bytes().size();
        benchmark::DoNotOptimize(t.begin());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(size));
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(tokens));  // strings/s
}
BENCHMARK(BM_open_vocab)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

void BM_write_many_tensors(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    const auto w = many_tensors_writer(n);
    std::size_t bytes = 0;
    for (auto _ : state) {
        const auto out = w.to_bytes();
        bytes = out.size();
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
    state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_write_many_tensors)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace
