// buffer_type: a kind of memory a device offers (ggml_backend_buffer_type).
//
// Requirements of a model T (t: T&, ct: const T&, n: size_t, x: const node&):
//   ct.name()          -> string-like   required   e.g. "CPU"
//   t.alloc_buffer(n)  -> any_buffer    required   a buffer of n bytes (n may be 0)
//   ct.alignment()     -> size_t        required   of every tensor placed in it (power of two)
//   ct.max_size()      -> size_t        optional   largest buffer; default SIZE_MAX
//   ct.alloc_size(x)   -> size_t        optional   bytes tensor x needs here; default x's nbytes
//   ct.is_host()       -> bool          optional   memory the CPU can read; default false
//   ct.device()        -> any_device    optional   the device it belongs to; default none
// The optional entries are read through the customization points below, which pick
// the model's member when it has one (detected with `requires`) and the default
// otherwise.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tessera/backend/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

template <class T>
concept buffer_type = requires(T& t, const T& ct, std::size_t n) {
    { ct.name() } -> std::convertible_to<std::string_view>;
    { t.alloc_buffer(n) } -> std::same_as<any_buffer>;
    { ct.alignment() } -> std::convertible_to<std::size_t>;
};

template <buffer_type T>
std::size_t get_max_size(const T& t) {
    if constexpr (requires { { t.max_size() } -> std::convertible_to<std::size_t>; }) return t.max_size();
    else return SIZE_MAX;
}
template <buffer_type T>
std::size_t get_alloc_size(const T& t, const node& x) {
    if constexpr (requires { { t.alloc_size(x) } -> std::convertible_to<std::size_t>; }) return t.alloc_size(x);
    else return x.lay.nbytes();
}
template <buffer_type T>
bool is_host(const T& t) {
    if constexpr (requires { { t.is_host() } -> std::convertible_to<bool>; }) return t.is_host();
    else return false;
}

}  // namespace backend
TESSERA_END_NAMESPACE
