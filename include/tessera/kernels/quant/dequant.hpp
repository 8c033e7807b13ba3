// Dequantization of rows of quantized blocks into f32, for every supported type.
//
// Every arch is bit-exact with ggml's dequantize_row_* (the same float operations in
// the same order: one product, then one add or subtract, never fused). The scalar
// bodies are the readable definitions; SSE4.2 uses them. Types with AVX2 and AVX-512
// bodies (kernels/x86/quant/dequant.hpp): q4_0, q8_0, q4_K, q6_K; the rest run the
// scalar body in every unit.
//
// Kernels: dequantize_row_<type><A>(const block_<type>* x, float* y, int64_t n),
// n a multiple of the block size.
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/config.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/dispatch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace q = ::tessera::quant;

// ---- scalar definitions -------------------------------------------------------------------
template <class A>
void dequant(const q::block_q4_0* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>((x[i].qs[j] & 0x0F) - 8) * d;
            y[j + 16] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}
template <class A>
void dequant(const q::block_q4_1* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d), m = h2f<A>(x[i].m);
        for (int j = 0; j < 16; ++j) {
            const float a = static_cast<float>(x[i].qs[j] & 0x0F) * d;
            const float b = static_cast<float>(x[i].qs[j] >> 4) * d;
            y[j] = a + m;
            y[j + 16] = b + m;
        }
    }
}
template <class A>
void dequant(const q::block_q5_0* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d);
        std::uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; ++j) {
            const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
            const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
            y[j] = static_cast<float>(((x[i].qs[j] & 0x0F) | h0) - 16) * d;
            y[j + 16] = static_cast<float>(((x[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}
template <class A>
void dequant(const q::block_q5_1* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d), m = h2f<A>(x[i].m);
        std::uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; ++j) {
            const int h0 = static_cast<int>(((qh >> j) << 4) & 0x10);
            const int h1 = static_cast<int>((qh >> (j + 12)) & 0x10);
            const float a = static_cast<float>((x[i].qs[j] & 0x0F) | h0) * d;
            const float b = static_cast<float>((x[i].qs[j] >> 4) | h1) * d;
            y[j] = a + m;
            y[j + 16] = b + m;
        }
    }
}
template <class A>
void dequant(const q::block_q8_0* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d);
        for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}
template <class A>
void dequant(const q::block_q8_1* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d);
        for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}
template <class A>
void dequant(const q::block_iq4_nl* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = h2f<A>(x[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * static_cast<float>(tables<A>::iq4nl[x[i].qs[j] & 0x0F]);
            y[j + 16] = d * static_cast<float>(tables<A>::iq4nl[x[i].qs[j] >> 4]);
        }
    }
}
template <class A>
void dequant(const q::block_mxfp4* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / 32; ++i, y += 32) {
        const float d = e8m0_half<A>(x[i].e);
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>(tables<A>::mxfp4[x[i].qs[j] & 0x0F]) * d;
            y[j + 16] = static_cast<float>(tables<A>::mxfp4[x[i].qs[j] >> 4]) * d;
        }
    }
}
template <class A>
void dequant(const q::block_q2_K* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d), mn = h2f<A>(x[i].dmin);
        const std::uint8_t* qs = x[i].qs;
        int is = 0;
        for (int half = 0; half < 2; ++half, qs += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {
                    const std::uint8_t sc = x[i].scales[is++];
                    const float dl = d * static_cast<float>(sc & 0xF), ml = mn * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        const float v = dl * static_cast<float>((qs[16 * part + l] >> shift) & 3);
                        *y++ = v - ml;
                    }
                }
            }
        }
    }
}
template <class A>
void dequant(const q::block_q3_K* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d);
        std::int8_t sc[16];
        q3k_scales<A>(x[i].scales, sc);
        const std::uint8_t* qs = x[i].qs;
        int is = 0;
        std::uint8_t m = 1;
        for (int half = 0; half < 2; ++half, qs += 32) {
            for (int shift = 0; shift < 8; shift += 2, m = static_cast<std::uint8_t>(m << 1)) {
                for (int part = 0; part < 2; ++part) {
                    const float dl = d * static_cast<float>(sc[is++]);
                    for (int l = 0; l < 16; ++l) {
                        const int k = 16 * part + l;
                        const int v = ((qs[k] >> shift) & 3) - ((x[i].hmask[k] & m) ? 0 : 4);
                        *y++ = dl * static_cast<float>(v);
                    }
                }
            }
        }
    }
}
template <class A>
void dequant(const q::block_q4_K* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d), mn = h2f<A>(x[i].dmin);
        const std::uint8_t* qs = x[i].qs;
        for (int j = 0; j < 4; ++j, qs += 32) {
            std::uint8_t s1, m1, s2, m2;
            scale_min_k4<A>(2 * j, x[i].scales, s1, m1);
            scale_min_k4<A>(2 * j + 1, x[i].scales, s2, m2);
            const float d1 = d * s1, n1 = mn * m1, d2 = d * s2, n2 = mn * m2;
            for (int l = 0; l < 32; ++l) {
                const float v = d1 * static_cast<float>(qs[l] & 0xF);
                *y++ = v - n1;
            }
            for (int l = 0; l < 32; ++l) {
                const float v = d2 * static_cast<float>(qs[l] >> 4);
                *y++ = v - n2;
            }
        }
    }
}
template <class A>
void dequant(const q::block_q5_K* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d), mn = h2f<A>(x[i].dmin);
        const std::uint8_t* qs = x[i].qs;
        for (int j = 0; j < 4; ++j, qs += 32) {
            std::uint8_t s1, m1, s2, m2;
            scale_min_k4<A>(2 * j, x[i].scales, s1, m1);
            scale_min_k4<A>(2 * j + 1, x[i].scales, s2, m2);
            const float d1 = d * s1, n1 = mn * m1, d2 = d * s2, n2 = mn * m2;
            const int u1 = 1 << (2 * j), u2 = 2 << (2 * j);
            for (int l = 0; l < 32; ++l) {
                const float v = d1 * static_cast<float>((qs[l] & 0xF) + ((x[i].qh[l] & u1) ? 16 : 0));
                *y++ = v - n1;
            }
            for (int l = 0; l < 32; ++l) {
                const float v = d2 * static_cast<float>((qs[l] >> 4) + ((x[i].qh[l] & u2) ? 16 : 0));
                *y++ = v - n2;
            }
        }
    }
}
template <class A>
void dequant(const q::block_q6_K* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d);
        const std::uint8_t* ql = x[i].ql;
        const std::uint8_t* qh = x[i].qh;
        const std::int8_t* sc = x[i].scales;
        for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
                y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
                y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
                y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
            }
        }
    }
}
template <class A>
void dequant(const q::block_q8_K* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i, y += q::qk_k)
        for (int j = 0; j < q::qk_k; ++j) y[j] = x[i].d * static_cast<float>(x[i].qs[j]);
}
template <class A>
void dequant(const q::block_iq4_xs* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d);
        const std::uint8_t* qs = x[i].qs;
        for (int ib = 0; ib < 8; ++ib, qs += 16, y += 32) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x[i].scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * static_cast<float>(ls - 32);
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(tables<A>::iq4nl[qs[j] & 0xF]);
                y[j + 16] = dl * static_cast<float>(tables<A>::iq4nl[qs[j] >> 4]);
            }
        }
    }
}
// A trit of a tq1_0 byte: the byte times 3^k (mod 256), times 3, over 256.
template <class A>
TESSERA_ALWAYS_INLINE int trit(std::uint8_t b, int k) noexcept {
    const std::uint8_t q = static_cast<std::uint8_t>(b * tables<A>::pow3[k]);
    return (static_cast<std::uint16_t>(q) * 3) >> 8;
}
template <class A>
void dequant(const q::block_tq1_0* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d);
        for (int k = 0; k < 5; ++k)
            for (int m = 0; m < 32; ++m) *y++ = static_cast<float>(trit<A>(x[i].qs[m], k) - 1) * d;
        for (int k = 0; k < 5; ++k)
            for (int m = 0; m < 16; ++m) *y++ = static_cast<float>(trit<A>(x[i].qs[32 + m], k) - 1) * d;
        for (int k = 0; k < 4; ++k)
            for (int m = 0; m < 4; ++m) *y++ = static_cast<float>(trit<A>(x[i].qh[m], k) - 1) * d;
    }
}
template <class A>
void dequant(const q::block_tq2_0* x, float* y, std::int64_t n, simd::requires_arch<simd::scalar>) {
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const float d = h2f<A>(x[i].d);
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; ++l)
                for (int m = 0; m < 32; ++m) *y++ = static_cast<float>(((x[i].qs[j + m] >> (2 * l)) & 3) - 1) * d;
    }
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/dequant.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {

#define TESSERA_DEQUANT_KERNEL_(T)                                                                   \
    template <class A>                                                                               \
    struct dequantize_row_##T {                                                                      \
        void operator()(const quant::block_##T* x, float* y, std::int64_t n) const;                  \
    };                                                                                               \
    template <class A>                                                                               \
    void dequantize_row_##T<A>::operator()(const quant::block_##T* x, float* y, std::int64_t n) const { \
        qdetail::dequant<A>(x, y, n, A{});                                                           \
    }                                                                                                \
    TESSERA_KERNEL(dequantize_row_##T)

TESSERA_DEQUANT_KERNEL_(q4_0);
TESSERA_DEQUANT_KERNEL_(q4_1);
TESSERA_DEQUANT_KERNEL_(q5_0);
TESSERA_DEQUANT_KERNEL_(q5_1);
TESSERA_DEQUANT_KERNEL_(q8_0);
TESSERA_DEQUANT_KERNEL_(q8_1);
TESSERA_DEQUANT_KERNEL_(iq4_nl);
TESSERA_DEQUANT_KERNEL_(mxfp4);
TESSERA_DEQUANT_KERNEL_(q2_K);
TESSERA_DEQUANT_KERNEL_(q3_K);
TESSERA_DEQUANT_KERNEL_(q4_K);
TESSERA_DEQUANT_KERNEL_(q5_K);
TESSERA_DEQUANT_KERNEL_(q6_K);
TESSERA_DEQUANT_KERNEL_(q8_K);
TESSERA_DEQUANT_KERNEL_(iq4_xs);
TESSERA_DEQUANT_KERNEL_(tq1_0);
TESSERA_DEQUANT_KERNEL_(tq2_0);
#undef TESSERA_DEQUANT_KERNEL_

}  // namespace kernels
TESSERA_END_NAMESPACE
