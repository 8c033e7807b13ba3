// Remote devices over MPI (docs/distributed.md, design: docs/design/mpi-plan.md). Built only
// with TESSERA_MPI (Meson's `mpi` option; Debian libopenmpi-dev); without it this header
// declares nothing.
//
// Phase 2, first step: the session and the worker loop. Rank 0 talks to the workers with
// raw commands (command / request / events / bulk bytes); the MPI<r> device family on top
// of it comes next.
//
//   tessera::backend::mpi::session s(argc, argv);
//   if (!s.is_root()) return s.serve();      // workers: run rank 0's commands until SHUTDOWN
//   auto reply = s.request(1, msg_type::memory, {});
//
// Only the thread that started the session calls MPI (MPI_THREAD_FUNNELED).
#pragma once

#if defined(TESSERA_MPI) && TESSERA_MPI

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/mpi/transport.hpp"
#include "tessera/backend/mpi/wire.hpp"
#include "tessera/backend/mpi/worker.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::mpi {

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
        thread_ = std::this_thread::get_id();
        seq_.assign(static_cast<std::size_t>(t_->size()), 0);
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    // Rank 0: SHUTDOWN to every worker, each answer awaited (bounded by TESSERA_MPI_TIMEOUT);
    // a worker that does not answer means MPI_Abort (MPI_Finalize would hang).
    ~session() {
        bool ok = true;
        if (is_root() && !shut_down_) {
            for (int r = 1; r < size(); ++r) try {
                    (void)request(r, msg_type::shutdown, {});
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "tessera: MPI rank %d did not shut down: %s\n", r, e.what());
                    ok = false;
                }
        }
        try {
            t_->drain();
        } catch (const std::exception&) {
            ok = false;
        }
        if (!ok) MPI_Abort(MPI_COMM_WORLD, 3);
        t_.reset();
        MPI_Finalize();
    }

    int rank() const noexcept { return t_->rank(); }
    int size() const noexcept { return t_->size(); }
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
                b.pause();
                continue;
            }
            b = backoff{};
            if (!w.handle(msg)) break;
        }
        shut_down_ = true;
        t_->drain();
        return 0;
    }

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

private:
    void check_thread() const {
        if (std::this_thread::get_id() != thread_)
            fail(errc::invalid_argument, "MPI devices are used from the thread that started the session");
    }
    void check_root(int r) const {
        check_thread();
        if (!is_root()) fail(errc::invalid_argument, "mpi::session: only rank 0 sends commands");
        if (r < 1 || r >= size()) fail(errc::invalid_argument, "mpi::session: rank " + std::to_string(r) + " is not a worker (1.." + std::to_string(size() - 1) + ")");
    }
    // Waits for a message of (rank, tag) on ctrl, then receives it whole.
    std::vector<std::byte> recv_probed(int r, int tag, const std::string& what) {
        backoff b;
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(mpi_timeout_seconds());
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
                return m;
            }
            t_->progress();
            if (std::chrono::steady_clock::now() > end)
                fail(errc::io, "MPI rank " + std::to_string(r) + ": no answer within " + std::to_string(static_cast<int>(mpi_timeout_seconds())) +
                                   " s (TESSERA_MPI_TIMEOUT) while waiting for " + what);
            b.pause();
        }
    }

    std::unique_ptr<mpi_transport> t_;
    std::thread::id thread_;
    std::vector<std::uint64_t> seq_;
    bool shut_down_ = false;
};

}  // namespace backend::mpi
TESSERA_END_NAMESPACE

#endif  // TESSERA_MPI
