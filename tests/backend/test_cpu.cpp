// The CPU backend's own features: device description and memory, zero-copy buffers
// from host pointers, n_threads, the abort callback, parameters, wrong buffers.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "block.hpp"
#include "tessera/backend/all.hpp"
#include "tessera/graph/all.hpp"

using namespace tessera;
using namespace tessera::backend;
using graph::any_tensor;

TEST_CASE("cpu device: description, memory, caps") {
    any_device d = cpu_device();
    CHECK(d.name() == "CPU");
    CHECK(d.type() == device_type::cpu);
    std::ifstream f("/proc/cpuinfo");
    std::string line, brand;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            brand = line.substr(line.find(':') + 2);
            break;
        }
    if (!brand.empty()) CHECK(d.description() == brand);
    const memory_info m = d.memory();
    CHECK(m.total > (std::size_t{64} << 20));
    CHECK(m.free <= m.total);
    const device_caps c = d.caps();
    CHECK_FALSE(c.async);
    CHECK_FALSE(c.events);
    CHECK(c.buffer_from_host_ptr);
    CHECK_FALSE(c.host_buffer);
}

TEST_CASE("cpu buffer from a host pointer: zero copy") {
    // user memory holding a [4, 3] weight and a [4, 2] input, back to back
    alignas(64) static float mem[4 * 3 + 4 * 2];
    for (int i = 0; i < 20; ++i) mem[i] = static_cast<float>(i % 7) - 2.0f;
    any_buffer hb = cpu_buffer_from_ptr(mem, sizeof mem);
    CHECK(hb.name() == "CPU_Mapped");
    CHECK(hb.is_host());
    CHECK(hb.type() == cpu_buffer_type());
    graph::context ctx({true});
    any_tensor w = graph::new_tensor(ctx, type_id::f32, {4, 3, 1, 1}, "w");
    any_tensor x = graph::new_tensor(ctx, type_id::f32, {4, 2, 1, 1}, "x");
    tensor_alloc(hb, *w.get(), hb.base());
    tensor_alloc(hb, *x.get(), hb.base() + 48);
    CHECK(w.get()->bytes() == reinterpret_cast<std::byte*>(mem));  // no copy
    any_tensor y = graph::mul_mat(w, x);
    graph::cgraph g;
    g.build_forward_expand(y);
    std::vector<graph::node*> nodes(g.nodes().begin(), g.nodes().end());
    any_buffer cb = alloc_tensors(nodes, cpu_buffer_type());
    cpu_init(1).graph_compute(g);
    const auto out = tensor_to_f32(*y.get());
    for (int n = 0; n < 2; ++n)
        for (int m = 0; m < 3; ++m) {
            double s = 0;
            for (int k = 0; k < 4; ++k) s += static_cast<double>(mem[m * 4 + k]) * mem[12 + n * 4 + k];
            CHECK(out[static_cast<std::size_t>(n * 3 + m)] == doctest::Approx(s));
        }
    // writing the user memory is seen by the tensor
    mem[0] = 100.0f;
    float v = 0;
    tensor_get(*w.get(), &v, 0, 4);
    CHECK(v == 100.0f);
    // misuse
    CHECK_THROWS_WITH_AS(cpu_buffer_from_ptr(reinterpret_cast<std::byte*>(mem) + 4, 16), doctest::Contains("not aligned"),
                         tessera::error);
    CHECK_THROWS_AS(cpu_buffer_from_ptr(nullptr, 16), tessera::error);
    // the device entry point gives the same kind of buffer
    any_buffer viad = cpu_device().buffer_from_host_ptr(mem, sizeof mem, sizeof mem);
    CHECK(viad.base() == reinterpret_cast<std::byte*>(mem));
}

TEST_CASE("cpu backend: n_threads and parameters") {
    any_backend b = cpu_init(3);
    CHECK(is_cpu(b));
    CHECK_FALSE(is_cpu(reference_init()));
    CHECK(b.target<cpu_backend>()->n_threads() == 3);
    cpu_set_n_threads(b, 2);
    CHECK(b.target<cpu_backend>()->n_threads() == 2);
    auto set = cpu_reg().proc<set_n_threads_fn>("set_n_threads");
    REQUIRE(static_cast<bool>(set));
    set(b, 1);
    CHECK(b.target<cpu_backend>()->n_threads() == 1);
    CHECK_THROWS_WITH_AS(cpu_set_n_threads(b, 0), doctest::Contains("n_threads 0"), tessera::error);
    any_backend rb = reference_init();
    CHECK_THROWS_WITH_AS(cpu_set_n_threads(rb, 2), doctest::Contains("not the CPU backend"), tessera::error);
    CHECK(cpu_device().init_backend("n_threads=2").target<cpu_backend>()->n_threads() == 2);
    CHECK(cpu_device().init_backend("5").target<cpu_backend>()->n_threads() == 5);
    CHECK(cpu_device().init_backend().target<cpu_backend>()->n_threads() == 4);
    CHECK_THROWS_WITH_AS(cpu_device().init_backend("threads=x"), doctest::Contains("expected n_threads"), tessera::error);

    // the same block with 1 and 4 threads: equal results
    blocktest::block g1 = blocktest::build(), g4 = blocktest::build();
    std::vector<any_buffer> keep;
    for (auto* b2 : {&g1, &g4}) {
        std::vector<graph::node*> all(b2->g.leafs().begin(), b2->g.leafs().end());
        for (auto* n : b2->g.nodes()) all.push_back(n);
        keep.push_back(alloc_tensors(all, cpu_buffer_type()));
        blocktest::fill_weights(*b2);
        blocktest::set_inputs(*b2);
    }
    cpu_init(1).graph_compute(g1.g);
    cpu_init(4).graph_compute(g4.g);
    CHECK(nmse(tensor_to_f32(*g1.out.get()), tensor_to_f32(*g4.out.get())) < 1e-12);
}

TEST_CASE("cpu backend: the abort callback stops a compute") {
    blocktest::block b = blocktest::build();
    std::vector<graph::node*> all(b.g.leafs().begin(), b.g.leafs().end());
    for (auto* n : b.g.nodes()) all.push_back(n);
    any_buffer buf = alloc_tensors(all, cpu_buffer_type());
    blocktest::fill_weights(b);
    blocktest::set_inputs(b);
    any_backend be = cpu_init(2);
    int polls = 0;
    cpu_set_abort_callback(be, [&] { return ++polls >= 3; });
    CHECK_THROWS_WITH_AS(be.graph_compute(b.g), doctest::Contains("aborted"), tessera::error);
    CHECK(polls == 3);
    // many times: a thread that runs ahead must not make a slower one leave early (a hang)
    for (int it = 0; it < 300; ++it) {
        polls = 0;
        CHECK_THROWS_AS(be.graph_compute(b.g), tessera::error);
    }
    // through the proc address, with a C callback
    static std::atomic<int> calls{0};
    auto set_abort = cpu_reg().proc<set_abort_callback_fn>("set_abort_callback");
    REQUIRE(static_cast<bool>(set_abort));
    set_abort(be, [](void*) { return ++calls > 0; }, nullptr);
    try {
        be.graph_compute(b.g);
        FAIL("expected an abort");
    } catch (const tessera::error& e) {
        CHECK(e.code() == errc::aborted);
    }
    set_abort(be, nullptr, nullptr);
    be.graph_compute(b.g);  // runs to the end
    const auto out = tensor_to_f32(*b.out.get());
    for (float v : out) CHECK(std::isfinite(v));
}

TEST_CASE("cpu backend: unsupported ops and missing memory are refused before computing") {
    graph::context ctx({true});
    any_tensor a = graph::new_tensor(ctx, type_id::f32, {4, 4, 1, 1}, "a");
    any_tensor y = graph::soft_max_ext_back(a, a, 1.0f, 8.0f).set_name("y");  // max_bias != 0: refused, as by ggml's CPU
    graph::cgraph g;
    g.build_forward_expand(y);
    CHECK_THROWS_WITH_AS(cpu_init(1).graph_compute(g), doctest::Contains("node 'y'"), tessera::error);
    any_tensor z = graph::add(a, a).set_name("z");
    graph::cgraph g2;
    g2.build_forward_expand(z);
    CHECK_THROWS_WITH_AS(cpu_init(1).graph_compute(g2), doctest::Contains("has no memory"), tessera::error);
}

// Light nodes below the executor's solo cost run on thread 0 alone, without barriers
// between them; the results equal one thread's and the split-everything run's, bit for
// bit, and an abort anywhere (inside a run of solo nodes too) stops without a hang.
TEST_CASE("cpu executor: solo nodes") {
    graph::context ctx;
    any_tensor big(ctx.new_tensor(type_id::f32, {512, 64, 1, 1}));    // 32768 elements: split
    any_tensor small(ctx.new_tensor(type_id::f32, {512, 1, 1, 1}));   // 512: solo
    any_tensor tiny(ctx.new_tensor(type_id::f32, {1, 64, 1, 1}));     // 64: solo
    const auto vb = blocktest::pseudo_random(512 * 64, 3), vs = blocktest::pseudo_random(512, 5), vt = blocktest::pseudo_random(64, 7);
    std::memcpy(big.get()->data, vb.data(), vb.size() * 4);
    std::memcpy(small.get()->data, vs.data(), vs.size() * 4);
    std::memcpy(tiny.get()->data, vt.data(), vt.size() * 4);
    any_tensor s = small;
    for (int i = 0; i < 6; ++i) s = graph::silu(graph::add(graph::scale(s, 0.5f), small));  // a run of solo nodes
    any_tensor b = graph::rms_norm(graph::mul(big, s), 1e-6f);                            // split (broadcast row)
    any_tensor r = graph::sum_rows(b);                                                     // split: reads 32768
    for (int i = 0; i < 4; ++i) r = graph::add(graph::mul(r, tiny), tiny);                // solo again
    any_tensor out = graph::soft_max_ext(graph::add(b, r), any_tensor{}, 1.0f);            // split
    graph::cgraph g;
    g.build_forward_expand(out);
    std::size_t computed = 0;
    for (const auto* n : g.nodes()) computed += !cpu::is_noop(n->op);

    const auto result = [&](cpu::executor& ex) {
        ex.compute(g);
        return tensor_to_f32(*out.get());
    };
    cpu::executor one(1), two(2), split(2);
    split.set_solo_cost(0);
    const auto r1 = result(one), r2 = result(two), rs = result(split);
    REQUIRE(r1.size() == 512 * 64);
    CHECK(std::memcmp(r1.data(), r2.data(), r1.size() * 4) == 0);
    CHECK(std::memcmp(r1.data(), rs.data(), r1.size() * 4) == 0);
    CHECK(one.last_barriers() == 0);
    CHECK(split.last_barriers() == computed - 1);
    CHECK(two.solo(*s.get()));
    CHECK_FALSE(two.solo(*b.get()));
    CHECK_FALSE(one.solo(*s.get()));
    // barriers only around the split nodes (four of them, each with at most two)
    CHECK(two.last_barriers() <= 8);
    CHECK(two.last_barriers() >= 4);

    // an abort after any node: the polls stop there and every thread leaves
    for (std::size_t k = 1; k < computed; ++k)
        for (int rep = 0; rep < 20; ++rep) {
            std::size_t polls = 0;
            two.set_abort_callback([&] { return ++polls >= k; });
            CHECK_THROWS_WITH_AS(two.compute(g), doctest::Contains("aborted"), tessera::error);
            CHECK(polls == k);
        }
    two.set_abort_callback({});
    CHECK(std::memcmp(result(two).data(), r1.data(), r1.size() * 4) == 0);
}
