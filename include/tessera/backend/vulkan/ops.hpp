// The Vulkan device's op table: one row per op it computes, {op, supports, record, cost}.
// supports(node, context) returns "" or the reason it refuses; record(recorder, node) binds
// the operands and dispatches the shader; cost is what one element of the result reads,
// writes and computes (docs/backends.md lists it, to judge a GPU run against its
// bandwidth). Every op without a row is refused by name, so the scheduler keeps it on the
// CPU. To add an op: a shader (shaders/*.comp, tools/gen_spirv.py), a row here, a case in
// tests/backend/vulkan/test_vulkan.cpp.
#pragma once

#if defined(TESSERA_VULKAN) && TESSERA_VULKAN

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
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
// minStorageBufferOffsetAlignment; the shader adds `first` (in elements) to its indices.
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

    // The binding of f32 tensor t (elements of 4 bytes).
    binding bind(const node& t) const {
        const location l = locate_(t);
        const std::size_t align = static_cast<std::size_t>(c_.limits().minStorageBufferOffsetAlignment);
        const std::size_t base = align > 1 ? l.offset / align * align : l.offset;
        const std::size_t rem = l.offset - base;
        if (rem % 4)
            fail(errc::invalid_argument, c_.name() + ": " + detail::tensor_desc(t) + " starts at byte " + std::to_string(l.offset) +
                                             ", not at a multiple of 4");
        const std::size_t range = std::min<std::size_t>((rem + t.lay.nbytes() + 3) / 4 * 4, l.block->size - base);
        return binding{l.block->buf, base, range, static_cast<std::uint32_t>(rem / 4)};
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
        for (std::uint32_t i = 0; i < max_bindings; ++i) {
            const binding& x = b[i].buf ? b[i] : b[0];
            infos[i] = VkDescriptorBufferInfo{x.buf, x.offset, x.range};
            w[i] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
            w[i].dstSet = set;
            w[i].dstBinding = i;
            w[i].descriptorCount = 1;
            w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            w[i].pBufferInfo = &infos[i];
        }
        f.vkUpdateDescriptorSets(c_.device(), max_bindings, w.data(), 0, nullptr);
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
inline std::array<std::uint32_t, 4> strides(const node& t) {
    return {static_cast<std::uint32_t>(t.lay.nb[0] / 4), static_cast<std::uint32_t>(t.lay.nb[1] / 4),
            static_cast<std::uint32_t>(t.lay.nb[2] / 4), static_cast<std::uint32_t>(t.lay.nb[3] / 4)};
}
inline std::string type_str(const node& t) { return std::string(type_name(t.lay.type)); }

// The checks every f32 operand passes: f32, strides whole elements, and its bytes fit one
// binding (maxStorageBufferRange) with indices in 32 bits.
inline std::string operand_ok(const node& t, const context& c, const char* role) {
    if (t.lay.type != type_id::f32) return std::string(role) + " is " + type_str(t) + ", the Vulkan device takes f32 only";
    for (int i = 0; i < 4; ++i)
        if (t.lay.nb[static_cast<std::size_t>(i)] % 4)
            return std::string(role) + " has a stride that is not a whole number of f32 elements";
    if (t.lay.nbytes() + c.alignment() > c.max_binding())
        return std::string(role) + " spans " + std::to_string(t.lay.nbytes()) + " bytes, more than one binding (maxStorageBufferRange " +
               std::to_string(c.max_binding()) + ")";
    if (t.lay.nelements() >= (std::int64_t{1} << 32)) return std::string(role) + " has 2^32 or more elements";
    return {};
}

struct binary_push {
    std::array<std::uint32_t, 4> ne, bne, anb, bnb, dnb;
    std::uint32_t aoff, boff, doff, op;
    float s, t;
};
static_assert(sizeof(binary_push) == 104);

inline std::string binary_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* b = d.src[1];
    if (!a || !b) return "needs two sources";
    for (auto [t, role] : {std::pair{&d, "the result"}, std::pair{a, "src0"}, std::pair{b, "src1"}})
        if (std::string why = operand_ok(*t, c, role); !why.empty()) return why;
    for (std::size_t i = 0; i < 4; ++i) {
        if (a->lay.ne[i] != d.lay.ne[i]) return "src0's shape differs from the result's";
        if (b->lay.ne[i] == 0 || d.lay.ne[i] % b->lay.ne[i]) return "src1 does not repeat into the result";
    }
    return {};
}
inline void binary_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    binary_push p{};
    p.ne = u4(d.lay.ne);
    p.anb = strides(a);
    p.dnb = strides(d);
    switch (d.op) {
        case op_kind::add: p.op = 0; break;
        case op_kind::sub: p.op = 1; break;
        case op_kind::mul: p.op = 2; break;
        case op_kind::div: p.op = 3; break;
        default: {  // scale
            p.op = 4;
            const auto& sp = d.param<graph::scale_params>();
            p.s = sp.s;
            p.t = sp.b;
        }
    }
    const binding ba = r.bind(a), bd = r.bind(d);
    binding bb = ba;
    p.bne = p.ne;
    p.bnb = p.anb;
    if (p.op != 4) {
        const node& b = *d.src[1];
        bb = r.bind(b);
        p.bne = u4(b.lay.ne);
        p.bnb = strides(b);
    }
    p.aoff = ba.first;
    p.boff = bb.first;
    p.doff = bd.first;
    r.dispatch(shader_id::binary, {ba, bb, bd}, p, static_cast<std::uint64_t>(d.lay.nelements()), 256);
}

inline std::string scale_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    if (!a) return "needs a source";
    for (auto [t, role] : {std::pair{&d, "the result"}, std::pair{a, "src0"}})
        if (std::string why = operand_ok(*t, c, role); !why.empty()) return why;
    if (a->lay.ne != d.lay.ne) return "src0's shape differs from the result's";
    return {};
}

struct mul_mat_push {
    std::array<std::uint32_t, 4> ne, anb, bnb, dnb;
    std::uint32_t K, r2, r3, aoff, boff, doff;
};
static_assert(sizeof(mul_mat_push) == 88);

inline std::string mul_mat_supports(const node& d, const context& c) {
    const node* a = d.src[0];
    const node* b = d.src[1];
    if (!a || !b) return "needs two sources";
    if (a->lay.type != type_id::f32 || b->lay.type != type_id::f32)
        return "mul_mat " + type_str(*a) + " x " + type_str(*b) + " (the Vulkan device has f32 x f32 only)";
    for (auto [t, role] : {std::pair{&d, "the result"}, std::pair{a, "src0"}, std::pair{b, "src1"}})
        if (std::string why = operand_ok(*t, c, role); !why.empty()) return why;
    const auto &an = a->lay.ne, &bn = b->lay.ne, &dn = d.lay.ne;
    if (an[0] != bn[0] || dn[0] != an[1] || dn[1] != bn[1] || dn[2] != bn[2] || dn[3] != bn[3]) return "mul_mat shapes do not match";
    if (an[2] == 0 || an[3] == 0 || bn[2] % an[2] || bn[3] % an[3]) return "src0 does not broadcast over src1's dims 2 and 3";
    return {};
}
inline void mul_mat_record(recorder& r, const node& d) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    mul_mat_push p{};
    p.ne = u4(d.lay.ne);
    p.anb = strides(a);
    p.bnb = strides(b);
    p.dnb = strides(d);
    p.K = static_cast<std::uint32_t>(a.lay.ne[0]);
    p.r2 = static_cast<std::uint32_t>(b.lay.ne[2] / a.lay.ne[2]);
    p.r3 = static_cast<std::uint32_t>(b.lay.ne[3] / a.lay.ne[3]);
    const binding ba = r.bind(a), bb = r.bind(b), bd = r.bind(d);
    p.aoff = ba.first;
    p.boff = bb.first;
    p.doff = bd.first;
    r.dispatch(shader_id::mul_mat_f32, {ba, bb, bd}, p, static_cast<std::uint64_t>(d.lay.nelements()), 64);
}

}  // namespace detail_ops

struct op_entry {
    op_kind op;
    std::string (*supports)(const node&, const context&);
    void (*record)(recorder&, const node&);
    op_cost cost;
};

// The table. Costs per element of the result, f32: a binary op reads a and b and writes d
// (12 bytes, 1 flop; a broadcast b is re-read from cache); scale reads a, writes d (8 bytes,
// 2 flops); mul_mat reads a row of a and a row of b (8k bytes from memory in this simple
// shader, no reuse) and writes 4, 2k flops.
inline const std::array<op_entry, 6>& op_table() {
    using namespace detail_ops;
    static const std::array<op_entry, 6> t{{
        {op_kind::add, binary_supports, binary_record, {"12", "1"}},
        {op_kind::sub, binary_supports, binary_record, {"12", "1"}},
        {op_kind::mul, binary_supports, binary_record, {"12", "1"}},
        {op_kind::div, binary_supports, binary_record, {"12", "1"}},
        {op_kind::scale, scale_supports, binary_record, {"8", "2"}},
        {op_kind::mul_mat, mul_mat_supports, mul_mat_record, {"8k + 4", "2k"}},
    }};
    return t;
}

inline const op_entry* find_op(op_kind k) {
    for (const op_entry& e : op_table())
        if (e.op == k) return &e;
    return nullptr;
}

// "" when the device computes x, else why not (naming the op).
inline std::string unsupported_reason(const node& x, const context& c) {
    if (graph::op_is_view(x.op) || x.op == op_kind::none) return {};
    const op_entry* e = find_op(x.op);
    if (!e)
        return "op " + std::string(graph::op_name(x.op)) +
               " is not implemented by the Vulkan device (it computes add, sub, mul, div, scale and mul_mat in f32)";
    if (std::string why = e->supports(x, c); !why.empty()) return std::string(graph::op_name(x.op)) + ": " + why;
    return {};
}

}  // namespace backend::vulkan
TESSERA_END_NAMESPACE

#endif  // TESSERA_VULKAN
