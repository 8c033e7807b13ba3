// The llama pipeline across ranks (llama_options::pipeline): a random 5-layer model with a
// tied output, written to a file that every rank maps itself (buffer_from_file, so no
// weight byte is sent), with layers on rank 0's CPU and the workers: the logits of a
// prompt and of tokens decoded one by one equal one process's bit for bit (one thread
// everywhere). Also buffer_from_file on its own: the bytes read back are the file's,
// writes are refused, and another file or a missing one is refused with its message.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/backend/mpi.hpp"
#include "tessera/gguf/writer.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/random.hpp"

using namespace tessera;
using namespace tessera::backend;
namespace mp = tessera::backend::mpi;

namespace {

// A random model in a file for this test, removed at the end.
struct model_file {
    std::string path;
    explicit model_file(bool tied, std::int64_t layers = 5) {
        models::random_llama_config c;
        c.n_embd = 64;
        c.n_layer = layers;
        c.n_ff = 160;
        c.n_head = 4;
        c.n_head_kv = 2;
        c.n_ctx = 128;
        c.tied_output = tied;
        c.seed = 11;
        path = "/tmp/tessera-mpi-test-" + std::to_string(::getpid()) + (tied ? "-tied" : "") + ".gguf";
        models::random_llama(c).write_to_file(path);
    }
    ~model_file() { std::remove(path.c_str()); }
};

std::uint64_t worker_bytes_in(int r) {
    const auto rep = mp::session::current()->request(r, mp::msg_type::stats, {});
    mp::wire_reader rd(rep, "stats");
    (void)rd.u64("commands");
    (void)rd.u64("errors");
    return rd.u64("bytes_in");
}

std::vector<std::vector<float>> run(models::llama_model& m) {
    std::vector<std::vector<float>> out;
    const std::vector<std::int32_t> prompt{1, 17, 29, 40, 51, 62, 7, 99};
    out.push_back(m.eval(prompt, true));
    std::int32_t t = 5;
    for (int i = 0; i < 4; ++i, t = static_cast<std::int32_t>(t * 7 % 200 + 3)) out.push_back(m.eval(std::span<const std::int32_t>(&t, 1)));
    return out;
}

bool bit_equal(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0) return false;
    return true;
}

}  // namespace

TEST_CASE("mpi: the llama pipeline across ranks equals one process bit for bit, and no weight byte is sent") {
    const mp::session& s = *mp::session::current();
    for (const bool tied : {true, false}) {
        CAPTURE(tied);
        const model_file f(tied);
        models::llama_model one = models::llama_model::load(f.path, {.n_threads = 1, .n_ctx = 64, .device = "cpu"});
        const auto want = run(one);
        std::vector<std::string> pipeline{"CPU"};
        for (int r = 1; r < s.size(); ++r) pipeline.push_back("MPI" + std::to_string(r));
        std::vector<std::uint64_t> before;
        for (int r = 1; r < s.size(); ++r) before.push_back(worker_bytes_in(r));
        const std::uint64_t sent = s.traffic().tensor_bytes;
        models::llama_model m = models::llama_model::load(f.path, {.n_threads = 1, .n_ctx = 64, .n_copies = 2, .pipeline = pipeline});
        for (int r = 1; r < s.size(); ++r) CHECK(worker_bytes_in(r) == before[static_cast<std::size_t>(r - 1)]);  // the workers mapped the file
        CHECK(s.traffic().tensor_bytes == sent);  // (and rank 0 counted no tensor byte either)
        CHECK(m.device_name() == (s.size() == 2 ? "CPU[0-2] MPI1[3-4]+out" : "CPU[0-1] MPI1[2-3] MPI2[4-4]+out"));
        CHECK(bit_equal(run(m), want));
        if (s.size() >= 3) {  // an uneven split, the first device with no layer
            models::llama_model u = models::llama_model::load(
                f.path, {.n_threads = 1, .n_ctx = 64, .pipeline = {"CPU", "MPI1", "MPI2"}, .layer_split = {0, 4, 1}});
            CHECK(u.device_name() == "CPU[] MPI1[0-3] MPI2[4-4]+out");
            CHECK(bit_equal(run(u), want));
        }
    }
    const model_file f(false, 2);
    CHECK_THROWS_WITH_AS(models::llama_model::load(f.path, {.pipeline = {"CPU", "MPI1"}, .layer_split = {1, 2}}),
                         "llama_model: layer_split sums to 3 layers, the model has 2", tessera::error);
    CHECK_THROWS_WITH_AS(models::llama_model::load(f.path, {.pipeline = {"MPI1", "MPI1"}}),
                         "llama_model: the pipeline names device MPI1 twice", tessera::error);
}

TEST_CASE("mpi: buffer_from_file maps the file on the worker: its bytes, read-only, the same file only") {
    const model_file f(false, 1);
    const gguf::file g = gguf::file::open(f.path);
    const auto data = g.data_section();
    any_device d = mpi_device(0);
    CHECK(d.caps().buffer_from_file);
    any_buffer b = d.buffer_from_file({f.path, g.data_offset(), data.size(), gguf::header_fingerprint(g)});
    CHECK(b.size() == data.size());
    CHECK(b.type() == mpi_buffer_type(0));
    const gguf::tensor_info& ti = g.tensor("blk.0.attn_q.weight");
    graph::context ctx({true});
    graph::node* t = ctx.new_tensor(ti.type, ti.ne, "wq");
    tensor_alloc(b, *t, b.base() + (ti.data - data.data()));
    std::vector<std::byte> back(static_cast<std::size_t>(ti.size_bytes));
    tensor_get(*t, back.data(), 0, back.size());
    CHECK(std::memcmp(back.data(), ti.data, back.size()) == 0);
    const float zero[4] = {};
    CHECK_THROWS_WITH_AS(tensor_set(*t, zero, 0, sizeof zero),
                         "MPI1 buffer: 'wq' f32 [64, 64, 1, 1] is in a file the worker mapped (read-only)", tessera::error);
    CHECK_THROWS_WITH_AS(d.buffer_from_file({f.path, g.data_offset(), data.size(), gguf::header_fingerprint(g) ^ 1}),
                         doctest::Contains("its header differs from rank 0's file"), tessera::error);
    CHECK_THROWS_WITH_AS(d.buffer_from_file({f.path, g.data_offset() + 32, data.size() - 32, gguf::header_fingerprint(g)}),
                         doctest::Contains("): not the same file"), tessera::error);
    CHECK_THROWS_WITH_AS(d.buffer_from_file({"/nonexistent/model.gguf", 0, 0, 0}),
                         "MPI rank 1: '/nonexistent/model.gguf' is not a regular file: No such file or directory", tessera::error);
    CHECK_THROWS_WITH_AS(d.buffer_from_file({"/dev/null", 0, 0, 0}), "MPI rank 1: '/dev/null' is not a regular file", tessera::error);
    CHECK_THROWS_WITH_AS(cpu_device().buffer_from_file({f.path, 0, 0, 0}), "device CPU cannot map a file", tessera::error);
}

TEST_CASE("mpi: micro-batches through the pipeline equal one process's, bit for bit, at n_copies 1 and 2") {
    const mp::session& s = *mp::session::current();
    const model_file f(false);
    std::vector<std::int32_t> prompt;
    for (int i = 0; i < 29; ++i) prompt.push_back(static_cast<std::int32_t>((i * 37 + 5) % 200));
    auto go = [&](models::llama_model& m) {
        std::vector<std::vector<float>> out;
        out.push_back(m.eval(prompt));  // only the last micro-batch is waited for
        const std::int32_t t = 9;
        out.push_back(m.eval(std::span<const std::int32_t>(&t, 1)));
        m.truncate(3);
        out.push_back(m.eval(std::span<const std::int32_t>(prompt).subspan(3, 11), true));  // every micro-batch read
        return out;
    };
    models::llama_model one = models::llama_model::load(f.path, {.n_threads = 1, .n_ctx = 64, .n_ubatch = 4, .device = "cpu"});
    const auto want = go(one);
    std::vector<std::string> pipeline{"CPU"};
    for (int r = 1; r < s.size(); ++r) pipeline.push_back("MPI" + std::to_string(r));
    for (const int copies : {1, 2}) {
        CAPTURE(copies);
        models::llama_model m = models::llama_model::load(
            f.path, {.n_threads = 1, .n_ctx = 64, .n_ubatch = 4, .n_copies = copies, .pipeline = pipeline});
        CHECK(bit_equal(go(m), want));
        CHECK(m.n_past() == 14);
    }
}
