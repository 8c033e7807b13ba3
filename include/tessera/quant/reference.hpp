// Umbrella header of the reference (scalar) quantization API, and its run-time typed
// entry points for GGUF data and the graph layer.
//
// Per block type B (every type of blocks.hpp with block_traits<B>::supported):
//   quantize_row_ref(x, y, n)            f32 row -> blocks (ggml's reference algorithm)
//   quantize_row_ref(x, y, n, imatrix)   the same with optional importance weights
//                                        (K-quants, iq4_nl, iq4_xs, q4_0..q5_1 use them)
//   dequantize_row_ref(y, x, n)          blocks -> f32
//   vec_dot_ref(n, x, y)                 row of B . row of block_traits<B>::dot_partner,
//                                        integer parts exact, float order as ggml's
//                                        generic kernels
// n must be a whole number of blocks, else tessera::error(errc::shape_mismatch).
//
// Run-time typed (type_id):
//   quantize(t, src, dst, nrows, n_per_row, imatrix)  -> bytes written
//   dequantize_row(t, src, dst, n)                     (also f32, f16, bf16)
//   can_quantize(t), can_dequantize(t)
// Every block type with a layout has all three. iq2_xxs, iq2_xs and iq1_s need the
// imatrix (tessera::error(errc::invalid_argument) without); a type with dequantization
// but no quantizer (none today) would have can_quantize false and throw
// errc::unsupported from quantize().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdint>
#include <cstring>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/iq4.hpp"
#include "tessera/quant/iq_quantize.hpp"
#include "tessera/quant/iquants.hpp"
#include "tessera/quant/k_quants.hpp"
#include "tessera/quant/mxfp4.hpp"
#include "tessera/quant/q1_q2.hpp"
#include "tessera/quant/q4_q5.hpp"
#include "tessera/quant/q8.hpp"
#include "tessera/quant/ref_common.hpp"
#include "tessera/quant/ternary.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

// ---- float rows: the dot products test-quantize-fns uses for f32/f16/bf16 ----------
// Accumulated in double, as ggml's generic f16/bf16 dot (f16/bf16: ref_common.hpp's
// vec_dot_unchecked, which the kernels' scalar bodies instantiate too).
inline float vec_dot_ref(std::int64_t n, const float* x, const float* y) {
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(y[i]);
    return static_cast<float>(s);
}
inline float vec_dot_ref(std::int64_t n, const f16* x, const f16* y) { return vec_dot_unchecked(n, x, y); }
inline float vec_dot_ref(std::int64_t n, const bf16* x, const bf16* y) { return vec_dot_unchecked(n, x, y); }

namespace detail {

template <class B>
inline constexpr bool has_reference = block_traits<B>::supported;
template <class B>
inline constexpr bool has_quantizer =
    has_reference<B> && requires(const float* x, B* y, std::int64_t n, const float* w) { quantize_row_ref(x, y, n, w); };

[[noreturn]] inline void fail_unsupported(type_id t, const char* what) {
    const auto raw = static_cast<std::int64_t>(t);
    if (!is_valid_type_id(raw))
        fail(errc::unsupported, std::string(what) + ": type id " + std::to_string(raw) + " is not a valid ggml type");
    const std::string name(type_name(t));
    bool is_block = false;
    visit_block_type(t, [&]<class B>() { is_block = true; });
    bool readable = false;
    visit_block_type(t, [&]<class B>() { readable = has_reference<B>; });
    if (readable)
        fail(errc::unsupported, name + ": tessera cannot quantize to " + name + " yet (" + what +
                                    "; it reads and computes with it, but has no quantizer for it)");
    if (is_block)
        fail(errc::unsupported, name + ": not supported yet (" + what +
                                    "; tessera knows the block layout but has no kernels for this type)");
    fail(errc::unsupported, std::string(what) + ": " + name + " is not a floating-point or quantized type");
}


}  // namespace detail

// Types quantize() can write / dequantize_row() and vec_dot_row() can read.
inline bool can_quantize(type_id t) {
    if (!is_valid_type_id(static_cast<std::int64_t>(t))) return false;
    if (is_float(t)) return true;
    bool ok = false;
    visit_block_type(t, [&]<class B>() { ok = detail::has_quantizer<B>; });
    return ok;
}
inline bool can_dequantize(type_id t) {
    if (!is_valid_type_id(static_cast<std::int64_t>(t))) return false;
    if (is_float(t)) return true;
    bool ok = false;
    visit_block_type(t, [&]<class B>() { ok = detail::has_reference<B>; });
    return ok;
}

// Quantizes nrows rows of n_per_row floats (contiguous) into dst, row after row, and
// returns the bytes written (nrows * row_size(t, n_per_row)). imatrix, if given, holds
// n_per_row importance weights shared by all rows; types that take none ignore it.
inline std::size_t quantize(type_id t, const float* src, void* dst, std::int64_t nrows, std::int64_t n_per_row,
                            const float* imatrix = nullptr) {
    if (!can_quantize(t)) detail::fail_unsupported(t, "quantize");
    if (nrows < 0)
        fail(errc::invalid_argument, "quantize: negative row count " + std::to_string(nrows));
    const std::int64_t rs = row_size(t, n_per_row);  // throws shape_mismatch for a partial block
    if (rs > 0 && nrows > INT64_MAX / rs)
        fail(errc::invalid_argument, "quantize: " + std::to_string(nrows) + " rows of " + std::to_string(n_per_row) +
                                         " elements overflow the byte count");
    if (nrows * rs > 0 && (!src || !dst)) fail(errc::invalid_argument, "quantize: null source or destination");
    auto* out = static_cast<unsigned char*>(dst);
    switch (t) {
        case type_id::f32:
            if (nrows * rs > 0) std::memcpy(out, src, static_cast<std::size_t>(nrows * rs));
            return static_cast<std::size_t>(nrows * rs);
        case type_id::f16:
            for (std::int64_t i = 0; i < nrows * n_per_row; ++i) {
                const f16 h = f16::from_float(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return static_cast<std::size_t>(nrows * rs);
        case type_id::bf16:
            for (std::int64_t i = 0; i < nrows * n_per_row; ++i) {
                const bf16 h = bf16::from_float(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return static_cast<std::size_t>(nrows * rs);
        default: break;
    }
    visit_block_type(t, [&]<class B>() {
        if constexpr (detail::has_quantizer<B>) {
            for (std::int64_t r = 0; r < nrows; ++r)
                quantize_row_ref(src + r * n_per_row, reinterpret_cast<B*>(out + r * rs), n_per_row, imatrix);
        }
    });
    return static_cast<std::size_t>(nrows * rs);
}

// Dequantizes n elements of type t (a whole number of blocks) to f32.
inline void dequantize_row(type_id t, const void* src, float* dst, std::int64_t n) {
    if (!can_dequantize(t)) detail::fail_unsupported(t, "dequantize_row");
    (void)row_size(t, n);  // throws shape_mismatch for a partial block or n < 0
    if (n > 0 && (!src || !dst)) fail(errc::invalid_argument, "dequantize_row: null source or destination");
    const auto* in = static_cast<const unsigned char*>(src);
    switch (t) {
        case type_id::f32:
            if (n) std::memcpy(dst, in, static_cast<std::size_t>(n) * 4);
            return;
        case type_id::f16:
            for (std::int64_t i = 0; i < n; ++i) {
                f16 h;
                std::memcpy(&h, in + 2 * i, 2);
                dst[i] = h.to_float();
            }
            return;
        case type_id::bf16:
            for (std::int64_t i = 0; i < n; ++i) {
                bf16 h;
                std::memcpy(&h, in + 2 * i, 2);
                dst[i] = h.to_float();
            }
            return;
        default: break;
    }
    visit_block_type(t, [&]<class B>() {
        if constexpr (detail::has_reference<B>) dequantize_row_ref(reinterpret_cast<const B*>(in), dst, n);
    });
}

// Dot product of a row of type t with a row of its dot partner (already quantized),
// through vec_dot_ref. For f32/f16/bf16 the partner is the same type.
inline float vec_dot_row(type_id t, std::int64_t n, const void* x, const void* y) {
    if (!can_dequantize(t)) detail::fail_unsupported(t, "vec_dot_row");
    (void)row_size(t, n);
    switch (t) {
        case type_id::f32: return vec_dot_ref(n, static_cast<const float*>(x), static_cast<const float*>(y));
        case type_id::f16: return vec_dot_ref(n, static_cast<const f16*>(x), static_cast<const f16*>(y));
        case type_id::bf16: return vec_dot_ref(n, static_cast<const bf16*>(x), static_cast<const bf16*>(y));
        default: break;
    }
    float r = 0;
    visit_block_type(t, [&]<class B>() {
        if constexpr (detail::has_reference<B>)
            r = vec_dot_ref(n, static_cast<const B*>(x),
                            static_cast<const typename block_traits<B>::dot_partner*>(y));
    });
    return r;
}

// The type activations are quantized to for vec_dot with weights of type t.
inline type_id dot_partner_type(type_id t) {
    if (is_float(t)) return t;
    type_id r = t;
    if (!visit_block_type(t, [&]<class B>() { r = block_traits<typename block_traits<B>::dot_partner>::id; }))
        detail::fail_unsupported(t, "dot_partner_type");
    return r;
}

}  // namespace quant
TESSERA_END_NAMESPACE
