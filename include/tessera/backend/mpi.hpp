// Remote devices over MPI (docs/distributed.md, design: docs/design/mpi-plan.md). Built only
// with TESSERA_MPI (Meson's `mpi` option; Debian libopenmpi-dev); without it this header
// declares nothing.
//
//   tessera::backend::mpi::session s(argc, argv);
//   if (!s.is_root()) return s.serve();      // workers: run rank 0's commands until SHUTDOWN
//   any_device d = registry::global().dev_by_name("MPI1");   // rank 1's CPU, seen from rank 0
//
// The MPI family: on rank 0 of a session with N ranks, mpi_reg() ("MPI") lists N-1 devices
// MPI1..MPI<N-1>, each a proxy for that rank's CPU:
//   mpi_buffer_type(i)   memory on rank i+1; base() is a PROT_NONE reservation (as Vulkan's),
//                        a tensor's remote offset is t.bytes() - base()
//   mpi_buffer           set/get/memset/copy/clear as commands to the worker
//   mpi_init(i, params)  a stream (params: its thread count): graphs travel encoded
//                        (graph_codec.hpp), tensor I/O as SET/GET/COPY/PEER messages
//   event_new()          an event: one MPI request for that rank's EVENT_DONE
//   supports_op(x)       the worker's answer, cached per encoding: a CPU worker's is computed
//                        on rank 0 by the same check (probe_support), others are asked (SUPPORTS_OP)
// The session registers the family in registry::global() when it starts and removes it
// when it ends. Only the thread that started the session calls MPI (MPI_THREAD_FUNNELED).
#pragma once

#if defined(TESSERA_MPI) && TESSERA_MPI

#include <mpi.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/backend/mpi/graph_codec.hpp"
#include "tessera/backend/mpi/transport.hpp"
#include "tessera/backend/mpi/wire.hpp"
#include "tessera/backend/mpi/worker.hpp"
#include "tessera/backend/registry.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {
any_reg mpi_reg();
}  // namespace backend
namespace backend::mpi {

// What rank 0 learned of a worker at HELLO. Kept for the whole program (MPI starts once
// per process), so the names and descriptions device models hand out stay valid.
struct peer_info {
    std::string name;         // "MPI<r>"
    std::string description;  // "rank r of N on <host> (pid p): <its CPU's description>"
    std::string host;
    long pid = 0;
    memory_info memory;
    bool cpu = false;         // its device is this build's CPU: supports_op is answered on rank 0
};
namespace detail {
inline std::deque<peer_info>& peer_table() {
    static std::deque<peer_info> t;  // index: rank - 1 (deque: references stay valid as it grows)
    return t;
}
}  // namespace detail

// What rank 0 sent and received (mpi::session::traffic(); generate --mpi prints it per token).
struct traffic_counters {
    std::uint64_t commands = 0;        // command messages sent
    std::uint64_t control_bytes = 0;   // their headers and payloads but tensor bytes and graphs; replies and events
    std::uint64_t tensor_bytes = 0;    // SET and GET payloads (activations, inputs, results)
    std::uint64_t peer_bytes = 0;      // worker-to-worker copies rank 0 ordered (they do not pass rank 0)
    std::uint64_t graphs = 0;          // GRAPH commands
    std::uint64_t graph_bytes = 0;     // their encodings
};

// Event slots below this are left to raw record_and_wait calls (tests); devices take the rest.
inline constexpr std::uint32_t first_device_event_slot = 16;

// The receives of one GET: chunks of at most bulk_chunk bytes straight into the caller's memory.
struct bulk_receive {
    int rank = 0;
    std::vector<MPI_Request> reqs;
    std::vector<std::size_t> sizes;
};

class session {
public:
    session(int& argc, char**& argv) {
        int inited = 0;
        MPI_Initialized(&inited);
        if (inited) fail(errc::invalid_argument, "mpi::session: MPI is already initialized (one session per process)");
        int provided = 0;
        check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", -1);
        if (provided < MPI_THREAD_FUNNELED) {
            MPI_Finalize();
            fail(errc::unsupported, "mpi::session: the MPI library does not provide MPI_THREAD_FUNNELED");
        }
        t_ = std::make_unique<mpi_transport>();
        install_sigterm_line(rank());
        thread_ = std::this_thread::get_id();
        seq_.assign(static_cast<std::size_t>(t_->size()), 0);
        next_slot_.assign(static_cast<std::size_t>(t_->size()), first_device_event_slot);
        free_slots_.resize(static_cast<std::size_t>(t_->size()));
        supports_.resize(static_cast<std::size_t>(t_->size()));
        current_ptr() = this;
        if (is_root() && size() > 1) {
            try {
                hello_all();
                registry::global().register_backend(mpi_reg());
            } catch (const std::exception& e) {
                std::fprintf(stderr, "tessera: MPI session: %s\n", e.what());
                MPI_Abort(MPI_COMM_WORLD, 3);  // the workers wait in serve(); nothing else ends them
            }
        }
    }
    // The active session of this process, or null.
    static session* current() noexcept { return current_ptr(); }
    // The session, for a device of rank r: it exists, this is rank 0, r is a worker, and
    // this is the thread that started it.
    static session& require(int r) {
        session* s = current();
        if (!s) fail(errc::invalid_argument, "MPI" + std::to_string(r) + ": no MPI session (start tessera::backend::mpi::session first)");
        s->check_root(r);
        return *s;
    }
    const peer_info& peer(int r) const { return detail::peer_table().at(static_cast<std::size_t>(r - 1)); }
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    // Rank 0: SHUTDOWN to every worker, each answer awaited (bounded by TESSERA_MPI_TIMEOUT);
    // a worker that does not answer means MPI_Abort (MPI_Finalize would hang).
    ~session() {
        if (is_root() && size() > 1) {
            try {
                registry::global().unregister_backend(mpi_reg());
            } catch (...) {
            }
        }
        // a worker that died or hangs: MPI_Finalize would wait for it forever, so the job ends
        // with MPI_Abort (mpirun then ends every rank)
        bool ok = true;
        for (int r = 1; r < size() && is_root(); ++r)
            if (t_->lost(r)) ok = false;
        if (is_root() && !shut_down_ && ok) {
            for (int r = 1; r < size(); ++r) try {
                    (void)request(r, msg_type::shutdown, {});
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "tessera: MPI rank %d did not shut down: %s\n", r, e.what());
                    ok = false;
                }
        }
        if (ok) try {
                t_->drain();
            } catch (const std::exception&) {
                ok = false;
            }
        if (!ok) MPI_Abort(MPI_COMM_WORLD, 3);
        current_ptr() = nullptr;
        t_.reset();
        MPI_Finalize();
    }

    int rank() const noexcept { return t_->rank(); }
    int size() const noexcept { return t_->size(); }
    bool on_session_thread() const noexcept { return std::this_thread::get_id() == thread_; }
    bool is_root() const noexcept { return rank() == 0; }
    mpi_transport& transport() noexcept { return *t_; }

    // Worker ranks: runs rank 0's commands until SHUTDOWN; returns main()'s exit status.
    int serve(worker_options o = {}) {
        check_thread();
        if (is_root()) fail(errc::invalid_argument, "mpi::session::serve: rank 0 gives the commands; only workers serve");
        o.rank = rank();
        worker_core w(*t_, o);
        std::vector<std::byte> msg;
        backoff b;
        const test_hook die = test_hook::from_env("TESSERA_MPI_TEST_DIE"), stall = test_hook::from_env("TESSERA_MPI_TEST_STALL");
        std::uint64_t graphs = 0;
        auto next_check = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (true) {
            t_->progress();
            bool got = false;
            try {
                got = t_->try_recv_command(msg);
            } catch (const tessera::error& e) {
                std::fprintf(stderr, "tessera: MPI worker rank %d: %s\n", rank(), e.what());
                continue;
            }
            if (!got) {
                // idle has no deadline (rank 0 may wait for its user), but rank 0 must exist
                if (const auto now = std::chrono::steady_clock::now(); now >= next_check) {
                    next_check = now + std::chrono::seconds(1);
                    if (t_->lost(0) || process_gone(t_->pid(0))) {
                        std::fprintf(stderr, "tessera: MPI worker rank %d: %s is gone; exiting\n", rank(), t_->label(0).c_str());
                        std::fflush(stderr);
                        std::_Exit(1);  // (MPI_Finalize would wait for it)
                    }
                }
                b.pause();
                continue;
            }
            b = backoff{};
            if (msg.size() >= 8 && (std::to_integer<unsigned>(msg[6]) | std::to_integer<unsigned>(msg[7]) << 8) ==
                                       static_cast<unsigned>(msg_type::graph)) {
                ++graphs;  // the test hooks (docs/distributed.md): die or hang at the n-th GRAPH
                if (die.at(rank(), graphs)) ::raise(SIGKILL);
                if (stall.at(rank(), graphs))
                    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
            }
            if (!w.handle(msg)) break;
        }
        shut_down_ = true;
        t_->drain();
        return 0;
    }

    // Test-only hooks, read by workers from the environment: "r:n" = rank r, n-th GRAPH.
    struct test_hook {
        int rank = -1;
        std::uint64_t n = 0;
        static test_hook from_env(const char* name) {
            test_hook h;
            const char* e = std::getenv(name);
            if (!e) return h;
            int r = -1;
            unsigned long long n = 0;
            if (std::sscanf(e, "%d:%llu", &r, &n) == 2 && r > 0 && n > 0) h = {r, n};
            else std::fprintf(stderr, "tessera: %s='%s' is not r:n (ignored)\n", name, e);
            return h;
        }
        bool at(int r, std::uint64_t k) const noexcept { return rank == r && n == k; }
    };

    // ---- rank 0: raw commands ----------------------------------------------------------------
    // Sends a command (asynchronous: no reply awaited); returns its sequence number.
    std::uint64_t command(int r, msg_type type, std::span<const std::byte> payload, std::uint32_t stream = 0, std::uint32_t flags = 0) {
        check_root(r);
        msg_header h;
        h.type = type;
        h.seq = ++seq_[static_cast<std::size_t>(r)];
        h.stream = stream;
        h.flags = flags;
        std::vector<std::byte> m = make_message(h, payload);
        if (m.size() > max_command_bytes) fail(errc::invalid_argument, "mpi: a command of " + bytes_str(m.size()) + " is over the limit; send the payload as bulk");
        ++traffic_.commands;
        traffic_.control_bytes += m.size();
        t_->isend_owned(t_->ctrl(), r, tag_cmd, std::move(m));
        return h.seq;
    }
    // A synchronous command: the reply's fields after its status (an error status throws,
    // prefixed with the rank).
    std::vector<std::byte> request(int r, msg_type type, std::span<const std::byte> payload, std::uint32_t stream = 0) {
        check_root(r);
        if (!is_synchronous(type))
            fail(errc::invalid_argument, "mpi::session::request: " + std::string(msg_type_name(type)) + " has no reply (use command)");
        // the reply is found by probing (its size is read, not guessed); FIFO per rank keeps it in order
        const std::uint64_t seq = command(r, type, payload, stream);
        std::vector<std::byte> m = recv_probed(r, tag_reply, "the reply to " + std::string(msg_type_name(type)));
        const msg_header h = read_header(m, "reply from rank " + std::to_string(r));
        if (h.seq != seq || h.type != type)
            fail(errc::format, "reply from rank " + std::to_string(r) + ": seq " + std::to_string(h.seq) + " (" +
                                   std::string(msg_type_name(h.type)) + "), expected " + std::to_string(seq));
        wire_reader rd(std::span<const std::byte>(m).subspan(header_bytes), "reply from rank " + std::to_string(r), header_bytes);
        read_status(rd).rethrow("MPI rank " + std::to_string(r) + ": ");
        return {m.begin() + static_cast<std::ptrdiff_t>(header_bytes + rd.pos()), m.end()};
    }
    // EVENT_RECORD on a stream, then its EVENT_DONE: the status of everything before it.
    status record_and_wait(int r, std::uint32_t stream, std::uint32_t slot) {
        wire_writer p;
        p.u32(slot);
        (void)command(r, msg_type::event_record, p.data(), stream);
        std::vector<std::byte> m = recv_probed(r, tag_event_base + static_cast<int>(slot), "event " + std::to_string(slot));
        (void)read_header(m, "event from rank " + std::to_string(r));
        wire_reader rd(std::span<const std::byte>(m).subspan(header_bytes), "event from rank " + std::to_string(r), header_bytes);
        return read_status(rd);
    }
    void send_bulk(int r, std::span<const std::byte> b) {
        check_root(r);
        t_->isend_chunked(t_->data(), r, tag_bulk, b);
    }
    void recv_bulk(int r, std::span<std::byte> into) {
        check_root(r);
        t_->recv_chunked(t_->data(), r, tag_bulk, into, "bulk bytes from rank " + std::to_string(r));
    }

    // ---- rank 0: what the MPI devices use --------------------------------------------------------
    // SET of the bytes at p into g: inline up to max_inline_payload, else as bulk bytes,
    // copied now either way so p may be reused at once; with `waited` the bulk bytes go from
    // p itself and the call returns when MPI has sent them (a synchronous set_tensor: no
    // copy, and the transfer makes progress while rank 0 waits instead of only when it
    // next calls MPI).
    void send_set(int r, std::uint32_t stream, const region& g, const void* p, bool waited = false) {
        wire_writer w;
        write_region(w, g);
        const auto bytes = std::span<const std::byte>(static_cast<const std::byte*>(p), static_cast<std::size_t>(g.size));
        const bool bulk = g.size > max_inline_payload;
        if (!bulk) w.bytes(bytes);
        (void)command(r, msg_type::set, w.data(), stream, bulk ? header_flag_bulk_follows : 0);
        if (bulk && waited) t_->send_chunked_waited(t_->data(), r, tag_bulk, bytes, "SET of " + bytes_str(g.size) + " to rank " + std::to_string(r));
        else if (bulk) send_bulk(r, bytes);
        if (!bulk) traffic_.control_bytes -= g.size;
        if (!bulk && waited) t_->drain();
        traffic_.tensor_bytes += g.size;
    }
    // GET of g into q: the receives are posted before the command (so they match the
    // worker's reply in order); finish_get completes them.
    bulk_receive post_get(int r, std::uint32_t stream, const region& g, void* q) {
        check_root(r);
        bulk_receive b;
        b.rank = r;
        auto* out = static_cast<std::byte*>(q);
        std::size_t at = 0;
        do {
            const std::size_t n = std::min(bulk_chunk, static_cast<std::size_t>(g.size) - at);
            MPI_Request req = MPI_REQUEST_NULL;
            check_mpi(MPI_Irecv(out + at, static_cast<int>(n), MPI_BYTE, r, tag_bulk, t_->data(), &req), "MPI_Irecv", r);
            b.reqs.push_back(req);
            b.sizes.push_back(n);
            at += n;
        } while (at < g.size);
        wire_writer w;
        write_region(w, g);
        (void)command(r, msg_type::get, w.data(), stream);
        traffic_.tensor_bytes += g.size;
        return b;
    }
    // Completes a GET's receives: true when every byte came, false when the worker answered
    // with the short message of a failed GET (the rest of the receives are cancelled).
    bool finish_get(bulk_receive& b) {
        for (std::size_t i = 0; i < b.reqs.size(); ++i) {
            MPI_Status st;
            t_->wait(b.reqs[i], b.rank, "tensor bytes from rank " + std::to_string(b.rank), &st);
            int count = 0;
            check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", b.rank);
            if (static_cast<std::size_t>(count) != b.sizes[i]) {
                for (std::size_t j = i + 1; j < b.reqs.size(); ++j) cancel_request(b.reqs[j]);
                b.reqs.clear();
                return false;
            }
        }
        b.reqs.clear();
        return true;
    }
    // A GET on the device level, waited for; a failed one throws the worker's error.
    void get_now(int r, const region& g, void* q) {
        bulk_receive b = post_get(r, 0, g, q);
        if (finish_get(b)) return;
        (void)request(r, msg_type::ping, {});  // throws the worker's error (device level)
        fail(errc::io, "MPI rank " + std::to_string(r) + ": a GET of " + std::to_string(g.size) + " bytes failed");
    }

    // What this rank 0 sent and received so far.
    const traffic_counters& traffic() const noexcept { return traffic_; }
    // (the devices count what only they know: graph encodings, worker-to-worker copies, events)
    traffic_counters& traffic_mut() noexcept { return traffic_; }

    // Event slots of rank r (a free list; 16384 per rank).
    std::uint32_t acquire_slot(int r) {
        auto& f = free_slots_.at(static_cast<std::size_t>(r));
        if (!f.empty()) {
            const std::uint32_t k = f.back();
            f.pop_back();
            return k;
        }
        std::uint32_t& n = next_slot_.at(static_cast<std::size_t>(r));
        if (n >= max_event_slots)
            fail(errc::out_of_memory, "MPI" + std::to_string(r) + ": all " + std::to_string(max_event_slots - first_device_event_slot) +
                                          " event slots are in use");
        return n++;
    }
    void release_slot(int r, std::uint32_t k) noexcept {
        try {
            free_slots_.at(static_cast<std::size_t>(r)).push_back(k);
        } catch (...) {
        }
    }

    // Does rank r compute the one-node graph `enc`? Cached per encoding. A worker whose
    // device is this build's CPU (HELLO; the build ids match) is answered here by the same
    // check it would run (probe_support), without a round trip; any other is asked.
    bool supports(int r, const std::vector<std::byte>& enc) {
        auto& cache = supports_.at(static_cast<std::size_t>(r));
        std::string key(reinterpret_cast<const char*>(enc.data()), enc.size());
        if (const auto it = cache.find(key); it != cache.end()) return it->second;
        const auto& tab = detail::peer_table();
        const bool local = static_cast<std::size_t>(r - 1) < tab.size() && tab[static_cast<std::size_t>(r - 1)].cpu;
        const bool ok = local ? probe_support(enc, "MPI" + std::to_string(r) + ": graph", 0).empty() : ask_supports(r, enc);
        cache.emplace(std::move(key), ok);
        return ok;
    }
    // Asks rank r (SUPPORTS_OP; not cached): the round trip supports() saves for CPU workers.
    bool ask_supports(int r, std::span<const std::byte> enc) {
        wire_writer w;
        w.u64(enc.size());
        w.bytes(enc);
        const auto rep = request(r, msg_type::supports_op, w.data());
        wire_reader rd(rep, "SUPPORTS_OP reply from rank " + std::to_string(r));
        const bool ok = rd.boolean("supported");
        (void)rd.str("reason", max_status_message);
        rd.expect_end();
        return ok;
    }

private:
    // mpirun ends every rank with SIGTERM when one ends abnormally: say so on stderr.
    static void install_sigterm_line(int rank) {
        static char line[160];
        static std::size_t len = 0;
        const int n = std::snprintf(line, sizeof line,
                                    "tessera: rank %d stopped by the MPI launcher (another rank ended abnormally?)\n", rank);
        len = n > 0 ? std::min(static_cast<std::size_t>(n), sizeof line - 1) : 0;
        struct sigaction sa {};
        sa.sa_handler = [](int) {
            if (len) (void)!::write(2, line, len);
            ::_exit(143);
        };
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGTERM, &sa, nullptr);
    }
    static session*& current_ptr() noexcept {
        static session* p = nullptr;
        return p;
    }
    // HELLO to every worker: same build, and what each one is.
    void hello_all() {
        auto& tab = detail::peer_table();
        for (int r = 1; r < size(); ++r) {
            wire_writer p;
            p.u64(build_id());
            p.u32(static_cast<std::uint32_t>(::getpid()));
            char host[256] = {};
            if (::gethostname(host, sizeof host - 1) != 0) host[0] = '?';
            p.str(host);
            const auto rep = request(r, msg_type::hello, p.data());
            wire_reader rd(rep, "HELLO reply from rank " + std::to_string(r));
            peer_info pi;
            pi.pid = static_cast<long>(rd.u32("pid"));
            pi.host = std::string(rd.str("hostname", 255));
            pi.cpu = rd.str("device", 255) == "CPU";
            const std::string cpu(rd.str("description", max_status_message));
            pi.memory.free = static_cast<std::size_t>(rd.u64("memory free"));
            pi.memory.total = static_cast<std::size_t>(rd.u64("memory total"));
            rd.expect_end();
            pi.name = "MPI" + std::to_string(r);
            pi.description = "rank " + std::to_string(r) + " of " + std::to_string(size()) + " on " + pi.host + " (pid " +
                             std::to_string(pi.pid) + "): " + cpu;
            if (tab.size() < static_cast<std::size_t>(r)) tab.resize(static_cast<std::size_t>(r));
            tab[static_cast<std::size_t>(r - 1)] = std::move(pi);
        }
    }
    void check_thread() const {
        if (std::this_thread::get_id() != thread_)
            fail(errc::invalid_argument, "MPI devices are used from the thread that started the session");
    }
    void check_root(int r) const {
        check_thread();
        if (!is_root()) fail(errc::invalid_argument, "mpi::session: only rank 0 sends commands");
        if (r < 1 || r >= size()) fail(errc::invalid_argument, "mpi::session: rank " + std::to_string(r) + " is not a worker (1.." + std::to_string(size() - 1) + ")");
        t_->check_lost(r);
    }
    // Waits for a message of (rank, tag) on ctrl, then receives it whole.
    std::vector<std::byte> recv_probed(int r, int tag, const std::string& what) {
        backoff b;
        const auto end = mpi_deadline();
        auto probe = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        while (true) {
            int flag = 0;
            MPI_Message msg;
            MPI_Status st;
            check_mpi(MPI_Improbe(r, tag, t_->ctrl(), &flag, &msg, &st), "MPI_Improbe", r);
            if (flag) {
                int count = 0;
                check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", r);
                std::vector<std::byte> m(static_cast<std::size_t>(std::max(count, 0)));
                check_mpi(MPI_Mrecv(m.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE), "MPI_Mrecv", r);
                traffic_.control_bytes += m.size();
                return m;
            }
            t_->progress();
            t_->poll_peer(r, what, end, probe);
            b.pause();
        }
    }

    std::unique_ptr<mpi_transport> t_;
    std::thread::id thread_;
    std::vector<std::uint64_t> seq_;
    std::vector<std::uint32_t> next_slot_;
    std::vector<std::vector<std::uint32_t>> free_slots_;
    std::vector<std::unordered_map<std::string, bool>> supports_;
    traffic_counters traffic_;
    bool shut_down_ = false;
};

}  // namespace backend::mpi

// ---- the MPI device family (rank 0) ------------------------------------------------------------

namespace backend {

any_device mpi_device(std::size_t i);
any_buffer_type mpi_buffer_type(std::size_t i);

namespace mpi::detail {
inline int rank_of(std::size_t index) { return static_cast<int>(index) + 1; }
inline std::string_view device_name(std::size_t index) {
    static std::deque<std::string> names;  // "MPI1", "MPI2", ... (stable for string_views)
    static std::mutex mu;
    std::lock_guard<std::mutex> lk(mu);
    while (names.size() <= index) names.push_back("MPI" + std::to_string(names.size() + 1));
    return names[index];
}
// The handle of index i's Model, made once (handles compare by identity).
template <class Handle, class Model>
Handle per_device(std::size_t i) {
    static std::deque<Handle> v;
    static std::mutex mu;
    std::lock_guard<std::mutex> lk(mu);
    while (v.size() <= i) v.emplace_back(Model{v.size()});
    return v[i];
}
}  // namespace mpi::detail

// Memory on a worker rank. The host never dereferences it: base() is the start of a
// PROT_NONE reservation of size() bytes, unique per buffer (so addresses identify the
// buffer, tensor_alloc and the scheduler's planner work unchanged, and a stray host read
// faults at once); a tensor's offset on the worker is t.bytes() - base().
class mpi_buffer {
    struct state {
        int rank = 1;
        std::uint64_t handle = 0;
        std::byte* base = nullptr;
        std::size_t size = 0;
        bool read_only = false;  // a file the worker mapped (BUF_MAP_FILE)
        ~state() {
            if (handle)
                if (mpi::session* s = mpi::session::current()) try {
                        mpi::wire_writer p;
                        p.u64(handle);
                        (void)s->command(rank, mpi::msg_type::buf_free, p.data());  // after every command that used it (FIFO)
                    } catch (...) {
                    }
            if (base) ::munmap(base, size);
        }
    };

public:
    mpi_buffer(int rank, std::size_t n) : s_(std::make_shared<state>()) {
        mpi::session& ss = mpi::session::require(rank);
        s_->rank = rank;
        s_->size = n;
        if (!n) return;
        void* p = ::mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) fail(errc::out_of_memory, "MPI" + std::to_string(rank) + ": could not reserve " + bytes_str(n) + " of address space");
        s_->base = static_cast<std::byte*>(p);
        mpi::wire_writer w;
        w.u64(n);
        const auto rep = ss.request(rank, mpi::msg_type::buf_alloc, w.data());
        mpi::wire_reader rd(rep, "BUF_ALLOC reply from rank " + std::to_string(rank));
        s_->handle = rd.u64("handle");
    }
    // A buffer over a file region rank `rank` mapped itself (BUF_MAP_FILE): read-only.
    mpi_buffer(int rank, const file_region& fr) : s_(std::make_shared<state>()) {
        mpi::session& ss = mpi::session::require(rank);
        s_->rank = rank;
        s_->read_only = true;
        if (fr.size > static_cast<std::uint64_t>(PTRDIFF_MAX)) fail(errc::invalid_argument, "MPI" + std::to_string(rank) + ": a file region of " + bytes_str(fr.size) + " is too large");
        s_->size = static_cast<std::size_t>(fr.size);
        if (s_->size) {
            void* p = ::mmap(nullptr, s_->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (p == MAP_FAILED) fail(errc::out_of_memory, "MPI" + std::to_string(rank) + ": could not reserve " + bytes_str(s_->size) + " of address space");
            s_->base = static_cast<std::byte*>(p);
        }
        mpi::wire_writer w;
        w.str(fr.path);
        w.u64(fr.offset);
        w.u64(fr.size);
        w.u64(fr.fingerprint);
        const auto rep = ss.request(rank, mpi::msg_type::buf_map_file, w.data());
        mpi::wire_reader rd(rep, "BUF_MAP_FILE reply from rank " + std::to_string(rank));
        s_->handle = rd.u64("handle");
    }
    std::string_view name() const { return mpi::detail::device_name(static_cast<std::size_t>(s_->rank - 1)); }
    bool read_only() const noexcept { return s_->read_only; }
    std::byte* base() const noexcept { return s_->base; }
    std::size_t size() const noexcept { return s_->size; }
    int rank() const noexcept { return s_->rank; }
    std::uint64_t handle() const noexcept { return s_->handle; }

    // Byte offset of x's first byte in this buffer (x, n bytes of it, must lie inside it).
    std::size_t offset_of(const node& x, std::size_t n = 0) const {
        const std::byte* p = x.bytes();
        if (!p || p < s_->base || static_cast<std::size_t>(p - s_->base) > s_->size || n > s_->size - static_cast<std::size_t>(p - s_->base))
            fail(errc::invalid_argument, "MPI" + std::to_string(s_->rank) + " buffer: " + detail::tensor_desc(x) + " is not inside this buffer");
        return static_cast<std::size_t>(p - s_->base);
    }
    mpi::region region_of(const node& x, std::size_t off, std::size_t n) const {
        return {s_->handle, offset_of(x, off + n) + off, n};
    }
    // The region of x, to be written: not in a mapped file.
    mpi::region writable_region_of(const node& x, std::size_t off, std::size_t n) const {
        if (s_->read_only)
            fail(errc::invalid_argument, "MPI" + std::to_string(s_->rank) + " buffer: " + detail::tensor_desc(x) +
                                             " is in a file the worker mapped (read-only)");
        return region_of(x, off, n);
    }
    void set_tensor(node& x, const void* p, std::size_t off, std::size_t n) {
        if (n) mpi::session::require(s_->rank).send_set(s_->rank, 0, writable_region_of(x, off, n), p, true);
    }
    void get_tensor(const node& x, void* q, std::size_t off, std::size_t n) const {
        if (n) mpi::session::require(s_->rank).get_now(s_->rank, region_of(x, off, n), q);
    }
    void memset_tensor(node& x, std::uint8_t v, std::size_t off, std::size_t n) {
        if (!n) return;
        mpi::wire_writer w;
        mpi::write_region(w, writable_region_of(x, off, n));
        w.u8(v);
        (void)mpi::session::require(s_->rank).command(s_->rank, mpi::msg_type::memset, w.data());
    }
    // A copy on the worker (src in a buffer of the same rank) or from worker to worker
    // (PEER_SEND there, PEER_RECV here); waits for it, so a failure is reported here.
    bool cpy_tensor(const node& src, node& dst) {
        const any_buffer sb = buffer_of(src);
        const mpi_buffer* sm = sb ? sb.target<mpi_buffer>() : nullptr;
        if (!sm || src.lay.nbytes() != dst.lay.nbytes()) return false;
        const std::size_t n = src.lay.nbytes();
        mpi::session& ss = mpi::session::require(s_->rank);
        if (!n) return true;
        copy_from(ss, *sm, src, dst, 0);
        if (sm->rank() != s_->rank) (void)ss.request(sm->rank(), mpi::msg_type::ping, {});
        (void)ss.request(s_->rank, mpi::msg_type::ping, {});
        return true;
    }
    // The commands of a copy of src (in buffer sm) into dst (in this buffer), on `stream` of
    // this rank (0: device level). Nothing is waited for.
    void copy_from(mpi::session& ss, const mpi_buffer& sm, const node& src, node& dst, std::uint32_t stream) const {
        const std::size_t n = src.lay.nbytes();
        const mpi::region from = sm.region_of(src, 0, n), to = writable_region_of(dst, 0, n);
        mpi::wire_writer w;
        if (sm.rank() == s_->rank) {
            mpi::write_region(w, from);
            w.u64(to.handle);
            w.u64(to.offset);
            (void)ss.command(s_->rank, mpi::msg_type::copy, w.data(), stream);
            return;
        }
        const std::uint64_t xfer = ++xfer_counter();
        ss.traffic_mut().peer_bytes += n;
        mpi::write_region(w, from);
        w.u32(static_cast<std::uint32_t>(s_->rank));
        w.u64(xfer);
        (void)ss.command(sm.rank(), mpi::msg_type::peer_send, w.data());
        mpi::wire_writer r;
        mpi::write_region(r, to);
        r.u32(static_cast<std::uint32_t>(sm.rank()));
        r.u64(xfer);
        (void)ss.command(s_->rank, mpi::msg_type::peer_recv, r.data(), stream);
    }
    void clear(std::uint8_t v) {
        if (!s_->handle || s_->read_only) return;  // (a mapped file is never cleared)
        mpi::wire_writer w;
        w.u64(s_->handle);
        w.u8(v);
        (void)mpi::session::require(s_->rank).command(s_->rank, mpi::msg_type::buf_clear, w.data());
    }

private:
    static std::uint64_t& xfer_counter() noexcept {
        static std::uint64_t n = 0;
        return n;
    }
    std::shared_ptr<state> s_;
};
static_assert(buffer<mpi_buffer>);

inline const mpi_buffer* as_mpi_buffer(const node& t) {
    const any_buffer b = buffer_of(t);
    return b ? b.target<mpi_buffer>() : nullptr;
}


struct mpi_buffer_type_model {
    std::size_t index = 0;
    std::string_view name() const { return mpi::detail::device_name(index); }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(mpi_buffer(mpi::detail::rank_of(index), n)); }
    std::size_t alignment() const noexcept { return 64; }
    // the worker's memory, as it reported it at HELLO
    std::size_t max_size() const {
        const mpi::session* s = mpi::session::current();
        const int r = mpi::detail::rank_of(index);
        if (!s || !s->is_root() || r >= s->size()) return 0;
        return s->peer(r).memory.total;
    }
    bool is_host() const noexcept { return false; }
    any_device device() const { return mpi_device(index); }
};
static_assert(buffer_type<mpi_buffer_type_model>);
inline any_buffer_type mpi_buffer_type(std::size_t i) { return mpi::detail::per_device<any_buffer_type, mpi_buffer_type_model>(i); }

// ---- stream -----------------------------------------------------------------------------------

namespace mpi {

// One EVENT_RECORD and the MPI request for its EVENT_DONE.
class event_core {
public:
    explicit event_core(int rank) : rank_(rank), slot_(session::require(rank).acquire_slot(rank)) {
        buf_.resize(header_bytes + 8 + max_status_message + 4);
    }
    event_core(const event_core&) = delete;
    event_core& operator=(const event_core&) = delete;
    ~event_core() {
        session* s = session::current();
        if (!s) return;
        if (armed_) {
            try {
                (void)complete();
            } catch (...) {
                // (the wait cancelled it already, or the peer is lost) the slot stays taken:
                // a late EVENT_DONE must not meet a new event; the buffer is kept for a late write
                if (!cancel_request(req_)) (void)new std::vector<std::byte>(std::move(buf_));
                return;
            }
        }
        s->release_slot(rank_, slot_);
    }
    int rank() const noexcept { return rank_; }
    bool armed() const noexcept { return armed_; }
    // EVENT_RECORD on stream (of this rank); the previous record is completed first.
    void record(std::uint32_t stream) {
        session& s = session::require(rank_);
        if (armed_) (void)complete();
        check_mpi(MPI_Irecv(buf_.data(), static_cast<int>(buf_.size()), MPI_BYTE, rank_, tag_event_base + static_cast<int>(slot_),
                            s.transport().ctrl(), &req_),
                  "MPI_Irecv", rank_);
        armed_ = true;
        wire_writer p;
        p.u32(slot_);
        (void)s.command(rank_, msg_type::event_record, p.data(), stream);
    }
    // Waits for the EVENT_DONE; its status (the stream's first error since the last event).
    status complete() {
        if (!armed_) return {};
        session& s = session::require(rank_);
        MPI_Status st;
        s.transport().wait(req_, rank_, "event " + std::to_string(slot_), &st);  // (on failure it cancels req_)
        armed_ = false;
        int count = 0;
        check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", rank_);
        const std::span<const std::byte> m(buf_.data(), static_cast<std::size_t>(std::max(count, 0)));
        s.traffic_mut().control_bytes += m.size();
        const std::string what = "EVENT_DONE from rank " + std::to_string(rank_);
        (void)read_header(m, what);
        wire_reader rd(m.subspan(header_bytes), what, header_bytes);
        status res = read_status(rd);
        if (const std::uint32_t k = rd.u32("slot"); k != slot_) rd.fail_here("slot " + std::to_string(k) + ", expected " + std::to_string(slot_));
        return res;
    }

private:
    int rank_;
    std::uint32_t slot_;
    MPI_Request req_ = MPI_REQUEST_NULL;
    std::vector<std::byte> buf_;
    bool armed_ = false;
};

// A stream on a worker: its id there, the GETs whose bytes are still on the way, and the
// hidden event synchronize() waits for.
class stream_state {
public:
    stream_state(int rank, std::string_view params) : rank_(rank) {
        session& s = session::require(rank);
        wire_writer w;
        w.str(params);
        const auto rep = s.request(rank, msg_type::stream_new, w.data());
        wire_reader rd(rep, "STREAM_NEW reply from rank " + std::to_string(rank));
        id_ = rd.u32("stream id");
        sync_ = std::make_unique<event_core>(rank);
    }
    stream_state(const stream_state&) = delete;
    stream_state& operator=(const stream_state&) = delete;
    ~stream_state() {
        session* s = session::current();
        if (!s) return;
        try {
            synchronize();
        } catch (...) {
            for (bulk_receive& b : gets_)
                for (MPI_Request& r : b.reqs) cancel_request(r);  // (their memory may go away now)
            gets_.clear();
        }
        sync_.reset();
        try {
            wire_writer w;
            w.u32(id_);
            (void)s->command(rank_, msg_type::stream_free, w.data());
        } catch (...) {
        }
    }
    int rank() const noexcept { return rank_; }
    std::uint32_t id() const noexcept { return id_; }
    std::string_view name() const { return mpi::detail::device_name(static_cast<std::size_t>(rank_ - 1)); }

    void add_get(bulk_receive b) { gets_.push_back(std::move(b)); }
    // An error an event of this stream received but nobody asked for (the event was
    // recorded again first): the next synchronize() throws it.
    void defer(const status& st) {
        if (!st.ok && deferred_.ok) deferred_ = st;
    }
    // Completes the GETs posted so far (their bytes are in place when it returns); false when
    // one failed (its error comes with the stream's event).
    bool finish_gets() {
        bool ok = true;
        session& s = session::require(rank_);
        while (!gets_.empty()) {
            bulk_receive b = std::move(gets_.front());
            gets_.pop_front();
            if (!s.finish_get(b)) ok = false;
        }
        return ok;
    }
    // Waits for everything queued on the stream; throws the first error the worker met.
    void synchronize() {
        sync_->record(id_);
        status st = sync_->complete();
        const bool gets_ok = finish_gets();
        if (!deferred_.ok) st = std::exchange(deferred_, status{});  // (the earlier error explains)
        st.rethrow(std::string(name()) + ": ");
        if (!gets_ok) fail(errc::io, std::string(name()) + ": a GET failed");
    }

private:
    int rank_;
    std::uint32_t id_ = 0;
    std::unique_ptr<event_core> sync_;
    std::deque<bulk_receive> gets_;
    status deferred_;
};

}  // namespace mpi

class mpi_backend {
public:
    static constexpr backend::guid mpi_guid = {0x74, 0x65, 0x73, 0x73, 0x65, 0x72, 0x61, 0x2d,
                                               0x6d, 0x70, 0x69, 0x00, 0x00, 0x00, 0x00, 0x01};
    mpi_backend(int rank, std::string_view params) : s_(std::make_shared<mpi::stream_state>(rank, params)) {}
    std::string_view name() const { return s_->name(); }
    backend::guid guid() const noexcept { return mpi_guid; }
    any_device device() const { return mpi_device(static_cast<std::size_t>(s_->rank() - 1)); }
    int rank() const noexcept { return s_->rank(); }
    const std::shared_ptr<mpi::stream_state>& state() const noexcept { return s_; }

    // Sends the graph (encoded; every tensor it reads or writes must be in an MPI buffer of
    // this rank) and returns; the worker computes it in its turn.
    void graph_compute_async(graph_view g) {
        if (g.nodes.empty()) return;
        mpi::session& ss = mpi::session::require(s_->rank());
        const int r = s_->rank();
        const std::vector<std::byte> enc = mpi::encode_graph(g, [&](const node& t) -> mpi::location {
            const any_buffer b = buffer_of(t);
            const mpi_buffer* mb = b ? b.target<mpi_buffer>() : nullptr;
            if (!mb || mb->rank() != r)
                fail(errc::invalid_argument, std::string(name()) + ": tensor " + detail::tensor_desc(t) + " is in " +
                                                 (b ? "buffer '" + std::string(b.name()) + "'" : std::string("host memory")) + ", not in an " +
                                                 std::string(name()) + " buffer; copy it there or run the graph through a scheduler");
            return {mb->handle(), mb->offset_of(t, t.lay.nbytes())};
        });
        mpi::wire_writer w;
        w.u64(enc.size());
        const bool bulk = enc.size() + 8 > mpi::max_inline_payload;
        if (!bulk) w.bytes(enc);
        (void)ss.command(r, mpi::msg_type::graph, w.data(), s_->id(), bulk ? mpi::header_flag_bulk_follows : 0);
        if (bulk) ss.send_bulk(r, enc);
        else ss.traffic_mut().control_bytes -= enc.size();
        ++ss.traffic_mut().graphs;
        ss.traffic_mut().graph_bytes += enc.size();
    }
    void graph_compute(graph_view g) {
        graph_compute_async(g);
        synchronize();
    }
    // host -> worker: the bytes are copied now (p may be reused at once)
    void set_tensor_async(node& x, const void* p, std::size_t off, std::size_t n) {
        if (!n) return;
        backend::detail::check_io(x, off, n, "set_tensor_async");
        const mpi_buffer& b = on_this_rank(x, "set_tensor_async");
        mpi::session::require(s_->rank()).send_set(s_->rank(), s_->id(), b.writable_region_of(x, off, n), p);
    }
    // worker -> host: q is written by the next synchronize() of this stream (or of an event recorded after it)
    void get_tensor_async(const node& x, void* q, std::size_t off, std::size_t n) {
        if (!n) return;
        backend::detail::check_io(x, off, n, "get_tensor_async");
        const mpi_buffer& b = on_this_rank(x, "get_tensor_async");
        s_->add_get(mpi::session::require(s_->rank()).post_get(s_->rank(), s_->id(), b.region_of(x, off, n), q));
    }
    // Into a tensor of this rank: from host memory (SET), from this rank (COPY) or from
    // another worker (PEER_SEND there, PEER_RECV here); anything else is not this stream's
    // to do (false).
    bool cpy_tensor_async(const node& src, node& dst) {
        const mpi_buffer* d = as_mpi_buffer(dst);
        if (!d || d->rank() != s_->rank() || src.lay.nbytes() != dst.lay.nbytes() || !src.bytes() || !dst.bytes()) return false;
        const std::size_t n = src.lay.nbytes();
        if (!n) return true;
        mpi::session& ss = mpi::session::require(s_->rank());
        if (const mpi_buffer* sm = as_mpi_buffer(src)) {
            d->copy_from(ss, *sm, src, dst, s_->id());
            return true;
        }
        if (!is_host_memory(src)) return false;
        ss.send_set(s_->rank(), s_->id(), d->writable_region_of(dst, 0, n), src.bytes());
        return true;
    }
    void synchronize() { s_->synchronize(); }
    // Copies into this stream from another MPI stream are ordered by the workers themselves
    // (every rank runs rank 0's commands in order; PEER_RECV waits for its PEER_SEND).
    bool ordered_copy_from(const any_backend& b) const noexcept { return as_mpi_of(b); }

private:
    static bool as_mpi_of(const any_backend& b) noexcept { return b && b.target<mpi_backend>() != nullptr; }
    const mpi_buffer& on_this_rank(const node& x, const char* use) const {
        const mpi_buffer* b = as_mpi_buffer(x);
        if (!b || b->rank() != s_->rank())
            fail(errc::invalid_argument, std::string(name()) + ": " + use + ": " + detail::tensor_desc(x) + " is not in an " +
                                             std::string(name()) + " buffer");
        return *b;
    }
    std::shared_ptr<mpi::stream_state> s_;
};
static_assert(backend<mpi_backend>);

inline mpi_backend* as_mpi(const any_backend& b) noexcept { return b ? b.target<mpi_backend>() : nullptr; }

// ---- event ------------------------------------------------------------------------------------

// A point in an MPI stream: record(s) sends EVENT_RECORD on s (an MPI stream of this rank)
// and posts the receive of its EVENT_DONE: the event is that one MPI request.
// synchronize() completes it (and the GETs of the stream before it) and throws the
// stream's error; wait(s) is nothing for a stream of the same rank (a worker runs its
// commands in order), synchronize() for any other.
class mpi_event {
    struct state {
        std::unique_ptr<mpi::event_core> core;
        std::shared_ptr<mpi::stream_state> stream;
    };

public:
    explicit mpi_event(int rank) : s_(std::make_shared<state>()) { s_->core = std::make_unique<mpi::event_core>(rank); }
    void record(any_backend& b) {
        const mpi_backend* m = as_mpi(b);
        const std::string me = "MPI" + std::to_string(s_->core->rank());
        if (!m) fail(errc::invalid_argument, me + " event: record needs a stream of " + me + ", not '" + std::string(b ? b.name() : "(empty)") + "'");
        if (m->rank() != s_->core->rank())
            fail(errc::invalid_argument, me + " event: record needs a stream of " + me + ", not one of " + std::string(m->name()));
        if (s_->core->armed()) {
            // recorded again before anyone waited: an error it carries goes to its stream
            const mpi::status st = s_->core->complete();
            if (s_->stream) s_->stream->defer(st);
        }
        s_->stream = m->state();
        s_->core->record(m->state()->id());
    }
    void synchronize() {
        if (!s_->stream) return;
        const mpi::status st = s_->core->complete();
        const bool gets_ok = s_->stream->finish_gets();
        st.rethrow(std::string(s_->stream->name()) + ": ");
        if (!gets_ok) fail(errc::io, std::string(s_->stream->name()) + ": a GET failed");
    }
    void wait(any_backend& b) {
        const mpi_backend* m = as_mpi(b);
        if (m && m->rank() == s_->core->rank()) return;  // FIFO on the worker
        synchronize();
    }

private:
    std::shared_ptr<state> s_;
};
static_assert(event<mpi_event>);

// ---- device and registry ----------------------------------------------------------------------

struct mpi_device_model {
    std::size_t index = 0;  // rank index + 1
    int rank() const noexcept { return mpi::detail::rank_of(index); }
    std::string_view name() const { return mpi::detail::device_name(index); }
    std::string_view description() const { return mpi::session::require(rank()).peer(rank()).description; }
    // asked of the worker (MEMORY)
    memory_info memory() const {
        const auto rep = mpi::session::require(rank()).request(rank(), mpi::msg_type::memory, {});
        mpi::wire_reader rd(rep, "MEMORY reply from rank " + std::to_string(rank()));
        memory_info m;
        m.free = static_cast<std::size_t>(rd.u64("free"));
        m.total = static_cast<std::size_t>(rd.u64("total"));
        return m;
    }
    // memory of its own, like a GPU; emulated, so registry::best_device() never picks a remote rank
    device_type type() const noexcept { return device_type::gpu; }
    bool emulated() const noexcept { return true; }
    device_caps caps() const noexcept { return {true, false, false, true, true}; }
    // params: the stream's thread count on the worker (the CPU device's convention)
    any_backend init_backend(std::string_view params) const { return any_backend(mpi_backend(rank(), params)); }
    any_buffer_type buffer_type() const { return mpi_buffer_type(index); }
    // The worker decodes x as a one-node graph and runs the CPU's checks on it (SUPPORTS_OP,
    // cached per encoding); ops the encoding does not carry are refused here.
    bool supports_op(const node& x) const {
        mpi::session* s = mpi::session::current();
        if (!s || !s->is_root() || rank() >= s->size() || !graph::replayable(x.op)) return false;
        std::vector<std::byte> enc;
        try {
            node* const one[] = {const_cast<node*>(&x)};
            enc = mpi::encode_graph(graph_view(std::span<node* const>(one)), [](const node&) { return mpi::location{1, 0}; });
        } catch (const tessera::error&) {
            return false;
        }
        return s->supports(rank(), enc);
    }
    bool supports_buft(const any_buffer_type& bt) const { return bt == mpi_buffer_type(index); }
    // The worker maps the file itself (BUF_MAP_FILE): the same path must name the same
    // file there (the fingerprint is checked); no byte of it travels.
    any_buffer buffer_from_file(const file_region& r) const { return any_buffer(mpi_buffer(rank(), r), mpi_buffer_type(index)); }
    bool offload_op(const node&) const noexcept { return false; }
    any_event event_new() const { return any_event(mpi_event(rank())); }
};
static_assert(device<mpi_device_model>);
inline any_device mpi_device(std::size_t i) { return mpi::detail::per_device<any_device, mpi_device_model>(i); }

struct mpi_reg_model {
    std::string_view name() const noexcept { return "MPI"; }
    // the workers of the active session, seen from rank 0 (none elsewhere)
    std::size_t device_count() const noexcept {
        const mpi::session* s = mpi::session::current();
        return s && s->is_root() ? static_cast<std::size_t>(s->size() - 1) : 0;
    }
    any_device device(std::size_t i) const { return mpi_device(i); }
    // "progress" (progress_fn): retires rank 0's finished sends and lets MPI move the rest;
    // nothing on another thread than the session's or without a session
    void* proc_address(std::string_view s) const noexcept {
        if (s != "progress") return nullptr;
        return reinterpret_cast<void*>(static_cast<progress_fn>([]() noexcept {
            try {
                if (mpi::session* ss = mpi::session::current(); ss && ss->on_session_thread()) ss->transport().progress();
            } catch (...) {  // (an MPI error shows at the next wait, with its message)
            }
            return false;
        }));
    }
};
static_assert(backend_reg<mpi_reg_model>);

inline any_reg mpi_reg() {
    static const any_reg r{mpi_reg_model{}};
    return r;
}
// A stream on MPI device i (rank i + 1).
inline any_backend mpi_init(std::size_t i = 0, std::string_view params = {}) { return mpi_device(i).init_backend(params); }

namespace detail {
// registry::global() lists the MPI family when it is first asked during a session (the
// session also registers it itself when it starts, and removes it when it ends).
inline any_reg mpi_family_source() { return mpi_reg().device_count() > 0 ? mpi_reg() : any_reg{}; }
[[maybe_unused]] inline const bool mpi_family_added = add_family_source(&mpi_family_source);
}  // namespace detail

}  // namespace backend
TESSERA_END_NAMESPACE

#endif  // TESSERA_MPI
