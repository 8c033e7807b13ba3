// The random-weight llama of ../shared/data/models-kquant in all 21 files llama.cpp wrote
// (f32, the K-quant mixtures, the i-quants, the ternary types, mxfp4): every file loads
// and runs, and its first-step logits, for both prompts of random-llama-goldens.jsonl,
// agree with llama.cpp's: max |tessera - llama.cpp| / max |llama.cpp| within the bound of
// issue 22 (2e-3), and the greedy tokens agree as far as llama.cpp's margins allow.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "model_data.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/sampling.hpp"

using namespace tessera;

DATA_TEST_CASE("models-kquant: every llama.cpp file runs, first logits within 2e-3 of llama.cpp's",
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
    double worst_all = 0;
    for (const std::string& file : order) {
        CAPTURE(file);
        const std::string path = test_data::need("models-kquant/" + file);
        if (path.empty()) continue;
        models::llama_options o;
        o.n_threads = 2;
        o.n_ctx = 128;
        models::llama_model m = models::llama_model::load(path, o);
        double worst = 0;
        std::size_t greedy_same = 0, greedy_total = 0;
        for (const auto& gc : per_file[file]) {
            m.reset();
            const std::vector<std::int32_t> toks(gc.prompt_ids.begin(), gc.prompt_ids.end());
            const std::vector<float> logits = m.eval(toks);
            REQUIRE(logits.size() == gc.first_logits.size());
            double max_abs = 0, scale = 0;
            for (std::size_t i = 0; i < logits.size(); ++i) {
                max_abs = std::max(max_abs, std::fabs(logits[i] - gc.first_logits[i]));
                scale = std::max(scale, std::fabs(gc.first_logits[i]));
            }
            worst = std::max(worst, max_abs / scale);
            greedy_same += model_test::greedy_prefix(m, gc);
            greedy_total += gc.greedy_ids.size();
        }
        MESSAGE(file << ": first logits max relative difference " << worst << ", greedy " << greedy_same << " of "
                     << greedy_total << " tokens as llama.cpp");
        CHECK(worst < 2e-3);
        worst_all = std::max(worst_all, worst);
    }
    MESSAGE("worst over all files: " << worst_all);
}
