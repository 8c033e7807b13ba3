// Seeds for the MPI graph decoder fuzzer (fuzz_graph_body.hpp's input format): the
// llama-like test graph whole, cut into splits, node by node, and command sequences for
// a worker. Written to files by make_graph_fuzz_seeds.cpp; test_graph_codec.cpp checks
// that the fuzzer's property accepts every one of them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_graph_body.hpp"
#include "graph_cases.hpp"
#include "tessera/backend/mpi/graph_codec.hpp"
#include "tessera/backend/mpi/wire.hpp"
#include "tessera/backend/mpi/worker.hpp"

namespace graph_fuzz {

struct seed {
    std::string name;
    std::vector<std::uint8_t> bytes;
    bool accepted;  // what check_one must say
};

inline std::vector<std::uint8_t> with_selector(std::uint8_t sel, std::span<const std::byte> b) {
    std::vector<std::uint8_t> v{sel};
    for (std::byte x : b) v.push_back(std::to_integer<std::uint8_t>(x));
    return v;
}

inline std::vector<seed> make_seeds() {
    using namespace codec_test;
    std::vector<seed> out;
    test_graph t = make_llama_like();
    if (t.buf.size() > big_handle) tessera::fail(tessera::errc::invalid_argument, "seeds: the test graph outgrew handle 1");
    const std::byte* base = t.buf.base();
    const mp::locate_fn at_handle1 = [base](const node& n) { return mp::location{1, static_cast<std::uint64_t>(n.data - base)}; };
    const auto& all = t.g.nodes();
    out.push_back({"graph-whole", with_selector(0, mp::encode_graph(t.g, at_handle1)), true});
    for (std::size_t cut : {all.size() / 4, all.size() / 2, 3 * all.size() / 4}) {
        const graph_view rest(std::span<node* const>(all.data() + cut, all.size() - cut));
        out.push_back({"graph-split-" + std::to_string(cut), with_selector(2, mp::encode_graph(rest, at_handle1)), true});
    }
    for (std::size_t i = 0; i < all.size(); ++i)
        out.push_back({"graph-node-" + std::to_string(i) + "-" + std::string(graph::op_name(all[i]->op)),
                       with_selector(4, mp::encode_graph(graph_view(std::span<node* const>(all.data() + i, 1)), at_handle1)), true});

    // a worker session: stream, buffer, inline data, a graph inline and as bulk, events, reads, copies
    std::uint64_t seq = 0;
    std::vector<std::uint8_t> cmds{1};
    auto add_chunk = [&cmds](std::span<const std::byte> b) {
        const auto n = static_cast<std::uint32_t>(b.size());
        for (int i = 0; i < 4; ++i) cmds.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
        for (std::byte x : b) cmds.push_back(std::to_integer<std::uint8_t>(x));
    };
    auto cmd = [&](mp::msg_type type, const mp::wire_writer& p, std::uint32_t stream = 0, std::uint32_t flags = 0) {
        mp::msg_header h;
        h.type = type;
        h.seq = ++seq;
        h.stream = stream;
        h.flags = flags;
        add_chunk(mp::make_message(h, p.data()));
    };
    {
        mp::wire_writer p;
        p.str("1");
        cmd(mp::msg_type::stream_new, p);
    }
    {
        mp::wire_writer p;
        p.u64(t.buf.size());
        cmd(mp::msg_type::buf_alloc, p);
    }
    {
        mp::wire_writer p;
        mp::write_region(p, {1, 0, t.before.size()});
        p.bytes(t.before);
        cmd(mp::msg_type::set, p);
    }
    // one node inline, the whole graph as bulk
    const auto one = mp::encode_graph(graph_view(std::span<node* const>(all.data(), 1)), at_handle1);
    {
        mp::wire_writer p;
        p.u64(one.size());
        p.bytes(one);
        cmd(mp::msg_type::graph, p, 1);
        mp::wire_writer q;  // the same node asked as SUPPORTS_OP (decoded against a memoryless table)
        q.u64(one.size());
        q.bytes(one);
        cmd(mp::msg_type::supports_op, q);
    }
    const auto whole = mp::encode_graph(t.g, at_handle1);
    {
        mp::wire_writer p;
        p.u64(whole.size());
        cmd(mp::msg_type::graph, p, 1, mp::header_flag_bulk_follows);
        add_chunk(whole);
    }
    {
        mp::wire_writer p;
        p.u32(3);
        cmd(mp::msg_type::event_record, p, 1);
    }
    {
        mp::wire_writer p;
        mp::write_region(p, {1, 64, 128});
        cmd(mp::msg_type::get, p);
        mp::wire_writer m;
        mp::write_region(m, {1, 0, 32});
        m.u8(7);
        cmd(mp::msg_type::memset, m);
        mp::wire_writer c;
        mp::write_region(c, {1, 0, 32});
        c.u64(1);
        c.u64(256);
        cmd(mp::msg_type::copy, c);
        mp::wire_writer z;
        z.u64(1);
        z.u8(0);
        cmd(mp::msg_type::buf_clear, z);
    }
    for (mp::msg_type ty : {mp::msg_type::memory, mp::msg_type::stats, mp::msg_type::ping}) cmd(ty, mp::wire_writer{});
    {
        mp::wire_writer p;
        p.u64(mp::build_id());
        p.u32(1);
        p.str("host");
        cmd(mp::msg_type::hello, p);
    }
    cmd(mp::msg_type::shutdown, mp::wire_writer{});
    out.push_back({"commands-session", cmds, true});
    return out;
}

}  // namespace graph_fuzz
