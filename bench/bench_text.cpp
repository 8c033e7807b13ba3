// Tokenization throughput (bytes of input text per second) per tokenizer type, on the
// vocabularies of ../shared/data (TESSERA_SHARED_DATA, default ../shared/data) and a
// ~1 MB text: the GPL-3 license text (English prose) plus the 46 test-tokenizer-0
// strings (mixed scripts, emoji, whitespace runs), repeated.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include "tessera/text/load.hpp"

namespace {

std::string data_dir() {
    const char* p = std::getenv("TESSERA_SHARED_DATA");
    return p ? p : "../shared/data";
}

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

const std::string& big_text() {
    static const std::string text = [] {
        std::string base = slurp("/usr/share/common-licenses/GPL-3");
        base += slurp(data_dir() + "/vocab/ggml-vocab-llama-spm.gguf.inp");
        if (base.empty()) base = "The quick brown fox jumps over the lazy dog. 1234567 ünïcödé 中文 🦙\n";
        std::string t;
        while (t.size() < (1u << 20)) t += base;
        return t;
    }();
    return text;
}

const tessera::text::tokenizer* get(const std::string& file) {
    static std::map<std::string, std::unique_ptr<tessera::text::tokenizer>> cache;
    auto it = cache.find(file);
    if (it != cache.end()) return it->second.get();
    const std::string path = data_dir() + "/" + file;
    std::unique_ptr<tessera::text::tokenizer> t;
    if (std::filesystem::exists(path)) t = std::make_unique<tessera::text::tokenizer>(tessera::text::load_tokenizer(path));
    return cache.emplace(file, std::move(t)).first->second.get();
}

void bm_tokenize(benchmark::State& state, const char* file) {
    const auto* tok = get(file);
    if (tok == nullptr) {
        state.SkipWithError("vocabulary not found (set TESSERA_SHARED_DATA)");
        return;
    }
    const std::string& text = big_text();
    std::size_t n = 0;
    for (auto _ : state) {
        auto ids = tok->tokenize(text, false, false);
        n = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
    state.counters["tokens"] = static_cast<double>(n);
    state.counters["MB/s"] = benchmark::Counter(static_cast<double>(text.size()) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
}

void bm_load(benchmark::State& state, const char* file) {
    const std::string path = data_dir() + "/" + file;
    if (!std::filesystem::exists(path)) {
        state.SkipWithError("vocabulary not found (set TESSERA_SHARED_DATA)");
        return;
    }
    for (auto _ : state) {
        auto t = tessera::text::load_tokenizer(path);
        benchmark::DoNotOptimize(&t);
    }
}

void bm_pretokenize_gpt2(benchmark::State& state) {
    const tessera::text::pretokenizer pre(tessera::text::pre_type::gpt2);
    const std::string& text = big_text();
    for (auto _ : state) {
        auto w = pre.split(text);
        benchmark::DoNotOptimize(w.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

}  // namespace

BENCHMARK_CAPTURE(bm_tokenize, spm_llama, "vocab/ggml-vocab-llama-spm.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_tokenize, bpe_gpt2, "vocab/ggml-vocab-gpt-2.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_tokenize, bpe_starcoder, "vocab-extra/ggml-vocab-starcoder.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_tokenize, bpe_falcon_regex, "vocab-extra/ggml-vocab-falcon.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_tokenize, bpe_deepseek_llm_regex, "vocab-extra/ggml-vocab-deepseek-llm.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_tokenize, wpm_bert, "vocab/ggml-vocab-bert-bge.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_pretokenize_gpt2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_load, spm_llama, "vocab/ggml-vocab-llama-spm.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_load, bpe_gpt2, "vocab/ggml-vocab-gpt-2.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_load, wpm_bert, "vocab/ggml-vocab-bert-bge.gguf")->Unit(benchmark::kMillisecond);
