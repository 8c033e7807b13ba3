// Byte-exact comparison with llama.cpp: stories260K (f32) quantized by tessera must
// give the same bytes as llama.cpp's llama-quantize produced for every tensor of the
// quantized files in ../shared/data/models-quantized (no importance matrix, so ggml
// used its reference quantizers). Also checks that tessera dequantizes those tensors.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../shared_data.hpp"
#include "gguf_mini.hpp"
#include "tessera/quant/reference.hpp"

using namespace tessera;

DATA_TEST_CASE("llama-quantize outputs are reproduced byte for byte", "models/stories260K.gguf") {
    const std::string root = test_data::root();
    const std::string src_path = root + "/models/stories260K.gguf";
    const gguf_mini::file src = gguf_mini::load(src_path);
    std::map<std::string, std::pair<int, int>> per_type;  // type -> (tensors equal, tensors)
    for (const char* variant : {"f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_K_M", "q6_K"}) {
        const std::string path = test_data::need(std::string("models-quantized/stories260K-") + variant + ".gguf");
        if (path.empty()) continue;  // recorded: the data run reports skipped
        const gguf_mini::file qf = gguf_mini::load(path);
        for (const auto& t : qf.tensors) {
            const auto tt = static_cast<type_id>(t.type);
            if (tt == type_id::f32) continue;
            const gguf_mini::tensor* s = src.find(t.name);
            REQUIRE(s != nullptr);
            REQUIRE(s->type == 0);
            CAPTURE(variant);
            CAPTURE(t.name);
            CAPTURE(type_name(tt));
            const auto n_per_row = static_cast<std::int64_t>(t.ne[0]);
            std::int64_t nrows = 1;
            for (std::size_t d = 1; d < t.ne.size(); ++d) nrows *= static_cast<std::int64_t>(t.ne[d]);
            REQUIRE(quant::can_quantize(tt));
            const std::int64_t rs = row_size(tt, n_per_row);
            std::vector<unsigned char> mine(static_cast<std::size_t>(rs * nrows));
            const auto* x = reinterpret_cast<const float*>(src.data(*s));
            CHECK(quant::quantize(tt, x, mine.data(), nrows, n_per_row) == mine.size());
            const bool same = std::memcmp(mine.data(), qf.data(t), mine.size()) == 0;
            CHECK(same);
            auto& c = per_type[std::string(type_name(tt))];
            c.first += same;
            c.second += 1;
            // and llama.cpp's bytes dequantize to what ours do
            std::vector<float> a(static_cast<std::size_t>(n_per_row)), b(a.size());
            quant::dequantize_row(tt, qf.data(t), a.data(), n_per_row);
            quant::dequantize_row(tt, mine.data(), b.data(), n_per_row);
            if (same) CHECK(a == b);
        }
    }
    for (const auto& [name, c] : per_type) MESSAGE(name << ": " << c.first << " of " << c.second << " tensors byte-identical");
}
