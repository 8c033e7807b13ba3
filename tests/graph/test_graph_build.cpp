// Graph building, typed and runtime-typed handles, views, in-place ops, allocation,
// the executor's errors and abort callback.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <cmath>
#include <type_traits>
#include <variant>
#include <vector>

#include "tessera/graph/all.hpp"
#include "tessera/backend/cpu.hpp"

using namespace tessera;
using namespace tessera::graph;

namespace {
std::vector<float> iota(std::size_t n, float start = 0.f, float step = 1.f) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
    return v;
}
std::size_t index_of(const cgraph& g, const node* n) {
    const auto& v = g.nodes();
    return static_cast<std::size_t>(std::find(v.begin(), v.end(), n) - v.begin());
}
}  // namespace

TEST_CASE("graph: nodes in topological order, leafs, each tensor once, expanded tensor last") {
    context ctx;
    auto x = new_tensor<float, 2>(ctx, {8, 4}, "x");
    auto w = new_tensor<float, 2>(ctx, {8, 6}, "w");
    auto h = mul_mat(w, x).set_name("h");                 // [6, 4]
    auto a = silu(h).set_name("a");
    auto b = mul(a, h).set_name("b");                     // h used twice
    auto c = add(b, new_tensor<float, 1>(ctx, {6}, "bias")).set_name("c");
    cgraph g;
    g.build_forward_expand(c);
    REQUIRE(g.n_nodes() == 4);
    CHECK(g.leafs().size() == 3);
    CHECK(g.node_at(-1) == c.get());
    for (const node* n : g.nodes())
        for (const node* s : n->src)
            if (s && s->op != op_kind::none) CHECK(index_of(g, s) < index_of(g, n));
    CHECK(g.find("bias") != nullptr);
    // expanding again adds nothing; a second output adds only its own nodes
    g.build_forward_expand(c);
    CHECK(g.n_nodes() == 4);
    auto d = scale(a, 2.f);
    g.build_forward_expand(d);
    CHECK(g.n_nodes() == 5);
    CHECK(g.node_at(-1) == d.get());
    const std::string p = g.print();
    CHECK(p.find("unary(silu)") != std::string::npos);
    CHECK(p.find("'bias'") != std::string::npos);
    const std::string dot = g.dot();
    CHECK(dot.rfind("digraph", 0) == 0);
    CHECK(std::count(dot.begin(), dot.end(), '\n') > 10);
    CHECK(dot.find("->") != std::string::npos);
}

TEST_CASE("graph: mul_mat matches ggml's simple example and runs in one call") {
    context ctx;
    auto a = new_tensor<float, 2>(ctx, {2, 4});
    auto b = new_tensor<float, 2>(ctx, {2, 3});
    a.set(std::vector<float>{2, 8, 5, 1, 4, 2, 8, 6});
    b.set(std::vector<float>{10, 5, 9, 9, 5, 4});
    auto c = mul_mat(a, b);
    static_assert(std::is_same_v<decltype(c), tensor<float, 2>>);
    backend::cpu::executor ex(2);
    ex.compute(build_forward(c));
    std::vector<float> out(12);
    c.get(out);
    CHECK(out == std::vector<float>{60, 55, 50, 110, 90, 54, 54, 126, 42, 29, 28, 64});
}

TEST_CASE("graph: views, reshape, permute, transpose share memory and compute through strides") {
    context ctx;
    auto x = new_tensor<float, 3>(ctx, {4, 3, 2}, "x");
    x.set(iota(24));
    auto t = transpose(x);                       // [3, 4, 2]
    CHECK(t.get()->view_src == x.get());
    CHECK(t.get()->bytes() == x.get()->bytes());
    auto r = reshape<2>(x, {12, 2});
    CHECK(r.get()->bytes() == x.get()->bytes());
    auto p = permute(x, {2, 0, 1, 3});           // old 0 -> 2, 1 -> 0, 2 -> 1: [3, 2, 4]
    CHECK(p.shape() == std::array<std::int64_t, 3>{3, 2, 4});
    auto v = view<2>(x, {2, 3}, {x.nb(1)}, 2 * sizeof(float));  // columns 2..3 of each row, first matrix
    auto vv = view<1>(v, {2}, {}, x.nb(1));      // a view of a view is re-based on the root
    CHECK(vv.get()->view_src == x.get());
    CHECK(vv.get()->view_offs == 2 * sizeof(float) + x.nb(1));
    auto ct = cont(t);
    auto cv = cont(v);
    cgraph g;
    g.build_forward_expand(ct);
    g.build_forward_expand(cv);
    backend::cpu::executor().compute(g);
    std::vector<float> o(24);
    ct.get(o);
    // ct[i0, i1, i2] = x[i1, i0, i2]
    for (int i2 = 0; i2 < 2; ++i2)
        for (int i1 = 0; i1 < 4; ++i1)
            for (int i0 = 0; i0 < 3; ++i0) CHECK(o[static_cast<std::size_t>(i2 * 12 + i1 * 3 + i0)] == static_cast<float>(i2 * 12 + i0 * 4 + i1));
    std::vector<float> ov(6);
    cv.get(ov);
    CHECK(ov == std::vector<float>{2, 3, 6, 7, 10, 11});
    // a view past the end of its root is refused
    CHECK_THROWS_AS(view<2>(x, {4, 7}, {x.nb(1)}, 0), tessera::error);
    CHECK_THROWS_AS(reshape<2>(t, {12, 2}), tessera::error);  // not contiguous
    CHECK_THROWS_AS(reshape<2>(x, {5, 5}), tessera::error);   // element count
}

TEST_CASE("graph: in-place ops give the out-of-place results and write over their input") {
    context ctx;
    auto x = new_tensor<float, 2>(ctx, {37, 5});
    auto y = new_tensor<float, 1>(ctx, {37});
    auto xin = iota(185, -3.f, 0.05f);
    x.set(xin);
    y.set(iota(37, 0.5f, 0.01f));
    auto out_of_place = silu(scale(add(x, y), 0.5f));
    auto o = cont(out_of_place);
    cgraph g1;
    g1.build_forward_expand(o);
    backend::cpu::executor ex(2);
    ex.compute(g1);
    std::vector<float> ref(185);
    o.get(ref);
    auto ip = silu_inplace(scale_inplace(add_inplace(x, y), 0.5f));
    CHECK(ip.get()->bytes() == x.get()->bytes());
    cgraph g2;
    g2.build_forward_expand(ip);
    ex.compute(g2);
    std::vector<float> got(185);
    x.get(got);
    CHECK(got == ref);
    // rms_norm / soft_max in place
    auto z = new_tensor<float, 2>(ctx, {64, 3});
    z.set(iota(192, -1.f, 0.01f));
    auto r1 = cont(soft_max(rms_norm(z, 1e-6f)));
    cgraph g3;
    g3.build_forward_expand(r1);
    ex.compute(g3);
    auto r2 = soft_max_inplace(rms_norm_inplace(z, 1e-6f));
    cgraph g4;
    g4.build_forward_expand(r2);
    ex.compute(g4);
    std::vector<float> a1(192), a2(192);
    r1.get(a1);
    z.get(a2);
    CHECK(a1 == a2);
}

TEST_CASE("graph: any_tensor checks conversions; visit sees the run-time type") {
    context ctx;
    any_tensor a = new_tensor(ctx, type_id::f16, {8, 3, 1, 1});
    CHECK(a.is<f16, 2>());
    CHECK_FALSE(a.is<float, 2>());
    CHECK_FALSE(a.is<f16, 1>());
    CHECK_NOTHROW(((void)a.as<f16, 2>()));
    CHECK_NOTHROW(((void)a.as<f16, 4>()));
    CHECK_THROWS_AS(((void)a.as<float, 2>()), tessera::error);
    CHECK_THROWS_AS(((void)a.as<f16, 1>()), tessera::error);
    const auto name = visit(a, [](auto t) { return std::string(type_name(decltype(t)::type)); });
    CHECK(name == "f16");
    any_tensor q = new_tensor(ctx, type_id::q4_0, {64, 2, 1, 1});
    CHECK(visit(q, [](auto t) { return static_cast<int>(decltype(t)::type); }) == static_cast<int>(type_id::q4_0));
    // runtime-typed builders refuse what the typed ones reject at compile time
    any_tensor i = new_tensor(ctx, type_id::i32, {8, 3, 1, 1});
    CHECK_THROWS_AS(add(a, i), tessera::error);
    CHECK_THROWS_AS(silu(q), tessera::error);
    CHECK_THROWS_AS(mul_mat(a, q), tessera::error);
    any_tensor b = new_tensor(ctx, type_id::f32, {5, 3, 1, 1});
    try {
        (void)add(a, b);
        FAIL("no error");
    } catch (const tessera::error& e) {
        CHECK(e.code() == errc::shape_mismatch);
        CHECK(std::string(e.what()).find("cannot be broadcast") != std::string::npos);
    }
    CHECK_THROWS_AS(mul_mat(b, a), tessera::error);  // K differs
    context other;
    any_tensor c = new_tensor(other, type_id::f32, {8, 3, 1, 1});
    CHECK_THROWS_AS(add(a, c), tessera::error);
}

TEST_CASE("executor: unsupported nodes and missing memory are refused before computing") {
    context ctx;
    // rows of an i16 table: the graph takes them (the untyped API), the CPU has no kernel
    any_tensor w(ctx.new_tensor(type_id::i16, {256, 4, 1, 1}));
    any_tensor ids(ctx.new_tensor(type_id::i32, {2, 1, 1, 1}));
    any_tensor y = get_rows(w, ids);
    backend::cpu::executor ex;
    try {
        ex.compute(build_forward(y));
        FAIL("no error");
    } catch (const tessera::error& e) {
        CHECK(e.code() == errc::unsupported);
        CHECK(std::string(e.what()).find("get_rows from i16") != std::string::npos);
    }
    auto pos = new_tensor<std::int32_t, 1>(ctx, {3});
    auto q = new_tensor<float, 3>(ctx, {8, 2, 3});
    rope_params rp;
    rp.n_dims = 8;
    rp.mode = rope_mode::mrope;
    rp.sections = {2, 1, 1, 0};
    CHECK_THROWS_AS(rope_ext(q, pos, std::nullopt, rp), tessera::error);  // 3 positions, needs 12
    context na({.no_alloc = true});
    auto a = new_tensor<float, 1>(na, {16});
    auto s = sqr(a);
    cgraph g = build_forward(s);
    CHECK_THROWS_AS(ex.compute(g), tessera::error);
    graph_buffer buf = allocate(g);
    CHECK(buf.size() >= 2 * 16 * sizeof(float));
    a.set(iota(16));
    ex.compute(g);
    std::vector<float> o(16);
    s.get(o);
    CHECK(o[5] == 25.f);
    (void)pos;
}

TEST_CASE("executor: abort callback stops a compute cleanly; the pool is reused") {
    context ctx;
    auto x = new_tensor<float, 1>(ctx, {1000});
    x.set(iota(1000));
    tensor<float, 1> t = x;
    for (int i = 0; i < 100; ++i) t = scale(t, 1.0f);
    cgraph g = build_forward(t);
    for (int threads : {1, 2}) {
        backend::cpu::executor ex(threads);
        int calls = 0;
        ex.set_abort_callback([&] { return ++calls == 10; });
        try {
            ex.compute(g);
            FAIL("not aborted");
        } catch (const tessera::error& e) {
            CHECK(e.code() == errc::aborted);
            CHECK(std::string(e.what()).find("after node 10 of 100") != std::string::npos);
        }
        ex.set_abort_callback(nullptr);
        for (int k = 0; k < 3; ++k) ex.compute(g);  // same workers, no thread per compute
        std::vector<float> o(1000);
        t.get(o);
        CHECK(o[999] == 999.f);
    }
}

TEST_CASE("thread_pool: barrier orders phases across threads") {
    backend::cpu::thread_pool pool(2);
    std::vector<int> v(2, 0);
    std::atomic<int> bad{0};
    for (int rep = 0; rep < 100; ++rep) {
        pool.run([&](int ith, int nth) {
            v[static_cast<std::size_t>(ith)] = rep;
            pool.barrier();
            for (int j = 0; j < nth; ++j)
                if (v[static_cast<std::size_t>(j)] != rep) ++bad;
            pool.barrier();
        });
    }
    CHECK(bad.load() == 0);
    CHECK_THROWS_AS(backend::cpu::thread_pool(0), tessera::error);
}

TEST_CASE("graph: docs/ops.md lists exactly the implemented ops") {
    const char* root = std::getenv("TESSERA_SOURCE_ROOT");
    if (!root) {
        MESSAGE("TESSERA_SOURCE_ROOT not set; skipping the docs check");
        return;
    }
    std::ifstream f(std::string(root) + "/docs/ops.md");
    REQUIRE(f.good());
    std::map<std::string, std::string> status;
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("| `", 0) != 0) continue;
        const auto e = line.find('`', 3);
        const std::string name = line.substr(3, e - 3);
        const auto s0 = line.find('|', e) + 1;
        const auto s1 = line.find('|', s0);
        std::string st = line.substr(s0, s1 - s0);
        st.erase(0, st.find_first_not_of(' '));
        st.erase(st.find_last_not_of(' ') + 1);
        if (!status.count(name)) status[name] = st;
    }
    for (std::size_t i = 0; i < op_count; ++i) {
        const auto op = static_cast<op_kind>(i);
        const std::string name(op_name(op));
        INFO(name);
        REQUIRE(status.count(name) == 1);
        CHECK(status[name] == (backend::cpu::implements(op) ? "yes" : "no"));
    }
}

TEST_CASE("op tables: every CPU row is whole; op_traits agree with the CPU's view handling and the builders") {
    for (std::size_t i = 0; i < op_count; ++i) {
        const auto op = static_cast<op_kind>(i);
        INFO(std::string(op_name(op)));
        const auto& e = backend::cpu::op_table[i];
        // a row names all three (support, scratch, compute) or none (not implemented)
        CHECK((e.supports != nullptr) == (e.compute != nullptr));
        CHECK((e.scratch != nullptr) == (e.compute != nullptr));
        // the CPU treats exactly the leaf and the views as "no work"
        CHECK(backend::cpu::is_noop(op) == (op == op_kind::none || op_is_view(op)));
        // views never run in place (they have no bytes of their own)
        CHECK_FALSE((op_is_view(op) && op_can_inplace(op)));
    }
    CHECK(op_is_view(op_kind::permute));
    CHECK(op_can_inplace(op_kind::rms_norm));
    CHECK_FALSE(op_can_inplace(op_kind::mul_mat));
    static_assert(std::is_same_v<op_param_t<op_kind::rope>, rope_params>);
    static_assert(std::is_same_v<op_param_t<op_kind::add>, std::monostate>);
    // a node cannot hold another op's parameters: the context refuses them by name
    context ctx;
    node* a = ctx.new_tensor(type_id::f32, {4, 1, 1, 1});
    CHECK_THROWS_WITH_AS(ctx.new_op(a->lay, op_kind::scale, norm_params{1e-5f}, {a}),
                         doctest::Contains("op scale: parameters of the wrong type"), tessera::error);
    CHECK_THROWS_WITH_AS(ctx.new_view(a, a->lay, 0, op_kind::view, std::monostate{}, {a}),
                         doctest::Contains("op view: parameters of the wrong type"), tessera::error);
    CHECK_NOTHROW(ctx.new_op(a->lay, op_kind::scale, make_params<op_kind::scale>(2.f, 0.f), {a}));
}

TEST_CASE("op_params: holds one struct, copies and moves it (custom functions too), refuses another by index") {
    // numbered as a std::variant over the same list: std::monostate first
    static_assert(op_params::index_of<std::monostate> == 0);
    static_assert(op_params::index_of<unary_params> == 1);
    static_assert(op_params::index_of<custom_params> == op_params::count - 1);
    static_assert(op_params::index_of<int> == op_params::count);
    op_params none;
    CHECK(none.index() == 0);
    CHECK(none.holds<std::monostate>());

    op_params r = rope_params{.n_dims = 64, .mode = rope_mode::neox, .freq_base = 5e5f};
    CHECK(r.holds<rope_params>());
    CHECK(r.get<rope_params>().n_dims == 64);
    CHECK(r.get<rope_params>().freq_base == 5e5f);
    CHECK(r.get_if<norm_params>() == nullptr);
    const std::string wrong = "op parameters: asked for the struct at index " +
                              std::to_string(op_params::index_of<norm_params>) + ", the node holds index " +
                              std::to_string(op_params::index_of<rope_params>);
    CHECK_THROWS_WITH_AS(r.get<norm_params>(), doctest::Contains(wrong.c_str()), tessera::error);
    op_params r2 = r;  // a copy is independent
    r2.get<rope_params>().n_dims = 32;
    CHECK(r.get<rope_params>().n_dims == 64);
    CHECK(r2.get<rope_params>().n_dims == 32);

    // custom_params holds a std::function: copies share nothing, the captured state lives
    // until the last holder is gone, and assignment over it releases the old one
    auto state = std::make_shared<int>(41);
    std::weak_ptr<int> watch = state;
    {
        op_params c = custom_params{[state](node&, int, int) { ++*state; }, 2};
        state.reset();
        CHECK(c.holds<custom_params>());
        op_params c2 = c;
        op_params c3 = std::move(c);
        node dummy;
        c2.get<custom_params>().fn(dummy, 0, 1);
        c3.get<custom_params>().fn(dummy, 0, 1);
        CHECK(*watch.lock() == 43);
        CHECK(c3.get<custom_params>().n_tasks == 2);
        c2 = scale_params{2.0f, 1.0f};  // one holder left (c3)
        CHECK(c2.get<scale_params>().b == 1.0f);
        CHECK_FALSE(watch.expired());
        c3 = c2;
        CHECK(watch.expired());
        CHECK(c3.get<scale_params>().s == 2.0f);
    }
}

TEST_CASE("fail_cat writes text and integers into the message, with the error's code") {
    try {
        fail_cat(errc::shape_mismatch, "row of ", std::int64_t{-7}, " elements, ", std::size_t{18446744073709551615u},
                 " bytes, ", std::string_view("q4_0"), " ", 32);
        FAIL("fail_cat returned");
    } catch (const tessera::error& e) {
        CHECK(e.code() == errc::shape_mismatch);
        CHECK(std::string(e.what()) == "row of -7 elements, 18446744073709551615 bytes, q4_0 32");
    }
}

TEST_CASE("allocate: the memory planner reuses memory and runs ops in place (op_traits); plan_linear keeps every tensor") {
    // x -> scale -> sqr -> add(., x) -> silu, 1024 floats each: x is an input (kept);
    // each later result may take over its dying source, so two tensors' memory suffices.
    constexpr std::size_t n = 1024, T = n * sizeof(float);
    context na({.no_alloc = true});
    auto x = new_tensor<float, 1>(na, {static_cast<std::int64_t>(n)});
    auto y = silu(add(sqr(scale(x, 0.5f)), x));
    cgraph g = build_forward(y);
    const allocation_plan lin = plan_linear(g);
    CHECK(lin.total == 5 * T);
    const allocation_plan pl = plan_memory(g);
    CHECK(pl.total == 2 * T);
    CHECK(pl.placements.size() == 5);
    graph_buffer buf = allocate(g);
    CHECK(buf.size() == 2 * T);
    x.set(iota(n, -8.f, 1.f / 64));
    backend::cpu::executor(2).compute(g);
    std::vector<float> o(n);
    y.get(o);
    for (std::size_t i = 0; i < n; ++i) {
        const double v = -8.0 + static_cast<double>(i) / 64, h = 0.25 * v * v + v;
        CHECK(o[i] == doctest::Approx(h / (1 + std::exp(-h))).epsilon(1e-5));
    }
}
