// buffer: one allocation of a buffer type (ggml_backend_buffer). Buffers own memory;
// tensors point into it. Freeing is the model's destructor.
//
// Requirements of a model B (b: B&, cb: const B&, x: node&, cx: const node&,
// p: const void*, q: void*, off, size: size_t, v: uint8_t):
//   cb.name()                      -> string-like  required
//   cb.base()                      -> std::byte*   required  first byte (null for size 0)
//   cb.size()                      -> size_t       required
//   b.init_tensor(x)               -> void         optional  called when x is placed here; default nothing
//   b.set_tensor(x, p, off, size)  -> void         optional  host -> tensor bytes; default memcpy
//   b.get_tensor(cx, q, off, size) -> void         optional  tensor bytes -> host; default memcpy
//   b.memset_tensor(x, v, off, size)-> void        optional  default memset
//   b.cpy_tensor(cx, x)            -> bool         optional  device-side copy src -> dst; default false (not done)
//   b.clear(v)                     -> void         optional  fill the whole buffer; default memset
//   b.reset()                      -> void         optional  forget per-tensor state; default nothing
// The memcpy/memset defaults are right for memory the CPU can address; a model with
// device memory provides its own.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tessera/backend/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

template <class B>
concept buffer = requires(const B& cb) {
    { cb.name() } -> std::convertible_to<std::string_view>;
    { cb.base() } -> std::convertible_to<std::byte*>;
    { cb.size() } -> std::convertible_to<std::size_t>;
};

template <buffer B>
void init_tensor(B& b, node& x) {
    if constexpr (requires { b.init_tensor(x); }) b.init_tensor(x);
}
template <buffer B>
void set_tensor(B& b, node& x, const void* p, std::size_t off, std::size_t size) {
    if constexpr (requires { b.set_tensor(x, p, off, size); }) b.set_tensor(x, p, off, size);
    else std::memcpy(x.bytes() + off, p, size);
}
template <buffer B>
void get_tensor(B& b, const node& x, void* q, std::size_t off, std::size_t size) {
    if constexpr (requires { b.get_tensor(x, q, off, size); }) b.get_tensor(x, q, off, size);
    else std::memcpy(q, x.bytes() + off, size);
}
template <buffer B>
void memset_tensor(B& b, node& x, std::uint8_t v, std::size_t off, std::size_t size) {
    if constexpr (requires { b.memset_tensor(x, v, off, size); }) b.memset_tensor(x, v, off, size);
    else std::memset(x.bytes() + off, v, size);
}
template <buffer B>
bool cpy_tensor(B& b, const node& src, node& dst) {
    if constexpr (requires { { b.cpy_tensor(src, dst) } -> std::convertible_to<bool>; }) return b.cpy_tensor(src, dst);
    else return false;
}
template <buffer B>
void clear(B& b, std::uint8_t v) {
    if constexpr (requires { b.clear(v); }) b.clear(v);
    else if (b.size() && b.base()) std::memset(b.base(), v, b.size());
}
template <buffer B>
void reset(B& b) {
    if constexpr (requires { b.reset(); }) b.reset();
}

}  // namespace backend
TESSERA_END_NAMESPACE
