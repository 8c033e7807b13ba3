// event: a point in a backend's stream that other streams or the host can wait for
// (ggml_backend_event). Created by a device (device::event_new); devices without
// events return an empty handle, and callers then synchronize the whole backend.
//
// Requirements of a model E (e: E&, s: any_backend&):
//   e.record(s)       -> void   required  mark the current end of s's work
//   e.synchronize()   -> void   required  block the host until the recorded work is done
//   e.wait(s)         -> void   optional  make s wait for it; default synchronize()
#pragma once

#include <concepts>

#include "tessera/backend/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

template <class E>
concept event = requires(E& e, any_backend& s) {
    e.record(s);
    e.synchronize();
};

template <event E>
void event_wait(E& e, any_backend& s) {
    if constexpr (requires { e.wait(s); }) e.wait(s);
    else e.synchronize();
}

}  // namespace backend
TESSERA_END_NAMESPACE
