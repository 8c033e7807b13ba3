// worker_core: what an MPI worker rank does with rank 0's commands, without MPI. It keeps
// the worker's buffers (a handle table), its CPU streams and their sticky errors, checks
// every command (header, sequence number, payload, buffer ranges, writes into read-only
// memory) and computes received graphs (graph_codec.hpp) on the CPU. Bytes reach it only
// through the `transport` interface: the MPI session implements it over two
// communicators (backend/mpi/transport.hpp); the tests and the fuzzer implement it in
// memory.
//
//   my_transport t;
//   mpi::worker_core w(t);
//   while (w.handle(next_message())) {}
//
// Every command is answered or recorded, never fatal: a synchronous command (HELLO,
// MEMORY, STREAM_NEW, BUF_ALLOC, STATS, PING, SHUTDOWN, ...) gets a reply whose status
// carries its error; a failed asynchronous one (SET, GET, GRAPH, ...) becomes the sticky
// error of its stream, reported and cleared by the next EVENT_DONE of that stream (PING
// reports and clears the device-level one, stream 0). Messages that cannot be parsed are
// device-level errors too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "tessera/backend/cpu.hpp"
#include "tessera/backend/mpi/graph_codec.hpp"
#include "tessera/backend/mpi/wire.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/mapped_file.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::mpi {

// The byte paths a worker uses; see the top of the file. Each call may throw
// tessera::error (a size mismatch, a lost peer); the worker turns it into the command's error.
class transport {
public:
    virtual ~transport() = default;
    // A reply to rank 0's synchronous command.
    virtual void send_reply(std::vector<std::byte> msg) = 0;
    // EVENT_DONE for event slot k.
    virtual void send_event(std::uint32_t slot, std::vector<std::byte> msg) = 0;
    // Bytes for rank 0 (a GET); the transport owns them until they are sent.
    virtual void send_bulk(std::vector<std::byte> bytes) = 0;
    // The same from memory that may change once this returns (a GET of a tensor: the next
    // command may overwrite it): a copy to send_bulk, or sent and waited for.
    virtual void send_bulk_from(std::span<const std::byte> bytes) { send_bulk(std::vector<std::byte>(bytes.begin(), bytes.end())); }
    // Exactly into.size() bytes from rank 0 (a SET or GRAPH whose payload did not fit inline).
    virtual void recv_bulk(std::span<std::byte> into) = 0;
    // Tensor bytes to / from another worker rank, matched by the transfer id.
    virtual void peer_send(int dst_rank, std::uint64_t xfer, std::vector<std::byte> bytes) = 0;
    virtual void peer_recv(int src_rank, std::uint64_t xfer, std::span<std::byte> into) = 0;
    // Lets pending sends and receives move on (called between the nodes of a compute).
    virtual void progress() {}
};

// Equal on every rank built from the same sources by the same compiler.
inline std::uint64_t build_id() {
    std::uint64_t h = fnv1a64(TESSERA_VERSION_STRING);
#if defined(__VERSION__)
    h = fnv1a64(__VERSION__, h);
#endif
    const std::uint64_t facts[] = {sizeof(graph::op_params), graph::op_count, static_cast<std::uint64_t>(type_id_count),
                                   protocol_version, graph_version, sizeof(void*)};
    return fnv1a64(std::span<const std::byte>(reinterpret_cast<const std::byte*>(facts), sizeof facts), h);
}

struct worker_options {
    std::size_t max_alloc = static_cast<std::size_t>(PTRDIFF_MAX);  // the largest BUF_ALLOC (the fuzzer lowers it)
    int max_threads = 512;                                         // the largest STREAM_NEW thread count
    std::size_t max_graph_bytes = max_command_bytes;                // the largest graph encoding
    bool map_files = true;                                         // BUF_MAP_FILE allowed (the fuzzer turns it off)
    int rank = 1;                                                  // this worker's rank (for messages)
};

struct worker_stats {
    std::uint64_t commands = 0, errors = 0;
    std::uint64_t bytes_in = 0, bytes_out = 0;  // SET / PEER_RECV payloads in, GET / PEER_SEND out
    std::uint64_t graphs = 0, nodes = 0;
};

// Would a CPU worker of this build compute the one-node graph `enc` (whose roots all say
// handle 1, offset 0)? It is decoded against a table whose handle 1 has no memory, so
// nothing is bound or computed: every check of the decoder, then the CPU's
// unsupported_reason. Returns "" when it would, else why not. SUPPORTS_OP answers with
// this on the worker; rank 0 calls it itself for a worker that said at HELLO that its
// device is this build's CPU (the same answer without a round trip).
inline std::string probe_support(std::span<const std::byte> enc, std::string what, std::size_t origin) {
    handle_table probe;
    probe.add({nullptr, std::uint64_t{1} << 62, false, nullptr});
    decode_options o;
    o.what = std::move(what);
    o.origin = origin;
    o.unsupported = [](const graph::node& x) { return cpu::unsupported_reason(x); };
    try {
        (void)decode_graph(enc, probe, o);
        return {};
    } catch (const tessera::error& e) {
        std::string why = e.what();
        return why.empty() ? std::string("refused") : why;
    }
}

class worker_core {
public:
    explicit worker_core(transport& t, worker_options o = {}) : t_(t), opt_(o) {}
    worker_core(const worker_core&) = delete;
    worker_core& operator=(const worker_core&) = delete;

    // Handles one command message. False after SHUTDOWN (the loop ends).
    bool handle(std::span<const std::byte> msg) {
        ++stats_.commands;
        msg_header h;
        try {
            h = read_header(msg, "command to rank " + std::to_string(opt_.rank));
        } catch (const tessera::error& e) {
            ++stats_.errors;
            set_sticky(0, status::from(e));
            return true;
        }
        wire_writer reply;  // the fields after the status
        status st;
        try {
            if (h.seq != last_seq_ + 1)
                fail(errc::format, what(h) + ": sequence number " + std::to_string(h.seq) + ", expected " + std::to_string(last_seq_ + 1) +
                                       " (a command was lost or repeated)");
            last_seq_ = h.seq;
            wire_reader r(msg.subspan(header_bytes), what(h), header_bytes);
            dispatch(h, r, reply);
        } catch (const tessera::error& e) {
            st = status::from(e);
        } catch (const std::bad_alloc&) {
            st = status{false, errc::out_of_memory, what(h) + ": out of memory"};
        }
        if (h.seq > last_seq_) last_seq_ = h.seq;  // resynchronise after a gap (the gap itself is reported)
        if (!st.ok) ++stats_.errors;
        if (is_synchronous(h.type)) {
            wire_writer w;
            write_status(w, st);
            if (st.ok) w.bytes(reply.data());
            msg_header rh;
            rh.type = h.type;
            rh.seq = h.seq;
            rh.stream = h.stream;
            t_.send_reply(make_message(rh, w.data()));
        } else if (!st.ok) {
            set_sticky(streams_.count(h.stream) ? h.stream : 0, st);
        }
        return !(h.type == msg_type::shutdown && st.ok);
    }

    const handle_table& handles() const noexcept { return handles_; }
    const worker_stats& stats() const noexcept { return stats_; }
    std::size_t stream_count() const noexcept { return streams_.size(); }
    // The sticky error of a stream (0: device level), if any.
    std::optional<status> sticky(std::uint32_t stream) const {
        const auto it = sticky_.find(stream);
        if (it == sticky_.end()) return std::nullopt;
        return it->second;
    }

private:
    struct stream_state {
        std::unique_ptr<cpu_backend> be;
    };

    static std::string what(const msg_header& h) {
        return std::string(msg_type_name(h.type)) + " command (seq " + std::to_string(h.seq) + ")";
    }

    void set_sticky(std::uint32_t stream, const status& s) {
        if (!sticky_.count(stream)) sticky_.emplace(stream, s);  // the first error is the one that explains
    }
    status take_sticky(std::uint32_t stream) {
        status s;
        if (auto it = sticky_.find(stream); it != sticky_.end()) {
            s = it->second;
            sticky_.erase(it);
        }
        return s;
    }

    // The bytes [offset, offset + size) of a buffer, after checking that they exist (and
    // that they may be written).
    std::byte* range(wire_reader& r, std::size_t at, const region& g, bool write, std::string_view name) {
        const handle_table::entry* e = handles_.find(g.handle);
        if (!e) r.fail_at(at, std::string(name) + ": handle " + std::to_string(g.handle) + " is not a buffer of this worker");
        std::uint64_t end = 0;
        if (g.offset > e->size || __builtin_add_overflow(g.offset, g.size, &end) || end > e->size)
            r.fail_at(at + 8, std::string(name) + ": bytes [" + std::to_string(g.offset) + ", +" + std::to_string(g.size) +
                                  ") run past the " + std::to_string(e->size) + " bytes of buffer " + std::to_string(g.handle));
        if (write && e->read_only)
            r.fail_at(at, std::string(name) + ": buffer " + std::to_string(g.handle) + " is read-only (a mapped file)");
        return e->base ? e->base + g.offset : nullptr;
    }

    stream_state& stream_of(wire_reader& r, std::uint32_t id) {
        const auto it = streams_.find(id);
        if (it == streams_.end()) {
            (void)r;
            fail(errc::invalid_argument, "stream " + std::to_string(id) + " does not exist on this worker");
        }
        return it->second;
    }

    // The payload that is either inline or announced (u64 size) and received as bulk.
    std::vector<std::byte> inline_or_bulk(const msg_header& h, wire_reader& r, std::uint64_t size, std::string_view name) {
        if (h.flags & header_flag_bulk_follows) {
            r.expect_end();
            if (size > opt_.max_graph_bytes)
                r.fail_here(std::string(name) + ": " + std::to_string(size) + " bulk bytes is over the limit of " +
                            std::to_string(opt_.max_graph_bytes));
            std::vector<std::byte> b(static_cast<std::size_t>(size));
            t_.recv_bulk(b);
            return b;
        }
        const auto s = r.bytes(static_cast<std::size_t>(std::min<std::uint64_t>(size, SIZE_MAX)), name);
        r.expect_end();
        return {s.begin(), s.end()};
    }

    void dispatch(const msg_header& h, wire_reader& r, wire_writer& out) {
        switch (h.type) {
            case msg_type::hello: {
                const std::uint64_t id = r.u64("build_id");
                (void)r.u32("pid");
                (void)r.str("hostname", 255);
                r.expect_end();
                if (id != build_id())
                    r.fail_at(0, "build id 0x" + hex64(id) + " of rank 0 differs from this worker's 0x" + hex64(build_id()) +
                                     " (every rank must run the same tessera build)");
                const memory_info m = backend::detail::system_memory();
                out.u32(static_cast<std::uint32_t>(pid()));
                out.str(hostname());
                out.str("CPU");
                out.str(std::string(cpu_device().description()));
                out.u64(m.free);
                out.u64(m.total);
                return;
            }
            case msg_type::memory: {
                r.expect_end();
                const memory_info m = backend::detail::system_memory();
                out.u64(m.free);
                out.u64(m.total);
                return;
            }
            case msg_type::stream_new: {
                const std::string params(r.str("params", max_params_string));
                r.expect_end();
                const int n = backend::detail::parse_n_threads(params, 4);
                if (n < 1 || n > opt_.max_threads)
                    r.fail_at(0, "params: " + std::to_string(n) + " threads is not in 1.." + std::to_string(opt_.max_threads));
                auto be = std::make_unique<cpu_backend>(n);
                be->set_abort_callback([this] {
                    t_.progress();
                    return false;
                });
                const std::uint32_t id = next_stream_++;
                streams_.emplace(id, stream_state{std::move(be)});
                out.u32(id);
                return;
            }
            case msg_type::stream_free: {
                const std::uint32_t id = r.u32("stream id");
                r.expect_end();
                if (!streams_.erase(id)) r.fail_at(0, "stream " + std::to_string(id) + " does not exist on this worker");
                sticky_.erase(id);
                return;
            }
            case msg_type::buf_alloc: {
                const std::uint64_t n = r.u64("size");
                r.expect_end();
                if (n > opt_.max_alloc)
                    fail(errc::out_of_memory, what(h) + ": " + bytes_str(n) + " is more than this worker allocates at once (" +
                                                  bytes_str(opt_.max_alloc) + ")");
                auto buf = std::make_shared<cpu_buffer>(static_cast<std::size_t>(n), 64);
                std::byte* base = buf->base();
                out.u64(handles_.add({base, n, false, std::move(buf)}));
                return;
            }
            case msg_type::buf_free: {
                const std::uint64_t hd = r.u64("handle");
                r.expect_end();
                if (!handles_.erase(hd)) r.fail_at(0, "handle " + std::to_string(hd) + " is not a buffer of this worker");
                return;
            }
            case msg_type::buf_clear: {
                const std::uint64_t hd = r.u64("handle");
                const std::uint8_t v = r.u8("value");
                r.expect_end();
                const handle_table::entry* e = handles_.find(hd);
                if (!e) r.fail_at(0, "handle " + std::to_string(hd) + " is not a buffer of this worker");
                if (e->read_only) r.fail_at(0, "buffer " + std::to_string(hd) + " is read-only (a mapped file)");
                if (e->size) std::memset(e->base, v, static_cast<std::size_t>(e->size));
                return;
            }
            case msg_type::set: {
                const std::size_t at = r.pos();
                const region g = read_region(r, "dst");
                std::byte* p = range(r, at, g, true, "dst");
                if (h.flags & header_flag_bulk_follows) {
                    r.expect_end();
                    t_.recv_bulk(std::span<std::byte>(p, static_cast<std::size_t>(g.size)));
                } else {
                    const auto b = r.bytes(static_cast<std::size_t>(g.size), "data");
                    r.expect_end();
                    if (g.size) std::memcpy(p, b.data(), b.size());
                }
                stats_.bytes_in += g.size;
                return;
            }
            case msg_type::get: {
                // A GET that fails still answers with an empty bulk message, so rank 0's
                // receive ends at once (as a short receive) instead of waiting for bytes
                // that will not come; the error itself comes with the next event or PING.
                const std::byte* p = nullptr;
                region g;
                try {
                    const std::size_t at = r.pos();
                    g = read_region(r, "src");
                    r.expect_end();
                    p = range(r, at, g, false, "src");
                } catch (const tessera::error&) {
                    t_.send_bulk({});
                    throw;
                }
                stats_.bytes_out += g.size;
                t_.send_bulk_from(std::span<const std::byte>(p, static_cast<std::size_t>(g.size)));
                return;
            }
            case msg_type::memset: {
                const std::size_t at = r.pos();
                const region g = read_region(r, "dst");
                const std::uint8_t v = r.u8("value");
                r.expect_end();
                std::byte* p = range(r, at, g, true, "dst");
                if (g.size) std::memset(p, v, static_cast<std::size_t>(g.size));
                return;
            }
            case msg_type::copy: {
                const std::size_t at = r.pos();
                const region s = read_region(r, "src");
                const std::size_t dat = r.pos();
                region dd;
                dd.handle = r.u64("dst.handle");
                dd.offset = r.u64("dst.offset");
                dd.size = s.size;
                r.expect_end();
                const std::byte* ps = range(r, at, s, false, "src");
                std::byte* pd = range(r, dat, dd, true, "dst");
                if (s.size) std::memmove(pd, ps, static_cast<std::size_t>(s.size));
                return;
            }
            case msg_type::peer_send: {
                const std::size_t at = r.pos();
                const region g = read_region(r, "src");
                const std::uint32_t dst = r.u32("dst rank");
                const std::uint64_t xfer = r.u64("xfer");
                r.expect_end();
                const std::byte* p = nullptr;
                try {
                    p = range(r, at, g, false, "src");
                } catch (const tessera::error&) {
                    t_.peer_send(static_cast<int>(dst), xfer, {});  // the receiver's wait ends (short), as for GET
                    throw;
                }
                stats_.bytes_out += g.size;
                t_.peer_send(static_cast<int>(dst), xfer, std::vector<std::byte>(p, p + g.size));
                return;
            }
            case msg_type::peer_recv: {
                const std::size_t at = r.pos();
                const region g = read_region(r, "dst");
                const std::uint32_t src = r.u32("src rank");
                const std::uint64_t xfer = r.u64("xfer");
                r.expect_end();
                std::byte* p = range(r, at, g, true, "dst");
                stats_.bytes_in += g.size;
                t_.peer_recv(static_cast<int>(src), xfer, std::span<std::byte>(p, static_cast<std::size_t>(g.size)));
                return;
            }
            case msg_type::graph: {
                stream_state& s = stream_of(r, h.stream);
                const std::size_t at = r.offset();
                const std::uint64_t n = r.u64("graph size");
                if (!(h.flags & header_flag_bulk_follows) && n != r.remaining())
                    r.fail_here("graph size " + std::to_string(n) + " does not match the " + std::to_string(r.remaining()) +
                                " bytes that follow");
                const std::vector<std::byte> enc = inline_or_bulk(h, r, n, "graph");
                decode_options o;
                o.what = what(h) + ": graph";
                o.origin = (h.flags & header_flag_bulk_follows) ? 0 : at + 8;
                o.unsupported = [](const graph::node& x) { return cpu::unsupported_reason(x); };
                decoded_graph d = decode_graph(enc, handles_, o);
                s.be->graph_compute(d.view());
                ++stats_.graphs;
                stats_.nodes += d.nodes.size();
                return;
            }
            case msg_type::event_record: {
                const std::uint32_t slot = r.u32("slot");
                r.expect_end();
                if (slot >= max_event_slots) r.fail_at(0, "event slot " + std::to_string(slot) + " is over " + std::to_string(max_event_slots - 1));
                if (h.stream != 0) (void)stream_of(r, h.stream);
                status s = take_sticky(h.stream);
                if (s.ok && h.stream != 0) s = take_sticky(0);
                wire_writer w;
                write_status(w, s);
                w.u32(slot);
                msg_header eh;
                eh.type = msg_type::event_done;
                eh.seq = h.seq;
                eh.stream = h.stream;
                t_.send_event(slot, make_message(eh, w.data()));
                return;
            }
            case msg_type::stats: {
                r.expect_end();
                for (std::uint64_t v : {stats_.commands, stats_.errors, stats_.bytes_in, stats_.bytes_out, stats_.graphs, stats_.nodes})
                    out.u64(v);
                return;
            }
            case msg_type::ping: {
                r.expect_end();
                take_sticky(0).rethrow();
                return;
            }
            case msg_type::shutdown: {
                r.expect_end();
                streams_.clear();
                handles_.clear();
                sticky_.clear();
                return;
            }
            case msg_type::supports_op: {
                // a one-node graph whose roots all say handle 1, offset 0: decoded against a
                // table whose handle 1 has no memory (nothing is bound or computed), so every
                // check of the decoder and the CPU's unsupported_reason answer
                const std::size_t at = r.offset();
                const std::uint64_t n = r.u64("graph size");
                if (n != r.remaining())
                    r.fail_here("graph size " + std::to_string(n) + " does not match the " + std::to_string(r.remaining()) + " bytes that follow");
                const auto enc = r.bytes(static_cast<std::size_t>(n), "graph");
                r.expect_end();
                const std::string why = probe_support(enc, what(h) + ": graph", at + 8);
                out.u8(why.empty() ? 1 : 0);
                out.str(std::string_view(why).substr(0, max_status_message));
                return;
            }
            case msg_type::buf_map_file: {
                // the worker maps the GGUF file itself (no weight byte travels): read-only
                const std::string path(r.str("path", max_path_bytes));
                const std::uint64_t off = r.u64("data_offset");
                const std::uint64_t size = r.u64("data_size");
                const std::uint64_t fp = r.u64("fingerprint");
                r.expect_end();
                if (path.empty() || path.find('\0') != std::string::npos) r.fail_at(0, "path: empty or with a NUL byte");
                const std::string where = "'" + path + "'";
                if (!opt_.map_files) fail(errc::unsupported, where + ": this worker maps no files");
                // (opening a FIFO or a device would block or read forever: regular files only)
                std::error_code ec;
                if (!std::filesystem::is_regular_file(path, ec)) fail(errc::io, where + " is not a regular file" + (ec ? ": " + ec.message() : std::string()));
                auto f = std::make_shared<mapped_file>(mapped_file::open(path));
                if (off > f->size() || size > f->size() - off)
                    fail(errc::invalid_argument, where + " has " + std::to_string(f->size()) + " bytes, rank 0's region is " +
                                                     std::to_string(size) + " bytes at " + std::to_string(off) + ": not the same file");
                // the bytes before the region and the file's size (for a GGUF file its
                // header and tensor table: gguf::header_fingerprint)
                if (const std::uint64_t mine = prefix_fingerprint(f->bytes(), off); mine != fp)
                    fail(errc::invalid_argument, where + ": its header differs from rank 0's file (fingerprint 0x" + hex64(mine) +
                                                     ", expected 0x" + hex64(fp) + "): not the same file");
                std::byte* base = const_cast<std::byte*>(f->data() + off);
                out.u64(handles_.add({base, size, true, std::move(f)}));
                return;
            }
            case msg_type::event_done:
                fail(errc::format, what(h) + ": EVENT_DONE is a reply, not a command");
        }
        fail(errc::format, what(h) + ": unknown command");
    }

    static std::string hex64(std::uint64_t v) { return detail::hex32(static_cast<std::uint32_t>(v >> 32)) + detail::hex32(static_cast<std::uint32_t>(v)); }
    static long pid() {
#if defined(__unix__) || defined(__APPLE__)
        return static_cast<long>(::getpid());
#else
        return 0;
#endif
    }
    static std::string hostname() {
#if defined(__unix__) || defined(__APPLE__)
        char buf[256] = {};
        if (::gethostname(buf, sizeof buf - 1) == 0) return buf;
#endif
        return "?";
    }

    transport& t_;
    worker_options opt_;
    handle_table handles_;
    std::unordered_map<std::uint32_t, stream_state> streams_;
    std::unordered_map<std::uint32_t, status> sticky_;
    std::uint64_t last_seq_ = 0;
    std::uint32_t next_stream_ = 1;
    worker_stats stats_;
};

}  // namespace backend::mpi
TESSERA_END_NAMESPACE
