// The Vulkan device's op table: one row per op it computes, {op, supports, record, cost}.
// supports(node, context) returns "" or the reason it refuses; record(recorder, node) binds
// the operands and dispatches the shader; cost is what one element of the result reads,
// writes and computes (docs/backends.md lists it, to judge a GPU run against its
// bandwidth). Every op without a row is refused by name, so the scheduler keeps it on the
// CPU. To add an op: a shader (shaders/*.comp, tools/gen_spirv.py), a row here, a case in
// tests/backend/vulkan/test_vulkan.cpp.
#pragma once

#if defined(TESSERA_VULKAN) && TESSERA_VULKAN

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/backend/common.hpp"
#include "tessera/backend/vulkan/context.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/graph/op.hpp"
#include "tessera/graph/op_traits.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::vulkan {

using graph::op_kind;

// Where a tensor's bytes are: its buffer's block and the byte offset of t.bytes() in it.
struct location {
    const memory_block* block = nullptr;
    std::size_t offset = 0;
};
using locate_fn = std::function<location(const node&)>;

// One storage-buffer binding: the range covering a tensor, bound at an offset aligned to
// minStorageBufferOffsetAlignment; the shader adds `first` (in the operand's elements, of
// `unit` bytes) to its indices.
struct binding {
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    VkDeviceSize range = 0;
    std::uint32_t first = 0;
};

// Records one graph's dispatches into a command buffer.
class recorder {
public:
    recorder(context& c, VkCommandBuffer cb, VkDescriptorPool pool, locate_fn locate)
        : c_(c), cb_(cb), pool_(pool), locate_(std::move(locate)) {}
    context& ctx() noexcept { return c_; }

    // The binding of tensor t read or written in elements of `unit` bytes (4 for f32 and
    // i32, 2 for f16, bf16 and the 16-bit words of quantized blocks); the one place that
    // computes bindings. t must start at a multiple of unit.
    binding bind(const node& t, std::size_t unit) const {
        const location l = locate_(t);
        const std::size_t align = static_cast<std::size_t>(c_.limits().minStorageBufferOffsetAlignment);
        const std::size_t base = align > 1 ? l.offset / align * align : l.offset;
        const std::size_t rem = l.offset - base;
        if (unit == 0 || rem % unit)
            fail(errc::invalid_argument, c_.name() + ": " + detail::tensor_desc(t) + " starts at byte " + std::to_string(l.offset) +
                                             ", not at a multiple of " + std::to_string(unit));
        const std::size_t range = std::min<std::size_t>((rem + t.lay.nbytes() + 3) / 4 * 4, l.block->size - base);
        return binding{l.block->buf, base, range, static_cast<std::uint32_t>(rem / unit)};
    }

    // Dispatches shader s over n invocations (workgroups of `local`), with bindings b (the
    // unused ones repeat b[0]) and push constants p; then a barrier, so the next dispatch
    // sees this one's writes.
    template <class Push>
    void dispatch(shader_id s, std::array<binding, max_bindings> b, const Push& p, std::uint64_t n, std::uint32_t local) {
        static_assert(sizeof(Push) <= push_constant_bytes);
        if (n == 0) return;
        const api& f = fn();
        const VkPipeline pipe = c_.pipeline(s);
        auto ai = make<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
        ai.descriptorPool = pool_;
        ai.descriptorSetCount = 1;
        const VkDescriptorSetLayout dsl = c_.set_layout();
        ai.pSetLayouts = &dsl;
        VkDescriptorSet set = VK_NULL_HANDLE;
        check(f.vkAllocateDescriptorSets(c_.device(), &ai, &set), "vkAllocateDescriptorSets");
        std::array<VkDescriptorBufferInfo, max_bindings> infos{};
        std::array<VkWriteDescriptorSet, max_bindings> w{};
        const std::uint32_t nb = c_.bindings();
        for (std::uint32_t i = 0; i < nb; ++i) {
            const binding& x = b[i].buf ? b[i] : b[0];
            infos[i] = VkDescriptorBufferInfo{x.buf, x.offset, x.range};
            w[i] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
            w[i].dstSet = set;
            w[i].dstBinding = i;
            w[i].descriptorCount = 1;
            w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            w[i].pBufferInfo = &infos[i];
        }
        f.vkUpdateDescriptorSets(c_.device(), nb, w.data(), 0, nullptr);
        f.vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        f.vkCmdBindDescriptorSets(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, c_.pipeline_layout(), 0, 1, &set, 0, nullptr);
        f.vkCmdPushConstants(cb_, c_.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push), &p);
        const std::uint64_t groups = (n + local - 1) / local;
        const std::uint64_t maxg = c_.limits().maxComputeWorkGroupCount[0];
        const std::uint64_t gx = std::min(groups, maxg), gy = (groups + gx - 1) / gx;
        if (gy > c_.limits().maxComputeWorkGroupCount[1])
            fail(errc::unsupported, c_.name() + ": " + std::to_string(n) + " invocations exceed the dispatch limits");
        f.vkCmdDispatch(cb_, static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), 1);
        auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        f.vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr,
                               0, nullptr);
    }

private:
    context& c_;
    VkCommandBuffer cb_;
    VkDescriptorPool pool_;
    locate_fn locate_;
};

// What one element of the result costs: bytes read and written, and flops (k = the
// reduced extent of mul_mat, counted per element of the result).
struct op_cost {
    const char* bytes;
    const char* flops;
};

namespace detail_ops {

inline std::array<std::uint32_t, 4> u4(const std::array<std::int64_t, 4>& v) {
    return {static_cast<std::uint32_t>(v[0]), static_cast<std::uint32_t>(v[1]), static_cast<std::uint32_t>(v[2]),
            static_cast<std::uint32_t>(v[3])};
}
// t's strides in elements of `unit` bytes (operand_ok checked they divide).
inline std::array<std::uint32_t, 4> strides(const node& t, std::size_t unit) {
    return {static_cast<std::uint32_t>(t.lay.nb[0] / unit), static_cast<std::uint32_t>(t.lay.nb[1] / unit),
            static_cast<std::uint32_t>(t.lay.nb[2] / unit), static_cast<std::uint32_t>(t.lay.nb[3] / unit)};
}
inline std::string type_str(const node& t) { return std::string(type_name(t.lay.type)); }

// The element type codes of shaders/common.glsl (loads and stores compute in f32), and
// the codes get_rows gives the quantized blocks it reads in 16-bit words.
enum tcode : std::uint32_t { t_f32 = 0, t_f16 = 1, t_bf16 = 2, t_i32 = 3, t_q4_0 = 4, t_q8_0 = 5, t_q4_K = 6, t_q6_K = 7 };
inline std::uint32_t code_of(type_id t) {
    switch (t) {
        case type_id::f16: return t_f16;
        case type_id::bf16: return t_bf16;
        case type_id::i32: return t_i32;
        case type_id::q4_0: return t_q4_0;
        case type_id::q8_0: return t_q8_0;
        case type_id::q4_K: return t_q4_K;
        case type_id::q6_K: return t_q6_K;
        default: return t_f32;
    }
}
// The unit a shader addresses t in: its element size, 2 for quantized blocks (16-bit
// words), 4 for i64 indices (read as two i32 words).
inline std::size_t unit_of(type_id t) {
    if (t == type_id::q4_0 || t == type_id::q8_0 || t == type_id::q4_K || t == type_id::q6_K) return 2;
    if (t == type_id::i64) return 4;
    return static_cast<std::size_t>(type_size(t));
}

inline std::string names(std::initializer_list<type_id> ts) {
    std::string r;
    std::size_t i = 0;
    for (type_id t : ts) {
        if (i) r += i + 1 == ts.size() ? " or " : ", ";
        r += type_name(t);
        ++i;
    }
    return r;
}

// The checks every operand passes: one of the types `ok` (f16 and bf16 only with 16-bit
// storage), strides whole elements (of unit_of its type), and its bytes fit one binding
// (maxStorageBufferRange) with indices in 32 bits.
inline std::string operand_ok(const node& t, const context& c, const char* role, std::initializer_list<type_id> ok) {
    bool found = false;
    for (type_id x : ok) found = found || x == t.lay.type;
    if (!found) return std::string(role) + " is " + type_str(t) + ", the Vulkan device takes " + names(ok) + " here";
    const std::size_t unit = unit_of(t.lay.type);
    if (unit == 2 && !c.storage16())
        return std::string(role) + " is " + type_str(t) + ", which needs 16-bit storage (storageBuffer16BitAccess), not offered by " +
               c.name();
    for (int i = 0; i < 4; ++i)
        if (t.lay.nb[static_cast<std::size_t>(i)] % unit)
            return std::string(role) + " has a stride that is not a whole number of " + std::to_string(unit) + "-byte elements";
    if (t.lay.nbytes() + c.alignment() > c.max_binding())
        return std::string(role) + " spans " + std::to_string(t.lay.nbytes()) + " bytes, more than one binding (maxStorageBufferRange " +
               std::to_string(c.max_binding()) + ")";
    if (t.lay.nelements() >= (std::int64_t{1} << 32)) return std::string(role) + " has 2^32 or more elements";
    return {};
}
inline std::string operands_ok(const context& c, std::initializer_list<std::pair<const node*, const char*>> ops,
                               std::initializer_list<type_id> ok) {
    for (auto [t, role] : ops)
        if (std::string why = operand_ok(*t, c, role, ok); !why.empty()) return why;
    return {};
}

inline constexpr std::initializer_list<type_id> float_in = {type_id::f32, type_id::f16, type_id::bf16};
inline constexpr std::initializer_list<type_id> float_out = {type_id::f32, type_id::f16, type_id::bf16};
inline constexpr std::initializer_list<type_id> copy_types = {type_id::f32, type_id::f16, type_id::bf16, type_id::i32};

// ---- element-wise (shaders/eltwise.comp) ---------------------------------------------------

struct eltwise_push {
    std::array<std::uint32_t, 4> ne, bne, anb, bnb, dnb;
    std::uint32_t aoff, boff, doff, op, types;
    float s, t, u, w;  // the op's parameters
};
static_assert(sizeof(eltwise_push) == 116);

inline std::uint32_t types3(const node& a, const node& b, const node& d) {
    return code_of(a.lay.type) | code_of(b.lay.type) << 4 | code_of(d.lay.type) << 8;
}
inline void eltwise_dispatch(recorder& r, const node& d, eltwise_push& p, const binding& ba, const binding& bb, const binding& bd) {
    p.dnb = strides(d, unit_of(d.lay.type));
    p.doff = bd.first;
    r.dispatch(shader_id::eltwise, {ba, bb, bd}, p, static_cast<std::uint64_t>(d.lay.nelements()), 256);
}

inline std::string binary_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* b = d.src[1];
    if (!a || !b) return "needs two sources";
    if (std::string why = operands_ok(c, {{a, "src0"}, {b, "src1"}}, float_in); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", float_out); !why.empty()) return why;
    for (std::size_t i = 0; i < 4; ++i) {
        if (a->lay.ne[i] != d.lay.ne[i]) return "src0's shape differs from the result's";
        if (b->lay.ne[i] == 0 || d.lay.ne[i] % b->lay.ne[i]) return "src1 does not repeat into the result";
    }
    return {};
}
inline void binary_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    eltwise_push p{};
    p.ne = u4(d.lay.ne);
    p.bne = u4(b.lay.ne);
    p.anb = strides(a, unit_of(a.lay.type));
    p.bnb = strides(b, unit_of(b.lay.type));
    p.op = d.op == op_kind::add || d.op == op_kind::add1 ? 0u : d.op == op_kind::sub ? 1u : d.op == op_kind::mul ? 2u : 3u;
    p.types = types3(a, b, d);
    const binding ba = r.bind(a, unit_of(a.lay.type)), bb = r.bind(b, unit_of(b.lay.type)), bd = r.bind(d, unit_of(d.lay.type));
    p.aoff = ba.first;
    p.boff = bb.first;
    eltwise_dispatch(r, d, p, ba, bb, bd);
}

// scale, unary, cpy/dup/cont: one source
inline std::string one_source(const node& d, const context& c, bool same_shape, std::initializer_list<type_id> in = float_in,
                              std::initializer_list<type_id> out = float_out) {
    const node* a = d.src[0];
    if (!a) return "needs a source";
    if (std::string why = operand_ok(*a, c, "src0", in); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", out); !why.empty()) return why;
    if (same_shape && a->lay.ne != d.lay.ne) return "src0's shape differs from the result's";
    if (a->lay.nelements() != d.lay.nelements()) return "src0 and the result have different element counts";
    return {};
}
inline void one_source_record(recorder& r, const node& d, std::uint32_t op, float s = 0.f, float t = 0.f, float u = 0.f,
                              float w = 0.f) {
    const node& a = *d.src[0];
    eltwise_push p{};
    p.ne = u4(d.lay.ne);
    p.bne = u4(a.lay.ne);
    p.anb = strides(a, unit_of(a.lay.type));
    p.bnb = p.anb;
    p.op = op;
    p.types = types3(a, a, d);
    p.s = s;
    p.t = t;
    p.u = u;
    p.w = w;
    const binding ba = r.bind(a, unit_of(a.lay.type)), bd = r.bind(d, unit_of(d.lay.type));
    p.aoff = ba.first;
    p.boff = ba.first;
    eltwise_dispatch(r, d, p, ba, ba, bd);
}

inline std::string scale_supports(const node& d, const context& c) { return one_source(d, c, true); }
inline void scale_record(recorder& r, const node& d) {
    const auto& sp = d.param<graph::scale_params>();
    one_source_record(r, d, 4, sp.s, sp.b);
}

// ---- quantizing copies (shaders/quantize.comp): into q4_0 or q8_0 blocks ---------------------

struct quantize_push {
    std::array<std::uint32_t, 4> ne, anb, inb, ine, dnb;
    std::uint32_t aoff, ioff, doff, ta, tq, mode, drows, i64;
};
static_assert(sizeof(quantize_push) == 112);

inline bool quantized_dst(const node& d) { return d.lay.type == type_id::q4_0 || d.lay.type == type_id::q8_0; }
// the destination's blocks: contiguous along its rows, whole
inline std::string blocks_ok(const node& d, const context& c) {
    if (std::string why = operand_ok(d, c, "the destination", {type_id::q4_0, type_id::q8_0}); !why.empty()) return why;
    if (d.lay.nb[0] != static_cast<std::size_t>(type_size(d.lay.type)) || d.lay.ne[0] % 32)
        return "the destination's " + type_str(d) + " blocks are not contiguous along its rows";
    return {};
}
// src: the source (rows of whole blocks); ix: the indices of set_rows, or null (a copy)
inline void quantize_record(recorder& r, const node& d, const node& src, const node* ix) {
    quantize_push p{};
    p.ne = u4(src.lay.ne);
    p.anb = strides(src, unit_of(src.lay.type));
    p.dnb = strides(d, 2);
    p.ta = code_of(src.lay.type);
    p.tq = code_of(d.lay.type);
    p.drows = static_cast<std::uint32_t>(d.lay.ne[1]);
    const binding ba = r.bind(src, unit_of(src.lay.type)), bd = r.bind(d, 2);
    binding bi = ba;
    if (ix) {
        bi = r.bind(*ix, 4);
        p.inb = strides(*ix, 4);
        p.ine = u4(ix->lay.ne);
        p.mode = 1;
        p.i64 = ix->lay.type == type_id::i64 ? 1u : 0u;
        p.ioff = bi.first;
    }
    p.aoff = ba.first;
    p.doff = bd.first;
    r.dispatch(shader_id::quantize, {ba, bi, bd}, p, static_cast<std::uint64_t>(src.lay.nelements() / 32), 64);
}

// cpy (src0 into src1's view), dup, cont: ggml's cpy, element k to element k in the
// row-major traversals of both shapes; f32/f16/bf16/i32 each way (float to i32
// truncates); into q4_0/q8_0 from a float source of the same shape (quantize.comp)
inline std::string copy_supports(const node& d, const context& c) {
    if (quantized_dst(d)) {
        const node* a = d.src[0];
        if (!a) return "needs a source";
        if (std::string why = operand_ok(*a, c, "src0", float_in); !why.empty()) return why;
        if (std::string why = blocks_ok(d, c); !why.empty()) return why;
        if (a->lay.ne != d.lay.ne) return "a copy into " + type_str(d) + " needs src0 of the result's shape";
        return {};
    }
    if (is_quantized(d.lay.type)) return "the result is " + type_str(d) + ", the Vulkan device quantizes into q4_0 and q8_0 only";
    return one_source(d, c, false, copy_types, copy_types);
}
inline void copy_record(recorder& r, const node& d) {
    if (quantized_dst(d)) return quantize_record(r, d, *d.src[0], nullptr);
    one_source_record(r, d, 5);
}

// repeat: d = a tiled (a's extents divide d's)
inline std::string repeat_supports(const node& d, const context& c) {
    if (!d.src[0]) return "needs a source";
    const node& a = *d.src[0];
    if (std::string why = operands_ok(c, {{&a, "src0"}, {&d, "the result"}}, copy_types); !why.empty()) return why;
    if (a.lay.type != d.lay.type) return "src0 and the result differ in type";
    for (std::size_t i = 0; i < 4; ++i)
        if (a.lay.ne[i] == 0 || d.lay.ne[i] % a.lay.ne[i]) return "src0 does not tile the result";
    return {};
}
inline void repeat_record(recorder& r, const node& d) { one_source_record(r, d, 7); }

// concat along dim: a, then b
inline std::string concat_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* b = d.src[1];
    if (!a || !b) return "needs two sources";
    if (std::string why = operands_ok(c, {{a, "src0"}, {b, "src1"}, {&d, "the result"}}, copy_types); !why.empty()) return why;
    if (a->lay.type != d.lay.type || b->lay.type != d.lay.type) return "src0, src1 and the result differ in type";
    const int dim = d.param<graph::concat_params>().dim;
    if (dim < 0 || dim > 3) return "dim is not 0..3";
    for (std::size_t i = 0; i < 4; ++i) {
        const std::int64_t want = a->lay.ne[i] + (static_cast<int>(i) == dim ? b->lay.ne[i] : 0);
        if (d.lay.ne[i] != want || (static_cast<int>(i) != dim && b->lay.ne[i] != a->lay.ne[i])) return "shapes do not concatenate";
    }
    return {};
}
inline void concat_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    eltwise_push p{};
    p.ne = u4(d.lay.ne);
    p.bne = u4(a.lay.ne);
    p.anb = strides(a, unit_of(a.lay.type));
    p.bnb = strides(b, unit_of(b.lay.type));
    p.op = 8;
    p.types = types3(a, b, d);
    p.s = std::bit_cast<float>(static_cast<std::int32_t>(d.param<graph::concat_params>().dim));
    const binding ba = r.bind(a, unit_of(a.lay.type)), bb = r.bind(b, unit_of(b.lay.type)), bd = r.bind(d, unit_of(d.lay.type));
    p.aoff = ba.first;
    p.boff = bb.first;
    eltwise_dispatch(r, d, p, ba, bb, bd);
}

// unary: every one of ggml's unary ops (eltwise.comp's op 16 + its index; xielu with its
// four factors); sqr, sqrt, log, sin, cos, clamp, leaky_relu: eltwise.comp's ops 48..54
inline std::string unary_supports(const node& d, const context& c) {
    const auto u = static_cast<std::size_t>(d.param<graph::unary_params>().op);
    if (u >= graph::unary_names.size()) return "unary op " + std::to_string(u) + " is not one of ggml's";
    return one_source(d, c, true);
}
inline void unary_record(recorder& r, const node& d) {
    const auto& up = d.param<graph::unary_params>();
    one_source_record(r, d, 16u + static_cast<std::uint32_t>(up.op), up.alpha_n, up.alpha_p, up.beta, up.eps);
}
inline std::string math_supports(const node& d, const context& c) { return one_source(d, c, true); }
inline void math_record(recorder& r, const node& d) {
    switch (d.op) {
        case op_kind::sqr: one_source_record(r, d, 48); break;
        case op_kind::sqrt: one_source_record(r, d, 49); break;
        case op_kind::log: one_source_record(r, d, 50); break;
        case op_kind::sin: one_source_record(r, d, 51); break;
        case op_kind::cos: one_source_record(r, d, 52); break;
        case op_kind::clamp: one_source_record(r, d, 53, d.param<graph::clamp_params>().min, d.param<graph::clamp_params>().max); break;
        case op_kind::fill: one_source_record(r, d, 55, d.param<graph::fill_params>().value); break;
        default: one_source_record(r, d, 54, d.param<graph::leaky_relu_params>().slope); break;  // leaky_relu
    }
}

// diag_mask_inf, diag_mask_zero: eltwise.comp's op 6
inline void diag_mask_record(recorder& r, const node& d) {
    const float n_past = std::bit_cast<float>(static_cast<std::int32_t>(d.param<graph::diag_mask_params>().n_past));
    one_source_record(r, d, 6, n_past, d.op == op_kind::diag_mask_inf ? 1.f : 0.f);
}

// glu: d = act(x) * g with x, g = src0, src1, or (one source) the two halves of src0's
// rows, the first activated unless swapped
inline std::string glu_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* b = d.src[1];
    if (!a) return "needs a source";
    if (std::string why = operand_ok(*a, c, "src0", float_in); !why.empty()) return why;
    if (b)
        if (std::string why = operand_ok(*b, c, "src1", float_in); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", float_out); !why.empty()) return why;
    if (b) {
        if (a->lay.ne != d.lay.ne || b->lay.ne != d.lay.ne) return "src0, src1 and the result differ in shape";
    } else if (a->lay.ne[0] != 2 * d.lay.ne[0] || a->lay.ne[1] != d.lay.ne[1] || a->lay.ne[2] != d.lay.ne[2] ||
               a->lay.ne[3] != d.lay.ne[3]) {
        return "src0's rows are not twice the result's";
    }
    return {};
}
inline void glu_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node* b = d.src[1];
    const auto& gp = d.param<graph::glu_params>();
    eltwise_push p{};
    p.ne = u4(d.lay.ne);
    p.bne = p.ne;
    p.anb = strides(a, unit_of(a.lay.type));
    p.op = 64u + static_cast<std::uint32_t>(gp.op);
    p.s = gp.alpha;
    p.t = gp.limit;
    const binding ba = r.bind(a, unit_of(a.lay.type)), bd = r.bind(d, unit_of(d.lay.type));
    if (b) {
        const binding bb = r.bind(*b, unit_of(b->lay.type));
        p.bnb = strides(*b, unit_of(b->lay.type));
        p.types = types3(a, *b, d);
        p.aoff = ba.first;
        p.boff = bb.first;
        eltwise_dispatch(r, d, p, ba, bb, bd);
        return;
    }
    // one source bound twice: x from one half of each row, g from the other
    const std::uint32_t half = static_cast<std::uint32_t>(d.lay.ne[0]) * p.anb[0];
    p.bnb = p.anb;
    p.types = types3(a, a, d);
    p.aoff = ba.first + (gp.swapped ? half : 0u);
    p.boff = ba.first + (gp.swapped ? 0u : half);
    eltwise_dispatch(r, d, p, ba, ba, bd);
}

// ---- get_rows, set_rows (shaders/get_rows.comp, set_rows.comp) -----------------------------

struct get_rows_push {
    std::array<std::uint32_t, 4> ne, anb, inb, dnb;
    std::uint32_t aoff, ioff, doff, ta, arows;
};
static_assert(sizeof(get_rows_push) == 84);

inline std::string get_rows_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* ix = d.src[1];
    if (!a || !ix) return "needs rows and indices";
    if (std::string why =
            operand_ok(*a, c, "src0", {type_id::f32, type_id::f16, type_id::bf16, type_id::i32, type_id::q4_0, type_id::q8_0});
        !why.empty())
        return why;
    if (std::string why = operand_ok(*ix, c, "the indices", {type_id::i32}); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", {a->lay.type == type_id::i32 ? type_id::i32 : type_id::f32}); !why.empty())
        return why;
    if (is_quantized(a->lay.type) && (a->lay.nb[0] != static_cast<std::size_t>(type_size(a->lay.type)) || a->lay.ne[0] % 32))
        return "src0's " + type_str(*a) + " blocks are not contiguous along its rows";
    if (d.lay.ne[0] != a->lay.ne[0] || d.lay.ne[1] != ix->lay.ne[0] || d.lay.ne[2] != ix->lay.ne[1] || d.lay.ne[3] != ix->lay.ne[2] ||
        a->lay.ne[2] != ix->lay.ne[1] || a->lay.ne[3] != ix->lay.ne[2])
        return "shapes of the rows, indices and result do not match";
    return {};
}
inline void get_rows_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node& ix = *d.src[1];
    get_rows_push p{};
    p.ne = u4(d.lay.ne);
    p.anb = strides(a, unit_of(a.lay.type));
    p.inb = strides(ix, 4);
    p.dnb = strides(d, 4);
    p.ta = code_of(a.lay.type);
    p.arows = static_cast<std::uint32_t>(a.lay.ne[1]);
    const binding ba = r.bind(a, unit_of(a.lay.type)), bi = r.bind(ix, 4), bd = r.bind(d, 4);
    p.aoff = ba.first;
    p.ioff = bi.first;
    p.doff = bd.first;
    r.dispatch(shader_id::get_rows, {ba, bi, bd}, p, static_cast<std::uint64_t>(d.lay.nelements()), 256);
}

struct set_rows_push {
    std::array<std::uint32_t, 4> ne, anb, inb, ine, dnb;
    std::uint32_t aoff, ioff, doff, types, drows, i64;
};
static_assert(sizeof(set_rows_push) == 104);

// set_rows(dst, b, idx): the node is dst's view; src0 = b (the rows), src1 = the indices
inline std::string set_rows_supports(const node& d, const context& c) {
    const node* b = d.src[0];
    const node* ix = d.src[1];
    if (!b || !ix) return "needs rows and indices";
    if (std::string why = operand_ok(*b, c, "src0", float_in); !why.empty()) return why;
    if (std::string why = operand_ok(*ix, c, "the indices", {type_id::i32, type_id::i64}); !why.empty()) return why;
    if (quantized_dst(d)) {
        if (std::string why = blocks_ok(d, c); !why.empty()) return why;
    } else if (is_quantized(d.lay.type)) {
        return "the destination is " + type_str(d) + ", the Vulkan device quantizes into q4_0 and q8_0 only";
    } else if (std::string why = operand_ok(d, c, "the destination", float_out); !why.empty()) {
        return why;
    }
    if (b->lay.ne[0] != d.lay.ne[0] || b->lay.ne[2] != d.lay.ne[2] || b->lay.ne[3] != d.lay.ne[3] || ix->lay.ne[0] != b->lay.ne[1] ||
        ix->lay.ne[1] == 0 || ix->lay.ne[2] == 0 || b->lay.ne[2] % ix->lay.ne[1] || b->lay.ne[3] % ix->lay.ne[2])
        return "shapes of the rows, indices and destination do not match";
    return {};
}
inline void set_rows_record(recorder& r, const node& d) {
    const node& b = *d.src[0];
    const node& ix = *d.src[1];
    if (quantized_dst(d)) return quantize_record(r, d, b, &ix);
    set_rows_push p{};
    p.ne = u4(b.lay.ne);
    p.anb = strides(b, unit_of(b.lay.type));
    p.inb = strides(ix, 4);
    p.ine = u4(ix.lay.ne);
    p.dnb = strides(d, unit_of(d.lay.type));
    p.types = code_of(b.lay.type) | code_of(d.lay.type) << 8;
    p.drows = static_cast<std::uint32_t>(d.lay.ne[1]);
    p.i64 = ix.lay.type == type_id::i64 ? 1u : 0u;
    const binding ba = r.bind(b, unit_of(b.lay.type)), bi = r.bind(ix, 4), bd = r.bind(d, unit_of(d.lay.type));
    p.aoff = ba.first;
    p.ioff = bi.first;
    p.doff = bd.first;
    r.dispatch(shader_id::set_rows, {ba, bi, bd}, p, static_cast<std::uint64_t>(b.lay.nelements()), 256);
}

// ---- row reductions (shaders/reduce.comp): one workgroup of 128 per row ---------------------

struct reduce_push {
    std::array<std::uint32_t, 4> ne, anb, dnb;
    std::uint32_t aoff, doff, op, types;
    float eps;
};
static_assert(sizeof(reduce_push) == 68);

inline std::string reduce_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    if (!a) return "needs a source";
    if (std::string why = operand_ok(*a, c, "src0", float_in); !why.empty()) return why;
    const auto& an = a->lay.ne;
    switch (d.op) {
        case op_kind::argmax:
            if (std::string why = operand_ok(d, c, "the result", {type_id::i32}); !why.empty()) return why;
            if (an[0] == 0) return "src0 has empty rows";
            if (an[2] != 1 || an[3] != 1 || d.lay.ne[0] != an[1]) return "src0 is not a matrix of the result's rows";
            return {};
        case op_kind::sum_rows:
        case op_kind::mean:
            if (std::string why = operand_ok(d, c, "the result", float_out); !why.empty()) return why;
            if (d.lay.ne[0] != 1 || d.lay.ne[1] != an[1] || d.lay.ne[2] != an[2] || d.lay.ne[3] != an[3])
                return "the result is not one value per row of src0";
            return {};
        default:  // rms_norm, norm, l2_norm
            if (std::string why = operand_ok(d, c, "the result", float_out); !why.empty()) return why;
            if (d.lay.ne != an) return "src0's shape differs from the result's";
            return {};
    }
}
inline void reduce_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    reduce_push p{};
    p.ne = u4(a.lay.ne);
    p.anb = strides(a, unit_of(a.lay.type));
    p.dnb = strides(d, unit_of(d.lay.type));
    switch (d.op) {
        case op_kind::rms_norm: p.op = 0; break;
        case op_kind::norm: p.op = 1; break;
        case op_kind::sum_rows: p.op = 2; break;
        case op_kind::mean: p.op = 3; break;
        case op_kind::l2_norm: p.op = 5; break;
        default: p.op = 4; break;  // argmax
    }
    if (p.op < 2 || p.op == 5) p.eps = d.param<graph::norm_params>().eps;
    p.types = code_of(a.lay.type) | code_of(d.lay.type) << 8;
    const binding ba = r.bind(a, unit_of(a.lay.type)), bd = r.bind(d, unit_of(d.lay.type));
    p.aoff = ba.first;
    p.doff = bd.first;
    const auto rows = static_cast<std::uint64_t>(a.lay.ne[1] * a.lay.ne[2] * a.lay.ne[3]);
    r.dispatch(shader_id::reduce, {ba, ba, bd}, p, rows * 128, 128);
}

// ---- soft_max (shaders/soft_max.comp): one workgroup of 128 per row --------------------------

struct soft_max_push {
    std::array<std::uint32_t, 4> ne, anb, mnb, dnb;
    std::uint32_t mne2, mne3, aoff, moff, doff, types, has_mask;
    float scale, m0, m1;
    std::uint32_t n_log2, alibi, has_sinks, soff, snb;
};
static_assert(sizeof(soft_max_push) == 124);

inline std::string soft_max_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* m = d.src[1];
    if (!a) return "needs a source";
    if (std::string why = operand_ok(*a, c, "src0", float_in); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", float_out); !why.empty()) return why;
    if (d.lay.ne != a->lay.ne) return "src0's shape differs from the result's";
    if (m) {
        if (std::string why = operand_ok(*m, c, "the mask", {type_id::f32, type_id::f16}); !why.empty()) return why;
        const auto &mn = m->lay.ne, &an = a->lay.ne;
        if (mn[0] != an[0] || mn[1] < an[1] || mn[2] == 0 || mn[3] == 0 || an[2] % mn[2] || an[3] % mn[3])
            return "the mask does not cover src0 (ggml's broadcast over dims 2 and 3)";
    } else if (d.param<graph::soft_max_params>().max_bias > 0.0f) {
        return "ALiBi (max_bias > 0) without a mask";
    }
    if (const node* sk = d.src[2]) {
        if (std::string why = operand_ok(*sk, c, "the sinks", {type_id::f32}); !why.empty()) return why;
        if (sk->lay.ne[0] < a->lay.ne[2]) return "fewer sinks than heads (src0's dim 2)";
    }
    return {};
}
inline void soft_max_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node* m = d.src[1];
    const auto& sp = d.param<graph::soft_max_params>();
    soft_max_push p{};
    p.ne = u4(a.lay.ne);
    p.anb = strides(a, unit_of(a.lay.type));
    p.dnb = strides(d, unit_of(d.lay.type));
    p.scale = sp.scale;
    if (sp.max_bias > 0.0f) {  // ggml's ALiBi slopes over the heads of dim 2
        const auto n_head = static_cast<std::uint32_t>(a.lay.ne[2]);
        std::uint32_t n_log2 = 1;
        while (n_log2 * 2 <= n_head) n_log2 *= 2;
        p.alibi = 1;
        p.n_log2 = n_log2;
        p.m0 = std::pow(2.0f, -sp.max_bias / static_cast<float>(n_log2));
        p.m1 = std::pow(2.0f, -(sp.max_bias / 2.0f) / static_cast<float>(n_log2));
    }
    const binding ba = r.bind(a, unit_of(a.lay.type)), bd = r.bind(d, unit_of(d.lay.type));
    binding bm = ba;
    p.mne2 = p.ne[2];
    p.mne3 = p.ne[3];
    p.mnb = p.anb;
    p.types = code_of(a.lay.type) | code_of(a.lay.type) << 4 | code_of(d.lay.type) << 8;
    if (m) {
        bm = r.bind(*m, unit_of(m->lay.type));
        p.mne2 = static_cast<std::uint32_t>(m->lay.ne[2]);
        p.mne3 = static_cast<std::uint32_t>(m->lay.ne[3]);
        p.mnb = strides(*m, unit_of(m->lay.type));
        p.types = code_of(a.lay.type) | code_of(m->lay.type) << 4 | code_of(d.lay.type) << 8;
        p.has_mask = 1;
    }
    binding bs = ba;
    if (const node* sk = d.src[2]) {
        bs = r.bind(*sk, 4);
        p.has_sinks = 1;
        p.soff = bs.first;
        p.snb = static_cast<std::uint32_t>(sk->lay.nb[0] / 4);
    }
    p.aoff = ba.first;
    p.moff = bm.first;
    p.doff = bd.first;
    const auto rows = static_cast<std::uint64_t>(a.lay.ne[1] * a.lay.ne[2] * a.lay.ne[3]);
    r.dispatch(shader_id::soft_max, {ba, bm, bd, bs}, p, rows * 128, 128);
}

// ---- rope, rope_back (shaders/rope.comp): every mode ---------------------------------------

struct rope_push {
    std::array<std::uint32_t, 4> ne, anb, dnb;
    std::uint32_t aoff, poff, pnb, doff, foff, fnb, flags, types, n_dims, sec01, sec23;
    float freq_base, freq_scale, ext_factor, corr0, corr1, mscale, sin_sign;
};
static_assert(sizeof(rope_push) == 120);

inline std::string rope_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* pos = d.src[1];
    if (!a || !pos) return "needs a source and positions";
    const auto& rp = d.param<graph::rope_params>();
    const int mode = rp.mode;
    const bool multi = (mode & graph::rope_mode_mrope) != 0;
    if (mode != graph::rope_mode_normal && mode != graph::rope_mode_neox && mode != graph::rope_mode_mrope &&
        mode != graph::rope_mode_vision && mode != graph::rope_mode_imrope)
        return "rope mode " + std::to_string(mode) + " is not one of tessera's";
    if (multi) {
        std::int64_t total = 0;
        for (int x : rp.sections) {
            if (x < 0 || x > 0xffff) return "a rope section outside 0..65535";
            total += x;
        }
        if (total == 0) return "multi-section rope with no sections";
    }
    if (std::string why = operand_ok(*a, c, "src0", float_in); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", float_out); !why.empty()) return why;
    if (std::string why = operand_ok(*pos, c, "the positions", {type_id::i32}); !why.empty()) return why;
    if (d.lay.ne != a->lay.ne) return "src0's shape differs from the result's";
    if (pos->lay.ne[0] < (multi ? 4 : 1) * a->lay.ne[2]) return "fewer positions than src0's dim 2 needs";
    if (rp.n_dims <= 0 || rp.n_dims % 2 || rp.n_dims > a->lay.ne[0]) return "n_dims is not even and in 1..ne0";
    if (mode == graph::rope_mode_vision && 2 * rp.n_dims != a->lay.ne[0]) return "vision rope needs n_dims = ne0 / 2";
    if (const node* ff = d.src[2]) {
        if (std::string why = operand_ok(*ff, c, "the frequency factors", {type_id::f32}); !why.empty()) return why;
        if (ff->lay.ne[0] < (mode == graph::rope_mode_vision ? rp.n_dims : rp.n_dims / 2)) return "fewer frequency factors than pairs";
    }
    return {};
}
inline void rope_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node& pos = *d.src[1];
    const node* ff = d.src[2];
    const auto& rp = d.param<graph::rope_params>();
    rope_push p{};
    p.ne = u4(a.lay.ne);
    p.anb = strides(a, unit_of(a.lay.type));
    p.dnb = strides(d, unit_of(d.lay.type));
    p.pnb = static_cast<std::uint32_t>(pos.lay.nb[0] / 4);
    p.types = code_of(a.lay.type) | code_of(d.lay.type) << 8;
    p.n_dims = static_cast<std::uint32_t>(rp.n_dims);
    const int mode = rp.mode;
    p.flags = (mode != graph::rope_mode_normal ? 1u : 0u) | (ff ? 2u : 0u) | static_cast<std::uint32_t>(mode) << 8;
    const auto sec = [&](std::size_t i) { return static_cast<std::uint32_t>(rp.sections[i]); };
    p.sec01 = sec(0) | sec(1) << 16;
    p.sec23 = sec(2) | sec(3) << 16;
    p.freq_base = rp.freq_base;
    p.freq_scale = rp.freq_scale;
    p.ext_factor = rp.ext_factor;
    // YaRN's correction dims and magnitude scale, as the CPU computes them
    const auto corr = [&](float beta) {
        return static_cast<float>(rp.n_dims) * std::log(static_cast<float>(rp.n_ctx_orig) / (beta * 2.f * 3.14159265358979323846f)) /
               (2.f * std::log(rp.freq_base));
    };
    p.corr0 = std::max(0.f, std::floor(corr(rp.beta_fast)));
    p.corr1 = std::min(static_cast<float>(rp.n_dims - 1), std::ceil(corr(rp.beta_slow)));
    p.mscale = rp.attn_factor * (rp.ext_factor != 0.f ? 1.f + 0.1f * std::log(1.f / rp.freq_scale) : 1.f);
    p.sin_sign = d.op == op_kind::rope_back ? -1.f : 1.f;
    const binding ba = r.bind(a, unit_of(a.lay.type)), bp = r.bind(pos, 4), bd = r.bind(d, unit_of(d.lay.type));
    binding bf = ba;
    if (ff) {
        bf = r.bind(*ff, 4);
        p.foff = bf.first;
        p.fnb = static_cast<std::uint32_t>(ff->lay.nb[0] / 4);
    }
    p.aoff = ba.first;
    p.poff = bp.first;
    p.doff = bd.first;
    r.dispatch(shader_id::rope, {ba, bp, bd, bf}, p, static_cast<std::uint64_t>(d.lay.nelements()), 256);
}

// ---- mul_mat, mul_mat_id (shaders/mul_mat.comp; common.glsl decodes the weights) ---------

// The weight types common.glsl's load_a_row decodes.
inline constexpr std::initializer_list<type_id> weight_types = {type_id::f32,  type_id::f16,  type_id::bf16, type_id::q4_0,
                                                                type_id::q8_0, type_id::q4_K, type_id::q6_K};
// Fewer columns of b than this run the matvec build (a workgroup per result), more the
// tiled one (64 x 64 tiles).
inline constexpr std::int64_t mul_mat_tiled_min_cols = 8;

struct mul_mat_push {
    std::array<std::uint32_t, 4> ne, anb, bnb, dnb;
    std::uint32_t K, r2, r3, aoff, boff, doff, types, ioff, inb0, inb1;
};
static_assert(sizeof(mul_mat_push) == 104);

// a's rows: a block type's rows are whole blocks, its nb0 the block size; a float a may
// have any element stride (a permuted view).
inline std::string weight_ok(const node& a, const context& c, const char* role) {
    if (std::string why = operand_ok(a, c, role, weight_types); !why.empty()) return why;
    if (is_quantized(a.lay.type) && a.lay.nb[0] != static_cast<std::size_t>(type_size(a.lay.type)))
        return std::string(role) + " is a " + type_str(a) + " view whose blocks are not contiguous";
    return {};
}

inline std::string mul_mat_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* b = d.src[1];
    if (!a || !b) return "needs two sources";
    if (std::string why = weight_ok(*a, c, "src0"); !why.empty()) return why;
    if (std::string why = operand_ok(*b, c, "src1", float_in); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", {type_id::f32}); !why.empty()) return why;
    const auto &an = a->lay.ne, &bn = b->lay.ne, &dn = d.lay.ne;
    if (an[0] != bn[0] || dn[0] != an[1] || dn[1] != bn[1] || dn[2] != bn[2] || dn[3] != bn[3]) return "mul_mat shapes do not match";
    if (an[2] == 0 || an[3] == 0 || bn[2] % an[2] || bn[3] % an[3]) return "src0 does not broadcast over src1's dims 2 and 3";
    return {};
}
// What mul_mat and mul_mat_id set alike: extents, strides, K, types, the three bindings.
struct mul_mat_setup {
    mul_mat_push p{};
    binding ba, bb, bd;
};
inline mul_mat_setup mul_mat_common(recorder& r, const node& a, const node& b, const node& d) {
    mul_mat_setup m;
    const std::size_t ua = unit_of(a.lay.type), ub = unit_of(b.lay.type);
    m.p.ne = u4(d.lay.ne);
    m.p.anb = strides(a, ua);
    m.p.bnb = strides(b, ub);
    m.p.dnb = strides(d, 4);
    m.p.K = static_cast<std::uint32_t>(a.lay.ne[0]);
    m.p.types = code_of(a.lay.type) | code_of(b.lay.type) << 4;
    m.ba = r.bind(a, ua), m.bb = r.bind(b, ub), m.bd = r.bind(d, 4);
    m.p.aoff = m.ba.first;
    m.p.boff = m.bb.first;
    m.p.doff = m.bd.first;
    return m;
}

inline void mul_mat_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    auto [p, ba, bb, bd] = mul_mat_common(r, a, b, d);
    p.r2 = static_cast<std::uint32_t>(b.lay.ne[2] / a.lay.ne[2]);
    p.r3 = static_cast<std::uint32_t>(b.lay.ne[3] / a.lay.ne[3]);
    const auto& n = d.lay.ne;
    if (n[1] < mul_mat_tiled_min_cols) {
        r.dispatch(shader_id::mul_mat_vec, {ba, bb, bd}, p, static_cast<std::uint64_t>(d.lay.nelements()) * 64, 64);
    } else {
        const auto tiles = static_cast<std::uint64_t>((n[0] + 63) / 64 * ((n[1] + 63) / 64) * n[2] * n[3]);
        r.dispatch(shader_id::mul_mat_tiled, {ba, bb, bd}, p, tiles * 256, 256);
    }
}

inline std::string mul_mat_id_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* b = d.src[1];
    const node* ids = d.src[2];
    if (!a || !b || !ids) return "needs three sources (experts, b, ids)";
    if (std::string why = weight_ok(*a, c, "the experts"); !why.empty()) return why;
    if (std::string why = operand_ok(*b, c, "b", float_in); !why.empty()) return why;
    if (std::string why = operand_ok(*ids, c, "ids", {type_id::i32}); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", {type_id::f32}); !why.empty()) return why;
    const auto &an = a->lay.ne, &bn = b->lay.ne, &in = ids->lay.ne, &dn = d.lay.ne;
    if (an[0] != bn[0] || dn[0] != an[1] || dn[1] != in[0] || dn[2] != bn[2] || in[1] != bn[2] || bn[1] == 0 || in[0] % bn[1])
        return "mul_mat_id shapes do not match";
    return {};
}
inline void mul_mat_id_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const node& ids = *d.src[2];
    auto [p, ba, bb, bd] = mul_mat_common(r, a, b, d);
    p.r2 = static_cast<std::uint32_t>(a.lay.ne[2]);  // experts
    p.r3 = static_cast<std::uint32_t>(b.lay.ne[1]);
    p.inb0 = static_cast<std::uint32_t>(ids.lay.nb[0] / 4);
    p.inb1 = static_cast<std::uint32_t>(ids.lay.nb[1] / 4);
    const binding bi = r.bind(ids, 4);
    p.ioff = bi.first;
    r.dispatch(shader_id::mul_mat_id, {ba, bb, bd, bi}, p, static_cast<std::uint64_t>(d.lay.nelements()) * 64, 64);
}

// ---- flash_attn_ext (shaders/flash_attn.comp): a workgroup of 64 per query row -------------

struct flash_attn_push {
    std::uint32_t D, Dv, nkv, nq, H, B, rh, rb;
    std::uint32_t q1, q2, q3, k1, k2, k3, v1, v2, v3, m1, m2, m3, mne2, mne3;
    std::uint32_t qoff, koff, voff, moff, soff, doff, types;
    float scale, max_bias, softcap;
};
static_assert(sizeof(flash_attn_push) == 128);

inline constexpr std::int64_t flash_attn_max_head = 512;  // the shader's shared q row and 8 dims per invocation

inline std::string flash_attn_supports(const node& d, const context& c) {
    const node* q = d.src[0];
    const node* k = d.src[1];
    const node* v = d.src[2];
    const node* m = d.src[3];
    const node* sinks = d.src[4];
    if (!q || !k || !v) return "needs q, k and v";
    if (c.bindings() < 6)
        return "needs 6 storage buffers per shader stage, " + c.name() + " offers " + std::to_string(c.bindings());
    if (std::string why = operand_ok(*q, c, "q", {type_id::f32}); !why.empty()) return why;
    if (std::string why = operands_ok(c, {{k, "k"}, {v, "v"}}, float_in); !why.empty()) return why;
    if (std::string why = operand_ok(d, c, "the result", {type_id::f32}); !why.empty()) return why;
    if (m)
        if (std::string why = operand_ok(*m, c, "the mask", {type_id::f32, type_id::f16}); !why.empty()) return why;
    if (sinks)
        if (std::string why = operand_ok(*sinks, c, "the sinks", {type_id::f32}); !why.empty()) return why;
    for (auto [t, role] : {std::pair{q, "q"}, std::pair{k, "k"}, std::pair{v, "v"}, std::pair{m, "the mask"}})
        if (t && t->lay.nb[0] != static_cast<std::size_t>(type_size(t->lay.type))) return std::string(role) + "'s rows are not contiguous";
    if (q->lay.ne[0] > flash_attn_max_head || v->lay.ne[0] > flash_attn_max_head)
        return "head sizes above " + std::to_string(flash_attn_max_head) + " (the shader's limit)";
    if (!d.lay.is_contiguous()) return "the result is not contiguous";
    return {};
}
inline void flash_attn_record(recorder& r, const node& d) {
    const node& q = *d.src[0];
    const node& k = *d.src[1];
    const node& v = *d.src[2];
    const node* m = d.src[3];
    const node* sinks = d.src[4];
    const auto& fp = d.param<graph::flash_attn_params>();
    flash_attn_push p{};
    const std::size_t uk = unit_of(k.lay.type), uv = unit_of(v.lay.type);
    auto u = [](std::size_t x) { return static_cast<std::uint32_t>(x); };
    p.D = u(static_cast<std::size_t>(q.lay.ne[0]));
    p.Dv = u(static_cast<std::size_t>(v.lay.ne[0]));
    p.nkv = u(static_cast<std::size_t>(k.lay.ne[1]));
    p.nq = u(static_cast<std::size_t>(q.lay.ne[1]));
    p.H = u(static_cast<std::size_t>(q.lay.ne[2]));
    p.B = u(static_cast<std::size_t>(q.lay.ne[3]));
    p.rh = u(static_cast<std::size_t>(q.lay.ne[2] / k.lay.ne[2]));
    p.rb = u(static_cast<std::size_t>(q.lay.ne[3] / k.lay.ne[3]));
    p.q1 = u(q.lay.nb[1] / 4), p.q2 = u(q.lay.nb[2] / 4), p.q3 = u(q.lay.nb[3] / 4);
    p.k1 = u(k.lay.nb[1] / uk), p.k2 = u(k.lay.nb[2] / uk), p.k3 = u(k.lay.nb[3] / uk);
    p.v1 = u(v.lay.nb[1] / uv), p.v2 = u(v.lay.nb[2] / uv), p.v3 = u(v.lay.nb[3] / uv);
    p.mne2 = p.mne3 = 1;
    p.scale = fp.scale;
    p.max_bias = fp.max_bias;
    p.softcap = fp.logit_softcap;
    p.types = code_of(k.lay.type) | code_of(v.lay.type) << 4;
    const binding bq = r.bind(q, 4), bk = r.bind(k, uk), bd = r.bind(d, 4), bv = r.bind(v, uv);
    binding bm = bq, bs = bq;
    if (m) {
        const std::size_t um = unit_of(m->lay.type);
        bm = r.bind(*m, um);
        p.m1 = u(m->lay.nb[1] / um), p.m2 = u(m->lay.nb[2] / um), p.m3 = u(m->lay.nb[3] / um);
        p.mne2 = u(static_cast<std::size_t>(m->lay.ne[2]));
        p.mne3 = u(static_cast<std::size_t>(m->lay.ne[3]));
        p.moff = bm.first;
        p.types |= code_of(m->lay.type) << 8 | 1u << 12;
    }
    if (sinks) {
        bs = r.bind(*sinks, 4);
        p.soff = bs.first;
        p.types |= 1u << 13;
    }
    p.qoff = bq.first;
    p.koff = bk.first;
    p.voff = bv.first;
    p.doff = bd.first;
    const auto rows = static_cast<std::uint64_t>(q.lay.ne[1] * q.lay.ne[2] * q.lay.ne[3]);
    r.dispatch(shader_id::flash_attn, {bq, bk, bd, bv, bm, bs}, p, rows * 64, 64);
}

}  // namespace detail_ops

struct op_entry {
    op_kind op;
    std::string (*supports)(const node&, const context&);
    void (*record)(recorder&, const node&);
    op_cost cost;
};

// The table. Costs per element of the result, in bytes moved (sa, sb, sd: the element
// sizes of src0, src1 and the result, 4 for f32, 2 for f16 and bf16) and flops; a
// broadcast operand is counted as read once per element (a GPU serves the repeats from
// cache). docs/backends.md lists the same.
inline const std::array<op_entry, 37>& op_table() {
    using namespace detail_ops;
    static const std::array<op_entry, 37> t{{
        {op_kind::add, binary_supports, binary_record, {"sa + sb + sd", "1"}},
        {op_kind::sub, binary_supports, binary_record, {"sa + sb + sd", "1"}},
        {op_kind::mul, binary_supports, binary_record, {"sa + sb + sd", "1"}},
        {op_kind::div, binary_supports, binary_record, {"sa + sb + sd", "1"}},
        {op_kind::add1, binary_supports, binary_record, {"sa + sd (b: one element)", "1"}},
        {op_kind::scale, scale_supports, scale_record, {"sa + sd", "2"}},
        {op_kind::unary, unary_supports, unary_record, {"sa + sd", "1 (relu, neg, abs) to ~20 (gelu, gelu_erf)"}},
        {op_kind::sqr, math_supports, math_record, {"sa + sd", "1"}},
        {op_kind::sqrt, math_supports, math_record, {"sa + sd", "1 (a special function)"}},
        {op_kind::log, math_supports, math_record, {"sa + sd", "1 (a special function)"}},
        {op_kind::sin, math_supports, math_record, {"sa + sd", "1 (a special function)"}},
        {op_kind::cos, math_supports, math_record, {"sa + sd", "1 (a special function)"}},
        {op_kind::clamp, math_supports, math_record, {"sa + sd", "2"}},
        {op_kind::leaky_relu, math_supports, math_record, {"sa + sd", "2"}},
        {op_kind::fill, math_supports, math_record, {"sd", "0"}},
        {op_kind::diag_mask_inf, math_supports, diag_mask_record, {"sa + sd", "1"}},
        {op_kind::diag_mask_zero, math_supports, diag_mask_record, {"sa + sd", "1"}},
        {op_kind::glu, glu_supports, glu_record, {"2 sa + sd (one source: its two halves)", "~5 (reglu) to ~25 (geglu_erf)"}},
        {op_kind::cpy, copy_supports, copy_record, {"sa + sd (sd of q4_0 18/32, q8_0 34/32)", "0 (~4 quantizing)"}},
        {op_kind::dup, copy_supports, copy_record, {"sa + sd", "0"}},
        {op_kind::cont, copy_supports, copy_record, {"sa + sd", "0"}},
        {op_kind::repeat, repeat_supports, repeat_record, {"sa + sd", "0"}},
        {op_kind::concat, concat_supports, concat_record, {"sa + sd", "0"}},
        {op_kind::get_rows, get_rows_supports, get_rows_record, {"sa + 4 (its index) + 4; q4_0 18/32, q8_0 34/32 for sa", "0 (1 quantized)"}},
        {op_kind::set_rows, set_rows_supports, set_rows_record,
         {"sa + 4 (or 8, its index) + sd, per element of src0 (sd of q4_0 18/32, q8_0 34/32)", "0 (~4 quantizing)"}},
        {op_kind::rms_norm, reduce_supports, reduce_record, {"2 sa + sd (the row is read twice)", "3"}},
        {op_kind::norm, reduce_supports, reduce_record, {"3 sa + sd", "5"}},
        {op_kind::l2_norm, reduce_supports, reduce_record, {"2 sa + sd", "3"}},
        {op_kind::sum_rows, reduce_supports, reduce_record, {"ne0 sa + sd", "ne0"}},
        {op_kind::mean, reduce_supports, reduce_record, {"ne0 sa + sd", "ne0 + 1"}},
        {op_kind::argmax, reduce_supports, reduce_record, {"ne0 sa + 4", "ne0 (compares)"}},
        {op_kind::soft_max, soft_max_supports, soft_max_record, {"3 (sa + sm) + sd (three passes; sm: the mask's, 0 without; sinks: 4 per row)", "~12"}},
        {op_kind::rope, rope_supports, rope_record, {"2 sa + 4 (its position) + sd", "~25 (pow, sin, cos, the rotation)"}},
        {op_kind::rope_back, rope_supports, rope_record, {"2 sa + 4 + sd", "~25"}},
        {op_kind::mul_mat, mul_mat_supports, mul_mat_record,
         {"matvec: k (qa + sb) + 4; tiled: k (qa + sb) / 64 + 4 (qa: bytes per weight, 4/2/2 f32/f16/bf16, "
          "18/32 q4_0, 34/32 q8_0, 144/256 q4_K, 210/256 q6_K)",
          "2k (+ ~2-6 per weight decoded: the matvec decodes each weight once per column, the tile once per 64)"}},
        {op_kind::mul_mat_id, mul_mat_id_supports, mul_mat_id_record, {"k (qa + sb) + 4 + 4 (the id)", "2k"}},
        {op_kind::flash_attn_ext, flash_attn_supports, flash_attn_record,
         {"n_kv (Dk sk + Dv sv + sm) / Dv + 4, per element of the result (K, V and the mask read once per query row)",
          "n_kv (2 Dk + 2 Dv + ~20) / Dv"}},
    }};
    return t;
}

inline const op_entry* find_op(op_kind k) {
    for (const op_entry& e : op_table())
        if (e.op == k) return &e;
    return nullptr;
}

// The ops of the table, "add, sub, ..., mul_mat".
inline std::string implemented_list() {
    std::string r;
    for (const op_entry& e : op_table()) r += (r.empty() ? "" : ", ") + std::string(graph::op_name(e.op));
    return r;
}

// Ops refused on request, a comma-separated list of op names: TESSERA_VULKAN_REFUSE at
// start-up, or refuse_ops() (set it before schedulers place graphs). For narrowing a
// device bug down to an op, and for tests that need the CPU fallback of a graph the
// device could compute whole.
inline std::string& refused_ops_storage() {
    static std::string s = [] {
        const char* e = std::getenv("TESSERA_VULKAN_REFUSE");
        return std::string(e ? e : "");
    }();
    return s;
}
inline void refuse_ops(std::string list) { refused_ops_storage() = std::move(list); }
inline const std::string& refused_ops() { return refused_ops_storage(); }
inline bool refused_on_request(op_kind k) {
    const std::string& l = refused_ops_storage();
    const std::string_view name = graph::op_name(k);
    for (std::size_t i = 0; i <= l.size();) {
        std::size_t j = l.find(',', i);
        if (j == std::string::npos) j = l.size();
        if (std::string_view(l).substr(i, j - i) == name) return true;
        i = j + 1;
    }
    return false;
}

// "" when the device computes x, else why not (naming the op).
inline std::string unsupported_reason(const node& x, const context& c) {
    if (graph::op_is_view(x.op) || x.op == op_kind::none) return {};
    if (refused_on_request(x.op)) return "op " + std::string(graph::op_name(x.op)) + " is refused on request (TESSERA_VULKAN_REFUSE / refuse_ops)";
    const op_entry* e = find_op(x.op);
    if (!e)
        return "op " + std::string(graph::op_name(x.op)) +
               " is not implemented by the Vulkan device (it computes " + implemented_list() + ")";
    if (std::string why = e->supports(x, c); !why.empty()) return std::string(graph::op_name(x.op)) + ": " + why;
    return {};
}

}  // namespace backend::vulkan
TESSERA_END_NAMESPACE

#endif  // TESSERA_VULKAN
