// The scheduler: weights on different backends, an op the reference backend refuses,
// assignments, splits, copies, results equal to single-backend execution, reserve,
// the eval callback, and the errors of bad use.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "block.hpp"

using namespace tessera;
using namespace tessera::backend;

namespace {

struct refuse_guard {  // makes the reference device refuse ops for one test
    explicit refuse_guard(std::set<graph::op_kind> ops) { reference_options().refuse = std::move(ops); }
    ~refuse_guard() { reference_options().refuse.clear(); }
};

// Weights named in `on_ref` go to a REF buffer, the others to a CPU buffer.
using blocktest::cpu_only;
using blocktest::placed;
placed place(blocktest::dims d, const std::set<std::string>& on_ref) { return blocktest::place(d, on_ref, reference_buffer_type()); }

graph::node* find(const blocktest::block& b, const char* name) {
    graph::node* n = b.g.find(name);
    REQUIRE_MESSAGE(n != nullptr, name);
    return n;
}

const std::set<std::string> attention_weights = {"wq", "wk", "wv", "wo"};
const std::set<std::string> all_weights = {"tok_emb", "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate_up", "w_down"};

}  // namespace

TEST_CASE("scheduler: weights on two backends") {
    const blocktest::dims d;
    const std::vector<float> expect = cpu_only(d);
    placed p = place(d, attention_weights);
    any_backend ref = reference_init(), cpu = cpu_init(2);
    scheduler s({ref, cpu});
    s.alloc_graph(p.b.g);
    blocktest::set_inputs(p.b);
    s.graph_compute(p.b.g);
    INFO(s.print());
    // nodes that read a weight run where the weight is
    for (graph::node* n : p.b.g.nodes()) {
        if (n->op != graph::op_kind::mul_mat || n->src[0]->op != graph::op_kind::none) continue;
        const bool on_ref = attention_weights.count(n->src[0]->name) != 0;
        CHECK_MESSAGE(s.tensor_backend(n) == (on_ref ? ref : cpu), n->name);
    }
    CHECK(s.tensor_backend(find(p.b, "tokens")) == cpu);  // inputs go to the last backend
    CHECK(s.tensor_backend(find(p.b, "out")) == cpu);
    CHECK(s.n_splits() >= 2);
    CHECK(s.n_input_copies() >= 2);
    CHECK(s.n_copies() == 1);
    CHECK(s.buffer_size(0) > 0);
    CHECK(s.buffer_size(1) > 0);
    // every split's nodes run on its backend; every input is a copy living on that backend
    for (const auto& sp : s.splits()) {
        const any_backend& be = s.get_backend(static_cast<std::size_t>(sp.backend));
        for (const auto& in : sp.inputs) {
            CHECK(s.tensor_backend(in.copies[0]) == be);
            CHECK(be.device().supports_buft(buffer_of(*in.copies[0]).type()));
            CHECK_FALSE(be.device().supports_buft(buffer_of(*in.src) ? buffer_of(*in.src).type() : cpu_buffer_type()));
        }
    }
    CHECK(nmse(tensor_to_f32(*p.b.out.get()), expect) < 1e-10);
    // the user's graph is unchanged (sources not left pointing at copies)
    for (graph::node* n : p.b.g.nodes())
        for (graph::node* src : n->src)
            if (src) CHECK(src->ctx == p.b.ctx.get());
    // computing again gives the same result (inputs are set again: like ggml's, their
    // memory is reused once their last reader has run)
    blocktest::set_inputs(p.b);
    s.graph_compute(p.b.g);
    CHECK(nmse(tensor_to_f32(*p.b.out.get()), expect) < 1e-10);
}

TEST_CASE("scheduler: an op the reference backend refuses runs on the CPU") {
    refuse_guard guard({graph::op_kind::soft_max});
    const blocktest::dims d;
    const std::vector<float> expect = cpu_only(d);
    placed p = place(d, all_weights);
    any_backend ref = reference_init(), cpu = cpu_init(2);
    scheduler s({ref, cpu});
    s.alloc_graph(p.b.g);
    blocktest::set_inputs(p.b);
    s.graph_compute(p.b.g);
    INFO(s.print());
    CHECK(s.tensor_backend(find(p.b, "attn")) == cpu);
    CHECK(s.tensor_backend(find(p.b, "kq")) == ref);
    CHECK(s.tensor_backend(find(p.b, "out")) == ref);
    // REF (up to kq) | CPU (soft_max) | REF (the rest)
    REQUIRE(s.n_splits() == 3);
    CHECK(s.splits()[0].backend == 0);
    CHECK(s.splits()[1].backend == 1);
    CHECK(s.splits()[2].backend == 0);
    // copies: tokens and pos (inputs, on the CPU) to REF; kq to the CPU; soft_max back to REF
    std::set<std::string> copied;
    for (const auto& sp : s.splits())
        for (const auto& in : sp.inputs) copied.insert(in.src->name);
    CHECK(copied == std::set<std::string>{"tokens", "pos", "kq", "attn"});
    CHECK(s.n_input_copies() == 4);
    CHECK(nmse(tensor_to_f32(*p.b.out.get()), expect) < 1e-10);
}

TEST_CASE("scheduler: a single backend is one split with no copies") {
    const blocktest::dims d;
    const std::vector<float> expect = cpu_only(d);
    placed p = place(d, {});
    scheduler s({cpu_init(2)});
    s.alloc_graph(p.b.g);
    blocktest::set_inputs(p.b);
    s.graph_compute(p.b.g);
    CHECK(s.n_splits() == 1);
    CHECK(s.n_input_copies() == 0);
    CHECK(tensor_to_f32(*p.b.out.get()) == expect);  // the same kernels: bit for bit
}

TEST_CASE("scheduler: reserve a worst case, then smaller graphs allocate nothing new") {
    blocktest::dims big;
    big.T = 12;
    placed worst = place(big, attention_weights);
    any_backend ref = reference_init(), cpu = cpu_init(2);
    scheduler s({ref, cpu});
    s.reserve(worst.b.g);
    const std::size_t size0 = s.buffer_size(0), size1 = s.buffer_size(1);
    CHECK(size0 > 0);
    CHECK(size1 > 0);
    for (std::int64_t T : {3, 7, 12}) {
        blocktest::dims d;
        d.T = T;
        const std::vector<float> expect = cpu_only(d);
        placed p = place(d, attention_weights);
        s.alloc_graph(p.b.g);
        blocktest::set_inputs(p.b);
        s.graph_compute(p.b.g);
        CHECK(nmse(tensor_to_f32(*p.b.out.get()), expect) < 1e-10);
    }
    CHECK(s.n_reallocs() == 0);
    CHECK(s.buffer_size(0) == size0);
    CHECK(s.buffer_size(1) == size1);
    // a bigger graph than reserved grows the buffers (and says so)
    blocktest::dims bigger;
    bigger.T = 40;
    placed p = place(bigger, attention_weights);
    s.alloc_graph(p.b.g);
    CHECK(s.n_reallocs() >= 1);
}

TEST_CASE("scheduler: pipeline parallelism keeps n_copies sets of the split inputs") {
    const blocktest::dims d;
    placed p = place(d, attention_weights);
    any_backend ref = reference_init(), cpu = cpu_init(2);
    scheduler s({ref, cpu}, {}, 3);
    CHECK(s.n_copies() == 3);
    s.alloc_graph(p.b.g);
    INFO(s.print());
    // every split input has three copies on the split's backend, each with memory of its own
    std::vector<std::pair<const std::byte*, std::size_t>> spans;
    std::vector<const scheduler::split_input*> token_copies;
    for (const auto& sp : s.splits()) {
        for (const auto& in : sp.inputs) {
            if (in.src->name == "tokens") token_copies.push_back(&in);
            for (std::size_t c = 0; c < 3; ++c) {
                const graph::node* cp = in.copies[c];
                REQUIRE(cp != nullptr);
                std::string suffix = "#";  // (not "#" + to_string: g++ 12 warns falsely)
                suffix += std::to_string(c);
                CHECK(cp->name.ends_with(suffix));
                CHECK(s.tensor_backend(cp) == s.get_backend(static_cast<std::size_t>(sp.backend)));
                spans.emplace_back(cp->data, cp->lay.nbytes());
            }
            CHECK(in.copies[3] == nullptr);
        }
    }
    REQUIRE_FALSE(token_copies.empty());  // graph inputs get copy sets too, even where no copy is needed
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i - 1].first + spans[i - 1].second <= spans[i].first);
    // compute i uses copy set i % 3; results equal the CPU alone for each input
    for (std::int64_t i = 0; i < 5; ++i) {
        CHECK(s.current_copy() == i % 3);
        blocktest::set_inputs(p.b, i);
        s.graph_compute(p.b.g);
        CHECK(nmse(tensor_to_f32(*p.b.out.get()), cpu_only(d, i)) < 1e-10);
    }
    // each copy set still holds the tokens of the last compute that used it (3, 4, 2)
    const std::int64_t last_user[3] = {3, 4, 2};
    for (const auto* in : token_copies) {
        for (std::size_t c = 0; c < 3; ++c) {
            std::vector<std::int32_t> got(static_cast<std::size_t>(d.T));
            tensor_get(*in->copies[c], got.data(), 0, got.size() * 4);
            for (std::int64_t t = 0; t < d.T; ++t)
                CHECK(got[static_cast<std::size_t>(t)] == (t * 7 + 3 + last_user[c]) % d.V);
        }
    }
    CHECK_THROWS_WITH_AS(scheduler({cpu}, {}, 0), doctest::Contains("n_copies is 0, must be 1..4"), tessera::error);
    CHECK_THROWS_WITH_AS(scheduler({cpu}, {}, 5), doctest::Contains("n_copies is 5"), tessera::error);
}

TEST_CASE("scheduler: user assignments are kept") {
    const blocktest::dims d;
    const std::vector<float> expect = cpu_only(d);
    placed p = place(d, all_weights);
    any_backend ref = reference_init(), cpu = cpu_init(1);
    scheduler s({ref, cpu});
    graph::node* h2 = find(p.b, "h2");
    s.set_tensor_backend(h2, cpu);
    s.alloc_graph(p.b.g);
    blocktest::set_inputs(p.b);
    s.graph_compute(p.b.g);
    CHECK(s.tensor_backend(h2) == cpu);
    CHECK(s.n_splits() >= 3);
    CHECK(nmse(tensor_to_f32(*p.b.out.get()), expect) < 1e-10);
    s.reset();
    CHECK_FALSE(s.tensor_backend(h2));
}

TEST_CASE("scheduler: eval callback observes nodes and can stop the graph") {
    const blocktest::dims d;
    const std::vector<float> expect = cpu_only(d);
    placed p = place(d, attention_weights);
    any_backend ref = reference_init(), cpu = cpu_init(2);
    scheduler s({ref, cpu});
    std::vector<std::string> seen;
    bool rms_ok = false;
    s.set_eval_callback([&](node& t, bool ask) {
        if (ask) return t.op == graph::op_kind::rms_norm || t.name == "kq";
        seen.push_back(t.name);
        if (t.op == graph::op_kind::rms_norm) {  // computed already: check one row against double
            const auto y = tensor_to_f32(t), x = tensor_to_f32(*t.src[0]);
            double ss = 0;
            for (std::int64_t i = 0; i < t.lay.ne[0]; ++i) ss += static_cast<double>(x[static_cast<std::size_t>(i)]) * x[static_cast<std::size_t>(i)];
            const double scale = 1.0 / std::sqrt(ss / static_cast<double>(t.lay.ne[0]) + 1e-5);
            rms_ok = std::abs(y[0] - x[0] * scale) < 1e-5;
        }
        return true;
    });
    s.alloc_graph(p.b.g);
    blocktest::set_inputs(p.b);
    s.graph_compute(p.b.g);
    CHECK(seen.size() == 3);  // two rms_norms and kq
    CHECK(rms_ok);
    CHECK(nmse(tensor_to_f32(*p.b.out.get()), expect) < 1e-10);

    // stopping at kq: the output is not computed
    tensor_memset(*p.b.out.get(), 0, 0, p.b.out.get()->lay.nbytes());
    seen.clear();
    s.set_eval_callback([&](node& t, bool ask) {
        if (ask) return t.name == "kq";
        seen.push_back(t.name);
        return false;
    });
    s.graph_compute(p.b.g);
    CHECK(seen == std::vector<std::string>{"kq"});
    for (float v : tensor_to_f32(*p.b.out.get())) CHECK(v == 0.0f);
}

TEST_CASE("scheduler: bad use gives clear errors") {
    SUBCASE("a weight in a buffer no backend can use") {
        placed p = place({}, attention_weights);  // wq.. in REF buffers
        scheduler s({cpu_init(1)});
        CHECK_THROWS_WITH_AS(s.alloc_graph(p.b.g), doctest::Contains("buffer 'REF'"), tessera::error);
    }
    SUBCASE("an op no backend supports") {
        graph::context ctx({true});
        graph::any_tensor a = graph::new_tensor(ctx, type_id::f32, {4, 4, 1, 1}, "a");
        a.set_input();
        // soft_max_back with ALiBi: the CPU refuses it (as ggml's), the reference has no soft_max_back
        graph::any_tensor y = graph::soft_max_ext_back(a, a, 1.0f, 8.0f).set_name("y");
        graph::cgraph g;
        g.build_forward_expand(y);
        scheduler s({reference_init(), cpu_init(1)});
        CHECK_THROWS_WITH_AS(s.alloc_graph(g), doctest::Contains("'y' (soft_max_back"), tessera::error);
        CHECK_THROWS_WITH_AS(s.alloc_graph(g), doctest::Contains("none of the backends (REF, CPU)"), tessera::error);
    }
    SUBCASE("a backend the scheduler does not have") {
        scheduler s({cpu_init(1)});
        graph::context ctx({true});
        graph::node* t = ctx.new_tensor(type_id::f32, {4, 1, 1, 1}, "t");
        CHECK_THROWS_WITH_AS(s.set_tensor_backend(t, reference_init()), doctest::Contains("not one of its backends"),
                             tessera::error);
    }
    SUBCASE("a buffer type the backend cannot use") {
        CHECK_THROWS_WITH_AS(scheduler({cpu_init(1)}, {reference_buffer_type()}), doctest::Contains("cannot use buffer type REF"),
                             tessera::error);
        CHECK_THROWS_AS(scheduler({}), tessera::error);
    }
}

TEST_CASE("scheduler: ops that may run in place (op_traits) take over a dying source's memory") {
    // x (input) -> scale -> silu -> add(., x) -> rms_norm: each result has x's layout, and
    // every source but x dies at the node that reads it. In place, the chain needs x plus
    // one tensor; without it, two tensors ping-pong (x plus two).
    constexpr std::int64_t n0 = 256, n1 = 64;
    constexpr std::size_t T = static_cast<std::size_t>(n0 * n1) * sizeof(float);
    graph::context ctx({.no_alloc = true});
    graph::any_tensor x(ctx.new_tensor(type_id::f32, {n0, n1, 1, 1}, "x"));
    x.get()->flags |= graph::flag_input;
    graph::any_tensor y = graph::rms_norm(graph::add(graph::silu(graph::scale(x, 0.5f)), x), 1e-5f);
    y.get()->flags |= graph::flag_output;
    graph::cgraph g;
    g.build_forward_expand(y);
    scheduler s({cpu_init(2)});
    s.alloc_graph(g);
    CHECK(s.buffer_size(0) <= 2 * T + 1024);
    CHECK(s.buffer_size(0) >= 2 * T);  // x and one result at least
    // the results are those of the same graph with every tensor in its own memory
    std::vector<float> xv(static_cast<std::size_t>(n0 * n1));
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(static_cast<int>(i % 97) - 48) / 16.f;
    tensor_set(*x.get(), xv.data(), 0, T);
    s.graph_compute(g);
    std::vector<float> got(xv.size());
    tensor_get(*y.get(), got.data(), 0, T);
    for (std::int64_t r = 0; r < n1; ++r) {
        double ss = 0;
        std::vector<double> h(static_cast<std::size_t>(n0));
        for (std::int64_t i = 0; i < n0; ++i) {
            const double v = xv[static_cast<std::size_t>(r * n0 + i)], a = 0.5 * v;
            h[static_cast<std::size_t>(i)] = a / (1 + std::exp(-a)) + v;
            ss += h[static_cast<std::size_t>(i)] * h[static_cast<std::size_t>(i)];
        }
        const double sc = 1 / std::sqrt(ss / static_cast<double>(n0) + 1e-5);
        for (std::int64_t i = 0; i < n0; ++i)
            CHECK(got[static_cast<std::size_t>(r * n0 + i)] ==
                  doctest::Approx(h[static_cast<std::size_t>(i)] * sc).epsilon(1e-4));
    }
}
