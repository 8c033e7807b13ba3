// Whole-model speed of llama_model (models/llama.hpp): prompt processing of 512 tokens
// in one graph (pp512) and generation one token per graph with the KV cache (tg: after a
// 16-token prompt, 128 tokens, then back to 16, so attention reads 16 .. 143 positions), for
// stories260K from ../shared/data (skipped when absent) and a random-weight model of
// about 110 M parameters (n_embd 768, 12 layers, n_ff 2048, 16000 tokens) with f32,
// f16, q8_0, q4_0 and q4_K weights, at 1 and 2 threads; the quantized ones with the weight
// matrices read in place from the mapping (second argument 0, the default) and repacked at
// load (1, llama_options::repack).
//
// TESSERA_BENCH_MODEL=a.gguf[,b.gguf...] adds the same two benchmarks for each file named
// (as "file:<name>/pp512" and "file:<name>/tg", both layouts), e.g. to set tessera beside
// another runtime on one GGUF file. `generate --random-size 110M --random-type T
// --random-out F` writes the random models above to a file (the same bytes).
//
// Counters: tokens/s; for tg also weight_GB/s (the weights are read once per token)
// and its ratio to the DRAM read bandwidth measured in the same run (bench/machine.hpp).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "machine.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/random.hpp"

namespace {

using namespace tessera;
namespace tb = tessera_bench;

std::string stories_path() {
    const char* env = std::getenv("TESSERA_SHARED_DATA");
    const std::string d = env && *env ? env : "../shared/data";
    const std::string p = d + "/models/stories260K.gguf";
    return std::filesystem::exists(p) ? p : std::string();
}

// The random model of each weight type, written once per run to a temporary file.
std::string random_path(type_id t) {
    static std::map<type_id, std::string> files;
    auto it = files.find(t);
    if (it != files.end()) return it->second;
    const auto c = models::random_llama_config::llama_110m(t);
    const std::string p = (std::filesystem::temp_directory_path() /
                           ("tessera-bench-llama-110M-" + std::string(type_name(t)) + ".gguf"))
                              .string();
    models::random_llama(c).write_to_file(p);
    std::atexit([] {
        for (const auto& [k, v] : files) std::filesystem::remove(v);
    });
    return files[t] = p;
}

std::vector<std::int32_t> tokens(std::int64_t n, std::int64_t n_vocab) {
    std::vector<std::int32_t> t{1};
    std::uint64_t s = 12345;
    while (static_cast<std::int64_t>(t.size()) < n) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        t.push_back(static_cast<std::int32_t>(3 + (s >> 33) % static_cast<std::uint64_t>(n_vocab - 3)));
    }
    return t;
}

void pp512(benchmark::State& state, const std::string& path) {
    if (path.empty()) {
        state.SkipWithError("model file absent (stories260K: set TESSERA_SHARED_DATA; TESSERA_BENCH_MODEL: a path that is not there)");
        return;
    }
    const int threads = static_cast<int>(state.range(0));
    models::llama_options o{.n_threads = threads, .n_ctx = 1024, .n_batch = 512};
    o.repack = state.range(1) != 0;
    auto m = models::llama_model::load(path, o);
    const auto toks = tokens(512, m.n_vocab());
    for (auto _ : state) {
        m.reset();
        benchmark::DoNotOptimize(m.eval(toks));
    }
    state.SetItemsProcessed(state.iterations() * 512);
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 512, benchmark::Counter::kIsRate);
    state.counters["params_M"] = static_cast<double>(m.n_params()) / 1e6;
}

void tg(benchmark::State& state, const std::string& path) {
    if (path.empty()) {
        state.SkipWithError("model file absent (stories260K: set TESSERA_SHARED_DATA; TESSERA_BENCH_MODEL: a path that is not there)");
        return;
    }
    const int threads = static_cast<int>(state.range(0));
    models::llama_options o{.n_threads = threads, .n_ctx = 1024};
    o.repack = state.range(1) != 0;
    auto m = models::llama_model::load(path, o);
    const auto toks = tokens(16, m.n_vocab());
    (void)m.eval(toks);
    std::int32_t next = 5;
    for (auto _ : state) {
        if (m.n_past() >= 16 + 128) {  // attention over 16 .. 143 positions: a 16-token prompt and 128 generated
            state.PauseTiming();
            m.truncate(16);
            state.ResumeTiming();
        }
        benchmark::DoNotOptimize(m.eval(std::span<const std::int32_t>(&next, 1)));
    }
    const double n = static_cast<double>(state.iterations());
    state.SetItemsProcessed(state.iterations());
    state.counters["tokens/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
    state.counters["weight_GB/s"] = benchmark::Counter(n * static_cast<double>(m.weight_bytes()) / 1e9, benchmark::Counter::kIsRate);
    state.counters["dram_GB/s"] = tb::dram_read_gbs(threads);
    state.counters["params_M"] = static_cast<double>(m.n_params()) / 1e6;
}

// The files named in TESSERA_BENCH_MODEL (comma-separated).
std::vector<std::string> extra_models() {
    std::vector<std::string> r;
    const char* env = std::getenv("TESSERA_BENCH_MODEL");
    if (!env) return r;
    std::string s = env;
    for (std::size_t b = 0; b <= s.size();) {
        std::size_t e = s.find(',', b);
        if (e == std::string::npos) e = s.size();
        if (e > b) r.push_back(s.substr(b, e - b));
        b = e + 1;
    }
    return r;
}

void register_all() {
    const std::string stories = stories_path();
    benchmark::RegisterBenchmark("stories260K/pp512", pp512, stories)->Args({1, 0})->Args({2, 0})->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("stories260K/tg", tg, stories)->Args({1, 0})->Args({2, 0})->UseRealTime()->Unit(benchmark::kMillisecond);
    // pp512 and tg of one model at 1 and 2 threads x the repack values; path() gives its file
    auto both = [](const std::string& name, auto path, const std::vector<std::int64_t>& repack) {
        benchmark::RegisterBenchmark((name + "/pp512").c_str(), [path](benchmark::State& s) { pp512(s, path()); })
            ->ArgsProduct({{1, 2}, repack})->UseRealTime()->Iterations(2)->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((name + "/tg").c_str(), [path](benchmark::State& s) { tg(s, path()); })
            ->ArgsProduct({{1, 2}, repack})->UseRealTime()->MinTime(1.0)->Unit(benchmark::kMillisecond);
    };
    for (const std::string& p : extra_models()) {
        // a missing file is reported by the benchmark (SkipWithError), not at registration
        const std::string path = std::filesystem::exists(p) ? p : std::string();
        both("file:" + std::filesystem::path(p).filename().string(), [path] { return path; }, {0, 1});
    }
    for (type_id t : {type_id::f32, type_id::f16, type_id::q8_0, type_id::q4_0, type_id::q4_K}) {
        // the model file is written when the benchmark first runs (not when only listing)
        const bool floats = t == type_id::f32 || t == type_id::f16;
        both("random110M_" + std::string(type_name(t)), [t] { return random_path(t); },
             floats ? std::vector<std::int64_t>{0} : std::vector<std::int64_t>{0, 1});
    }
}

const int registered = (register_all(), 0);

}  // namespace
