// The MPI devices through the scheduler: the llama-style block (tests/backend/block.hpp)
// with some weights on remote ranks and the rest on the CPU, computed at n_copies 1 and 2,
// equal to the CPU alone bit for bit (one thread on every side: same kernels, same
// inputs, tensors copied byte for byte). Suite mpi_multi needs mpirun -np 3: weights on
// MPI1 and MPI2, so activations also travel from worker to worker. Also the registry,
// and rank 0's and the worker's errors with their messages.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "../block.hpp"
#include "graph_cases.hpp"
#include "tessera/backend/mpi.hpp"
#include "tessera/backend/registry.hpp"

using namespace tessera;
using namespace tessera::backend;
namespace mp = tessera::backend::mpi;

namespace {

const std::set<std::string> attention = {"wq", "wk", "wv", "wo"};
const std::set<std::string> ffn = {"ffn_norm", "w_gate_up", "w_down"};

// The block's output bytes, computed by one CPU thread alone.
std::vector<float> cpu_alone(const blocktest::dims& d, std::int64_t shift) {
    blocktest::placed p = blocktest::place(d, {}, cpu_buffer_type());
    std::vector<graph::node*> rest;
    for (graph::node* n : p.b.g.leafs())
        if (!n->data) rest.push_back(n);
    for (graph::node* n : p.b.g.nodes()) rest.push_back(n);
    any_buffer buf = alloc_tensors(rest, cpu_buffer_type());
    blocktest::set_inputs(p.b, shift);
    cpu_init(1).graph_compute(p.b.g);
    return tensor_to_f32(*p.b.out.get());
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Weights by name: in a buffer of `where[name]` (an MPI device's buffer type), the rest on the CPU.
struct multi_placed {
    blocktest::block b;
    std::vector<any_buffer> buffers;
};
multi_placed place(const blocktest::dims& d, const std::vector<std::pair<std::set<std::string>, any_buffer_type>>& where) {
    multi_placed p{blocktest::build(d), {}};
    std::vector<graph::node*> cpu_w;
    std::vector<std::vector<graph::node*>> dev_w(where.size());
    for (graph::node* w : p.b.weights) {
        bool placed = false;
        for (std::size_t i = 0; i < where.size() && !placed; ++i)
            if (where[i].first.count(w->name)) dev_w[i].push_back(w), placed = true;
        if (!placed) cpu_w.push_back(w);
    }
    for (std::size_t i = 0; i < where.size(); ++i)
        if (!dev_w[i].empty()) p.buffers.push_back(alloc_tensors(dev_w[i], where[i].second, buffer_usage::weights));
    if (!cpu_w.empty()) p.buffers.push_back(alloc_tensors(cpu_w, cpu_buffer_type(), buffer_usage::weights));
    blocktest::fill_weights(p.b);
    return p;
}

}  // namespace

TEST_CASE("mpi: the registry lists MPI1.. on rank 0, and best_device() is not a remote rank") {
    registry& r = registry::global();
    const mp::session& s = *mp::session::current();
    REQUIRE(r.reg_by_name("MPI"));
    CHECK(r.reg_by_name("MPI").device_count() == static_cast<std::size_t>(s.size() - 1));
    CHECK(r.dev_by_name("MPI1") == mpi_device(0));
    CHECK(r.best_device().type() == device_type::cpu);
    const device_props p = mpi_device(0).props();
    CHECK(p.name == "MPI1");
    CHECK(p.description.find("rank 1 of " + std::to_string(s.size()) + " on ") == 0);
    CHECK(p.caps.events);
    CHECK(p.caps.async);
    CHECK(mpi_device(0).emulated());
    // the same handle every time (the registry compares identities)
    CHECK(r.reg_by_name("MPI").device(0) == mpi_device(0));
    // "progress": what llama installs as its CPU stream's abort callback in a pipeline
    const auto progress = r.reg_by_name("MPI").proc<progress_fn>("progress");
    REQUIRE(static_cast<bool>(progress));
    CHECK_FALSE(progress());
    CHECK(r.reg_by_name("MPI").proc_address("set_n_threads") == nullptr);
}

TEST_CASE("mpi: the block with its attention on MPI1 equals the CPU alone, bit for bit, at n_copies 1 and 2") {
    const blocktest::dims d;
    for (const int copies : {1, 2}) {
        CAPTURE(copies);
        multi_placed p = place(d, {{attention, mpi_buffer_type(0)}});
        any_backend mpi1 = mpi_init(0, "1"), cpu = cpu_init(1);
        scheduler s({mpi1, cpu}, {}, copies);
        s.alloc_graph(p.b.g);
        INFO(s.print());
        for (graph::node* n : p.b.g.nodes())
            if (n->op == graph::op_kind::mul_mat && n->src[0]->op == graph::op_kind::none)
                CHECK_MESSAGE(s.tensor_backend(n) == (attention.count(n->src[0]->name) ? mpi1 : cpu), n->name);
        CHECK(s.n_splits() >= 3);
        for (std::int64_t i = 0; i < 3; ++i) {
            blocktest::set_inputs(p.b, i);
            s.graph_compute(p.b.g);
            CHECK(bit_equal(tensor_to_f32(*p.b.out.get()), cpu_alone(d, i)));
        }
    }
}

TEST_CASE("mpi: rank 0's checks and the worker's errors come back with their messages") {
    any_backend mpi1 = mpi_init(0, "1");
    graph::context host;  // allocates: host memory
    graph::node* a = host.new_tensor(type_id::f32, {4, 1, 1, 1}, "a");
    graph::cgraph g;
    g.build_forward_expand(graph::scale(graph::any_tensor(a), 2.0f));
    CHECK_THROWS_WITH_AS(mpi1.graph_compute(g),
                         "MPI1: tensor 'a' f32 [4, 1, 1, 1] is in host memory, not in an MPI1 buffer; copy it there or run the graph through a scheduler",
                         tessera::error);
    float v[4] = {};
    CHECK_THROWS_WITH_AS(mpi1.set_tensor_async(*a, v, 0, 16), "MPI1: set_tensor_async: 'a' f32 [4, 1, 1, 1] is not in an MPI1 buffer",
                         tessera::error);
    // a GET the worker refuses: it answers with an empty message at once (no wait for the
    // timeout), and the device-level error comes with the next PING, named by rank
    mp::session& s = *mp::session::current();
    mp::bulk_receive b = s.post_get(1, 0, {999, 0, 16}, v);
    CHECK_FALSE(s.finish_get(b));
    CHECK_THROWS_WITH_AS(s.request(1, mp::msg_type::ping, {}),
                         doctest::Contains("MPI rank 1: get command (seq"), tessera::error);
    CHECK(s.request(1, mp::msg_type::ping, {}).empty());  // reported once, then cleared
    // the stream is still usable
    any_buffer buf = mpi_buffer_type(0).alloc_buffer(64);
    graph::context ctx({true});
    graph::node* t = ctx.new_tensor(type_id::f32, {4, 1, 1, 1}, "t");
    tensor_alloc(buf, *t, buf.base());
    const float in[4] = {1, 2, 3, 4};
    float out[4] = {};
    mpi1.set_tensor_async(*t, in, 0, 16);
    mpi1.get_tensor_async(*t, out, 0, 16);
    mpi1.synchronize();
    CHECK(std::memcmp(in, out, 16) == 0);
    // a command the worker refuses on the stream, whose event is recorded again before
    // anyone waits for it: the error is not lost, the stream's next synchronize() throws it
    const std::uint32_t stream = as_mpi(mpi1)->state()->id();
    mp::wire_writer bad;
    mp::write_region(bad, {as_mpi_buffer(*t)->handle(), 64, 8});
    bad.u64(0);
    (void)s.command(1, mp::msg_type::set, bad.data(), stream);
    any_event e = mpi_device(0).event_new();
    e.record(mpi1);
    e.record(mpi1);
    e.synchronize();  // (the second record's own status is clean)
    std::string msg;
    try {
        mpi1.synchronize();
    } catch (const tessera::error& x) {
        msg = x.what();
    }
    CHECK(msg.rfind("MPI1: set command (seq ", 0) == 0);
    CHECK(msg.find("dst: bytes [64, +8) run past the 64 bytes of buffer") != std::string::npos);
    CHECK_NOTHROW(mpi1.synchronize());  // reported once
}

TEST_SUITE("mpi_multi") {
TEST_CASE("mpi np3: attention on MPI1, feed-forward on MPI2: worker-to-worker copies, bit-equal to the CPU alone") {
    const mp::session& ss = *mp::session::current();
    if (ss.size() < 3) {
        MESSAGE("needs mpirun -np 3");
        return;
    }
    const blocktest::dims d;
    for (const int copies : {1, 2}) {
        CAPTURE(copies);
        multi_placed p = place(d, {{attention, mpi_buffer_type(0)}, {ffn, mpi_buffer_type(1)}});
        any_backend mpi1 = mpi_init(0, "1"), mpi2 = mpi_init(1, "1"), cpu = cpu_init(1);
        scheduler s({mpi1, mpi2, cpu}, {}, copies);
        s.alloc_graph(p.b.g);
        INFO(s.print());
        // some split on MPI2 reads a tensor that lives on MPI1: a PEER_SEND / PEER_RECV pair
        bool peer = false;
        for (const auto& sp : s.splits())
            for (const auto& in : sp.inputs)
                if (const mpi_buffer* from = as_mpi_buffer(*in.src); from && from->rank() == 1 && sp.backend == 1) peer = true;
        CHECK(peer);
        for (std::int64_t i = 0; i < 3; ++i) {
            blocktest::set_inputs(p.b, i);
            s.graph_compute(p.b.g);
            CHECK(bit_equal(tensor_to_f32(*p.b.out.get()), cpu_alone(d, i)));
        }
    }
}
}

// check_mpi_death.py runs this one with TESSERA_MPI_TEST_DIE / TESSERA_MPI_TEST_STALL: a
// worker dies or hangs at its n-th graph, and the job must end with a clear message.
TEST_CASE("mpi: a long pipeline over every worker stays bit-equal to the CPU alone") {
    const mp::session& ss = *mp::session::current();
    const blocktest::dims d;
    std::vector<std::pair<std::set<std::string>, any_buffer_type>> where{{attention, mpi_buffer_type(0)}};
    if (ss.size() >= 3) where.push_back({ffn, mpi_buffer_type(1)});
    multi_placed p = place(d, where);
    std::vector<any_backend> streams;
    for (int r = 1; r < std::min(ss.size(), 3); ++r) streams.push_back(mpi_init(static_cast<std::size_t>(r - 1), "1"));
    streams.push_back(cpu_init(1));
    scheduler s(streams, {}, 2);
    s.alloc_graph(p.b.g);
    const std::vector<float> want = cpu_alone(d, 0);
    for (int i = 0; i < 12; ++i) {
        blocktest::set_inputs(p.b, 0);
        s.graph_compute(p.b.g);
        CHECK(bit_equal(tensor_to_f32(*p.b.out.get()), want));
    }
}

TEST_CASE("mpi: supports_op answered on rank 0 for a CPU worker equals the worker's own answer") {
    codec_test::test_graph t = codec_test::make_llama_like();
    // and nodes the CPU refuses (rows of integer tables: no get_rows kernel)
    graph::context& c = *t.ctx;
    const graph::any_tensor w = graph::new_tensor(c, type_id::i16, {256, 2, 1, 1}, "w_i16");
    const graph::any_tensor ids = graph::new_tensor(c, type_id::i32, {1, 1, 1, 1}, "ids");
    std::vector<graph::node*> nodes(t.g.nodes().begin(), t.g.nodes().end());
    nodes.push_back(graph::get_rows(graph::new_tensor(c, type_id::i8, {256, 2, 1, 1}, "w_i8"), ids).get());
    nodes.push_back(graph::get_rows(w, ids).get());
    mp::session& s = *mp::session::current();
    int yes = 0, no = 0;
    for (graph::node* n : nodes) {
        if (!graph::replayable(n->op)) continue;
        node* const one[] = {n};
        const auto enc = mp::encode_graph(graph_view(std::span<node* const>(one)), [](const node&) { return mp::location{1, 0}; });
        const bool here = s.supports(1, enc), there = s.ask_supports(1, enc);
        CHECK_MESSAGE(here == there, n->name, " (", graph::op_name(n->op), ")");
        (here ? yes : no) += 1;
        CHECK(mpi_device(0).supports_op(*n) == here);
    }
    CHECK(yes > 30);
    CHECK(no >= 2);
}
