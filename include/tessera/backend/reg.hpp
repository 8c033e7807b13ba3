// backend_reg: a backend family that enumerates its devices (ggml_backend_reg), and
// hands out extra entry points by name (ggml's get_proc_address: "set_n_threads",
// "set_abort_callback", "get_extra_bufts", ...).
//
// Requirements of a model R (r: R&, cr: const R&, i: size_t, s: string_view):
//   cr.name()             -> string-like  required
//   cr.device_count()     -> size_t       required
//   r.device(i)           -> any_device   required  0 <= i < device_count()
//   cr.proc_address(s)    -> void*        optional  a function pointer, or null; default null
#pragma once

#include <concepts>
#include <cstddef>
#include <string_view>

#include "tessera/backend/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

template <class R>
concept backend_reg = requires(R& r, const R& cr, std::size_t i) {
    { cr.name() } -> std::convertible_to<std::string_view>;
    { cr.device_count() } -> std::convertible_to<std::size_t>;
    { r.device(i) } -> std::same_as<any_device>;
};

template <backend_reg R>
void* get_proc_address(const R& r, std::string_view s) {
    if constexpr (requires { { r.proc_address(s) } -> std::convertible_to<void*>; }) return r.proc_address(s);
    else return nullptr;
}

// The function types of the well-known proc addresses.
using set_n_threads_fn = void (*)(any_backend&, int);
using set_abort_callback_fn = void (*)(any_backend&, bool (*)(void*), void*);
// "progress": lets a family's transfers move on while the caller computes on the CPU (MPI:
// Open MPI advances large messages only inside MPI calls); call it between nodes, e.g. from
// a CPU stream's abort callback. Returns false (never asks to abort).
using progress_fn = bool (*)();

}  // namespace backend
TESSERA_END_NAMESPACE
