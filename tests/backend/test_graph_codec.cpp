// The MPI device's graph encoding and worker core, without MPI (backend/mpi/*.hpp):
// encode -> decode -> compute equals the original graph's compute bit for bit (whole
// graphs and scheduler-like splits, through the decoder alone and through worker_core
// over an in-memory transport); every replayable op is in those graphs; and hostile
// encodings and commands, one per check, each fail with a message naming what and where.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tessera/backend/all.hpp"
#include "tessera/backend/mpi/graph_codec.hpp"
#include "tessera/backend/mpi/wire.hpp"
#include "tessera/backend/mpi/worker.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/graph/replay.hpp"
#include "mpi/fuzz_graph_body.hpp"
#include "mpi/graph_cases.hpp"
#include "mpi/graph_fuzz_seeds.hpp"

namespace codec_test {

using namespace tessera;
using namespace tessera::backend;
using graph::any_tensor;
using graph::node;
using graph::op_kind;
namespace mp = tessera::backend::mpi;

// Where a tensor of the test graph is in the (single) handle `h`.
inline mp::locate_fn locate_in(const any_buffer& buf, std::uint64_t h) {
    return [base = buf.base(), size = buf.size(), h](const node& t) {
        REQUIRE((t.data >= base && t.data <= base + size));
        return mp::location{h, static_cast<std::uint64_t>(t.data - base)};
    };
}

// A handle table with the test graph's buffer as handle 1 (and more handles after it).
inline mp::handle_table table_for(const any_buffer& buf, bool read_only = false) {
    mp::handle_table ht;
    const std::uint64_t h = ht.add({buf.base(), buf.size(), read_only, {}});
    REQUIRE(h == 1);
    return ht;
}

inline std::string error_of(std::span<const std::byte> enc, const mp::handle_table& ht) {
    try {
        mp::decode_options o;
        o.unsupported = [](const node& x) { return cpu::unsupported_reason(x); };
        (void)mp::decode_graph(enc, ht, o);
    } catch (const tessera::error& e) {
        CHECK(e.code() == errc::format);
        return e.what();
    }
    return "(no error)";
}

// ---- record offsets inside an encoding --------------------------------------------------------

struct rec_at {
    std::size_t at;
    int n_src;
    std::size_t param_bytes;
    std::size_t name_len;
    std::size_t after_src() const { return at + 76 + 4 * static_cast<std::size_t>(n_src); }
    std::size_t view_src() const { return after_src(); }
    std::size_t view_offs() const { return after_src() + 4; }
    std::size_t handle() const { return after_src() + 12; }
    std::size_t offset() const { return after_src() + 20; }
    std::size_t params() const { return after_src() + 28; }
    std::size_t end() const { return params() + param_bytes + name_len; }
};
inline std::uint64_t get_le(std::span<const std::byte> b, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(b[at + static_cast<std::size_t>(i)])) << (8 * i);
    return v;
}
inline void put_le(std::vector<std::byte>& b, std::size_t at, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}
inline std::vector<rec_at> records_of(std::span<const std::byte> b) {
    std::vector<rec_at> v;
    std::size_t at = 32;
    const auto n = get_le(b, 8, 4);
    for (std::uint64_t i = 0; i < n; ++i) {
        rec_at r{at, static_cast<int>(get_le(b, at + 4, 1)), static_cast<std::size_t>(get_le(b, at + 6, 2)),
                 static_cast<std::size_t>(get_le(b, at + 5, 1))};
        v.push_back(r);
        at = r.end();
    }
    return v;
}
inline void fix_header(std::vector<std::byte>& b) {
    put_le(b, 16, b.size() - 32, 8);
    put_le(b, 28, mp::crc32(std::span<const std::byte>(b.data(), 28)), 4);
}
// The first record of op `op` (compute records only).
inline rec_at find_op(std::span<const std::byte> b, op_kind op, bool compute = true) {
    for (const rec_at& r : records_of(b))
        if (get_le(b, r.at + 2, 1) == static_cast<std::uint64_t>(op) && get_le(b, r.at, 1) == (compute ? 1u : 0u)) return r;
    FAIL("no record of op " << graph::op_name(op));
    return {};
}

// ---- an in-memory transport for worker_core ------------------------------------------------------

struct memory_transport final : mp::transport {
    std::vector<std::vector<std::byte>> replies, bulk_out;
    std::vector<std::pair<std::uint32_t, std::vector<std::byte>>> events;
    std::deque<std::vector<std::byte>> bulk_in;
    int progress_calls = 0;
    void send_reply(std::vector<std::byte> m) override { replies.push_back(std::move(m)); }
    void send_event(std::uint32_t slot, std::vector<std::byte> m) override { events.emplace_back(slot, std::move(m)); }
    void send_bulk(std::vector<std::byte> b) override { bulk_out.push_back(std::move(b)); }
    void recv_bulk(std::span<std::byte> into) override {
        if (bulk_in.empty()) fail(errc::io, "memory transport: no bulk message");
        if (bulk_in.front().size() != into.size())
            fail_cat(errc::io, "memory transport: bulk message of ", bulk_in.front().size(), " bytes, expected ", into.size());
        std::memcpy(into.data(), bulk_in.front().data(), into.size());
        bulk_in.pop_front();
    }
    void peer_send(int, std::uint64_t, std::vector<std::byte> b) override { bulk_out.push_back(std::move(b)); }
    void peer_recv(int, std::uint64_t, std::span<std::byte> into) override { recv_bulk(into); }
    void progress() override { ++progress_calls; }
};

// Rank 0's side of the conversation, in memory.
struct client {
    memory_transport t;
    mp::worker_core w{t, [] {
                          mp::worker_options o;
                          o.max_alloc = std::size_t{1} << 30;
                          return o;
                      }()};
    std::uint64_t seq = 0;

    bool send(mp::msg_type type, const mp::wire_writer& payload, std::uint32_t stream = 0, std::uint32_t flags = 0) {
        mp::msg_header h;
        h.type = type;
        h.seq = ++seq;
        h.stream = stream;
        h.flags = flags;
        return w.handle(mp::make_message(h, payload.data()));
    }
    // The last reply's status (and a reader positioned after it).
    mp::status reply(mp::wire_reader* rest = nullptr) {
        REQUIRE(!t.replies.empty());
        const auto& m = t.replies.back();
        const mp::msg_header h = mp::read_header(m, "reply");
        CHECK(h.seq == seq);
        static thread_local std::vector<std::byte> keep;
        keep = m;
        mp::wire_reader r(std::span<const std::byte>(keep).subspan(mp::header_bytes), "reply");
        mp::status s = mp::read_status(r);
        if (rest) *rest = r;
        return s;
    }
    std::uint64_t alloc(std::uint64_t n) {
        mp::wire_writer p;
        p.u64(n);
        send(mp::msg_type::buf_alloc, p);
        mp::wire_reader r({}, "");
        const mp::status s = reply(&r);
        REQUIRE_MESSAGE(s.ok, s.message);
        return r.u64("handle");
    }
    std::uint32_t stream_new() {
        mp::wire_writer p;
        p.str("1");
        send(mp::msg_type::stream_new, p);
        mp::wire_reader r({}, "");
        const mp::status s = reply(&r);
        REQUIRE_MESSAGE(s.ok, s.message);
        return r.u32("stream");
    }
    void set(std::uint64_t h, std::uint64_t off, std::span<const std::byte> b) {
        mp::wire_writer p;
        mp::write_region(p, {h, off, b.size()});
        p.bytes(b);
        send(mp::msg_type::set, p);
    }
    // EVENT_RECORD on a stream; returns the EVENT_DONE status.
    mp::status event(std::uint32_t stream, std::uint32_t slot = 7) {
        mp::wire_writer p;
        p.u32(slot);
        send(mp::msg_type::event_record, p, stream);
        REQUIRE(!t.events.empty());
        CHECK(t.events.back().first == slot);
        const auto& m = t.events.back().second;
        CHECK(mp::read_header(m, "event").type == mp::msg_type::event_done);
        mp::wire_reader r(std::span<const std::byte>(m).subspan(mp::header_bytes), "event");
        return mp::read_status(r);
    }
};

}  // namespace codec_test

using namespace codec_test;

TEST_CASE("mpi wire: header and status round trip; hostile headers name the field") {
    mp::msg_header h;
    h.type = mp::msg_type::graph;
    h.seq = 42;
    h.stream = 3;
    const std::vector<std::byte> payload(5, std::byte{7});
    auto m = mp::make_message(h, payload);
    CHECK(m.size() == 36 + 5);
    const mp::msg_header r = mp::read_header(m);
    CHECK(r.type == mp::msg_type::graph);
    CHECK(r.seq == 42);
    CHECK(r.stream == 3);
    CHECK(r.payload_bytes == 5);

    auto bad = [&](std::size_t at, std::uint64_t v, int n) {
        auto c = m;
        put_le(c, at, v, n);
        try {
            (void)mp::read_header(c);
        } catch (const tessera::error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    CHECK(bad(0, 0x11223344, 4) == "message: header: bad magic 0x11223344 (expected 0x504d5354, 'TSMP') (byte 0)");
    CHECK(bad(4, 2, 2) == "message: header: protocol version 2, this worker speaks 1 (byte 4)");
    CHECK(bad(6, 999, 2) == "message: header: unknown message type 999 (byte 6)");
    CHECK(bad(16, 6, 8) == "message: header: payload_bytes 6 does not match the 5 bytes after the header (byte 16)");
    CHECK(bad(28, 2, 4) == "message: header: unknown flags 0x00000002 (byte 28)");
    CHECK(bad(32, 1, 4) == "message: header: reserved field is 1, must be 0 (byte 32)");
    CHECK_THROWS_WITH_AS(mp::read_header(std::span<const std::byte>(m.data(), 35)),
                         "message: header: 35 bytes is shorter than the 36-byte header (byte 0)", tessera::error);

    mp::wire_writer w;
    mp::write_status(w, mp::status{false, errc::shape_mismatch, "boom"});
    mp::wire_reader rd(w.data(), "reply");
    const mp::status s = mp::read_status(rd);
    CHECK_FALSE(s.ok);
    CHECK(s.code == errc::shape_mismatch);
    CHECK(s.message == "boom");
    CHECK_THROWS_WITH_AS(s.rethrow("rank 1: "), "rank 1: boom", tessera::error);
    // a reader names the field it could not read
    mp::wire_reader short_r(std::span<const std::byte>(w.data().data(), 3), "reply");
    CHECK_THROWS_WITH_AS((void)short_r.u64("the size"), "reply: truncated: the size needs 8 bytes, 3 remain (byte 0)", tessera::error);
    CHECK(mp::crc32(std::as_bytes(std::span<const char>("123456789", 9))) == 0xCBF43926u);  // the CRC-32 check value
}

TEST_CASE("mpi graph codec: encode -> decode -> compute equals the original, bit for bit") {
    test_graph t = make_llama_like();
    const std::vector<std::byte> ref = t.reference();
    const mp::handle_table ht = table_for(t.buf);
    const std::vector<std::byte> enc = mp::encode_graph(t.g, locate_in(t.buf, 1));
    mp::decode_options o;
    o.unsupported = [](const node& x) { return cpu::unsupported_reason(x); };
    mp::decoded_graph d = mp::decode_graph(enc, ht, o);
    CHECK(d.nodes.size() == t.g.n_nodes());
    // same ops, layouts, names and addresses as the original nodes, in order
    for (std::size_t i = 0; i < d.nodes.size(); ++i) {
        const node& a = *t.g.nodes()[i];
        const node& b = *d.nodes[i];
        CHECK(a.op == b.op);
        CHECK(a.lay.ne == b.lay.ne);
        CHECK(a.lay.nb == b.lay.nb);
        CHECK(a.name == b.name);
        CHECK(a.bytes() == b.bytes());
    }
    cpu_backend(1).graph_compute(d.view());
    CHECK(t.bytes() == ref);
    // the encoding is deterministic
    CHECK(mp::encode_graph(t.g, locate_in(t.buf, 1)) == enc);

    // every replayable op is in this graph (so the round trip covers all of them)
    std::set<op_kind> ops;
    for (const node* n : t.g.nodes()) ops.insert(n->op);
    for (std::size_t k = 0; k < graph::op_count; ++k) {
        const auto op = static_cast<op_kind>(k);
        if (graph::replayable(op)) CHECK_MESSAGE(ops.count(op), "op not covered: " << graph::op_name(op));
    }
}

TEST_CASE("mpi graph codec: a split (sources from other splits, source views) computes bit for bit") {
    test_graph t = make_llama_like();
    const std::vector<std::byte> ref = t.reference();
    const mp::handle_table ht = table_for(t.buf);
    for (const std::size_t cut : {std::size_t{1}, t.g.n_nodes() / 3, t.g.n_nodes() / 2, t.g.n_nodes() - 1}) {
        CAPTURE(cut);
        t.restore();
        const auto& all = t.g.nodes();
        cpu_backend(1).graph_compute(graph_view(std::span<node* const>(all.data(), cut)));
        const graph_view rest(std::span<node* const>(all.data() + cut, all.size() - cut));
        const auto enc = mp::encode_graph(rest, locate_in(t.buf, 1));
        mp::decoded_graph d = mp::decode_graph(enc, ht);
        CHECK(d.nodes.size() == rest.size());
        CHECK(d.records.size() > d.nodes.size());  // sources came along
        cpu_backend(1).graph_compute(d.view());
        CHECK(t.bytes() == ref);
    }
}

TEST_CASE("mpi graph codec: ops replay does not rebuild are refused when encoding") {
    graph::context c({true});
    any_tensor a = graph::new_tensor(c, type_id::f32, {4, 4, 1, 1}, "a");
    any_tensor y = graph::cumsum(a);
    graph::cgraph g;
    g.build_forward_expand(y);
    CHECK_THROWS_WITH_AS(mp::encode_graph(g, [](const node&) { return mp::location{1, 0}; }),
                         doctest::Contains("op cumsum of 'node_0' f32 [4, 4, 1, 1] is not accepted over MPI yet"), tessera::error);
    CHECK_FALSE(graph::replayable(op_kind::cumsum));
    CHECK_FALSE(graph::replayable(op_kind::custom));
    CHECK(graph::replayable(op_kind::flash_attn_ext));
}

TEST_CASE("mpi graph codec: hostile encodings fail with the record, field and byte offset") {
    test_graph t = make_llama_like();
    const mp::handle_table ht = table_for(t.buf);
    const std::vector<std::byte> good = mp::encode_graph(t.g, locate_in(t.buf, 1));
    REQUIRE(error_of(good, ht) == "(no error)");
    const auto recs = records_of(good);
    REQUIRE(recs.back().end() == good.size());

    auto mutate = [&](auto&& f, bool fix = true) {
        std::vector<std::byte> b = good;
        f(b);
        if (fix) fix_header(b);
        return error_of(b, ht);
    };
    auto set = [&](std::size_t at, std::uint64_t v, int n, bool fix = true) {
        return mutate([&](std::vector<std::byte>& b) { put_le(b, at, v, n); }, fix);
    };

    // D1: the header
    CHECK(error_of(std::span<const std::byte>(good.data(), 20), ht) ==
          "graph message: header: 20 bytes is shorter than the 32-byte header (byte 0)");
    CHECK(set(0, 0x41414141, 4, false) == "graph message: header: bad magic 0x41414141 (expected 0x52475354, 'TSGR') (byte 0)");
    CHECK(set(4, 2, 2) == "graph message: header: graph encoding version 2, this worker reads 1 (byte 4)");
    CHECK(set(6, 1, 2) == "graph message: header: flags are 1, must be 0 (byte 6)");
    CHECK(set(24, 5, 4) == "graph message: header: reserved is 5, must be 0 (byte 24)");
    CHECK(doctest::String(set(8, recs.size() + 1, 4, false).c_str()) == doctest::Contains("header crc32 0x"));
    CHECK(set(8, 70000, 4) == "graph message: header: n_records 70000 is over the limit of 65536 (byte 8)");
    CHECK(doctest::String(set(8, 60000, 4).c_str()) == doctest::Contains("n_records 60000 cannot fit in"));
    CHECK(set(12, recs.size() + 1, 4) ==
          "graph message: header: n_compute " + std::to_string(recs.size() + 1) + " is more than n_records " + std::to_string(recs.size()) + " (byte 12)");
    CHECK(doctest::String(set(12, 1, 4).c_str()) == doctest::Contains("n_compute is 1 but"));
    CHECK(doctest::String(mutate([](std::vector<std::byte>& b) { b.push_back(std::byte{0}); }, false).c_str()) ==
          doctest::Contains("body_bytes"));
    CHECK(mutate([](std::vector<std::byte>& b) { b.push_back(std::byte{0}); }) ==
          "graph message: 1 bytes after the last field (byte " + std::to_string(good.size()) + ")");

    // D2, D3: the fixed fields of a record (record 0 is the token embedding, a leaf)
    const rec_at r0 = recs[0];
    CHECK(set(r0.at, 2, 1) == "graph message: record 0: kind 2 is neither 0 (source) nor 1 (compute) (byte 32)");
    CHECK(set(r0.at + 1, 4, 1) == "graph message: record 0: type 4 is not a tensor type (byte 33)");
    CHECK(set(r0.at + 2, 200, 1) == "graph message: record 0: op 200 is not an op (0..100) (byte 34)");
    CHECK(set(r0.at + 2, static_cast<std::uint64_t>(op_kind::mul_mat), 1) ==
          "graph message: record 0 (mul_mat): a source record must be a leaf (op none) or a view, not op mul_mat (byte 34)");
    CHECK(set(r0.at + 4, 11, 1) == "graph message: record 0 (none): n_src 11 is over 10 (byte 36)");
    CHECK(set(r0.at + 5, 64, 1) == "graph message: record 0 (none): name_len 64 is over 63 (byte 37)");
    CHECK(set(r0.at + 8, 16, 4) == "graph message: record 0 (none): unknown flags 0x00000010 (byte 40)");
    CHECK(set(r0.at + 3, 3, 1) == "graph message: record 0 (none): param_index 3 is not op none's (0) (byte 35)");
    CHECK(set(r0.at + 6, 4, 2) == "graph message: record 0 (none): param_bytes 4, op none's parameters take 0 (byte 38)");
    // D5: layout
    CHECK(set(r0.at + 12 + 8, static_cast<std::uint64_t>(-1), 8) == "graph message: record 0 (none): ne[1] = -1 is outside 0..2^40 (byte 52)");
    CHECK(set(r0.at + 44 + 8, 8, 8) ==
          "graph message: record 0 ('tok_embd', none): a tensor with memory of its own must be contiguous: nb {4, 8, 640, 640}, contiguous is "
          "{4, 64, 640, 640} (byte 76)");
    CHECK(set(r0.at + 44 + 16, std::uint64_t{1} << 50, 8) == "graph message: record 0 (none): nb[2] = 1125899906842624 is over 2^48 (byte 92)");
    // D7: memory
    CHECK(set(r0.handle(), 9, 8) == "graph message: record 0 ('tok_embd', none): handle 9 is not a buffer of this worker (byte " +
                                         std::to_string(r0.handle()) + ")");
    CHECK(set(r0.offset(), t.buf.size() - 8, 8) ==
          "graph message: record 0 ('tok_embd', none): bytes [" + std::to_string(t.buf.size() - 8) + ", +640) run past the " +
              std::to_string(t.buf.size()) + " bytes of buffer 1 (byte " + std::to_string(r0.offset()) + ")");
    CHECK(set(r0.offset(), get_le(good, r0.offset(), 8) + 2, 8) ==
          "graph message: record 0 ('tok_embd', none): offset " + std::to_string(get_le(good, r0.offset(), 8) + 2) +
              " is not a multiple of 4 (the alignment of f32) (byte " + std::to_string(r0.offset()) + ")");
    // D8: writes into read-only memory
    CHECK(doctest::String(error_of(good, table_for(t.buf, true)).c_str()) ==
          doctest::Contains("the result would be written into read-only memory"));

    // D6: sources (the first compute record is get_rows, reading records 0 and 1)
    const rec_at gr = find_op(good, op_kind::get_rows);
    const std::size_t gi = static_cast<std::size_t>(std::find_if(recs.begin(), recs.end(), [&](const rec_at& r) { return r.at == gr.at; }) - recs.begin());
    CHECK(set(gr.at + 76, gi, 4) == "graph message: record " + std::to_string(gi) + " (get_rows): src[0] = " + std::to_string(gi) +
                                        " is not an earlier record (byte " + std::to_string(gr.at + 76) + ")");
    CHECK(set(gr.at + 80, 0xFFFFFFFFu, 4) == "graph message: record " + std::to_string(gi) +
                                                   " (get_rows): src[1] is empty but n_src says it is the last source (byte " +
                                                   std::to_string(gr.at + 80) + ")");
    CHECK(doctest::String(set(gr.at + 80, 0, 4).c_str()) ==
          doctest::Contains("get_rows): the op's builder refuses it: get_rows: operand indices 'tok_embd' f32 [16, 10, 1, 1] must be i32"));
    // D9: the builder's result must be the record's
    CHECK(doctest::String(set(gr.at + 1, static_cast<std::uint64_t>(type_id::i32), 1).c_str()) ==
          doctest::Contains("is not what get_rows makes of its sources: f32 [16, 3, 1, 1]"));
    // a view past its root, a view root that is a view
    const rec_at vw = find_op(good, op_kind::view);
    CHECK(doctest::String(set(vw.view_offs(), 4096, 8).c_str()) == doctest::Contains("run past the 160 bytes of its root"));
    const rec_at rs = find_op(good, op_kind::reshape);
    auto index_of = [&](const rec_at& x) {
        return static_cast<std::size_t>(std::find_if(recs.begin(), recs.end(), [&](const rec_at& r) { return r.at == x.at; }) - recs.begin());
    };
    CHECK(doctest::String(set(rs.view_src(), 0, 4).c_str()) == doctest::Contains("view_src/view_offs do not match what reshape makes (a view at byte 0 of its root)"));
    CHECK(set(vw.view_src(), index_of(rs), 4) == "graph message: record " + std::to_string(index_of(vw)) + " ('k_cache (view) (view)', view): view_src = " +
                                                     std::to_string(index_of(rs)) + " is a view, not a root (byte " + std::to_string(vw.view_src()) + ")");
    // D4: parameter values
    const rec_at un = find_op(good, op_kind::unary);
    CHECK(doctest::String(set(un.params(), 99, 1).c_str()) == doctest::Contains("params.op = 99 is not one of the 22 values (0..21)"));
    const rec_at as = find_op(good, op_kind::argsort);
    CHECK(doctest::String(set(as.params(), 2, 1).c_str()) ==
          doctest::Contains(("params.descending = 2 is not a boolean (0 or 1) (byte " + std::to_string(as.params()) + ")").c_str()));
    const rec_at ro = find_op(good, op_kind::rope);
    CHECK(doctest::String(set(ro.params(), 3, 4).c_str()) == doctest::Contains("rope: n_dims 3 must be even and in 1..a.ne0 (8)"));
    CHECK(doctest::String(set(ro.params() + 4, 5, 4).c_str()) == doctest::Contains("rope: mode 5 is not one of ggml's"));
    const rec_at tk = find_op(good, op_kind::top_k);
    CHECK(doctest::String(set(tk.params(), 100, 4).c_str()) == doctest::Contains("top_k: k = 100 must be in [1, ne0]"));
    // truncated in the name of the last record
    const rec_at last = recs.back();
    REQUIRE(last.name_len >= 3);
    CHECK(mutate([&](std::vector<std::byte>& b) { b.resize(b.size() - 3); }) ==
          "graph message: record " + std::to_string(recs.size() - 1) + " (" +
              std::string(graph::op_name(static_cast<op_kind>(get_le(good, last.at + 2, 1)))) + "): truncated: name needs " +
              std::to_string(last.name_len) + " bytes, " + std::to_string(last.name_len - 3) + " remain (byte " +
              std::to_string(last.params() + last.param_bytes) + ")");
}

TEST_CASE("mpi worker core: a graph computed through commands equals the CPU, bit for bit") {
    test_graph t = make_llama_like();
    const std::vector<std::byte> ref = t.reference();
    client c;
    {  // HELLO with this build's id
        mp::wire_writer p;
        p.u64(mp::build_id());
        p.u32(1234);
        p.str("rank0-host");
        c.send(mp::msg_type::hello, p);
        mp::wire_reader r({}, "");
        const mp::status s = c.reply(&r);
        REQUIRE_MESSAGE(s.ok, s.message);
        CHECK(r.u32("pid") > 0);
        CHECK_FALSE(r.str("host", 255).empty());
        CHECK(r.str("name", 255) == "CPU");
    }
    const std::uint32_t st = c.stream_new();
    const std::uint64_t h = c.alloc(t.buf.size());
    c.set(h, 0, t.before);
    {  // the graph, inline
        const auto enc = mp::encode_graph(t.g, locate_in(t.buf, h));
        mp::wire_writer p;
        p.u64(enc.size());
        p.bytes(enc);
        c.send(mp::msg_type::graph, p, st);
    }
    const mp::status es = c.event(st);
    CHECK_MESSAGE(es.ok, es.message);
    CHECK(c.t.progress_calls > 0);  // the progress hook runs between nodes
    {
        mp::wire_writer p;
        mp::write_region(p, {h, 0, t.buf.size()});
        c.send(mp::msg_type::get, p);
        REQUIRE(c.t.bulk_out.size() == 1);
        CHECK(c.t.bulk_out[0] == ref);
    }
    // the same graph again, sent as bulk after a reset of the buffer
    c.set(h, 0, t.before);
    {
        const auto enc = mp::encode_graph(t.g, locate_in(t.buf, h));
        mp::wire_writer p;
        p.u64(enc.size());
        c.t.bulk_in.push_back(enc);
        c.send(mp::msg_type::graph, p, st, mp::header_flag_bulk_follows);
        CHECK(c.t.bulk_in.empty());
    }
    CHECK(c.event(st).ok);
    {
        mp::wire_writer p;
        mp::write_region(p, {h, 0, t.buf.size()});
        c.send(mp::msg_type::get, p);
        CHECK(c.t.bulk_out.back() == ref);
    }
    const mp::worker_stats& ws = c.w.stats();
    CHECK(ws.graphs == 2);
    CHECK(ws.nodes == 2 * t.g.n_nodes());
    CHECK(ws.errors == 0);
    // SHUTDOWN ends the loop and frees everything
    CHECK_FALSE(c.send(mp::msg_type::shutdown, mp::wire_writer{}));
    CHECK(c.reply().ok);
    CHECK(c.w.handles().size() == 0);
    CHECK(c.w.stream_count() == 0);
}

TEST_CASE("mpi worker core: hostile commands are answered or reported, never fatal") {
    client c;
    const std::uint32_t st = c.stream_new();
    const std::uint64_t h = c.alloc(64);
    // HELLO from another build
    {
        mp::wire_writer p;
        p.u64(mp::build_id() ^ 1);
        p.u32(1);
        p.str("x");
        c.send(mp::msg_type::hello, p);
        const mp::status s = c.reply();
        CHECK_FALSE(s.ok);
        CHECK(s.message.find("HELLO") == std::string::npos);
        CHECK(s.message.find("differs from this worker's") != std::string::npos);
        CHECK(s.message.rfind("hello command (seq " + std::to_string(c.seq) + "): build id 0x", 0) == 0);
    }
    // SET past the end: the stream's sticky error, reported by the next event, then cleared
    {
        mp::wire_writer p;
        mp::write_region(p, {h, 60, 8});
        p.bytes(std::vector<std::byte>(8).data(), 8);
        CHECK(c.send(mp::msg_type::set, p, st));
        const mp::status s = c.event(st);
        CHECK_FALSE(s.ok);
        CHECK(s.message == "set command (seq " + std::to_string(c.seq - 1) +
                               "): dst: bytes [60, +8) run past the 64 bytes of buffer " + std::to_string(h) + " (byte 44)");
        CHECK(c.event(st).ok);
    }
    // unknown handle, inline data shorter than announced, trailing bytes
    {
        mp::wire_writer p;
        mp::write_region(p, {99, 0, 4});
        p.u32(0);
        c.send(mp::msg_type::set, p, st);
        CHECK(c.event(st).message.find("dst: handle 99 is not a buffer of this worker (byte 36)") != std::string::npos);
        mp::wire_writer q;
        mp::write_region(q, {h, 0, 8});
        q.u32(0);
        c.send(mp::msg_type::set, q, st);
        CHECK(c.event(st).message.find("truncated: data needs 8 bytes, 4 remain (byte 60)") != std::string::npos);
        mp::wire_writer z;
        z.u64(h);
        z.u8(0);
        z.u8(0);
        c.send(mp::msg_type::buf_clear, z, st);
        CHECK(c.event(st).message.find("1 bytes after the last field (byte 45)") != std::string::npos);
    }
    // a graph on a stream that does not exist; a graph that does not decode
    {
        mp::wire_writer p;
        p.u64(0);
        c.send(mp::msg_type::graph, p, 77);
        mp::wire_writer ping;
        c.send(mp::msg_type::ping, ping);  // stream 77 unknown: the error is the device's
        CHECK(c.reply().message.find("stream 77 does not exist on this worker") != std::string::npos);
        mp::wire_writer g;
        g.u64(4);
        g.u32(0);
        c.send(mp::msg_type::graph, g, st);
        CHECK(c.event(st).message.find("graph: header: 4 bytes is shorter than the 32-byte header (byte 44)") != std::string::npos);
    }
    // a sequence gap is reported, then the worker follows the new numbering
    {
        c.seq += 5;
        c.send(mp::msg_type::ping, mp::wire_writer{});
        const mp::status s = c.reply();
        CHECK_FALSE(s.ok);
        CHECK(s.message == "ping command (seq " + std::to_string(c.seq) + "): sequence number " + std::to_string(c.seq) +
                               ", expected " + std::to_string(c.seq - 5) + " (a command was lost or repeated)");
        c.send(mp::msg_type::ping, mp::wire_writer{});
        CHECK(c.reply().ok);
    }
    // an unparseable message is a device-level error that the next PING reports
    {
        std::vector<std::byte> junk(10, std::byte{1});
        CHECK(c.w.handle(junk));
        c.send(mp::msg_type::ping, mp::wire_writer{});
        CHECK(c.reply().message == "command to rank 1: header: 10 bytes is shorter than the 36-byte header (byte 0)");
    }
    // allocation limits, thread counts, unknown frees, event slots
    {
        mp::wire_writer p;
        p.u64(std::uint64_t{1} << 40);
        c.send(mp::msg_type::buf_alloc, p);
        const mp::status s = c.reply();
        CHECK(s.code == errc::out_of_memory);
        CHECK(s.message.find("is more than this worker allocates at once") != std::string::npos);
        mp::wire_writer q;
        q.str("100000");
        c.send(mp::msg_type::stream_new, q);
        CHECK(c.reply().message.find("100000 threads is not in 1..512") != std::string::npos);
        mp::wire_writer f;
        f.u64(12345);
        c.send(mp::msg_type::buf_free, f, st);
        CHECK(c.event(st).message.find("handle 12345 is not a buffer of this worker") != std::string::npos);
        mp::wire_writer e;
        e.u32(mp::max_event_slots);
        c.send(mp::msg_type::event_record, e, st);
        CHECK(c.event(st).message.find("event slot 16384 is over 16383") != std::string::npos);
    }
    CHECK(c.w.stats().errors >= 10);
    CHECK(c.w.handles().size() == 1);
}

TEST_CASE("mpi graph fuzzer: every seed is accepted by the property; the regression inputs run clean") {
    const auto seeds = graph_fuzz::make_seeds();
    CHECK(seeds.size() > 50);
    for (const auto& s : seeds) {
        CAPTURE(s.name);
        CHECK(graph_fuzz::check_one(s.bytes.data(), s.bytes.size()) == s.accepted);
        // every cut of a seed is refused cleanly (a truncated message never crashes)
        if (s.name == "graph-whole" || s.name == "commands-session")
            for (std::size_t n = 1; n < s.bytes.size(); n += 97) (void)graph_fuzz::check_one(s.bytes.data(), n);
    }
    namespace fs = std::filesystem;
    std::size_t n = 0;
    if (fs::is_directory(TESSERA_GRAPH_FUZZ_REGRESSIONS))
        for (const auto& e : fs::directory_iterator(TESSERA_GRAPH_FUZZ_REGRESSIONS)) {
            if (!e.is_regular_file() || e.path().extension() == ".md") continue;
            std::ifstream f(e.path(), std::ios::binary);
            std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            CAPTURE(e.path().string());
            (void)graph_fuzz::check_one(b.data(), b.size());
            ++n;
        }
    MESSAGE("graph fuzz regressions replayed: " << n);
}
