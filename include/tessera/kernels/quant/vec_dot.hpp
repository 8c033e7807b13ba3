// Dot products of a row of quantized blocks with a row of its partner blocks
// (block_traits<B>::dot_partner), and of f16 / bf16 rows.
//
// The integer parts are exact on every arch; only the order of the f32 sums of the
// per-block terms differs from the scalar definition. Paths (the x86 bodies are in
// kernels/x86/quant/vec_dot.hpp):
//   scalar     every type (the readable definitions);
//   avx2       q8_0, q4_0, q4_K, q6_K (vpmaddubsw), f16 (F16C), bf16;
//   avx512bw   q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4, q2_K, q3_K, q4_K, q5_K, q6_K,
//              iq4_xs, tq2_0 (vpmaddubsw/vpmaddwd on 512 bits), bf16 (f16 uses AVX2's);
//   avx512vnni the same bodies with vpdpbusd / vpdpwssd.
// q8_1 x q8_1 and tq1_0 run the scalar body everywhere.
// Types without a wide body run the scalar body in every unit.
//
// Kernels: vec_dot_<type><A>(int64_t n, const block_<type>* x, const partner* y)
// -> float, n a multiple of the block size; gemv_<type><A>(n, nrows, x, row_stride_bytes,
// y, out) -> out[r] = vec_dot(row r, y) (q4_0 has a 4-row AVX-512 body, the other types
// loop over vec_dot); vec_dot_f16 / vec_dot_bf16 on
// (int64_t n, const f16* x, const f16* y).
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace q = ::tessera::quant;

// ---- scalar definitions ------------------------------------------------------------------
template <class A>
float vdot(std::int64_t n, const q::block_q4_0* x, const q::block_q8_0* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j)
            sumi += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        s += static_cast<float>(sumi) * (h2f<A>(x[i].d) * h2f<A>(y[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_1* x, const q::block_q8_1* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) sumi += (x[i].qs[j] & 0x0F) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        const float a = h2f<A>(x[i].d) * h2f<A>(y[i].d) * static_cast<float>(sumi);
        const float b = h2f<A>(x[i].m) * h2f<A>(y[i].s);
        s += a + b;
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_0* x, const q::block_q8_0* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        std::uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
            const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
            sumi += (((x[i].qs[j] & 0x0F) | h0) - 16) * y[i].qs[j] + (((x[i].qs[j] >> 4) | h1) - 16) * y[i].qs[j + 16];
        }
        s += static_cast<float>(sumi) * (h2f<A>(x[i].d) * h2f<A>(y[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_1* x, const q::block_q8_1* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        std::uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
            const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
            sumi += ((x[i].qs[j] & 0x0F) | h0) * y[i].qs[j] + ((x[i].qs[j] >> 4) | h1) * y[i].qs[j + 16];
        }
        const float a = h2f<A>(x[i].d) * h2f<A>(y[i].d) * static_cast<float>(sumi);
        const float b = h2f<A>(x[i].m) * h2f<A>(y[i].s);
        s += a + b;
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q8_0* x, const q::block_q8_0* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        int sumi = 0;
        for (int j = 0; j < 32; ++j) sumi += x[i].qs[j] * y[i].qs[j];
        s += static_cast<float>(sumi) * (h2f<A>(x[i].d) * h2f<A>(y[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q8_1* x, const q::block_q8_1* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        int sumi = 0;
        for (int j = 0; j < 32; ++j) sumi += x[i].qs[j] * y[i].qs[j];
        s += static_cast<float>(sumi) * (h2f<A>(x[i].d) * h2f<A>(y[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq4_nl* x, const q::block_q8_0* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j)
            sumi += tables<A>::iq4nl[x[i].qs[j] & 0x0F] * y[i].qs[j] + tables<A>::iq4nl[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        s += static_cast<float>(sumi) * (h2f<A>(x[i].d) * h2f<A>(y[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_mxfp4* x, const q::block_q8_0* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / 32; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j)
            sumi += tables<A>::mxfp4[x[i].qs[j] & 0x0F] * y[i].qs[j] + tables<A>::mxfp4[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        s += static_cast<float>(sumi) * (h2f<A>(y[i].d) * e8m0_half<A>(x[i].e));
    }
    return s;
}

// K-quants: the integer values of one super-block in element order, and a scale per
// 16 elements, so that dot = d * sum_j scale_j * dot16_j (- dmin * mins for q2/q4/q5_K).
template <class A>
float kdot(const std::int8_t* v, const int* sc16, const std::int8_t* yq, float d) {
    long long sumi = 0;
    for (int j = 0; j < 16; ++j) {
        int s = 0;
        for (int l = 0; l < 16; ++l) s += v[16 * j + l] * yq[16 * j + l];
        sumi += static_cast<long long>(sc16[j]) * s;
    }
    return d * static_cast<float>(sumi);
}
template <class A>
float vdot(std::int64_t n, const q::block_q2_K* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        std::int8_t v[256];
        int sc[16];
        int summs = 0;
        for (int j = 0; j < 16; ++j) {
            sc[j] = x[i].scales[j] & 0xF;
            summs += (x[i].scales[j] >> 4) * y[i].bsums[j];
        }
        int k = 0;
        for (int half = 0; half < 2; ++half)
            for (int shift = 0; shift < 8; shift += 2)
                for (int l = 0; l < 32; ++l) v[k++] = static_cast<std::int8_t>((x[i].qs[32 * half + l] >> shift) & 3);
        const float dall = y[i].d * h2f<A>(x[i].d), dmin = y[i].d * h2f<A>(x[i].dmin);
        s += kdot<A>(v, sc, y[i].qs, dall) - dmin * static_cast<float>(summs);
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q3_K* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        std::int8_t v[256], sc8[16];
        int sc[16];
        q3k_scales<A>(x[i].scales, sc8);
        for (int j = 0; j < 16; ++j) sc[j] = sc8[j];
        int k = 0;
        std::uint8_t m = 1;
        for (int half = 0; half < 2; ++half)
            for (int shift = 0; shift < 8; shift += 2, m = static_cast<std::uint8_t>(m << 1))
                for (int l = 0; l < 32; ++l)
                    v[k++] = static_cast<std::int8_t>(((x[i].qs[32 * half + l] >> shift) & 3) - ((x[i].hmask[l] & m) ? 0 : 4));
        s += kdot<A>(v, sc, y[i].qs, y[i].d * h2f<A>(x[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_K* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        std::int8_t v[256];
        int sc[16];
        int summs = 0;
        for (int j = 0; j < 4; ++j) {
            for (int h = 0; h < 2; ++h) {
                std::uint8_t a, b;
                scale_min_k4<A>(2 * j + h, x[i].scales, a, b);
                sc[4 * j + 2 * h] = sc[4 * j + 2 * h + 1] = a;
                summs += b * (y[i].bsums[4 * j + 2 * h] + y[i].bsums[4 * j + 2 * h + 1]);
            }
            for (int l = 0; l < 32; ++l) {
                v[64 * j + l] = static_cast<std::int8_t>(x[i].qs[32 * j + l] & 0xF);
                v[64 * j + 32 + l] = static_cast<std::int8_t>(x[i].qs[32 * j + l] >> 4);
            }
        }
        const float dall = y[i].d * h2f<A>(x[i].d), dmin = y[i].d * h2f<A>(x[i].dmin);
        s += kdot<A>(v, sc, y[i].qs, dall) - dmin * static_cast<float>(summs);
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_K* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        std::int8_t v[256];
        int sc[16];
        int summs = 0;
        for (int j = 0; j < 4; ++j) {
            for (int h = 0; h < 2; ++h) {
                std::uint8_t a, b;
                scale_min_k4<A>(2 * j + h, x[i].scales, a, b);
                sc[4 * j + 2 * h] = sc[4 * j + 2 * h + 1] = a;
                summs += b * (y[i].bsums[4 * j + 2 * h] + y[i].bsums[4 * j + 2 * h + 1]);
            }
            for (int l = 0; l < 32; ++l) {
                v[64 * j + l] = static_cast<std::int8_t>((x[i].qs[32 * j + l] & 0xF) + ((x[i].qh[l] >> (2 * j)) & 1) * 16);
                v[64 * j + 32 + l] =
                    static_cast<std::int8_t>((x[i].qs[32 * j + l] >> 4) + ((x[i].qh[l] >> (2 * j + 1)) & 1) * 16);
            }
        }
        const float dall = y[i].d * h2f<A>(x[i].d), dmin = y[i].d * h2f<A>(x[i].dmin);
        s += kdot<A>(v, sc, y[i].qs, dall) - dmin * static_cast<float>(summs);
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q6_K* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        std::int8_t v[256];
        int sc[16];
        for (int j = 0; j < 16; ++j) sc[j] = x[i].scales[j];
        for (int half = 0; half < 2; ++half) {
            const std::uint8_t* ql = x[i].ql + 64 * half;
            const std::uint8_t* qh = x[i].qh + 32 * half;
            std::int8_t* o = v + 128 * half;
            for (int l = 0; l < 32; ++l) {
                o[l] = static_cast<std::int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
                o[l + 32] = static_cast<std::int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                o[l + 64] = static_cast<std::int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                o[l + 96] = static_cast<std::int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
        }
        s += kdot<A>(v, sc, y[i].qs, y[i].d * h2f<A>(x[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq4_xs* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        std::int8_t v[256];
        int sc[16];
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x[i].scales_h >> (2 * ib)) & 3) << 4);
            sc[2 * ib] = sc[2 * ib + 1] = ls - 32;
            for (int j = 0; j < 16; ++j) {
                v[32 * ib + j] = tables<A>::iq4nl[x[i].qs[16 * ib + j] & 0xF];
                v[32 * ib + 16 + j] = tables<A>::iq4nl[x[i].qs[16 * ib + j] >> 4];
            }
        }
        s += kdot<A>(v, sc, y[i].qs, y[i].d * h2f<A>(x[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_tq1_0* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        std::int8_t v[256];
        int k = 0;
        for (int t = 0; t < 5; ++t)
            for (int m = 0; m < 32; ++m) v[k++] = static_cast<std::int8_t>(trit<A>(x[i].qs[m], t) - 1);
        for (int t = 0; t < 5; ++t)
            for (int m = 0; m < 16; ++m) v[k++] = static_cast<std::int8_t>(trit<A>(x[i].qs[32 + m], t) - 1);
        for (int t = 0; t < 4; ++t)
            for (int m = 0; m < 4; ++m) v[k++] = static_cast<std::int8_t>(trit<A>(x[i].qh[m], t) - 1);
        int sumi = 0;
        for (int j = 0; j < 256; ++j) sumi += v[j] * y[i].qs[j];
        s += static_cast<float>(sumi) * (y[i].d * h2f<A>(x[i].d));
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_tq2_0* x, const q::block_q8_K* y, simd::requires_arch<simd::scalar>) {
    float s = 0.0f;
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        // sum (q - 1) * y as sum q * y - sum y: GCC 12 vectorizes the signed form with
        // vpdpbusd as if (q - 1) were unsigned, which is wrong for q = 0.
        int sumqy = 0, sumy = 0, k = 0;
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; ++l)
                for (int m = 0; m < 32; ++m, ++k) sumqy += ((x[i].qs[j + m] >> (2 * l)) & 3) * y[i].qs[k];
        for (int j = 0; j < 16; ++j) sumy += y[i].bsums[j];
        s += static_cast<float>(sumqy - sumy) * (y[i].d * h2f<A>(x[i].d));
    }
    return s;
}
template <class A>
float vdot_f16(std::int64_t n, const f16* x, const f16* y, simd::requires_arch<simd::scalar>) {
    double s = 0.0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(h2f<A>(x[i]) * h2f<A>(y[i]));
    return static_cast<float>(s);
}
template <class A>
TESSERA_ALWAYS_INLINE float bf2f(bf16 v) noexcept {
    return __builtin_bit_cast(float, static_cast<std::uint32_t>(v.bits) << 16);
}
template <class A>
float vdot_bf16(std::int64_t n, const bf16* x, const bf16* y, simd::requires_arch<simd::scalar>) {
    double s = 0.0;
    for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(bf2f<A>(x[i]) * bf2f<A>(y[i]));
    return static_cast<float>(s);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/vec_dot.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

// ---- several rows against one activation row (matrix x vector) --------------------------
// out[r] = vec_dot(row r of x, y) for r < nrows; rows are row_stride bytes apart.
template <class A, class B, class P>
void gemv(std::int64_t n, std::int64_t nrows, const B* x, std::size_t row_stride, const P* y, float* out,
          simd::requires_arch<simd::scalar>) {
    const auto* base = reinterpret_cast<const unsigned char*>(x);
    for (std::int64_t r = 0; r < nrows; ++r)
        out[r] = vdot<A>(n, reinterpret_cast<const B*>(base + static_cast<std::size_t>(r) * row_stride), y, A{});
}

}  // namespace qdetail

#define TESSERA_VEC_DOT_KERNEL_(T, P)                                                                     \
    template <class A>                                                                                    \
    struct gemv_##T {                                                                                     \
        void operator()(std::int64_t n, std::int64_t nrows, const quant::block_##T* x, std::size_t row_stride, \
                        const quant::block_##P* y, float* out) const;                                     \
    };                                                                                                    \
    template <class A>                                                                                    \
    void gemv_##T<A>::operator()(std::int64_t n, std::int64_t nrows, const quant::block_##T* x,           \
                                 std::size_t row_stride, const quant::block_##P* y, float* out) const {   \
        qdetail::gemv<A>(n, nrows, x, row_stride, y, out, A{});                                           \
    }                                                                                                     \
    TESSERA_KERNEL(gemv_##T);                                                                             \
    template <class A>                                                                                    \
    struct vec_dot_##T {                                                                                  \
        float operator()(std::int64_t n, const quant::block_##T* x, const quant::block_##P* y) const;     \
    };                                                                                                    \
    template <class A>                                                                                    \
    float vec_dot_##T<A>::operator()(std::int64_t n, const quant::block_##T* x, const quant::block_##P* y) \
        const {                                                                                           \
        return qdetail::vdot<A>(n, x, y, A{});                                                            \
    }                                                                                                     \
    TESSERA_KERNEL(vec_dot_##T)

TESSERA_VEC_DOT_KERNEL_(q4_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(q4_1, q8_1);
TESSERA_VEC_DOT_KERNEL_(q5_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(q5_1, q8_1);
TESSERA_VEC_DOT_KERNEL_(q8_0, q8_0);
TESSERA_VEC_DOT_KERNEL_(q8_1, q8_1);
TESSERA_VEC_DOT_KERNEL_(iq4_nl, q8_0);
TESSERA_VEC_DOT_KERNEL_(mxfp4, q8_0);
TESSERA_VEC_DOT_KERNEL_(q2_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q3_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q4_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q5_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(q6_K, q8_K);
TESSERA_VEC_DOT_KERNEL_(iq4_xs, q8_K);
TESSERA_VEC_DOT_KERNEL_(tq1_0, q8_K);
TESSERA_VEC_DOT_KERNEL_(tq2_0, q8_K);
#undef TESSERA_VEC_DOT_KERNEL_

// sum x[i] * y[i] over f16 rows (products exact in f32, summed in f32 by the SIMD paths).
template <class A>
struct vec_dot_f16 {
    float operator()(std::int64_t n, const f16* x, const f16* y) const;
};
template <class A>
float vec_dot_f16<A>::operator()(std::int64_t n, const f16* x, const f16* y) const {
    return qdetail::vdot_f16<A>(n, x, y, A{});
}
TESSERA_KERNEL(vec_dot_f16);

template <class A>
struct vec_dot_bf16 {
    float operator()(std::int64_t n, const bf16* x, const bf16* y) const;
};
template <class A>
float vec_dot_bf16<A>::operator()(std::int64_t n, const bf16* x, const bf16* y) const {
    return qdetail::vdot_bf16<A>(n, x, y, A{});
}
TESSERA_KERNEL(vec_dot_bf16);

}  // namespace kernels
TESSERA_END_NAMESPACE
