// CPU execution of the custom ops (builders in graph/ops/custom.hpp): the node's
// function is called on min(n_tasks, threads) threads (all of them for n_tasks = -1)
// with their (ith, nth); the other threads skip the node.
#pragma once

#include <algorithm>
#include <string>

#include "tessera/config.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

inline std::string custom_unsupported_reason(const node& n) {
    const auto* cp = n.params.get_if<custom_params>();
    if (!cp || !cp->fn) return std::string(op_name(n.op)) + " without a function";
    return {};
}

inline void custom_compute(const node& n, const exec_params& p) {
    const auto& cp = n.param<custom_params>();
    const int nth = cp.n_tasks > 0 ? std::min(cp.n_tasks, p.nth) : p.nth;
    if (p.ith >= nth) return;
    // the node is this op's output: the function writes into it
    cp.fn(const_cast<node&>(n), p.ith, nth);
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
