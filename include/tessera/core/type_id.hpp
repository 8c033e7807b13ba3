// type_id: tensor element types, numbered exactly as GGUF/ggml number them, with
// each type's block geometry (elements per block, bytes per block).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE

enum class type_id : std::int32_t {
    f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3,
    // 4 and 5 were q4_2 and q4_3, removed from ggml
    q5_0 = 6, q5_1 = 7, q8_0 = 8, q8_1 = 9,
    q2_K = 10, q3_K = 11, q4_K = 12, q5_K = 13, q6_K = 14, q8_K = 15,
    iq2_xxs = 16, iq2_xs = 17, iq3_xxs = 18, iq1_s = 19, iq4_nl = 20, iq3_s = 21,
    iq2_s = 22, iq4_xs = 23,
    i8 = 24, i16 = 25, i32 = 26, i64 = 27, f64 = 28,
    iq1_m = 29, bf16 = 30,
    // 31..33 were q4_0_4_4, q4_0_4_8, q4_0_8_8 (now q4_0 plus run-time repacking)
    tq1_0 = 34, tq2_0 = 35,
    // 36..38 were iq4_nl_4_4, iq4_nl_4_8, iq4_nl_8_8
    mxfp4 = 39, nvfp4 = 40, q1_0 = 41, q2_0 = 42,
};

inline constexpr std::int32_t type_id_count = 43;  // ggml's GGML_TYPE_COUNT
inline constexpr std::int64_t qk_k = 256;          // K-quant super-block size

struct type_info {
    std::string_view name;     // ggml's type name ("q4_0", "f16", ...); "" for removed ids
    std::int64_t block_size;   // elements per block (1 for plain scalars); 0 for removed ids
    std::int64_t type_size;    // bytes per block
    bool is_quantized;
    bool is_integer;
};

namespace detail {
inline constexpr std::array<type_info, type_id_count> type_table = {{
    {"f32", 1, 4, false, false},       {"f16", 1, 2, false, false},
    {"q4_0", 32, 18, true, false},     {"q4_1", 32, 20, true, false},
    {"", 0, 0, false, false},          {"", 0, 0, false, false},
    {"q5_0", 32, 22, true, false},     {"q5_1", 32, 24, true, false},
    {"q8_0", 32, 34, true, false},     {"q8_1", 32, 36, true, false},
    {"q2_K", 256, 84, true, false},    {"q3_K", 256, 110, true, false},
    {"q4_K", 256, 144, true, false},   {"q5_K", 256, 176, true, false},
    {"q6_K", 256, 210, true, false},   {"q8_K", 256, 292, true, false},
    {"iq2_xxs", 256, 66, true, false}, {"iq2_xs", 256, 74, true, false},
    {"iq3_xxs", 256, 98, true, false}, {"iq1_s", 256, 50, true, false},
    {"iq4_nl", 32, 18, true, false},   {"iq3_s", 256, 110, true, false},
    {"iq2_s", 256, 82, true, false},   {"iq4_xs", 256, 136, true, false},
    {"i8", 1, 1, false, true},         {"i16", 1, 2, false, true},
    {"i32", 1, 4, false, true},        {"i64", 1, 8, false, true},
    {"f64", 1, 8, false, false},       {"iq1_m", 256, 56, true, false},
    {"bf16", 1, 2, false, false},      {"", 0, 0, false, false},
    {"", 0, 0, false, false},          {"", 0, 0, false, false},
    {"tq1_0", 256, 54, true, false},   {"tq2_0", 256, 66, true, false},
    {"", 0, 0, false, false},          {"", 0, 0, false, false},
    {"", 0, 0, false, false},          {"mxfp4", 32, 17, true, false},
    {"nvfp4", 64, 36, true, false},    {"q1_0", 128, 18, true, false},
    {"q2_0", 64, 18, true, false},
}};
}  // namespace detail

// True for ids that name a current ggml type (not out of range, not removed).
constexpr bool is_valid_type_id(std::int64_t raw) noexcept {
    return raw >= 0 && raw < type_id_count && detail::type_table[static_cast<std::size_t>(raw)].block_size != 0;
}

// The geometry of a valid type; throws for a removed or out-of-range id.
constexpr const type_info& info(type_id t) {
    const auto raw = static_cast<std::int64_t>(t);
    if (!is_valid_type_id(raw))
        fail_cat(errc::unsupported, "type id ", raw, " is not a valid ggml type");
    return detail::type_table[static_cast<std::size_t>(raw)];
}

constexpr std::string_view type_name(type_id t) { return info(t).name; }
constexpr std::int64_t block_size(type_id t) { return info(t).block_size; }
constexpr std::int64_t type_size(type_id t) { return info(t).type_size; }
constexpr bool is_quantized(type_id t) { return info(t).is_quantized; }
// f32, f16 or bf16: the types converted element by element to and from f32.
constexpr bool is_float(type_id t) { return t == type_id::f32 || t == type_id::f16 || t == type_id::bf16; }

// Types ggml uses only for quantized activations (the partner a weight type's dot
// product reads): q8_1 (of q4_1/q5_1) and q8_K (of the K-quants). ggml has no kernel
// with them as weights and llama-quantize never writes them, so a model file holding a
// weight of one of them is refused.
constexpr bool is_activation_only(type_id t) { return t == type_id::q8_1 || t == type_id::q8_K; }

// Bytes of a row of n elements; throws when n is not a whole number of blocks.
constexpr std::int64_t row_size(type_id t, std::int64_t n) {
    const type_info& ti = info(t);
    if (n < 0 || n % ti.block_size != 0)
        fail_cat(errc::shape_mismatch, "row of ", n, " elements is not a multiple of the ", ti.name, " block size ",
                 ti.block_size);
    return n / ti.block_size * ti.type_size;
}

// Looks a type up by its ggml name ("q4_K", "f16", ...).
constexpr std::optional<type_id> type_from_name(std::string_view name) noexcept {
    for (std::int32_t i = 0; i < type_id_count; ++i)
        if (detail::type_table[static_cast<std::size_t>(i)].block_size != 0 &&
            detail::type_table[static_cast<std::size_t>(i)].name == name)
            return static_cast<type_id>(i);
    return std::nullopt;
}

static_assert(row_size(type_id::q4_0, 64) == 36);
static_assert(type_name(type_id::bf16) == "bf16");
static_assert(!is_valid_type_id(4) && !is_valid_type_id(31) && !is_valid_type_id(43));

TESSERA_END_NAMESPACE
