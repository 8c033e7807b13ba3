// llama.cpp's quantized files against llama.cpp's own first-step logits and against a
// double-precision evaluation of the same weights (llama_dref.hpp): the random-weight
// llama of ../shared/data/models-kquant in all 21 files (f32, the K-quant mixtures, the
// i-quants, the ternary types, mxfp4) and stories260K in the eight files of
// models-quantized. All differences are relative to the largest llama.cpp logit.
//
// f32 and f16: within 2e-3 of llama.cpp. The quantized files are another matter: every
// matrix product rounds its activations to 8 bits, and where a value lies within float
// precision of a rounding boundary, the two programs' different float sums (or SIMD
// roundings) round it differently. On the untrained random model one such flip moves the
// logits by 1-3 %: scaling the double evaluation's activations by 1 +- 1e-7 turns files
// from within 3e-7 of tessera to 1-2 % apart and back. So the quantized files are held to
// the double evaluation: tessera, run as the evaluation defines (no flash attention), no
// farther from it than llama.cpp is (within a slack for those flips), and within 5 % of
// llama.cpp. On stories260K (trained; robust to 1e-7, not to 1e-6) the files whose
// products are all against q8_0 (q8_0, q4_0, q5_0) are within 1.1e-7 of the double
// evaluation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llama_dref.hpp"
#include "model_data.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/quantize.hpp"
#include "tessera/models/sampling.hpp"

using namespace tessera;

namespace {
// Under emulation (TESSERA_TEST_EMULATED=1: .ci/run's qemu-aarch64 runs, where the full
// test took 7 minutes) every file still runs, the models-kquant files on their first
// prompt only, and the double evaluation is made only where a criterion needs it (a
// quantized file not within 2e-3 of llama.cpp, or one held to the evaluation itself).
using test_env::emulated;

double max_rel(const std::vector<float>& a, const std::vector<double>& b, double scale) {
    double e = 0;
    for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(a[i] - b[i]));
    return e / scale;
}

// The files of a goldens .jsonl (one line per file and prompt: model, prompt_ids,
// greedy_ids, first_logits), in their order; `model` relative to `dir` after `strip`.
struct golden_file {
    std::string name;
    std::vector<model_test::greedy_case> cases;
};
std::vector<golden_file> read_goldens(const std::string& jsonl, const std::string& strip) {
    std::ifstream f(jsonl);
    std::string line;
    std::vector<golden_file> out;
    while (std::getline(f, line)) {
        if (line.empty()) continue;
        std::string file = model_test::detail::string_value(line, "model");
        if (file.rfind(strip, 0) == 0) file = file.substr(strip.size());
        model_test::greedy_case c;
        for (double d : model_test::detail::numbers(line, "prompt_ids")) c.prompt_ids.push_back(static_cast<int>(d));
        for (double d : model_test::detail::numbers(line, "greedy_ids")) c.greedy_ids.push_back(static_cast<int>(d));
        c.first_logits = model_test::detail::numbers(line, "first_logits");
        if (out.empty() || out.back().name != file) out.push_back({file, {}});
        out.back().cases.push_back(std::move(c));
    }
    return out;
}

// Every file against llama.cpp's first logits (all differences relative to the largest
// of them) and against llama_dref's double evaluation of the same weights with ggml's
// roundings (activations to the dot partner, the f16 KV cache, Q and the attention
// weights in f16 against it: what ggml computes without flash attention).
// Float files: tessera within 2e-3 of llama.cpp. Quantized files: within 2e-3 of
// llama.cpp, or else tessera without flash attention (the configuration the double
// evaluation defines) within `slack` times llama.cpp's distance from it, and tessera as
// run (flash attention) within 5 % of llama.cpp. The files in `exact` must be within 1e-4
// of the double evaluation without flash attention: the kernels compute the definition.
// Returns the largest difference from llama.cpp.
double check_files(const std::vector<golden_file>& files, const std::string& dir, double slack,
                   const std::vector<std::string>& exact = {}, std::size_t max_cases = 0) {
    double worst_all = 0;
    for (const golden_file& gf : files) {
        const std::string& file = gf.name;
        CAPTURE(file);
        const std::string path = test_data::need(dir + file);
        if (path.empty()) continue;
        models::llama_options o;
        o.n_threads = 2;
        o.n_ctx = 128;
        models::llama_model m = models::llama_model::load(path, o);
        o.flash_attn = false;
        models::llama_model plain = models::llama_model::load(path, o);
        const bool quantized = file.find("-f32.gguf") == std::string::npos && file.find("-f16.gguf") == std::string::npos;
        double vs_llama = 0, mine_vs_dref = 0, plain_vs_dref = 0, llama_vs_dref = 0;
        std::size_t greedy_same = 0, greedy_total = 0;
        const bool held_exact = std::find(exact.begin(), exact.end(), file) != exact.end();
        bool dref_made = false;
        for (const auto& gc : gf.cases) {
            if (max_cases && static_cast<std::size_t>(&gc - gf.cases.data()) >= max_cases) break;
            m.reset();
            plain.reset();
            const std::vector<std::int32_t> toks(gc.prompt_ids.begin(), gc.prompt_ids.end());
            const std::vector<float> logits = m.eval(toks), logits_plain = plain.eval(toks);
            REQUIRE(logits.size() == gc.first_logits.size());
            double scale = 0;
            for (double v : gc.first_logits) scale = std::max(scale, std::fabs(v));
            vs_llama = std::max(vs_llama, max_rel(logits, gc.first_logits, scale));
            if (!emulated() || held_exact || (quantized && vs_llama >= 2e-3)) {
                const std::vector<double> dr = llama_dref::first_logits(path, gc.prompt_ids);
                REQUIRE(dr.size() == logits.size());
                dref_made = true;
                mine_vs_dref = std::max(mine_vs_dref, max_rel(logits, dr, scale));
                plain_vs_dref = std::max(plain_vs_dref, max_rel(logits_plain, dr, scale));
                const std::vector<float> ll(gc.first_logits.begin(), gc.first_logits.end());
                llama_vs_dref = std::max(llama_vs_dref, max_rel(ll, dr, scale));
            }
            greedy_same += model_test::greedy_prefix(m, gc);
            greedy_total += gc.greedy_ids.size();
        }
        const bool close = vs_llama < 2e-3;
        MESSAGE(file << ": first logits within " << vs_llama << " of llama.cpp's; from the double evaluation: "
                     << std::string(dref_made ? "" : "(not made) ") << "tessera " << mine_vs_dref << " (without flash attention "
                     << plain_vs_dref << "), llama.cpp " << llama_vs_dref << "; greedy " << greedy_same << " of " << greedy_total << " tokens as llama.cpp"
                     << std::string(!quantized ? ""
                                    : close    ? "; criterion: within 2e-3 of llama.cpp"
                                               : "; criterion: near llama.cpp's distance from the double evaluation"));
        if (!quantized || close) {
            CHECK(vs_llama < 2e-3);
        } else {
            CHECK(plain_vs_dref <= slack * llama_vs_dref);
            CHECK(vs_llama < 0.05);
        }
        if (held_exact) CHECK(plain_vs_dref < 1e-4);
        worst_all = std::max(worst_all, vs_llama);
    }
    return worst_all;
}
}  // namespace

DATA_TEST_CASE("models-kquant: every llama.cpp file runs; first logits against llama.cpp's and the f32 evaluation",
               "models-kquant/random-llama-goldens.jsonl") {
    const auto files = read_goldens(test_data::path("models-kquant/random-llama-goldens.jsonl"), "");
    REQUIRE(files.size() == 21);
    // measured (this machine, AVX-512): without flash attention 7 of the 20 quantized
    // files within 3e-7 of the double evaluation, the others 0.9-3.0 %; the largest ratio
    // to llama.cpp's distance 1.29 (IQ2_XXS)
    // (under emulation the first of the two prompts: the stories260K files below keep all three)
    const double worst = check_files(files, "models-kquant/", 1.35, {}, emulated() ? 1 : 0);
    MESSAGE("largest difference from llama.cpp over all files: " << worst);
}

// stories260K (trained) in the eight files llama-quantize wrote (f16, q8_0, q4_0, q4_1,
// q5_0, q5_1, q4_K_M, q6_K), three prompts each.
DATA_TEST_CASE("stories260K quantized by llama-quantize: first logits against llama.cpp's and the f32 evaluation",
               "goldens/stories260K-quantized-logits.jsonl") {
    const auto files = read_goldens(test_data::path("goldens/stories260K-quantized-logits.jsonl"), "../models-quantized/");
    REQUIRE(files.size() == 8);
    for (const auto& f : files) CHECK(f.cases.size() == 3);
    // measured: q8_0, q4_0, q5_0 within 1.1e-7; q4_K_M 1.7 % and q6_K 1.7 % (llama.cpp
    // 1.8 %, 1.4 %): their ffn_down is f16, whose activations tessera keeps in f32 where
    // ggml rounds them to f16; q4_1 0.75 %, q5_1 1.0 % (llama.cpp 2.2 %, 1.8 %): their dots
    // subtract a min term (m * s) of about the size of the result, so the float order
    // (tessera's lanes vs ggml's blocks) differs by ~1e-6 relative, which flips roundings
    // here (the double evaluation's activations scaled by 1 + 1e-6 move q4_0 by 0.9 %)
    const double worst = check_files(files, "models-quantized/", 1.25,
                                     {"stories260K-q8_0.gguf", "stories260K-q4_0.gguf", "stories260K-q5_0.gguf"});
    MESSAGE("largest difference from llama.cpp over the eight files: " << worst);
}
