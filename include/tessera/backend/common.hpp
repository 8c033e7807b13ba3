// Shared vocabulary of the backend layer: device types and capabilities, buffer
// usage, the graph a backend computes (a span of nodes), and forward declarations of
// the type-erased handles (tessera/backend/any.hpp) that the concepts mention.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

using graph::node;

// ggml_backend_dev_type
enum class device_type : std::uint8_t {
    cpu,    // the host CPU
    gpu,    // a device with its own memory
    accel,  // an accelerator used together with the CPU (host memory), e.g. a repack buffer type
};
constexpr std::string_view device_type_name(device_type t) noexcept {
    switch (t) {
        case device_type::cpu: return "CPU";
        case device_type::gpu: return "GPU";
        case device_type::accel: return "ACCEL";
    }
    return "?";
}

// ggml_backend_buffer_usage
enum class buffer_usage : std::uint8_t { any = 0, weights = 1, compute = 2 };

// ggml_backend_dev_caps
struct device_caps {
    bool async = false;                 // asynchronous tensor I/O and compute
    bool host_buffer = false;           // offers a pinned host buffer type
    bool buffer_from_host_ptr = false;  // can wrap user memory (zero copy)
    bool events = false;                // event_new works
    bool buffer_from_file = false;      // can map a file's bytes itself (a remote rank: no byte travels)
};

// Bytes of a file a device maps itself (device::buffer_from_file): `size` bytes at `offset`
// of the file at `path`; `fingerprint` identifies the file's contents (for a GGUF file,
// gguf::header_fingerprint), so a device that opens another file by that name refuses it.
struct file_region {
    std::string path;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    std::uint64_t fingerprint = 0;
};

// ggml_backend_dev_props
struct device_props {
    std::string name;
    std::string description;
    std::size_t memory_free = 0;
    std::size_t memory_total = 0;
    device_type type = device_type::cpu;
    device_caps caps;
};

// ggml_guid: 16 bytes that identify a backend implementation.
using guid = std::array<std::uint8_t, 16>;

// The nodes a backend computes: a whole cgraph or a part of it (a scheduler split, one
// node for compare_graph_backend). Non-owning.
struct graph_view {
    std::span<node* const> nodes;
    std::span<node* const> leafs;

    graph_view() = default;
    graph_view(const graph::cgraph& g) noexcept : nodes(g.nodes()), leafs(g.leafs()) {}  // NOLINT: implicit
    graph_view(std::span<node* const> n, std::span<node* const> l = {}) noexcept : nodes(n), leafs(l) {}
    std::size_t size() const noexcept { return nodes.size(); }
};

// Type-erased handles (tessera/backend/any.hpp).
class any_buffer_type;
class any_buffer;
class any_backend;
class any_event;
class any_device;
class any_reg;

namespace detail {
inline std::string tensor_desc(const node& n) {
    return (n.name.empty() ? std::string("tensor") : "'" + n.name + "'") + " " + n.lay.to_string();
}
}  // namespace detail

}  // namespace backend
TESSERA_END_NAMESPACE
