// Constant tables of the non-linear formats: data only, no functions, so this header
// is safe to include from every arch unit.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "tessera/config.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

// iq4_nl / iq4_xs: the 16 levels a nibble selects (ggml's kvalues_iq4nl).
inline constexpr std::int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                  1,    13,   25,  38,  53,  69,  89,  113};

// mxfp4: E2M1 values doubled so they are integers (0, 0.5, 1, 1.5, 2, 3, 4, 6 times two),
// sign in bit 3. The block scale is halved to compensate (e8m0_half below).
inline constexpr std::int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

namespace detail {
constexpr std::array<float, 256> make_e8m0_half() {
    std::array<float, 256> t{};
    for (std::uint32_t e = 0; e < 256; ++e) {
        // 2^(e-127) / 2 = 2^(e-128); the two smallest exponents are f32 subnormals.
        const std::uint32_t bits = e < 2 ? (0x00200000u << e) : ((e - 1u) << 23);
        t[e] = std::bit_cast<float>(bits);
    }
    return t;
}
// nvfp4's UE4M3 scale byte (4 exponent bits, bias 7, 3 mantissa bits; bit 7 ignored;
// 0 and 0x7F are zero) as a float, halved like e8m0_half to pair with the doubled
// kvalues_mxfp4: ggml's ggml_ue4m3_to_fp32.
constexpr std::array<float, 256> make_ue4m3_half() {
    std::array<float, 256> t{};
    for (std::uint32_t x = 0; x < 256; ++x) {
        const std::uint32_t e = (x >> 3) & 0xF, m = x & 7;
        if (x == 0 || x == 0x7F) continue;
        float v = e == 0 ? static_cast<float>(m) / 512.0f : (8.0f + static_cast<float>(m)) / 8.0f;
        for (std::uint32_t k = 7; k < e; ++k) v *= 2.0f;  // 2^(e - 7), exact
        for (std::uint32_t k = e == 0 ? 7 : e; k < 7; ++k) v *= 0.5f;
        t[x] = v * 0.5f;
    }
    return t;
}
}  // namespace detail

// nvfp4's scale byte as 2^(e-7) (1 + m/8) / 2 (subnormals m 2^-9 / 2).
inline constexpr std::array<float, 256> ue4m3_half = detail::make_ue4m3_half();
static_assert(ue4m3_half[0x38] == 0.5f && ue4m3_half[0x7F] == 0.0f && ue4m3_half[0xFF] == 240.0f &&
              ue4m3_half[0x7E] == 224.0f && ue4m3_half[1] == 0x1p-10f && ue4m3_half[0x08] == 0x1p-7f);

// mxfp4's scale byte e (E8M0) as the float 2^(e-128), to multiply kvalues_mxfp4 with.
// e = 255 (NaN in E8M0) comes out as 2^127, as in ggml's conversion.
inline constexpr std::array<float, 256> e8m0_half = detail::make_e8m0_half();

static_assert(e8m0_half[128] == 1.0f && e8m0_half[127] == 0.5f && e8m0_half[130] == 4.0f &&
              e8m0_half[255] == 0x1p127f && e8m0_half[0] == 0x1p-128f);

}  // namespace quant
TESSERA_END_NAMESPACE
