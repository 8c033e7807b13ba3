// The random-weight llama of ../shared/data/models-kquant in all 21 files llama.cpp wrote
// (f32, the K-quant mixtures, the i-quants, the ternary types, mxfp4): every file loads
// and runs, and its first-step logits for both prompts of random-llama-goldens.jsonl are
// compared with llama.cpp's (all differences relative to the largest llama.cpp logit).
//
// f32: within 2e-3 of llama.cpp's. The quantized files are another matter: both programs
// round every matrix product's activations to 8 bits (q8_0 / q8_K), and on this untrained
// model a perturbation of 1e-4 upstream (tessera with an f32 instead of an f16 KV cache,
// or without flash attention) flips enough of those roundings to move the logits by
// 1.7-2.4 %. That is also the distance between tessera and llama.cpp, and between either
// and the same weights evaluated in f32 without activation rounding (the file dequantized
// to f32 by tessera's quantizer). So for the quantized files the test asks that tessera be
// as close as llama.cpp (within 25 %) to that f32 evaluation of the same weights, and
// within 5 % of llama.cpp (a wrong kernel, scale or layout is far outside both).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model_data.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/quantize.hpp"
#include "tessera/models/sampling.hpp"

using namespace tessera;

namespace {
double max_rel(const std::vector<float>& a, const std::vector<double>& b, double scale) {
    double e = 0;
    for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(a[i] - b[i]));
    return e / scale;
}
}  // namespace
DATA_TEST_CASE("models-kquant: every llama.cpp file runs; first logits against llama.cpp's and the f32 evaluation",
               "models-kquant/random-llama-goldens.jsonl") {
    const std::string gold = test_data::path("models-kquant/random-llama-goldens.jsonl");
    std::ifstream f(gold);
    std::string line;
    std::map<std::string, std::vector<model_test::greedy_case>> per_file;
    std::vector<std::string> order;
    while (std::getline(f, line)) {
        if (line.empty()) continue;
        const std::string file = model_test::detail::string_value(line, "model");
        model_test::greedy_case c;
        for (double d : model_test::detail::numbers(line, "prompt_ids")) c.prompt_ids.push_back(static_cast<int>(d));
        for (double d : model_test::detail::numbers(line, "greedy_ids")) c.greedy_ids.push_back(static_cast<int>(d));
        c.first_logits = model_test::detail::numbers(line, "first_logits");
        if (!per_file.count(file)) order.push_back(file);
        per_file[file].push_back(std::move(c));
    }
    REQUIRE(order.size() == 21);
    const std::string tmp = (std::filesystem::temp_directory_path() / "tessera-kquant-f32.gguf").string();
    double worst_all = 0;
    for (const std::string& file : order) {
        CAPTURE(file);
        const std::string path = test_data::need("models-kquant/" + file);
        if (path.empty()) continue;
        models::llama_options o;
        o.n_threads = 2;
        o.n_ctx = 128;
        models::llama_model m = models::llama_model::load(path, o);
        const bool quantized = file != "random-llama-f32.gguf";
        std::optional<models::llama_model> exact;  // the same weights in f32
        if (quantized) {
            models::quantize_options qo;
            qo.type = type_id::f32;
            qo.allow_requantize = true;
            qo.pure = true;
            models::quantize_model(path, tmp, qo);
            exact.emplace(models::llama_model::load(tmp, o));
        }
        double vs_llama = 0, mine_vs_exact = 0, llama_vs_exact = 0;
        std::size_t greedy_same = 0, greedy_total = 0;
        for (const auto& gc : per_file[file]) {
            m.reset();
            const std::vector<std::int32_t> toks(gc.prompt_ids.begin(), gc.prompt_ids.end());
            const std::vector<float> logits = m.eval(toks);
            REQUIRE(logits.size() == gc.first_logits.size());
            double scale = 0;
            for (double v : gc.first_logits) scale = std::max(scale, std::fabs(v));
            vs_llama = std::max(vs_llama, max_rel(logits, gc.first_logits, scale));
            if (exact) {
                exact->reset();
                const std::vector<float> ex = exact->eval(toks);
                const std::vector<double> exd(ex.begin(), ex.end());
                mine_vs_exact = std::max(mine_vs_exact, max_rel(logits, exd, scale));
                const std::vector<float> ll(gc.first_logits.begin(), gc.first_logits.end());
                llama_vs_exact = std::max(llama_vs_exact, max_rel(ll, exd, scale));
            }
            greedy_same += model_test::greedy_prefix(m, gc);
            greedy_total += gc.greedy_ids.size();
        }
        if (!quantized) {
            MESSAGE(file << ": first logits within " << vs_llama << " of llama.cpp's; greedy " << greedy_same << " of "
                         << greedy_total << " tokens as llama.cpp");
            CHECK(vs_llama < 2e-3);
        } else {
            MESSAGE(file << ": first logits within " << vs_llama << " of llama.cpp's; from the f32 evaluation of the same "
                         << "weights: tessera " << mine_vs_exact << ", llama.cpp " << llama_vs_exact << "; greedy "
                         << greedy_same << " of " << greedy_total << " tokens as llama.cpp");
            CHECK(mine_vs_exact <= 1.25 * llama_vs_exact);
            CHECK(vs_llama < 0.05);
        }
        worst_all = std::max(worst_all, vs_llama);
    }
    std::filesystem::remove(tmp);
    MESSAGE("largest difference from llama.cpp over all files: " << worst_all);
}
