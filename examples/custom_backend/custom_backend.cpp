// custom_backend: a backend written outside tessera, in one file.
//
// "TOY" is a device that computes element-wise f32 add and mul (nothing else) on host
// memory. It models tessera's backend concepts with plain structs: no base classes,
// no registration macros. Only the required entries are written; everything optional
// (max buffer size, alloc size, async I/O, events, graph plans, ...) takes the
// concept's default. The scheduler then runs a graph on TOY and the CPU together.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/backend/all.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/backend/cpu.hpp"

namespace toy {

using namespace tessera;
namespace be = tessera::backend;

be::any_device device();
be::any_buffer_type buffer_type();

// A buffer: owns host memory. Reads and writes use the defaults (memcpy).
struct buffer {
    std::vector<std::byte> mem;
    std::string_view name() const { return "TOY"; }
    std::byte* base() const { return mem.empty() ? nullptr : const_cast<std::byte*>(mem.data()); }
    std::size_t size() const { return mem.size(); }
};
static_assert(be::buffer<buffer>);

struct buffer_type_model {
    std::string_view name() const { return "TOY"; }
    be::any_buffer alloc_buffer(std::size_t n) const { return be::any_buffer(buffer{std::vector<std::byte>(n)}); }
    std::size_t alignment() const { return 32; }
    bool is_host() const { return true; }  // host memory: the CPU can read it too
    be::any_device device() const { return toy::device(); }
};
static_assert(be::buffer_type<buffer_type_model>);

inline bool computes(const graph::node& n) {
    using graph::op_kind;
    if (n.op == op_kind::none || n.op == op_kind::view || n.op == op_kind::reshape) return true;
    if (n.op != op_kind::add && n.op != op_kind::mul) return false;
    // f32, same shapes, contiguous: the only case this toy handles
    for (const graph::node* s : {n.src[0], n.src[1]})
        if (s->lay.type != type_id::f32 || s->lay.ne != n.lay.ne || !s->lay.is_contiguous()) return false;
    return n.lay.type == type_id::f32;
}

// The stream: computes node by node on the calling thread.
struct stream {
    int* ops_done;  // counts what it computed, for the demo
    std::string_view name() const { return "TOY"; }
    be::guid guid() const { return {'t', 'o', 'y', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}; }
    be::any_device device() const { return toy::device(); }
    void graph_compute(be::graph_view g) const {
        for (graph::node* n : g.nodes) {
            if (!computes(*n)) fail(errc::unsupported, "TOY: cannot compute '" + n->name + "'");
            if (n->op != graph::op_kind::add && n->op != graph::op_kind::mul) continue;
            const auto* a = reinterpret_cast<const float*>(n->src[0]->bytes());
            const auto* b = reinterpret_cast<const float*>(n->src[1]->bytes());
            auto* y = reinterpret_cast<float*>(n->bytes());
            for (std::int64_t i = 0; i < n->lay.nelements(); ++i) y[i] = n->op == graph::op_kind::add ? a[i] + b[i] : a[i] * b[i];
            ++*ops_done;
        }
    }
};
static_assert(be::backend<stream>);

inline int ops_done = 0;

struct device_model {
    std::string_view name() const { return "TOY"; }
    std::string_view description() const { return "a toy out-of-tree backend"; }
    be::memory_info memory() const { return {1 << 20, 1 << 20}; }
    be::device_type type() const { return be::device_type::accel; }
    be::any_backend init_backend(std::string_view) const { return be::any_backend(stream{&ops_done}); }
    be::any_buffer_type buffer_type() const { return toy::buffer_type(); }
    bool supports_op(const graph::node& n) const { return computes(n); }
    bool supports_buft(const be::any_buffer_type& bt) const { return bt.is_host(); }  // any host memory
};
static_assert(be::device<device_model>);
static_assert(!be::has_events<device_model>);  // no event_new(): caps().events is false

struct reg_model {
    std::string_view name() const { return "TOY"; }
    std::size_t device_count() const { return 1; }
    be::any_device device(std::size_t) const { return toy::device(); }
};
static_assert(be::backend_reg<reg_model>);

inline be::any_device device() {
    static const be::any_device d{device_model{}};
    return d;
}
inline be::any_buffer_type buffer_type() {
    static const be::any_buffer_type t{buffer_type_model{}};
    return t;
}
inline be::any_reg reg() {
    static const be::any_reg r{reg_model{}};
    return r;
}

}  // namespace toy

int main(int argc, char** argv) {
    using namespace tessera;
    namespace be = tessera::backend;
    return cli::run("custom_backend", "", [&](cli::state&) {
        if (cli::help_only(argc, argv, "usage: custom_backend\nRuns a small graph on an out-of-tree toy device and the CPU, and checks the result.\n  -h, --help   this text\n  --version    version, compiler and SIMD arch\n"))
            return 0;
        be::registry::global().register_backend(toy::reg());
        std::printf("devices: %s\n", be::registry::global().names().c_str());
        be::any_backend t = be::registry::global().init_by_name("toy");
        be::any_backend cpu = be::cpu_init(2);

        // y = silu(a * b + a): TOY takes the mul and the add, the CPU the silu
        graph::context ctx({true});
        auto a = graph::new_tensor(ctx, type_id::f32, {8, 1, 1, 1}, "a");
        auto b = graph::new_tensor(ctx, type_id::f32, {8, 1, 1, 1}, "b");
        a.set_input();
        b.set_input();
        auto y = graph::silu(graph::add(graph::mul(a, b), a)).set_name("y");
        graph::cgraph g;
        g.build_forward_expand(y);

        be::scheduler s({t, cpu});
        s.alloc_graph(g);
        const std::vector<float> A = {1, 2, 3, 4, -1, -2, -3, -4}, B = {0.5f, 0.5f, 1, 1, 2, 2, -1, -1};
        be::tensor_set(*a.get(), A.data(), 0, 32);
        be::tensor_set(*b.get(), B.data(), 0, 32);
        s.graph_compute(g);
        std::printf("%d splits, %d copies\n%s", s.n_splits(), s.n_input_copies(), s.print().c_str());
        const std::vector<float> out = be::tensor_to_f32(*y.get());
        int bad = 0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            const double x = A[i] * B[i] + A[i], want = x / (1 + std::exp(-x));
            std::printf("y[%zu] = %.4f (want %.4f)\n", i, static_cast<double>(out[i]), want);
            bad += std::abs(out[i] - want) > 1e-5;
        }
        std::printf("TOY computed %d ops\n", toy::ops_done);
        if (bad != 0 || toy::ops_done != 2 || s.n_splits() != 2) {
            std::fprintf(stderr, "custom_backend: wrong result (%d wrong values, %d TOY ops, %d splits; want 0, 2, 2)\n", bad,
                         toy::ops_done, s.n_splits());
            return 1;
        }
        return 0;
    });
}
