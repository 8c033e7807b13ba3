// The MPI graph decoder fuzzer's property (tests/backend/mpi/fuzz_graph_decode.cpp), shared
// with test_graph_codec.cpp, which replays the seeds and tests/backend/mpi/fuzz-regressions/.
//
// Input: one selector byte, then bytes.
//   even selector: the bytes are a graph encoding, decoded against a fixed handle table
//                  (1: 64 KiB, 2: 4 KiB, 3: 0 bytes, 4: 16 KiB read-only;
//                  zeroed before each input); a graph the
//                  decoder accepts is computed on the CPU (it must run clean under ASan+UBSan)
//   odd selector:  the bytes are commands for a fresh worker_core, each a u32 length then
//                  the message; a command that asks for bulk bytes takes the next chunk
// Property: nothing but tessera::error is thrown, and nothing crashes or hangs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/backend/cpu.hpp"
#include "tessera/backend/mpi/graph_codec.hpp"
#include "tessera/backend/mpi/worker.hpp"

namespace graph_fuzz {

namespace mp = tessera::backend::mpi;

inline constexpr std::size_t big_handle = 64 << 10, small_handle = 4 << 10, file_handle = 16 << 10;

struct env {
    tessera::backend::cpu_buffer big{big_handle, 64}, small{small_handle, 64}, file{file_handle, 64};
    mp::handle_table table;
    tessera::backend::cpu_backend cpu{1};
    env() {
        table.add({big.base(), big_handle, false, {}});
        table.add({small.base(), small_handle, false, {}});
        table.add({nullptr, 0, false, {}});
        table.add({file.base(), file_handle, true, {}});
    }
    void reset() {
        std::memset(big.base(), 0, big_handle);  // zeros: every index a graph reads from memory is in range
        std::memset(small.base(), 0, small_handle);
        std::memset(file.base(), 0x3c, file_handle);
    }
};

inline env& the_env() {
    static env e;
    return e;
}

// Splits bytes into u32-length-prefixed chunks (a short tail is one last chunk).
inline std::deque<std::vector<std::byte>> chunks(std::span<const std::byte> b) {
    std::deque<std::vector<std::byte>> out;
    std::size_t at = 0;
    while (at < b.size() && out.size() < 256) {
        std::size_t n = b.size() - at;
        if (n >= 4) {
            std::uint32_t len = 0;
            std::memcpy(&len, b.data() + at, 4);
            at += 4;
            n = std::min<std::size_t>(len, b.size() - at);
        }
        out.emplace_back(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
    }
    return out;
}

struct chunk_transport final : mp::transport {
    std::deque<std::vector<std::byte>>& in;
    explicit chunk_transport(std::deque<std::vector<std::byte>>& i) : in(i) {}
    // the worker's own messages must always parse (a failure here is a bug, not bad input)
    static void check_own(std::span<const std::byte> m) {
        try {
            const mp::msg_header h = mp::read_header(m, "reply");
            mp::wire_reader r(m.subspan(mp::header_bytes), "reply");
            (void)mp::read_status(r);
            (void)h;
        } catch (const tessera::error& e) {
            throw std::logic_error(std::string("the worker sent a malformed message: ") + e.what());
        }
    }
    void send_reply(std::vector<std::byte> m) override { check_own(m); }
    void send_event(std::uint32_t, std::vector<std::byte> m) override { check_own(m); }
    void send_bulk(std::vector<std::byte>) override {}
    void recv_bulk(std::span<std::byte> into) override {
        if (in.empty()) tessera::fail(tessera::errc::io, "fuzz transport: no bulk bytes");
        const std::vector<std::byte> c = std::move(in.front());
        in.pop_front();
        if (c.size() != into.size()) tessera::fail(tessera::errc::io, "fuzz transport: bulk size mismatch");
        if (!c.empty()) std::memcpy(into.data(), c.data(), c.size());
    }
    void peer_send(int, std::uint64_t, std::vector<std::byte>) override {}
    void peer_recv(int, std::uint64_t, std::span<std::byte> into) override { recv_bulk(into); }
};

// Runs one input; returns whether the graph (or every command) was accepted.
inline bool check_one(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return false;
    const std::span<const std::byte> body(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        env& e = the_env();
        e.reset();
        mp::decode_options o;
        o.unsupported = [](const tessera::graph::node& x) { return tessera::backend::cpu::unsupported_reason(x); };
        try {
            mp::decoded_graph d = mp::decode_graph(body, e.table, o);
            e.cpu.graph_compute(d.view());
            return true;
        } catch (const tessera::error&) {
            return false;
        }
    }
    std::deque<std::vector<std::byte>> in = chunks(body);
    chunk_transport t(in);
    mp::worker_options wo;
    wo.max_alloc = 1 << 20;
    wo.max_threads = 2;
    wo.max_graph_bytes = 1 << 20;
    wo.map_files = false;  // (a fuzzed path must not open the host's files)
    mp::worker_core w(t, wo);
    bool all_ok = true;
    while (!in.empty()) {
        const std::vector<std::byte> m = std::move(in.front());
        in.pop_front();
        try {
            if (!w.handle(m)) break;
        } catch (const tessera::error&) {  // a transport failure while replying
            all_ok = false;
        }
        all_ok = all_ok && w.stats().errors == 0;
    }
    return all_ok;
}

}  // namespace graph_fuzz
