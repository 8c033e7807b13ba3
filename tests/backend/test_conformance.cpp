// One conformance suite per backend concept, instantiated for every model: the CPU
// backend, the reference backend, and (through the handles) their type-erased forms.
// GCC 12 reports a false -Wrestrict inside std::string's _M_replace (GCC bug 105651) for
// the quantized-weight case's std::string temporaries at -O3; no string here overlaps.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
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

// One family of models: the model types themselves and their handles.
struct cpu_family {
    using buft_model = cpu_buffer_type_model;
    using buffer_model = cpu_buffer;
    using backend_model = cpu_backend;
    using device_model = cpu_device_model;
    using reg_model = cpu_reg_model;
    static any_buffer_type buft() { return cpu_buffer_type(); }
    static any_device dev() { return cpu_device(); }
    static any_reg reg() { return cpu_reg(); }
    static any_backend init() { return cpu_init(2); }
    static constexpr bool host = true;
    static constexpr device_type type = device_type::cpu;
    static constexpr bool reads_host = true, reads_ref = false, any_op = true, own_guid = true;
    static constexpr bool quant_mul_mat = true, repacks = false;
};
// CPU_REPACK: its own buffer type and ACCEL device; its stream is a CPU stream, it reads
// host buffers, and it takes only mul_mat with repacked weights (test_repack.cpp).
struct repack_family {
    using buft_model = repack_buffer_type_model;
    using buffer_model = repack_buffer;
    using backend_model = cpu_backend;
    using device_model = repack_device_model;
    static any_buffer_type buft() { return repack_buffer_type(); }
    static any_device dev() { return repack_device(); }
    static any_backend init() { return repack_device().init_backend("2"); }
    static constexpr bool host = false;
    static constexpr device_type type = device_type::accel;
    static constexpr bool reads_host = true, reads_ref = false, any_op = false, own_guid = false;
    static constexpr bool quant_mul_mat = true, repacks = true;
};
struct ref_family {
    using buft_model = reference_buffer_type_model;
    using buffer_model = reference_buffer;
    using backend_model = reference_backend;
    using device_model = reference_device_model;
    using reg_model = reference_reg_model;
    static any_buffer_type buft() { return reference_buffer_type(); }
    static any_device dev() { return reference_device(); }
    static any_reg reg() { return reference_reg(); }
    static any_backend init() { return reference_init(); }
    static constexpr bool host = false;
    static constexpr device_type type = device_type::gpu;
    static constexpr bool reads_host = false, reads_ref = true, any_op = true, own_guid = true;
    static constexpr bool quant_mul_mat = false, repacks = false;  // mul_mat takes float weights only
};

static_assert(buffer_type<cpu_family::buft_model> && buffer_type<ref_family::buft_model>);
static_assert(buffer<cpu_family::buffer_model> && buffer<ref_family::buffer_model>);
static_assert(tessera::backend::backend<cpu_family::backend_model> && tessera::backend::backend<ref_family::backend_model>);
static_assert(device<cpu_family::device_model> && device<ref_family::device_model>);
static_assert(backend_reg<cpu_family::reg_model> && backend_reg<ref_family::reg_model>);
// things that are not models
static_assert(!buffer_type<int> && !buffer<cpu_buffer_type_model> && !device<cpu_backend> && !tessera::backend::backend<cpu_device_model>);

// A buffer type with only the required entries: the customization points give the defaults.
struct minimal_buft {
    std::string_view name() const { return "MIN"; }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(cpu_buffer(n)); }
    std::size_t alignment() const { return 16; }
};
static_assert(buffer_type<minimal_buft>);

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

TEST_CASE("customization points: defaults for the optional entries") {
    minimal_buft m;
    graph::context ctx({true});
    graph::node* t = ctx.new_tensor(type_id::f16, {10, 3, 1, 1}, "t");
    CHECK(get_max_size(m) == SIZE_MAX);
    CHECK_FALSE(is_host(m));
    CHECK(get_alloc_size(m, *t) == 60);
    any_buffer_type h(m);
    CHECK_FALSE(h.device());  // no device() entry
    any_buffer b = h.alloc_buffer(100);
    CHECK(b.type() == h);  // filled in by the handle
    // models with the entries
    CHECK(is_host(cpu_buffer_type_model{}));
    CHECK_FALSE(is_host(reference_buffer_type_model{}));
    CHECK(get_max_size(reference_buffer_type_model{}) == (std::size_t{1} << 40));
    CHECK(get_caps(cpu_device_model{}).buffer_from_host_ptr);
    CHECK(get_caps(reference_device_model{}).events);  // derived from event_new()
    CHECK_FALSE(get_caps(reference_device_model{}).buffer_from_host_ptr);
}

TEST_CASE_TEMPLATE("buffer_type conformance", F, cpu_family, ref_family, repack_family) {
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

TEST_CASE_TEMPLATE("buffer conformance", F, cpu_family, ref_family, repack_family) {
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

TEST_CASE_TEMPLATE("buffer copies across buffer types", F, cpu_family, ref_family, repack_family) {
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

TEST_CASE_TEMPLATE("backend conformance", F, cpu_family, ref_family, repack_family) {
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
TEST_CASE_TEMPLATE("quantized weight conformance", F, cpu_family, ref_family, repack_family) {
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

TEST_CASE_TEMPLATE("event conformance", F, cpu_family, ref_family, repack_family) {
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

TEST_CASE_TEMPLATE("device conformance", F, cpu_family, ref_family, repack_family) {
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
    CHECK(d.supports_op(*graph::add(a, a).get()) == F::any_op);
    CHECK(d.supports_op(*graph::rms_norm(a, 1e-5f).get()) == F::any_op);
    CHECK(d.supports_op(*graph::soft_max_ext(a, any_tensor(), 1.0f).get()) == F::any_op);
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

TEST_CASE_TEMPLATE("registry conformance", F, cpu_family, ref_family) {
    any_reg r = F::reg();
    CHECK_FALSE(r.name().empty());
    REQUIRE(r.device_count() >= 1);
    CHECK(r.device(0) == F::dev());
    CHECK_THROWS_WITH_AS(r.device(r.device_count()), doctest::Contains("out of range"), tessera::error);
    CHECK(r.proc_address("no_such_function") == nullptr);
    auto set_threads = r.template proc<set_n_threads_fn>("set_n_threads");
    CHECK((set_threads != nullptr) == F::host);
}
