// The CPU_REPACK buffer type and device (backend/cpu.hpp, backend/cpu/repack.hpp): which tensors get
// repacked, reads giving back the original bytes (whole, partial, after memset and
// clear), mul_mat on repacked weights (q4_0, q8_0, q4_K, iq4_nl) against a double-precision
// definition on every arch at 1 and 2 threads, the scheduler placing those mul_mats,
// and clear errors for any other use of a repacked tensor.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tessera/backend/all.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/quant/reference.hpp"
#include "tessera/simd/dispatch.hpp"

using namespace tessera;
using namespace tessera::backend;
using graph::any_tensor;

namespace {

std::vector<float> normal_floats(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

std::vector<std::byte> quantized(type_id t, std::int64_t k, std::int64_t rows, unsigned seed) {
    const auto f = normal_floats(static_cast<std::size_t>(k * rows), seed);
    std::vector<std::byte> q(static_cast<std::size_t>(row_size(t, k) * rows));
    quant::quantize(t, f.data(), q.data(), rows, k);
    return q;
}

std::vector<std::byte> read_all(const node& t) {
    std::vector<std::byte> out(t.lay.nbytes());
    tensor_get(t, out.data(), 0, out.size());
    return out;
}

// out[n][m] = sum_k w[m][k] * xq[n][k], with w dequantized and x quantized to the weights'
// dot partner (q8_0, q8_K) and back (what the kernels compute), in double; mag: the sum
// of |terms| the kernels add. For q4_K a weight is d*sc*q - dmin*m and the kernels add the
// two parts separately, so mag takes |d*sc*q| + |dmin*m| (the rows dequantized once with
// dmin = 0, once with d = 0).
void definition(type_id t, std::int64_t k, std::int64_t m, std::int64_t n, const std::vector<std::byte>& w,
                const std::vector<float>& x, std::vector<double>& out, std::vector<double>& mag) {
    std::vector<float> wf(static_cast<std::size_t>(k * m)), wa(wf.size()), xf(static_cast<std::size_t>(k * n));
    const auto rb = static_cast<std::size_t>(row_size(t, k));
    for (std::int64_t r = 0; r < m; ++r) quant::dequantize_row(t, w.data() + static_cast<std::size_t>(r) * rb, wf.data() + r * k, k);
    if (t == type_id::q4_K) {
        std::vector<std::byte> scale_part = w, min_part = w;
        for (std::size_t b = 0; b < w.size() / sizeof(quant::block_q4_K); ++b) {
            reinterpret_cast<quant::block_q4_K*>(scale_part.data())[b].dmin = f16::from_float(0.0f);
            reinterpret_cast<quant::block_q4_K*>(min_part.data())[b].d = f16::from_float(0.0f);
        }
        std::vector<float> p1(wf.size()), p2(wf.size());
        for (std::int64_t r = 0; r < m; ++r) {
            quant::dequantize_row(t, scale_part.data() + static_cast<std::size_t>(r) * rb, p1.data() + r * k, k);
            quant::dequantize_row(t, min_part.data() + static_cast<std::size_t>(r) * rb, p2.data() + r * k, k);
        }
        for (std::size_t i = 0; i < wa.size(); ++i) wa[i] = std::fabs(p1[i]) + std::fabs(p2[i]);
    } else {
        for (std::size_t i = 0; i < wa.size(); ++i) wa[i] = std::fabs(wf[i]);
    }
    const type_id tp = quant::dot_partner_type(t);
    std::vector<std::byte> xq(static_cast<std::size_t>(row_size(tp, k) * n));
    quant::quantize(tp, x.data(), xq.data(), n, k);
    for (std::int64_t c = 0; c < n; ++c)
        quant::dequantize_row(tp, xq.data() + static_cast<std::size_t>(c * row_size(tp, k)), xf.data() + c * k, k);
    out.assign(static_cast<std::size_t>(m * n), 0.0);
    mag.assign(out.size(), 0.0);
    for (std::int64_t c = 0; c < n; ++c)
        for (std::int64_t r = 0; r < m; ++r)
            for (std::int64_t i = 0; i < k; ++i) {
                const auto wi = static_cast<std::size_t>(r * k + i);
                const double xv = xf[static_cast<std::size_t>(c * k + i)];
                out[static_cast<std::size_t>(c * m + r)] += static_cast<double>(wf[wi]) * xv;
                mag[static_cast<std::size_t>(c * m + r)] += static_cast<double>(wa[wi]) * std::fabs(xv);
            }
}

// y = mul_mat(w, x) with w in a CPU_REPACK buffer, and y_plain = mul_mat(w_plain, x) with
// the same weights in a CPU buffer: w [k, m] of type t, x [k, n] f32.
struct repacked_mul_mat {
    graph::context ctx{{true}};
    any_tensor w, wp, x, y, yp;
    graph::cgraph g;
    any_buffer wb, cb;
    std::int64_t m, n;
    repacked_mul_mat(type_id t, std::int64_t k, std::int64_t m_, std::int64_t n_, const std::vector<std::byte>& wq,
                     const std::vector<float>& xf)
        : m(m_), n(n_) {
        w = graph::new_tensor(ctx, t, {k, m, 1, 1}, "w");
        wp = graph::new_tensor(ctx, t, {k, m, 1, 1}, "w_plain");
        x = graph::new_tensor(ctx, type_id::f32, {k, n, 1, 1}, "x");
        y = graph::mul_mat(w, x).set_name("y");
        yp = graph::mul_mat(wp, x).set_name("y_plain");
        g.build_forward_expand(y);
        g.build_forward_expand(yp);
        std::vector<node*> weights{w.get()}, rest{wp.get(), x.get()};
        for (node* nd : g.nodes()) rest.push_back(nd);
        wb = alloc_tensors(weights, repack_buffer_type(), buffer_usage::weights);
        cb = alloc_tensors(rest, cpu_buffer_type());
        tensor_set(*w.get(), wq.data(), 0, wq.size());
        tensor_set(*wp.get(), wq.data(), 0, wq.size());
        tensor_set(*x.get(), xf.data(), 0, xf.size() * 4);
    }
    // computes both products on the active arch; {repacked, plain}
    std::pair<std::vector<float>, std::vector<float>> run(int threads) {
        cpu_backend be(threads);
        be.graph_compute(g);
        std::vector<float> got(static_cast<std::size_t>(m * n)), plain(got.size());
        tensor_get(*y.get(), got.data(), 0, got.size() * 4);
        tensor_get(*yp.get(), plain.data(), 0, plain.size() * 4);
        return {got, plain};
    }
};

}  // namespace

TEST_CASE("CPU_REPACK: which tensors are repacked, and their sizes") {
    const any_buffer_type bt = repack_buffer_type();
    graph::context ctx({true});
    node* a = ctx.new_tensor(type_id::q4_0, {768, 8, 1, 1}, "a");    // 24 blocks: a partial group
    node* b = ctx.new_tensor(type_id::q8_0, {512, 12, 1, 1}, "b");   // 16 blocks: the plain size
    node* c = ctx.new_tensor(type_id::q4_0, {64, 6, 1, 1}, "c");     // 6 rows: not a multiple of 4
    node* d = ctx.new_tensor(type_id::q6_K, {256, 4, 1, 1}, "d");    // no repacked layout
    node* e = ctx.new_tensor(type_id::f32, {16, 4, 1, 1}, "e");
    node* f = ctx.new_tensor(type_id::q8_0, {64, 4, 3, 1}, "f");     // a stack of 3 matrices
    node* g = ctx.new_tensor(type_id::q4_K, {768, 8, 1, 1}, "g");    // 3 super-blocks: 2 records a row
    node* h = ctx.new_tensor(type_id::q4_K, {512, 6, 1, 1}, "h");    // 6 rows
    node* i = ctx.new_tensor(type_id::q4_K, {1024, 4, 2, 1}, "i");   // 2 matrices, whole records
    node* j = ctx.new_tensor(type_id::iq4_nl, {96, 8, 1, 1}, "j");   // repacked on AArch64 only
    // x86: rows4_x16 (records of 16 blocks, zero padded); AArch64 q4_0: an interleave of the plain size
    const bool x16 = kernels::repack_layout_for(type_id::q4_0, 8, simd::active_arch()) == kernels::repack_layout::rows4_x16;
    CHECK(bt.alloc_size(*a) == (x16 ? 8 * 2 * 288 : a->lay.nbytes()));
    CHECK(bt.alloc_size(*b) == b->lay.nbytes());
    CHECK(bt.alloc_size(*c) == c->lay.nbytes());
    CHECK(bt.alloc_size(*d) == d->lay.nbytes());
    CHECK(bt.alloc_size(*g) == 8 * 2 * 296);
    CHECK(bt.alloc_size(*h) == h->lay.nbytes());
    CHECK(bt.alloc_size(*i) == i->lay.nbytes() / 288 * 296);
    CHECK(bt.alloc_size(*j) == j->lay.nbytes());  // the ARM layouts have the plain size; x86 keeps it plain
    std::vector<node*> all{a, b, c, d, e, f, g, h, i, j};
    any_buffer buf = alloc_tensors(all, bt, buffer_usage::weights);
    REQUIRE(buf);
    CHECK(buf.name() == std::string_view("CPU_REPACK"));
    CHECK_FALSE(buf.is_host());
    CHECK(backend::is_repacked(*a));
    CHECK(backend::is_repacked(*b));
    CHECK(backend::is_repacked(*f));
    CHECK(!backend::is_repacked(*c));
    CHECK(!backend::is_repacked(*d));
    CHECK(!backend::is_repacked(*e));
    CHECK(backend::is_repacked(*g));
    CHECK(!backend::is_repacked(*h));
    CHECK(backend::is_repacked(*i));
    CHECK(backend::is_repacked(*j) == !x16);
    // a view is never repacked by itself
    CHECK_FALSE(repackable(*graph::view(any_tensor(a), {768, 4, 1, 1}, {a->lay.nb[1], a->lay.nb[1] * 4, a->lay.nb[1] * 4}, 0).get()));
}

TEST_CASE("CPU_REPACK: reads give the original bytes back (whole, partial, memset, clear)") {
    graph::context ctx({true});
    struct tcase {
        type_id t;
        std::int64_t k, m;
    };
    for (const tcase tc : {tcase{type_id::q4_0, 768, 8}, tcase{type_id::q8_0, 512, 4}, tcase{type_id::q4_0, 32, 12},
                           tcase{type_id::q8_0, 96, 6}, tcase{type_id::f32, 8, 3}, tcase{type_id::q4_K, 768, 8},
                           tcase{type_id::q4_K, 512, 4}, tcase{type_id::q4_K, 256, 6}}) {
        CAPTURE(type_name(tc.t));
        CAPTURE(tc.k);
        CAPTURE(tc.m);
        node* w = ctx.new_tensor(tc.t, {tc.k, tc.m, 1, 1}, "w");
        std::vector<node*> one{w};
        any_buffer buf = alloc_tensors(one, repack_buffer_type());
        const std::size_t nb = w->lay.nbytes();
        std::vector<std::byte> plain(nb);
        if (tc.t == type_id::f32) {
            const auto f = normal_floats(static_cast<std::size_t>(tc.k * tc.m), 3);
            std::memcpy(plain.data(), f.data(), nb);
        } else {
            plain = quantized(tc.t, tc.k, tc.m, 3);
        }
        tensor_set(*w, plain.data(), 0, nb);
        CHECK(read_all(*w) == plain);
        if (backend::is_repacked(*w)) CHECK(std::memcmp(w->bytes(), plain.data(), nb) != 0);  // stored otherwise
        // a partial write across rows and blocks, then partial reads
        std::vector<std::byte> patch(nb / 3);
        for (std::size_t i = 0; i < patch.size(); ++i) patch[i] = static_cast<std::byte>(i * 7 + 1);
        const std::size_t off = nb / 5;
        tensor_set(*w, patch.data(), off, patch.size());
        std::memcpy(plain.data() + off, patch.data(), patch.size());
        CHECK(read_all(*w) == plain);
        std::vector<std::byte> part(nb / 4);
        tensor_get(*w, part.data(), nb / 2, part.size());
        CHECK(std::memcmp(part.data(), plain.data() + nb / 2, part.size()) == 0);
        tensor_memset(*w, 0x11, 5, 40);
        std::memset(plain.data() + 5, 0x11, 40);
        CHECK(read_all(*w) == plain);
        buf.clear(0x3c);
        CHECK(read_all(*w) == std::vector<std::byte>(nb, std::byte{0x3c}));
        if (tc.t == type_id::q4_0 && tc.k == 768 && backend::repacked_layout(*w) == kernels::repack_layout::rows4_x16) {
            // lane 8 of the second group of the first row is padding (24 blocks): still zero
            const std::byte* pad = w->bytes() + (1 * 4 + 0) * 288 + 8 * 4;
            CHECK(pad[0] == std::byte{0});
            CHECK(pad[256 - 32 + 2 * 8] == std::byte{0});  // its scale
        }
        if (tc.t == type_id::q4_K && tc.k == 768) {
            // the second half of the second record of the first row is padding (3 super-blocks): still zero
            const std::byte* rec = w->bytes() + (1 * 4 + 0) * 296;
            for (int s = 0; s < 4; ++s) CHECK(rec[s * 64 + 40] == std::byte{0});  // nibbles of lane 10
            CHECK(rec[256 + 10] == std::byte{0});                                  // its scale, min
            CHECK(rec[272 + 10] == std::byte{0});
            CHECK(rec[290] == std::byte{0});  // d of the missing super-block
        }
        // copies into and out of the repack buffer go through set/get
        graph::context host;
        node* h = host.new_tensor(tc.t, {tc.k, tc.m, 1, 1}, "h");
        tensor_set(*w, plain.data(), 0, nb);
        tensor_copy(*w, *h);
        CHECK(std::memcmp(h->data, plain.data(), nb) == 0);
    }
}

TEST_CASE("CPU_REPACK: mul_mat on repacked weights equals the definition, every arch, 1 and 2 threads") {
    struct tcase {
        type_id t;
        std::int64_t k, m;
    };
    const simd::arch_id saved = simd::active_arch();
    for (const tcase tc : {tcase{type_id::q4_0, 768, 68}, tcase{type_id::q8_0, 512, 8}, tcase{type_id::q4_0, 64, 4}, tcase{type_id::q4_0, 320, 72},
                           tcase{type_id::q8_0, 1056, 132}, tcase{type_id::q4_K, 768, 68}, tcase{type_id::q4_K, 256, 4},
                           tcase{type_id::q4_K, 1024, 12}, tcase{type_id::iq4_nl, 768, 68}, tcase{type_id::iq4_nl, 320, 72}}) {
        for (std::int64_t n : {1, 2, 5, 16}) {
            const auto wq = quantized(tc.t, tc.k, tc.m, 11);
            const auto xf = normal_floats(static_cast<std::size_t>(tc.k * n), 12);
            repacked_mul_mat mm(tc.t, tc.k, tc.m, n, wq, xf);
            // iq4_nl has only the ARM layouts: on x86 it stays plain (and must still be right)
            REQUIRE(backend::is_repacked(*mm.w.get()) ==
                    kernels::repack_layout_has(kernels::repack_layout_for(tc.t, tc.m, simd::active_arch()), tc.t));
            std::vector<double> want, mag;
            definition(tc.t, tc.k, tc.m, n, wq, xf, want, mag);
            for (simd::arch_id a : simd::available_archs()) {
                simd::set_active_arch(a);
                for (int threads : {1, 2}) {
                    CAPTURE(type_name(tc.t));
                    CAPTURE(tc.k);
                    CAPTURE(tc.m);
                    CAPTURE(n);
                    CAPTURE(simd::name_of(a));
                    CAPTURE(threads);
                    const auto r = mm.run(threads);  // (no structured binding: doctest's CHECK is a lambda for clang 14)
                    const std::vector<float>& got = r.first;
                    const std::vector<float>& plain = r.second;
                    int bad = 0;
                    for (std::size_t i = 0; i < got.size(); ++i) {
                        const double tol = 4.0 * static_cast<double>(tc.k / 32 + 16) * 0x1p-24 * mag[i];
                        if (!(std::fabs(got[i] - want[i]) <= tol)) ++bad;
                        if (!(std::fabs(plain[i] - want[i]) <= tol)) ++bad;
                    }
                    CHECK(bad == 0);
                    // from 4 columns on, both layouts run the same tiles: the same bits
                    if (n >= 4) CHECK(got == plain);
                }
            }
            simd::set_active_arch(saved);
        }
    }
}

TEST_CASE("CPU_REPACK: the layout is the one of the arch active at placement, and every arch reads every layout") {
    const simd::arch_id saved = simd::active_arch();
    const std::int64_t k = 256, m = 24, n = 5;
#if defined(TESSERA_AARCH64)
    const type_id types[] = {type_id::q4_0, type_id::iq4_nl};
#else
    const type_id types[] = {type_id::q4_0};  // iq4_nl is not repacked on x86
#endif
    for (const type_id t : types) {
        const auto wq = quantized(t, k, m, 31);
        const auto xf = normal_floats(static_cast<std::size_t>(k * n), 32);
        std::vector<double> want, mag;
        definition(t, k, m, n, wq, xf, want, mag);
        for (simd::arch_id place : simd::available_archs()) {
            CAPTURE(type_name(t));
            CAPTURE(simd::name_of(place));
            simd::set_active_arch(place);
            repacked_mul_mat mm(t, k, m, n, wq, xf);
            REQUIRE(backend::is_repacked(*mm.w.get()));
            CHECK(backend::repacked_layout(*mm.w.get()) == kernels::repack_layout_for(t, m, place));
            CHECK(read_all(*mm.w.get()) == wq);
            for (simd::arch_id a : simd::available_archs()) {
                CAPTURE(simd::name_of(a));
                simd::set_active_arch(a);
                const auto r = mm.run(1);
                const std::vector<float>& got = r.first;
                const std::vector<float>& plain = r.second;
                int bad = 0;
                for (std::size_t i = 0; i < got.size(); ++i)
                    if (!(std::fabs(got[i] - want[i]) <= 4.0 * static_cast<double>(k / 32 + 16) * 0x1p-24 * mag[i])) ++bad;
                CHECK(bad == 0);
                CHECK(got == plain);  // n >= 4: the plain rows run the same tiles
            }
        }
    }
    simd::set_active_arch(saved);
}

namespace {
// y = mul_mat(w, x) + bias with w (q4_0 [512, 8]) and bias in a CPU_REPACK weight buffer.
struct small_graph {
    graph::context ctx{{true}};
    any_tensor w, bias, x, mm, out;
    graph::cgraph g;
    any_buffer weights;
    std::vector<std::byte> wq = quantized(type_id::q4_0, 512, 8, 21);
    std::vector<float> bf = normal_floats(8, 22), xf = normal_floats(512 * 3, 23);
    small_graph() {
        w = graph::new_tensor(ctx, type_id::q4_0, {512, 8, 1, 1}, "w");
        bias = graph::new_tensor(ctx, type_id::f32, {8, 1, 1, 1}, "bias");
        std::vector<node*> ws{w.get(), bias.get()};
        weights = alloc_tensors(ws, repack_buffer_type(), buffer_usage::weights);
        tensor_set(*w.get(), wq.data(), 0, wq.size());
        tensor_set(*bias.get(), bf.data(), 0, 32);
        x = graph::new_tensor(ctx, type_id::f32, {512, 3, 1, 1}, "x");
        x.get()->flags |= graph::flag_input;
        mm = graph::mul_mat(w, x).set_name("mm");
        out = graph::add(mm, bias).set_name("out");
        g.build_forward_expand(out);
    }
    void check() const {
        std::vector<double> want, mag;
        definition(type_id::q4_0, 512, 8, 3, wq, xf, want, mag);
        std::vector<float> got(24);
        tensor_get(*out.get(), got.data(), 0, 96);
        int bad = 0;
        for (std::size_t i = 0; i < 24; ++i)
            if (!(std::fabs(got[i] - (want[i] + bf[i % 8])) <= 1e-5 * (mag[i] + 1))) ++bad;
        CHECK(bad == 0);
    }
    void run(scheduler& s) {
        s.alloc_graph(g);
        tensor_set(*x.get(), xf.data(), 0, xf.size() * 4);
        s.graph_compute(g);
        check();
    }
};
}  // namespace

TEST_CASE("CPU_REPACK: device and scheduler placement") {
    const any_device rd = repack_device();
    {
        small_graph t;
        CHECK(rd.type() == device_type::accel);
        CHECK(rd.supports_op(*t.mm.get()));
        CHECK_FALSE(rd.supports_op(*t.out.get()));
        CHECK(rd.offload_op(*t.mm.get()));
        CHECK(cpu_device().supports_op(*t.mm.get()));
        CHECK(cpu_device().supports_buft(repack_buffer_type()));
        CHECK_FALSE(reference_device().supports_buft(repack_buffer_type()));
    }
    {  // the repack device first: it takes the mul_mat, the CPU the add
        small_graph t;
        scheduler s({rd.init_backend("2"), cpu_init(2)});
        t.run(s);
        CHECK(s.tensor_backend(t.mm.get()).device() == rd);
        CHECK(s.tensor_backend(t.out.get()).device() == cpu_device());
        CHECK(s.n_splits() == 2);
    }
    {  // the CPU alone reads the repacked weights in place
        small_graph t;
        scheduler s({cpu_init(2)});
        t.run(s);
        CHECK(s.n_splits() == 1);
        CHECK(s.n_input_copies() == 0);
    }
    {  // a scheduler with no backend that reads CPU_REPACK says so
        small_graph t;
        scheduler s({reference_init()});
        CHECK_THROWS_WITH_AS(s.alloc_graph(t.g), doctest::Contains("lives in buffer 'CPU_REPACK'"), tessera::error);
    }
    {  // but the weights can be copied out (unpacked) to another backend's buffer
        small_graph t;
        graph::context c2({true});
        node* h = c2.new_tensor(type_id::q4_0, {512, 8, 1, 1}, "w_ref");
        std::vector<node*> one{h};
        any_buffer rb = alloc_tensors(one, reference_buffer_type());
        tensor_copy(*t.w.get(), *h);
        CHECK(read_all(*h) == t.wq);
    }
}

TEST_CASE("CPU_REPACK: any use of a repacked tensor but mul_mat is refused, naming it") {
    small_graph t;
    const std::string why =
        backend::cpu::unsupported_reason(*graph::cpy(t.w, graph::new_tensor(t.ctx, type_id::q4_0, {512, 8, 1, 1}, "c2")).get());
    CHECK(why.find("'w' is stored repacked") != std::string::npos);
    graph::cgraph g2;
    g2.build_forward_expand(graph::get_rows(t.w, graph::new_tensor(t.ctx, type_id::i32, {2, 1, 1, 1}, "ids")));
    std::vector<node*> all2;
    for (node* nd : g2.nodes()) all2.push_back(nd);
    for (node* nd : g2.leafs()) all2.push_back(nd);
    any_buffer b2 = alloc_tensors(all2, cpu_buffer_type());
    cpu_backend be(1);
    CHECK_THROWS_WITH_AS(be.graph_compute(g2), doctest::Contains("'w' is stored repacked"), tessera::error);
    scheduler s({cpu_init(1)});
    CHECK_THROWS_WITH_AS(s.graph_compute(g2), doctest::Contains("get_rows"), tessera::error);
}
