// Helpers for the model tests: ../shared/data paths and the goldens of llama.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/models/llama.hpp"
#include "tessera/models/sampling.hpp"

#include "../shared_data.hpp"
namespace model_test {

// root/rel of the shared data, or "" when it is missing (see ../shared_data.hpp).
inline std::string data_file(const std::string& rel) {
    const std::string p = test_data::path(rel);
    return !p.empty() && std::filesystem::exists(p) ? p : std::string();
}

// One line of goldens/stories260K-greedy.jsonl.
struct greedy_case {
    std::string prompt;
    std::vector<int> prompt_ids, greedy_ids;
    std::vector<double> first_logits;
};

namespace detail {
// The JSON array of numbers after "key": in line (the goldens' flat format).
inline std::vector<double> numbers(const std::string& line, const std::string& key) {
    std::vector<double> v;
    std::size_t p = line.find("\"" + key + "\"");
    if (p == std::string::npos) return v;
    p = line.find('[', p);
    const std::size_t e = line.find(']', p);
    std::string body = line.substr(p + 1, e - p - 1);
    std::size_t i = 0;
    while (i < body.size()) {
        while (i < body.size() && (body[i] == ' ' || body[i] == ',')) ++i;
        if (i >= body.size()) break;
        std::size_t used = 0;
        v.push_back(std::stod(body.substr(i), &used));
        i += used;
    }
    return v;
}
inline std::string string_value(const std::string& line, const std::string& key) {
    std::size_t p = line.find("\"" + key + "\"");
    if (p == std::string::npos) return {};
    p = line.find('"', line.find(':', p)) + 1;
    std::string s;
    while (p < line.size() && line[p] != '"') {
        if (line[p] == '\\' && p + 1 < line.size()) ++p;
        s += line[p++];
    }
    return s;
}
}  // namespace detail

inline std::vector<greedy_case> load_greedy(const std::string& path) {
    std::vector<greedy_case> out;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty()) continue;
        greedy_case c;
        c.prompt = detail::string_value(line, "prompt");
        for (double d : detail::numbers(line, "prompt_ids")) c.prompt_ids.push_back(static_cast<int>(d));
        for (double d : detail::numbers(line, "greedy_ids")) c.greedy_ids.push_back(static_cast<int>(d));
        c.first_logits = detail::numbers(line, "first_logits");
        out.push_back(std::move(c));
    }
    return out;
}

// Greedy steps from a case's prompt ids that give its greedy ids: the common prefix
// (after the first difference the texts diverge).
inline std::size_t greedy_prefix(tessera::models::llama_model& m, const greedy_case& gc) {
    m.reset();
    const std::vector<std::int32_t> toks(gc.prompt_ids.begin(), gc.prompt_ids.end());
    std::vector<float> logits = m.eval(toks);
    std::size_t same = 0;
    for (std::size_t i = 0; i < gc.greedy_ids.size(); ++i) {
        const std::int32_t next = tessera::models::argmax(logits);
        if (next != gc.greedy_ids[i]) break;
        ++same;
        if (m.tokenizer().get_vocab().is_eog(next)) break;
        logits = m.eval(std::span<const std::int32_t>(&next, 1));
    }
    return same;
}

// Negative log-likelihood of a token sequence: the sum over i >= 1 of -log p(t_i | t_<i)
// (log-softmax in double) from one batched pass with every token's logits, and the
// number of terms.
struct nll_sum {
    double sum = 0;
    std::size_t n = 0;
};
inline nll_sum negative_log_likelihood(tessera::models::llama_model& m, std::span<const std::int32_t> toks) {
    m.reset();
    const std::vector<float> logits = m.eval(toks, true);
    const auto V = static_cast<std::size_t>(m.n_vocab());
    nll_sum r;
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
        const float* l = logits.data() + i * V;
        double mx = l[0];
        for (std::size_t j = 1; j < V; ++j) mx = std::max(mx, static_cast<double>(l[j]));
        double s = 0;
        for (std::size_t j = 0; j < V; ++j) s += std::exp(static_cast<double>(l[j]) - mx);
        r.sum -= static_cast<double>(l[static_cast<std::size_t>(toks[i + 1])]) - mx - std::log(s);
        ++r.n;
    }
    return r;
}

}  // namespace model_test
