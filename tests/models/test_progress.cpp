// The progress callbacks of the model loader (llama_options::progress) and the
// quantizer (quantize_options::progress), on random models: one call per tensor, done
// counting 1..total, byte totals that match the file's own tensor table, and an
// exception from the callback stopping the work.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "tessera/gguf/reader.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/quantize.hpp"
#include "tessera/models/random.hpp"

using namespace tessera;

namespace {

models::random_llama_config config(bool tied) {
    models::random_llama_config c;
    c.n_embd = 64;
    c.n_layer = 3;
    c.n_ff = 128;
    c.n_ctx = 64;
    c.tied_output = tied;
    c.seed = 3;
    return c;
}

std::uint64_t sum_sizes(const gguf::file& f) {
    std::uint64_t s = 0;
    for (const auto& t : f.tensors()) s += t.size_bytes;
    return s;
}

// A file in the temporary folder, removed at the end of the scope.
struct temp_file {
    std::string path;
    explicit temp_file(const std::string& name)
        : path((std::filesystem::temp_directory_path() / ("tessera-progress-" + std::to_string(::getpid()) + "-" + name)).string()) {}
    ~temp_file() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("llama_options::progress: one call per weight, totals from the file's tensor table") {
    for (bool tied : {false, true}) {
        CAPTURE(tied);
        const auto bytes = std::make_shared<std::vector<std::byte>>(models::random_llama(config(tied)).to_bytes());
        const gguf::file f = gguf::file::from_buffer(*bytes, "random.gguf");
        // every tensor of a random model is a weight the loader places
        const std::size_t n = f.tensors().size();
        REQUIRE(n == (tied ? 2u : 3u) + 9u * 3u);
        std::vector<models::load_progress> calls;
        std::vector<std::string> names;
        models::llama_options o;
        o.n_threads = 1;
        o.progress = [&](const models::load_progress& p) {
            calls.push_back(p);
            names.emplace_back(p.name);
        };
        models::llama_model m(gguf::file::from_buffer(*bytes, "random.gguf"), o);
        REQUIRE(calls.size() == n);
        std::uint64_t prev = 0;
        for (std::size_t i = 0; i < calls.size(); ++i) {
            CHECK(calls[i].done == i + 1);
            CHECK(calls[i].total == n);
            CHECK(calls[i].bytes_total == sum_sizes(f));
            CHECK(calls[i].bytes_done == prev + f.find_tensor(names[i])->size_bytes);
            prev = calls[i].bytes_done;
        }
        CHECK(prev == sum_sizes(f));
        CHECK(prev == m.weight_bytes());
        CHECK(std::set<std::string>(names.begin(), names.end()).size() == n);  // each weight once
        CHECK(names.front() == "token_embd.weight");
    }
}

TEST_CASE("llama_options::progress: an exception from the callback stops the load") {
    const auto bytes = std::make_shared<std::vector<std::byte>>(models::random_llama(config(false)).to_bytes());
    models::llama_options o;
    o.n_threads = 1;
    int calls = 0;
    o.progress = [&](const models::load_progress& p) {
        ++calls;
        if (p.done == 4) throw std::runtime_error("cancelled at 4");
    };
    CHECK_THROWS_WITH_AS(models::llama_model(gguf::file::from_buffer(*bytes, "random.gguf"), o), "cancelled at 4",
                         std::runtime_error);
    CHECK(calls == 4);
}

TEST_CASE("quantize_options::progress: one call per tensor in the file's order, then the file is written") {
    temp_file in("in.gguf"), out("out.gguf");
    models::random_llama(config(false)).write_to_file(in.path);
    const gguf::file f = gguf::file::open(in.path);
    models::quantize_options o;
    o.type = type_id::q8_0;
    std::vector<models::quantize_progress> calls;
    std::vector<models::quantize_tensor_report> reports;
    o.progress = [&](const models::quantize_progress& p) {
        calls.push_back(p);
        reports.push_back(*p.tensor);
        CHECK_FALSE(std::filesystem::exists(out.path));  // written after the last call
    };
    const models::quantize_stats st = models::quantize_model(in.path, out.path, o);
    REQUIRE(calls.size() == f.tensors().size());
    std::uint64_t prev = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const auto& t = f.tensors()[i];
        CHECK(calls[i].done == i + 1);
        CHECK(calls[i].total == f.tensors().size());
        CHECK(calls[i].bytes_total == sum_sizes(f));
        CHECK(calls[i].bytes_done == prev + t.size_bytes);
        prev = calls[i].bytes_done;
        CHECK(reports[i].name == t.name);
        CHECK(reports[i].out_type == st.tensors[i].out_type);
        // 2-D weights to q8_0 (rows of 64 or 128 fit its 32-blocks), norms kept
        CHECK(reports[i].out_type == (t.n_dims == 2 ? type_id::q8_0 : type_id::f32));
    }
    CHECK(prev == st.bytes_in);
    CHECK(std::filesystem::exists(out.path));
}

TEST_CASE("quantize_options::progress: an exception from the callback stops the conversion, nothing is written") {
    temp_file in("in2.gguf"), out("out2.gguf");
    models::random_llama(config(false)).write_to_file(in.path);
    models::quantize_options o;
    o.type = type_id::q4_0;
    o.n_threads = 2;
    o.progress = [&](const models::quantize_progress& p) {
        if (p.done == 2) throw std::runtime_error("stop");
    };
    CHECK_THROWS_WITH_AS(models::quantize_model(in.path, out.path, o), "stop", std::runtime_error);
    CHECK_FALSE(std::filesystem::exists(out.path));
}
