// Helpers for text tests that read ../shared/data (TESSERA_SHARED_DATA).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace text_test {

inline std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// test-tokenizer-0 cases: inputs split on "\n__ggml_vocab_test__\n", expected ids
// one line per case.
struct tok_case {
    std::string input;
    std::vector<int> expected;
};

inline std::vector<tok_case> load_cases(const std::string& gguf_path) {
    const std::string inp = read_file(gguf_path + ".inp");
    const std::string out = read_file(gguf_path + ".out");
    static const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    std::size_t pos = 0;
    while (pos < inp.size()) {
        const std::size_t next = inp.find(sep, pos);
        if (next == std::string::npos) {
            inputs.push_back(inp.substr(pos));
            break;
        }
        inputs.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::vector<tok_case> cases;
    std::istringstream lines(out);
    std::string line;
    std::size_t i = 0;
    while (std::getline(lines, line)) {
        if (i >= inputs.size()) {
            i++;
            break;
        }
        tok_case c{inputs[i++], {}};
        std::istringstream ids(line);
        int id;
        while (ids >> id) c.expected.push_back(id);
        cases.push_back(std::move(c));
    }
    if (i != inputs.size()) cases.clear();  // mismatched counts: no tests
    return cases;
}

}  // namespace text_test
