// Helpers for the model tests: ../shared/data paths and the goldens of llama.cpp.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace model_test {

// The shared data folder, or empty when absent (tests then skip with a message).
inline std::string shared_data() {
    const char* p = std::getenv("TESSERA_SHARED_DATA");
    if (p == nullptr || !std::filesystem::is_directory(p)) return {};
    return p;
}

inline std::string data_file(const std::string& rel) {
    const std::string d = shared_data();
    if (d.empty()) return {};
    const std::string p = d + "/" + rel;
    return std::filesystem::exists(p) ? p : std::string();
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

}  // namespace model_test
