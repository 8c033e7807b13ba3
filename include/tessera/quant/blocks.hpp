// ggml's quantization blocks as standard-layout structs, byte-identical to ggml's:
// same size, field order, and encodings (see docs/quantization.md for each format).
// `block_traits<B>` gives each block's geometry, type id and dot-product partner.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/element.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/core/type_id.hpp"

TESSERA_BEGIN_NAMESPACE
namespace quant {

inline constexpr int qk4_0 = 32, qk4_1 = 32, qk5_0 = 32, qk5_1 = 32, qk8_0 = 32, qk8_1 = 32;
inline constexpr int qk_k = 256;       // K-quant super-block
inline constexpr int k_scale_size = 12;  // packed 6-bit scales/mins of q4_K and q5_K

// ---- 32-element blocks -------------------------------------------------------------
struct block_q4_0 {  // x = d * (q - 8); byte j: low nibble = elem j, high = elem j+16
    f16 d;
    std::uint8_t qs[qk4_0 / 2];
};
struct block_q4_1 {  // x = d * q + m
    f16 d;
    f16 m;
    std::uint8_t qs[qk4_1 / 2];
};
struct block_q5_0 {  // x = d * ((nibble | hbit << 4) - 16); qh bit j = 5th bit of elem j (LE u32)
    f16 d;
    std::uint8_t qh[4];
    std::uint8_t qs[qk5_0 / 2];
};
struct block_q5_1 {  // x = d * q + m
    f16 d;
    f16 m;
    std::uint8_t qh[4];
    std::uint8_t qs[qk5_1 / 2];
};
struct block_q8_0 {  // x = d * q
    f16 d;
    std::int8_t qs[qk8_0];
};
struct block_q8_1 {  // x = d * q; s = d * sum(q)
    f16 d;
    f16 s;
    std::int8_t qs[qk8_1];
};
struct block_iq4_nl {  // x = d * kvalues_iq4nl[nibble], q4_0 nibble order
    f16 d;
    std::uint8_t qs[16];
};
struct block_mxfp4 {  // x = 2^(e-127) * e2m1(nibble), q4_0 nibble order
    std::uint8_t e;
    std::uint8_t qs[16];
};

// ---- 256-element K-quant super-blocks ----------------------------------------------
struct block_q2_K {
    std::uint8_t scales[qk_k / 16];  // low nibble scale, high nibble min, per 16 elements
    std::uint8_t qs[qk_k / 4];
    f16 d;
    f16 dmin;
};
struct block_q3_K {
    std::uint8_t hmask[qk_k / 8];
    std::uint8_t qs[qk_k / 4];
    std::uint8_t scales[12];  // sixteen 6-bit scales
    f16 d;
};
struct block_q4_K {
    f16 d;
    f16 dmin;
    std::uint8_t scales[k_scale_size];  // eight 6-bit scales and eight 6-bit mins
    std::uint8_t qs[qk_k / 2];
};
struct block_q5_K {
    f16 d;
    f16 dmin;
    std::uint8_t scales[k_scale_size];
    std::uint8_t qh[qk_k / 8];
    std::uint8_t qs[qk_k / 2];
};
struct block_q6_K {
    std::uint8_t ql[qk_k / 2];
    std::uint8_t qh[qk_k / 4];
    std::int8_t scales[qk_k / 16];
    f16 d;
};
struct block_q8_K {  // activations only: float scale, sums of each 16 quants
    float d;
    std::int8_t qs[qk_k];
    std::int16_t bsums[qk_k / 16];
};
struct block_iq4_xs {
    f16 d;
    std::uint16_t scales_h;
    std::uint8_t scales_l[qk_k / 64];
    std::uint8_t qs[qk_k / 2];
};
struct block_tq1_0 {  // ternary, 5 trits per byte in qs, 4 per byte in qh
    std::uint8_t qs[(qk_k - 4 * qk_k / 64) / 5];
    std::uint8_t qh[qk_k / 64];
    f16 d;
};
struct block_tq2_0 {  // ternary in 2 bits
    std::uint8_t qs[qk_k / 4];
    f16 d;
};

// ---- the lattice i-quants (iquants.hpp) and the newest small formats ---------------
struct block_iq2_xxs { f16 d; std::uint16_t qs[qk_k / 8]; };
struct block_iq2_xs { f16 d; std::uint16_t qs[qk_k / 8]; std::uint8_t scales[qk_k / 32]; };
struct block_iq3_xxs { f16 d; std::uint8_t qs[3 * qk_k / 8]; };
struct block_iq1_s { f16 d; std::uint8_t qs[qk_k / 8]; std::uint16_t qh[qk_k / 32]; };
struct block_iq3_s {
    f16 d;
    std::uint8_t qs[qk_k / 4];
    std::uint8_t qh[qk_k / 32];
    std::uint8_t signs[qk_k / 8];
    std::uint8_t scales[qk_k / 64];
};
struct block_iq2_s { f16 d; std::uint8_t qs[qk_k / 4]; std::uint8_t qh[qk_k / 32]; std::uint8_t scales[qk_k / 32]; };
struct block_iq1_m { std::uint8_t qs[qk_k / 8]; std::uint8_t qh[qk_k / 16]; std::uint8_t scales[qk_k / 32]; };
struct block_nvfp4 { std::uint8_t d[4]; std::uint8_t qs[32]; };
struct block_q1_0 { f16 d; std::uint8_t qs[16]; };
struct block_q2_0 { f16 d; std::uint8_t qs[16]; };

// ---- traits ---------------------------------------------------------------------------
// block_traits<B>: id (the GGUF type id), block_size (elements), type_size (bytes),
// dot_partner (the block type activations are quantized to for vec_dot), supported
// (tessera has kernels for it). The primary template is undefined: a type without
// traits is not a block.
template <class B>
struct block_traits;

// Every block type: (struct, type id, dot partner, has kernels).
#define TESSERA_FOR_EACH_BLOCK(X) \
    X(block_q8_0, q8_0, block_q8_0, true) \
    X(block_q8_1, q8_1, block_q8_1, true) \
    X(block_q8_K, q8_K, block_q8_K, true) \
    X(block_q4_0, q4_0, block_q8_0, true) \
    X(block_q4_1, q4_1, block_q8_1, true) \
    X(block_q5_0, q5_0, block_q8_0, true) \
    X(block_q5_1, q5_1, block_q8_1, true) \
    X(block_iq4_nl, iq4_nl, block_q8_0, true) \
    X(block_mxfp4, mxfp4, block_q8_0, true) \
    X(block_q2_K, q2_K, block_q8_K, true) \
    X(block_q3_K, q3_K, block_q8_K, true) \
    X(block_q4_K, q4_K, block_q8_K, true) \
    X(block_q5_K, q5_K, block_q8_K, true) \
    X(block_q6_K, q6_K, block_q8_K, true) \
    X(block_iq4_xs, iq4_xs, block_q8_K, true) \
    X(block_tq1_0, tq1_0, block_q8_K, true) \
    X(block_tq2_0, tq2_0, block_q8_K, true) \
    X(block_iq2_xxs, iq2_xxs, block_q8_K, true) \
    X(block_iq2_xs, iq2_xs, block_q8_K, true) \
    X(block_iq3_xxs, iq3_xxs, block_q8_K, true) \
    X(block_iq1_s, iq1_s, block_q8_K, true) \
    X(block_iq3_s, iq3_s, block_q8_K, true) \
    X(block_iq2_s, iq2_s, block_q8_K, true) \
    X(block_iq1_m, iq1_m, block_q8_K, true) \
    X(block_nvfp4, nvfp4, block_q8_0, true) \
    X(block_q1_0, q1_0, block_q8_0, true) \
    X(block_q2_0, q2_0, block_q8_0, true)

#define TESSERA_BLOCK_TRAITS_(B, ID, PARTNER, SUPPORTED)                                 \
    template <>                                                                          \
    struct block_traits<B> {                                                             \
        static constexpr type_id id = type_id::ID;                                       \
        static constexpr std::int64_t block_size = ::tessera::block_size(type_id::ID);   \
        static constexpr std::int64_t type_size = ::tessera::type_size(type_id::ID);     \
        using dot_partner = PARTNER;                                                     \
        static constexpr bool is_quantized = true;                                       \
        static constexpr bool supported = SUPPORTED;                                     \
        static_assert(sizeof(B) == static_cast<std::size_t>(type_size), #B " size differs from ggml"); \
        static_assert(std::is_standard_layout_v<B> && std::is_trivially_copyable_v<B>);  \
    };
TESSERA_FOR_EACH_BLOCK(TESSERA_BLOCK_TRAITS_)
#undef TESSERA_BLOCK_TRAITS_

// A ggml quantization block: a type with block_traits.
template <class B>
concept quant_block = requires {
    { block_traits<B>::id } -> std::convertible_to<type_id>;
    { block_traits<B>::block_size } -> std::convertible_to<std::int64_t>;
    typename block_traits<B>::dot_partner;
};

// Calls f.template operator()<B>() with the block type B of a run-time type id.
// Returns false (and does not call f) for non-block types.
template <class F>
constexpr bool visit_block_type(type_id t, F&& f) {
    switch (t) {
#define TESSERA_VISIT_(ID) \
    case type_id::ID: f.template operator()<block_##ID>(); return true;
        TESSERA_VISIT_(q4_0) TESSERA_VISIT_(q4_1) TESSERA_VISIT_(q5_0) TESSERA_VISIT_(q5_1)
        TESSERA_VISIT_(q8_0) TESSERA_VISIT_(q8_1) TESSERA_VISIT_(q2_K) TESSERA_VISIT_(q3_K)
        TESSERA_VISIT_(q4_K) TESSERA_VISIT_(q5_K) TESSERA_VISIT_(q6_K) TESSERA_VISIT_(q8_K)
        TESSERA_VISIT_(iq2_xxs) TESSERA_VISIT_(iq2_xs) TESSERA_VISIT_(iq3_xxs) TESSERA_VISIT_(iq1_s)
        TESSERA_VISIT_(iq4_nl) TESSERA_VISIT_(iq3_s) TESSERA_VISIT_(iq2_s) TESSERA_VISIT_(iq4_xs)
        TESSERA_VISIT_(iq1_m) TESSERA_VISIT_(tq1_0) TESSERA_VISIT_(tq2_0) TESSERA_VISIT_(mxfp4)
        TESSERA_VISIT_(nvfp4) TESSERA_VISIT_(q1_0) TESSERA_VISIT_(q2_0)
#undef TESSERA_VISIT_
        default: return false;
    }
}

}  // namespace quant

// Block types are tensor elements: one block holds block_size elements.
#define TESSERA_BLOCK_ELEMENT_(B, ID, PARTNER, SUPPORTED)                            \
    template <>                                                                      \
    struct element_traits<quant::B> {                                                \
        static constexpr type_id id = type_id::ID;                                   \
        static constexpr std::int64_t per_item = ::tessera::block_size(type_id::ID); \
    };
TESSERA_FOR_EACH_BLOCK(TESSERA_BLOCK_ELEMENT_)
#undef TESSERA_BLOCK_ELEMENT_

TESSERA_END_NAMESPACE
