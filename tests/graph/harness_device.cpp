// The op harness's device target (see harness.hpp): TESSERA_HARNESS_DEVICE names a device of
// the global registry (Vulkan0, ...). This unit is the only one of the op-test binary that
// includes the registry and with it the device headers.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness.hpp"
#include "tessera/backend/registry.hpp"
#include "tessera/backend/vulkan.hpp"  // the Vulkan family joins registry::global() when included

namespace {

using namespace tessera;
using namespace tessera::backend;

harness::device_target* make_target() {
    static harness::device_target t;
    static bool done = false;
    if (done) return &t;
    done = true;
    t.name = std::getenv("TESSERA_HARNESS_DEVICE");
    const any_device d = registry::global().dev_by_name(t.name);
    if (!d) {
        t.missing = "no device named '" + t.name + "' (registered: " + registry::global().names() + ")";
        return &t;
    }
    static any_backend be = d.init_backend({});
    t.refusal = [d](const graph::cgraph& g) -> std::string {
        for (const node* x : g.nodes())
            if (!graph::op_is_view(x->op) && x->op != graph::op_kind::none && !d.supports_op(*x))
                return std::string(graph::op_name(x->op)) + " " + std::string(type_name(x->lay.type));
        return {};
    };
    t.compute = [d](graph::cgraph& g, const harness::image& im) {
        // one device buffer holds the whole image: an i8 tensor spans it for the upload and
        // the read-back; every owned tensor moves to its offset in it
        any_buffer buf = d.buffer_type().alloc_buffer(im.total);
        graph::context meta({.no_alloc = true});
        node* all = meta.new_tensor(type_id::i8, {static_cast<std::int64_t>(im.total), 1, 1, 1});
        tensor_alloc(buf, *all, buf.base());
        for (std::size_t i = 0; i < im.owned.size(); ++i) {
            graph::context::bind(*im.owned[i], nullptr);
            tensor_alloc(buf, *im.owned[i], buf.base() + im.offs[i]);
        }
        tensor_set(*all, im.base, 0, im.total);
        be.graph_compute(g);
        be.synchronize();
        tensor_get(*all, im.base, 0, im.total);
        for (std::size_t i = 0; i < im.owned.size(); ++i) graph::context::bind(*im.owned[i], im.base + im.offs[i]);
    };
    std::atexit([] {
        std::printf("harness device %s: %zu cases ran on the device, %zu refused\n", t.name.c_str(), t.ran, t.refused);
        for (const auto& [why, n] : t.refusals) std::printf("  refused %zu x: %s\n", n, why.c_str());
        std::fflush(stdout);
        if (t.ran == 0 && t.missing.empty()) {
            // nothing of this group ran on the device: report "skipped", not a vacuous pass
            // (the group's CPU-side checks ran in the graph_* tests)
            std::printf("SKIP: no case of this run computes on %s\n", t.name.c_str());
            std::fflush(stdout);
            std::_Exit(77);
        }
    });
    return &t;
}

[[maybe_unused]] const bool registered = [] {
    harness::device_provider() = make_target;
    return true;
}();

}  // namespace
