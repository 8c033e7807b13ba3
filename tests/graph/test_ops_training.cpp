// The training ops: the gradients silu_back, rms_norm_back, soft_max_back, get_rows_back,
// cross_entropy_loss_back, im2col_back, pool_2d_back, and the optimizer steps
// opt_step_adamw, opt_step_sgd. Each gradient is checked (harness.hpp: every arch, 1 and
// 2 threads, odd sizes, views) against two double-precision references: the formula,
// and the vector-Jacobian product of the forward op in double by central differences,
// which does not share the formula.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;
using vec = std::vector<double>;

namespace {

std::function<void(node*, std::mt19937&)> values(std::vector<double> v) {
    return [v](node* t, std::mt19937&) {
        for (std::size_t i = 0; i < v.size(); ++i) write_elem(t->lay.type, t->data + i * 4, v[i]);
    };
}
// Rows of positive values summing to 1 (labels of a cross-entropy loss).
std::function<void(node*, std::mt19937&)> distributions() {
    return [](node* t, std::mt19937& rng) {
        std::uniform_real_distribution<double> u(0.05, 1.0);
        const std::int64_t n = t->lay.ne[0];
        for (std::int64_t r = 0; r < t->lay.nrows(); ++r) {
            vec row(static_cast<std::size_t>(n));
            double s = 0;
            for (double& x : row) s += (x = u(rng));
            for (std::int64_t i = 0; i < n; ++i)
                write_elem(type_id::f32, t->data + static_cast<std::size_t>(r * n + i) * 4, row[static_cast<std::size_t>(i)] / s);
        }
    };
}

// Small integers in [0, n) as values (ties).

// J^T dy of f at x by central differences: dx_j = sum_i dy_i (f(x + h e_j) - f(x - h e_j))_i / 2h.
vec vjp(const std::function<vec(const vec&)>& f, vec x, const vec& dy, double h = 1e-5) {
    vec dx(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) {
        const double x0 = x[j];
        x[j] = x0 + h;
        const vec fp = f(x);
        x[j] = x0 - h;
        const vec fm = f(x);
        x[j] = x0;
        double s = 0;
        for (std::size_t i = 0; i < fp.size(); ++i) s += dy[i] * (fp[i] - fm[i]);
        dx[j] = s / (2 * h);
    }
    return dx;
}

vec row_of(const host& h, std::int64_t r) {
    return vec(h.v.begin() + r * h.ne[0], h.v.begin() + (r + 1) * h.ne[0]);
}
// A row-wise reference: out row r = g(dy row r, x row r).
host rowwise(const host& dy, const host& x, const std::function<vec(const vec&, const vec&)>& g) {
    host o = dy;
    for (std::int64_t r = 0; r < dy.ne[1] * dy.ne[2] * dy.ne[3]; ++r) {
        const vec z = g(row_of(dy, r), row_of(x, r));
        std::copy(z.begin(), z.end(), o.v.begin() + r * dy.ne[0]);
    }
    return o;
}

vec silu_fw(const vec& x) {
    vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * sigmoid(x[i]);
    return y;
}
vec rms_norm_fw(const vec& x, double eps) {
    double s = 0;
    for (double v : x) s += v * v;
    const double r = 1 / std::sqrt(s / static_cast<double>(x.size()) + eps);
    vec y(x);
    for (double& v : y) v *= r;
    return y;
}
vec softmax_fw(const vec& x, double scale) {
    double mx = -INFINITY;
    for (double v : x) mx = std::max(mx, v * scale);
    vec y(x.size());
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) s += (y[i] = std::exp(x[i] * scale - mx));
    for (double& v : y) v /= s;
    return y;
}

}  // namespace

// ---- silu_back, rms_norm_back, soft_max_back ---------------------------------------------------

TEST_CASE("training ops: silu_back, formula and finite differences, float types, views") {
    for (ne4 s : {ne4{33, 7, 3, 2}, ne4{1, 1, 1, 1}, ne4{128, 2, 2, 1}})
        for (type_id t : float_types)
            for (bool strided : {false, true})
                for (bool fd : {false, true})
                    check("silu_back " + tn(t) + sh(s) + (strided ? " strided" : "") + (fd ? " (finite differences)" : ""),
                          [&](context& ctx) {
                              built b;
                              node* dy = strided_input(ctx, t, s, strided);
                              node* x = strided_input(ctx, type_id::f32, s, false);
                              b.out = silu_back(any_tensor(dy), any_tensor(x)).get();
                              b.inputs = {dy, x};
                              b.lo = -6, b.hi = 6;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              return rowwise(in[0], in[1], [&](const vec& dy, const vec& x) {
                                  if (fd) return vjp(silu_fw, x, dy);
                                  vec z(x.size());
                                  for (std::size_t i = 0; i < x.size(); ++i) {
                                      const double sg = sigmoid(x[i]);
                                      z[i] = dy[i] * sg * (1 + x[i] * (1 - sg));
                                  }
                                  return z;
                              });
                          });
}

TEST_CASE("training ops: rms_norm_back, formula and finite differences, eps, float types, views") {
    for (ne4 s : {ne4{64, 3, 2, 1}, ne4{1025, 2, 1, 1}, ne4{5, 1, 1, 3}})
        for (float eps : {1e-6f, 0.1f})
            for (type_id t : float_types)
                for (bool strided : {false, true})
                    for (bool fd : {false, true}) {
                        if (s[0] == 1025 && (t != type_id::f32 || strided)) continue;  // keep the O(n^2) differences few
                        check("rms_norm_back " + tn(t) + sh(s) + " eps " + std::to_string(eps) + (strided ? " strided" : "") +
                                  (fd ? " (finite differences)" : ""),
                              [&](context& ctx) {
                                  built b;
                                  node* dy = strided_input(ctx, t, s, strided);
                                  node* x = strided_input(ctx, t, s, strided);
                                  b.out = rms_norm_back(any_tensor(dy), any_tensor(x), eps).get();
                                  b.inputs = {dy, x};
                                  return b;
                              },
                              [&](const std::vector<host>& in) {
                                  return rowwise(in[0], in[1], [&](const vec& dy, const vec& x) {
                                      if (fd) return vjp([&](const vec& v) { return rms_norm_fw(v, eps); }, x, dy);
                                      const double n = static_cast<double>(x.size());
                                      double sxx = 0, sxdy = 0;
                                      for (std::size_t i = 0; i < x.size(); ++i) sxx += x[i] * x[i], sxdy += x[i] * dy[i];
                                      const double ms = sxx / n + eps, r = 1 / std::sqrt(ms);
                                      vec z(x.size());
                                      for (std::size_t i = 0; i < x.size(); ++i) z[i] = r * dy[i] - r * r * r * x[i] * sxdy / n;
                                      return z;
                                  });
                              });
                    }
}

TEST_CASE("training ops: soft_max_back, formula and finite differences, scale, float types, views, in place") {
    for (ne4 s : {ne4{16, 5, 3, 1}, ne4{1023, 2, 1, 1}, ne4{1, 3, 1, 1}})
        for (float scale : {1.0f, 0.1f})
            for (type_id t : float_types)
                for (bool strided : {false, true})
                    for (bool inplace : {false, true})
                        for (bool fd : {false, true}) {
                            if (inplace && strided) continue;
                            if (s[0] == 1023 && (t != type_id::f32 || strided)) continue;
                            check("soft_max_back " + tn(t) + sh(s) + " scale " + std::to_string(scale) + (strided ? " strided" : "") +
                                      (inplace ? " inplace" : "") + (fd ? " (finite differences)" : ""),
                                  [&](context& ctx) {
                                      built b;
                                      node* dy = strided_input(ctx, t, s, strided);
                                      node* x = ctx.new_tensor(type_id::f32, s);  // the forward input
                                      any_tensor y = soft_max_ext(any_tensor(x), any_tensor(), scale);
                                      b.out = (inplace ? soft_max_ext_back_inplace(any_tensor(dy), y, scale)
                                                       : soft_max_ext_back(any_tensor(dy), y, scale))
                                                  .get();
                                      b.inputs = {dy, x};
                                      b.lo = -3, b.hi = 3;
                                      b.max_nmse = 1e-6;  // y comes from soft_max (its bound)
                                      return b;
                                  },
                                  [&](const std::vector<host>& in) {
                                      return rowwise(in[0], in[1], [&](const vec& dy, const vec& x) {
                                          if (fd) return vjp([&](const vec& v) { return softmax_fw(v, scale); }, x, dy);
                                          const vec y = softmax_fw(x, scale);
                                          double dot = 0;
                                          for (std::size_t i = 0; i < y.size(); ++i) dot += y[i] * dy[i];
                                          vec z(y.size());
                                          for (std::size_t i = 0; i < y.size(); ++i) z[i] = scale * y[i] * (dy[i] - dot);
                                          return z;
                                      });
                                  });
                        }
}

// ---- get_rows_back, cross_entropy_loss_back -------------------------------------------------------

TEST_CASE("training ops: get_rows_back scatters the rows of dy (repeated indices add up), float types") {
    struct gc {
        std::int64_t E, n, R;
    };
    for (gc c : {gc{8, 12, 5}, gc{33, 7, 40}, gc{1, 1, 1}, gc{256, 70, 3}})
        for (type_id t : float_types)
            check("get_rows_back " + tn(t) + " E " + std::to_string(c.E) + " n " + std::to_string(c.n) + " R " + std::to_string(c.R),
                  [&](context& ctx) {
                      built b;
                      node* dy = ctx.new_tensor(t, {c.E, c.n, 1, 1});
                      node* idx = ctx.new_tensor(type_id::i32, {c.n, 1, 1, 1});
                      node* like = ctx.new_tensor(type_id::f16, {c.E, c.R, 1, 1});
                      b.out = get_rows_back(any_tensor(dy), any_tensor(idx), any_tensor(like)).get();
                      b.inputs = {dy, idx};
                      b.init = {{idx, indices_below(c.R)}};
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host o = host::zeros({c.E, c.R, 1, 1});
                      for (std::int64_t i = 0; i < c.n; ++i)
                          for (std::int64_t e = 0; e < c.E; ++e) o.at(e, static_cast<std::int64_t>(in[1].at(i))) += in[0].at(e, i);
                      return o;
                  });
    // an index past the rows: a tessera::error at compute, at 1 and 2 threads
    for (int threads : {1, 2}) {
        context ctx;
        node* dy = ctx.new_tensor(type_id::f32, {4, 3, 1, 1});
        node* idx = ctx.new_tensor(type_id::i32, {3, 1, 1, 1});
        node* like = ctx.new_tensor(type_id::f32, {4, 2, 1, 1});
        const std::int32_t v[3] = {0, 2, 1};
        std::memcpy(idx->data, v, sizeof v);
        cgraph g;
        g.build_forward_expand(get_rows_back(any_tensor(dy), any_tensor(idx), any_tensor(like)));
        CHECK_THROWS_WITH_AS(backend::cpu::compute(g, threads), doctest::Contains("index 2 at position 1"), tessera::error);
    }
}

TEST_CASE("training ops: cross_entropy_loss_back, formula and finite differences of cross_entropy_loss") {
    for (ne4 s : {ne4{10, 5, 4, 3}, ne4{3000, 1, 1, 1}, ne4{7, 1, 1, 1}})
        for (bool fd : {false, true})
            check("cross_entropy_loss_back " + sh(s) + (fd ? " (finite differences)" : ""),
                  [&](context& ctx) {
                      built b;
                      node* g = ctx.new_tensor(type_id::f32, {1, 1, 1, 1});
                      node* x = ctx.new_tensor(type_id::f32, s);
                      node* l = ctx.new_tensor(type_id::f32, s);
                      b.out = cross_entropy_loss_back(any_tensor(g), any_tensor(x), any_tensor(l)).get();
                      b.inputs = {g, x, l};
                      b.init = {{l, distributions()}, {g, values({0.75})}};
                      b.lo = -4, b.hi = 4;
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      const double g = in[0].v[0];
                      const std::int64_t rows = s[1] * s[2] * s[3];
                      host o = in[1];
                      for (std::int64_t r = 0; r < rows; ++r) {
                          const vec x = row_of(in[1], r), l = row_of(in[2], r);
                          vec z;
                          if (fd) {  // d/dx of g * loss, loss = -(1/rows) sum l . log_softmax(x)
                              const auto loss = [&](const vec& v) {
                                  const vec p = softmax_fw(v, 1.0);
                                  double s0 = 0;
                                  for (std::size_t i = 0; i < v.size(); ++i) s0 -= l[i] * std::log(p[i]);
                                  return vec{g * s0 / static_cast<double>(rows)};
                              };
                              z = vjp(loss, x, {1.0}, 1e-4);
                          } else {
                              const vec p = softmax_fw(x, 1.0);
                              z.resize(x.size());
                              for (std::size_t i = 0; i < x.size(); ++i) z[i] = (p[i] - l[i]) * g / static_cast<double>(rows);
                          }
                          std::copy(z.begin(), z.end(), o.v.begin() + r * s[0]);
                      }
                      return o;
                  });
}

// ---- im2col_back, pool_2d_back -----------------------------------------------------------------

TEST_CASE("training ops: im2col_back is the adjoint of im2col (1-D and 2-D, stride, padding, dilation)") {
    struct ic {
        ne4 in, k;  // input [W, H, IC, N] (1-D: [L, IC, N]); kernel shape
        conv_params p;
    };
    const ic cases[] = {
        {{9, 7, 3, 2}, {3, 3, 3, 4}, {{1, 1}, {0, 0}, {1, 1}, true}},  {{10, 11, 2, 1}, {3, 2, 2, 1}, {{2, 3}, {1, 2}, {1, 2}, true}},
        {{8, 8, 1, 1}, {1, 1, 1, 1}, {{3, 3}, {3, 0}, {1, 1}, true}},  {{13, 5, 2, 1}, {5, 3, 2, 1}, {{1, 2}, {2, 1}, {3, 1}, true}},
        {{17, 3, 2, 1}, {3, 3, 1, 1}, {{2, 1}, {1, 0}, {2, 1}, false}}, {{6, 1, 1, 1}, {6, 1, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, false}},
    };
    for (const ic& c : cases) {
        context probe({.no_alloc = true});
        const any_tensor col = im2col(any_tensor(probe.new_tensor(type_id::f32, c.k)), any_tensor(probe.new_tensor(type_id::f32, c.in)), c.p);
        const ne4 cs = col.lay().ne;
        check("im2col_back " + std::string(c.p.is_2d ? "2-D" : "1-D") + " input " + sh(c.in) + " kernel " + sh(c.k) + " s " +
                  std::to_string(c.p.s[0]) + "," + std::to_string(c.p.s[1]) + " p " + std::to_string(c.p.p[0]) + "," +
                  std::to_string(c.p.p[1]) + " d " + std::to_string(c.p.d[0]) + "," + std::to_string(c.p.d[1]),
              [&](context& ctx) {
                  built b;
                  node* dy = ctx.new_tensor(type_id::f32, cs);
                  node* kernel = ctx.new_tensor(type_id::f16, c.k);
                  b.out = im2col_back(any_tensor(dy), any_tensor(kernel), c.in, c.p).get();
                  b.inputs = {dy};
                  return b;
              },
              [&](const std::vector<host>& in) {
                  // scatter: every im2col element adds back to the input element it copied
                  host o = host::zeros(c.in);
                  const bool two = c.p.is_2d;
                  const std::int64_t KW = c.k[0], KH = two ? c.k[1] : 1, IC = two ? c.in[2] : c.in[1];
                  const std::int64_t W = c.in[0], H = two ? c.in[1] : 1, N = two ? c.in[3] : c.in[2];
                  for (std::int64_t n = 0; n < N; ++n)
                      for (std::int64_t oy = 0; oy < (two ? cs[2] : 1); ++oy)
                          for (std::int64_t ox = 0; ox < cs[1]; ++ox)
                              for (std::int64_t ch = 0; ch < IC; ++ch)
                                  for (std::int64_t ky = 0; ky < KH; ++ky)
                                      for (std::int64_t kx = 0; kx < KW; ++kx) {
                                          const std::int64_t x = ox * c.p.s[0] + kx * c.p.d[0] - c.p.p[0];
                                          const std::int64_t y = oy * c.p.s[1] + ky * c.p.d[1] - c.p.p[1];
                                          if (x < 0 || x >= W || y < 0 || y >= H) continue;
                                          const std::int64_t e = (ch * KH + ky) * KW + kx;
                                          if (two) o.at(x, y, ch, n) += in[0].at(e, ox, oy, n);
                                          else o.at(x, ch, n) += in[0].at(e, ox, n);
                                      }
                  return o;
              });
    }
}

TEST_CASE("training ops: pool_2d_back avg and max, formula and finite differences, float types") {
    struct pc {
        ne4 x;
        int k0, k1, s0, s1, p0, p1;
    };
    const pc cases[] = {{{10, 10, 3, 1}, 3, 3, 1, 1, 0, 0}, {{10, 10, 3, 1}, 3, 3, 2, 2, 1, 1}, {{7, 9, 2, 2}, 2, 3, 2, 1, 1, 0},
                        {{5, 4, 1, 1}, 1, 1, 1, 1, 0, 0},   {{11, 6, 2, 1}, 3, 2, 3, 2, 1, 1}};
    for (const pc& c : cases)
        for (pool_op op : {pool_op::avg, pool_op::max})
            for (type_id t : {type_id::f32, type_id::f16})
                for (int variant : {0, 1, 2}) {  // formula, finite differences, formula on small integers (many ties)
                    const bool fd = variant == 1, ties = variant == 2;
                    if (fd && op == pool_op::max && t != type_id::f32) continue;  // f16 values tie, where the max has no derivative
                    if (ties && op != pool_op::max) continue;
                    const std::int64_t OW = (c.x[0] + 2 * c.p0 - c.k0) / c.s0 + 1, OH = (c.x[1] + 2 * c.p1 - c.k1) / c.s1 + 1;
                    // the forward pool in double: plane values -> pooled values
                    const auto forward = [&](const host& x, std::int64_t i2, std::int64_t i3, std::int64_t ox, std::int64_t oy,
                                             std::int64_t* arg_x, std::int64_t* arg_y) {
                        double acc = op == pool_op::max ? -DBL_MAX : 0.0;
                        for (std::int64_t ky = 0; ky < c.k1; ++ky)
                            for (std::int64_t kx = 0; kx < c.k0; ++kx) {
                                const std::int64_t ix = ox * c.s0 - c.p0 + kx, iy = oy * c.s1 - c.p1 + ky;
                                if (ix < 0 || ix >= c.x[0] || iy < 0 || iy >= c.x[1]) continue;
                                const double v = x.at(ix, iy, i2, i3);
                                if (op == pool_op::avg) acc += v;
                                else if (v > acc) acc = v, *arg_x = ix, *arg_y = iy;
                            }
                        return op == pool_op::avg ? acc / (c.k0 * c.k1) : acc;
                    };
                    check("pool_2d_back " + std::string(op == pool_op::max ? "max" : "avg") + " " + tn(t) + " x " + sh(c.x) + " k " +
                              std::to_string(c.k0) + "x" + std::to_string(c.k1) + " s " + std::to_string(c.s0) + "," +
                              std::to_string(c.s1) + " p " + std::to_string(c.p0) + "," + std::to_string(c.p1) +
                              (fd ? " (finite differences)" : "") + (ties ? " ties" : ""),
                          [&](context& ctx) {
                              built b;
                              node* dy = ctx.new_tensor(t, {OW, OH, c.x[2], c.x[3]});
                              node* x = ctx.new_tensor(t, c.x);
                              b.out = pool_2d_back(any_tensor(dy), any_tensor(x), {op, {c.k0, c.k1}, {c.s0, c.s1}, {c.p0, c.p1}}).get();
                              b.inputs = {dy, x};
                              if (ties) b.init = {{x, small_ints(3)}};
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros(c.x);
                              for (std::int64_t i3 = 0; i3 < c.x[3]; ++i3)
                                  for (std::int64_t i2 = 0; i2 < c.x[2]; ++i2) {
                                      if (fd) {  // d/dx sum dy * pool(x), plane by plane
                                          host xp = in[1];
                                          for (std::int64_t iy = 0; iy < c.x[1]; ++iy)
                                              for (std::int64_t ix = 0; ix < c.x[0]; ++ix) {
                                                  const double x0 = xp.at(ix, iy, i2, i3), h = 1e-6;
                                                  double s = 0;
                                                  for (int sign : {1, -1}) {
                                                      xp.at(ix, iy, i2, i3) = x0 + sign * h;
                                                      for (std::int64_t oy = 0; oy < OH; ++oy)
                                                          for (std::int64_t ox = 0; ox < OW; ++ox) {
                                                              std::int64_t ax = 0, ay = 0;
                                                              s += sign * in[0].at(ox, oy, i2, i3) * forward(xp, i2, i3, ox, oy, &ax, &ay);
                                                          }
                                                  }
                                                  xp.at(ix, iy, i2, i3) = x0;
                                                  o.at(ix, iy, i2, i3) = s / (2 * h);
                                              }
                                          continue;
                                      }
                                      for (std::int64_t oy = 0; oy < OH; ++oy)
                                          for (std::int64_t ox = 0; ox < OW; ++ox) {
                                              const double g = in[0].at(ox, oy, i2, i3);
                                              if (op == pool_op::max) {
                                                  std::int64_t ax = -1, ay = -1;
                                                  forward(in[1], i2, i3, ox, oy, &ax, &ay);
                                                  if (ax >= 0) o.at(ax, ay, i2, i3) += g;
                                                  continue;
                                              }
                                              for (std::int64_t ky = 0; ky < c.k1; ++ky)
                                                  for (std::int64_t kx = 0; kx < c.k0; ++kx) {
                                                      const std::int64_t ix = ox * c.s0 - c.p0 + kx, iy = oy * c.s1 - c.p1 + ky;
                                                      if (ix >= 0 && ix < c.x[0] && iy >= 0 && iy < c.x[1])
                                                          o.at(ix, iy, i2, i3) += g / (c.k0 * c.k1);
                                                  }
                                          }
                                  }
                              return o;
                          });
                }
}

// ---- optimizer steps ---------------------------------------------------------------------------

namespace {
// AdamW hyper-parameters at step t, as ggml_opt computes them.
vec adamw_params(double alpha, double b1, double b2, double eps, double wd, int t) {
    return {alpha, b1, b2, eps, wd, 1 / (1 - std::pow(b1, t)), 1 / (1 - std::pow(b2, t))};
}
struct adamw_ref {
    vec w, m, v;
};
adamw_ref adamw_step(const vec& hp, const host& w, const host& g, const host& m, const host& v) {
    adamw_ref r{w.v, m.v, v.v};
    for (std::size_t i = 0; i < w.v.size(); ++i) {
        r.m[i] = hp[1] * m.v[i] + (1 - hp[1]) * g.v[i];
        r.v[i] = hp[2] * v.v[i] + (1 - hp[2]) * g.v[i] * g.v[i];
        r.w[i] = w.v[i] * (1 - hp[0] * hp[4]) - hp[0] * (r.m[i] * hp[5]) / (std::sqrt(r.v[i] * hp[6]) + hp[3]);
    }
    return r;
}
}  // namespace

TEST_CASE("training ops: opt_step_adamw and opt_step_sgd update the parameter in place") {
    for (ne4 s : {ne4{10, 5, 4, 3}, ne4{30000, 1, 1, 1}, ne4{3, 1, 1, 1}})
        for (int step : {1, 10})
            for (double wd : {0.0, 0.1}) {
                const vec hp = adamw_params(1e-2, 0.9, 0.999, 1e-8, wd, step);
                check("opt_step_adamw " + sh(s) + " step " + std::to_string(step) + " wd " + std::to_string(wd),
                      [&](context& ctx) {
                          built b;
                          node* w = ctx.new_tensor(type_id::f32, s);
                          node* g = ctx.new_tensor(type_id::f32, s);
                          node* m = ctx.new_tensor(type_id::f32, s);
                          node* v = ctx.new_tensor(type_id::f32, s);
                          node* p = ctx.new_tensor(type_id::f32, {7, 1, 1, 1});
                          any_tensor(w).set_param();
                          b.out = opt_step_adamw(any_tensor(w), any_tensor(g), any_tensor(m), any_tensor(v), any_tensor(p)).get();
                          b.inputs = {w, g, m, v};
                          b.init = {{v, uniform(0.0, 0.5)}, {p, values(hp)}};
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o = in[0];
                          o.v = adamw_step(hp, in[0], in[1], in[2], in[3]).w;
                          return o;
                      });
                check("opt_step_sgd " + sh(s) + " wd " + std::to_string(wd),
                      [&](context& ctx) {
                          built b;
                          node* w = ctx.new_tensor(type_id::f32, s);
                          node* g = ctx.new_tensor(type_id::f32, s);
                          node* p = ctx.new_tensor(type_id::f32, {2, 1, 1, 1});
                          any_tensor(w).set_param();
                          b.out = opt_step_sgd(any_tensor(w), any_tensor(g), any_tensor(p)).get();
                          b.inputs = {w, g};
                          b.init = {{p, values({0.05, wd})}};
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o = in[0];
                          for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] = in[0].v[i] * (1 - 0.05 * wd) - 0.05 * in[1].v[i];
                          return o;
                      });
            }
}

TEST_CASE("training ops: opt_step_adamw also updates m and v; three steps match the double recurrence") {
    for (int threads : {1, 2}) {
        context ctx;
        auto w = new_tensor<float, 2>(ctx, {37, 5}).set_param();
        auto g = new_tensor<float, 2>(ctx, {37, 5});
        auto m = new_tensor<float, 2>(ctx, {37, 5});
        auto v = new_tensor<float, 2>(ctx, {37, 5});
        auto p = new_tensor<float, 1>(ctx, {7});
        tensor<float, 2> r = opt_step_adamw(w, g, m, v, p);
        CHECK(r.get()->view_src == w.get());
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> u(-1, 1);
        std::vector<float> wv(185), gv(185), zero(185, 0.f);
        for (float& x : wv) x = u(rng);
        w.set(wv);
        m.set(zero);
        v.set(zero);
        host W{{37, 5, 1, 1}, {wv.begin(), wv.end()}}, M = host::zeros({37, 5, 1, 1}), V = M, G = M;
        cgraph gr;
        gr.build_forward_expand(r);
        for (int step = 1; step <= 3; ++step) {
            for (float& x : gv) x = u(rng);
            g.set(gv);
            G.v.assign(gv.begin(), gv.end());
            const vec hp = adamw_params(1e-2, 0.9, 0.99, 1e-8, 0.01, step);
            std::vector<float> hpf(hp.begin(), hp.end());
            p.set(hpf);
            backend::cpu::compute(gr, threads);
            const adamw_ref ref = adamw_step(hp, W, G, M, V);
            W.v = ref.w, M.v = ref.m, V.v = ref.v;
            std::vector<float> got(185);
            double err = 0;
            for (auto [t, want] : {std::pair{w, &W}, {m, &M}, {v, &V}}) {
                t.get(got);
                for (std::size_t i = 0; i < got.size(); ++i) err = std::max(err, std::fabs(got[i] - want->v[i]) / (1e-3 + std::fabs(want->v[i])));
            }
            INFO("threads ", threads, " step ", step);
            CHECK(err < 1e-5);
        }
    }
}

// ---- bad input ----------------------------------------------------------------------------------

TEST_CASE("training ops: bad shapes, types and parameters give a tessera::error naming the op") {
    context ctx({.no_alloc = true});
    auto t = [&](type_id ty, ne4 ne) { return any_tensor(ctx.new_tensor(ty, ne)); };
    const auto f = type_id::f32;
    auto throws_naming = [](auto&& fn, const char* op, const char* what) {
        try {
            fn();
            FAIL("no error for ", op);
        } catch (const tessera::error& e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(op) != std::string::npos);
            CHECK(std::string(e.what()).find(what) != std::string::npos);
        }
    };
    throws_naming([&] { silu_back(t(f, {4, 2, 1, 1}), t(f, {4, 3, 1, 1})); }, "silu_back", "one shape");
    throws_naming([&] { rms_norm_back(t(type_id::i32, {4, 2, 1, 1}), t(f, {4, 2, 1, 1}), 1e-6f); }, "rms_norm_back", "f32, f16 or bf16");
    throws_naming([&] { get_rows_back(t(f, {4, 3, 1, 1}), t(f, {3, 1, 1, 1}), t(f, {4, 5, 1, 1})); }, "get_rows_back", "i32");
    throws_naming([&] { get_rows_back(t(f, {4, 3, 1, 1}), t(type_id::i32, {2, 1, 1, 1}), t(f, {4, 5, 1, 1})); }, "get_rows_back", "vector");
    throws_naming([&] { get_rows_back(t(f, {4, 3, 1, 1}), t(type_id::i32, {3, 1, 1, 1}), t(f, {5, 5, 1, 1})); }, "get_rows_back", "row length");
    throws_naming([&] { cross_entropy_loss_back(t(f, {2, 1, 1, 1}), t(f, {4, 3, 1, 1}), t(f, {4, 3, 1, 1})); }, "cross_entropy_loss_back", "one element");
    throws_naming([&] { im2col_back(t(f, {27, 7, 4, 2}), t(f, {3, 3, 3, 4}), {9, 7, 3, 2}, {}); }, "im2col_back", "im2col shape");
    throws_naming([&] { pool_2d_back(t(f, {4, 4, 3, 1}), t(f, {10, 10, 3, 1}), {pool_op::max, {3, 3}, {1, 1}}); }, "pool_2d_back", "pool_2d shape");
    throws_naming([&] { opt_step_sgd(t(f, {4, 3, 1, 1}), t(f, {4, 3, 1, 1}), t(f, {2, 1, 1, 1})); }, "opt_step_sgd", "set_param");
    any_tensor w = t(f, {4, 3, 1, 1});
    w.set_param();
    throws_naming([&] { opt_step_sgd(w, t(f, {4, 3, 1, 1}), t(f, {3, 1, 1, 1})); }, "opt_step_sgd", "(alpha, wd)");
    throws_naming([&] { opt_step_adamw(w, t(f, {4, 3, 1, 1}), t(f, {4, 3, 1, 1}), t(f, {3, 4, 1, 1}), t(f, {7, 1, 1, 1})); },
                  "opt_step_adamw", "parameter's shape");
    throws_naming([&] { opt_step_adamw(w, t(type_id::f16, {4, 3, 1, 1}), t(f, {4, 3, 1, 1}), t(f, {4, 3, 1, 1}), t(f, {7, 1, 1, 1})); },
                  "opt_step_adamw", "grad");
    // soft_max_back with ALiBi builds, as in ggml, and the executor refuses it by name
    any_tensor sb = soft_max_ext_back(t(f, {8, 4, 2, 1}), t(f, {8, 4, 2, 1}), 1.0f, 8.0f);
    cgraph g;
    g.build_forward_expand(sb);
    backend::cpu::executor ex(1);
    CHECK_THROWS_WITH_AS((void)ex.plan(g), doctest::Contains("max_bias"), tessera::error);
}

TEST_CASE("training ops: typed forms give ggml's result shapes and element types") {
    context ctx({.no_alloc = true});
    auto x = new_tensor<f16, 3>(ctx, {8, 4, 2});
    auto dy = new_tensor<float, 3>(ctx, {8, 4, 2});
    tensor<float, 3> r1 = silu_back(dy, x);
    tensor<f16, 3> r2 = rms_norm_back(x, dy, 1e-5f);
    tensor<float, 3> r3 = soft_max_ext_back(dy, x, 0.5f);
    tensor<float, 2> r4 = get_rows_back(new_tensor<bf16, 2>(ctx, {8, 6}), new_tensor<std::int32_t, 1>(ctx, {6}),
                                        new_tensor<float, 2>(ctx, {8, 11}));
    tensor<float, 3> r5 = cross_entropy_loss_back(new_tensor<float, 1>(ctx, {1}), dy, dy);
    tensor<float, 4> r6 = pool_2d_back(new_tensor<float, 4>(ctx, {4, 2, 2, 1}), new_tensor<f16, 4>(ctx, {8, 4, 2, 1}), {pool_op::avg, {2, 2}, {2, 2}});
    CHECK(r1.lay().ne == dy.lay().ne);
    CHECK(r2.lay().type == type_id::f16);
    CHECK(r3.lay().type == type_id::f32);
    CHECK(r4.lay().ne == ne4{8, 11, 1, 1});
    CHECK(r5.lay().ne == dy.lay().ne);
    CHECK(r6.lay().ne == ne4{8, 4, 2, 1});
    CHECK(r6.lay().type == type_id::f32);
}
