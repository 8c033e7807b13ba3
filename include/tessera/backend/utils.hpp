// Backend utilities (ggml-backend.h "utils" and ggml-alloc's alloc_ctx_tensors):
//   alloc_tensors         place tensors without memory in one new buffer of a buffer type
//   graph_copy            a deep copy of a graph whose tensors live in a backend's buffer,
//                         with the data of every tensor that had memory copied over
//   compare_graph_backend run one graph on two backends node by node and call back with
//                         both results of every node
//   tensor_to_f32, nmse   read a tensor (any buffer) as floats; normalized mean squared error
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/graph.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

// Every non-view tensor of `tensors` that has no memory gets a slot (alloc_size rounded
// up to the alignment) in one new buffer of bt, tagged with usage u. Empty handle when
// there is nothing to place.
inline any_buffer alloc_tensors(std::span<node* const> tensors, const any_buffer_type& bt, buffer_usage u = buffer_usage::any) {
    const std::size_t align = bt.alignment();
    std::size_t total = 0;
    std::vector<std::pair<node*, std::size_t>> slots;
    for (node* t : tensors) {
        if (!t || t->is_view() || t->data) continue;
        slots.emplace_back(t, total);
        const std::size_t n = std::max<std::size_t>(bt.alloc_size(*t), 1);
        total += (n + align - 1) / align * align;
    }
    if (slots.empty()) return {};
    any_buffer buf = bt.alloc_buffer(total);
    buf.set_usage(u);
    for (auto& [t, off] : slots) tensor_alloc(buf, *t, buf.base() + off);
    return buf;
}

// All tensors of a (no_alloc) context that have no memory (ggml_backend_alloc_ctx_tensors_from_buft).
inline any_buffer alloc_ctx_tensors(graph::context& ctx, const any_buffer_type& bt, buffer_usage u = buffer_usage::any) {
    std::vector<node*> all;
    for (std::size_t i = 0; i < ctx.size(); ++i) all.push_back(&ctx[i]);
    return alloc_tensors(all, bt, u);
}

struct graph_copy_result {
    std::unique_ptr<graph::context> ctx;
    any_buffer buffer;
    std::vector<node*> nodes, leafs;
    std::unordered_map<const node*, node*> map;  // original -> copy
    graph_view view() const noexcept { return graph_view(std::span<node* const>(nodes), std::span<node* const>(leafs)); }
};

// A copy of g on backend b: same ops, parameters, names and flags; every non-view tensor in
// one buffer of b's default buffer type; data copied from every tensor that had memory.
inline graph_copy_result graph_copy(const any_backend& b, const graph::cgraph& g) {
    graph_copy_result r;
    r.ctx = std::make_unique<graph::context>(graph::context_options{true, 64, std::size_t{1} << 20});
    auto dup = [&](const node* o) {
        node* c = r.ctx->new_op(o->lay, o->op, o->params, {});
        c->name = o->name;
        c->flags = o->flags;
        for (std::size_t k = 0; k < o->src.size(); ++k)
            if (const node* s = o->src[k]) {
                const auto it = r.map.find(s);
                if (it == r.map.end()) fail(errc::invalid_argument, "graph_copy: source of '" + o->name + "' is not in the graph");
                c->src[k] = it->second;
            }
        if (o->view_src) {
            const auto it = r.map.find(o->view_src);
            if (it == r.map.end()) fail(errc::invalid_argument, "graph_copy: view root of '" + o->name + "' is not in the graph");
            c->view_src = it->second;
            c->view_offs = o->view_offs;
        }
        r.map[o] = c;
        return c;
    };
    for (node* l : g.leafs()) r.leafs.push_back(dup(l));
    for (node* n : g.nodes()) r.nodes.push_back(dup(n));
    std::vector<node*> all(r.leafs);
    all.insert(all.end(), r.nodes.begin(), r.nodes.end());
    r.buffer = alloc_tensors(all, b.default_buffer_type());
    for (const auto& [o, c] : r.map)
        if (!o->is_view() && o->bytes()) tensor_copy(*o, *c);
    return r;
}

// Reads t (in any buffer) as floats in logical order (dim 0 fastest). f32, f16, bf16, i32.
inline std::vector<float> tensor_to_f32(const node& t) {
    const std::size_t nb = t.lay.nbytes();
    std::vector<std::byte> raw(nb);
    tensor_get(t, raw.data(), 0, nb);
    std::vector<float> out;
    out.reserve(static_cast<std::size_t>(t.lay.nelements()));
    const auto& ne = t.lay.ne;
    for (std::int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (std::int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (std::int64_t i0 = 0; i0 < ne[0]; ++i0) {
                    const std::byte* p = raw.data() + t.lay.offset_of(i0, i1, i2, i3);
                    switch (t.lay.type) {
                        case type_id::f32: {
                            float v;
                            std::memcpy(&v, p, 4);
                            out.push_back(v);
                            break;
                        }
                        case type_id::f16: {
                            std::uint16_t h;
                            std::memcpy(&h, p, 2);
                            out.push_back(f16::from_bits(h).to_float());
                            break;
                        }
                        case type_id::bf16: {
                            std::uint16_t h;
                            std::memcpy(&h, p, 2);
                            out.push_back(bf16::from_bits(h).to_float());
                            break;
                        }
                        case type_id::i32: {
                            std::int32_t v;
                            std::memcpy(&v, p, 4);
                            out.push_back(static_cast<float>(v));
                            break;
                        }
                        default:
                            fail(errc::unsupported, "tensor_to_f32: " + detail::tensor_desc(t) + " is not f32, f16, bf16 or i32");
                    }
                }
    return out;
}

// sum (a - b)^2 / sum b^2 (b the reference); 0 when both are all zero.
inline double nmse(std::span<const float> a, std::span<const float> b) {
    if (a.size() != b.size()) fail(errc::shape_mismatch, "nmse: " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " values");
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
        err += d * d;
        ref += static_cast<double>(b[i]) * static_cast<double>(b[i]);
    }
    if (ref == 0) return err == 0 ? 0.0 : err;
    return err / ref;
}

// Runs g on b1 and on b2 (each on its own copy of g), node by node; for every node that
// is not a pure view, calls cb(index, node on b1, node on b2), stopping when cb returns
// false. Returns whether every node was visited. (ggml runs the original graph on b1;
// copying to both lets the original live anywhere.)
inline bool compare_graph_backend(const any_backend& b1, const any_backend& b2, const graph::cgraph& g,
                                  const std::function<bool(std::size_t, node&, node&)>& cb) {
    graph_copy_result c1 = graph_copy(b1, g);
    graph_copy_result c2 = graph_copy(b2, g);
    for (std::size_t i = 0; i < c1.nodes.size(); ++i) {
        node* n1 = c1.nodes[i];
        node* n2 = c2.nodes[i];
        b1.graph_compute(graph_view(std::span<node* const>(&c1.nodes[i], 1)));
        b2.graph_compute(graph_view(std::span<node* const>(&c2.nodes[i], 1)));
        b1.synchronize();
        b2.synchronize();
        using graph::op_kind;
        if (n1->op == op_kind::view || n1->op == op_kind::reshape || n1->op == op_kind::permute || n1->op == op_kind::transpose)
            continue;
        if (!cb(i, *n1, *n2)) return false;
    }
    return true;
}

}  // namespace backend
TESSERA_END_NAMESPACE
