// CPU implementations of argsort and top_k (builders in graph/ops/sort.hpp). Each
// thread takes whole rows: the row as f32 and an index array live in its scratch. The
// order is total and deterministic: by value, equal values by ascending index, NaN
// after every number (ascending) or before (descending), so the result never depends on
// the sort algorithm or the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>

#include "tessera/config.hpp"
#include "tessera/backend/cpu/rows.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

inline std::string sort_unsupported_reason(const node& n) {
    const type_id t = n.src[0]->lay.type;
    if (t == type_id::f32 || t == type_id::f16 || t == type_id::bf16) return {};
    return std::string(op_name(n.op)) + " on " + std::string(type_name(t));
}

namespace impl {

namespace sort_detail {
// Whether i goes before j when sorting by descending value of x (NaN counted largest).
inline bool before_desc(const float* x, std::int32_t i, std::int32_t j) {
    const float u = x[i], v = x[j];
    const bool nu = std::isnan(u), nv = std::isnan(v);
    if (nu || nv) return nu && (!nv || i < j);
    return u > v || (u == v && i < j);
}
inline bool before_asc(const float* x, std::int32_t i, std::int32_t j) {
    const float u = x[i], v = x[j];
    const bool nu = std::isnan(u), nv = std::isnan(v);
    if (nu || nv) return nv && (!nu || i < j);
    return u < v || (u == v && i < j);
}
}  // namespace sort_detail

// argsort and top_k: the result row is the first ne0(dst) indices of the sorted row.
inline void sort_rows(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& k = *p.k;
    const std::int64_t n = a.lay.ne[0], keep = d.lay.ne[0];
    const bool desc = d.op == op_kind::top_k || d.param<argsort_params>().descending;
    float* buf = reinterpret_cast<float*>(p.scratch);
    auto* idx = reinterpret_cast<std::int32_t*>(buf + (static_cast<std::size_t>(n) + 15) / 16 * 16);
    const auto [r0, r1] = p.split(a.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(a.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, buf);
        std::iota(idx, idx + n, 0);
        const auto cmp = [x, desc](std::int32_t i, std::int32_t j) {
            return desc ? sort_detail::before_desc(x, i, j) : sort_detail::before_asc(x, i, j);
        };
        if (keep < n) std::partial_sort(idx, idx + keep, idx + n, cmp);
        else std::sort(idx, idx + n, cmp);
        std::byte* o = row_ptr(d, i1, i2, i3);
        if (d.lay.nb[0] == 4) {
            std::memcpy(o, idx, static_cast<std::size_t>(keep) * 4);
        } else {
            for (std::int64_t i = 0; i < keep; ++i) std::memcpy(o + static_cast<std::size_t>(i) * d.lay.nb[0], idx + i, 4);
        }
    }
}

}  // namespace impl
}  // namespace backend::cpu
TESSERA_END_NAMESPACE
