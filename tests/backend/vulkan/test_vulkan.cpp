// The Vulkan device (slice 1 of issue 20), on whatever device the loader finds (lavapipe
// in CI): the conformance suites; every op it computes against the double-precision
// reference (REF's definitions) with broadcast, views and odd sizes, and sentinels around
// the result; events that really wait (a host-released gate holds the queue); a graph
// split between Vulkan and the CPU by the scheduler, equal to the CPU alone for n_copies
// 1, 2, 4; clear errors for bad use. Run twice by Meson: through the mapped device memory
// and with TESSERA_VULKAN_STAGING=1 (the discrete-GPU path). The suite "vulkan_absent"
// runs only with no Vulkan driver (test_vulkan_main.cpp).
// (GCC 12's false -Wrestrict in std::string, GCC bug 105651: see test_conformance.cpp.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "../conformance.hpp"

#include <chrono>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tessera/backend/vulkan.hpp"

namespace {

struct vulkan_family {
    using buft_model = vulkan_buffer_type_model;
    using buffer_model = vulkan_buffer;
    using backend_model = vulkan_backend;
    using device_model = vulkan_device_model;
    using reg_model = vulkan_reg_model;
    static any_buffer_type buft() { return vulkan_buffer_type(0); }
    static any_device dev() { return vulkan_device(0); }
    static any_reg reg() { return vulkan_reg(); }
    static any_backend init() { return vulkan_init(0); }
    static constexpr bool host = false;
    static constexpr device_type type = device_type::gpu;
    static constexpr bool reads_host = false, reads_ref = false, own_guid = true;
    static constexpr bool add_op = true, norm_op = true, softmax_op = true;
    static constexpr bool quant_mul_mat = false, repacks = false;
};
static_assert(buffer_type<vulkan_family::buft_model> && buffer<vulkan_family::buffer_model>);
static_assert(tessera::backend::backend<vulkan_family::backend_model> && device<vulkan_family::device_model>);
static_assert(backend_reg<vulkan_family::reg_model> && event<vulkan_event>);

}  // namespace

TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_type, vulkan_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer, vulkan_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_copies_across_buffer_types, vulkan_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_backend, vulkan_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_quantized_weight, vulkan_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_event, vulkan_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_device, vulkan_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_registry, vulkan_family);

namespace {

// ---- ops against the reference ----------------------------------------------------------------

// Builds a graph in ctx: creates its inputs with `in` (roots, f32) and returns the result.
// in(ne) makes an f32 input; in(ne, type) one of another type: i32/i64 inputs hold row
// indices (k * 5 + 3) % 8 - 1 (so -1, out of range, too; distinct within 8 in a row),
// quantized ones the quantized values.
struct input_fn {
    std::function<any_tensor(std::array<std::int64_t, 4>, type_id)> f;
    any_tensor operator()(std::array<std::int64_t, 4> ne, type_id t = type_id::f32) const { return f(ne, t); }
};
using build_fn = std::function<any_tensor(const input_fn&)>;

struct built {
    std::unique_ptr<graph::context> ctx;
    std::vector<graph::node*> inputs;
    any_tensor out;
    graph::cgraph g;
};
built build(const build_fn& f, bool alloc) {
    built b;
    b.ctx = std::make_unique<graph::context>(graph::context_options{!alloc, 64, 1 << 12});
    const input_fn in{[&](std::array<std::int64_t, 4> ne, type_id ty) {
        any_tensor t = graph::new_tensor(*b.ctx, ty, ne, "in" + std::to_string(b.inputs.size()));
        b.inputs.push_back(t.get());
        return t;
    }};
    b.out = f(in).set_name("out");
    b.g.build_forward_expand(b.out);
    return b;
}

// Input values in [0.5, 1.5] or [-1.5, -0.5] (no zero divisors, exact products of
// differing magnitude).
std::vector<float> values(std::size_t n, std::uint32_t seed) {
    std::vector<float> v = blocktest::pseudo_random(n, seed);
    for (float& x : v) x = x < 0 ? x - 0.5f : x + 0.5f;
    return v;
}

// The bytes of input i of a graph (the same on the host and the device).
std::vector<std::uint8_t> input_bytes(const graph::node& t, std::size_t i) {
    const auto n = static_cast<std::size_t>(t.lay.nelements());
    const auto v = values(n, static_cast<std::uint32_t>(17 + i));
    std::vector<std::uint8_t> r(t.lay.nbytes());
    if (t.lay.type == type_id::i32 || t.lay.type == type_id::i64) {
        for (std::size_t k = 0; k < n; ++k) {
            const std::int64_t x = static_cast<std::int64_t>((k * 5 + 3) % 8) - 1;
            if (t.lay.type == type_id::i64) std::memcpy(r.data() + 8 * k, &x, 8);
            else {
                const auto y = static_cast<std::int32_t>(x);
                std::memcpy(r.data() + 4 * k, &y, 4);
            }
        }
    } else if (is_quantized(t.lay.type)) {
        quant::quantize(t.lay.type, v.data(), r.data(), t.lay.nrows(), t.lay.ne[0]);
    } else {
        std::memcpy(r.data(), v.data(), n * 4);
    }
    return r;
}

struct op_result {
    std::vector<float> got, want;
    std::size_t sentinel_bad = 0;
    std::string skipped;  // the device lacks 16-bit storage for an f16/bf16 operand (nothing ran)
};

// Runs the graph on Vulkan0 with every tensor in one buffer, 256 sentinel bytes (0xA5)
// right before and after the result, the result pre-filled with 0xFF (NaN), and computes
// the reference on host copies with REF's double-precision definitions (the CPU backend's
// for a graph with an op REF lacks, or with indices).
op_result run_op(const build_fn& f) {
    op_result r;
    // reference
    built h = build(f, true);
    for (std::size_t i = 0; i < h.inputs.size(); ++i) {
        const auto v = input_bytes(*h.inputs[i], i);
        std::memcpy(h.inputs[i]->data, v.data(), v.size());
    }
    bool by_ref = true;  // REF's double-precision definitions where it has them, else the CPU backend
    for (graph::node* n : h.g.nodes()) by_ref = by_ref && ref::unsupported_reason(*n).empty();
    for (graph::node* n : h.inputs) by_ref = by_ref && is_float(n->lay.type);  // REF refuses an index out of range
    if (by_ref) {
        for (graph::node* n : h.g.nodes()) ref::compute(*n);
    } else {
        cpu_init(1).graph_compute(h.g);
    }
    r.want = tensor_to_f32(*h.out.get());
    // device
    built d = build(f, false);
    for (graph::node* n : d.g.nodes())
        if (const std::string why = vulkan_unsupported_reason(0, *n); why.find("16-bit storage") != std::string::npos) {
            r.skipped = why;
            return r;
        }
    graph::context gctx({true});
    graph::node* lo = gctx.new_tensor(type_id::i8, {256, 1, 1, 1}, "sentinel_lo");
    graph::node* hi = gctx.new_tensor(type_id::i8, {256, 1, 1, 1}, "sentinel_hi");
    const any_buffer_type bt = vulkan_buffer_type(0);
    const std::size_t A = bt.alignment();
    graph::node* out = d.out.get();
    REQUIRE_FALSE(out->is_view());
    std::vector<graph::node*> roots = d.inputs;  // inputs and intermediate results (views follow their roots)
    for (graph::node* n : d.g.nodes())
        if (n != out && !n->is_view()) roots.push_back(n);
    std::size_t total = 0;
    auto up = [&](std::size_t x) { return (x + A - 1) / A * A; };
    for (graph::node* n : roots) total = up(total) + bt.alloc_size(*n);
    const std::size_t out_bytes = out->lay.nbytes();
    total = up(total) + 256 + up(out_bytes) + 256 + A;
    any_buffer buf = bt.alloc_buffer(total);
    std::size_t off = 0;
    for (graph::node* n : roots) {
        off = up(off);
        tensor_alloc(buf, *n, buf.base() + off);
        off += bt.alloc_size(*n);
    }
    off = up(off);
    tensor_alloc(buf, *lo, buf.base() + off);
    tensor_alloc(buf, *out, buf.base() + off + 256);  // (f32: out_bytes is whole words)
    tensor_alloc(buf, *hi, buf.base() + off + 256 + out_bytes);
    for (std::size_t i = 0; i < d.inputs.size(); ++i) {
        const auto v = input_bytes(*d.inputs[i], i);
        tensor_set(*d.inputs[i], v.data(), 0, v.size());
    }
    tensor_memset(*lo, 0xA5, 0, 256);
    tensor_memset(*hi, 0xA5, 0, 256);
    tensor_memset(*out, 0xFF, 0, out_bytes);
    any_backend be = vulkan_init(0);
    be.graph_compute(d.g);
    r.got = tensor_to_f32(*out);
    std::vector<std::uint8_t> s(256);
    for (graph::node* g : {lo, hi}) {
        tensor_get(*g, s.data(), 0, 256);
        for (std::uint8_t x : s) r.sentinel_bad += x != 0xA5;
    }
    return r;
}

// |got - want| <= rel * |want| + abs per element; also counts NaN (unwritten) elements;
// and the normalized mean squared error under max_nmse.
void check_close(const op_result& r, double rel, double abs, double max_nmse = 1e-10) {
    if (!r.skipped.empty()) {
        MESSAGE("skipped: ", r.skipped);
        return;
    }
    REQUIRE(r.got.size() == r.want.size());
    CHECK(r.sentinel_bad == 0);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < r.got.size(); ++i) {
        const double e = std::fabs(static_cast<double>(r.got[i]) - r.want[i]);
        if (!(e <= rel * std::fabs(r.want[i]) + abs)) {
            if (bad < 5) MESSAGE("element ", i, ": got ", r.got[i], ", want ", r.want[i]);
            ++bad;
        }
    }
    CHECK(bad == 0);
    CHECK(nmse(r.got, r.want) < max_nmse);
}

any_tensor as_f16(any_tensor a) { return graph::cast(a, type_id::f16); }

any_tensor binary(graph::op_kind k, any_tensor a, any_tensor b) {
    switch (k) {
        case graph::op_kind::add: return graph::add(a, b);
        case graph::op_kind::sub: return graph::sub(a, b);
        case graph::op_kind::mul: return graph::mul(a, b);
        default: return graph::div(a, b);
    }
}

}  // namespace

TEST_CASE("Vulkan ops: add, sub, mul, div (f32) with broadcast, views and odd sizes") {
    using graph::op_kind;
    struct shape_case {
        const char* what;
        build_fn (*make)(op_kind);
    };
    const shape_case cases[] = {
        {"same shape", [](op_kind k) -> build_fn { return [k](const input_fn& in) { return binary(k, in({7, 5, 3, 2}), in({7, 5, 3, 2})); }; }},
        {"b over dims 1, 3", [](op_kind k) -> build_fn { return [k](const input_fn& in) { return binary(k, in({7, 5, 3, 2}), in({7, 1, 3, 1})); }; }},
        {"b over dims 0, 2", [](op_kind k) -> build_fn { return [k](const input_fn& in) { return binary(k, in({7, 5, 3, 2}), in({1, 5, 1, 2})); }; }},
        {"scalar b", [](op_kind k) -> build_fn { return [k](const input_fn& in) { return binary(k, in({33, 17, 1, 1}), in({1, 1, 1, 1})); }; }},
        {"long rows (several workgroups)", [](op_kind k) -> build_fn { return [k](const input_fn& in) { return binary(k, in({1001, 3, 1, 1}), in({1001, 1, 1, 1})); }; }},
        {"transposed a", [](op_kind k) -> build_fn {
             return [k](const input_fn& in) { return binary(k, graph::transpose(in({5, 7, 3, 1})), in({7, 5, 3, 1})); };
         }},
        {"permuted b, broadcast", [](op_kind k) -> build_fn {
             return [k](const input_fn& in) { return binary(k, in({6, 3, 4, 2}), graph::permute(in({3, 6, 1, 2}), {1, 0, 2, 3})); };
         }},
        {"strided views at odd offsets", [](op_kind k) -> build_fn {
             return [k](const input_fn& in) {
                 any_tensor a = graph::view(in({40, 6, 1, 1}), {7, 5, 1, 1}, {160, 800, 800}, 12);   // from element 3
                 any_tensor b = graph::view(in({9, 11, 1, 1}), {7, 5, 1, 1}, {72, 360, 360}, 20);    // from element 5, stride 18
                 return binary(k, a, b);
             };
         }},
    };
    for (op_kind k : {op_kind::add, op_kind::sub, op_kind::mul, op_kind::div}) {
        for (const shape_case& c : cases) {
            CAPTURE(graph::op_name(k));
            CAPTURE(c.what);
            // add/sub/mul are correctly rounded; division in SPIR-V may be off by 2.5 ulp
            check_close(run_op(c.make(k)), k == op_kind::div ? 4e-7 : 1.2e-7, 1e-30);
        }
    }
}

TEST_CASE("Vulkan ops: scale (f32), contiguous and on a view") {
    check_close(run_op([](const input_fn& in) { return graph::scale(in({31, 3, 2, 1}), 1.5f, 0.25f); }), 2.5e-7, 1e-7);
    check_close(run_op([](const input_fn& in) { return graph::scale(graph::transpose(in({5, 9, 2, 1})), -0.75f); }), 2.5e-7, 1e-7);
    check_close(run_op([](const input_fn& in) { return graph::scale(in({1000, 1, 1, 1}), 3.0f, -1.0f); }), 2.5e-7, 1e-7);
}

TEST_CASE("Vulkan ops: mul_mat f32 x f32 (odd sizes, one column, views, dims 2 and 3 broadcast)") {
    struct mm_case {
        const char* what;
        std::int64_t k;
        build_fn f;
    };
    const std::vector<mm_case> cases = {
        {"67 x 13 times 67 x 9", 67, [](const input_fn& in) { return graph::mul_mat(in({67, 13, 1, 1}), in({67, 9, 1, 1})); }},
        {"one column", 129, [](const input_fn& in) { return graph::mul_mat(in({129, 31, 1, 1}), in({129, 1, 1, 1})); }},
        {"k = 1", 1, [](const input_fn& in) { return graph::mul_mat(in({1, 5, 1, 1}), in({1, 7, 1, 1})); }},
        {"batched, same batch", 17, [](const input_fn& in) { return graph::mul_mat(in({17, 5, 2, 3}), in({17, 4, 2, 3})); }},
        {"a broadcast over dim 2 (r2 = 3)", 17, [](const input_fn& in) { return graph::mul_mat(in({17, 5, 2, 3}), in({17, 4, 6, 3})); }},
        {"a broadcast over dims 2 and 3", 17, [](const input_fn& in) { return graph::mul_mat(in({17, 5, 1, 1}), in({17, 4, 2, 3})); }},
        {"transposed b", 11, [](const input_fn& in) { return graph::mul_mat(in({11, 6, 1, 1}), graph::transpose(in({3, 11, 1, 1}))); }},
        {"permuted a and b (attention's kq)", 8, [](const input_fn& in) {
             any_tensor k = graph::permute(in({8, 4, 6, 1}), {0, 2, 1, 3});  // [8, 6, 4]
             any_tensor q = graph::permute(in({8, 4, 5, 1}), {0, 2, 1, 3});  // [8, 5, 4]
             return graph::mul_mat(k, q);
         }},
        {"many outputs (over a thousand workgroups)", 9, [](const input_fn& in) { return graph::mul_mat(in({9, 300, 1, 1}), in({9, 250, 1, 1})); }},
    };
    for (const mm_case& c : cases) {
        CAPTURE(c.what);
        // f32 sums of k terms of magnitude <= 2.25: error well under 1e-6 * k
        check_close(run_op(c.f), 0, 1e-6 * static_cast<double>(c.k));
    }
}

TEST_CASE("Vulkan ops: add, mul with f16 and bf16 operands and an f16 result") {
    // f16 operands: the device casts on the device too; results rounded to f16 (2^-11)
    check_close(run_op([](const input_fn& in) { return graph::add(as_f16(in({37, 5, 2, 1})), in({37, 1, 2, 1})); }), 1e-3, 1e-6, 1e-6);
    check_close(run_op([](const input_fn& in) { return graph::mul(in({37, 5, 2, 1}), as_f16(in({1, 5, 1, 1}))); }), 1e-7, 1e-7, 1e-6);
    check_close(run_op([](const input_fn& in) { return graph::scale(as_f16(graph::transpose(in({5, 9, 2, 1}))), 1.5f, 0.25f); }), 1e-3, 1e-6, 1e-6);
}

TEST_CASE("Vulkan ops: unary (f32 and f16), contiguous and on a view") {
    using graph::unary_op;
    for (unary_op u : {unary_op::abs, unary_op::neg, unary_op::tanh, unary_op::relu, unary_op::sigmoid, unary_op::gelu,
                       unary_op::gelu_quick, unary_op::silu, unary_op::exp, unary_op::gelu_erf}) {
        CAPTURE(graph::unary_name(u));
        check_close(run_op([u](const input_fn& in) { return graph::unary(in({37, 5, 2, 1}), u); }), 2e-6, 2e-7, 1e-11);
        check_close(run_op([u](const input_fn& in) { return graph::unary(graph::transpose(in({5, 300, 1, 1})), u); }), 2e-6, 2e-7, 1e-11);
        check_close(run_op([u](const input_fn& in) { return graph::unary(as_f16(in({19, 3, 1, 1})), u); }), 2e-3, 1e-4, 1e-6);
    }
}

TEST_CASE("Vulkan ops: glu family, split, one source and swapped, f32 and f16") {
    using graph::glu_op;
    for (glu_op g : {glu_op::reglu, glu_op::geglu, glu_op::swiglu, glu_op::swiglu_oai, glu_op::geglu_erf, glu_op::geglu_quick}) {
        CAPTURE(graph::glu_name(g));
        check_close(run_op([g](const input_fn& in) { return graph::glu_split(in({37, 5, 2, 1}), in({37, 5, 2, 1}), g); }), 2e-6, 2e-7, 1e-11);
        check_close(run_op([g](const input_fn& in) { return graph::glu(in({38, 5, 2, 1}), g); }), 2e-6, 2e-7, 1e-11);
        check_close(run_op([g](const input_fn& in) { return graph::glu(in({38, 5, 2, 1}), g, graph::glu_order::swapped); }), 2e-6, 2e-7,
                    1e-11);
        check_close(run_op([g](const input_fn& in) { return graph::glu(as_f16(in({22, 3, 1, 1})), g); }), 2e-3, 1e-4, 1e-6);
    }
}

TEST_CASE("Vulkan ops: cpy (f32 <-> f16), dup and cont of views") {
    check_close(run_op([](const input_fn& in) { return graph::cont(graph::transpose(in({7, 5, 3, 1}))); }), 0, 0);
    check_close(run_op([](const input_fn& in) { return graph::cont(graph::permute(in({4, 5, 3, 2}), {2, 0, 3, 1})); }), 0, 0);
    check_close(run_op([](const input_fn& in) { return graph::cont(graph::permute(in({7, 5, 3, 1}), {1, 2, 0, 3})); }), 0, 0);
    check_close(run_op([](const input_fn& in) { return as_f16(graph::transpose(in({7, 5, 3, 1}))); }), 1e-3, 0, 1e-6);
    check_close(run_op([](const input_fn& in) { return graph::cast(as_f16(in({7, 5, 3, 1})), type_id::f32); }), 1e-3, 0, 1e-6);
    check_close(run_op([](const input_fn& in) { return graph::cont(graph::transpose(as_f16(in({9, 5, 1, 1})))); }), 1e-3, 0, 1e-6);
}

TEST_CASE("Vulkan ops: get_rows (f32, f16, q4_0, q8_0 rows; out-of-range index) and set_rows (i32, i64; f32, f16)") {
    using graph::get_rows;
    check_close(run_op([](const input_fn& in) { return get_rows(in({7, 9, 1, 1}), in({5, 1, 1, 1}, type_id::i32)); }), 0, 0);
    check_close(run_op([](const input_fn& in) { return get_rows(in({5, 8, 3, 2}), in({6, 3, 2, 1}, type_id::i32)); }), 0, 0);
    check_close(run_op([](const input_fn& in) { return get_rows(graph::transpose(in({9, 7, 1, 1})), in({4, 1, 1, 1}, type_id::i32)); }),
                0, 0);
    check_close(run_op([](const input_fn& in) { return get_rows(as_f16(in({7, 9, 1, 1})), in({5, 1, 1, 1}, type_id::i32)); }), 0, 0);
    for (type_id q : {type_id::q4_0, type_id::q8_0}) {
        CAPTURE(type_name(q));
        check_close(run_op([q](const input_fn& in) { return get_rows(in({64, 7, 2, 1}, q), in({5, 2, 1, 1}, type_id::i32)); }), 1e-6,
                    1e-7, 1e-12);
    }
    for (type_id it : {type_id::i32, type_id::i64}) {
        CAPTURE(type_name(it));
        // the set_rows node is the destination's view: scale(., 1) makes the result
        check_close(run_op([it](const input_fn& in) {
                        return graph::scale(graph::set_rows(in({7, 9, 2, 1}), in({7, 6, 2, 1}), in({6, 1, 1, 1}, it)), 1.0f);
                    }),
                    0, 0);
        check_close(run_op([it](const input_fn& in) {
                        return graph::scale(graph::set_rows(as_f16(in({7, 9, 2, 3})), in({7, 5, 2, 3}), in({5, 2, 1, 1}, it)), 1.0f);
                    }),
                    1e-3, 0, 1e-6);
    }
}

TEST_CASE("Vulkan ops: quantizing cpy and set_rows into q4_0 and q8_0 equal the CPU's quantizer bit for bit") {
    for (type_id q : {type_id::q4_0, type_id::q8_0}) {
        CAPTURE(type_name(q));
        // read back through get_rows (rows 0-6 in some order, and a -1: zeros) so the result is f32
        check_close(run_op([q](const input_fn& in) {
                        any_tensor c = graph::cast(graph::transpose(in({8, 64, 1, 1})), q);  // [64, 8] from a view
                        return graph::get_rows(c, in({8, 1, 1, 1}, type_id::i32));
                    }),
                    0, 0);
        for (type_id it : {type_id::i32, type_id::i64})
            check_close(run_op([q, it](const input_fn& in) {
                            any_tensor dst = in({96, 9, 1, 1}, q);
                            any_tensor r = graph::set_rows(dst, in({96, 6, 1, 1}), in({6, 1, 1, 1}, it));
                            return graph::get_rows(r, in({9, 1, 1, 1}, type_id::i32));
                        }),
                        0, 0);
    }
}

TEST_CASE("Vulkan ops: rms_norm, norm, sum_rows, mean, argmax (rows longer and shorter than the workgroup, views)") {
    for (std::int64_t n : {1, 7, 128, 1000}) {
        CAPTURE(n);
        check_close(run_op([n](const input_fn& in) { return graph::rms_norm(in({n, 5, 2, 1}), 1e-5f); }), 2e-6, 1e-7, 1e-11);
        check_close(run_op([n](const input_fn& in) { return graph::norm(in({n, 5, 2, 1}), 1e-5f); }), 1e-5, 1e-5, 1e-10);
        // f32 sums of n terms of magnitude <= 1.5, in another order than the CPU's
        const double tol = 2e-7 * static_cast<double>(n);
        check_close(run_op([n](const input_fn& in) { return graph::sum_rows(in({n, 5, 2, 1})); }), 0, tol, 1e-10);
        check_close(run_op([n](const input_fn& in) { return graph::mean(in({n, 5, 2, 1})); }), 0, tol / static_cast<double>(n), 1e-10);
        check_close(run_op([n](const input_fn& in) { return graph::argmax(in({n, 6, 1, 1})); }), 0, 0);
    }
    check_close(run_op([](const input_fn& in) { return graph::rms_norm(graph::transpose(in({6, 33, 1, 1})), 1e-6f); }), 2e-6, 1e-7, 1e-11);
    check_close(run_op([](const input_fn& in) { return graph::norm(as_f16(in({40, 3, 1, 1})), 1e-5f); }), 2e-3, 2e-3, 1e-5);
    // ties (the f16 rounding repeats values): the lowest index, as the CPU
    check_close(run_op([](const input_fn& in) { return graph::argmax(graph::cast(as_f16(in({5000, 3, 1, 1})), type_id::f32)); }), 0, 0);
}

TEST_CASE("Vulkan ops: soft_max with scale, an f32 or f16 mask broadcast over dims 2 and 3, ALiBi") {
    check_close(run_op([](const input_fn& in) { return graph::soft_max_ext(in({37, 5, 3, 2}), any_tensor(), 0.7f); }), 1e-5, 1e-7, 1e-11);
    check_close(run_op([](const input_fn& in) { return graph::soft_max_ext(in({300, 4, 1, 1}), in({300, 6, 1, 1}), 1.3f); }), 1e-5, 1e-7,
                1e-11);
    check_close(run_op([](const input_fn& in) { return graph::soft_max_ext(in({19, 5, 6, 2}), as_f16(in({19, 5, 3, 1})), 0.5f); }), 1e-5,
                1e-7, 1e-11);
    for (float mb : {8.0f, 1.5f}) {  // 6 heads: n_log2 = 4, both slope formulas
        CAPTURE(mb);
        check_close(run_op([mb](const input_fn& in) { return graph::soft_max_ext(in({19, 5, 6, 2}), in({19, 5, 1, 1}), 0.5f, mb); }), 1e-5,
                    1e-7, 1e-11);
    }
    check_close(run_op([](const input_fn& in) { return graph::soft_max_ext(graph::transpose(in({5, 23, 2, 1})), any_tensor(), 1.0f); }),
                1e-5, 1e-7, 1e-11);
}

TEST_CASE("Vulkan ops: rope in place (normal, neox): each pair is read before it is written") {
    for (graph::rope_mode m : {graph::rope_mode::normal, graph::rope_mode::neox}) {
        CAPTURE(static_cast<int>(m));
        graph::rope_params rp{};
        rp.n_dims = 8;
        rp.mode = m;
        check_close(run_op([rp](const input_fn& in) {
                        auto a = in({12, 3, 5, 1}).as<float, 4>();
                        auto pos = in({5, 1, 1, 1}, type_id::i32).as<std::int32_t, 1>();
                        return graph::scale(any_tensor(graph::rope_ext_inplace(a, pos, std::nullopt, rp).get()), 1.0f);
                    }),
                    1e-5, 1e-6, 1e-10);
    }
}

TEST_CASE("Vulkan ops: mul_mat with f16, bf16, q4_0 and q8_0 weights") {
    check_close(run_op([](const input_fn& in) { return graph::mul_mat(as_f16(in({67, 13, 2, 1})), in({67, 9, 2, 1})); }), 0, 1e-6 * 67);
    check_close(run_op([](const input_fn& in) { return graph::mul_mat(graph::cast(in({33, 5, 1, 1}), type_id::bf16), as_f16(in({33, 4, 1, 1}))); }),
                0, 1e-6 * 33);
    for (type_id q : {type_id::q4_0, type_id::q8_0}) {
        CAPTURE(type_name(q));
        // the CPU rounds b to q8_0 for its dot products; the device keeps b in f32
        check_close(run_op([q](const input_fn& in) { return graph::mul_mat(in({96, 7, 2, 1}, q), in({96, 5, 4, 1})); }), 2e-2, 0.2, 1e-4);
    }
}

TEST_CASE("Vulkan ops: a chain of dependent nodes in one graph (barriers between dispatches)") {
    check_close(run_op([](const input_fn& in) {
                    any_tensor a = in({16, 8, 1, 1}), b = in({16, 5, 1, 1}), c = in({8, 1, 1, 1});
                    any_tensor y = graph::add(graph::mul_mat(a, b), c);  // [8, 5]
                    y = graph::scale(graph::mul(y, y), 0.5f);
                    any_tensor z = graph::mul_mat(graph::transpose(graph::transpose(y)), y);  // [5, 5]
                    return graph::sub(graph::div(z, in({5, 1, 1, 1})), z);
                }),
                1e-5, 1e-3);
}

TEST_CASE("Vulkan: supports_op refuses other ops by name, with the reason") {
    any_device d = vulkan_device(0);
    graph::context ctx({true});
    any_tensor a = graph::new_tensor(ctx, type_id::f32, {8, 2, 1, 1}, "a");
    any_tensor h = graph::new_tensor(ctx, type_id::f16, {8, 2, 1, 1}, "h");
    CHECK(d.supports_op(*graph::add(a, a).get()));
    CHECK(d.supports_op(*graph::mul_mat(a, a).get()));
    CHECK(d.supports_op(*graph::transpose(a).get()));  // views: nothing to compute
    const std::string cc = vulkan_unsupported_reason(0, *graph::sum(a).get());
    CHECK(cc.find("op sum") != std::string::npos);
    CHECK(cc.find("not implemented by the Vulkan device") != std::string::npos);
    CHECK(d.supports_op(*graph::rms_norm(a, 1e-5f).get()));
    CHECK(d.supports_op(*graph::soft_max_ext(a, any_tensor(), 1.0f).get()));
    CHECK(d.supports_op(*graph::cont(graph::transpose(a)).get()));
    const bool s16 = vulkan::context_at(0).storage16();  // f16 operands (TESSERA_VULKAN_NO_16BIT=1 turns it off)
    CHECK(d.supports_op(*graph::add(h, h).get()) == s16);
    CHECK(d.supports_op(*graph::mul_mat(h, a).get()) == s16);
    any_tensor q5 = graph::new_tensor(ctx, type_id::q5_0, {32, 2, 1, 1}, "q5");
    any_tensor a32 = graph::new_tensor(ctx, type_id::f32, {32, 2, 1, 1}, "a32");
    const std::string mm = vulkan_unsupported_reason(0, *graph::mul_mat(q5, a32).get());
    CHECK(mm.find("mul_mat: src0 is q5_0") != std::string::npos);
    CHECK(mm.find("q4_K or q6_K") != std::string::npos);
    CHECK_FALSE(d.supports_op(*graph::mul_mat(q5, a32).get()));
    // a refused type is named, with the role of the operand
    any_tensor w = graph::new_tensor(ctx, type_id::f32, {256, 2, 1, 1}, "w");
    const std::string cq = vulkan_unsupported_reason(0, *graph::cast(w, type_id::q4_K).get());
    CHECK(cq.find("cpy: the result is q4_K, the Vulkan device quantizes into q4_0 and q8_0 only") != std::string::npos);
    any_tensor ix = graph::new_tensor(ctx, type_id::i32, {2, 1, 1, 1}, "ix");
    any_tensor k4 = graph::new_tensor(ctx, type_id::q4_K, {256, 2, 1, 1}, "k4");
    const std::string gq = vulkan_unsupported_reason(0, *graph::get_rows(k4, ix).get());
    CHECK(gq.find("get_rows: src0 is q4_K") != std::string::npos);
    CHECK(vulkan_unsupported_reason(0, *graph::add(a, a).get()).empty());
    // graph_compute says the same, and computes nothing
    graph::cgraph g;
    any_tensor y = graph::sum(a).set_name("y");
    g.build_forward_expand(y);
    std::vector<graph::node*> all{a.get(), y.get()};
    any_buffer buf = alloc_tensors(all, vulkan_buffer_type(0));
    CHECK_THROWS_WITH_AS(vulkan_init(0).graph_compute(g), doctest::Contains("op sum is not implemented"), tessera::error);
}

TEST_CASE("Vulkan: bad use gives a tessera error") {
    any_buffer_type bt = vulkan_buffer_type(0);
    // more than the device can allocate in one buffer
    CHECK_THROWS_WITH_AS(bt.alloc_buffer(bt.max_size() + 1), doctest::Contains("exceed its maximum buffer size"), tessera::error);
    // a tensor outside the device's memory in a Vulkan graph
    graph::context ctx({true});
    any_tensor a = graph::new_tensor(ctx, type_id::f32, {8, 2, 1, 1}, "a");
    any_tensor y = graph::add(a, a).set_name("y");
    graph::cgraph g;
    g.build_forward_expand(y);
    std::vector<graph::node*> all{a.get(), y.get()};
    any_buffer cpu_buf = alloc_tensors(all, cpu_buffer_type());
    any_backend be = vulkan_init(0);
    CHECK_THROWS_WITH_AS(be.graph_compute(g), doctest::Contains("not in a Vulkan0 buffer"), tessera::error);
    CHECK_THROWS_WITH_AS(be.set_tensor_async(*a.get(), nullptr, 0, 4), doctest::Contains("not in a Vulkan0 buffer"), tessera::error);
    // events: recorded on a stream of another device
    any_event e = vulkan_device(0).event_new();
    any_backend cpu = cpu_init(1);
    CHECK_THROWS_WITH_AS(e.record(cpu), doctest::Contains("record needs a stream of Vulkan0"), tessera::error);
    any_backend ref = reference_init();
    CHECK_THROWS_WITH_AS(e.record(ref), doctest::Contains("not 'REF'"), tessera::error);
    // an index past the devices
    CHECK_THROWS_WITH_AS(vulkan_device(vulkan_device_count()), doctest::Contains("out of range"), tessera::error);
    // the device's buffers cannot be dereferenced on the host; their base is still unique
    any_buffer b1 = bt.alloc_buffer(4096), b2 = bt.alloc_buffer(4096);
    CHECK(b1.base() != b2.base());
    CHECK_FALSE(b1.is_host());
}

TEST_CASE("Vulkan: the host buffer type is mapped host memory the CPU computes in") {
    any_buffer_type ht = vulkan_device(0).host_buffer_type();
    REQUIRE(ht);
    CHECK(ht.is_host());
    CHECK(ht.name() == "Vulkan0_Host");
    CHECK(ht == vulkan_host_buffer_type(0));
    CHECK(cpu_device().supports_buft(ht));
    CHECK_FALSE(vulkan_device(0).supports_buft(ht));
    graph::context ctx({true});
    any_tensor a = graph::new_tensor(ctx, type_id::f32, {5, 1, 1, 1}, "a");
    any_tensor y = graph::scale(a, 2.0f).set_name("y");
    graph::cgraph g;
    g.build_forward_expand(y);
    std::vector<graph::node*> all{a.get(), y.get()};
    any_buffer hb = alloc_tensors(all, ht);
    const float v[5] = {1, 2, 3, 4, 5};
    std::memcpy(a.get()->data, v, sizeof v);  // really host memory
    cpu_init(1).graph_compute(g);
    CHECK(tensor_to_f32(*y.get()) == std::vector<float>{2, 4, 6, 8, 10});
}

// ---- events -----------------------------------------------------------------------------------

namespace {
// y = 2 x + add_v on Vulkan0; x is its own tensor, or placed over `alias` (another
// graph's result, so this graph reads it without computing it again).
struct small_graph {
    graph::context ctx{graph::context_options{true}};
    any_tensor x, y;
    graph::cgraph g;
    any_buffer buf;
    explicit small_graph(float add_v, graph::node* alias = nullptr) {
        x = graph::new_tensor(ctx, type_id::f32, {256, 4, 1, 1}, "x");
        y = graph::scale(x, 2.0f, add_v).set_name("y");
        g.build_forward_expand(y);
        std::vector<graph::node*> all{y.get()};
        if (alias) tensor_alloc(buffer_of(*alias), *x.get(), alias->data);
        else all.push_back(x.get());
        buf = alloc_tensors(all, vulkan_buffer_type(0));
    }
};
}  // namespace

TEST_CASE("Vulkan events: synchronize blocks until the device reaches the recorded point") {
    any_backend be = vulkan_init(0);
    vulkan::stream_state& st = *as_vulkan(be)->state();
    small_graph s(1.0f);
    std::vector<float> in(1024, 3.0f);
    tensor_set(*s.x.get(), in.data(), 0, in.size() * 4);
    vulkan_event ev(vulkan::context_at(0));
    any_event e(ev);  // the handle and the model are one event
    st.hold();        // the next submissions wait for a host-signalled gate
    be.graph_compute_async(s.g);
    e.record(be);
    CHECK(ev.value() == st.submitted());
    CHECK_FALSE(ev.query());  // queued, held back: not done
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK_FALSE(ev.query());
    CHECK(st.completed() < st.submitted());
    std::thread releaser([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        st.release();
    });
    const auto t0 = std::chrono::steady_clock::now();
    e.synchronize();  // blocks until the release, then the compute
    const double waited = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    releaser.join();
    MESSAGE("event synchronize waited ", waited, " ms");
    CHECK(waited >= 50.0);
    CHECK(ev.query());
    CHECK(st.completed() == st.submitted());
    CHECK(tensor_to_f32(*s.y.get()) == std::vector<float>(1024, 7.0f));
}

TEST_CASE("Vulkan events: wait(stream) makes another stream wait on the device") {
    any_backend a = vulkan_init(0), b = vulkan_init(0);
    vulkan::stream_state& sa = *as_vulkan(a)->state();
    vulkan::stream_state& sb = *as_vulkan(b)->state();
    small_graph first(1.0f);              // y1 = 2 x + 1
    small_graph second(-3.0f, first.y.get());   // y2 = 2 y1 - 3, reading first's result
    std::vector<float> in(1024, 2.0f);
    tensor_set(*first.x.get(), in.data(), 0, in.size() * 4);
    any_event e = vulkan_device(0).event_new();
    sa.hold();
    a.graph_compute_async(first.g);
    e.record(a);
    e.wait(b);  // b's next submission waits for a's point (no host wait here)
    b.graph_compute_async(second.g);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(sb.completed() < sb.submitted());  // b is held back by a, a by the gate
    CHECK(sa.completed() < sa.submitted());
    sa.release();
    b.synchronize();
    CHECK(sa.completed() == sa.submitted());
    CHECK(tensor_to_f32(*second.y.get()) == std::vector<float>(1024, 7.0f));
    // waiting from a CPU stream is a host wait
    any_backend cpu = cpu_init(1);
    e.wait(cpu);
}

TEST_CASE("Vulkan streams: async set/get/copy are ordered with compute") {
    any_backend be = vulkan_init(0);
    small_graph s(0.5f);
    graph::context host;
    graph::node* h = host.new_tensor(type_id::f32, {256, 4, 1, 1}, "h");
    std::vector<float> in(1024), out(1024, 0.0f), back(1024, 0.0f);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    std::memcpy(h->data, in.data(), 4096);
    CHECK(be.cpy_tensor_async(*h, *s.x.get()));  // host memory -> device, staged
    std::memset(h->data, 0, 4096);                // the caller may reuse its memory at once
    be.graph_compute_async(s.g);
    be.get_tensor_async(*s.y.get(), out.data(), 0, 4096);
    be.synchronize();
    for (std::size_t i = 0; i < in.size(); ++i) CHECK(out[i] == 2.0f * in[i] + 0.5f);
    // device -> device on the same device; not into host memory
    CHECK(be.cpy_tensor_async(*s.y.get(), *s.x.get()));
    CHECK_FALSE(be.cpy_tensor_async(*s.y.get(), *h));
    be.get_tensor_async(*s.x.get(), back.data(), 0, 4096);
    be.synchronize();
    CHECK(back == out);
}

// ---- the scheduler across Vulkan and the CPU --------------------------------------------------

namespace {
using blocktest::cpu_only;
using blocktest::placed;
placed place(blocktest::dims d, const std::set<std::string>& on_vk) { return blocktest::place(d, on_vk, vulkan_buffer_type(0)); }
}  // namespace

TEST_CASE("Vulkan + CPU scheduler: a block split between them equals the CPU alone (n_copies 1, 2, 4)") {
    const blocktest::dims d;
    std::vector<std::vector<float>> expect;
    for (std::int64_t i = 0; i < 5; ++i) expect.push_back(cpu_only(d, i));
    // the f32 projections' weights on the device: their mul_mats and the residual adds run there
    const std::set<std::string> on_vk = {"wo", "w_down"};
    for (const int n_copies : {1, 2, 4}) {
        CAPTURE(n_copies);
        placed p = place(d, on_vk);
        any_backend vk = vulkan_init(0), cpu = cpu_init(2);
        scheduler s({vk, cpu}, {}, n_copies);
        s.alloc_graph(p.b.g);
        INFO(s.print());
        CHECK(s.n_splits() >= 2);
        int on_device = 0;
        for (graph::node* n : p.b.g.nodes())
            if (s.tensor_backend(n) == vk) ++on_device;
        CHECK(on_device >= 2);
        for (graph::node* n : p.b.g.nodes())
            if (n->op == graph::op_kind::mul_mat && n->src[0]->op == graph::op_kind::none && on_vk.count(n->src[0]->name))
                CHECK_MESSAGE(s.tensor_backend(n) == vk, n->name);
        for (std::int64_t i = 0; i < 5; ++i) {
            blocktest::set_inputs(p.b, i);
            s.graph_compute(p.b.g);
            CHECK(nmse(tensor_to_f32(*p.b.out.get()), expect[static_cast<std::size_t>(i)]) < 1e-10);
        }
    }
}

TEST_CASE("Vulkan + CPU scheduler: the whole block on the device (every weight there) equals the CPU alone") {
    const blocktest::dims d;
    placed p0 = place(d, {});
    std::set<std::string> all;
    for (graph::node* w : p0.b.weights) all.insert(w->name);
    placed p = place(d, all);
    any_backend vk = vulkan_init(0), cpu = cpu_init(2);
    scheduler s({vk, cpu}, {}, 1);
    s.alloc_graph(p.b.g);
    INFO(s.print());
    if (vulkan::context_at(0).storage16())  // (without it the f16 projections stay on the CPU)
        for (graph::node* n : p.b.g.nodes())
            if (!n->is_view()) CHECK_MESSAGE(s.tensor_backend(n) == vk, n->name, " ", graph::op_name(n->op));
    for (std::int64_t i = 0; i < 3; ++i) {
        blocktest::set_inputs(p.b, i);
        s.graph_compute(p.b.g);
        CHECK(nmse(tensor_to_f32(*p.b.out.get()), cpu_only(d, i)) < 1e-10);  // 1e-13 on lavapipe
    }
}

// ---- the registry ------------------------------------------------------------------------------

TEST_CASE("Vulkan in the registry: global() lists it, a fresh registry does not") {
    registry& g = registry::global();
    CHECK(g.reg_by_name("Vulkan") == vulkan_reg());
    CHECK(g.dev_by_name("Vulkan0") == vulkan_device(0));
    CHECK(g.reg(g.reg_count() - 1) == cpu_reg());  // CPU stays last
    registry fresh;
    CHECK_FALSE(fresh.reg_by_name("Vulkan"));
    CHECK_FALSE(fresh.dev_by_type(device_type::gpu));
    CHECK_FALSE(vulkan_device(0).description().empty());
    MESSAGE("Vulkan0: ", vulkan_device(0).description(), ", ", vulkan_device(0).memory().total >> 20, " MiB");
    // a CPU-type Vulkan device (lavapipe) is emulated: best_device() passes over it
    const bool cpu_type = vulkan::context_at(0).emulated();
    CHECK(vulkan_device(0).emulated() == cpu_type);
    bool real_gpu = false;
    for (const any_device& d : g.devices()) real_gpu = real_gpu || (d.type() == device_type::gpu && !d.emulated());
    if (!real_gpu) CHECK(g.best_device() == cpu_device());
    if (cpu_type) CHECK(g.best_device() != vulkan_device(0));
    CHECK_FALSE(cpu_device().emulated());
}

// ---- no Vulkan driver (run with VK_ICD_FILENAMES=/nonexistent.json) ------------------------------

TEST_SUITE("vulkan_absent") {
    TEST_CASE("no Vulkan device: the registry has the CPU only and computes there") {
        CHECK(vulkan_device_count() == 0);
        CHECK(vulkan_reg().device_count() == 0);
        MESSAGE("status: ", vulkan_status());
        CHECK_FALSE(vulkan_status().empty());
        registry& g = registry::global();
        CHECK_FALSE(g.reg_by_name("Vulkan"));
        CHECK_FALSE(g.dev_by_name("Vulkan0"));
        CHECK_THROWS_WITH_AS(vulkan_device(0), doctest::Contains("out of range"), tessera::error);
        any_backend be = g.init_best();
        CHECK(be.device() == cpu_device());
        graph::context ctx;
        any_tensor a = graph::new_tensor(ctx, type_id::f32, {4, 1, 1, 1}, "a");
        any_tensor y = graph::scale(a, 3.0f);
        graph::cgraph gr;
        gr.build_forward_expand(y);
        const float v[4] = {1, 2, 3, 4};
        std::memcpy(a.get()->data, v, sizeof v);
        be.graph_compute(gr);
        CHECK(tensor_to_f32(*y.get()) == std::vector<float>{3, 6, 9, 12});
    }
}
