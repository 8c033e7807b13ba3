// The CPU implementations of the ops, one function per op: each thread of a node
// gets (ith, nth), its planned scratch and the dispatched kernels, handles its share
// of rows, and may synchronize with the node's other threads (multi-phase ops such
// as mul_mat, which first converts b to f32). Which ops and types are supported is
// decided in unsupported_reason(); the executor refuses a graph before computing
// anything if a node is not supported, so nothing silently computes wrong.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/backend/cpu/repack.hpp"
#include "tessera/backend/cpu/ops_arith.hpp"
#include "tessera/backend/cpu/ops_products.hpp"
#include "tessera/backend/cpu/ops_sort.hpp"
#include "tessera/backend/cpu/ops_training.hpp"
#include "tessera/backend/cpu/ops_conv.hpp"
#include "tessera/backend/cpu/ops_custom.hpp"
#include "tessera/backend/cpu/ops_deepseek.hpp"
#include "tessera/backend/cpu/ops_image.hpp"
#include "tessera/backend/cpu/ops_recurrent.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/graph/op_traits.hpp"
#include "tessera/kernels/quant/table.hpp"
#include "tessera/quant/reference.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

namespace detail {

inline bool is_plain(type_id t) noexcept { return block_size(t) == 1; }
inline std::size_t align_up(std::size_t x, std::size_t a = 64) noexcept { return (x + a - 1) / a * a; }

inline std::int64_t max_ne0(const node& n) {
    std::int64_t m = n.lay.ne[0];
    for (const node* s : n.src)
        if (s) m = std::max(m, s->lay.ne[0]);
    return m;
}

inline kernels::unary_kind unary_kind_of(const node& n, float& p0, float& p1) {
    p0 = p1 = 0.f;
    switch (n.op) {
        case op_kind::unary: return static_cast<kernels::unary_kind>(static_cast<int>(n.param<unary_params>().op));
        case op_kind::sqr: return kernels::unary_kind::sqr;
        case op_kind::sqrt: return kernels::unary_kind::sqrt;
        case op_kind::log: return kernels::unary_kind::log;
        case op_kind::sin: return kernels::unary_kind::sin;
        case op_kind::cos: return kernels::unary_kind::cos;
        case op_kind::clamp:
            p0 = n.param<clamp_params>().min;
            p1 = n.param<clamp_params>().max;
            return kernels::unary_kind::clamp;
        case op_kind::leaky_relu: p0 = n.param<leaky_relu_params>().slope; return kernels::unary_kind::leaky_relu;
        case op_kind::fill: p0 = n.param<fill_params>().value; return kernels::unary_kind::fill;
        default: return kernels::unary_kind::abs;
    }
}

// ALiBi slope of head h (ggml's formula).
inline float alibi_slope(float max_bias, std::int64_t h, std::int64_t n_head) {
    if (max_bias <= 0.f) return 1.f;
    const auto n_log2 = static_cast<std::int64_t>(1) << static_cast<int>(std::floor(std::log2(static_cast<double>(n_head))));
    const float m0 = std::pow(2.f, -max_bias / static_cast<float>(n_log2));
    const float m1 = std::pow(2.f, -(max_bias / 2.f) / static_cast<float>(n_log2));
    return h < n_log2 ? std::pow(m0, static_cast<float>(h + 1)) : std::pow(m1, static_cast<float>(2 * (h - n_log2) + 1));
}

}  // namespace detail

// ---- support -------------------------------------------------------------------------------

// Empty when the CPU executor computes this node exactly as ggml specifies; otherwise
// a sentence saying what is not supported.
// A source stored repacked (in a CPU_REPACK buffer, backend/cpu/repack.hpp) can only be read by
// mul_mat, as its weights, whole (not through a view).
inline std::string repacked_source_reason(const node& n) {
    for (int i = 0; i < max_src; ++i) {
        const node* s = n.src[static_cast<std::size_t>(i)];
        if (!s) continue;
        const node& root = s->view_src ? *s->view_src : *s;
        if (!is_repacked(root)) continue;
        if (n.op == op_kind::mul_mat && i == 0 && !s->is_view()) return {};
        return "source '" + root.name + "' is stored repacked (buffer type CPU_REPACK); only mul_mat can read it, as its "
               "whole first operand";
    }
    return {};
}

// What the CPU computes, by group of ops: each returns empty when it computes the node
// exactly as ggml specifies, else a sentence saying what is not supported. The op table
// at the end of this file names one per op.
namespace support {
inline std::string tn(type_id x) { return std::string(type_name(x)); }
inline std::string always(const node&) { return {}; }
inline std::string copy(const node& n) {
    const node* a = n.src[0];
    const type_id t = n.lay.type, ta = a->lay.type;
    if (ta == t) {
        if (detail::is_plain(t)) return {};
        if (a->lay.ne == n.lay.ne || (a->lay.is_contiguous() && n.lay.is_contiguous())) return {};
        return "copy of block type " + tn(t) + " between different shapes of non-contiguous tensors";
    }
    const bool fa = is_float(ta) || ta == type_id::i32, fd = is_float(t) || t == type_id::i32;
    if (fa && fd) return {};
    // through f32 rows: dequantize a block source, quantize into a block destination
    const bool src_ok = is_float(ta) || (!detail::is_plain(ta) && quant::can_dequantize(ta));
    const bool dst_ok = is_float(t) || (!detail::is_plain(t) && quant::can_quantize(t));
    if (src_ok && dst_ok && a->lay.ne == n.lay.ne) return {};
    return "conversion " + tn(ta) + " -> " + tn(t) + " (quantize/dequantize copies need the quant kernels)";
}
inline std::string binary(const node& n) {
    const node* a = n.src[0];
    const node* b = n.src[1];
    if (is_float(n.lay.type) && is_float(a->lay.type) && is_float(b->lay.type)) return {};
    return "binary op on " + tn(a->lay.type) + ", " + tn(b->lay.type);
}
inline std::string float_dst(const node& n) {  // unary, soft_max, rope, rope_back
    if (is_float(n.lay.type)) return {};
    return (n.op == op_kind::unary ? std::string("unary op") : std::string(op_name(n.op))) + " on " + tn(n.lay.type);
}
inline std::string float_src(const node& n) {
    const node* a = n.src[0];
    return is_float(a->lay.type) ? std::string() : std::string(op_name(n.op)) + " on " + tn(a->lay.type);
}
inline std::string argmax(const node& n) {
    const node* a = n.src[0];
    return a->lay.type == type_id::f32 ? std::string() : "argmax on " + tn(a->lay.type);
}
inline std::string plain_dst(const node& n) {  // repeat, concat
    return detail::is_plain(n.lay.type) ? std::string() : std::string(op_name(n.op)) + " of block type " + tn(n.lay.type);
}
inline std::string get_rows(const node& n) {
    const node* a = n.src[0];
    if (is_float(a->lay.type) || a->lay.type == type_id::i32 || quant::can_dequantize(a->lay.type)) return {};
    return "get_rows from " + tn(a->lay.type) + " (no dequantize kernel for this type yet)";
}
inline std::string set_rows(const node& n) {
    if (is_float(n.lay.type) || quant::can_quantize(n.lay.type)) return {};
    return "set_rows into " + tn(n.lay.type) + " (no quantize kernel for this type yet)";
}
inline std::string mul_mat(const node& n) {
    const node* a = n.src[0];
    if (is_float(a->lay.type)) return {};
    if (quant::can_dequantize(a->lay.type) && quant::can_quantize(quant::dot_partner_type(a->lay.type))) return {};
    return "mul_mat with " + tn(a->lay.type) + " weights (no vec_dot kernel for this type yet)";
}
inline std::string flash_attn_ext(const node& n) {
    const node* k = n.src[1];
    const node* v = n.src[2];
    const auto readable = [](type_id x) { return is_float(x) || quant::can_dequantize(x); };
    if (readable(k->lay.type) && readable(v->lay.type)) return {};
    return "flash_attn_ext with " + tn(k->lay.type) + " K / " + tn(v->lay.type) + " V (no dequantizer)";
}
}  // namespace support

// ---- scratch planning ------------------------------------------------------------------------

struct scratch_need {
    std::size_t per_thread = 0;  // bytes each thread needs
    std::size_t shared = 0;      // bytes shared by the node's threads
};

inline constexpr std::int64_t mul_mat_chunk = 64;      // weight rows per work item
inline constexpr std::int64_t mul_mat_conv_rows = 16;  // f16/bf16 weight rows converted to f32 at a time (few columns)
inline constexpr std::int64_t impl_fa_q_block = 16;  // (query, head) rows of flash_attn_rows per work item

// Tiled flash attention (impl::flash_attn_tiled): queries of one head in blocks of
// fa_tile_q (a multiple of every arch's GEMM MR and NR), KV rows in blocks of fa_tile_kv;
// from fa_tile_min_q queries on (fewer go row by row).
inline constexpr std::int64_t fa_tile_q = 96, fa_tile_kv = 128, fa_tile_min_q = 8;
// Per-thread scratch of the tiled path, byte offsets (64-byte aligned).
struct fa_tile_scratch {
    std::size_t qpack, vpack, s, mask, ot, tt, stats, kbuf, row, work, total;
};
// Per-thread scratch of the few-query path (impl::flash_attn_rows), byte offsets.
struct fa_rows_scratch {
    std::size_t q, acc, k, v, z, mask, stats, total;
};
inline fa_rows_scratch fa_rows_plan(std::int64_t Dk, std::int64_t Dv) {
    const auto bytes = [](std::size_t floats) { return detail::align_up(floats * 4); };
    const std::size_t dk = detail::align_up(static_cast<std::size_t>(Dk), 16), dv = detail::align_up(static_cast<std::size_t>(Dv), 16);
    constexpr auto rows = static_cast<std::size_t>(impl_fa_q_block), bk = static_cast<std::size_t>(fa_tile_kv);
    fa_rows_scratch t{};
    std::size_t at = 0;
    const auto take = [&](std::size_t n) { const std::size_t o = at; at += n; return o; };
    t.q = take(bytes(rows * dk));     // the rows' queries as f32
    t.acc = take(bytes(rows * dv));   // their output accumulators
    t.k = take(bytes(dk));            // one K row as f32 (when not f32 already)
    t.v = take(bytes(dv));            // one V row
    t.z = take(bytes(rows * bk));     // the rows' scores, then probabilities
    t.mask = take(bytes(rows * bk));  // the mask tile as f32
    t.stats = take(bytes(3 * rows));  // running max, sum, ALiBi slope per row
    t.total = at;
    return t;
}
inline fa_tile_scratch fa_tile_plan(std::int64_t Dk, std::int64_t Dv) {
    const auto bytes = [](std::size_t floats) { return detail::align_up(floats * 4); };
    const auto dk = static_cast<std::size_t>(Dk), dv = static_cast<std::size_t>(Dv);
    constexpr auto bq = static_cast<std::size_t>(fa_tile_q), bk = static_cast<std::size_t>(fa_tile_kv);
    fa_tile_scratch t{};
    std::size_t at = 0;
    const auto take = [&](std::size_t n) { const std::size_t o = at; at += n; return o; };
    t.qpack = take(bytes(kernels::fgemm_packed_b_floats_max(bq, dk)));  // the block's queries as GEMM panels
    t.vpack = take(bytes(kernels::fgemm_packed_b_floats_max(dv, bk)));  // a KV block of V as GEMM panels
    t.s = take(bytes(bq * bk));                                         // scores, then probabilities
    t.mask = take(bytes(bq * bk));                                      // the mask tile as f32
    t.ot = take(bytes(dv * bq));                                        // output accumulator, [Dv][query]
    t.tt = take(bytes(dv * bq));                                        // this block's P V, [Dv][query]
    t.stats = take(bytes(3 * bq));                                      // running max, sum, rescale factor
    t.kbuf = take(bytes(bk * dk));                                      // K rows converted to f32 when needed
    t.row = take(bytes(std::max(dk, dv)));                              // one converted q or V row
    t.work = take(bytes(kernels::fgemm_work_floats));                   // gemm_f32_pb's packing space
    t.total = at;
    return t;
}

inline bool mul_mat_b_direct(const node& b) {
    return b.lay.type == type_id::f32 && b.lay.nb[0] == 4;
}

// Block-type weights against at least qgemm_min_cols columns run the packed GEMM of
// kernels/quant/gemm.hpp (every type with a vec_dot has one): the
// activations packed once, the weights decoded 16 rows at a time into a per-thread panel.
// Weights repacked by CPU_REPACK (q4_0, q8_0, q4_K; iq4_nl on AArch64) always take it.
using kernels::qgemm_min_cols;
inline bool use_qgemm(const node& a, const node& b) {
    return kernels::qgemm_supported(a.lay.type) && (is_repacked(a) || b.lay.ne[1] >= qgemm_min_cols);
}

// Float weights against at least fgemm_min_cols columns run the packed GEMM (kernels/gemm.hpp
// gemm_f32_pb) when a's rows are contiguous; fewer columns, the dot-product tiles (gemm_f32).
inline constexpr std::int64_t fgemm_min_cols = 32;
inline bool use_fgemm(const node& a, const node& b) {
    return is_float(a.lay.type) && a.lay.nb[0] == static_cast<std::size_t>(type_size(a.lay.type)) &&
           b.lay.ne[1] >= fgemm_min_cols;
}

// Scratch by group of ops (the op table names one per op).
namespace scratch {
inline std::size_t floats(std::int64_t n) { return detail::align_up(static_cast<std::size_t>(n) * 4); }
inline std::int64_t row_floats(const node& n) {
    return static_cast<std::int64_t>(detail::align_up(static_cast<std::size_t>(detail::max_ne0(n)), 16));
}
inline scratch_need none(const node&) { return {}; }
// up to 3 rows (a, b, dst) rounded to 16 floats each
inline scratch_need rows(const node& n) { return {floats(4 * row_floats(n)), 0}; }
// a and d rows, cos, sin, angle coefficients
inline scratch_need rope(const node& n) { return {floats(5 * row_floats(n)), 0}; }
inline scratch_need cross_entropy_loss(const node& n) {
    return {floats(3 * row_floats(n)), detail::align_up(static_cast<std::size_t>(n.src[0]->lay.nrows()) * sizeof(double))};
}
inline scratch_need flash_attn_ext(const node& n) {
    const std::int64_t dk = n.src[0]->lay.ne[0], dv = n.src[2]->lay.ne[0];
    return {n.src[0]->lay.ne[1] < fa_tile_min_q ? fa_rows_plan(dk, dv).total : fa_tile_plan(dk, dv).total, 0};
}
inline scratch_need mul_mat(const node& n) {
    const node& a = *n.src[0];
    const node& b = *n.src[1];
    scratch_need s;
    const std::int64_t K = a.lay.ne[0];
    if (is_quantized(a.lay.type)) {  // b as rows of the partner blocks; one f32 row per thread
        s.shared = detail::align_up(static_cast<std::size_t>(b.lay.nrows()) *
                                    static_cast<std::size_t>(row_size(quant::dot_partner_type(a.lay.type), K)));
        s.per_thread = floats(K + 16);
        if (use_qgemm(a, b)) {  // + the packed activations, and the panel of plain weights decoded per call
            s.shared += detail::align_up(static_cast<std::size_t>(b.lay.nrows()) * kernels::qgemm_act_row_bytes(a.lay.type, K));
            if (!is_repacked(a)) s.per_thread += detail::align_up(kernels::qgemm_work_bytes(a.lay.type, K));
        }
        return s;
    }
    if (use_fgemm(a, b)) {  // b packed into column panels; a packed per thread block
        const auto panels = static_cast<std::int64_t>(
            kernels::fgemm_packed_b_floats_max(static_cast<std::size_t>(b.lay.ne[1]), static_cast<std::size_t>(K)));
        s.shared = floats(panels * b.lay.ne[2] * b.lay.ne[3]);
        s.per_thread = floats(static_cast<std::int64_t>(kernels::fgemm_work_floats)) + floats(K);
        return s;
    }
    if (a.lay.type != type_id::f32 || a.lay.nb[0] != 4) s.per_thread = floats(mul_mat_conv_rows * K);
    if (!mul_mat_b_direct(b)) s.shared = floats(b.lay.nelements());
    return s;
}
// the families' (per thread, shared) pairs
template <std::pair<std::size_t, std::size_t> (*F)(const node&)>
scratch_need pair(const node& n) {
    const auto [per_thread, shared] = F(n);
    return {per_thread, shared};
}
}  // namespace scratch

// ---- implementations -------------------------------------------------------------------------

namespace impl {

template <class B>
constexpr bool block_traits_supported() {
    return quant::block_traits<B>::supported;
}

inline void copy(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const layout& la = a.lay;
    const layout& ld = d.lay;
    const auto& k = *p.k;
    // same type, both packed: one memcpy split across threads
    if (la.type == ld.type && la.is_contiguous() && ld.is_contiguous()) {
        const auto total = static_cast<std::int64_t>(ld.nbytes());
        const auto [b, e] = p.split(total);
        if (e > b) std::memmove(d.bytes() + b, a.bytes() + b, static_cast<std::size_t>(e - b));
        return;
    }
    if (la.ne == ld.ne) {  // row by row
        const auto [r0, r1] = p.split(ld.nrows());
        float* buf = reinterpret_cast<float*>(p.scratch);
        const std::size_t es = static_cast<std::size_t>(type_size(ld.type));
        for (std::int64_t r = r0; r < r1; ++r) {
            const auto [i1, i2, i3] = unravel_row(ld, r);
            const std::byte* src = row_ptr(a, i1, i2, i3);
            std::byte* dst = row_ptr(d, i1, i2, i3);
            if (la.type == ld.type) {
                if (la.nb[0] == es && ld.nb[0] == es) {
                    std::memmove(dst, src, static_cast<std::size_t>(ld.row_bytes()));
                } else {
                    for (std::int64_t i = 0; i < ld.ne[0]; ++i)
                        std::memcpy(dst + static_cast<std::size_t>(i) * ld.nb[0], src + static_cast<std::size_t>(i) * la.nb[0], es);
                }
            } else if (la.type == type_id::i32 || ld.type == type_id::i32) {
                for (std::int64_t i = 0; i < ld.ne[0]; ++i) {
                    const std::byte* s = src + static_cast<std::size_t>(i) * la.nb[0];
                    std::byte* o = dst + static_cast<std::size_t>(i) * ld.nb[0];
                    if (la.type == type_id::i32) {
                        std::int32_t v;
                        std::memcpy(&v, s, 4);
                        write_scalar(ld.type, o, static_cast<float>(v));
                    } else {
                        const auto v = static_cast<std::int32_t>(read_scalar(la.type, s));
                        std::memcpy(o, &v, 4);
                    }
                }
            } else if (is_quantized(la.type) || is_quantized(ld.type)) {
                const float* x = buf;
                if (is_quantized(la.type)) quant::dequantize_row(la.type, src, buf, la.ne[0]);
                else x = load_f32(k, la.type, src, la.nb[0], la.ne[0], buf);
                if (is_quantized(ld.type)) quant::quantize(ld.type, x, dst, 1, ld.ne[0]);
                else store_f32(k, ld.type, dst, ld.nb[0], ld.ne[0], x);
            } else {
                const float* x = load_f32(k, la.type, src, la.nb[0], la.ne[0], buf);
                store_f32(k, ld.type, dst, ld.nb[0], ld.ne[0], x);
            }
        }
        return;
    }
    // different shapes, same element count: walk both in logical order (plain types)
    const auto total = ld.nelements();
    const auto [b, e] = p.split(total);
    auto addr = [](const layout& l, std::byte* base, std::int64_t i) {
        const std::int64_t i0 = i % l.ne[0];
        i /= l.ne[0];
        const std::int64_t i1 = i % l.ne[1];
        i /= l.ne[1];
        const std::int64_t i2 = i % l.ne[2];
        const std::int64_t i3 = i / l.ne[2];
        return base + l.offset_of(i0, i1, i2, i3);
    };
    const std::size_t es = static_cast<std::size_t>(type_size(ld.type));
    if (!detail::is_plain(ld.type)) {  // blocks between packed tensors of different shapes
        return;  // handled by the packed memcpy above (support check guarantees it)
    }
    for (std::int64_t i = b; i < e; ++i) {
        std::byte* s = addr(la, a.bytes(), i);
        std::byte* o = addr(ld, d.bytes(), i);
        if (la.type == ld.type) {
            std::memcpy(o, s, es);
        } else if (la.type == type_id::i32) {
            std::int32_t v;
            std::memcpy(&v, s, 4);
            write_scalar(ld.type, o, static_cast<float>(v));
        } else if (ld.type == type_id::i32) {
            const auto v = static_cast<std::int32_t>(read_scalar(la.type, s));
            std::memcpy(o, &v, 4);
        } else {
            write_scalar(ld.type, o, read_scalar(la.type, s));
        }
    }
}

inline void binary(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& k = *p.k;
    const kernels::binary_kind kind = d.op == op_kind::add   ? kernels::binary_kind::add
                                      : d.op == op_kind::sub ? kernels::binary_kind::sub
                                      : d.op == op_kind::mul ? kernels::binary_kind::mul
                                                             : kernels::binary_kind::div;
    const std::int64_t ne0 = d.lay.ne[0], ne10 = b.lay.ne[0];
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufb = bufa + detail::align_up(static_cast<std::size_t>(detail::max_ne0(d)), 16);
    float* bufd = bufb + detail::align_up(static_cast<std::size_t>(detail::max_ne0(d)), 16);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, bufa);
        const float* y = load_row(k, b, i1 % b.lay.ne[1], i2 % b.lay.ne[2], i3 % b.lay.ne[3], bufb);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        if (ne10 == ne0 || ne10 == 1) {  // a whole row, or one value of b for the whole row
            k.binary(kind, x, y, z, static_cast<std::size_t>(ne0), ne10 == 1 && ne0 != 1);
        } else {
            for (std::int64_t i = 0; i < ne0; i += ne10)
                k.binary(kind, x + i, y, z + i, static_cast<std::size_t>(ne10), ne10 == 1);
        }
        store_f32(k, d.lay.type, drow, d.lay.nb[0], ne0, z);
    }
}

inline void unary(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    float p0, p1;
    const auto kind = detail::unary_kind_of(d, p0, p1);
    const auto n = static_cast<std::size_t>(d.lay.ne[0]);
    map_rows(d, a, p, [&](const float* x, float* z, std::int64_t, std::int64_t, std::int64_t) {
        if (d.op == op_kind::scale) {
            const auto& sp = d.param<scale_params>();
            k.scale(x, z, n, sp.s, sp.b);
        } else {
            k.unary(kind, x, z, n, p0, p1);
        }
    });
}

inline void glu(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node* b = d.src[1];
    const auto& k = *p.k;
    const auto& gp = d.param<glu_params>();
    const std::int64_t n = d.lay.ne[0];
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufb = bufa + detail::align_up(static_cast<std::size_t>(a.lay.ne[0]), 16);
    float* bufd = bufb + detail::align_up(static_cast<std::size_t>(a.lay.ne[0]), 16);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const float* x;
        const float* g;
        if (b) {
            x = load_row(k, a, i1, i2, i3, bufa);
            g = load_row(k, *b, i1, i2, i3, bufb);
        } else {
            const float* row = load_row(k, a, i1, i2, i3, bufa);
            x = gp.swapped ? row + n : row;
            g = gp.swapped ? row : row + n;
        }
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        k.glu(static_cast<kernels::glu_kind>(static_cast<int>(gp.op)), x, g, z, static_cast<std::size_t>(n), gp.alpha, gp.limit);
        store_f32(k, d.lay.type, drow, d.lay.nb[0], n, z);
    }
}

inline void norm(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    const float eps = d.param<norm_params>().eps;
    const std::int64_t ne0 = d.lay.ne[0];
    const auto n = static_cast<std::size_t>(ne0);
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufd = bufa + detail::align_up(n, 16);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, bufa);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        if (d.op == op_kind::rms_norm) {
            const double ms = k.sumsq(x, n) / static_cast<double>(ne0);
            k.scale(x, z, n, static_cast<float>(1.0 / std::sqrt(ms + static_cast<double>(eps))), 0.f);
        } else if (d.op == op_kind::l2_norm) {
            const double nrm = std::sqrt(k.sumsq(x, n));
            k.scale(x, z, n, static_cast<float>(1.0 / std::max(nrm, static_cast<double>(eps))), 0.f);
        } else {
            const double mean = k.sum(x, n) / static_cast<double>(ne0);
            k.scale(x, z, n, 1.f, static_cast<float>(-mean));
            const double var = k.sumsq(z, n) / static_cast<double>(ne0);
            k.scale(z, z, n, static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps))), 0.f);
        }
        store_f32(k, d.lay.type, drow, d.lay.nb[0], ne0, z);
    }
}

inline void reduce(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    float* buf = reinterpret_cast<float*>(p.scratch);
    const auto n = static_cast<std::size_t>(a.lay.ne[0]);
    if (d.op == op_kind::sum) {
        if (p.ith != 0) return;
        double s = 0;
        for (std::int64_t r = 0; r < a.lay.nrows(); ++r) {
            const auto [i1, i2, i3] = unravel_row(a.lay, r);
            s += k.sum(load_row(k, a, i1, i2, i3, buf), n);
        }
        write_scalar(d.lay.type, d.bytes(), static_cast<float>(s));
        return;
    }
    const auto [r0, r1] = p.split(a.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(a.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, buf);
        std::byte* o = row_ptr(d, i1, i2, i3);
        if (d.op == op_kind::argmax) {
            const auto v = static_cast<std::int32_t>(k.argmax(x, n));
            std::memcpy(d.bytes() + static_cast<std::size_t>(i1) * 4, &v, 4);
        } else {
            double s = k.sum(x, n);
            if (d.op == op_kind::mean) s /= static_cast<double>(a.lay.ne[0]);
            write_scalar(d.lay.type, o, static_cast<float>(s));
        }
    }
}

// Each thread computes its rows' losses into the shared scratch; thread 0 adds them in
// row order, so the result does not depend on the thread count.
inline void cross_entropy_loss(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& k = *p.k;
    const auto n = static_cast<std::size_t>(a.lay.ne[0]);
    const std::size_t row = detail::align_up(n, 16);
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufb = bufa + row;
    float* e = bufb + row;
    auto* loss = reinterpret_cast<double*>(p.shared);
    const std::int64_t rows = a.lay.nrows();
    const auto [r0, r1] = p.split(rows);
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(a.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, bufa);
        const float* y = load_row(k, b, i1, i2, i3, bufb);
        const float mx = k.max(x, n);
        const double lse = static_cast<double>(mx) + std::log(k.softmax_exp(x, e, n, mx));
        double s = 0;
        for (std::size_t i = 0; i < n; ++i)  // a zero label adds nothing, even where the logit is -inf
            if (y[i] != 0.f) s += static_cast<double>(y[i]) * (static_cast<double>(x[i]) - lse);
        loss[r] = -s;
    }
    p.barrier();
    if (p.ith != 0) return;
    double total = 0;
    for (std::int64_t r = 0; r < rows; ++r) total += loss[r];
    write_scalar(type_id::f32, d.bytes(), static_cast<float>(total / static_cast<double>(rows)));
}

inline void count_equal(const node& d, const exec_params& p) {
    if (p.ith != 0) return;
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    std::int64_t c = 0;
    for (std::int64_t r = 0; r < a.lay.nrows(); ++r) {
        const auto [i1, i2, i3] = unravel_row(a.lay, r);
        const std::byte* x = row_ptr(a, i1, i2, i3);
        const std::byte* y = row_ptr(b, i1, i2, i3);
        for (std::int64_t i = 0; i < a.lay.ne[0]; ++i) {
            std::int32_t u, v;
            std::memcpy(&u, x + static_cast<std::size_t>(i) * a.lay.nb[0], 4);
            std::memcpy(&v, y + static_cast<std::size_t>(i) * b.lay.nb[0], 4);
            c += u == v;
        }
    }
    std::memcpy(d.bytes(), &c, 8);
}

inline void repeat(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const std::size_t es = static_cast<std::size_t>(type_size(d.lay.type));
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const std::byte* s = row_ptr(a, i1 % a.lay.ne[1], i2 % a.lay.ne[2], i3 % a.lay.ne[3]);
        std::byte* o = row_ptr(d, i1, i2, i3);
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i)
            std::memcpy(o + static_cast<std::size_t>(i) * d.lay.nb[0], s + static_cast<std::size_t>(i % a.lay.ne[0]) * a.lay.nb[0], es);
    }
}

inline void concat(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const int dim = d.param<concat_params>().dim;
    const std::size_t es = static_cast<std::size_t>(type_size(d.lay.type));
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        std::array<std::int64_t, 4> idx{0, i1, i2, i3};
        std::byte* o = row_ptr(d, i1, i2, i3);
        for (std::int64_t i0 = 0; i0 < d.lay.ne[0]; ++i0) {
            idx[0] = i0;
            const auto da = static_cast<std::size_t>(dim);
            const bool from_a = idx[da] < a.lay.ne[da];
            const node& s = from_a ? a : b;
            auto j = idx;
            if (!from_a) j[da] -= a.lay.ne[da];
            std::memcpy(o + static_cast<std::size_t>(i0) * d.lay.nb[0], s.bytes() + s.lay.offset_of(j[0], j[1], j[2], j[3]), es);
        }
    }
}

inline void get_rows(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& ix = *d.src[1];
    const auto& k = *p.k;
    float* buf = reinterpret_cast<float*>(p.scratch);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i, i10, i11] = unravel_row(d.lay, r);  // dst row (i, i10, i11)
        std::int32_t row;
        std::memcpy(&row, ix.bytes() + static_cast<std::size_t>(i) * ix.lay.nb[0] + static_cast<std::size_t>(i10) * ix.lay.nb[1] +
                              static_cast<std::size_t>(i11) * ix.lay.nb[2], 4);
        std::byte* o = row_ptr(d, i, i10, i11);
        if (row < 0 || row >= a.lay.ne[1]) {  // out of range: zeros rather than a wild read
            std::memset(o, 0, static_cast<std::size_t>(d.lay.row_bytes()));
            continue;
        }
        const std::byte* s = row_ptr(a, row, i10, i11);
        if (a.lay.type == type_id::i32) {
            for (std::int64_t j = 0; j < d.lay.ne[0]; ++j)
                std::memcpy(o + static_cast<std::size_t>(j) * 4, s + static_cast<std::size_t>(j) * a.lay.nb[0], 4);
        } else if (is_quantized(a.lay.type)) {
            quant::dequantize_row(a.lay.type, s, reinterpret_cast<float*>(o), a.lay.ne[0]);
        } else {
            const float* x = load_f32(k, a.lay.type, s, a.lay.nb[0], a.lay.ne[0], buf);
            store_f32(k, type_id::f32, o, 4, d.lay.ne[0], x);
        }
    }
}

inline void set_rows(const node& d, const exec_params& p) {
    const node& b = *d.src[0];
    const node& ix = *d.src[1];
    const auto& k = *p.k;
    float* buf = reinterpret_cast<float*>(p.scratch);
    const auto [r0, r1] = p.split(b.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i, i2, i3] = unravel_row(b.lay, r);
        const std::byte* ip = ix.bytes() + static_cast<std::size_t>(i) * ix.lay.nb[0] +
                              static_cast<std::size_t>(i2 % ix.lay.ne[1]) * ix.lay.nb[1] +
                              static_cast<std::size_t>(i3 % ix.lay.ne[2]) * ix.lay.nb[2];
        std::int64_t row;
        if (ix.lay.type == type_id::i64) {
            std::memcpy(&row, ip, 8);
        } else {
            std::int32_t v;
            std::memcpy(&v, ip, 4);
            row = v;
        }
        if (row < 0 || row >= d.lay.ne[1]) continue;  // ignored, never written out of bounds
        const float* x = load_row(k, b, i, i2, i3, buf);
        if (is_quantized(d.lay.type)) quant::quantize(d.lay.type, x, row_ptr(d, row, i2, i3), 1, d.lay.ne[0]);
        else store_f32(k, d.lay.type, row_ptr(d, row, i2, i3), d.lay.nb[0], d.lay.ne[0], x);
    }
}

inline void diag_mask(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    const int n_past = d.param<diag_mask_params>().n_past;
    const float v = d.op == op_kind::diag_mask_inf ? -std::numeric_limits<float>::infinity() : 0.f;
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufd = bufa + detail::align_up(static_cast<std::size_t>(d.lay.ne[0]), 16);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, bufa);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        for (std::int64_t i = 0; i < d.lay.ne[0]; ++i) z[i] = i > n_past + i1 ? v : x[i];
        store_f32(k, d.lay.type, drow, d.lay.nb[0], d.lay.ne[0], z);
    }
}

inline void soft_max(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node* mask = d.src[1];
    const node* sinks = d.src[2];
    const auto& k = *p.k;
    const auto& sp = d.param<soft_max_params>();
    const std::int64_t ne0 = d.lay.ne[0];
    const auto n = static_cast<std::size_t>(ne0);
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufm = bufa + detail::align_up(n, 16);
    float* bufd = bufm + detail::align_up(n, 16);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, bufa);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        const float* m = mask ? load_row(k, *mask, i1, i2 % mask->lay.ne[2], i3 % mask->lay.ne[3], bufm) : nullptr;
        float mx = k.scale_add(x, sp.scale, m, detail::alibi_slope(sp.max_bias, i2, d.lay.ne[2]), z, n);
        float sink = 0.f;
        if (sinks) {
            sink = read_scalar(type_id::f32, sinks->bytes() + static_cast<std::size_t>(i2) * sinks->lay.nb[0]);
            mx = std::max(mx, sink);
        }
        double sum = 0;
        if (mx == -std::numeric_limits<float>::infinity()) {  // a fully masked row: zeros, as ggml gives
            std::fill(z, z + ne0, 0.f);
        } else {
            sum = k.softmax_exp(z, z, n, mx);
            if (sinks) sum += std::exp(static_cast<double>(sink - mx));
            k.scale(z, z, n, static_cast<float>(1.0 / sum), 0.f);
        }
        store_f32(k, d.lay.type, drow, d.lay.nb[0], ne0, z);
    }
}

// The position stream (0 t, 1 h, 2 w, 3 e) pair i of a multi-mode rope uses, and the
// pair index its angle is computed from (vision restarts it at each section).
inline std::pair<int, std::int64_t> rope_stream(const rope_params& rp, std::int64_t i) {
    const auto& s = rp.sections;
    const std::int64_t total = s[0] + s[1] + s[2] + s[3];
    const std::int64_t sec = i % total;
    if (rp.mode == rope_mode_imrope) {
        if (sec % 3 == 1 && sec < 3 * s[1]) return {1, i};
        if (sec % 3 == 2 && sec < 3 * s[2]) return {2, i};
        if (sec % 3 == 0 && sec < 3 * s[0]) return {0, i};
        return {3, i};
    }
    const std::int64_t b1 = s[0], b2 = b1 + s[1], b3 = b2 + s[2];
    const int st = sec < b1 ? 0 : sec < b2 ? 1 : sec < b3 ? 2 : 3;
    if (rp.mode != rope_mode_vision) return {st, i};
    const std::int64_t start[4] = {0, b1, b2, b3};  // the angle restarts where the section starts
    return {st, sec - start[st]};
}

// rope and rope_back (forward = false: the same angles, sin negated: the inverse rotation).
inline void rope(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& pos = *d.src[1];
    const node* ff = d.src[2];
    const auto& k = *p.k;
    const auto& rp = d.param<rope_params>();
    const float sin_sign = d.op == op_kind::rope_back ? -1.f : 1.f;
    const std::int64_t ne0 = d.lay.ne[0], ne2 = d.lay.ne[2];
    const bool multi = (rp.mode & rope_mode_mrope) != 0, vision = rp.mode == rope_mode_vision;
    const std::int64_t pairs = vision ? rp.n_dims : rp.n_dims / 2;
    const std::int64_t rot = vision ? ne0 : rp.n_dims;  // elements the rotation covers
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufd = bufa + detail::align_up(static_cast<std::size_t>(ne0), 16);
    // cos and sin tables: per pair (neox-ordered modes) or per element (normal mode)
    const bool neox = rp.mode != rope_mode_normal;
    const std::int64_t tab = neox ? pairs : 2 * pairs;
    float* cs = bufd + detail::align_up(static_cast<std::size_t>(ne0), 16);
    float* sn = cs + tab;
    // YaRN correction dims
    float corr0 = 0.f, corr1 = 0.f;
    {
        const auto corr = [&](float beta) {
            return static_cast<float>(rp.n_dims) * std::log(static_cast<float>(rp.n_ctx_orig) / (beta * 2.f * 3.14159265358979323846f)) /
                   (2.f * std::log(rp.freq_base));
        };
        corr0 = std::max(0.f, std::floor(corr(rp.beta_fast)));
        corr1 = std::min(static_cast<float>(rp.n_dims - 1), std::ceil(corr(rp.beta_slow)));
    }
    const auto position = [&](std::int64_t j) {
        std::int32_t v;
        std::memcpy(&v, pos.bytes() + static_cast<std::size_t>(j) * pos.lay.nb[0], 4);
        return static_cast<float>(v);
    };
    // Per pair, once: theta = position * coef[i], with coef = base^(-2i/n_dims) / freq_factor
    // times YaRN's blend of the interpolated (freq_scale) and extrapolated angle, whose
    // weight (ramp * ext_factor) depends on the pair only; then per position one sincos.
    float* coef = sn + tab;
    for (std::int64_t i = 0; i < pairs; ++i) {
        const std::int64_t ia = multi ? rope_stream(rp, i).second : i;
        float f = std::pow(rp.freq_base, -2.f * static_cast<float>(ia) / static_cast<float>(rp.n_dims));
        if (ff) f /= read_scalar(type_id::f32, ff->bytes() + static_cast<std::size_t>(i) * ff->lay.nb[0]);
        float mix = 0.f;
        if (rp.ext_factor != 0.f) {
            const float y = (static_cast<float>(i) - corr0) / std::max(0.001f, corr1 - corr0);
            mix = (1.f - std::min(1.f, std::max(0.f, y))) * rp.ext_factor;
        }
        coef[i] = f * (rp.freq_scale * (1.f - mix) + mix);
    }
    const float mscale = rp.attn_factor * (rp.ext_factor != 0.f ? 1.f + 0.1f * std::log(1.f / rp.freq_scale) : 1.f);
    std::int64_t cached = -1;
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        if (i2 != cached) {
            float fpos[4] = {position(i2), 0.f, 0.f, 0.f};
            if (multi)
                for (int st = 1; st < 4; ++st) fpos[st] = position(i2 + st * ne2);
            for (std::int64_t i = 0; i < pairs; ++i) {
                const float theta = fpos[multi ? rope_stream(rp, i).first : 0] * coef[i];
                const float c = std::cos(theta) * mscale, s = std::sin(theta) * mscale * sin_sign;
                if (neox) {
                    cs[i] = c;
                    sn[i] = s;
                } else {  // per element (kernels/softmax.hpp rope_f32)
                    cs[2 * i] = cs[2 * i + 1] = c;
                    sn[2 * i] = -s;
                    sn[2 * i + 1] = s;
                }
            }
            cached = i2;
        }
        const float* x = load_row(k, a, i1, i2, i3, bufa);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        k.rope(x, z, cs, sn, static_cast<std::size_t>(rot), neox);
        for (std::int64_t i = rot; i < ne0; ++i) z[i] = x[i];
        store_f32(k, d.lay.type, drow, d.lay.nb[0], ne0, z);
    }
}

// Block-type weights, as ggml does it: each row of b is quantized once to the weights'
// dot partner (q8_0, q8_1, q8_K), then out[m, n] = vec_dot(row m of a, row n of b).
// Types with kernels in kernels/quant (tessera/kernels/quant/table.hpp) run the SIMD
// quantizer and gemv of the executor's arch; the others run the scalar reference.
static_assert(kernels::has_gemv<quant::block_q4_0> && kernels::has_gemv<quant::block_q6_K> && !kernels::has_gemv<quant::block_q8_K>,
              "the SIMD path of mul_mat must see the kernels of kernels/quant/table.hpp");

template <class B>
void mul_mat_quant_typed(const node& d, const exec_params& p) {
    using P = typename quant::block_traits<B>::dot_partner;
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& k = *p.k;
    const std::int64_t K = a.lay.ne[0], M = a.lay.ne[1];
    const std::int64_t N = b.lay.ne[1], B2 = b.lay.ne[2], B3 = b.lay.ne[3];
    const auto qrow = static_cast<std::size_t>(row_size(quant::block_traits<P>::id, K));
    std::byte* bq = p.shared;
    float* buf = reinterpret_cast<float*>(p.scratch);
    constexpr bool gemm_type = kernels::has_qgemm<B>;
    static_assert(gemm_type == kernels::qgemm_supported(quant::block_traits<B>::id), "use_qgemm and the GEMM kernels agree");
    const bool repacked = is_repacked(a);
    const bool packed = gemm_type && use_qgemm(a, b);
    const std::size_t prow = kernels::qgemm_act_row_bytes(a.lay.type, K);
    std::byte* bp = bq + detail::align_up(static_cast<std::size_t>(b.lay.nrows()) * qrow);
    {
        const auto [r0, r1] = p.split(b.lay.nrows());
        const auto quantize = simd::kernel_for<kernels::quant_kernels<P>::template quantize>(k.arch);
        for (std::int64_t r = r0; r < r1; ++r) {
            const auto [i1, i2, i3] = unravel_row(b.lay, r);
            auto* yq = reinterpret_cast<P*>(bq + static_cast<std::size_t>(r) * qrow);
            quantize(load_row(k, b, i1, i2, i3, buf), yq, K);
            if constexpr (gemm_type)
                if (packed) kernels::qgemm_pack_act<B>(K, yq, bp + static_cast<std::size_t>(r) * prow);
        }
    }
    p.barrier();
    const std::int64_t r2 = B2 / a.lay.ne[2], r3 = B3 / a.lay.ne[3];
    const std::int64_t chunks = (M + mul_mat_chunk - 1) / mul_mat_chunk;
    const auto [c0, c1] = p.split(chunks * B2 * B3);
    if constexpr (gemm_type) {
        if (packed) {  // repacked weights (any layout) are read in place, plain ones decoded per 16-row panel
            const auto gemm = simd::kernel_for<kernels::quant_kernels<B>::template gemm>(k.arch);
            std::byte* work = p.scratch + detail::align_up(static_cast<std::size_t>(K + 16) * 4);
            const std::size_t ldo = d.lay.nb[1] / 4;
            for (std::int64_t c = c0; c < c1; ++c) {
                const std::int64_t ch = c % chunks;
                const std::int64_t i2 = (c / chunks) % B2, i3 = c / chunks / B2;
                const std::int64_t m0 = ch * mul_mat_chunk, ml = std::min(mul_mat_chunk, M - m0);
                const std::byte* y = bp + static_cast<std::size_t>((i3 * B2 + i2) * N) * prow;
                float* o = reinterpret_cast<float*>(row_ptr(d, 0, i2, i3)) + m0;
                if constexpr (kernels::has_qgemm_rows4<B>) {
                    if (repacked) {
                        const kernels::repack_layout lay = repacked_layout(a);
                        const std::size_t slice = kernels::repacked_bytes(a.lay.type, K, M, lay),
                                          group = kernels::repack_quad_bytes(a.lay.type, K, lay);
                        const auto sl = static_cast<std::size_t>((i3 / r3) * a.lay.ne[2] + i2 / r2);
                        simd::kernel_for<kernels::quant_kernels<B>::template gemm_rows4>(k.arch)(
                            K, ml, N, a.bytes() + sl * slice + static_cast<std::size_t>(m0 / kernels::repack_group_rows(lay)) * group,
                            lay, y, prow, o, ldo);
                        continue;
                    }
                }
                gemm(K, ml, N, reinterpret_cast<const B*>(row_ptr(a, m0, i2 / r2, i3 / r3)), a.lay.nb[1], y, prow, o, ldo, work);
            }
            return;
        }
    }
    const auto gemv = simd::kernel_for<kernels::quant_kernels<B>::template gemv>(k.arch);
    for (std::int64_t c = c0; c < c1; ++c) {
        const std::int64_t ch = c % chunks;
        const std::int64_t i2 = (c / chunks) % B2, i3 = c / chunks / B2;
        const std::int64_t m0 = ch * mul_mat_chunk, ml = std::min(mul_mat_chunk, M - m0);
        const auto* x = reinterpret_cast<const B*>(row_ptr(a, m0, i2 / r2, i3 / r3));
        for (std::int64_t n = 0; n < N; ++n) {
            const auto* y = reinterpret_cast<const P*>(bq + static_cast<std::size_t>((i3 * B2 + i2) * N + n) * qrow);
            float* o = reinterpret_cast<float*>(row_ptr(d, n, i2, i3));
            gemv(K, ml, x, a.lay.nb[1], y, o + m0);
        }
    }
}

inline void mul_mat_quant(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const type_id ta = a.lay.type;
    bool done = false;
    quant::visit_block_type(ta, [&]<class B>() {
        if constexpr (kernels::has_gemv<B>) {
            mul_mat_quant_typed<B>(d, p);
            done = true;
        }
    });
    if (done) return;
    // Scalar reference path.
    const node& b = *d.src[1];
    const auto& k = *p.k;
    const type_id tp = quant::dot_partner_type(ta);
    const std::int64_t K = a.lay.ne[0], M = a.lay.ne[1];
    const std::int64_t N = b.lay.ne[1], B2 = b.lay.ne[2], B3 = b.lay.ne[3];
    const auto qrow = static_cast<std::size_t>(row_size(tp, K));
    std::byte* bq = p.shared;
    float* buf = reinterpret_cast<float*>(p.scratch);
    {
        const auto [r0, r1] = p.split(b.lay.nrows());
        for (std::int64_t r = r0; r < r1; ++r) {
            const auto [i1, i2, i3] = unravel_row(b.lay, r);
            quant::quantize(tp, load_row(k, b, i1, i2, i3, buf), bq + static_cast<std::size_t>(r) * qrow, 1, K);
        }
    }
    p.barrier();
    using dot_fn = float (*)(std::int64_t, const void*, const void*);
    dot_fn dot = nullptr;
    quant::visit_block_type(ta, [&]<class B>() {
        if constexpr (block_traits_supported<B>())
            dot = [](std::int64_t n, const void* x, const void* y) {
                return quant::vec_dot_ref(n, static_cast<const B*>(x), static_cast<const typename quant::block_traits<B>::dot_partner*>(y));
            };
    });
    const std::int64_t r2 = B2 / a.lay.ne[2], r3 = B3 / a.lay.ne[3];
    const std::int64_t chunks = (M + mul_mat_chunk - 1) / mul_mat_chunk;
    const auto [c0, c1] = p.split(chunks * B2 * B3);
    for (std::int64_t c = c0; c < c1; ++c) {
        const std::int64_t ch = c % chunks;
        const std::int64_t i2 = (c / chunks) % B2, i3 = c / chunks / B2;
        const std::int64_t m0 = ch * mul_mat_chunk, m1 = std::min(M, m0 + mul_mat_chunk);
        for (std::int64_t n = 0; n < N; ++n) {
            const std::byte* y = bq + static_cast<std::size_t>((i3 * B2 + i2) * N + n) * qrow;
            float* o = reinterpret_cast<float*>(row_ptr(d, n, i2, i3));
            for (std::int64_t m = m0; m < m1; ++m) o[m] = dot(K, row_ptr(a, m, i2 / r2, i3 / r3), y);
        }
    }
}

// Float weights, many columns: phase 1 packs b into column panels (kernels/gemm.hpp), shared by
// the threads; phase 2 gives each thread blocks of up to fgemm_mc weight rows of one batch
// matrix, which gemm_f32_pb packs KC columns at a time (converting f16/bf16) and multiplies.
inline void mul_mat_packed(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& k = *p.k;
    const auto K = static_cast<std::size_t>(a.lay.ne[0]);
    const std::int64_t M = a.lay.ne[1], N = b.lay.ne[1], B2 = b.lay.ne[2], B3 = b.lay.ne[3];
    const std::size_t nr = kernels::fgemm_nr(k.arch);
    const auto panels = static_cast<std::int64_t>((static_cast<std::size_t>(N) + nr - 1) / nr);
    const std::size_t panel_floats = nr * K, mat_floats = static_cast<std::size_t>(panels) * panel_floats;
    float* packed = reinterpret_cast<float*>(p.shared);
    float* work = reinterpret_cast<float*>(p.scratch);
    float* rowbuf = work + detail::align_up(kernels::fgemm_work_floats * 4) / 4;
    {
        const auto [w0, w1] = p.split(panels * B2 * B3);
        for (std::int64_t w = w0; w < w1; ++w) {
            const std::int64_t pn = w % panels, i2 = (w / panels) % B2, i3 = w / panels / B2;
            const std::int64_t n0 = pn * static_cast<std::int64_t>(nr);
            kernels::gemm_f32_pack_b_panel(nr, static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(nr), N - n0)),
                                           K, [&](std::size_t j) { return load_row(k, b, n0 + static_cast<std::int64_t>(j), i2, i3, rowbuf); },
                                           packed + static_cast<std::size_t>(i3 * B2 + i2) * mat_floats + static_cast<std::size_t>(pn) * panel_floats);
        }
    }
    p.barrier();
    // Row blocks: as large as the kernel's block (fewer passes over packed b), small enough
    // that every thread gets about two.
    const auto per = static_cast<std::size_t>((M + 2 * p.nth - 1) / (2 * p.nth));
    const auto rows = static_cast<std::int64_t>(std::clamp<std::size_t>((per + 31) / 32 * 32, 32, kernels::fgemm_mc));
    const std::int64_t blocks = (M + rows - 1) / rows;
    const std::int64_t r2 = B2 / a.lay.ne[2], r3 = B3 / a.lay.ne[3];
    const auto at = a.lay.type == type_id::f16    ? kernels::detail::gemm_a_type::f16
                    : a.lay.type == type_id::bf16 ? kernels::detail::gemm_a_type::bf16
                                                  : kernels::detail::gemm_a_type::f32;
    const std::size_t ldc = d.lay.nb[1] / 4;
    const auto [c0, c1] = p.split(blocks * B2 * B3);
    for (std::int64_t c = c0; c < c1; ++c) {
        const std::int64_t blk = c % blocks, i2 = (c / blocks) % B2, i3 = c / blocks / B2;
        const std::int64_t m0 = blk * rows, ml = std::min(rows, M - m0);
        float* cp = reinterpret_cast<float*>(row_ptr(d, 0, i2, i3)) + m0;
        k.gemm_pb(at, row_ptr(a, m0, i2 / r2, i3 / r3), a.lay.nb[1], packed + static_cast<std::size_t>(i3 * B2 + i2) * mat_floats,
                  cp, ldc, static_cast<std::size_t>(ml), static_cast<std::size_t>(N), K, work);
    }
}

inline void mul_mat(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& k = *p.k;
    if (is_quantized(a.lay.type)) return mul_mat_quant(d, p);
    if (use_fgemm(a, b)) return mul_mat_packed(d, p);
    const std::int64_t K = a.lay.ne[0], M = a.lay.ne[1];
    const std::int64_t N = b.lay.ne[1], B2 = b.lay.ne[2], B3 = b.lay.ne[3];
    // phase 1: b as packed f32 rows
    const float* bf = nullptr;
    std::size_t b_row = 0, b_mat = 0, b_batch = 0;  // strides in floats
    if (mul_mat_b_direct(b)) {
        bf = reinterpret_cast<const float*>(b.bytes());
        b_row = b.lay.nb[1] / 4, b_mat = b.lay.nb[2] / 4, b_batch = b.lay.nb[3] / 4;
    } else {
        float* out = reinterpret_cast<float*>(p.shared);
        const auto [r0, r1] = p.split(b.lay.nrows());
        for (std::int64_t r = r0; r < r1; ++r) {
            const auto [i1, i2, i3] = unravel_row(b.lay, r);
            float* dst = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(K);
            const float* x = load_row(k, b, i1, i2, i3, dst);
            if (x != dst) std::memcpy(dst, x, static_cast<std::size_t>(K) * 4);
        }
        p.barrier();
        bf = out;
        b_row = static_cast<std::size_t>(K), b_mat = b_row * static_cast<std::size_t>(N), b_batch = b_mat * static_cast<std::size_t>(B2);
    }
    // phase 2: chunks of weight rows x all of b
    const std::int64_t chunks = (M + mul_mat_chunk - 1) / mul_mat_chunk;
    const std::int64_t r2 = B2 / a.lay.ne[2], r3 = B3 / a.lay.ne[3];
    const auto [c0, c1] = p.split(chunks * B2 * B3);
    float* abuf = reinterpret_cast<float*>(p.scratch);
    const std::size_t ldc = d.lay.nb[1] / 4;
    for (std::int64_t c = c0; c < c1; ++c) {
        const std::int64_t ch = c % chunks;
        const std::int64_t i2 = (c / chunks) % B2, i3 = c / chunks / B2;
        const std::int64_t m0 = ch * mul_mat_chunk, ml = std::min(mul_mat_chunk, M - m0);
        const std::byte* arow = row_ptr(a, m0, i2 / r2, i3 / r3);
        const float* bp = bf + static_cast<std::size_t>(i2) * b_mat + static_cast<std::size_t>(i3) * b_batch;
        float* cp = reinterpret_cast<float*>(row_ptr(d, 0, i2, i3)) + m0;
        if (a.lay.type == type_id::f32 && a.lay.nb[0] == 4) {
            k.gemm(reinterpret_cast<const float*>(arow), a.lay.nb[1] / 4, bp, b_row, cp, ldc, static_cast<std::size_t>(ml),
                   static_cast<std::size_t>(N), static_cast<std::size_t>(K));
            continue;
        }
        if ((a.lay.type == type_id::f16 || a.lay.type == type_id::bf16) && a.lay.nb[0] == 2 && a.lay.nb[1] % 2 == 0 &&
            N < qgemm_min_cols) {  // few columns: f16/bf16 rows read in place, several at once
            k.gemm_h16(a.lay.type == type_id::f16 ? kernels::detail::gemm_a_type::f16 : kernels::detail::gemm_a_type::bf16, arow,
                       a.lay.nb[1] / 2, bp, b_row, cp, ldc, static_cast<std::size_t>(ml), static_cast<std::size_t>(N),
                       static_cast<std::size_t>(K));
            continue;
        }
        // f16 / bf16 / strided rows: converted mul_mat_conv_rows at a time, so the f32 copy
        // stays in L2 (64 rows of K = 4096 would be 1 MiB, written and read back from L3)
        for (std::int64_t s0 = 0; s0 < ml; s0 += mul_mat_conv_rows) {
            const std::int64_t sl = std::min(mul_mat_conv_rows, ml - s0);
            for (std::int64_t m = 0; m < sl; ++m) {
                float* dst = abuf + static_cast<std::size_t>(m * K);
                const float* x = load_f32(k, a.lay.type, arow + static_cast<std::size_t>(s0 + m) * a.lay.nb[1], a.lay.nb[0], K, dst);
                if (x != dst) std::memcpy(dst, x, static_cast<std::size_t>(K) * 4);
            }
            k.gemm(abuf, static_cast<std::size_t>(K), bp, b_row, cp + s0, ldc, static_cast<std::size_t>(sl), static_cast<std::size_t>(N),
                   static_cast<std::size_t>(K));
        }
    }
}

inline constexpr std::int64_t fa_q_block = impl_fa_q_block;  // rows that share one conversion of each K/V block

// f32 rows [r0, r0 + n) of a K or V node (row r at (r, i2, i3)) for kernels that need
// them: float rows are converted (or gathered), block rows dequantized.
inline const float* fa_row(const kernel_set& k, const node& t, std::int64_t r, std::int64_t i2, std::int64_t i3, float* buf) {
    if (is_float(t.lay.type)) return load_row(k, t, r, i2, i3, buf);
    quant::dequantize_row(t.lay.type, row_ptr(t, r, i2, i3), buf, t.lay.ne[0]);
    return buf;
}

// Flash attention for many queries, in the shape of two GEMMs per tile. For a block of up
// to fa_tile_q queries of one head and each block of up to fa_tile_kv KV rows:
//   S = K_blk Q^T             gemm_f32_pb: K rows packed by the kernel (f16/bf16 converted),
//                             Q packed once per query block into column panels
//   per query row: logits = scale*S (or softcap*tanh(scale*S/softcap)) + slope*mask, the
//                  running max and sum of the online softmax, P = exp(logits - max)
//   O^T = O^T * rescale + (P V_blk)^T     gemm_f32_pb with V's rows as the column panels
//                                         ([kv][dv] is already the panel order)
// KV blocks where the mask is -inf for every query of the block are skipped (causal masks).
inline void flash_attn_tiled(const node& d, const exec_params& p) {
    const node& q = *d.src[0];
    const node& kk = *d.src[1];
    const node& v = *d.src[2];
    const node* mask = d.src[3];
    const node* sinks = d.src[4];
    const auto& k = *p.k;
    const auto& fp = d.param<flash_attn_params>();
    const std::int64_t Dk = q.lay.ne[0], Dv = v.lay.ne[0], n_q = q.lay.ne[1], H = q.lay.ne[2], n_kv = kk.lay.ne[1];
    const std::int64_t rk2 = H / kk.lay.ne[2], rk3 = q.lay.ne[3] / kk.lay.ne[3];
    const fa_tile_scratch L = fa_tile_plan(Dk, Dv);
    const auto buf = [&](std::size_t off) { return reinterpret_cast<float*>(p.scratch + off); };
    float *qpack = buf(L.qpack), *vpack = buf(L.vpack), *S = buf(L.s), *Mt = buf(L.mask), *Ot = buf(L.ot), *Tt = buf(L.tt);
    float *rmax = buf(L.stats), *rsum = rmax + fa_tile_q, *rfac = rsum + fa_tile_q, *kbuf = buf(L.kbuf), *row = buf(L.row);
    float* work = buf(L.work);
    const std::size_t nr = kernels::fgemm_nr(k.arch);
    const auto ab = [](type_id t) {
        return t == type_id::f16 ? kernels::detail::gemm_a_type::f16
               : t == type_id::bf16 ? kernels::detail::gemm_a_type::bf16 : kernels::detail::gemm_a_type::f32;
    };
    // K rows go to the kernel as they are when it can read them (contiguous f32/f16/bf16)
    const bool k_direct = is_float(kk.lay.type) && kk.lay.nb[0] == static_cast<std::size_t>(type_size(kk.lay.type));
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    const std::int64_t n_blocks = (n_q + fa_tile_q - 1) / fa_tile_q;
    const auto [w0, w1] = p.split(n_blocks * H * q.lay.ne[3]);
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t blk = w % n_blocks, h = (w / n_blocks) % H, i3 = w / n_blocks / H;
        const std::int64_t q0 = blk * fa_tile_q, nq = std::min(fa_tile_q, n_q - q0);
        const std::int64_t ik2 = h / rk2, ik3 = i3 / rk3;
        const float slope = detail::alibi_slope(fp.max_bias, h, H);
        for (std::size_t pn = 0; pn * nr < static_cast<std::size_t>(nq); ++pn)
            kernels::gemm_f32_pack_b_panel(nr, std::min(nr, static_cast<std::size_t>(nq) - pn * nr), static_cast<std::size_t>(Dk),
                                           [&](std::size_t j) { return load_row(k, q, q0 + static_cast<std::int64_t>(pn * nr + j), h, i3, row); },
                                           qpack + pn * nr * static_cast<std::size_t>(Dk));
        std::fill(Ot, Ot + Dv * fa_tile_q, 0.f);
        std::fill(rmax, rmax + nq, ninf);
        std::fill(rsum, rsum + nq, 0.f);
        for (std::int64_t kv0 = 0; kv0 < n_kv; kv0 += fa_tile_kv) {
            const std::int64_t kl = std::min(fa_tile_kv, n_kv - kv0);
            // the mask tile; a block masked out for every query is skipped
            bool any = !mask;
            if (mask)
                for (std::int64_t b = 0; b < nq; ++b) {
                    const std::byte* mr = row_ptr(*mask, q0 + b, h % mask->lay.ne[2], i3 % mask->lay.ne[3]) +
                                          static_cast<std::size_t>(kv0) * mask->lay.nb[0];
                    float* mt = Mt + b * fa_tile_kv;
                    const float* src = load_f32(k, mask->lay.type, mr, mask->lay.nb[0], kl, mt);
                    if (src != mt) std::copy(src, src + kl, mt);
                    for (std::int64_t j = 0; j < kl && !any; ++j) any = mt[j] != ninf;
                }
            if (!any) continue;
            // S = K_blk Q^T: S[b * fa_tile_kv + j] = k_j . q_b
            const std::byte* kp;
            std::size_t kld;
            auto kt = kernels::detail::gemm_a_type::f32;
            if (k_direct) {
                kp = row_ptr(kk, kv0, ik2, ik3);
                kld = kk.lay.nb[1];
                kt = ab(kk.lay.type);
            } else {
                for (std::int64_t j = 0; j < kl; ++j) {
                    float* dst = kbuf + j * Dk;
                    const float* src = fa_row(k, kk, kv0 + j, ik2, ik3, dst);
                    if (src != dst) std::copy(src, src + Dk, dst);
                }
                kp = reinterpret_cast<const std::byte*>(kbuf);
                kld = static_cast<std::size_t>(Dk) * 4;
            }
            k.gemm_pb(kt, kp, kld, qpack, S, fa_tile_kv, static_cast<std::size_t>(kl), static_cast<std::size_t>(nq),
                      static_cast<std::size_t>(Dk), work);
            // online softmax per query row; P overwrites S
            for (std::int64_t b = 0; b < nq; ++b) {
                float* z = S + b * fa_tile_kv;
                const float* m = mask ? Mt + b * fa_tile_kv : nullptr;
                const auto n = static_cast<std::size_t>(kl);
                float mx;
                if (fp.logit_softcap != 0.f) {
                    k.scale(z, z, n, fp.scale / fp.logit_softcap, 0.f);
                    k.unary(kernels::unary_kind::tanh, z, z, n, 0.f, 0.f);
                    mx = k.scale_add(z, fp.logit_softcap, m, slope, z, n);
                } else {
                    mx = k.scale_add(z, fp.scale, m, slope, z, n);
                }
                const float m_new = std::max(rmax[b], mx);
                if (m_new == ninf) {  // nothing unmasked for this query yet
                    std::fill(z, z + n, 0.f);
                    rfac[b] = 1.f;
                    continue;
                }
                const double sum = k.softmax_exp(z, z, n, m_new);
                rfac[b] = std::exp(rmax[b] - m_new);
                rsum[b] = rsum[b] * rfac[b] + static_cast<float>(sum);
                rmax[b] = m_new;
            }
            // V_blk as column panels: vpack[panel][j][c] = v_j[panel * nr + c]
            const auto dv = static_cast<std::size_t>(Dv);
            for (std::int64_t j = 0; j < kl; ++j) {
                const float* vr = fa_row(k, v, kv0 + j, ik2, ik3, row);
                for (std::size_t pn = 0; pn * nr < dv; ++pn) {
                    float* dst = vpack + (pn * static_cast<std::size_t>(kl) + static_cast<std::size_t>(j)) * nr;
                    const std::size_t c = std::min(nr, dv - pn * nr);
                    std::copy(vr + pn * nr, vr + pn * nr + c, dst);
                    std::fill(dst + c, dst + nr, 0.f);
                }
            }
            // Tt[e * fa_tile_q + b] = sum_j P[b][j] v_j[e]; then O^T = O^T * rescale + Tt
            k.gemm_pb(kernels::detail::gemm_a_type::f32, reinterpret_cast<const std::byte*>(S), fa_tile_kv * 4, vpack, Tt, fa_tile_q,
                      static_cast<std::size_t>(nq), static_cast<std::size_t>(Dv), static_cast<std::size_t>(kl), work);
            for (std::int64_t e = 0; e < Dv; ++e) {
                float* o = Ot + e * fa_tile_q;
                const float* t = Tt + e * fa_tile_q;
                for (std::int64_t b = 0; b < nq; ++b) o[b] = o[b] * rfac[b] + t[b];
            }
        }
        for (std::int64_t b = 0; b < nq; ++b) {
            float sum = rsum[b], f = 1.f;
            if (sinks) {  // one more logit per head, in the max and the sum only
                const float sk = read_scalar(type_id::f32, sinks->bytes() + static_cast<std::size_t>(h) * sinks->lay.nb[0]);
                if (sk > rmax[b]) {
                    f = std::exp(rmax[b] - sk);
                    sum = sum * f + 1.f;
                } else {
                    sum += std::exp(sk - rmax[b]);
                }
            }
            const float inv = sum > 0 ? f / sum : 0.f;
            float* o = reinterpret_cast<float*>(row_ptr(d, h, q0 + b, i3));
            for (std::int64_t e = 0; e < Dv; ++e) o[e] = Ot[e * fa_tile_q + b] * inv;
        }
    }
}

// Flash attention for a few queries (decoding): the rows of one work item are up to
// fa_q_block (query, head) pairs that read the same KV head (GQA heads share it). Per
// block of fa_tile_kv KV rows: the scores come from the few-columns GEMM (gemm_f32 /
// gemm_h16_f32 on the K rows in place, several rows per pass), the online softmax runs on
// the block with the vector kernels, and axpy_rows adds the block's V rows, weighted by
// the probabilities, to each output held in registers. K / V rows of other types are
// converted to f32 once per row (into a buffer that stays in L1) for all the queries.
inline void flash_attn_rows(const node& d, const exec_params& p) {
    const node& q = *d.src[0];
    const node& kk = *d.src[1];
    const node& v = *d.src[2];
    const node* mask = d.src[3];
    const node* sinks = d.src[4];
    const auto& k = *p.k;
    const auto& fp = d.param<flash_attn_params>();
    const std::int64_t Dk = q.lay.ne[0], Dv = v.lay.ne[0], n_q = q.lay.ne[1], H = q.lay.ne[2], n_kv = kk.lay.ne[1];
    const std::int64_t rk2 = H / kk.lay.ne[2], rk3 = q.lay.ne[3] / kk.lay.ne[3];
    const fa_rows_scratch L = fa_rows_plan(Dk, Dv);
    const auto buf = [&](std::size_t off) { return reinterpret_cast<float*>(p.scratch + off); };
    float *qb = buf(L.q), *acc = buf(L.acc), *kb = buf(L.k), *vb = buf(L.v), *z = buf(L.z), *Mt = buf(L.mask);
    float *rmax = buf(L.stats), *rsum = rmax + fa_q_block, *slope = rsum + fa_q_block;
    const auto rdk = static_cast<std::int64_t>(detail::align_up(static_cast<std::size_t>(Dk), 16));
    const auto rdv = static_cast<std::int64_t>(detail::align_up(static_cast<std::size_t>(Dv), 16));
    // rows read in place: f16 / f32 with contiguous elements and whole-element row strides
    const auto in_place = [](const node& t, type_id ty, std::size_t e) {
        return t.lay.type == ty && t.lay.nb[0] == e && t.lay.nb[1] % e == 0;
    };
    const bool k_f16 = in_place(kk, type_id::f16, 2), k_f32 = in_place(kk, type_id::f32, 4);
    const bool v_f16 = in_place(v, type_id::f16, 2), v_f32 = in_place(v, type_id::f32, 4);
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    // items: (chunk of the rk2 * n_q (head, query) rows of one KV head, KV head, i3)
    const std::int64_t per_kv = rk2 * n_q, chunks = (per_kv + fa_q_block - 1) / fa_q_block;
    const auto [w0, w1] = p.split(chunks * kk.lay.ne[2] * q.lay.ne[3]);
    std::int64_t hs[fa_q_block], qs[fa_q_block];
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t ch = w % chunks, ik2 = (w / chunks) % kk.lay.ne[2], i3 = w / chunks / kk.lay.ne[2];
        const std::int64_t r0 = ch * fa_q_block, nb = std::min(fa_q_block, per_kv - r0), ik3 = i3 / rk3;
        for (std::int64_t b = 0; b < nb; ++b) {
            hs[b] = ik2 * rk2 + (r0 + b) / n_q;
            qs[b] = (r0 + b) % n_q;
            float* qr = qb + b * rdk;
            const float* src = load_row(k, q, qs[b], hs[b], i3, qr);
            if (src != qr) std::copy(src, src + Dk, qr);
            std::fill(acc + b * rdv, acc + b * rdv + Dv, 0.f);
            rmax[b] = ninf;
            rsum[b] = 0.f;
            slope[b] = detail::alibi_slope(fp.max_bias, hs[b], H);
        }
        for (std::int64_t kv0 = 0; kv0 < n_kv; kv0 += fa_tile_kv) {
            const std::int64_t kl = std::min(fa_tile_kv, n_kv - kv0);
            const auto n = static_cast<std::size_t>(kl);
            bool any = !mask;
            if (mask)
                for (std::int64_t b = 0; b < nb; ++b) {
                    const std::byte* mr = row_ptr(*mask, qs[b], hs[b] % mask->lay.ne[2], i3 % mask->lay.ne[3]) +
                                          static_cast<std::size_t>(kv0) * mask->lay.nb[0];
                    float* mt = Mt + b * fa_tile_kv;
                    const float* src = load_f32(k, mask->lay.type, mr, mask->lay.nb[0], kl, mt);
                    if (src != mt) std::copy(src, src + kl, mt);
                    for (std::int64_t j = 0; j < kl && !any; ++j) any = mt[j] != ninf;
                }
            if (!any) continue;
            // scores: K rows read in place (f32 / f16) as the a rows of the few-columns GEMM
            // (z[b][j] = K_j . q_b, several rows at once); other types converted row by row
            if (k_f16 || k_f32) {
                const std::byte* k0 = row_ptr(kk, kv0, ik2, ik3);
                if (k_f16)
                    k.gemm_h16(kernels::detail::gemm_a_type::f16, k0, kk.lay.nb[1] / 2, qb, static_cast<std::size_t>(rdk), z,
                               static_cast<std::size_t>(fa_tile_kv), n, static_cast<std::size_t>(nb), static_cast<std::size_t>(Dk));
                else
                    k.gemm(reinterpret_cast<const float*>(k0), kk.lay.nb[1] / 4, qb, static_cast<std::size_t>(rdk), z,
                           static_cast<std::size_t>(fa_tile_kv), n, static_cast<std::size_t>(nb), static_cast<std::size_t>(Dk));
            } else {
                for (std::int64_t j = 0; j < kl; ++j) {
                    const float* kr = fa_row(k, kk, kv0 + j, ik2, ik3, kb);
                    for (std::int64_t b = 0; b < nb; ++b) z[b * fa_tile_kv + j] = k.dot(qb + b * rdk, kr, static_cast<std::size_t>(Dk));
                }
            }
            // online softmax per row; the probabilities overwrite the scores, f rescales acc
            for (std::int64_t b = 0; b < nb; ++b) {
                float* zb = z + b * fa_tile_kv;
                const float* m = mask ? Mt + b * fa_tile_kv : nullptr;
                float mx;
                if (fp.logit_softcap != 0.f) {
                    k.scale(zb, zb, n, fp.scale / fp.logit_softcap, 0.f);
                    k.unary(kernels::unary_kind::tanh, zb, zb, n, 0.f, 0.f);
                    mx = k.scale_add(zb, fp.logit_softcap, m, slope[b], zb, n);
                } else {
                    mx = k.scale_add(zb, fp.scale, m, slope[b], zb, n);
                }
                const float m_new = std::max(rmax[b], mx);
                if (m_new == ninf) {  // nothing unmasked for this row yet
                    std::fill(zb, zb + n, 0.f);
                    continue;
                }
                const double sum = k.softmax_exp(zb, zb, n, m_new);
                const float f = std::exp(rmax[b] - m_new);
                if (f != 1.f) k.scale(acc + b * rdv, acc + b * rdv, static_cast<std::size_t>(Dv), f, 0.f);
                rsum[b] = rsum[b] * f + static_cast<float>(sum);
                rmax[b] = m_new;
            }
            // acc += P V: f32 / f16 V rows read in place, the block's rows summed into acc in
            // registers (rows of probability 0 skipped); other types converted row by row
            if (v_f16 || v_f32) {
                const std::byte* v0 = row_ptr(v, kv0, ik2, ik3);
                for (std::int64_t b = 0; b < nb; ++b) {
                    if (v_f16)
                        k.axpy_rows_f16(z + b * fa_tile_kv, reinterpret_cast<const f16*>(v0), v.lay.nb[1] / 2, n, acc + b * rdv,
                                        static_cast<std::size_t>(Dv));
                    else
                        k.axpy_rows(z + b * fa_tile_kv, reinterpret_cast<const float*>(v0), v.lay.nb[1] / 4, n, acc + b * rdv,
                                    static_cast<std::size_t>(Dv));
                }
            } else {
                for (std::int64_t j = 0; j < kl; ++j) {
                    const float* vr = fa_row(k, v, kv0 + j, ik2, ik3, vb);
                    for (std::int64_t b = 0; b < nb; ++b)
                        if (const float pj = z[b * fa_tile_kv + j]; pj != 0.f) k.axpy(pj, vr, acc + b * rdv, static_cast<std::size_t>(Dv));
                }
            }
        }
        for (std::int64_t b = 0; b < nb; ++b) {
            float sum = rsum[b], f = 1.f;
            if (sinks) {  // one more logit per head, in the max and the sum only
                const float sk = read_scalar(type_id::f32, sinks->bytes() + static_cast<std::size_t>(hs[b]) * sinks->lay.nb[0]);
                if (sk > rmax[b]) {
                    f = std::exp(rmax[b] - sk);
                    sum = sum * f + 1.f;
                } else {
                    sum += std::exp(sk - rmax[b]);
                }
            }
            float* o = reinterpret_cast<float*>(row_ptr(d, hs[b], qs[b], i3));
            k.scale(acc + b * rdv, o, static_cast<std::size_t>(Dv), sum > 0 ? f / sum : 0.f, 0.f);
        }
    }
}

inline void flash_attn_ext(const node& d, const exec_params& p) {
    if (d.src[0]->lay.ne[1] >= fa_tile_min_q) return flash_attn_tiled(d, p);
    flash_attn_rows(d, p);
}

}  // namespace impl

namespace impl {
inline void nothing(const node&, const exec_params&) {}
inline void unary_node(const node& n, const exec_params& p) {
    if (n.param<unary_params>().op == unary_op::xielu) return xielu(n, p);
    unary(n, p);
}
}  // namespace impl

// ---- the op table ----------------------------------------------------------------------------
// One row per op the CPU computes: whether it computes a node (support), the scratch it
// needs (scratch) and the body (compute). supports_op, the executor's plan and its run
// all read this table; an op without a row is not implemented on the CPU.
struct op_entry {
    std::string (*supports)(const node&) = nullptr;
    scratch_need (*scratch)(const node&) = nullptr;
    void (*compute)(const node&, const exec_params&) = nullptr;
};

inline constexpr std::array<op_entry, op_count> op_table = [] {
    std::array<op_entry, op_count> t{};
    const auto row = [&t](std::initializer_list<op_kind> ops, op_entry e) {
        for (op_kind o : ops) t[static_cast<std::size_t>(o)] = e;
    };
    using K = op_kind;
    row({K::none, K::view, K::reshape, K::permute, K::transpose}, {support::always, scratch::none, impl::nothing});
    row({K::dup, K::cont, K::cpy}, {support::copy, scratch::rows, impl::copy});
    row({K::add, K::sub, K::mul, K::div}, {support::binary, scratch::rows, impl::binary});
    row({K::unary}, {support::float_dst, scratch::rows, impl::unary_node});
    row({K::sqr, K::sqrt, K::log, K::sin, K::cos, K::scale, K::clamp, K::leaky_relu, K::fill},
        {support::float_src, scratch::rows, impl::unary});
    row({K::glu}, {support::float_src, scratch::rows, impl::glu});
    row({K::norm, K::rms_norm, K::l2_norm}, {support::float_src, scratch::rows, impl::norm});
    row({K::diag_mask_inf, K::diag_mask_zero}, {support::float_src, scratch::rows, impl::diag_mask});
    row({K::sum, K::sum_rows, K::mean}, {support::float_src, scratch::rows, impl::reduce});
    row({K::argmax}, {support::argmax, scratch::rows, impl::reduce});
    row({K::count_equal}, {support::always, scratch::rows, impl::count_equal});
    row({K::cross_entropy_loss}, {support::always, scratch::cross_entropy_loss, impl::cross_entropy_loss});
    // recurrent: f32 only, checked when built
    row({K::ssm_conv}, {support::always, scratch::rows, impl::ssm_conv});
    row({K::ssm_scan}, {support::always, scratch::rows, impl::ssm_scan});
    row({K::rwkv_wkv6, K::gated_linear_attn, K::rwkv_wkv7}, {support::always, scratch::rows, impl::linear_attention});
    row({K::gated_delta_net}, {support::always, scratch::pair<impl::gated_delta_net_scratch>, impl::gated_delta_net});
    row({K::repeat}, {support::plain_dst, scratch::rows, impl::repeat});
    row({K::concat}, {support::plain_dst, scratch::rows, impl::concat});
    row({K::get_rows}, {support::get_rows, scratch::rows, impl::get_rows});
    row({K::set_rows}, {support::set_rows, scratch::rows, impl::set_rows});
    row({K::soft_max}, {support::float_dst, scratch::rows, impl::soft_max});
    row({K::rope, K::rope_back}, {support::float_dst, scratch::rope, impl::rope});
    row({K::mul_mat}, {support::mul_mat, scratch::mul_mat, impl::mul_mat});
    row({K::flash_attn_ext}, {support::flash_attn_ext, scratch::flash_attn_ext, impl::flash_attn_ext});
    // ops_arith.hpp, ops_sort.hpp, ops_products.hpp
    row({K::add1}, {arith_unsupported_reason, scratch::rows, impl::add1});
    row({K::add_id}, {arith_unsupported_reason, scratch::rows, impl::add_id});
    row({K::acc, K::set}, {arith_unsupported_reason, scratch::rows, impl::acc_set});
    row({K::diag}, {arith_unsupported_reason, scratch::rows, impl::diag});
    row({K::tri}, {arith_unsupported_reason, scratch::rows, impl::tri});
    row({K::solve_tri}, {arith_unsupported_reason, scratch::rows, impl::solve_tri});
    row({K::cumsum}, {arith_unsupported_reason, scratch::rows, impl::cumsum});
    row({K::repeat_back}, {arith_unsupported_reason, scratch::rows, impl::repeat_back});
    row({K::group_norm}, {arith_unsupported_reason, scratch::rows, impl::group_norm});
    row({K::argsort, K::top_k}, {sort_unsupported_reason, scratch::rows, impl::sort_rows});
    row({K::out_prod}, {products_unsupported_reason, scratch::rows, impl::out_prod});
    row({K::mul_mat_id}, {products_unsupported_reason, scratch::pair<mul_mat_id_scratch>, impl::mul_mat_id});
    // the families with one entry point each (ops_image, ops_conv, ops_training, ops_custom, ops_deepseek)
    row({K::pad, K::pad_reflect_1d, K::roll, K::arange, K::timestep_embedding, K::upscale, K::win_part, K::win_unpart,
         K::get_rel_pos, K::add_rel_pos},
        {image_unsupported_reason, scratch::rows, image_compute});
    row({K::im2col, K::conv_2d, K::conv_2d_dw, K::conv_transpose_1d, K::conv_transpose_2d, K::pool_1d, K::pool_2d,
         K::col2im_1d, K::im2col_3d},
        {conv_unsupported_reason, scratch::rows, conv_compute});
    row({K::conv_3d}, {conv_unsupported_reason, scratch::pair<impl::conv_scratch>, conv_compute});
    row({K::silu_back, K::rms_norm_back, K::soft_max_back, K::get_rows_back, K::cross_entropy_loss_back, K::im2col_back,
         K::pool_2d_back, K::opt_step_adamw, K::opt_step_sgd},
        {training_unsupported_reason, scratch::rows, training_compute});
    row({K::map_custom1, K::map_custom2, K::map_custom3, K::custom}, {custom_unsupported_reason, scratch::none, custom_compute});
    row({K::dsv4_hc_comb, K::dsv4_hc_pre, K::dsv4_hc_post}, {deepseek_unsupported_reason, scratch::rows, deepseek_compute});
    row({K::lightning_indexer}, {deepseek_unsupported_reason, scratch::pair<deepseek_scratch>, deepseek_compute});
    return t;
}();

// (A template only so that the ops unit compiles the table and the bodies it points to:
// config.hpp, TESSERA_LINKED.)
template <class = void>
const op_entry& op_row(op_kind op) noexcept { return op_table[static_cast<std::size_t>(op)]; }
TESSERA_LINKED(const op_entry& op_row<void>(op_kind) noexcept);
inline const op_entry& entry_of(op_kind op) noexcept { return op_row(op); }

// Whether the CPU has an implementation of op at all (for some types and modes;
// unsupported_reason() decides per node). docs/ops.md lists the same set.
inline bool implements(op_kind op) noexcept { return entry_of(op).compute != nullptr; }

// Empty when the CPU computes this node exactly as ggml specifies; otherwise a sentence
// saying what is not supported.
inline std::string unsupported_reason(const node& n) {
    if (std::string why = repacked_source_reason(n); !why.empty()) return why;
    const op_entry& e = entry_of(n.op);
    if (!e.supports) return "op " + std::string(op_name(n.op)) + " is not implemented on the CPU yet";
    return e.supports(n);
}

// Scratch of node n: per thread, and shared by its threads.
inline scratch_need scratch_for(const node& n) { return entry_of(n.op).scratch(n); }

// Computes this thread's share of node n (refused by unsupported_reason first when the
// CPU has no row for its op).
inline void compute_node(const node& n, const exec_params& p) { entry_of(n.op).compute(n, p); }

// Whether an op does no work (views, leafs).
inline bool is_noop(op_kind op) noexcept { return op == op_kind::none || op_is_view(op); }

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
