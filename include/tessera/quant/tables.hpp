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
}  // namespace detail

// mxfp4's scale byte e (E8M0) as the float 2^(e-128), to multiply kvalues_mxfp4 with.
// e = 255 (NaN in E8M0) comes out as 2^127, as in ggml's conversion.
inline constexpr std::array<float, 256> e8m0_half = detail::make_e8m0_half();

static_assert(e8m0_half[128] == 1.0f && e8m0_half[127] == 0.5f && e8m0_half[130] == 4.0f &&
              e8m0_half[255] == 0x1p127f && e8m0_half[0] == 0x1p-128f);

}  // namespace quant
TESSERA_END_NAMESPACE
