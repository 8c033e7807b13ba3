// Custom ops (map_custom1/2/3, custom, and their in-place forms): user callables run by
// the executor, checked like every op (harness.hpp: every arch, 1 and 2 threads, views,
// sentinels), plus what is particular to them: which threads call the function with
// which (ith, nth) for each n_tasks, the C-style function pointer + userdata form, the
// callable's lifetime (owned by the node), exceptions, and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

namespace {

// The rows [begin, end) of thread ith of nth.
std::pair<std::int64_t, std::int64_t> share(std::int64_t rows, int ith, int nth) {
    const std::int64_t per = (rows + nth - 1) / nth;
    return {std::min(rows, per * ith), std::min(rows, per * (ith + 1))};
}

// dst = a^2 + 1, through the typed handles, split by rows.
void square_plus_one(tensor<float, 4> dst, tensor<float, 4> a, int ith, int nth) {
    const auto d = dst.data();
    const auto x = a.data();
    const auto [r0, r1] = share(dst.ne(1) * dst.ne(2) * dst.ne(3), ith, nth);
    for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t i1 = r % dst.ne(1), i2 = r / dst.ne(1) % dst.ne(2), i3 = r / dst.ne(1) / dst.ne(2);
        for (std::int64_t i = 0; i < dst.ne(0); ++i) d(i, i1, i2, i3) = x(i, i1, i2, i3) * x(i, i1, i2, i3) + 1.f;
    }
}

// C-style: dst = a * (*(float*)userdata).
void scale_by_userdata(any_tensor dst, any_tensor a, int ith, int nth, void* userdata) {
    const float s = *static_cast<const float*>(userdata);
    const auto d = dst.as<float, 4>().data();
    const auto x = a.as<float, 4>().data();
    const auto [r0, r1] = share(dst.ne(1), ith, nth);
    for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t i = 0; i < dst.ne(0); ++i) d(i, r, 0, 0) = x(i, r, 0, 0) * s;
}

host map_host(host a, const std::function<double(double)>& f) {
    for (double& v : a.v) v = f(v);
    return a;
}

}  // namespace

TEST_CASE("custom ops: map_custom1/2/3 with typed and any_tensor callables, views, in place") {
    for (ne4 s : {ne4{33, 7, 3, 1}, ne4{1, 1, 1, 1}, ne4{16, 5, 1, 1}})
        for (bool strided : {false, true}) {
            check("map_custom1 typed " + sh(s) + (strided ? " strided" : ""),
                  [&](context& ctx) {
                      built b;
                      node* a = strided_input(ctx, type_id::f32, s, strided);
                      b.out = map_custom1(any_tensor(a).as<float, 4>(), square_plus_one).get();
                      b.inputs = {a};
                      return b;
                  },
                  [](const std::vector<host>& in) { return map_host(in[0], [](double x) { return x * x + 1; }); });
            if (!strided)
                check("map_custom1_inplace any_tensor " + sh(s),
                      [&](context& ctx) {
                          built b;
                          node* a = ctx.new_tensor(type_id::f32, s);
                          any_tensor r = map_custom1_inplace(any_tensor(a), [](any_tensor dst, any_tensor x, int ith, int nth) {
                              square_plus_one(dst.as<float, 4>(), x.as<float, 4>(), ith, nth);
                          });
                          CHECK(r.get()->view_src == a);
                          b.out = r.get();
                          b.inputs = {a};
                          return b;
                      },
                      [](const std::vector<host>& in) { return map_host(in[0], [](double x) { return x * x + 1; }); });
            check("map_custom2 typed f32 + 2 * f16 " + sh(s) + (strided ? " strided" : ""),
                  [&](context& ctx) {
                      built b;
                      node* a = strided_input(ctx, type_id::f32, s, strided);
                      node* c = strided_input(ctx, type_id::f16, s, strided);
                      b.out = map_custom2(any_tensor(a).as<float, 4>(), any_tensor(c).as<f16, 4>(),
                                          [](tensor<float, 4> dst, tensor<float, 4> x, tensor<f16, 4> y, int ith, int nth) {
                                              const auto d = dst.data();
                                              const auto [r0, r1] = share(dst.ne(1) * dst.ne(2), ith, nth);
                                              for (std::int64_t r = r0; r < r1; ++r)
                                                  for (std::int64_t i = 0; i < dst.ne(0); ++i)
                                                      d(i, r % dst.ne(1), r / dst.ne(1), 0) =
                                                          x.data()(i, r % dst.ne(1), r / dst.ne(1), 0) +
                                                          2.f * y.data()(i, r % dst.ne(1), r / dst.ne(1), 0).to_float();
                                          })
                                  .get();
                      b.inputs = {a, c};
                      return b;
                  },
                  [](const std::vector<host>& in) {
                      host o = in[0];
                      for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] += 2 * in[1].v[i];
                      return o;
                  });
            check("map_custom3 any_tensor a * b + c " + sh(s) + (strided ? " strided" : ""),
                  [&](context& ctx) {
                      built b;
                      node* x = strided_input(ctx, type_id::f32, s, strided);
                      node* y = strided_input(ctx, type_id::f32, s, false);
                      node* z = strided_input(ctx, type_id::f32, s, strided);
                      b.out = map_custom3(any_tensor(x), any_tensor(y), any_tensor(z),
                                          [](any_tensor dst, any_tensor p, any_tensor q, any_tensor r, int ith, int nth) {
                                              const auto d = dst.as<float, 4>().data();
                                              const auto vp = p.as<float, 4>().data(), vq = q.as<float, 4>().data(),
                                                         vr = r.as<float, 4>().data();
                                              const auto [r0, r1] = share(dst.ne(1) * dst.ne(2), ith, nth);
                                              for (std::int64_t row = r0; row < r1; ++row)
                                                  for (std::int64_t i = 0; i < dst.ne(0); ++i) {
                                                      const std::int64_t i1 = row % dst.ne(1), i2 = row / dst.ne(1);
                                                      d(i, i1, i2, 0) = vp(i, i1, i2, 0) * vq(i, i1, i2, 0) + vr(i, i1, i2, 0);
                                                  }
                                          })
                                  .get();
                      b.inputs = {x, y, z};
                      return b;
                  },
                  [](const std::vector<host>& in) {
                      host o = in[0];
                      for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] = in[0].v[i] * in[1].v[i] + in[2].v[i];
                      return o;
                  });
        }
}

TEST_CASE("custom ops: custom (custom_4d) with arguments, custom_inplace, and the result feeding other ops") {
    check("custom f32 [5,3] = sum of 3 arguments, then add", [](context& ctx) {
        built b;
        node* x = ctx.new_tensor(type_id::f32, {5, 3, 1, 1});
        node* y = strided_input(ctx, type_id::f32, {5, 3, 1, 1}, true);
        node* z = ctx.new_tensor(type_id::bf16, {5, 3, 1, 1});
        tensor<float, 2> c = custom<float, 2>(ctx, {5, 3}, {any_tensor(x), any_tensor(y), any_tensor(z)},
                                              [](tensor<float, 2> dst, std::span<const any_tensor> args, int ith, int nth) {
                                                  if (args.size() != 3) throw std::logic_error("custom: expected 3 arguments");
                                                  const auto [r0, r1] = share(dst.ne(1), ith, nth);
                                                  for (std::int64_t r = r0; r < r1; ++r)
                                                      for (std::int64_t i = 0; i < dst.ne(0); ++i)
                                                          dst.data()(i, r) = args[0].as<float, 2>().data()(i, r) + args[1].as<float, 2>().data()(i, r) +
                                                                             args[2].as<bf16, 2>().data()(i, r).to_float();
                                              });
        b.out = add(c, tensor<float, 2>(x)).get();  // the next node sees the custom op's result
        b.inputs = {x, y, z};
        return b;
    },
    [](const std::vector<host>& in) {
        host o = in[0];
        for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] = 2 * in[0].v[i] + in[1].v[i] + in[2].v[i];
        return o;
    });
    check("custom_inplace a += b (one task)", [](context& ctx) {
        built b;
        node* a = ctx.new_tensor(type_id::f32, {7, 4, 2, 1});
        node* y = ctx.new_tensor(type_id::f32, {7, 4, 2, 1});
        any_tensor r = custom_inplace(any_tensor(a), {any_tensor(y)},
                                      [](any_tensor dst, std::span<const any_tensor> args, int ith, int nth) {
                                          CHECK((ith == 0 && nth == 1));
                                          const auto d = dst.as<float, 3>().data();
                                          const auto v = args[0].as<float, 3>().data();
                                          for (std::int64_t i2 = 0; i2 < dst.ne(2); ++i2)
                                              for (std::int64_t i1 = 0; i1 < dst.ne(1); ++i1)
                                                  for (std::int64_t i = 0; i < dst.ne(0); ++i) d(i, i1, i2) += v(i, i1, i2);
                                      },
                                      1);
        CHECK(r.get()->view_src == a);
        b.out = r.get();
        b.inputs = {a, y};
        return b;
    },
    [](const std::vector<host>& in) {
        host o = in[0];
        for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] += in[1].v[i];
        return o;
    });
}

TEST_CASE("custom ops: n_tasks decides which threads call the function, with which (ith, nth)") {
    struct expect {
        int threads, n_tasks;
        std::set<std::pair<int, int>> calls;
    };
    const expect cases[] = {{1, -1, {{0, 1}}},         {2, -1, {{0, 2}, {1, 2}}}, {2, 1, {{0, 1}}},
                            {2, 2, {{0, 2}, {1, 2}}},  {2, 5, {{0, 2}, {1, 2}}},  {1, 3, {{0, 1}}}};
    for (const expect& e : cases) {
        std::mutex mu;
        std::multiset<std::pair<int, int>> seen;
        context ctx;
        node* a = ctx.new_tensor(type_id::f32, {4, 4, 1, 1});
        any_tensor r = map_custom1(
            any_tensor(a),
            [&](any_tensor, any_tensor, int ith, int nth) {
                std::lock_guard<std::mutex> lk(mu);
                seen.insert({ith, nth});
            },
            e.n_tasks);
        cgraph g;
        g.build_forward_expand(r);
        backend::cpu::executor ex(e.threads);
        ex.compute(g);
        INFO("threads ", e.threads, " n_tasks ", e.n_tasks);
        CHECK(seen.size() == e.calls.size());  // each (ith, nth) once
        CHECK(std::set<std::pair<int, int>>(seen.begin(), seen.end()) == e.calls);
    }
}

TEST_CASE("custom ops: the C-style function pointer + userdata forms") {
    static float factor = 3.f;  // what userdata points at
    check("map_custom1 function pointer + userdata", [](context& ctx) {
        built b;
        node* a = ctx.new_tensor(type_id::f32, {9, 6, 1, 1});
        b.out = map_custom1(any_tensor(a), scale_by_userdata, -1, &factor).get();
        b.inputs = {a};
        return b;
    },
    [](const std::vector<host>& in) { return map_host(in[0], [](double x) { return 3 * x; }); });
    check("custom function pointer + userdata", [](context& ctx) {
        built b;
        node* a = ctx.new_tensor(type_id::f32, {9, 6, 1, 1});
        b.out = custom(ctx, type_id::f32, {9, 6, 1, 1}, {any_tensor(a)},
                       [](any_tensor dst, std::span<const any_tensor> args, int ith, int nth, void* ud) {
                           scale_by_userdata(dst, args[0], ith, nth, ud);
                       },
                       -1, &factor)
                    .get();
        b.inputs = {a};
        return b;
    },
    [](const std::vector<host>& in) { return map_host(in[0], [](double x) { return 3 * x; }); });
}

TEST_CASE("custom ops: the node owns a copy of the callable; exceptions reach compute()") {
    auto token = std::make_shared<int>(0);
    {
        context ctx;
        node* a = ctx.new_tensor(type_id::f32, {4, 1, 1, 1});
        any_tensor r = map_custom1(any_tensor(a), [token](any_tensor, any_tensor, int, int) { ++*token; });
        CHECK(token.use_count() == 2);  // the copy in the node
        cgraph g;
        g.build_forward_expand(r);
        backend::cpu::compute(g, 2);
        CHECK(*token == 2);  // both threads called it
    }
    CHECK(token.use_count() == 1);  // released with the context

    for (int threads : {1, 2}) {
        context ctx;
        node* a = ctx.new_tensor(type_id::f32, {4, 1, 1, 1});
        bool fail_now = true;
        any_tensor r = map_custom1(any_tensor(a), [&fail_now](any_tensor, any_tensor, int ith, int) {
            if (fail_now && ith == 0) throw std::runtime_error("custom op failed on purpose");
        });
        cgraph g;
        g.build_forward_expand(add(r, any_tensor(a)));
        backend::cpu::executor ex(threads);
        CHECK_THROWS_WITH_AS(ex.compute(g), "custom op failed on purpose", std::runtime_error);
        fail_now = false;
        CHECK_NOTHROW(ex.compute(g));  // the executor is usable again
    }
}

TEST_CASE("custom ops: bad input gives a tessera::error naming the op") {
    context ctx({.no_alloc = true});
    any_tensor a(ctx.new_tensor(type_id::f32, {4, 1, 1, 1}));
    const auto noop1 = [](any_tensor, any_tensor, int, int) {};
    const auto noop = [](any_tensor, std::span<const any_tensor>, int, int) {};
    CHECK_THROWS_WITH_AS(map_custom1(a, noop1, 0), doctest::Contains("map_custom1: n_tasks must be -1"), tessera::error);
    CHECK_THROWS_WITH_AS(map_custom1(a, noop1, -2), doctest::Contains("n_tasks"), tessera::error);
    CHECK_THROWS_WITH_AS(map_custom1(a, custom1_fn_ptr{}, -1, nullptr), doctest::Contains("map_custom1: the function is empty"), tessera::error);
    CHECK_THROWS_WITH_AS(map_custom2(a, any_tensor(), [](any_tensor, any_tensor, any_tensor, int, int) {}),
                         doctest::Contains("map_custom2: source 1 is an empty handle"), tessera::error);
    CHECK_THROWS_WITH_AS(custom(ctx, type_id::f32, {4, 1, 1, 1}, {a, a, a, a, a, a, a, a, a, a, a}, noop),
                         doctest::Contains("custom: 11 arguments (at most 10)"), tessera::error);
    CHECK_THROWS_WITH_AS(custom_inplace(a, {a, a, a, a, a, a, a, a, a, a}, noop), doctest::Contains("at most 9"), tessera::error);
    CHECK_THROWS_WITH_AS(custom(ctx, type_id::f32, {4, -1, 1, 1}, {a}, noop), doctest::Contains("custom: extents"), tessera::error);
    context other({.no_alloc = true});
    CHECK_THROWS_WITH_AS(custom(other, type_id::f32, {4, 1, 1, 1}, {a}, noop), doctest::Contains("another context"), tessera::error);
}

TEST_CASE("custom ops: the docs/graph.md example computes gain * tanh(x) + x") {
    context ctx;
    auto x = new_tensor<float, 2>(ctx, {64, 10});
    std::vector<float> xv(640);
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 17) / 8.f - 1.f;
    x.set(xv);
    const float gain = 2.5f;  // captured by value: the node keeps a copy
    auto y = map_custom1(x, [gain](tensor<float, 2> dst, tensor<float, 2> a, int ith, int nth) {
        const auto d = dst.data(), s = a.data();
        const std::int64_t rows = dst.ne(1), per = (rows + nth - 1) / nth;
        for (std::int64_t r = ith * per; r < std::min(rows, (ith + 1) * per); ++r)
            for (std::int64_t i = 0; i < dst.ne(0); ++i) d(i, r) = gain * std::tanh(s(i, r));
    });
    auto z = add(y, x);  // other ops read the result as usual
    backend::cpu::executor(2).compute(build_forward(z));
    std::vector<float> out(640);
    z.get(out);
    double err = 0;
    for (std::size_t i = 0; i < out.size(); ++i) err = std::max(err, std::fabs(out[i] - (2.5 * std::tanh(static_cast<double>(xv[i])) + xv[i])));
    CHECK(err < 1e-5);
}
