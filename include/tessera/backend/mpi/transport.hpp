// mpi_transport: the MPI side of the MPI device (docs/distributed.md). Two duplicated
// communicators (ctrl: commands, replies, events; data: bulk and peer bytes), every MPI
// call checked (MPI_ERRORS_RETURN) and turned into tessera::error(errc::io) naming the call
// and the rank, owned non-blocking sends retired by progress(), chunked bulk transfers
// whose received sizes are checked, and waits that never block inside MPI: MPI_Test with a
// backoff and a deadline (TESSERA_MPI_TIMEOUT seconds, default 600).
// Built only with TESSERA_MPI (Meson's `mpi` option); without it this header is empty.
#pragma once

#if defined(TESSERA_MPI) && TESSERA_MPI

#include <mpi.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/backend/mpi/wire.hpp"
#include "tessera/backend/mpi/worker.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::mpi {

inline constexpr int tag_cmd = 1, tag_reply = 2, tag_event_base = 16384;  // ctrl
inline constexpr int tag_bulk = 1, tag_peer = 2;                          // data
inline constexpr std::size_t bulk_chunk = std::size_t{64} << 20;         // int counts stay small

// Throws errc::io for an MPI error code.
inline void check_mpi(int rc, std::string_view call, int peer) {
    if (rc == MPI_SUCCESS) return;
    char buf[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, buf, &len);
    fail(errc::io, "MPI: " + std::string(call) + (peer >= 0 ? " with rank " + std::to_string(peer) : std::string()) + ": " +
                       std::string(buf, static_cast<std::size_t>(std::max(len, 0))));
}

// TESSERA_MPI_TIMEOUT (seconds), read once.
inline double mpi_timeout_seconds() {
    static const double t = [] {
        const char* e = std::getenv("TESSERA_MPI_TIMEOUT");
        const double v = e ? std::atof(e) : 0.0;
        return v > 0 ? v : 600.0;
    }();
    return t;
}

// TESSERA_MPI_TIMEOUT seconds from now.
inline std::chrono::steady_clock::time_point mpi_deadline() {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(mpi_timeout_seconds()));
}

// Yields for the first spin_us (TESSERA_MPI_SPIN_US, default 50000: a reply or the next
// command of a running compute comes within that, and a yield gives the core away when
// another process wants it), then sleeps from 50 us doubling to 1 ms. Sleeping sooner
// costs up to a sleep per message: with 64 yields, then sleeps, a stories260K token took
// 3.6 ms more over 2 ranks than in one process; with 5 ms of yields 0.7 ms, and a 110 M
// q8_0 model ran at 0.73-0.83 of one process with 5 ms and 0.81-0.85 with 50 ms.
inline int mpi_spin_us() {
    static const int v = [] {
        const char* e = std::getenv("TESSERA_MPI_SPIN_US");
        if (!e || !*e) return 50000;
        const long x = std::strtol(e, nullptr, 10);
        return static_cast<int>(std::clamp(x, 0L, 10'000'000L));
    }();
    return v;
}

class backoff {
public:
    void pause() {
        if (!sleeping_) {
            const auto now = std::chrono::steady_clock::now();
            if (!started_) {
                started_ = true;
                spin_end_ = now + std::chrono::microseconds(mpi_spin_us());
            }
            if (now < spin_end_) {
                std::this_thread::yield();
                return;
            }
            sleeping_ = true;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
        sleep_us_ = std::min(sleep_us_ * 2, 1000);
    }

private:
    bool started_ = false, sleeping_ = false;
    std::chrono::steady_clock::time_point spin_end_{};
    int sleep_us_ = 50;
};

// Cancels a pending request and completes it (waits at most 100 ms for that; a request
// still running then is freed, and true is returned only when it completed). Leaves r null.
inline bool cancel_request(MPI_Request& r) noexcept {
    if (r == MPI_REQUEST_NULL) return true;
    MPI_Cancel(&r);
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < end) {
        int done = 0;
        if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
        if (done) {
            r = MPI_REQUEST_NULL;
            return true;
        }
        std::this_thread::yield();
    }
    MPI_Request_free(&r);
    r = MPI_REQUEST_NULL;
    return false;
}

// Is process pid (on this host) gone: no such process, or a zombie not yet reaped?
inline bool process_gone(long pid) noexcept {
    if (pid <= 0) return false;
    if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    std::FILE* f = std::fopen(path, "r");
    if (!f) return false;
    char buf[512] = {};
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    const std::string_view s(buf, n);
    const std::size_t close = s.rfind(')');  // "pid (comm) S ..."
    return close != std::string_view::npos && close + 2 < s.size() && (s[close + 2] == 'Z' || s[close + 2] == 'X');
}

class mpi_transport final : public transport {
public:
    mpi_transport() {
        check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
        check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &ctrl_), "MPI_Comm_dup", -1);
        check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &data_), "MPI_Comm_dup", -1);
        check_mpi(MPI_Comm_set_errhandler(ctrl_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
        check_mpi(MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
        check_mpi(MPI_Comm_rank(ctrl_, &rank_), "MPI_Comm_rank", -1);
        check_mpi(MPI_Comm_size(ctrl_, &size_), "MPI_Comm_size", -1);
        // every rank's pid and host (a hash of its name): for the liveness probes
        char host[256] = {};
        if (::gethostname(host, sizeof host - 1) != 0) host[0] = '?';
        const std::uint64_t mine[2] = {static_cast<std::uint64_t>(::getpid()), fnv1a64(std::string_view(host))};
        std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size_));
        check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, ctrl_), "MPI_Allgather", -1);
        for (int r = 0; r < size_; ++r) {
            pids_.push_back(static_cast<long>(all[2 * static_cast<std::size_t>(r)]));
            same_host_.push_back(all[2 * static_cast<std::size_t>(r) + 1] == mine[1]);
        }
        lost_.resize(static_cast<std::size_t>(size_));
    }
    mpi_transport(const mpi_transport&) = delete;
    mpi_transport& operator=(const mpi_transport&) = delete;
    ~mpi_transport() override {
        // finish what is pending (bounded), then free the communicators
        try {
            drain();
        } catch (...) {
        }
        MPI_Comm_free(&ctrl_);
        MPI_Comm_free(&data_);
    }

    int rank() const noexcept { return rank_; }
    int size() const noexcept { return size_; }
    long pid(int r) const { return pids_.at(static_cast<std::size_t>(r)); }

    // How errors name a peer: "MPI1 (rank 1, pid 4242)" on rank 0, "rank 0 (pid 4242)" on a worker.
    std::string label(int r) const {
        const std::string pid = r >= 0 && r < size_ ? std::to_string(pids_[static_cast<std::size_t>(r)]) : "?";
        if (rank_ == 0 && r > 0) return "MPI" + std::to_string(r) + " (rank " + std::to_string(r) + ", pid " + pid + ")";
        return "rank " + std::to_string(r) + " (pid " + pid + ")";
    }
    // A peer that died or did not answer in time: every later use fails at once with the same text.
    bool lost(int r) const noexcept { return r >= 0 && r < size_ && !lost_[static_cast<std::size_t>(r)].empty(); }
    void check_lost(int r) const {
        if (lost(r)) fail(errc::io, lost_[static_cast<std::size_t>(r)]);
    }
    // Between polls of a wait for peer r: fails (and marks r lost) when r's process is gone
    // (probed every 100 ms, for a peer on this host) or the deadline has passed.
    void poll_peer(int r, std::string_view what, std::chrono::steady_clock::time_point deadline,
                   std::chrono::steady_clock::time_point& next_probe) {
        const auto now = std::chrono::steady_clock::now();
        if (r >= 0 && r < size_ && now >= next_probe) {
            next_probe = now + std::chrono::milliseconds(100);
            if (same_host_[static_cast<std::size_t>(r)] && process_gone(pids_[static_cast<std::size_t>(r)]))
                mark_lost(r, label(r) + ": the process is gone while waiting for " + std::string(what) + "; the job cannot go on");
        }
        if (now > deadline)
            mark_lost(r, label(r) + ": no answer within " + std::to_string(static_cast<int>(mpi_timeout_seconds())) +
                             " s (TESSERA_MPI_TIMEOUT) while waiting for " + std::string(what));
    }
    MPI_Comm ctrl() const noexcept { return ctrl_; }
    MPI_Comm data() const noexcept { return data_; }

    // ---- owned non-blocking sends -------------------------------------------------------------
    void isend_owned(MPI_Comm comm, int dst, int tag, std::vector<std::byte> bytes) {
        auto& p = pending_.emplace_back();
        p.bytes = std::move(bytes);
        p.peer = dst;
        const std::size_t n = p.bytes.size();
        if (n > static_cast<std::size_t>(INT_MAX)) fail(errc::invalid_argument, "MPI: one message of " + bytes_str(n) + " is too large");
        check_mpi(MPI_Isend(p.bytes.data(), static_cast<int>(n), MPI_BYTE, dst, tag, comm, &p.req), "MPI_Isend", dst);
    }
    // Bytes in chunks of at most bulk_chunk (the receiver posts the same chunks).
    void isend_chunked(MPI_Comm comm, int dst, int tag, std::span<const std::byte> b) {
        std::size_t at = 0;
        do {
            const std::size_t n = std::min(bulk_chunk, b.size() - at);
            isend_owned(comm, dst, tag, std::vector<std::byte>(b.begin() + static_cast<std::ptrdiff_t>(at),
                                                               b.begin() + static_cast<std::ptrdiff_t>(at + n)));
            at += n;
        } while (at < b.size());
    }
    // The same chunks sent from b itself, each waited for (no copy: b must stay valid until
    // then; the waits progress every other pending send and watch the peer).
    void send_chunked_waited(MPI_Comm comm, int dst, int tag, std::span<const std::byte> b, std::string_view what) {
        std::size_t at = 0;
        do {
            const std::size_t n = std::min(bulk_chunk, b.size() - at);
            MPI_Request req;
            check_mpi(MPI_Isend(b.data() + at, static_cast<int>(n), MPI_BYTE, dst, tag, comm, &req), "MPI_Isend", dst);
            wait(req, dst, what);
            at += n;
        } while (at < b.size());
    }
    // Receives exactly into.size() bytes in chunks; a chunk of another size is an error.
    void recv_chunked(MPI_Comm comm, int src, int tag, std::span<std::byte> into, std::string_view what) {
        std::size_t at = 0;
        do {
            const std::size_t n = std::min(bulk_chunk, into.size() - at);
            MPI_Request req;
            check_mpi(MPI_Irecv(into.data() + at, static_cast<int>(n), MPI_BYTE, src, tag, comm, &req), "MPI_Irecv", src);
            MPI_Status st;
            wait(req, src, what, &st);
            int count = 0;
            check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", src);
            if (static_cast<std::size_t>(count) != n)
                fail(errc::format, std::string(what) + ": received " + std::to_string(count) + " bytes, expected " + std::to_string(n));
            at += n;
        } while (at < into.size());
    }

    // Retires the sends that have completed.
    void progress() override {
        for (auto it = pending_.begin(); it != pending_.end();) {
            int done = 0;
            check_mpi(MPI_Test(&it->req, &done, MPI_STATUS_IGNORE), "MPI_Test", it->peer);
            it = done ? pending_.erase(it) : std::next(it);
        }
    }
    std::size_t pending() const noexcept { return pending_.size(); }
    // Waits for every pending send (bounded by the deadline).
    void drain() {
        backoff b;
        const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(mpi_timeout_seconds());
        while (!pending_.empty()) {
            progress();
            if (pending_.empty()) break;
            if (std::chrono::steady_clock::now() > end)
                fail(errc::io, "MPI: " + std::to_string(pending_.size()) + " sends not done within " +
                                   std::to_string(static_cast<int>(mpi_timeout_seconds())) + " s (TESSERA_MPI_TIMEOUT)");
            b.pause();
        }
    }

    // Completes req with MPI_Test and a backoff; fails after the deadline. Retires pending
    // sends meanwhile, so two ranks waiting on each other's large messages both move on.
    void wait(MPI_Request& req, int peer, std::string_view what, MPI_Status* st = MPI_STATUS_IGNORE) {
        backoff b;
        const auto end = mpi_deadline();
        auto probe = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        check_lost(peer);
        while (true) {
            int done = 0;
            check_mpi(MPI_Test(&req, &done, st), "MPI_Test", peer);
            if (done) return;
            progress();
            try {
                poll_peer(peer, what, end, probe);
            } catch (...) {
                cancel_request(req);
                throw;
            }
            b.pause();
        }
    }

    // ---- the worker's byte paths (transport) ---------------------------------------------------
    void send_reply(std::vector<std::byte> msg) override { isend_owned(ctrl_, 0, tag_reply, std::move(msg)); }
    void send_event(std::uint32_t slot, std::vector<std::byte> msg) override {
        isend_owned(ctrl_, 0, tag_event_base + static_cast<int>(slot), std::move(msg));
    }
    void send_bulk(std::vector<std::byte> bytes) override {
        if (bytes.size() <= bulk_chunk) isend_owned(data_, 0, tag_bulk, std::move(bytes));
        else isend_chunked(data_, 0, tag_bulk, bytes);
    }
    // rank 0 posted its receives before it sent the GET, so the wait is the transfer
    void send_bulk_from(std::span<const std::byte> bytes) override {
        send_chunked_waited(data_, 0, tag_bulk, bytes, "GET bytes for rank 0");
    }
    void recv_bulk(std::span<std::byte> into) override { recv_chunked(data_, 0, tag_bulk, into, "bulk bytes from rank 0"); }
    void peer_send(int dst, std::uint64_t, std::vector<std::byte> bytes) override {
        check_peer(dst);
        if (bytes.size() <= bulk_chunk) isend_owned(data_, dst, tag_peer, std::move(bytes));
        else isend_chunked(data_, dst, tag_peer, bytes);
    }
    void peer_recv(int src, std::uint64_t, std::span<std::byte> into) override {
        check_peer(src);
        recv_chunked(data_, src, tag_peer, into, "tensor bytes from rank " + std::to_string(src));
    }

    // Worker side: the next command from rank 0, if one has arrived (its size checked
    // before anything is allocated).
    bool try_recv_command(std::vector<std::byte>& out) {
        int flag = 0;
        MPI_Message m;
        MPI_Status st;
        check_mpi(MPI_Improbe(0, tag_cmd, ctrl_, &flag, &m, &st), "MPI_Improbe", 0);
        if (!flag) return false;
        int count = 0;
        check_mpi(MPI_Get_count(&st, MPI_BYTE, &count), "MPI_Get_count", 0);
        if (count < 0 || static_cast<std::size_t>(count) > max_command_bytes) {
            std::byte sink[1];
            MPI_Mrecv(sink, 0, MPI_BYTE, &m, MPI_STATUS_IGNORE);  // truncated on purpose: the command is refused
            fail(errc::format, "a command of " + std::to_string(count) + " bytes is over the limit of " + std::to_string(max_command_bytes));
        }
        out.resize(static_cast<std::size_t>(count));
        check_mpi(MPI_Mrecv(out.data(), count, MPI_BYTE, &m, MPI_STATUS_IGNORE), "MPI_Mrecv", 0);
        return true;
    }

private:
    struct send {
        MPI_Request req = MPI_REQUEST_NULL;
        std::vector<std::byte> bytes;
        int peer = -1;
    };
    [[noreturn]] void mark_lost(int r, std::string msg) {
        if (r >= 0 && r < size_ && lost_[static_cast<std::size_t>(r)].empty()) lost_[static_cast<std::size_t>(r)] = msg;
        fail(errc::io, msg);
    }
    void check_peer(int r) const {
        if (r <= 0 || r >= size_ || r == rank_)
            fail(errc::invalid_argument, "rank " + std::to_string(r) + " is not another worker (ranks 1.." + std::to_string(size_ - 1) + ")");
    }

    MPI_Comm ctrl_ = MPI_COMM_NULL, data_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    std::deque<send> pending_;
    std::vector<long> pids_;
    std::vector<bool> same_host_;
    std::vector<std::string> lost_;
};

}  // namespace backend::mpi
TESSERA_END_NAMESPACE

#endif  // TESSERA_MPI
