// Row access for the CPU op implementations: the dispatched kernels fetched once per
// compute, pointers to rows (i1, i2, i3) of a node, and reading/writing a row as f32
// (converting f16/bf16 rows, gathering strided ones), so every op computes on f32
// rows whatever the float type and layout of its operands.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/kernels/all.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

// The kernels of one arch, fetched once per compute.
struct kernel_set {
    simd::arch_id arch;
    simd::kernel_fn<kernels::binary_f32> binary;
    simd::kernel_fn<kernels::unary_f32> unary;
    simd::kernel_fn<kernels::scale_f32> scale;
    simd::kernel_fn<kernels::glu_f32> glu;
    simd::kernel_fn<kernels::sum_f32> sum;
    simd::kernel_fn<kernels::sumsq_f32> sumsq;
    simd::kernel_fn<kernels::max_f32> max;
    simd::kernel_fn<kernels::argmax_f32> argmax;
    simd::kernel_fn<kernels::softmax_exp_f32> softmax_exp;
    simd::kernel_fn<kernels::scale_add_f32> scale_add;
    simd::kernel_fn<kernels::rope_f32> rope;
    simd::kernel_fn<kernels::gemm_f32> gemm;
    simd::kernel_fn<kernels::gemm_f32_pb> gemm_pb;
    simd::kernel_fn<kernels::gemm_h16_f32> gemm_h16;
    simd::kernel_fn<kernels::dot_f32> dot;
    simd::kernel_fn<kernels::axpy_f32> axpy;
    simd::kernel_fn<kernels::axpy_rows_f32> axpy_rows;
    simd::kernel_fn<kernels::axpy_rows_f16_f32> axpy_rows_f16;
    simd::kernel_fn<kernels::f16_to_f32> f16_to_f32;
    simd::kernel_fn<kernels::f32_to_f16> f32_to_f16;
    simd::kernel_fn<kernels::bf16_to_f32> bf16_to_f32;
    simd::kernel_fn<kernels::f32_to_bf16> f32_to_bf16;

    static kernel_set for_arch(simd::arch_id a) {
        return {a,
                simd::kernel_for<kernels::binary_f32>(a),
                simd::kernel_for<kernels::unary_f32>(a),
                simd::kernel_for<kernels::scale_f32>(a),
                simd::kernel_for<kernels::glu_f32>(a),
                simd::kernel_for<kernels::sum_f32>(a),
                simd::kernel_for<kernels::sumsq_f32>(a),
                simd::kernel_for<kernels::max_f32>(a),
                simd::kernel_for<kernels::argmax_f32>(a),
                simd::kernel_for<kernels::softmax_exp_f32>(a),
                simd::kernel_for<kernels::scale_add_f32>(a),
                simd::kernel_for<kernels::rope_f32>(a),
                simd::kernel_for<kernels::gemm_f32>(a),
                simd::kernel_for<kernels::gemm_f32_pb>(a),
                simd::kernel_for<kernels::gemm_h16_f32>(a),
                simd::kernel_for<kernels::dot_f32>(a),
                simd::kernel_for<kernels::axpy_f32>(a),
                simd::kernel_for<kernels::axpy_rows_f32>(a),
                simd::kernel_for<kernels::axpy_rows_f16_f32>(a),
                simd::kernel_for<kernels::f16_to_f32>(a),
                simd::kernel_for<kernels::f32_to_f16>(a),
                simd::kernel_for<kernels::bf16_to_f32>(a),
                simd::kernel_for<kernels::f32_to_bf16>(a)};
    }
};

// What one thread gets for one node.
struct exec_params {
    int ith = 0, nth = 1;
    std::byte* scratch = nullptr;  // this thread's scratch for the node (planned ahead)
    std::byte* shared = nullptr;   // scratch shared by all threads of the node
    const kernel_set* k = nullptr;
    void (*barrier_fn)(void*) = nullptr;  // synchronizes the node's threads (multi-phase ops)
    void* barrier_ctx = nullptr;
    void barrier() const {
        if (barrier_fn) barrier_fn(barrier_ctx);
    }
    // The share [begin, end) of n items for this thread.
    std::pair<std::int64_t, std::int64_t> split(std::int64_t n) const {
        const std::int64_t per = (n + nth - 1) / nth;
        const std::int64_t b = std::min<std::int64_t>(n, per * ith);
        return {b, std::min<std::int64_t>(n, b + per)};
    }
};

inline std::byte* row_ptr(const node& n, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
    return n.bytes() + static_cast<std::size_t>(i1) * n.lay.nb[1] + static_cast<std::size_t>(i2) * n.lay.nb[2] +
           static_cast<std::size_t>(i3) * n.lay.nb[3];
}

// Row r of a node, with rows numbered i1 fastest.
struct row_index {
    std::int64_t i1, i2, i3;
};
inline row_index unravel_row(const layout& l, std::int64_t r) {
    const std::int64_t i1 = r % l.ne[1];
    const std::int64_t t = r / l.ne[1];
    return {i1, t % l.ne[2], t / l.ne[2]};
}

inline float read_scalar(type_id t, const std::byte* p) {
    switch (t) {
        case type_id::f32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case type_id::f16: {
            std::uint16_t b;
            std::memcpy(&b, p, 2);
            return f16::from_bits(b).to_float();
        }
        case type_id::bf16: {
            std::uint16_t b;
            std::memcpy(&b, p, 2);
            return bf16::from_bits(b).to_float();
        }
        default: return 0.f;
    }
}
inline void write_scalar(type_id t, std::byte* p, float v) {
    switch (t) {
        case type_id::f32: std::memcpy(p, &v, 4); break;
        case type_id::f16: {
            const std::uint16_t b = f16::from_float(v).bits;
            std::memcpy(p, &b, 2);
            break;
        }
        case type_id::bf16: {
            const std::uint16_t b = bf16::from_float(v).bits;
            std::memcpy(p, &b, 2);
            break;
        }
        default: break;
    }
}

// n elements of a float-typed row at p with element stride nb0, as f32: either p
// itself (f32 and packed) or buf filled by conversion.
inline const float* load_f32(const kernel_set& k, type_id t, const std::byte* p, std::size_t nb0, std::int64_t n, float* buf) {
    const auto un = static_cast<std::size_t>(n);
    if (t == type_id::f32 && nb0 == 4) return reinterpret_cast<const float*>(p);
    if (t == type_id::f16 && nb0 == 2) {
        k.f16_to_f32(reinterpret_cast<const f16*>(p), buf, un);
        return buf;
    }
    if (t == type_id::bf16 && nb0 == 2) {
        k.bf16_to_f32(reinterpret_cast<const bf16*>(p), buf, un);
        return buf;
    }
    for (std::size_t i = 0; i < un; ++i) buf[i] = read_scalar(t, p + i * nb0);
    return buf;
}
// Writes n f32 values to a float-typed row at p (element stride nb0); no-op when
// src already is that row.
inline void store_f32(const kernel_set& k, type_id t, std::byte* p, std::size_t nb0, std::int64_t n, const float* src) {
    const auto un = static_cast<std::size_t>(n);
    if (t == type_id::f32 && nb0 == 4) {
        if (reinterpret_cast<const std::byte*>(src) != p) std::memmove(p, src, un * 4);
        return;
    }
    if (t == type_id::f16 && nb0 == 2) return k.f32_to_f16(src, reinterpret_cast<f16*>(p), un);
    if (t == type_id::bf16 && nb0 == 2) return k.f32_to_bf16(src, reinterpret_cast<bf16*>(p), un);
    for (std::size_t i = 0; i < un; ++i) write_scalar(t, p + i * nb0, src[i]);
}
// Where to compute a float row of node n: the row itself when it is packed f32,
// else buf (then store_f32 writes it back).
inline float* out_f32(const node& n, std::byte* p, float* buf) {
    return (n.lay.type == type_id::f32 && n.lay.nb[0] == 4) ? reinterpret_cast<float*>(p) : buf;
}

inline const float* load_row(const kernel_set& k, const node& n, std::int64_t i1, std::int64_t i2, std::int64_t i3, float* buf) {
    return load_f32(k, n.lay.type, row_ptr(n, i1, i2, i3), n.lay.nb[0], n.lay.ne[0], buf);
}

// The row loop of the ops that map each row of a to the same row of d (shapes equal):
// f(x, z, i1, i2, i3) gets row (i1, i2, i3) of a as f32 and the f32 row of d to fill
// (d's own memory when it is contiguous f32), which is then stored in d's type. Uses
// two scratch rows of ne0 rounded up to 16 floats: a's, then d's.
template <class F>
void map_rows(const node& d, const node& a, const exec_params& p, F&& f) {
    const auto& k = *p.k;
    float* bufa = reinterpret_cast<float*>(p.scratch);
    float* bufd = bufa + (static_cast<std::size_t>(d.lay.ne[0]) + 15) / 16 * 16;
    const auto [r0, r1] = p.split(d.lay.nrows());
    for (std::int64_t r = r0; r < r1; ++r) {
        const auto [i1, i2, i3] = unravel_row(d.lay, r);
        const float* x = load_row(k, a, i1, i2, i3, bufa);
        std::byte* drow = row_ptr(d, i1, i2, i3);
        float* z = out_f32(d, drow, bufd);
        f(x, z, i1, i2, i3);
        store_f32(k, d.lay.type, drow, d.lay.nb[0], d.lay.ne[0], z);
    }
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
