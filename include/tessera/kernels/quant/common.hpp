// Helpers shared by the quantized-block kernels (kernels/quant/*.hpp).
//
// Everything here is a template on the arch tag A, so that a copy compiled with wide
// flags in a per-arch unit carries that arch in its symbol name (see
// tests/simd/check_odr.py): f16 conversions, the 6-bit K-quant scale unpacking and the
// lookup tables of iq4_nl and mxfp4. The x86 vector helpers (reductions, broadcasts,
// VNNI dot products) and the F16C conversions are in kernels/x86/quant/common.hpp, the
// AArch64 ones (FCVT conversions, the 8-bit dot product per level) in
// kernels/arm/quant/common.hpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/ref_common.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

using simd::at_least;

// ---- f16 <-> f32 ------------------------------------------------------------------
// The bit-exact conversions of core/f16.hpp, restated as arch templates; an ISA file
// may add a body for its tag (x86: F16C from AVX2 on), which h2f_bits / f2h pick.
template <class A>
TESSERA_ALWAYS_INLINE float h2f_bits(std::uint16_t h, simd::requires_arch<simd::scalar>) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t e = (h >> 10) & 0x1fu;
    std::uint32_t m = h & 0x3ffu;
    std::uint32_t bits;
    if (e == 0x1fu) {
        bits = m == 0 ? (sign | 0x7f800000u) : (sign | 0x7fc00000u | (m << 13));
    } else if (e == 0) {
        if (m == 0) {
            bits = sign;
        } else {
            e = 1;
            while ((m & 0x400u) == 0) {
                m <<= 1;
                --e;
            }
            bits = sign | ((e + 112u) << 23) | ((m & 0x3ffu) << 13);
        }
    } else {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    }
    return __builtin_bit_cast(float, bits);
}
template <class A>
TESSERA_ALWAYS_INLINE f16 f2h(float v, simd::requires_arch<simd::scalar>) noexcept {
    const std::uint32_t x = __builtin_bit_cast(std::uint32_t, v);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t ax = x & 0x7fffffffu;
    std::uint32_t h;
    if (ax > 0x7f800000u) {
        h = sign | 0x7e00u | ((ax >> 13) & 0x3ffu);
    } else if (ax >= 0x477ff000u) {
        h = sign | 0x7c00u;
    } else if (ax < 0x38800000u) {
        const std::uint32_t e = ax >> 23;
        const std::uint32_t shift = 126u - e;
        if (e == 0 || shift > 24u) {
            h = sign;
        } else {
            const std::uint32_t mm = (ax & 0x7fffffu) | 0x800000u;
            std::uint32_t r = mm >> shift;
            const std::uint32_t rem = mm & ((1u << shift) - 1u);
            const std::uint32_t half = 1u << (shift - 1u);
            if (rem > half || (rem == half && (r & 1u))) ++r;
            h = sign | r;
        }
    } else {
        h = (ax >> 13) - ((127u - 15u) << 10);
        const std::uint32_t rem = ax & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
        h |= sign;
    }
    return f16::from_bits(static_cast<std::uint16_t>(h));
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#include "tessera/kernels/x86/quant/common.hpp"
#include "tessera/kernels/arm/quant/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

template <class A>
TESSERA_ALWAYS_INLINE float h2f_bits(std::uint16_t h) noexcept {
    return h2f_bits<A>(h, A{});
}
template <class A>
TESSERA_ALWAYS_INLINE float h2f(f16 h) noexcept {
    return h2f_bits<A>(h.bits, A{});
}
template <class A>
TESSERA_ALWAYS_INLINE f16 f2h(float v) noexcept {
    return f2h<A>(v, A{});
}

// C's roundf: round half away from zero.
template <class A>
TESSERA_ALWAYS_INLINE float round_away(float x) noexcept {
    return __builtin_roundf(x);
}

// 2^(e-128) as a float (mxfp4's E8M0 scale, halved because its table is doubled).
template <class A>
TESSERA_ALWAYS_INLINE float e8m0_half(std::uint8_t e) noexcept {
    const std::uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<std::uint32_t>(e - 1) << 23);
    return __builtin_bit_cast(float, bits);
}

// The 6-bit scale and min number j (0..7) of a q4_K / q5_K super-block.
template <class A>
TESSERA_ALWAYS_INLINE void scale_min_k4(int j, const std::uint8_t* q, std::uint8_t& d, std::uint8_t& m) noexcept {
    if (j < 4) {
        d = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        d = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// All sixteen 6-bit scales of a q3_K super-block, unbiased (-32..31).
template <class A>
TESSERA_ALWAYS_INLINE void q3k_scales(const std::uint8_t* s, std::int8_t out[16]) noexcept {
    for (int j = 0; j < 16; ++j) {
        const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
        const int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = static_cast<std::int8_t>((lo | (hi << 4)) - 32);
    }
}

// Sign multipliers of 8 values as bytes: byte j = -1 where bit j of the index is set, else
// +1 (for vpsignb); and the same for the i-quants' 7-bit sign codes, whose eighth bit is
// the parity of the other seven.
constexpr std::uint64_t sign_bytes_of(std::uint32_t bits) noexcept {
    std::uint64_t v = 0;
    for (int j = 0; j < 8; ++j) v |= static_cast<std::uint64_t>((bits >> j) & 1 ? 0xFF : 0x01) << (8 * j);
    return v;
}
struct sign_byte_tables {
    std::uint64_t byte[256];
    std::uint64_t code7[128];
};
constexpr sign_byte_tables make_sign_byte_tables() noexcept {
    sign_byte_tables t{};
    for (std::uint32_t i = 0; i < 256; ++i) t.byte[i] = sign_bytes_of(i);
    for (std::uint32_t c = 0; c < 128; ++c) {
        std::uint32_t p = 0;
        for (int j = 0; j < 7; ++j) p ^= (c >> j) & 1;
        t.code7[c] = sign_bytes_of(c | (p << 7));
    }
    return t;
}

// Lookup tables, as static members so each arch gets its own tagged copy.
template <class A>
struct tables {
    static constexpr sign_byte_tables signs = make_sign_byte_tables();
    static constexpr std::int8_t iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                              1,    13,   25,  38,  53,  69,  89,  113};
    static constexpr std::int8_t mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    static constexpr std::uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
};

}  // namespace qdetail
}  // namespace kernels

namespace quant::detail {
// The reference bodies the scalar kernels run (quant::*_unchecked<A>) widen f16 with the
// arch's conversion (F16C on x86), as the kernels' own bodies do.
template <class A>
    requires simd::arch_tag<A>
struct f16_widen<A> {
    TESSERA_ALWAYS_INLINE static float apply(f16 h) noexcept { return kernels::qdetail::h2f<A>(h); }
};
}  // namespace quant::detail

TESSERA_END_NAMESPACE
