// element_traits<T>: which type_id a C++ element type stores and how many tensor
// elements one T holds (1 for scalars, the block size for quantization blocks).
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/core/type_id.hpp"

TESSERA_BEGIN_NAMESPACE

template <class T>
struct element_traits;
template <> struct element_traits<float> { static constexpr type_id id = type_id::f32; static constexpr std::int64_t per_item = 1; };
template <> struct element_traits<double> { static constexpr type_id id = type_id::f64; static constexpr std::int64_t per_item = 1; };
template <> struct element_traits<f16> { static constexpr type_id id = type_id::f16; static constexpr std::int64_t per_item = 1; };
template <> struct element_traits<bf16> { static constexpr type_id id = type_id::bf16; static constexpr std::int64_t per_item = 1; };
template <> struct element_traits<std::int8_t> { static constexpr type_id id = type_id::i8; static constexpr std::int64_t per_item = 1; };
template <> struct element_traits<std::int16_t> { static constexpr type_id id = type_id::i16; static constexpr std::int64_t per_item = 1; };
template <> struct element_traits<std::int32_t> { static constexpr type_id id = type_id::i32; static constexpr std::int64_t per_item = 1; };
template <> struct element_traits<std::int64_t> { static constexpr type_id id = type_id::i64; static constexpr std::int64_t per_item = 1; };

// Block types opt in by specialising element_traits (quant/blocks.hpp does it for ggml's).
template <class T>
concept tensor_element = requires {
    { element_traits<std::remove_const_t<T>>::id } -> std::convertible_to<type_id>;
};

TESSERA_END_NAMESPACE
