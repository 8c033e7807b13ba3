// backend: a stream that computes graphs on a device (ggml_backend). Several streams
// may share a device.
//
// Requirements of a model S (s: S&, cs: const S&, g: graph_view, x: node&, cx: const
// node&, p: const void*, q: void*, off, size: size_t, pl: graph_plan&):
//   cs.name()                          -> string-like  required
//   cs.guid()                          -> guid         required  identifies the implementation
//   cs.device()                        -> any_device   required
//   s.graph_compute(g)                 -> void         required  compute g's nodes in order
//   s.graph_compute_async(g)           -> void         optional  default graph_compute
//   s.set_tensor_async(x, p, off, size)-> void         optional  default tensor_set (synchronous)
//   s.get_tensor_async(cx, q, off, size)-> void        optional  default tensor_get (synchronous)
//   s.cpy_tensor_async(cx, x)          -> bool         optional  copy into this stream's x; default false
//   cs.ordered_copy_from(b)            -> bool         optional  (b: const any_backend&) a cpy_tensor_async from a
//                                                                tensor b computes is ordered after b's queued work
//                                                                without a host wait (MPI streams of one session);
//                                                                default false
//   s.synchronize()                    -> void         optional  wait for queued work; default nothing
//   s.graph_plan_create(g)             -> graph_plan   optional  default: a plan that remembers g's nodes
//   s.graph_plan_compute(pl)           -> void         optional  default graph_compute(pl's nodes)
// The defaults live in the type-erased adapter (tessera/backend/any.hpp).
#pragma once

#include <any>
#include <concepts>
#include <string_view>
#include <vector>

#include "tessera/backend/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

// A graph prepared once and computed many times (ggml_backend_graph_plan_t).
struct graph_plan {
    std::vector<node*> nodes;
    std::any state;  // what the backend keeps (the CPU backend: its scratch size)
    graph_view view() const noexcept { return graph_view(std::span<node* const>(nodes)); }
};

template <class S>
concept backend = requires(S& s, const S& cs, graph_view g) {
    { cs.name() } -> std::convertible_to<std::string_view>;
    { cs.guid() } -> std::convertible_to<guid>;
    { cs.device() } -> std::same_as<any_device>;
    s.graph_compute(g);
};

}  // namespace backend
TESSERA_END_NAMESPACE
