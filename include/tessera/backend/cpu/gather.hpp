// Element access for the CPU ops that index their sources freely (padding, resampling,
// convolution, pooling): one element of a float node by its four indices, and a loop
// over this thread's share of a node's rows that fills each row as f32 and stores it
// in the node's type and layout.
#pragma once

#include <cstring>

#include <cstddef>
#include <cstdint>

#include "tessera/config.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

// Element (i0, i1, i2, i3) of a float node, as f32.
inline float elem(const node& n, std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) {
    const auto& nb = n.lay.nb;
    const std::byte* q = n.bytes() + static_cast<std::size_t>(i0) * nb[0] + static_cast<std::size_t>(i1) * nb[1] +
                         static_cast<std::size_t>(i2) * nb[2] + static_cast<std::size_t>(i3) * nb[3];
    if (n.lay.type == type_id::f32) {  // the common case, without the type switch
        float v;
        std::memcpy(&v, q, sizeof v);
        return v;
    }
    return read_scalar(n.lay.type, q);
}

// For each row (i1, i2, i3) of d in this thread's share: fill(z, i1, i2, i3) writes the
// d.ne0 values of the row as f32 into z, which is then stored into d. The first
// d.ne0 floats of the thread's scratch serve as the row buffer when d's row is not
// packed f32.
template <class F>
void fill_rows(const node& d, const exec_params& p, F&& fill) {
    const auto& k = *p.k;
    float* buf = reinterpret_cast<float*>(p.scratch);
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, buf);
        fill(z, i1, i2, i3);
        store_f32(k, d.lay.type, drow, d.lay.nb[0], d.lay.ne[0], z);
    }
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
