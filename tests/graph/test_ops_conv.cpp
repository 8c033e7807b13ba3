// pad, pad_reflect_1d, roll, arange, timestep_embedding, upscale, win_part/unpart,
// get_rel_pos, add_rel_pos, im2col, conv_1d/conv_2d (composite and direct), conv_2d_dw,
// conv_transpose_1d, pool_1d/2d against double-precision references written from each
// op's definition (convolutions as direct nested loops, never through im2col), every
// arch, 1 and 2 threads (harness.hpp); and bad input giving a tessera::error.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

namespace {
std::int64_t wrap(std::int64_t i, std::int64_t n) { return ((i % n) + n) % n; }

// A leaf of logical shape ne; strided (dims 0 and 1 swapped in memory) when transposed.
node* input(context& ctx, type_id t, ne4 ne, bool transposed) {
    if (!transposed) return ctx.new_tensor(t, ne);
    node* leaf = ctx.new_tensor(t, {ne[1], ne[0], ne[2], ne[3]});
    return transpose(any_tensor(leaf)).get();
}

// Element-wise op of one input: out(i0..i3) = f(in, i0..i3) over the output shape.
template <class F>
host map_out(ne4 out, F f) {
    host o = host::zeros(out);
    for (std::int64_t i3 = 0; i3 < out[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < out[2]; ++i2)
            for (std::int64_t i1 = 0; i1 < out[1]; ++i1)
                for (std::int64_t i0 = 0; i0 < out[0]; ++i0) o.at(i0, i1, i2, i3) = f(i0, i1, i2, i3);
    return o;
}

// Checks that f throws tessera::error whose message names `what`.
template <class F>
void expect_error(F f, const std::string& what) {
    bool thrown = false;
    try {
        f();
    } catch (const tessera::error& e) {
        thrown = true;
        INFO("message: ", e.what());
        CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
    CHECK_MESSAGE(thrown, "expected a tessera::error naming ", what);
}

double out_bound(type_id t) { return t == type_id::f32 ? 1e-7 : 1e-6; }
}  // namespace

// ---- pad, reflect, roll, arange, timestep ---------------------------------------------------

TEST_CASE("image ops: pad and pad_ext (left/right per dim, zeros and circular), strided inputs") {
    struct pc {
        ne4 s;
        std::array<int, 4> l, r;
    };
    const pc cases[] = {{{5, 4, 3, 2}, {0, 0, 0, 0}, {1, 2, 0, 2}},
                        {{5, 4, 3, 2}, {2, 1, 0, 1}, {1, 0, 2, 0}},
                        {{17, 1, 3, 1}, {3, 0, 1, 0}, {4, 1, 0, 0}},
                        {{8, 6, 1, 1}, {5, 6, 0, 0}, {8, 2, 0, 0}}};
    for (const auto& c : cases)
        for (bool circular : {false, true})
            for (type_id t : {type_id::f32, type_id::f16})
                for (bool tr : {false, true}) {
                    pad_params pp;
                    pp.left = c.l;
                    pp.right = c.r;
                    pp.circular = circular;
                    ne4 out = c.s;
                    for (std::size_t d = 0; d < 4; ++d) out[d] += c.l[d] + c.r[d];
                    check("pad " + tn(t) + sh(c.s) + (circular ? " circular" : "") + (tr ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = input(ctx, t, c.s, tr);
                              b.out = pad_ext(any_tensor(x), pp).get();
                              b.inputs = {x};
                              b.max_nmse = 0;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              return map_out(out, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                                  std::array<std::int64_t, 4> j{i0 - c.l[0], i1 - c.l[1], i2 - c.l[2], i3 - c.l[3]};
                                  for (std::size_t d = 0; d < 4; ++d) {
                                      if (circular) j[d] = wrap(j[d], c.s[d]);
                                      else if (j[d] < 0 || j[d] >= c.s[d]) return 0.0;
                                  }
                                  return in[0].at(j[0], j[1], j[2], j[3]);
                              });
                          });
                }
    // ggml_pad: right side only, typed
    check("pad typed right-only", [](context& ctx) {
        built b;
        auto x = tensor<float, 2>(ctx.new_tensor(type_id::f32, {3, 2, 1, 1}));
        b.out = pad(x, 2, 1).get();
        b.inputs = {x.get()};
        b.max_nmse = 0;
        return b;
    },
    [](const std::vector<host>& in) {
        return map_out({5, 3, 1, 1}, [&](std::int64_t i0, std::int64_t i1, std::int64_t, std::int64_t) {
            return i0 < 3 && i1 < 2 ? in[0].at(i0, i1) : 0.0;
        });
    });
}

TEST_CASE("image ops: pad_reflect_1d and roll") {
    for (ne4 s : {ne4{7, 3, 2, 1}, ne4{16, 5, 1, 2}})
        for (auto [p0, p1] : {std::pair{1, 2}, std::pair{3, 0}, std::pair{6, 6}})
            for (type_id t : {type_id::f32, type_id::f16})
                for (bool tr : {false, true})
                    check("pad_reflect_1d " + tn(t) + sh(s) + " " + std::to_string(p0) + "," + std::to_string(p1) + (tr ? " strided" : ""),
                          [&, p0 = p0, p1 = p1](context& ctx) {
                              built b;
                              node* x = input(ctx, t, s, tr);
                              b.out = pad_reflect_1d(any_tensor(x), p0, p1).get();
                              b.inputs = {x};
                              b.max_nmse = 0;
                              return b;
                          },
                          [&, p0 = p0, p1 = p1](const std::vector<host>& in) {
                              return map_out({s[0] + p0 + p1, s[1], s[2], s[3]}, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                                  // mirror around the first and the last element (edges not repeated)
                                  std::int64_t j = i0 - p0;
                                  if (j < 0) j = -j;
                                  if (j > s[0] - 1) j = (s[0] - 1) - (j - (s[0] - 1));
                                  return in[0].at(j, i1, i2, i3);
                              });
                          });
    for (std::array<int, 4> sh4 : {std::array<int, 4>{1, 0, 0, 0}, {-3, 2, 1, -1}, {6, 4, 2, 1}, {0, -4, -2, 0}})
        for (type_id t : {type_id::f32, type_id::f16})
            for (bool tr : {false, true}) {
                const ne4 s{7, 5, 3, 2};
                check("roll " + tn(t) + " " + std::to_string(sh4[0]) + "," + std::to_string(sh4[1]) + "," + std::to_string(sh4[2]) + "," +
                          std::to_string(sh4[3]) + (tr ? " strided" : ""),
                      [&](context& ctx) {
                          built b;
                          node* x = input(ctx, t, s, tr);
                          b.out = roll(any_tensor(x), sh4[0], sh4[1], sh4[2], sh4[3]).get();
                          b.inputs = {x};
                          b.max_nmse = 0;
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          // out[(i + shift) mod n] = in[i]
                          host o = host::zeros(s);
                          for (std::int64_t i3 = 0; i3 < s[3]; ++i3)
                              for (std::int64_t i2 = 0; i2 < s[2]; ++i2)
                                  for (std::int64_t i1 = 0; i1 < s[1]; ++i1)
                                      for (std::int64_t i0 = 0; i0 < s[0]; ++i0)
                                          o.at(wrap(i0 + sh4[0], s[0]), wrap(i1 + sh4[1], s[1]), wrap(i2 + sh4[2], s[2]), wrap(i3 + sh4[3], s[3])) =
                                              in[0].at(i0, i1, i2, i3);
                          return o;
                      });
            }
}

TEST_CASE("image ops: arange and timestep_embedding") {
    for (auto [a, z, st] : {std::tuple{0.f, 10.f, 1.f}, std::tuple{-3.5f, 7.25f, 0.5f}, std::tuple{1.f, 2.f, 0.3f}, std::tuple{0.f, 3000.f, 1.f}}) {
        const auto n = static_cast<std::int64_t>(std::ceil((z - a) / st));
        check("arange " + std::to_string(a) + " " + std::to_string(z) + " " + std::to_string(st),
              [&, a = a, z = z, st = st](context& ctx) {
                  built b;
                  b.out = arange(ctx, a, z, st).get();
                  return b;
              },
              [&, a = a, st = st](const std::vector<host>&) {
                  host o = host::zeros({n, 1, 1, 1});
                  for (std::int64_t i = 0; i < n; ++i) o.at(i) = static_cast<double>(a) + static_cast<double>(i) * static_cast<double>(st);
                  return o;
              });
    }
    for (int dim : {16, 15, 64, 1})
        for (int max_period : {10000, 100})
            check("timestep_embedding dim " + std::to_string(dim) + " max_period " + std::to_string(max_period),
                  [&](context& ctx) {
                      built b;
                      node* t = ctx.new_tensor(type_id::f32, {5, 1, 1, 1});
                      b.out = timestep_embedding(any_tensor(t), dim, max_period).get();
                      b.inputs = {t};
                      b.lo = 0, b.hi = 100;
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      const int half = dim / 2;
                      host o = host::zeros({dim, 5, 1, 1});
                      for (std::int64_t n = 0; n < 5; ++n)
                          for (int j = 0; j < half; ++j) {
                              const double f = std::pow(static_cast<double>(max_period), -static_cast<double>(j) / half);
                              o.at(j, n) = std::cos(in[0].at(n) * f);
                              o.at(j + half, n) = std::sin(in[0].at(n) * f);
                          }
                      return o;  // an odd dim leaves the last entry 0
                  });
}

// ---- upscale ------------------------------------------------------------------------------

TEST_CASE("image ops: upscale / interpolate nearest, bilinear and bicubic (half-pixel and align-corners)") {
    struct uc {
        ne4 s, d;
    };
    const uc cases[] = {{{4, 3, 2, 2}, {8, 6, 2, 2}},  {{4, 3, 2, 2}, {12, 9, 2, 2}}, {{5, 4, 2, 1}, {7, 9, 3, 1}},
                        {{6, 6, 1, 1}, {4, 3, 1, 1}},  {{3, 5, 2, 2}, {3, 10, 4, 1}}, {{1, 4, 1, 1}, {5, 4, 1, 1}}};
    for (const auto& c : cases)
        for (int mode = 0; mode < 6; ++mode)  // nearest, bilinear, bilinear / bicubic / bicubic / nearest align-corners
            for (type_id t : {type_id::f32, type_id::f16})
                for (bool tr : {false, true}) {
                    upscale_params up;
                    up.mode = mode == 0 || mode == 5 ? scale_mode::nearest : mode < 3 ? scale_mode::bilinear : scale_mode::bicubic;
                    up.align_corners = mode == 2 || mode == 4 || mode == 5;
                    check("upscale " + tn(t) + sh(c.s) + " -> " + sh(c.d) + " mode " + std::to_string(mode) + (tr ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = input(ctx, t, c.s, tr);
                              b.out = interpolate(any_tensor(x), c.d, up).get();
                              b.inputs = {x};
                              b.max_nmse = mode == 0 || mode == 5 ? 0 : out_bound(t);
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              auto near = [&](std::int64_t i, std::size_t d) { return i * c.s[d] / c.d[d]; };
                              const bool corners = mode == 2 || mode == 4 || mode == 5;
                              // source coordinate of output i along dim d (unclamped)
                              auto coord = [&](std::int64_t i, std::size_t d) {
                                  const double n = static_cast<double>(c.s[d]), m = static_cast<double>(c.d[d]);
                                  if (corners && c.s[d] > 1 && c.d[d] > 1) return static_cast<double>(i) * (n - 1) / (m - 1);
                                  if (corners) return static_cast<double>(i) * n / m;
                                  return (static_cast<double>(i) + 0.5) * n / m - 0.5;
                              };
                              // bilinear: the coordinate clamped into [0, n-1]
                              auto src = [&](std::int64_t i, std::size_t d) { return std::min(std::max(coord(i, d), 0.0), static_cast<double>(c.s[d] - 1)); };
                              // bicubic: Keys' cubic convolution kernel, a = -0.75
                              auto keys = [](double dist) {
                                  const double a = -0.75, u = std::abs(dist);
                                  if (u <= 1) return (a + 2) * u * u * u - (a + 3) * u * u + 1;
                                  if (u < 2) return a * u * u * u - 5 * a * u * u + 8 * a * u - 4 * a;
                                  return 0.0;
                              };
                              return map_out(c.d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                                  const std::int64_t j2 = near(i2, 2), j3 = near(i3, 3);
                                  if (mode == 0) return in[0].at(near(i0, 0), near(i1, 1), j2, j3);
                                  if (mode == 5) {  // nearest with align corners: floor of the corner-aligned coordinate
                                      auto nc = [&](std::int64_t i, std::size_t d) {
                                          if (c.s[d] > 1 && c.d[d] > 1) return i * (c.s[d] - 1) / (c.d[d] - 1);
                                          return near(i, d);
                                      };
                                      return in[0].at(nc(i0, 0), nc(i1, 1), j2, j3);
                                  }
                                  if (mode >= 3) {  // 4x4 taps around the coordinate, indices clamped into the image
                                      const double x = coord(i0, 0), y = coord(i1, 1);
                                      const auto bx = static_cast<std::int64_t>(std::floor(x)) - 1, by = static_cast<std::int64_t>(std::floor(y)) - 1;
                                      double v = 0;
                                      for (std::int64_t ty = by; ty < by + 4; ++ty)
                                          for (std::int64_t tx = bx; tx < bx + 4; ++tx)
                                              v += keys(x - static_cast<double>(tx)) * keys(y - static_cast<double>(ty)) *
                                                   in[0].at(std::clamp<std::int64_t>(tx, 0, c.s[0] - 1), std::clamp<std::int64_t>(ty, 0, c.s[1] - 1), j2, j3);
                                      return v;
                                  }
                                  const double x = src(i0, 0), y = src(i1, 1);
                                  const auto x0 = static_cast<std::int64_t>(std::floor(x)), y0 = static_cast<std::int64_t>(std::floor(y));
                                  const std::int64_t x1 = std::min(x0 + 1, c.s[0] - 1), y1 = std::min(y0 + 1, c.s[1] - 1);
                                  const double wx = x - static_cast<double>(x0), wy = y - static_cast<double>(y0);
                                  const double top = in[0].at(x0, y0, j2, j3) * (1 - wx) + in[0].at(x1, y0, j2, j3) * wx;
                                  const double bot = in[0].at(x0, y1, j2, j3) * (1 - wx) + in[0].at(x1, y1, j2, j3) * wx;
                                  return top * (1 - wy) + bot * wy;
                              });
                          });
                }
    // ggml_upscale: an integer factor on dims 0 and 1
    check("upscale typed factor 3", [](context& ctx) {
        built b;
        auto x = tensor<float, 3>(ctx.new_tensor(type_id::f32, {3, 2, 2, 1}));
        b.out = upscale(x, 3).get();
        b.inputs = {x.get()};
        b.max_nmse = 0;
        return b;
    },
    [](const std::vector<host>& in) {
        return map_out({9, 6, 2, 1}, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t) { return in[0].at(i0 / 3, i1 / 3, i2); });
    });
}

TEST_CASE("image ops: upscale bilinear with antialias (a triangle filter as wide as the scale), half-pixel and align-corners") {
    struct uc {
        ne4 s, d;
    };
    const uc cases[] = {{{10, 8, 2, 1}, {4, 3, 2, 1}}, {{7, 5, 1, 2}, {14, 10, 1, 2}}, {{9, 9, 3, 1}, {5, 9, 3, 1}},
                        {{16, 3, 1, 1}, {3, 7, 1, 1}}, {{1, 6, 2, 1}, {4, 2, 2, 1}}};
    for (const auto& c : cases)
        for (bool corners : {false, true})
            for (type_id t : {type_id::f32, type_id::f16})
                for (bool tr : {false, true}) {
                    const upscale_params up{scale_mode::bilinear, corners, true};
                    check("upscale antialias " + tn(t) + sh(c.s) + " -> " + sh(c.d) + (corners ? " align-corners" : "") + (tr ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = input(ctx, t, c.s, tr);
                              b.out = interpolate(any_tensor(x), c.d, up).get();
                              b.inputs = {x};
                              b.max_nmse = out_bound(t);
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              // scale per dim (align corners: (m-1)/(n-1)), source centre (i + o)/scale with o = 1/2
                              // (0 with align corners), weight of source pixel j: tri((j - centre + o)/support),
                              // support = max(1, 1/scale), over ggml's window [trunc(centre - support + o),
                              // trunc(centre + support + o)) inside the image, normalized. With o = 0 the window
                              // cuts the filter's last tap, which one depending on the f32 rounding of the
                              // centre: the window's end is computed in f32, as ggml computes it.
                              const double o = corners ? 0.0 : 0.5;
                              auto scale = [&](std::size_t d) {
                                  const double n = static_cast<double>(c.s[d]), m = static_cast<double>(c.d[d]);
                                  return corners && c.s[d] > 1 && c.d[d] > 1 ? (m - 1) / (n - 1) : m / n;
                              };
                              auto weight = [&](std::int64_t j, std::int64_t i, std::size_t d) {
                                  const double sc = scale(d), support = std::max(1.0, 1.0 / sc), centre = (static_cast<double>(i) + o) / sc;
                                  const float fsc = corners && c.s[d] > 1 && c.d[d] > 1 ? static_cast<float>(c.d[d] - 1) / static_cast<float>(c.s[d] - 1)
                                                                                        : static_cast<float>(c.d[d]) / static_cast<float>(c.s[d]);
                                  const float fc = (static_cast<float>(i) + static_cast<float>(o)) / fsc;
                                  if (j >= static_cast<std::int64_t>(fc + std::max(1.f, 1.f / fsc) + static_cast<float>(o))) return 0.0;
                                  return std::max(0.0, 1.0 - std::abs((static_cast<double>(j) - centre + o) / support));
                              };
                              return map_out(c.d, [&](std::int64_t i0, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                                  const std::int64_t j2 = i2 * c.s[2] / c.d[2], j3 = i3 * c.s[3] / c.d[3];
                                  double v = 0, total = 0;
                                  for (std::int64_t y = 0; y < c.s[1]; ++y)
                                      for (std::int64_t x = 0; x < c.s[0]; ++x) {
                                          const double w = weight(x, i0, 0) * weight(y, i1, 1);
                                          v += w * in[0].at(x, y, j2, j3);
                                          total += w;
                                      }
                                  return total > 0 ? v / total : v;
                              });
                          });
                }
}

// ---- SAM windows, relative positions ----------------------------------------------------------

TEST_CASE("image ops: win_part, win_unpart, get_rel_pos, add_rel_pos") {
    for (ne4 s : {ne4{3, 7, 5, 1}, ne4{4, 6, 6, 1}, ne4{2, 2, 9, 1}})
        for (int w : {3, 4}) {
            const std::int64_t npx = (s[1] + w - 1) / w, npy = (s[2] + w - 1) / w;
            check("win_part " + sh(s) + " w " + std::to_string(w),
                  [&](context& ctx) {
                      built b;
                      node* x = ctx.new_tensor(type_id::f32, s);
                      b.out = win_part(any_tensor(x), w).get();
                      b.inputs = {x};
                      b.max_nmse = 0;
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      return map_out({s[0], w, w, npx * npy}, [&](std::int64_t c, std::int64_t x, std::int64_t y, std::int64_t win) {
                          const std::int64_t gx = (win % npx) * w + x, gy = (win / npx) * w + y;
                          return gx < s[1] && gy < s[2] ? in[0].at(c, gx, gy) : 0.0;
                      });
                  });
            check("win_unpart " + sh(s) + " w " + std::to_string(w),
                  [&](context& ctx) {
                      built b;
                      node* x = ctx.new_tensor(type_id::f32, {s[0], w, w, npx * npy});
                      b.out = win_unpart(any_tensor(x), static_cast<int>(s[1]), static_cast<int>(s[2]), w).get();
                      b.inputs = {x};
                      b.max_nmse = 0;
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      return map_out({s[0], s[1], s[2], 1}, [&](std::int64_t c, std::int64_t x, std::int64_t y, std::int64_t) {
                          return in[0].at(c, x % w, y % w, (y / w) * npx + x / w);
                      });
                  });
        }
    for (type_id t : {type_id::f32, type_id::f16})
        for (auto [q, kq] : {std::pair{1, 1}, std::pair{5, 5}, std::pair{8, 8}, std::pair{3, 5}, std::pair{6, 2}})
            check("get_rel_pos " + tn(t) + " q " + std::to_string(q) + " k " + std::to_string(kq),
                  [&, q = q, kq = kq](context& ctx) {
                      built b;
                      node* x = ctx.new_tensor(t, {4, q + kq - 1 + (q == kq ? 0 : 1), 1, 1});
                      b.out = get_rel_pos(any_tensor(x), q, kq).get();
                      b.inputs = {x};
                      b.max_nmse = 0;
                      return b;
                  },
                  [&, q = q, kq = kq](const std::vector<host>& in) {
                      // relative offset q - k, shifted into [0, qh+kh-2]
                      return map_out({4, kq, q, 1}, [&](std::int64_t c, std::int64_t k, std::int64_t qq, std::int64_t) {
                          return in[0].at(c, qq - k + (kq - 1));
                      });
                  });
    struct rp {
        std::int64_t K, qw, qh, B;
    };
    for (const rp c : {rp{4, 3, 2, 2}, rp{7, 7, 7, 1}, rp{1, 5, 1, 3}})
        for (bool inplace : {false, true})
            check("add_rel_pos K" + std::to_string(c.K) + " q " + std::to_string(c.qw) + "x" + std::to_string(c.qh) + " B" +
                      std::to_string(c.B) + (inplace ? " inplace" : ""),
                  [&](context& ctx) {
                      built b;
                      node* a = ctx.new_tensor(type_id::f32, {c.K * c.K, c.qw * c.qh, c.B, 1});
                      node* pw = ctx.new_tensor(type_id::f32, {c.K, c.qw, c.qh, c.B});
                      node* ph = ctx.new_tensor(type_id::f32, {c.K, c.qw, c.qh, c.B});
                      b.out = (inplace ? add_rel_pos_inplace(any_tensor(a), any_tensor(pw), any_tensor(ph))
                                       : add_rel_pos(any_tensor(a), any_tensor(pw), any_tensor(ph)))
                                .get();
                      b.inputs = {a, pw, ph};
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      return map_out({c.K * c.K, c.qw * c.qh, c.B, 1}, [&](std::int64_t e, std::int64_t r, std::int64_t bb, std::int64_t) {
                          const std::int64_t u = e / c.K, v = e % c.K, x = r % c.qw, y = r / c.qw;
                          return in[0].at(e, r, bb) + in[2].at(u, x, y, bb) + in[1].at(v, x, y, bb);
                      });
                  });
}

// ---- im2col and convolutions ------------------------------------------------------------------

namespace {
struct conv2 {
    std::int64_t KW, KH, IC, OC, W, H, N;
    conv_params p;
};
const conv2 conv2_cases[] = {
    {3, 3, 2, 4, 9, 7, 1, {{1, 1}, {0, 0}, {1, 1}, true}},  {3, 3, 3, 5, 10, 11, 2, {{2, 1}, {1, 1}, {1, 1}, true}},
    {1, 1, 4, 3, 5, 5, 1, {{1, 1}, {0, 0}, {1, 1}, true}},  {2, 3, 1, 2, 8, 9, 2, {{3, 2}, {2, 1}, {2, 1}, true}},
    {5, 5, 3, 2, 13, 6, 1, {{1, 2}, {2, 0}, {1, 1}, true}}, {3, 1, 2, 3, 4, 1, 3, {{1, 1}, {3, 0}, {3, 1}, true}},
};
std::int64_t conv_out(std::int64_t in, std::int64_t k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// Direct 2-D convolution: out[ox, oy, oc, n] = sum k[kx, ky, ic, oc] * in[ox*s + kx*d - p, ...].
host conv2d_ref(const host& k, const host& x, const conv_params& p, bool depthwise) {
    const std::int64_t KW = k.ne[0], KH = k.ne[1], W = x.ne[0], H = x.ne[1], C = x.ne[2], N = x.ne[3];
    const std::int64_t OC = depthwise ? C : k.ne[3], IC = depthwise ? 1 : C;
    const std::int64_t OW = conv_out(W, KW, p.s[0], p.p[0], p.d[0]), OH = conv_out(H, KH, p.s[1], p.p[1], p.d[1]);
    host o = host::zeros({OW, OH, OC, N});
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t oc = 0; oc < OC; ++oc)
            for (std::int64_t oy = 0; oy < OH; ++oy)
                for (std::int64_t ox = 0; ox < OW; ++ox) {
                    double s = 0;
                    for (std::int64_t ic = 0; ic < IC; ++ic)
                        for (std::int64_t ky = 0; ky < KH; ++ky)
                            for (std::int64_t kx = 0; kx < KW; ++kx) {
                                const std::int64_t ix = ox * p.s[0] + kx * p.d[0] - p.p[0], iy = oy * p.s[1] + ky * p.d[1] - p.p[1];
                                if (ix < 0 || ix >= W || iy < 0 || iy >= H) continue;
                                s += k.at(kx, ky, depthwise ? 0 : ic, oc) * x.at(ix, iy, depthwise ? oc : ic, n);
                            }
                    o.at(ox, oy, oc, n) = s;
                }
    return o;
}
}  // namespace

TEST_CASE("conv ops: im2col 1-D and 2-D, f32/f16 output, strides, padding, dilation, strided input") {
    for (const auto& c : conv2_cases)
        for (type_id ti : {type_id::f32, type_id::f16})
            for (type_id td : {type_id::f32, type_id::f16})
                for (bool tr : {false, true}) {
                    const std::int64_t OW = conv_out(c.W, c.KW, c.p.s[0], c.p.p[0], c.p.d[0]);
                    const std::int64_t OH = conv_out(c.H, c.KH, c.p.s[1], c.p.p[1], c.p.d[1]);
                    check("im2col 2d " + tn(ti) + " -> " + tn(td) + " k" + std::to_string(c.KW) + "x" + std::to_string(c.KH) + " in " +
                              sh({c.W, c.H, c.IC, c.N}) + (tr ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* k = ctx.new_tensor(type_id::f16, {c.KW, c.KH, c.IC, c.OC});
                              node* x = input(ctx, ti, {c.W, c.H, c.IC, c.N}, tr);
                              b.out = im2col(any_tensor(k), any_tensor(x), c.p, td).get();
                              b.inputs = {x};
                              b.max_nmse = 0;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros({c.IC * c.KH * c.KW, OW, OH, c.N});
                              for (std::int64_t n = 0; n < c.N; ++n)
                                  for (std::int64_t oy = 0; oy < OH; ++oy)
                                      for (std::int64_t ox = 0; ox < OW; ++ox)
                                          for (std::int64_t ic = 0; ic < c.IC; ++ic)
                                              for (std::int64_t ky = 0; ky < c.KH; ++ky)
                                                  for (std::int64_t kx = 0; kx < c.KW; ++kx) {
                                                      const std::int64_t ix = ox * c.p.s[0] + kx * c.p.d[0] - c.p.p[0];
                                                      const std::int64_t iy = oy * c.p.s[1] + ky * c.p.d[1] - c.p.p[1];
                                                      if (ix >= 0 && ix < c.W && iy >= 0 && iy < c.H)
                                                          o.at((ic * c.KH + ky) * c.KW + kx, ox, oy, n) = in[0].at(ix, iy, ic, n);
                                                  }
                              return o;
                          });
                }
    struct c1 {
        std::int64_t K, IC, L, N;
        int s, p, d;
    };
    for (const c1 c : {c1{3, 2, 11, 1, 1, 0, 1}, c1{5, 3, 20, 2, 2, 2, 1}, c1{3, 1, 9, 3, 1, 1, 2}, c1{1, 4, 6, 1, 3, 0, 1}})
        for (type_id td : {type_id::f32, type_id::f16})
            for (bool tr : {false, true}) {
                const std::int64_t OL = conv_out(c.L, c.K, c.s, c.p, c.d);
                check("im2col 1d -> " + tn(td) + " K" + std::to_string(c.K) + " in " + sh({c.L, c.IC, c.N, 1}) + (tr ? " strided" : ""),
                      [&](context& ctx) {
                          built b;
                          node* k = ctx.new_tensor(type_id::f32, {c.K, c.IC, 2, 1});
                          node* x = input(ctx, type_id::f32, {c.L, c.IC, c.N, 1}, tr);
                          b.out = im2col(any_tensor(k), any_tensor(x), conv_params{{c.s, 1}, {c.p, 0}, {c.d, 1}, false}, td).get();
                          b.inputs = {x};
                          b.max_nmse = 0;
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o = host::zeros({c.IC * c.K, OL, c.N, 1});
                          for (std::int64_t n = 0; n < c.N; ++n)
                              for (std::int64_t ol = 0; ol < OL; ++ol)
                                  for (std::int64_t ic = 0; ic < c.IC; ++ic)
                                      for (std::int64_t k = 0; k < c.K; ++k) {
                                          const std::int64_t ix = ol * c.s + k * c.d - c.p;
                                          if (ix >= 0 && ix < c.L) o.at(ic * c.K + k, ol, n) = in[0].at(ix, ic, n);
                                      }
                          return o;
                      });
            }
}

TEST_CASE("conv ops: conv_2d (im2col + mul_mat) and conv_2d_direct against a direct convolution") {
    for (const auto& c : conv2_cases)
        for (type_id tk : {type_id::f32, type_id::f16})
            for (type_id ti : {type_id::f32, type_id::f16})
                for (bool direct : {false, true}) {
                    check(std::string(direct ? "conv_2d_direct " : "conv_2d ") + tn(tk) + " kernel " + sh({c.KW, c.KH, c.IC, c.OC}) + " x " +
                              tn(ti) + sh({c.W, c.H, c.IC, c.N}) + " s" + std::to_string(c.p.s[0]) + std::to_string(c.p.s[1]) + " p" +
                              std::to_string(c.p.p[0]) + std::to_string(c.p.p[1]) + " d" + std::to_string(c.p.d[0]) + std::to_string(c.p.d[1]),
                          [&](context& ctx) {
                              built b;
                              node* k = ctx.new_tensor(tk, {c.KW, c.KH, c.IC, c.OC});
                              node* x = ctx.new_tensor(ti, {c.W, c.H, c.IC, c.N});
                              b.out = (direct ? conv_2d_direct(any_tensor(k), any_tensor(x), c.p) : conv_2d(any_tensor(k), any_tensor(x), c.p)).get();
                              b.inputs = {k, x};
                              // composite with an f16 kernel: the patches are stored as f16 (as in ggml)
                              b.max_nmse = direct ? out_bound(ti) : (tk == type_id::f32 ? 1e-7 : 5e-4);
                              return b;
                          },
                          [&](const std::vector<host>& in) { return conv2d_ref(in[0], in[1], c.p, false); });
                }
    // typed: tensor<float, 4> result of the composite
    check("conv_2d typed", [](context& ctx) {
        built b;
        auto k = tensor<float, 4>(ctx.new_tensor(type_id::f32, {3, 3, 2, 3}));
        auto x = tensor<float, 3>(ctx.new_tensor(type_id::f32, {6, 5, 2, 1}));
        tensor<float, 4> r = conv_2d(k, x, conv_params{{1, 1}, {1, 1}, {1, 1}, true});
        b.out = r.get();
        b.inputs = {k.get(), x.get()};
        return b;
    },
    [](const std::vector<host>& in) { return conv2d_ref(in[0], in[1], conv_params{{1, 1}, {1, 1}, {1, 1}, true}, false); });
}

TEST_CASE("conv ops: conv_1d (im2col + mul_mat) against a direct 1-D convolution, batched") {
    struct c1 {
        std::int64_t K, IC, OC, L, N;
        int s, p, d;
    };
    for (const c1 c : {c1{3, 2, 4, 11, 1, 1, 0, 1}, c1{5, 3, 2, 20, 2, 2, 2, 1}, c1{3, 1, 3, 9, 3, 1, 1, 2}, c1{1, 4, 5, 6, 1, 3, 0, 1}})
        for (type_id tk : {type_id::f32, type_id::f16}) {
            const std::int64_t OL = conv_out(c.L, c.K, c.s, c.p, c.d);
            check("conv_1d " + tn(tk) + " K" + std::to_string(c.K) + " IC" + std::to_string(c.IC) + " OC" + std::to_string(c.OC) + " L" +
                      std::to_string(c.L) + " N" + std::to_string(c.N),
                  [&](context& ctx) {
                      built b;
                      node* k = ctx.new_tensor(tk, {c.K, c.IC, c.OC, 1});
                      node* x = ctx.new_tensor(type_id::f32, {c.L, c.IC, c.N, 1});
                      b.out = conv_1d(any_tensor(k), any_tensor(x), c.s, c.p, c.d).get();
                      b.inputs = {k, x};
                      b.max_nmse = tk == type_id::f32 ? 1e-7 : 5e-4;
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host o = host::zeros({OL, c.OC, c.N, 1});
                      for (std::int64_t n = 0; n < c.N; ++n)
                          for (std::int64_t oc = 0; oc < c.OC; ++oc)
                              for (std::int64_t ol = 0; ol < OL; ++ol) {
                                  double s = 0;
                                  for (std::int64_t ic = 0; ic < c.IC; ++ic)
                                      for (std::int64_t k = 0; k < c.K; ++k) {
                                          const std::int64_t ix = ol * c.s + k * c.d - c.p;
                                          if (ix >= 0 && ix < c.L) s += in[0].at(k, ic, oc) * in[1].at(ix, ic, n);
                                      }
                                  o.at(ol, oc, n) = s;
                              }
                      return o;
                  });
        }
}

TEST_CASE("conv ops: conv_2d_dw (composite and direct, WHCN and channel-contiguous input)") {
    struct dw {
        std::int64_t KW, KH, C, W, H, N;
        conv_params p;
    };
    const dw cases[] = {{3, 3, 4, 9, 8, 1, {{1, 1}, {1, 1}, {1, 1}, true}},
                        {5, 3, 3, 12, 7, 2, {{2, 1}, {2, 1}, {1, 2}, true}},
                        {1, 1, 5, 4, 3, 1, {{1, 1}, {0, 0}, {1, 1}, true}},
                        {3, 2, 2, 7, 9, 3, {{3, 2}, {0, 1}, {2, 1}, true}}};
    for (const auto& c : cases)
        for (type_id tk : {type_id::f32, type_id::f16})
            for (int kind = 0; kind < 3; ++kind) {  // 0 composite, 1 direct, 2 direct on a CWHN input
                check("conv_2d_dw kind " + std::to_string(kind) + " " + tn(tk) + " k" + std::to_string(c.KW) + "x" + std::to_string(c.KH) +
                          " in " + sh({c.W, c.H, c.C, c.N}),
                      [&](context& ctx) {
                          built b;
                          node* k = ctx.new_tensor(tk, {c.KW, c.KH, 1, c.C});
                          node* x;
                          if (kind == 2) {
                              node* leaf = ctx.new_tensor(type_id::f32, {c.C, c.W, c.H, c.N});
                              x = permute(any_tensor(leaf), {2, 0, 1, 3}).get();
                          } else {
                              x = ctx.new_tensor(type_id::f32, {c.W, c.H, c.C, c.N});
                          }
                          node* r = (kind == 0 ? conv_2d_dw(any_tensor(k), any_tensor(x), c.p) : conv_2d_dw_direct(any_tensor(k), any_tensor(x), c.p)).get();
                          if (kind == 2) CHECK(r->lay.nb[2] == 4);  // channels stay contiguous
                          b.out = r;
                          b.inputs = {k, x};
                          b.max_nmse = (kind == 0 && tk == type_id::f16) ? 5e-4 : 1e-7;
                          return b;
                      },
                      [&](const std::vector<host>& in) { return conv2d_ref(in[0], in[1], c.p, true); });
            }
}

TEST_CASE("conv ops: conv_transpose_1d against the scatter definition") {
    struct ct {
        std::int64_t K, OC, IC, L;
        int s;
    };
    for (const ct c : {ct{3, 2, 4, 5, 1}, ct{4, 3, 2, 7, 2}, ct{2, 1, 3, 6, 3}, ct{5, 2, 2, 3, 4}, ct{1, 3, 3, 4, 2}})
        for (type_id tk : {type_id::f32, type_id::f16})
            for (bool tr : {false, true})
                check("conv_transpose_1d " + tn(tk) + " K" + std::to_string(c.K) + " OC" + std::to_string(c.OC) + " IC" + std::to_string(c.IC) +
                          " L" + std::to_string(c.L) + " s" + std::to_string(c.s) + (tr ? " strided" : ""),
                      [&](context& ctx) {
                          built b;
                          node* k = ctx.new_tensor(tk, {c.K, c.OC, c.IC, 1});
                          node* x = input(ctx, type_id::f32, {c.L, c.IC, 1, 1}, tr);
                          b.out = conv_transpose_1d(any_tensor(k), any_tensor(x), c.s).get();
                          b.inputs = {k, x};
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          // every input sample l scatters the kernel into out[l*s + k]
                          host o = host::zeros({(c.L - 1) * c.s + c.K, c.OC, 1, 1});
                          for (std::int64_t l = 0; l < c.L; ++l)
                              for (std::int64_t ic = 0; ic < c.IC; ++ic)
                                  for (std::int64_t oc = 0; oc < c.OC; ++oc)
                                      for (std::int64_t k = 0; k < c.K; ++k) o.at(l * c.s + k, oc) += in[0].at(k, oc, ic) * in[1].at(l, ic);
                          return o;
                      });
}

TEST_CASE("conv ops: conv_transpose_2d_p0 against the scatter definition") {
    struct ct {
        std::int64_t KW, KH, OC, IC, W, H, N;
        int s;
    };
    for (const ct c : {ct{3, 3, 2, 4, 5, 4, 1, 1}, ct{4, 2, 3, 2, 3, 5, 2, 2}, ct{2, 2, 1, 3, 6, 3, 1, 3}, ct{1, 3, 2, 2, 4, 4, 1, 2}})
        for (type_id tk : {type_id::f32, type_id::f16})
            check("conv_transpose_2d " + tn(tk) + " k" + std::to_string(c.KW) + "x" + std::to_string(c.KH) + " OC" + std::to_string(c.OC) +
                      " in " + sh({c.W, c.H, c.IC, c.N}) + " s" + std::to_string(c.s),
                  [&](context& ctx) {
                      built b;
                      node* k = ctx.new_tensor(tk, {c.KW, c.KH, c.OC, c.IC});
                      node* x = ctx.new_tensor(type_id::f32, {c.W, c.H, c.IC, c.N});
                      b.out = conv_transpose_2d_p0(any_tensor(k), any_tensor(x), c.s).get();
                      b.inputs = {k, x};
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host o = host::zeros({(c.W - 1) * c.s + c.KW, (c.H - 1) * c.s + c.KH, c.OC, c.N});
                      for (std::int64_t n = 0; n < c.N; ++n)
                          for (std::int64_t ic = 0; ic < c.IC; ++ic)
                              for (std::int64_t iy = 0; iy < c.H; ++iy)
                                  for (std::int64_t ix = 0; ix < c.W; ++ix)
                                      for (std::int64_t oc = 0; oc < c.OC; ++oc)
                                          for (std::int64_t ky = 0; ky < c.KH; ++ky)
                                              for (std::int64_t kx = 0; kx < c.KW; ++kx)
                                                  o.at(ix * c.s + kx, iy * c.s + ky, oc, n) += in[0].at(kx, ky, oc, ic) * in[1].at(ix, iy, ic, n);
                      return o;
                  });
}

// ---- pooling ------------------------------------------------------------------------------------

TEST_CASE("conv ops: pool_1d and pool_2d, max and avg, strides and padding") {
    struct p1 {
        int k, s, p;
    };
    for (ne4 s : {ne4{10, 3, 2, 1}, ne4{7, 4, 1, 2}})
        for (const p1 c : {p1{1, 1, 0}, p1{2, 2, 0}, p1{3, 2, 1}, p1{3, 1, 2}, p1{2, 3, 1}, p1{3, 3, 0}, p1{2, 1, 3}})
            for (pool_op op : {pool_op::max, pool_op::avg})
                for (type_id t : {type_id::f32, type_id::f16})
                    for (bool tr : {false, true}) {
                        if (op == pool_op::max && c.p >= c.k) continue;  // a window wholly in the padding gives -FLT_MAX
                        const std::int64_t o0 = (s[0] + 2 * c.p - c.k) / c.s + 1;
                        check("pool_1d " + std::string(op == pool_op::max ? "max " : "avg ") + tn(t) + sh(s) + " k" + std::to_string(c.k) +
                                  " s" + std::to_string(c.s) + " p" + std::to_string(c.p) + (tr ? " strided" : ""),
                              [&](context& ctx) {
                                  built b;
                                  node* x = input(ctx, t, s, tr);
                                  b.out = pool_1d(any_tensor(x), {op, {c.k, 1}, {c.s, 1}, {c.p, 0}}).get();
                                  b.inputs = {x};
                                  return b;
                              },
                              [&](const std::vector<host>& in) {
                                  // avg over the taps that fall inside the row (ggml's pool_1d)
                                  return map_out({o0, s[1], s[2], s[3]}, [&](std::int64_t o, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
                                      double m = -std::numeric_limits<double>::infinity(), sum = 0;
                                      int n = 0;
                                      for (int k = 0; k < c.k; ++k) {
                                          const std::int64_t x = o * c.s - c.p + k;
                                          if (x < 0 || x >= s[0]) continue;
                                          m = std::max(m, in[0].at(x, i1, i2, i3));
                                          sum += in[0].at(x, i1, i2, i3);
                                          ++n;
                                      }
                                      return op == pool_op::max ? m : (n ? sum / n : 0.0);
                                  });
                              });
                    }
    struct p2 {
        int k0, k1, s0, s1, p0, p1;
    };
    for (ne4 s : {ne4{10, 9, 3, 1}, ne4{7, 7, 2, 2}})
        for (const p2 c : {p2{1, 1, 1, 1, 0, 0}, p2{3, 3, 1, 1, 1, 1}, p2{2, 3, 2, 1, 1, 0}, p2{3, 3, 2, 2, 0, 1}, p2{2, 2, 2, 2, 0, 0}})
            for (pool_op op : {pool_op::max, pool_op::avg})
                for (type_id t : {type_id::f32, type_id::f16})
                    for (bool tr : {false, true}) {
                        const std::int64_t o0 = (s[0] + 2 * c.p0 - c.k0) / c.s0 + 1, o1 = (s[1] + 2 * c.p1 - c.k1) / c.s1 + 1;
                        check("pool_2d " + std::string(op == pool_op::max ? "max " : "avg ") + tn(t) + sh(s) + " k" + std::to_string(c.k0) +
                                  std::to_string(c.k1) + " s" + std::to_string(c.s0) + std::to_string(c.s1) + " p" + std::to_string(c.p0) +
                                  std::to_string(c.p1) + (tr ? " strided" : ""),
                              [&](context& ctx) {
                                  built b;
                                  node* x = input(ctx, t, s, tr);
                                  b.out = pool_2d(any_tensor(x), {op, {c.k0, c.k1}, {c.s0, c.s1}, {c.p0, c.p1}}).get();
                                  b.inputs = {x};
                                  return b;
                              },
                              [&](const std::vector<host>& in) {
                                  // avg divides by the whole window k0*k1, padding included (ggml's pool_2d)
                                  return map_out({o0, o1, s[2], s[3]}, [&](std::int64_t ox, std::int64_t oy, std::int64_t i2, std::int64_t i3) {
                                      double m = -std::numeric_limits<double>::infinity(), sum = 0;
                                      for (int ky = 0; ky < c.k1; ++ky)
                                          for (int kx = 0; kx < c.k0; ++kx) {
                                              const std::int64_t x = ox * c.s0 - c.p0 + kx, y = oy * c.s1 - c.p1 + ky;
                                              if (x < 0 || x >= s[0] || y < 0 || y >= s[1]) continue;
                                              m = std::max(m, in[0].at(x, y, i2, i3));
                                              sum += in[0].at(x, y, i2, i3);
                                          }
                                      return op == pool_op::max ? m : sum / (c.k0 * c.k1);
                                  });
                              });
                    }
}

// ---- bad input ----------------------------------------------------------------------------------

TEST_CASE("image ops: bad input gives a tessera::error naming the op") {
    context ctx({.no_alloc = true});
    any_tensor x(ctx.new_tensor(type_id::f32, {6, 5, 3, 1}));
    any_tensor i(ctx.new_tensor(type_id::i32, {6, 5, 1, 1}));
    pad_params neg;
    neg.left = {-1, 0, 0, 0};
    expect_error([&] { (void)pad_ext(x, neg); }, "pad");
    expect_error([&] { (void)pad(x, 0, -2); }, "must be >= 0");
    pad_params wide;
    wide.right = {7, 0, 0, 0};
    wide.circular = true;
    expect_error([&] { (void)pad_ext(x, wide); }, "circular");
    expect_error([&] { (void)pad(i, 1); }, "pad");
    expect_error([&] { (void)pad(tensor<float, 2>(ctx.new_tensor(type_id::f32, {2, 2, 1, 1})), 1, 1, 1); }, "rank");
    expect_error([&] { (void)pad_reflect_1d(x, 6, 0); }, "pad_reflect_1d");
    expect_error([&] { (void)pad_reflect_1d(x, -1, 0); }, "pad_reflect_1d");
    expect_error([&] { (void)roll(x, 6); }, "roll");
    expect_error([&] { (void)arange(ctx, 5.f, 1.f, 1.f); }, "arange");
    expect_error([&] { (void)arange(ctx, 0.f, 1.f, 0.f); }, "arange");
    expect_error([&] { (void)timestep_embedding(x, 8); }, "timestep_embedding");
    expect_error([&] { (void)interpolate(x, {0, 5, 3, 1}); }, "upscale");
    expect_error([&] { (void)upscale(x, 0); }, "upscale");
    expect_error([&] { (void)win_part(any_tensor(ctx.new_tensor(type_id::f32, {3, 4, 4, 2})), 2); }, "win_part");
    expect_error([&] { (void)win_part(x, 0); }, "win_part");
    expect_error([&] { (void)win_unpart(any_tensor(ctx.new_tensor(type_id::f32, {3, 3, 3, 5})), 7, 5, 3); }, "win_unpart");
    expect_error([&] { (void)get_rel_pos(any_tensor(ctx.new_tensor(type_id::f16, {4, 9, 1, 1})), 5, 0); }, "get_rel_pos");
    expect_error([&] { (void)get_rel_pos(any_tensor(ctx.new_tensor(type_id::f16, {4, 8, 1, 1})), 5, 5); }, "get_rel_pos");
    any_tensor sc(ctx.new_tensor(type_id::f32, {16, 6, 2, 1}));
    any_tensor pw(ctx.new_tensor(type_id::f32, {4, 3, 2, 2}));
    expect_error([&] { (void)add_rel_pos(sc, pw, any_tensor(ctx.new_tensor(type_id::f32, {4, 2, 3, 2}))); }, "add_rel_pos");
    expect_error([&] { (void)add_rel_pos(x, pw, pw); }, "add_rel_pos");

    // antialias is a bilinear filter
    any_tensor y(ctx.new_tensor(type_id::f32, {4, 4, 1, 1}));
    expect_error([&] { (void)interpolate(y, {8, 8, 1, 1}, upscale_params{scale_mode::bicubic, false, true}); }, "antialias");
}

TEST_CASE("conv ops: bad input gives a tessera::error naming the op") {
    context ctx({.no_alloc = true});
    any_tensor k(ctx.new_tensor(type_id::f32, {3, 3, 2, 4}));
    any_tensor x(ctx.new_tensor(type_id::f32, {9, 7, 3, 1}));   // 3 channels: mismatch
    any_tensor x2(ctx.new_tensor(type_id::f32, {9, 7, 2, 1}));  // 2 channels
    expect_error([&] { (void)im2col(k, x, conv_params{}); }, "im2col");
    expect_error([&] { (void)conv_2d(k, x); }, "channels");
    expect_error([&] { (void)conv_2d_direct(k, x); }, "conv_2d");
    expect_error([&] { (void)im2col(k, x2, conv_params{}, type_id::bf16); }, "output type");
    expect_error([&] { (void)conv_2d(k, x2, conv_params{{0, 1}, {0, 0}, {1, 1}, true}); }, "stride");
    expect_error([&] { (void)conv_2d(k, x2, conv_params{{1, 1}, {-1, 0}, {1, 1}, true}); }, "padding");
    expect_error([&] { (void)conv_2d(k, x2, conv_params{{1, 1}, {0, 0}, {0, 1}, true}); }, "dilation");
    expect_error([&] { (void)conv_2d(k, x2, conv_params{{1, 1}, {0, 0}, {5, 1}, true}); }, "does not fit");
    expect_error([&] { (void)conv_2d(any_tensor(ctx.new_tensor(type_id::i32, {3, 3, 2, 4})), x2); }, "conv_2d");
    any_tensor k1(ctx.new_tensor(type_id::f32, {3, 2, 4, 1}));
    expect_error([&] { (void)conv_1d(k1, any_tensor(ctx.new_tensor(type_id::f32, {10, 3, 1, 1}))); }, "channels");
    expect_error([&] { (void)conv_1d(k1, any_tensor(ctx.new_tensor(type_id::f32, {2, 2, 1, 1}))); }, "does not fit");
    any_tensor kd(ctx.new_tensor(type_id::f32, {3, 3, 1, 4}));
    expect_error([&] { (void)conv_2d_dw(kd, x2); }, "conv_2d_dw");
    expect_error([&] { (void)conv_2d_dw_direct(kd, x2); }, "conv_2d_dw");
    any_tensor kt(ctx.new_tensor(type_id::f32, {3, 2, 4, 1}));
    any_tensor xt(ctx.new_tensor(type_id::f32, {5, 4, 1, 1}));
    expect_error([&] { (void)conv_transpose_1d(kt, xt, 1, 1); }, "conv_transpose_1d");
    expect_error([&] { (void)conv_transpose_1d(kt, xt, 1, 0, 2); }, "dilation");
    expect_error([&] { (void)conv_transpose_1d(kt, any_tensor(ctx.new_tensor(type_id::f32, {5, 3, 1, 1})), 1); }, "conv_transpose_1d");
    expect_error([&] { (void)conv_transpose_1d(kt, xt, 0); }, "stride");
    expect_error([&] { (void)conv_transpose_2d_p0(k, x2, 1); }, "conv_transpose_2d");
    expect_error([&] { (void)conv_transpose_2d_p0(any_tensor(ctx.new_tensor(type_id::f32, {3, 3, 4, 2})), x2, 0); }, "stride");
    expect_error([&] { (void)pool_1d(x, {pool_op::max, {0, 1}, {1, 1}}); }, "pool_1d");
    expect_error([&] { (void)pool_1d(x, {pool_op::avg, {12, 1}, {1, 1}}); }, "pool_1d");
    expect_error([&] { (void)pool_1d(x, {pool_op::avg, {2, 1}, {1, 1}, {-1, 0}}); }, "padding");
    expect_error([&] { (void)pool_2d(x, {pool_op::max, {3, 9}, {1, 1}}); }, "pool_2d");
    expect_error([&] { (void)pool_2d(x, {pool_op::avg, {3, 3}, {0, 1}}); }, "pool_2d");
}
