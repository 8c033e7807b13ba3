// device: one piece of hardware (ggml_backend_device): what it is, its memory, its
// buffer types, which ops and buffers it can work with, and the streams it creates.
//
// Requirements of a model D (d: D&, cd: const D&, x: const node&, bt: const
// any_buffer_type&, params: string_view, p: void*, n: size_t):
//   cd.name(), cd.description()       -> string-like       required
//   cd.memory()                       -> memory_info       required  {free, total} bytes
//   cd.type()                         -> device_type       required
//   d.init_backend(params)            -> any_backend       required  a new stream
//   d.buffer_type()                   -> any_buffer_type   required  its default buffer type
//   cd.supports_op(x)                 -> bool              required  can compute node x
//   cd.supports_buft(bt)              -> bool              required  can read/write buffers of bt
//   d.host_buffer_type()              -> any_buffer_type   optional  pinned host memory; default none
//   d.buffer_from_host_ptr(p, n, n)   -> any_buffer        optional  wrap user memory; default: refused
//   d.buffer_from_file(r)             -> any_buffer        optional  a buffer over the bytes of a file region
//                                                                    (r: const file_region&) that the device maps
//                                                                    itself (a remote rank); default: refused
//   cd.offload_op(x)                  -> bool              optional  worth moving x here from the CPU; default false
//   cd.emulated()                     -> bool              optional  a device type emulated on the host's CPU (a
//                                                                    software GPU driver such as lavapipe) or a remote
//                                                                    host's CPU; default false
//   d.event_new()                     -> any_event         optional  default none (no events)
//   d.extra_buffer_types()            -> vector<any_buffer_type> optional  e.g. a repack type; default none
//   cd.caps()                         -> device_caps       optional  default: derived from which optional entries exist
#pragma once

#include <concepts>
#include <cstddef>
#include <string_view>

#include "tessera/backend/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

struct memory_info {
    std::size_t free = 0;
    std::size_t total = 0;
};

template <class D>
concept device = requires(D& d, const D& cd, const node& x, const any_buffer_type& bt, std::string_view params) {
    { cd.name() } -> std::convertible_to<std::string_view>;
    { cd.description() } -> std::convertible_to<std::string_view>;
    { cd.memory() } -> std::convertible_to<memory_info>;
    { cd.type() } -> std::convertible_to<device_type>;
    { d.init_backend(params) } -> std::same_as<any_backend>;
    { d.buffer_type() } -> std::same_as<any_buffer_type>;
    { cd.supports_op(x) } -> std::convertible_to<bool>;
    { cd.supports_buft(bt) } -> std::convertible_to<bool>;
};

// What the optional entries say about a model, detected with `requires`.
template <class D>
inline constexpr bool has_host_buffer_type = requires(D& d) { { d.host_buffer_type() } -> std::same_as<any_buffer_type>; };
template <class D>
inline constexpr bool has_buffer_from_host_ptr =
    requires(D& d, void* p, std::size_t n) { { d.buffer_from_host_ptr(p, n, n) } -> std::same_as<any_buffer>; };
template <class D>
inline constexpr bool has_buffer_from_file =
    requires(D& d, const file_region& r) { { d.buffer_from_file(r) } -> std::same_as<any_buffer>; };
template <class D>
inline constexpr bool has_events = requires(D& d) { { d.event_new() } -> std::same_as<any_event>; };

template <device D>
device_caps get_caps(const D& d) {
    if constexpr (requires { { d.caps() } -> std::convertible_to<device_caps>; }) return d.caps();
    else return device_caps{false, has_host_buffer_type<D>, has_buffer_from_host_ptr<D>, has_events<D>, has_buffer_from_file<D>};
}

template <device D>
bool offload_op(const D& d, const node& x) {
    if constexpr (requires { { d.offload_op(x) } -> std::convertible_to<bool>; }) return d.offload_op(x);
    else return false;
}

template <device D>
bool emulated(const D& d) {
    if constexpr (requires { { d.emulated() } -> std::convertible_to<bool>; }) return d.emulated();
    else return false;
}

}  // namespace backend
TESSERA_END_NAMESPACE
