// The MPI device's wire format, version 1 (docs/distributed.md): the 36-byte message
// header, the command types, the reply status, and a bounds-checked little-endian
// writer and reader that every command payload and the graph encoding
// (backend/mpi/graph_codec.hpp) are built from. Nothing here needs MPI: the worker's
// command loop (backend/mpi/worker.hpp), the tests and the fuzzer use it without it.
//
// Reading follows gguf/reader.hpp's rules: a count is checked against the bytes that
// remain before anything is allocated from it, and every failure is a
// tessera::error(errc::format) that names the message, the field and the byte offset:
//   "GRAPH command: truncated: the graph size needs 8 bytes, 3 remain (byte 40)"
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::mpi {

// ---- limits ------------------------------------------------------------------------------------

inline constexpr std::uint32_t msg_magic = 0x504D5354u;  // "TSMP" read as a little-endian u32
inline constexpr std::uint16_t protocol_version = 1;
inline constexpr std::size_t header_bytes = 36;
inline constexpr std::size_t max_inline_payload = std::size_t{64} << 10;  // larger payloads come as bulk
inline constexpr std::size_t max_command_bytes = std::size_t{64} << 20;   // one command message, checked before receiving
inline constexpr std::size_t max_status_message = 4096;
inline constexpr std::size_t max_path_bytes = 4096;
inline constexpr std::size_t max_params_string = 256;
inline constexpr std::uint32_t max_event_slots = 16384;
inline constexpr std::uint32_t header_flag_bulk_follows = 1;  // the payload comes on the data communicator

namespace detail {
inline std::string hex32(std::uint32_t v) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s(8, '0');
    for (int i = 7; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15u];
    return s;
}
}  // namespace detail

// ---- message types -----------------------------------------------------------------------------

// X(name, number, synchronous: rank 0 waits for a reply)
#define TESSERA_MPI_MSG_TYPES(X) \
    X(hello, 1, true)            \
    X(memory, 2, true)           \
    X(supports_op, 3, true)      \
    X(stream_new, 4, true)       \
    X(stream_free, 5, false)     \
    X(buf_alloc, 6, true)        \
    X(buf_map_file, 7, true)     \
    X(buf_free, 8, false)        \
    X(buf_clear, 9, false)       \
    X(set, 10, false)            \
    X(get, 11, false)            \
    X(memset, 12, false)         \
    X(copy, 13, false)           \
    X(peer_send, 14, false)      \
    X(peer_recv, 15, false)      \
    X(graph, 16, false)          \
    X(event_record, 17, false)   \
    X(stats, 18, true)           \
    X(ping, 19, true)            \
    X(shutdown, 20, true)        \
    X(event_done, 32, false)

enum class msg_type : std::uint16_t {
#define TESSERA_MPI_MSG_ENUM_(n, v, s) n = v,
    TESSERA_MPI_MSG_TYPES(TESSERA_MPI_MSG_ENUM_)
#undef TESSERA_MPI_MSG_ENUM_
};

constexpr bool is_known_msg_type(std::uint16_t v) noexcept {
#define TESSERA_MPI_MSG_KNOWN_(n, val, s) \
    if (v == (val)) return true;
    TESSERA_MPI_MSG_TYPES(TESSERA_MPI_MSG_KNOWN_)
#undef TESSERA_MPI_MSG_KNOWN_
    return false;
}
constexpr std::string_view msg_type_name(msg_type t) noexcept {
    switch (t) {
#define TESSERA_MPI_MSG_NAME_(n, v, s) \
    case msg_type::n: return #n;
        TESSERA_MPI_MSG_TYPES(TESSERA_MPI_MSG_NAME_)
#undef TESSERA_MPI_MSG_NAME_
    }
    return "?";
}
// Whether rank 0 waits for a reply to this command.
constexpr bool is_synchronous(msg_type t) noexcept {
    switch (t) {
#define TESSERA_MPI_MSG_SYNC_(n, v, s) \
    case msg_type::n: return s;
        TESSERA_MPI_MSG_TYPES(TESSERA_MPI_MSG_SYNC_)
#undef TESSERA_MPI_MSG_SYNC_
    }
    return false;
}

// ---- writer ------------------------------------------------------------------------------------

// Appends little-endian fields to a byte vector (no struct is ever copied as a whole, so
// padding never travels).
class wire_writer {
public:
    void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
    void u16(std::uint16_t v) { put(v, 2); }
    void u32(std::uint32_t v) { put(v, 4); }
    void u64(std::uint64_t v) { put(v, 8); }
    void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
    void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
    void f32(float v) { u32(std::bit_cast<std::uint32_t>(v)); }
    void boolean(bool v) { u8(v ? 1 : 0); }
    void bytes(std::span<const std::byte> b) { out_.insert(out_.end(), b.begin(), b.end()); }
    void bytes(const void* p, std::size_t n) { bytes(std::span<const std::byte>(static_cast<const std::byte*>(p), n)); }
    // u32 length, then the bytes
    void str(std::string_view s) {
        u32(static_cast<std::uint32_t>(s.size()));
        bytes(s.data(), s.size());
    }
    void patch_u32(std::size_t at, std::uint32_t v) {
        for (int i = 0; i < 4; ++i) out_[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
    }
    void patch_u64(std::size_t at, std::uint64_t v) {
        for (int i = 0; i < 8; ++i) out_[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
    }
    std::size_t size() const noexcept { return out_.size(); }
    const std::vector<std::byte>& data() const noexcept { return out_; }
    std::vector<std::byte> take() noexcept { return std::move(out_); }

private:
    void put(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) out_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffu));
    }
    std::vector<std::byte> out_;
};

// ---- reader ------------------------------------------------------------------------------------

// A cursor over received bytes. Every read names its field; a read past the end, and
// every check a caller makes through fail_at, throws errc::format with the message's
// name, the context (set_context: "record 12 ('Qcur-0', rope)"), the text and the byte
// offset (counted from `origin`, so a payload reports offsets in the whole message).
class wire_reader {
public:
    wire_reader(std::span<const std::byte> b, std::string what, std::size_t origin = 0)
        : b_(b), what_(std::move(what)), origin_(origin) {}

    std::size_t pos() const noexcept { return pos_; }
    // the offset of the cursor in the whole message
    std::size_t offset() const noexcept { return origin_ + pos_; }
    std::size_t remaining() const noexcept { return b_.size() - pos_; }
    std::size_t size() const noexcept { return b_.size(); }
    void set_context(std::string c) { context_ = std::move(c); }
    const std::string& context() const noexcept { return context_; }

    // Throws: "<what>: <context>: <msg> (byte <off>)", off relative to the reader's start.
    [[noreturn]] void fail_at(std::size_t off, std::string_view msg) const {
        std::string s = what_;
        s += ": ";
        if (!context_.empty()) {
            s += context_;
            s += ": ";
        }
        s += msg;
        s += " (byte ";
        s += std::to_string(origin_ + off);
        s += ')';
        fail(errc::format, s);
    }
    [[noreturn]] void fail_here(std::string_view msg) const { fail_at(pos_, msg); }

    void need(std::size_t n, std::string_view field) const {
        if (remaining() < n) {
            std::string m = "truncated: ";
            m += field;
            m += " needs " + std::to_string(n) + (n == 1 ? " byte, " : " bytes, ") + std::to_string(remaining()) +
                 (remaining() == 1 ? " remains" : " remain");
            fail_here(m);
        }
    }

    std::uint8_t u8(std::string_view field) { return static_cast<std::uint8_t>(get(1, field)); }
    std::uint16_t u16(std::string_view field) { return static_cast<std::uint16_t>(get(2, field)); }
    std::uint32_t u32(std::string_view field) { return static_cast<std::uint32_t>(get(4, field)); }
    std::uint64_t u64(std::string_view field) { return get(8, field); }
    std::int32_t i32(std::string_view field) { return static_cast<std::int32_t>(u32(field)); }
    std::int64_t i64(std::string_view field) { return static_cast<std::int64_t>(u64(field)); }
    float f32(std::string_view field) { return std::bit_cast<float>(u32(field)); }
    bool boolean(std::string_view field) {
        const std::size_t at = pos_;
        const std::uint8_t v = u8(field);
        if (v > 1) fail_at(at, std::string(field) + " = " + std::to_string(v) + " is not a boolean (0 or 1)");
        return v != 0;
    }
    std::span<const std::byte> bytes(std::size_t n, std::string_view field) {
        need(n, field);
        auto s = b_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    // u32 length (at most max_len), then the bytes
    std::string_view str(std::string_view field, std::size_t max_len) {
        const std::size_t at = pos_;
        const std::uint32_t n = u32(field);
        if (n > max_len)
            fail_at(at, std::string(field) + ": length " + std::to_string(n) + " is over the limit of " + std::to_string(max_len));
        if (n > remaining())
            fail_at(at, std::string(field) + ": length " + std::to_string(n) + " runs past the end (" +
                            std::to_string(remaining()) + " bytes remain)");
        auto s = bytes(n, field);
        return {reinterpret_cast<const char*>(s.data()), s.size()};
    }
    // The payload must be fully read.
    void expect_end() const {
        if (remaining() != 0) fail_here(std::to_string(remaining()) + " bytes after the last field");
    }

private:
    std::uint64_t get(int n, std::string_view field) {
        need(static_cast<std::size_t>(n), field);
        std::uint64_t v = 0;
        for (int i = 0; i < n; ++i)
            v |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(b_[pos_ + static_cast<std::size_t>(i)])) << (8 * i);
        pos_ += static_cast<std::size_t>(n);
        return v;
    }

    std::span<const std::byte> b_;
    std::string what_;
    std::string context_;
    std::size_t origin_ = 0;
    std::size_t pos_ = 0;
};

// ---- header ------------------------------------------------------------------------------------

struct msg_header {  // 36 bytes on the wire
    std::uint32_t magic = msg_magic;
    std::uint16_t version = protocol_version;
    msg_type type = msg_type::ping;
    std::uint64_t seq = 0;            // per (rank 0 -> worker) pair: 1, 2, 3, ...
    std::uint64_t payload_bytes = 0;  // bytes after the header in this message
    std::uint32_t stream = 0;         // worker stream id (0: device level)
    std::uint32_t flags = 0;          // header_flag_bulk_follows
    std::uint32_t reserved = 0;       // 0 in version 1
};

inline void write_header(wire_writer& w, const msg_header& h) {
    w.u32(h.magic);
    w.u16(h.version);
    w.u16(static_cast<std::uint16_t>(h.type));
    w.u64(h.seq);
    w.u64(h.payload_bytes);
    w.u32(h.stream);
    w.u32(h.flags);
    w.u32(h.reserved);
}

// A whole message: the header (payload_bytes set from the payload) then the payload.
inline std::vector<std::byte> make_message(msg_header h, std::span<const std::byte> payload) {
    h.payload_bytes = payload.size();
    wire_writer w;
    write_header(w, h);
    w.bytes(payload);
    return w.take();
}

// Reads and checks the header of a received message: magic, version, a known type,
// payload_bytes equal to what follows, reserved 0, known flags.
inline msg_header read_header(std::span<const std::byte> msg, std::string_view what = "message") {
    wire_reader r(msg, std::string(what));
    r.set_context("header");
    msg_header h;
    if (msg.size() < header_bytes)
        r.fail_at(0, std::to_string(msg.size()) + " bytes is shorter than the " + std::to_string(header_bytes) + "-byte header");
    h.magic = r.u32("magic");
    if (h.magic != msg_magic) r.fail_at(0, "bad magic 0x" + detail::hex32(h.magic) + " (expected 0x" + detail::hex32(msg_magic) + ", 'TSMP')");
    h.version = r.u16("version");
    if (h.version != protocol_version)
        r.fail_at(4, "protocol version " + std::to_string(h.version) + ", this worker speaks " + std::to_string(protocol_version));
    const std::uint16_t t = r.u16("type");
    if (!is_known_msg_type(t)) r.fail_at(6, "unknown message type " + std::to_string(t));
    h.type = static_cast<msg_type>(t);
    h.seq = r.u64("seq");
    h.payload_bytes = r.u64("payload_bytes");
    if (h.payload_bytes != msg.size() - header_bytes)
        r.fail_at(16, "payload_bytes " + std::to_string(h.payload_bytes) + " does not match the " +
                          std::to_string(msg.size() - header_bytes) + " bytes after the header");
    h.stream = r.u32("stream");
    h.flags = r.u32("flags");
    if (h.flags & ~header_flag_bulk_follows) r.fail_at(28, "unknown flags 0x" + detail::hex32(h.flags));
    h.reserved = r.u32("reserved");
    if (h.reserved != 0) r.fail_at(32, "reserved field is " + std::to_string(h.reserved) + ", must be 0");
    return h;
}

// ---- reply status ------------------------------------------------------------------------------

// The first field of every reply: ok, or the error's code and message.
struct status {
    bool ok = true;
    errc code = errc::invalid_argument;
    std::string message;

    static status from(const tessera::error& e) { return {false, e.code(), e.what()}; }
    // Throws the error this status carries (nothing when ok).
    void rethrow(std::string_view prefix = {}) const {
        if (!ok) fail(code, std::string(prefix) + message);
    }
};

inline void write_status(wire_writer& w, const status& s) {
    w.u8(s.ok ? 1 : 0);
    w.u8(s.ok ? 0 : static_cast<std::uint8_t>(s.code));
    w.u16(0);
    const std::size_t n = std::min(s.message.size(), max_status_message);
    w.u32(static_cast<std::uint32_t>(n));
    w.bytes(s.message.data(), n);
}

inline status read_status(wire_reader& r) {
    status s;
    s.ok = r.boolean("status.ok");
    const std::size_t at = r.pos();
    const std::uint8_t c = r.u8("status.errc");
    if (c > static_cast<std::uint8_t>(errc::aborted)) r.fail_at(at, "status.errc " + std::to_string(c) + " is not an error code");
    s.code = static_cast<errc>(c);
    if (const std::uint16_t z = r.u16("status.reserved"); z != 0) r.fail_at(at + 1, "status.reserved is " + std::to_string(z));
    s.message = std::string(r.str("status.message", max_status_message));
    return s;
}

// ---- payloads ----------------------------------------------------------------------------------

// A byte range of a worker buffer.
struct region {
    std::uint64_t handle = 0;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
};
inline void write_region(wire_writer& w, const region& g) {
    w.u64(g.handle);
    w.u64(g.offset);
    w.u64(g.size);
}
inline region read_region(wire_reader& r, std::string_view name) {
    region g;
    const std::string n(name);
    g.handle = r.u64(n + ".handle");
    g.offset = r.u64(n + ".offset");
    g.size = r.u64(n + ".size");
    return g;
}

// build_id: FNV-1a 64 of what must be equal on every rank (same library, same compiler,
// same op and type tables, same protocol). Rank 0 sends it in HELLO.
inline std::uint64_t fnv1a64(std::span<const std::byte> b, std::uint64_t h = 0xcbf29ce484222325ull) noexcept {
    for (std::byte x : b) {
        h ^= std::to_integer<std::uint8_t>(x);
        h *= 0x100000001b3ull;
    }
    return h;
}
inline std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ull) noexcept {
    return fnv1a64(std::span<const std::byte>(reinterpret_cast<const std::byte*>(s.data()), s.size()), h);
}

// CRC-32 (IEEE 802.3, reflected, as zlib's crc32): guards the graph encoding's header.
inline std::uint32_t crc32(std::span<const std::byte> b) noexcept {
    static constexpr auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::byte x : b) c = table[(c ^ std::to_integer<std::uint8_t>(x)) & 0xffu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

}  // namespace backend::mpi
TESSERA_END_NAMESPACE
