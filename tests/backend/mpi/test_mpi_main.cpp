// The MPI session and worker loop at mpirun -np >= 2: rank 0 drives rank 1 with raw commands
// (HELLO, streams, buffers, inline and bulk SET, a graph inline and as bulk, events, GET)
// and the results equal the CPU's bit for bit; hostile commands come back as errors and the
// worker goes on. Workers serve; without mpirun it prints SKIP and exits 77.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <vector>

#include "graph_cases.hpp"
#include "tessera/backend/mpi.hpp"
#include "tessera/backend/mpi/graph_codec.hpp"

namespace {
namespace mp = tessera::backend::mpi;
mp::session* g_session = nullptr;

std::uint64_t u64_at(const std::vector<std::byte>& b, std::size_t at) {
    mp::wire_reader r(b, "reply");
    (void)r.bytes(at, "skip");
    return r.u64("value");
}
}  // namespace

TEST_CASE("mpi np2: a graph computed on rank 1 equals the CPU, bit for bit") {
    mp::session& s = *g_session;
    codec_test::test_graph t = codec_test::make_llama_like();
    const std::vector<std::byte> ref = t.reference();
    const auto stats0 = s.request(1, mp::msg_type::stats, {});  // other cases ran before (the counters are cumulative)
    {
        mp::wire_writer p;
        p.u64(mp::build_id());
        p.u32(0);
        p.str("rank0");
        const auto r = s.request(1, mp::msg_type::hello, p.data());
        mp::wire_reader rd(r, "hello reply");
        CHECK(rd.u32("pid") > 0);
    }
    mp::wire_writer sp;
    sp.str("1");
    const auto sr = s.request(1, mp::msg_type::stream_new, sp.data());
    const auto stream = static_cast<std::uint32_t>(mp::wire_reader(sr, "").u32("stream"));
    mp::wire_writer ap;
    ap.u64(t.buf.size());
    const std::uint64_t h = u64_at(s.request(1, mp::msg_type::buf_alloc, ap.data()), 0);
    CHECK(h >= 1);
    const std::byte* base = t.buf.base();
    const mp::locate_fn loc = [base, h](const tessera::graph::node& n) { return mp::location{h, static_cast<std::uint64_t>(n.data - base)}; };
    for (const bool bulk : {false, true}) {
        CAPTURE(bulk);
        // the inputs, then the graph
        mp::wire_writer set;
        mp::write_region(set, {h, 0, t.before.size()});
        if (!bulk) set.bytes(t.before);
        s.command(1, mp::msg_type::set, set.data(), 0, bulk ? mp::header_flag_bulk_follows : 0);
        if (bulk) s.send_bulk(1, t.before);
        const auto enc = mp::encode_graph(t.g, loc);
        mp::wire_writer g;
        g.u64(enc.size());
        if (!bulk) g.bytes(enc);
        s.command(1, mp::msg_type::graph, g.data(), stream, bulk ? mp::header_flag_bulk_follows : 0);
        if (bulk) s.send_bulk(1, enc);
        const mp::status st = s.record_and_wait(1, stream, 5);
        CHECK_MESSAGE(st.ok, st.message);
        mp::wire_writer get;
        mp::write_region(get, {h, 0, t.buf.size()});
        s.command(1, mp::msg_type::get, get.data());
        std::vector<std::byte> back(t.buf.size());
        s.recv_bulk(1, back);
        CHECK(back == ref);
    }
    // a hostile command: the error comes back with the event, and the worker goes on
    mp::wire_writer bad;
    mp::write_region(bad, {h, t.buf.size(), 8});
    bad.u64(0);
    s.command(1, mp::msg_type::set, bad.data(), stream);
    const mp::status st = s.record_and_wait(1, stream, 6);
    CHECK_FALSE(st.ok);
    CHECK(st.message.find("run past the") != std::string::npos);
    CHECK(s.record_and_wait(1, stream, 6).ok);
    const auto stats = s.request(1, mp::msg_type::stats, {});
    CHECK(u64_at(stats, 8) - u64_at(stats0, 8) == 1);    // errors
    CHECK(u64_at(stats, 32) - u64_at(stats0, 32) == 2);  // graphs
    // a synchronous command's error comes back in its reply, named by rank
    mp::wire_writer huge;
    huge.u64(UINT64_MAX);
    CHECK_THROWS_WITH_AS(s.request(1, mp::msg_type::buf_alloc, huge.data()),
                         doctest::Contains("MPI rank 1: buf_alloc command (seq"), tessera::error);
    CHECK_THROWS_WITH_AS(s.request(1, mp::msg_type::buf_free, {}), doctest::Contains("buf_free has no reply"), tessera::error);
    CHECK(s.request(1, mp::msg_type::ping, {}).empty());
}

int main(int argc, char** argv) {
    try {
        mp::session s(argc, argv);
        if (!s.is_root()) return s.serve();
        if (s.size() < 2) {
            std::puts("SKIP: run under mpirun -np >= 2");
            return 77;
        }
        g_session = &s;
        doctest::Context ctx(argc, argv);
        return ctx.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "test_backend_mpi: %s\n", e.what());
        return 1;
    }
}
