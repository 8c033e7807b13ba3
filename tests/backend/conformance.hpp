// The backend conformance suites, one per concept, defined once (doctest
// TEST_CASE_TEMPLATE_DEFINE) and instantiated per family of models by the units that
// include this header (TEST_CASE_TEMPLATE_INVOKE): test_conformance.cpp (CPU, REF,
// CPU_REPACK) and vulkan/test_vulkan_conformance.cpp (Vulkan). A family F names its model
// types and handles, and says what the suites expect of it:
//   buft_model, buffer_model, backend_model, device_model   the model types
//   buft(), dev(), init(), reg() (registry suite only)      its handles
//   host           its buffer type is host memory
//   type           its device_type
//   reads_host     its device accepts CPU buffers (supports_buft)
//   reads_ref      its device accepts REF buffers
//   add_op, norm_op, softmax_op   it computes f32 add / rms_norm / soft_max
//   own_guid       its streams have a guid of their own (else a CPU stream's)
//   quant_mul_mat  it computes mul_mat with q4_0, q8_0, q4_K weights
//   repacks        its buffer type repacks quantized weights
// The suites' ids: conformance_buffer_type, conformance_buffer,
// conformance_buffer_copies_across_buffer_types, conformance_backend,
// conformance_quantized_weight, conformance_event, conformance_device,
// conformance_registry.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "block.hpp"
#include "tessera/backend/all.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/quant/reference.hpp"

using namespace tessera;
using namespace tessera::backend;
using graph::any_tensor;

namespace {

// wq: wf quantized to t; want[n][m] = sum_k wq[m][k] * xq[n][k] in double, x quantized to
// t's dot partner and back; mag the same sum of |terms|.
void quantized_definition(type_id t, std::int64_t k, std::int64_t m, std::int64_t n, const std::vector<float>& wf,
                          const std::vector<float>& xf, std::vector<std::byte>& wq, std::vector<double>& want,
                          std::vector<double>& mag) {
    quant::quantize(t, wf.data(), wq.data(), m, k);
    const type_id tp = quant::dot_partner_type(t);
    std::vector<std::byte> xq(static_cast<std::size_t>(row_size(tp, k) * n));
    quant::quantize(tp, xf.data(), xq.data(), n, k);
    std::vector<float> wd(wf.size()), xd(xf.size());
    quant::dequantize_row(t, wq.data(), wd.data(), m * k);
    quant::dequantize_row(tp, xq.data(), xd.data(), n * k);
    want.assign(static_cast<std::size_t>(m * n), 0.0);
    mag.assign(want.size(), 0.0);
    for (std::int64_t c = 0; c < n; ++c)
        for (std::int64_t r = 0; r < m; ++r)
            for (std::int64_t i = 0; i < k; ++i) {
                const double p = static_cast<double>(wd[static_cast<std::size_t>(r * k + i)]) * xd[static_cast<std::size_t>(c * k + i)];
                want[static_cast<std::size_t>(c * m + r)] += p;
                mag[static_cast<std::size_t>(c * m + r)] += std::fabs(p);
            }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("buffer_type conformance", F, conformance_buffer_type) {
    // the model directly
    typename F::buft_model m;
    CHECK_FALSE(std::string_view(m.name()).empty());
    const std::size_t a = m.alignment();
    CHECK(a > 0);
    CHECK((a & (a - 1)) == 0);
    CHECK(is_host(m) == F::host);
    // the handle
    any_buffer_type bt = F::buft();
    CHECK(bt == F::buft());  // one shared instance
    CHECK(bt.name() == std::string_view(m.name()));
    CHECK(bt.alignment() == a);
    CHECK(bt.device() == F::dev());
    CHECK(bt.device().supports_buft(bt));
    CHECK(bt.max_size() >= (std::size_t{1} << 30));
    graph::context ctx({true});
    graph::node* t = ctx.new_tensor(type_id::f32, {7, 5, 1, 1}, "t");
    CHECK(bt.alloc_size(*t) >= t->lay.nbytes());
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) {
        any_buffer b = bt.alloc_buffer(n);
        REQUIRE(b);
        CHECK(b.size() >= n);
        CHECK(b.type() == bt);
        CHECK(b.is_host() == F::host);
        if (n) {
            REQUIRE(b.base() != nullptr);
            CHECK(reinterpret_cast<std::uintptr_t>(b.base()) % a == 0);
        }
    }
    CHECK_THROWS_AS(bt.alloc_buffer(SIZE_MAX), tessera::error);
}

TEST_CASE_TEMPLATE_DEFINE("buffer conformance", F, conformance_buffer) {
    any_buffer_type bt = F::buft();
    graph::context ctx({true});
    graph::node* t = ctx.new_tensor(type_id::f32, {16, 4, 1, 1}, "t");
    graph::node* u = ctx.new_tensor(type_id::f32, {16, 4, 1, 1}, "u");
    any_buffer b = bt.alloc_buffer(2 * 256 + 2 * bt.alignment());
    CHECK_FALSE(std::string_view(b.name()).empty());
    CHECK(b.usage() == buffer_usage::any);
    b.set_usage(buffer_usage::weights);
    CHECK(b.usage() == buffer_usage::weights);

    tensor_alloc(b, *t, b.base());
    tensor_alloc(b, *u, b.base() + 256 + bt.alignment());
    CHECK(buffer_of(*t) == b);
    CHECK(buffer_of(*u) == b);
    CHECK(b.contains(t->bytes(), 256));
    CHECK_FALSE(b.contains(b.base() + b.size(), 1));

    std::vector<float> in(64), out(64, -1.0f);
    for (int i = 0; i < 64; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f - 3.0f;
    tensor_set(*t, in.data(), 0, 256);
    tensor_get(*t, out.data(), 0, 256);
    CHECK(out == in);
    // partial I/O at an offset
    const float nine = 9.0f;
    tensor_set(*t, &nine, 40, 4);
    float back = 0;
    tensor_get(*t, &back, 40, 4);
    CHECK(back == 9.0f);
    // memset
    tensor_memset(*t, 0, 0, 256);
    tensor_get(*t, out.data(), 0, 256);
    CHECK(out == std::vector<float>(64, 0.0f));
    // copy between tensors of the same buffer
    tensor_set(*t, in.data(), 0, 256);
    tensor_copy(*t, *u);
    tensor_get(*u, out.data(), 0, 256);
    CHECK(out == in);
    // clear
    b.clear(0);
    tensor_get(*u, out.data(), 0, 256);
    CHECK(out == std::vector<float>(64, 0.0f));
    // bad use: out of range, no memory, wrong layout, wrong placement
    CHECK_THROWS_WITH_AS(tensor_set(*t, in.data(), 8, 256), doctest::Contains("outside the 256 bytes"), tessera::error);
    graph::node* none = ctx.new_tensor(type_id::f32, {4, 1, 1, 1}, "none");
    CHECK_THROWS_WITH_AS(tensor_get(*none, out.data(), 0, 16), doctest::Contains("has no memory"), tessera::error);
    graph::node* other = ctx.new_tensor(type_id::f32, {8, 1, 1, 1}, "other");
    CHECK_THROWS_WITH_AS(tensor_copy(*t, *other), doctest::Contains("differ in layout"), tessera::error);
    CHECK_THROWS_WITH_AS(tensor_alloc(b, *other, b.base() + b.size() - 4), doctest::Contains("does not fit"), tessera::error);
    // the buffer is gone -> no buffer found
    graph::node* gone = ctx.new_tensor(type_id::f32, {4, 1, 1, 1}, "gone");
    {
        any_buffer tmp = bt.alloc_buffer(64);
        tensor_alloc(tmp, *gone, tmp.base());
        CHECK(buffer_of(*gone) == tmp);
    }
    CHECK_FALSE(buffer_of(*gone));
}

TEST_CASE_TEMPLATE_DEFINE("buffer copies across buffer types", F, conformance_buffer_copies_across_buffer_types) {
    // F's buffer <-> the other family's buffer, and host memory of a context
    graph::context ctx({true});
    graph::context host;  // allocates: host memory in no buffer
    graph::node* a = ctx.new_tensor(type_id::f32, {10, 1, 1, 1}, "a");
    graph::node* c = ctx.new_tensor(type_id::f32, {10, 1, 1, 1}, "c");
    graph::node* h = host.new_tensor(type_id::f32, {10, 1, 1, 1}, "h");
    any_buffer b1 = F::buft().alloc_buffer(64);
    any_buffer b2 = (F::host ? reference_buffer_type() : cpu_buffer_type()).alloc_buffer(64);
    tensor_alloc(b1, *a, b1.base());
    tensor_alloc(b2, *c, b2.base());
    std::vector<float> v(10), out(10);
    for (int i = 0; i < 10; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i * i);
    std::memcpy(h->data, v.data(), 40);
    CHECK_FALSE(buffer_of(*h));
    CHECK(is_host_memory(*h));
    tensor_copy(*h, *a);
    tensor_copy(*a, *c);
    tensor_get(*c, out.data(), 0, 40);
    CHECK(out == v);
}

TEST_CASE_TEMPLATE_DEFINE("backend conformance", F, conformance_backend) {
    any_backend be = F::init();
    static_assert(tessera::backend::backend<typename F::backend_model>);
    CHECK_FALSE(be.name().empty());
    CHECK(be.device() == F::dev());
    CHECK(be.default_buffer_type() == F::buft());
    CHECK(be.guid() == F::init().guid());
    if constexpr (F::own_guid) CHECK(be.guid() != (F::host ? reference_init() : cpu_init(1)).guid());
    else CHECK(be.guid() == cpu_init(1).guid());  // a CPU stream

    // y = mul_mat(w, x) + b, against a double reference
    graph::context ctx({true});
    any_tensor w = graph::new_tensor(ctx, type_id::f32, {5, 3, 1, 1}, "w");
    any_tensor x = graph::new_tensor(ctx, type_id::f32, {5, 2, 1, 1}, "x");
    any_tensor bias = graph::new_tensor(ctx, type_id::f32, {3, 1, 1, 1}, "bias");
    any_tensor y = graph::add(graph::mul_mat(w, x), bias).set_name("y");
    graph::cgraph g;
    g.build_forward_expand(y);
    std::vector<graph::node*> all{w.get(), x.get(), bias.get()};
    for (graph::node* n : g.nodes()) all.push_back(n);
    any_buffer buf = alloc_tensors(all, be.default_buffer_type());
    REQUIRE(buf);
    const auto W = blocktest::pseudo_random(15, 3), X = blocktest::pseudo_random(10, 4), B = blocktest::pseudo_random(3, 5);
    be.set_tensor_async(*w.get(), W.data(), 0, 60);
    be.set_tensor_async(*x.get(), X.data(), 0, 40);
    be.set_tensor_async(*bias.get(), B.data(), 0, 12);
    be.synchronize();
    auto check = [&] {
        std::vector<float> out(6);
        be.get_tensor_async(*y.get(), out.data(), 0, 24);
        be.synchronize();
        for (int n = 0; n < 2; ++n)
            for (int m = 0; m < 3; ++m) {
                double s = B[static_cast<std::size_t>(m)];
                for (int k = 0; k < 5; ++k) s += static_cast<double>(W[static_cast<std::size_t>(m * 5 + k)]) * X[static_cast<std::size_t>(n * 5 + k)];
                CHECK(out[static_cast<std::size_t>(n * 3 + m)] == doctest::Approx(s).epsilon(1e-5));
            }
    };
    be.graph_compute(g);
    check();
    // a plan made once, computed again
    tensor_memset(*y.get(), 0, 0, 24);
    graph_plan p = be.graph_plan_create(g);
    be.graph_plan_compute(p);
    check();
    be.graph_compute_async(g);
    be.synchronize();
    check();
}

// Quantized weights (the types with a packed GEMM, which CPU_REPACK stores repacked):
// the bytes read back as written, and mul_mat with 1 and 5 columns (gemv and packed GEMM)
// equals a double-precision definition (weights dequantized, activations quantized to
// the dot partner and back) within 1e-4 of sum |w x|: f32 rounding of the kernels stays
// orders of magnitude below that, a wrong lane or scale far above.
TEST_CASE_TEMPLATE_DEFINE("quantized weight conformance", F, conformance_quantized_weight) {
    any_backend be = F::init();
    for (const type_id t : {type_id::q4_0, type_id::q8_0, type_id::q4_K}) {
        for (const std::int64_t n : {1, 5}) {
            CAPTURE(static_cast<int>(t));  // the type id
            CAPTURE(n);
            const std::int64_t k = 768, m = 8;
            graph::context ctx({true});
            any_tensor w = graph::new_tensor(ctx, t, {k, m, 1, 1}, "w");
            any_tensor x = graph::new_tensor(ctx, type_id::f32, {k, n, 1, 1}, "x");
            any_tensor y = graph::mul_mat(w, x).set_name("y");
            std::vector<graph::node*> ws{w.get()}, rest{x.get(), y.get()};
            any_buffer wb = alloc_tensors(ws, F::buft(), buffer_usage::weights);
            any_buffer rb = alloc_tensors(rest, be.default_buffer_type());
            REQUIRE(wb);
            CHECK(is_repacked(*w.get()) == F::repacks);
            const auto wf = blocktest::pseudo_random(static_cast<std::size_t>(k * m), 31);
            const auto xf = blocktest::pseudo_random(static_cast<std::size_t>(k * n), 32);
            std::vector<std::byte> wq(w.get()->lay.nbytes()), back(wq.size());
            std::vector<double> want, mag;
            quantized_definition(t, k, m, n, wf, xf, wq, want, mag);
            be.set_tensor_async(*w.get(), wq.data(), 0, wq.size());
            be.set_tensor_async(*x.get(), xf.data(), 0, xf.size() * 4);
            be.get_tensor_async(*w.get(), back.data(), 0, back.size());
            be.synchronize();
            CHECK(back == wq);
            if constexpr (!F::quant_mul_mat) continue;
            graph::cgraph g;
            g.build_forward_expand(y);
            be.graph_compute(g);
            std::vector<float> got(static_cast<std::size_t>(m * n));
            be.get_tensor_async(*y.get(), got.data(), 0, got.size() * 4);
            be.synchronize();
            int bad = 0;
            for (std::size_t i = 0; i < got.size(); ++i)
                if (!(std::fabs(got[i] - want[i]) <= 1e-4 * mag[i])) ++bad;
            CHECK(bad == 0);
        }
    }
}

TEST_CASE_TEMPLATE_DEFINE("event conformance", F, conformance_event) {
    any_device d = F::dev();
    any_event e = d.event_new();
    CHECK(static_cast<bool>(e) == d.caps().events);
    if (e) {
        any_backend be = F::init();
        any_backend other = cpu_init(1);
        e.record(be);
        e.synchronize();
        e.wait(other);
    } else {
        CHECK_THROWS_AS(e.synchronize(), tessera::error);  // an empty handle says so
    }
}

TEST_CASE_TEMPLATE_DEFINE("device conformance", F, conformance_device) {
    any_device d = F::dev();
    const device_props p = d.props();
    CHECK(p.name == d.name());
    CHECK_FALSE(p.description.empty());
    CHECK(p.memory_total > 0);
    CHECK(p.memory_free <= p.memory_total);
    CHECK(p.type == F::type);
    CHECK(d.buffer_type() == F::buft());
    CHECK(d.supports_buft(F::buft()));
    CHECK(d.supports_buft(cpu_buffer_type()) == F::reads_host);
    CHECK(d.supports_buft(reference_buffer_type()) == F::reads_ref);
    any_backend be = d.init_backend();
    CHECK(be.device() == d);

    graph::context ctx({true});
    any_tensor a = graph::new_tensor(ctx, type_id::f32, {8, 2, 1, 1}, "a");
    any_tensor idx = graph::new_tensor(ctx, type_id::i32, {8, 2, 1, 1}, "i");
    CHECK(d.supports_op(*graph::add(a, a).get()) == F::add_op);
    CHECK(d.supports_op(*graph::rms_norm(a, 1e-5f).get()) == F::norm_op);
    CHECK(d.supports_op(*graph::soft_max_ext(a, any_tensor(), 1.0f).get()) == F::softmax_op);
    // an op neither backend computes: soft_max_back with ALiBi (ggml's CPU refuses it too)
    CHECK_FALSE(d.supports_op(*graph::soft_max_ext_back(a, a, 1.0f, 8.0f).get()));
    (void)idx;
    CHECK_FALSE(d.offload_op(*graph::add(a, a).get()));

    if (p.caps.buffer_from_host_ptr) {
        alignas(64) static float mem[16];
        any_buffer hb = d.buffer_from_host_ptr(mem, sizeof mem, sizeof mem);
        CHECK(hb.base() == reinterpret_cast<std::byte*>(mem));
    } else {
        alignas(64) static float mem2[16];
        CHECK_THROWS_WITH_AS(d.buffer_from_host_ptr(mem2, sizeof mem2, sizeof mem2), doctest::Contains("host pointer"),
                             tessera::error);
    }
    CHECK(static_cast<bool>(d.host_buffer_type()) == p.caps.host_buffer);
}

TEST_CASE_TEMPLATE_DEFINE("registry conformance", F, conformance_registry) {
    any_reg r = F::reg();
    CHECK_FALSE(r.name().empty());
    REQUIRE(r.device_count() >= 1);
    CHECK(r.device(0) == F::dev());
    CHECK_THROWS_WITH_AS(r.device(r.device_count()), doctest::Contains("out of range"), tessera::error);
    CHECK(r.proc_address("no_such_function") == nullptr);
    auto set_threads = r.template proc<set_n_threads_fn>("set_n_threads");
    CHECK((set_threads != nullptr) == F::host);
}
