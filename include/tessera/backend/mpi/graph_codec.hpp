// The graph encoding, version 1: how rank 0 sends a graph (a scheduler split) to an MPI
// worker, and how the worker takes it apart again. No MPI is needed here: the tests and
// the fuzzer run it on their own (docs/distributed.md describes the format).
//
//   std::vector<std::byte> bytes = mpi::encode_graph(g, locate);   // rank 0
//   mpi::decoded_graph d = mpi::decode_graph(bytes, handles);      // worker
//   cpu.graph_compute(d.view());
//
// encode_graph writes every node of g as a compute record, after records for the tensors
// it reads that are not nodes of g (source records: weights, inputs, the results of other
// splits, views of them). A root tensor (one with bytes of its own) carries the worker
// buffer handle and the byte offset `locate` gives for it; a view carries its root's
// record and its byte offset there. Parameters travel field by field (never a struct's
// raw bytes), so padding never travels and every enum and bool is checked on arrival.
//
// decode_graph trusts nothing: it checks the header and every record (sizes, counts,
// types, ops, parameters, layouts, source indices, memory ranges, writes into read-only
// buffers), rebuilds every compute record with its op's own builder (graph/replay.hpp)
// and requires the result to equal the record (type, extents, strides, view root and
// offset, parameters). A failure is tessera::error(errc::format) naming the record, the
// field and the byte offset, e.g.
//   "graph message: record 12 ('Qcur-0', rope): src[1] = 40 is not an earlier record (byte 1532)"
// or, for a rule of the op's builder, its own message in the same frame.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/backend/common.hpp"
#include "tessera/backend/mpi/wire.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/layout.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/graph/op_traits.hpp"
#include "tessera/graph/replay.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::mpi {

using graph::op_kind;

inline constexpr std::uint32_t graph_magic = 0x52475354u;  // "TSGR" read as a little-endian u32
inline constexpr std::uint16_t graph_version = 1;
inline constexpr std::size_t graph_header_bytes = 32;
inline constexpr std::size_t graph_min_record_bytes = 104;  // a record without sources, parameters or name
inline constexpr std::uint32_t graph_max_records = 65536;
inline constexpr std::size_t graph_max_name = 63;
inline constexpr std::uint32_t graph_no_record = 0xFFFFFFFFu;
inline constexpr std::int64_t graph_max_extent = std::int64_t{1} << 40;
inline constexpr std::uint64_t graph_max_elements = std::uint64_t{1} << 48;
inline constexpr std::uint64_t graph_max_offset = std::uint64_t{1} << 48;
inline constexpr std::uint32_t graph_known_flags =
    graph::flag_input | graph::flag_output | graph::flag_param | graph::flag_loss;

enum class record_kind : std::uint8_t { source = 0, compute = 1 };

// ---- the worker's buffers ------------------------------------------------------------------------

// What a worker's u64 buffer handles name: host memory it may read (and write, unless
// read_only: a mapped file). Handles count up from 1 and are never reused; 0 is none.
class handle_table {
public:
    struct entry {
        std::byte* base = nullptr;
        std::uint64_t size = 0;
        bool read_only = false;
        std::shared_ptr<void> keep;  // what owns the memory
    };
    std::uint64_t add(entry e) {
        const std::uint64_t h = next_++;
        map_.emplace(h, std::move(e));
        return h;
    }
    const entry* find(std::uint64_t h) const noexcept {
        const auto it = map_.find(h);
        return it == map_.end() ? nullptr : &it->second;
    }
    bool erase(std::uint64_t h) { return map_.erase(h) != 0; }
    std::size_t size() const noexcept { return map_.size(); }
    void clear() { map_.clear(); }

private:
    std::unordered_map<std::uint64_t, entry> map_;
    std::uint64_t next_ = 1;
};

// ---- parameters, field by field ----------------------------------------------------------------

namespace codec_detail {

// The fields of each parameter struct a replayable op takes, in wire order. `v` is a
// writer or a reader visitor: v(field, "name") for numbers and bools, v.en(field, "name",
// count) for an enum with values 0..count-1, v.rope_mode(field) for rope's mode.
template <class V> void fields(std::monostate&, V&) {}
template <class V> void fields(graph::cpy_params&, V&) {}
template <class V> void fields(graph::norm_params& p, V& v) { v(p.eps, "eps"); }
template <class V> void fields(graph::mul_mat_params& p, V& v) { v.en(p.prec, "prec", 2); }
template <class V> void fields(graph::concat_params& p, V& v) { v(p.dim, "dim"); }
template <class V> void fields(graph::view_params& p, V& v) {
    v(p.offset, "offset");
    for (int& a : p.axes) v(a, "axes");
}
template <class V> void fields(graph::diag_mask_params& p, V& v) { v(p.n_past, "n_past"); }
template <class V> void fields(graph::soft_max_params& p, V& v) {
    v(p.scale, "scale");
    v(p.max_bias, "max_bias");
}
template <class V> void fields(graph::rope_params& p, V& v) {
    v(p.n_dims, "n_dims");
    v(p.mode.bits, "mode");
    v(p.n_ctx_orig, "n_ctx_orig");
    v(p.freq_base, "freq_base");
    v(p.freq_scale, "freq_scale");
    v(p.ext_factor, "ext_factor");
    v(p.attn_factor, "attn_factor");
    v(p.beta_fast, "beta_fast");
    v(p.beta_slow, "beta_slow");
    for (int& s : p.sections) v(s, "sections");
}
template <class V> void fields(graph::flash_attn_params& p, V& v) {
    v(p.scale, "scale");
    v(p.max_bias, "max_bias");
    v(p.logit_softcap, "logit_softcap");
    v.en(p.prec, "prec", 2);
}
template <class V> void fields(graph::argsort_params& p, V& v) { v(p.descending, "descending"); }
template <class V> void fields(graph::top_k_params& p, V& v) { v(p.k, "k"); }
template <class V> void fields(graph::unary_params& p, V& v) {
    v.en(p.op, "op", graph::unary_names.size());
    v(p.alpha_n, "alpha_n");
    v(p.alpha_p, "alpha_p");
    v(p.beta, "beta");
    v(p.eps, "eps");
}
template <class V> void fields(graph::glu_params& p, V& v) {
    v.en(p.op, "op", graph::glu_names.size());
    v(p.swapped, "swapped");
    v(p.alpha, "alpha");
    v(p.limit, "limit");
}
template <class V> void fields(graph::scale_params& p, V& v) {
    v(p.s, "s");
    v(p.b, "b");
}
template <class V> void fields(graph::clamp_params& p, V& v) {
    v(p.min, "min");
    v(p.max, "max");
}
template <class V> void fields(graph::leaky_relu_params& p, V& v) { v(p.slope, "slope"); }

template <class P>
concept encodable_params = requires(P& p, int& v) { fields(p, v); };

// Calls f(std::type_identity<P>{}) for the struct at index `i` of op_params, when it is
// one of the structs above; returns false otherwise.
template <class F>
bool with_param_type(std::size_t i, F&& f) {
    bool done = false;
    auto one = [&]<class P>(std::type_identity<P> t) {
        if (!done && i == graph::op_params::index_of<P>) {
            f(t);
            done = true;
        }
    };
    one(std::type_identity<std::monostate>{});
    one(std::type_identity<graph::cpy_params>{});
    one(std::type_identity<graph::norm_params>{});
    one(std::type_identity<graph::mul_mat_params>{});
    one(std::type_identity<graph::concat_params>{});
    one(std::type_identity<graph::view_params>{});
    one(std::type_identity<graph::diag_mask_params>{});
    one(std::type_identity<graph::soft_max_params>{});
    one(std::type_identity<graph::rope_params>{});
    one(std::type_identity<graph::flash_attn_params>{});
    one(std::type_identity<graph::argsort_params>{});
    one(std::type_identity<graph::top_k_params>{});
    one(std::type_identity<graph::unary_params>{});
    one(std::type_identity<graph::glu_params>{});
    one(std::type_identity<graph::scale_params>{});
    one(std::type_identity<graph::clamp_params>{});
    one(std::type_identity<graph::leaky_relu_params>{});
    return done;
}

struct param_writer {
    wire_writer& w;
    void operator()(float x, const char*) { w.f32(x); }
    void operator()(int x, const char*) { w.i32(x); }
    void operator()(bool x, const char*) { w.boolean(x); }
    void operator()(std::size_t x, const char*) { w.u64(x); }
    void operator()(std::int64_t x, const char*) { w.i64(x); }
    template <class E>
    void en(E e, const char*, std::size_t) {
        w.u8(static_cast<std::uint8_t>(e));
    }
};

struct param_reader {
    wire_reader& r;
    void operator()(float& x, const char* n) { x = r.f32(std::string("params.") + n); }
    void operator()(int& x, const char* n) { x = r.i32(std::string("params.") + n); }
    void operator()(bool& x, const char* n) { x = r.boolean(std::string("params.") + n); }
    void operator()(std::size_t& x, const char* n) {
        const std::size_t at = r.pos();
        const std::uint64_t v = r.u64(std::string("params.") + n);
        if (v > graph_max_offset) r.fail_at(at, std::string("params.") + n + " = " + std::to_string(v) + " is over 2^48");
        x = static_cast<std::size_t>(v);
    }
    void operator()(std::int64_t& x, const char* n) { x = r.i64(std::string("params.") + n); }
    template <class E>
    void en(E& e, const char* n, std::size_t count) {
        const std::size_t at = r.pos();
        const std::uint8_t v = r.u8(std::string("params.") + n);
        if (v >= count)
            r.fail_at(at, std::string("params.") + n + " = " + std::to_string(v) + " is not one of the " + std::to_string(count) +
                              " values (0.." + std::to_string(count - 1) + ")");
        e = static_cast<E>(v);
    }
};

// Bytes the fields of P take on the wire.
template <class P>
std::size_t wire_size() {
    wire_writer w;
    P p{};
    param_writer pw{w};
    fields(p, pw);
    return w.size();
}

inline std::string printable(std::string_view s) {
    std::string o;
    for (char c : s) o += (c >= 0x20 && c < 0x7f) ? c : '?';
    return o;
}

// The alignment a tensor's first byte and strides need for the kernels to read its
// elements (a block's first field is an f16 scale; q8_K's is an f32).
inline std::uint64_t element_alignment(type_id t) {
    switch (t) {
        case type_id::f32:
        case type_id::i32:
        case type_id::q8_K: return 4;
        case type_id::i64:
        case type_id::f64: return 8;
        case type_id::i8: return 1;
        default: return 2;
    }
}

}  // namespace codec_detail

// Writes op's parameters (the struct p holds) field by field.
inline void write_op_params(wire_writer& w, op_kind op, const graph::op_params& p) {
    graph::check_params(op, p);
    const bool ok = codec_detail::with_param_type(p.index(), [&]<class P>(std::type_identity<P>) {
        P copy = p.get<P>();
        codec_detail::param_writer pw{w};
        codec_detail::fields(copy, pw);
    });
    if (!ok) fail_cat(errc::unsupported, "graph encoding: the parameters of op ", graph::op_name(op), " are not encoded in version 1");
}

// ---- encoder -----------------------------------------------------------------------------------

// Where a root tensor's bytes are on the worker: its buffer handle and byte offset there.
struct location {
    std::uint64_t handle = 0;
    std::uint64_t offset = 0;
};
using locate_fn = std::function<location(const graph::node& root)>;

// Encodes the nodes of g (in their order) and everything they read; see the top of the file.
// Throws for an op replay does not rebuild (graph::replayable) and for nodes out of order.
inline std::vector<std::byte> encode_graph(graph_view g, const locate_fn& locate) {
    using graph::node;
    struct rec {
        const node* n;
        record_kind kind;
    };
    std::vector<rec> recs;
    std::unordered_map<const node*, std::uint32_t> index;
    std::unordered_map<const node*, bool> in_graph;
    for (const node* n : g.nodes) in_graph[n] = true;

    auto add_source = [&](const node* n) {
        if (index.count(n)) return;
        if (in_graph.count(n) && n->op != op_kind::none)
            fail_cat(errc::invalid_argument, "encode_graph: node ", backend::detail::tensor_desc(*n), " is read before it is computed (the nodes are not in topological order)");
        if (n->view_src && !index.count(n->view_src)) {
            index.emplace(n->view_src, static_cast<std::uint32_t>(recs.size()));
            recs.push_back({n->view_src, record_kind::source});
        }
        index.emplace(n, static_cast<std::uint32_t>(recs.size()));
        recs.push_back({n, record_kind::source});
    };
    for (const node* n : g.nodes) {
        if (n->op == op_kind::none) {  // a parameter leaf among the nodes: nothing to compute
            add_source(n);
            continue;
        }
        if (!graph::replayable(n->op))
            fail_cat(errc::unsupported, "encode_graph: op ", graph::op_name(n->op), " of ", backend::detail::tensor_desc(*n),
                     " is not accepted over MPI yet");
        for (const node* s : n->src)
            if (s) add_source(s);
        if (n->view_src) add_source(n->view_src);
        if (index.count(n)) fail_cat(errc::invalid_argument, "encode_graph: node ", backend::detail::tensor_desc(*n), " appears twice");
        index.emplace(n, static_cast<std::uint32_t>(recs.size()));
        recs.push_back({n, record_kind::compute});
    }

    wire_writer w;
    w.u32(graph_magic);
    w.u16(graph_version);
    w.u16(0);
    w.u32(static_cast<std::uint32_t>(recs.size()));
    std::uint32_t n_compute = 0;
    for (const rec& r : recs) n_compute += r.kind == record_kind::compute ? 1u : 0u;
    w.u32(n_compute);
    w.u64(0);  // body_bytes, patched
    w.u32(0);
    w.u32(0);  // crc, patched
    for (const rec& r : recs) {
        const node& n = *r.n;
        const bool source_view = r.kind == record_kind::source && n.view_src;
        // a source is written as a leaf, or re-rooted as a plain view of its root
        const op_kind op = r.kind == record_kind::compute ? n.op : (source_view ? op_kind::view : op_kind::none);
        graph::op_params params;
        if (r.kind == record_kind::compute) params = n.params;
        else if (source_view) params = graph::view_params{n.view_offs, {0, 1, 2, 3}};
        wire_writer pw;
        write_op_params(pw, op, params);
        std::array<std::uint32_t, graph::max_src> src{};
        int n_src = 0;
        if (r.kind == record_kind::compute) {
            n_src = n.n_src();
            for (int i = 0; i < n_src; ++i) {
                const node* s = n.src[static_cast<std::size_t>(i)];
                src[static_cast<std::size_t>(i)] = s ? index.at(s) : graph_no_record;
            }
        } else if (source_view) {
            n_src = 1;
            src[0] = index.at(n.view_src);
        }
        const std::string name = n.name.substr(0, graph_max_name);
        w.u8(static_cast<std::uint8_t>(r.kind));
        w.u8(static_cast<std::uint8_t>(n.lay.type));
        w.u8(static_cast<std::uint8_t>(op));
        w.u8(static_cast<std::uint8_t>(graph::op_info(op).param_index));
        w.u8(static_cast<std::uint8_t>(n_src));
        w.u8(static_cast<std::uint8_t>(name.size()));
        w.u16(static_cast<std::uint16_t>(pw.size()));
        w.u32(n.flags & graph_known_flags);
        for (std::int64_t e : n.lay.ne) w.i64(e);
        for (std::size_t b : n.lay.nb) w.u64(b);
        for (int i = 0; i < n_src; ++i) w.u32(src[static_cast<std::size_t>(i)]);
        w.u32(n.view_src ? index.at(n.view_src) : graph_no_record);
        w.u64(n.view_src ? n.view_offs : 0);
        location loc;
        if (!n.view_src) {
            loc = locate(n);
            if (loc.handle == 0) fail_cat(errc::invalid_argument, "encode_graph: ", backend::detail::tensor_desc(n), " has no worker memory");
        }
        w.u64(loc.handle);
        w.u64(loc.offset);
        w.bytes(pw.data());
        w.bytes(name.data(), name.size());
    }
    w.patch_u64(16, w.size() - graph_header_bytes);
    std::vector<std::byte> out = w.take();
    const std::uint32_t crc = crc32(std::span<const std::byte>(out.data(), 28));
    for (int i = 0; i < 4; ++i) out[28 + static_cast<std::size_t>(i)] = static_cast<std::byte>((crc >> (8 * i)) & 0xffu);
    return out;
}

// ---- decoder -----------------------------------------------------------------------------------

// A received graph: its tensors in a context of their own, bound to the worker's memory.
struct decoded_graph {
    std::unique_ptr<graph::context> ctx;
    std::vector<graph::node*> records;  // one per record
    std::vector<graph::node*> nodes;    // the compute records, in order
    graph_view view() const noexcept { return graph_view(std::span<graph::node* const>(nodes)); }
};

struct decode_options {
    std::string what = "graph message";  // the first words of every error message
    std::size_t origin = 0;              // the encoding's offset in its message (for byte offsets)
    // Refuses a compute node the executor cannot run (the worker passes the CPU's
    // unsupported_reason); an empty string accepts.
    std::function<std::string(const graph::node&)> unsupported;
};

namespace codec_detail {

// Σ (ne[d]-1)·nb[d] + the bytes of one element (block), without overflow: the bytes a
// layout spans. nullopt when it does not fit in 2^63.
inline std::optional<std::uint64_t> extent_bytes(const layout& l) {
    for (std::int64_t e : l.ne)
        if (e == 0) return 0;
    const auto blck = static_cast<std::uint64_t>(block_size(l.type));
    const auto es = static_cast<std::uint64_t>(type_size(l.type));
    std::uint64_t n = 0, t = 0;
    if (blck == 1) {
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(l.ne[0] - 1), static_cast<std::uint64_t>(l.nb[0]), &t) ||
            __builtin_add_overflow(t, es, &n))
            return std::nullopt;
    } else if (__builtin_mul_overflow(static_cast<std::uint64_t>(l.ne[0]) / blck, static_cast<std::uint64_t>(l.nb[0]), &n)) {
        return std::nullopt;
    }
    for (int d = 1; d < max_dims; ++d) {
        if (__builtin_mul_overflow(static_cast<std::uint64_t>(l.ne[static_cast<std::size_t>(d)] - 1),
                                   static_cast<std::uint64_t>(l.nb[static_cast<std::size_t>(d)]), &t) ||
            __builtin_add_overflow(n, t, &n))
            return std::nullopt;
    }
    if (n > (UINT64_MAX >> 1)) return std::nullopt;
    return n;
}

inline bool same_layout(const layout& a, const layout& b) { return a.type == b.type && a.ne == b.ne && a.nb == b.nb; }

}  // namespace codec_detail

// Decodes and checks an encoding made by encode_graph; see the top of the file.
inline decoded_graph decode_graph(std::span<const std::byte> bytes, const handle_table& handles, const decode_options& opt = {}) {
    using graph::node;
    using namespace codec_detail;
    wire_reader r(bytes, opt.what, opt.origin);
    r.set_context("header");
    // D1: the header
    if (bytes.size() < graph_header_bytes)
        r.fail_at(0, std::to_string(bytes.size()) + " bytes is shorter than the " + std::to_string(graph_header_bytes) + "-byte header");
    const std::uint32_t magic = r.u32("magic");
    if (magic != graph_magic) r.fail_at(0, "bad magic 0x" + detail::hex32(magic) + " (expected 0x" + detail::hex32(graph_magic) + ", 'TSGR')");
    const std::uint16_t version = r.u16("version");
    if (version != graph_version)
        r.fail_at(4, "graph encoding version " + std::to_string(version) + ", this worker reads " + std::to_string(graph_version));
    if (const std::uint16_t f = r.u16("flags"); f != 0) r.fail_at(6, "flags are " + std::to_string(f) + ", must be 0");
    const std::uint32_t n_records = r.u32("n_records");
    const std::uint32_t n_compute = r.u32("n_compute");
    const std::uint64_t body_bytes = r.u64("body_bytes");
    if (const std::uint32_t z = r.u32("reserved"); z != 0) r.fail_at(24, "reserved is " + std::to_string(z) + ", must be 0");
    const std::uint32_t crc = r.u32("header_crc32");
    if (const std::uint32_t want = crc32(bytes.subspan(0, 28)); crc != want)
        r.fail_at(28, "header crc32 0x" + detail::hex32(crc) + " does not match the header (0x" + detail::hex32(want) + ")");
    if (body_bytes != bytes.size() - graph_header_bytes)
        r.fail_at(16, "body_bytes " + std::to_string(body_bytes) + " does not match the " +
                          std::to_string(bytes.size() - graph_header_bytes) + " bytes after the header");
    if (n_records > graph_max_records)
        r.fail_at(8, "n_records " + std::to_string(n_records) + " is over the limit of " + std::to_string(graph_max_records));
    if (n_compute > n_records)
        r.fail_at(12, "n_compute " + std::to_string(n_compute) + " is more than n_records " + std::to_string(n_records));
    if (static_cast<std::uint64_t>(n_records) * graph_min_record_bytes > body_bytes)
        r.fail_at(8, "n_records " + std::to_string(n_records) + " cannot fit in " + std::to_string(body_bytes) + " bytes (" +
                         std::to_string(graph_min_record_bytes) + " bytes each at least)");

    decoded_graph d;
    d.ctx = std::make_unique<graph::context>(graph::context_options{true, 64, std::size_t{2} * graph_max_records + 16});
    graph::context& ctx = *d.ctx;
    d.records.reserve(n_records);
    d.nodes.reserve(n_compute);
    struct bind_to {
        node* n;
        std::byte* p;
    };
    std::vector<bind_to> binds;
    std::vector<bool> is_view_rec;       // per record: a view (no memory of its own)
    std::vector<bool> read_only_rec;     // per root record: memory that must not be written
    std::vector<std::uint64_t> abs_off;  // per root record: its byte offset in its handle
    std::uint32_t seen_compute = 0;

    for (std::uint32_t i = 0; i < n_records; ++i) {
        const std::size_t at = r.pos();
        r.set_context("record " + std::to_string(i));
        // D2: the fixed part
        const std::uint8_t kind_raw = r.u8("kind");
        if (kind_raw > 1) r.fail_at(at, "kind " + std::to_string(kind_raw) + " is neither 0 (source) nor 1 (compute)");
        const auto kind = static_cast<record_kind>(kind_raw);
        const std::uint8_t type_raw = r.u8("type");
        const std::uint8_t op_raw = r.u8("op");
        const std::uint8_t param_index = r.u8("param_index");
        const std::uint8_t n_src = r.u8("n_src");
        const std::uint8_t name_len = r.u8("name_len");
        const std::uint16_t param_bytes = r.u16("param_bytes");
        const std::uint32_t flags = r.u32("flags");
        // D3: type and op
        if (!is_valid_type_id(type_raw)) r.fail_at(at + 1, "type " + std::to_string(type_raw) + " is not a tensor type");
        const auto type = static_cast<type_id>(type_raw);
        if (op_raw >= graph::op_count) r.fail_at(at + 2, "op " + std::to_string(op_raw) + " is not an op (0.." + std::to_string(graph::op_count - 1) + ")");
        const auto op = static_cast<op_kind>(op_raw);
        const std::string opn(graph::op_name(op));
        r.set_context("record " + std::to_string(i) + " (" + opn + ")");
        if (n_src > graph::max_src) r.fail_at(at + 4, "n_src " + std::to_string(n_src) + " is over " + std::to_string(graph::max_src));
        if (name_len > graph_max_name) r.fail_at(at + 5, "name_len " + std::to_string(name_len) + " is over " + std::to_string(graph_max_name));
        if (flags & ~graph_known_flags) r.fail_at(at + 8, "unknown flags 0x" + detail::hex32(flags));
        if (kind == record_kind::compute) {
            if (op == op_kind::none) r.fail_at(at + 2, "a compute record needs an op (op none)");
            if (!graph::replayable(op)) r.fail_at(at + 2, "op " + opn + " is not accepted over MPI yet");
        } else if (op != op_kind::none && op != op_kind::view) {
            r.fail_at(at + 2, "a source record must be a leaf (op none) or a view, not op " + opn);
        }
        if (param_index != graph::op_info(op).param_index)
            r.fail_at(at + 3, "param_index " + std::to_string(param_index) + " is not op " + opn + "'s (" +
                                  std::to_string(graph::op_info(op).param_index) + ")");
        std::size_t want_param_bytes = 0;
        with_param_type(param_index, [&]<class P>(std::type_identity<P>) { want_param_bytes = wire_size<P>(); });
        if (param_bytes != want_param_bytes)
            r.fail_at(at + 6, "param_bytes " + std::to_string(param_bytes) + ", op " + opn + "'s parameters take " +
                                  std::to_string(want_param_bytes));
        // D5: layout
        layout lay;
        lay.type = type;
        for (int k = 0; k < max_dims; ++k) {
            const std::size_t fat = r.pos();
            const std::int64_t e = r.i64("ne");
            if (e < 0 || e > graph_max_extent)
                r.fail_at(fat, "ne[" + std::to_string(k) + "] = " + std::to_string(e) + " is outside 0..2^40");
            lay.ne[static_cast<std::size_t>(k)] = e;
        }
        const std::size_t nb_at = r.pos();
        for (int k = 0; k < max_dims; ++k) {
            const std::uint64_t b = r.u64("nb");
            if (b > graph_max_offset) r.fail_at(nb_at + 8 * static_cast<std::size_t>(k), "nb[" + std::to_string(k) + "] = " + std::to_string(b) + " is over 2^48");
            lay.nb[static_cast<std::size_t>(k)] = static_cast<std::size_t>(b);
        }
        {
            std::uint64_t prod = 1;
            for (std::int64_t e : lay.ne)
                if (__builtin_mul_overflow(prod, static_cast<std::uint64_t>(e == 0 ? 1 : e), &prod) || prod > graph_max_elements)
                    r.fail_at(at + 12, "the extents " + lay.to_string() + " hold more than 2^48 elements");
            if (lay.ne[0] % block_size(type) != 0)
                r.fail_at(at + 12, "ne[0] = " + std::to_string(lay.ne[0]) + " is not a whole number of " + std::string(type_name(type)) +
                                       " blocks (" + std::to_string(block_size(type)) + ")");
        }
        // sources (D6)
        r.need(4u * n_src, "src");
        std::array<node*, graph::max_src> src{};
        std::array<std::uint32_t, graph::max_src> src_idx{};
        for (int k = 0; k < n_src; ++k) {
            const std::size_t fat = r.pos();
            const std::uint32_t s = r.u32("src");
            src_idx[static_cast<std::size_t>(k)] = s;
            if (s == graph_no_record) {
                if (k == n_src - 1) r.fail_at(fat, "src[" + std::to_string(k) + "] is empty but n_src says it is the last source");
                continue;
            }
            if (s >= i) r.fail_at(fat, "src[" + std::to_string(k) + "] = " + std::to_string(s) + " is not an earlier record");
            src[static_cast<std::size_t>(k)] = d.records[s];
        }
        const std::size_t vs_at = r.pos();
        const std::uint32_t view_src = r.u32("view_src");
        const std::uint64_t view_offs = r.u64("view_offs");
        const std::size_t mem_at = r.pos();
        const std::uint64_t handle = r.u64("handle");
        const std::uint64_t offset = r.u64("offset");
        const std::size_t params_at = r.pos();
        auto param_span = r.bytes(param_bytes, "params");
        wire_reader pr(param_span, opt.what, opt.origin + params_at);
        pr.set_context(r.context());
        graph::op_params params;
        with_param_type(param_index, [&]<class P>(std::type_identity<P>) {
            P p{};
            param_reader rd{pr};
            fields(p, rd);
            params = graph::op_params(std::move(p));
        });
        const auto name_bytes = r.bytes(name_len, "name");
        const std::string name(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
        r.set_context("record " + std::to_string(i) + " ('" + printable(name) + "', " + opn + ")");

        const bool is_view = view_src != graph_no_record;
        if (is_view) {
            if (view_src >= i) r.fail_at(vs_at, "view_src = " + std::to_string(view_src) + " is not an earlier record");
            if (is_view_rec[view_src]) r.fail_at(vs_at, "view_src = " + std::to_string(view_src) + " is a view, not a root");
            if (handle != 0 || offset != 0) r.fail_at(mem_at, "a view has no memory of its own (handle and offset must be 0)");
            if (view_offs > graph_max_offset) r.fail_at(vs_at + 4, "view_offs " + std::to_string(view_offs) + " is over 2^48");
        } else if (view_offs != 0) {
            r.fail_at(vs_at + 4, "view_offs is " + std::to_string(view_offs) + " without a view_src");
        }

        // the bytes the layout spans
        const auto extent = extent_bytes(lay);
        if (!extent) r.fail_at(nb_at, "the layout " + lay.to_string() + " spans more than 2^63 bytes");
        const std::uint64_t align = element_alignment(type);
        if (!is_view) {
            // D5: a tensor with bytes of its own is contiguous
            const layout c = layout::contiguous(type, lay.ne);
            if (c.nb != lay.nb)
                r.fail_at(nb_at, "a tensor with memory of its own must be contiguous: nb {" + std::to_string(lay.nb[0]) + ", " +
                                     std::to_string(lay.nb[1]) + ", " + std::to_string(lay.nb[2]) + ", " + std::to_string(lay.nb[3]) +
                                     "}, contiguous is {" + std::to_string(c.nb[0]) + ", " + std::to_string(c.nb[1]) + ", " +
                                     std::to_string(c.nb[2]) + ", " + std::to_string(c.nb[3]) + "}");
            // D7: memory
            const handle_table::entry* e = handles.find(handle);
            if (!e) r.fail_at(mem_at, "handle " + std::to_string(handle) + " is not a buffer of this worker");
            std::uint64_t end = 0;
            if (offset > e->size || __builtin_add_overflow(offset, *extent, &end) || end > e->size)
                r.fail_at(mem_at + 8, "bytes [" + std::to_string(offset) + ", +" + std::to_string(*extent) + ") run past the " +
                                          std::to_string(e->size) + " bytes of buffer " + std::to_string(handle));
            if (offset % align != 0)
                r.fail_at(mem_at + 8, "offset " + std::to_string(offset) + " is not a multiple of " + std::to_string(align) +
                                          " (the alignment of " + std::string(type_name(type)) + ")");
        } else {
            // D6: inside the root; D7: aligned
            const node* root = d.records[view_src];
            const std::uint64_t root_bytes = root->lay.nbytes();
            std::uint64_t end = 0;
            if (__builtin_add_overflow(view_offs, *extent, &end) || end > root_bytes)
                r.fail_at(vs_at + 4, "the view's bytes [" + std::to_string(view_offs) + ", +" + std::to_string(*extent) +
                                         ") run past the " + std::to_string(root_bytes) + " bytes of its root (record " +
                                         std::to_string(view_src) + ")");
            if ((abs_off[view_src] + view_offs) % align != 0)
                r.fail_at(vs_at + 4, "the view starts at byte " + std::to_string(abs_off[view_src] + view_offs) +
                                         " of its buffer, not a multiple of " + std::to_string(align) + " (the alignment of " +
                                         std::string(type_name(type)) + ")");
            for (int k = 0; k < max_dims; ++k)
                if (lay.ne[static_cast<std::size_t>(k)] > 1 && lay.nb[static_cast<std::size_t>(k)] % align != 0)
                    r.fail_at(nb_at + 8 * static_cast<std::size_t>(k), "nb[" + std::to_string(k) + "] = " +
                                                                            std::to_string(lay.nb[static_cast<std::size_t>(k)]) +
                                                                            " is not a multiple of " + std::to_string(align));
            if (is_quantized(type) && lay.nb[0] != static_cast<std::size_t>(type_size(type)))
                r.fail_at(nb_at, "a view of " + std::string(type_name(type)) + " blocks must keep nb[0] = " + std::to_string(type_size(type)));
            // a view reads at most a bounded multiple of its root's bytes (stride-0 broadcasts)
            const std::uint64_t elems = static_cast<std::uint64_t>(lay.ne[0]) * static_cast<std::uint64_t>(lay.ne[1]) *
                                        static_cast<std::uint64_t>(lay.ne[2]) * static_cast<std::uint64_t>(lay.ne[3]);
            if (elems / static_cast<std::uint64_t>(block_size(type)) > 16 * root_bytes + 4096)
                r.fail_at(nb_at, "the view " + lay.to_string() + " has more elements than 16x the " + std::to_string(root_bytes) +
                                     " bytes of its root");
        }

        node* n = nullptr;
        if (kind == record_kind::source) {
            if (op == op_kind::none) {
                if (is_view) r.fail_at(vs_at, "a leaf (op none) cannot be a view; send op view");
                if (n_src != 0) r.fail_at(at + 4, "a leaf has no sources (n_src " + std::to_string(n_src) + ")");
                n = ctx.new_tensor(type, lay.ne);
            } else {  // a source view, re-rooted
                const auto& vp = params.get<graph::view_params>();
                if (!is_view) r.fail_at(vs_at, "a source view needs a view_src");
                if (n_src != 1 || src_idx[0] != view_src)
                    r.fail_at(at + 4, "a source view has one source, its view_src (" + std::to_string(view_src) + ")");
                if (vp.offset != view_offs || vp.axes != std::array<int, 4>{0, 1, 2, 3})
                    r.fail_at(params_at, "a source view's parameters must be {offset = view_offs, axes 0 1 2 3}");
                node* root = d.records[view_src];
                if (root->lay.type != type)
                    r.fail_at(at + 1, "a view of " + std::string(type_name(type)) + " over a root of " + std::string(type_name(root->lay.type)));
                n = ctx.new_view(root, lay, static_cast<std::size_t>(view_offs), op_kind::view, params, {root});
            }
        } else {
            // D9: the op's builder, on the decoded sources, must make exactly this record
            try {
                n = graph::replay(ctx, op, params, std::span<node* const>(src.data(), n_src), lay, is_view);
            } catch (const tessera::error& e) {
                r.fail_at(at, std::string("the op's builder refuses it: ") + e.what());
            }
            if (!same_layout(n->lay, lay))
                r.fail_at(at + 12, "the layout " + lay.to_string() + " nb {" + std::to_string(lay.nb[0]) + ", " + std::to_string(lay.nb[1]) +
                                       ", " + std::to_string(lay.nb[2]) + ", " + std::to_string(lay.nb[3]) + "} is not what " + opn +
                                       " makes of its sources: " + n->lay.to_string() + " nb {" + std::to_string(n->lay.nb[0]) + ", " +
                                       std::to_string(n->lay.nb[1]) + ", " + std::to_string(n->lay.nb[2]) + ", " +
                                       std::to_string(n->lay.nb[3]) + "}");
            if (n->is_view() != is_view || (is_view && (n->view_src != d.records[view_src] || n->view_offs != view_offs)))
                r.fail_at(vs_at, std::string("view_src/view_offs do not match what ") + opn + " makes (" +
                                     (n->is_view() ? "a view at byte " + std::to_string(n->view_offs) + " of its root" : std::string("a tensor of its own")) +
                                     ")");
            wire_writer again;
            write_op_params(again, op, n->params);
            if (!std::equal(again.data().begin(), again.data().end(), param_span.begin(), param_span.end()))
                r.fail_at(params_at, "the parameters are not what " + opn + "'s builder keeps from them");
            for (int k = 0; k < graph::max_src; ++k)
                if (n->src[static_cast<std::size_t>(k)] != src[static_cast<std::size_t>(k)])
                    r.fail_at(at + 4, "src[" + std::to_string(k) + "] is not where " + opn + " takes its operands");
            // D8: compute records write their memory
            const std::uint32_t root_rec = is_view ? view_src : i;
            const bool ro = is_view ? read_only_rec[view_src] : handles.find(handle)->read_only;
            if (ro)
                r.fail_at(is_view ? vs_at : mem_at, "the result would be written into read-only memory (record " + std::to_string(root_rec) +
                                                        "'s buffer is a mapped file)");
            if (opt.unsupported)
                if (const std::string why = opt.unsupported(*n); !why.empty()) r.fail_at(at + 2, "this worker cannot compute it: " + why);
            ++seen_compute;
        }
        n->name = name;
        n->flags = flags;
        d.records.push_back(n);
        is_view_rec.push_back(is_view);
        if (!is_view) {
            const handle_table::entry* e = handles.find(handle);
            read_only_rec.push_back(e->read_only);
            abs_off.push_back(offset);
            binds.push_back({n, e->base ? e->base + offset : nullptr});
        } else {
            read_only_rec.push_back(read_only_rec[view_src]);
            abs_off.push_back(abs_off[view_src]);
        }
        if (kind == record_kind::compute) d.nodes.push_back(n);
    }
    r.set_context({});
    if (seen_compute != n_compute)
        r.fail_at(12, "n_compute is " + std::to_string(n_compute) + " but " + std::to_string(seen_compute) + " records are compute records");
    r.expect_end();
    for (const bind_to& b : binds) graph::context::bind(*b.n, b.p);
    return d;
}

}  // namespace backend::mpi
TESSERA_END_NAMESPACE
