// f16 (IEEE binary16) and bf16 (bfloat16) storage scalars with bit-exact conversions.
//
// Both conversions from f32 round to nearest, ties to even; overflow goes to
// infinity, values below the smallest subnormal go to (signed) zero. NaNs stay NaNs
// with their sign and the top bits of their payload, and come out quiet, which is
// what the x86 F16C instructions do, so scalar and SIMD paths agree bit for bit.
#pragma once

#include <bit>
#include <cstdint>

#include "tessera/config.hpp"

TESSERA_BEGIN_NAMESPACE

namespace detail {

TESSERA_ALWAYS_INLINE constexpr std::uint16_t f32_bits_to_f16_bits(std::uint32_t x) noexcept {
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)  // NaN: keep the payload's top bits, set the quiet bit
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u)  // at or past the midpoint between 65504 and 65536
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (ax < 0x38800000u) {  // below 2^-14: an f16 subnormal or zero
        const std::uint32_t e = ax >> 23;
        const std::uint32_t shift = 126u - e;  // value = m * 2^-shift in units of 2^-24
        if (e == 0 || shift > 24u) return static_cast<std::uint16_t>(sign);
        const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        std::uint32_t r = m >> shift;
        const std::uint32_t rem = m & ((1u << shift) - 1u);
        const std::uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return static_cast<std::uint16_t>(sign | r);
    }
    std::uint32_t h = (ax >> 13) - ((127u - 15u) << 10);
    const std::uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
}

TESSERA_ALWAYS_INLINE constexpr std::uint32_t f16_bits_to_f32_bits(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t e = (h >> 10) & 0x1fu;
    std::uint32_t m = h & 0x3ffu;
    if (e == 0x1fu)  // inf stays inf; NaN keeps its payload and becomes quiet
        return m == 0 ? (sign | 0x7f800000u) : (sign | 0x7fc00000u | (m << 13));
    if (e == 0) {
        if (m == 0) return sign;
        e = 1;  // normalise a subnormal
        while ((m & 0x400u) == 0) {
            m <<= 1;
            --e;
        }
        m &= 0x3ffu;
    }
    return sign | ((e + 112u) << 23) | (m << 13);
}

constexpr std::uint16_t f32_bits_to_bf16_bits(std::uint32_t x) noexcept {
    if ((x & 0x7fffffffu) > 0x7f800000u)  // NaN: truncate and force quiet
        return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace detail

// IEEE 754 binary16, stored as its 16 bits. Arithmetic happens in float.
struct f16 {
    std::uint16_t bits;

    static constexpr f16 from_bits(std::uint16_t b) noexcept { return f16{b}; }
    TESSERA_ALWAYS_INLINE static constexpr f16 from_float(float v) noexcept {
        return f16{detail::f32_bits_to_f16_bits(std::bit_cast<std::uint32_t>(v))};
    }
    TESSERA_ALWAYS_INLINE constexpr float to_float() const noexcept {
        return std::bit_cast<float>(detail::f16_bits_to_f32_bits(bits));
    }
    constexpr explicit operator float() const noexcept { return to_float(); }
    friend constexpr bool operator==(f16, f16) noexcept = default;  // bitwise
};

// bfloat16: the top half of an f32.
struct bf16 {
    std::uint16_t bits;

    static constexpr bf16 from_bits(std::uint16_t b) noexcept { return bf16{b}; }
    static constexpr bf16 from_float(float v) noexcept {
        return bf16{detail::f32_bits_to_bf16_bits(std::bit_cast<std::uint32_t>(v))};
    }
    constexpr float to_float() const noexcept {
        return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
    }
    constexpr explicit operator float() const noexcept { return to_float(); }
    friend constexpr bool operator==(bf16, bf16) noexcept = default;  // bitwise
};

static_assert(sizeof(f16) == 2 && alignof(f16) == 2);
static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2);

constexpr float to_float(float v) noexcept { return v; }  // so row code can widen f32 / f16 / bf16 alike
constexpr float to_float(f16 h) noexcept { return h.to_float(); }
constexpr float to_float(bf16 h) noexcept { return h.to_float(); }
constexpr f16 to_f16(float v) noexcept { return f16::from_float(v); }
constexpr bf16 to_bf16(float v) noexcept { return bf16::from_float(v); }

TESSERA_END_NAMESPACE
