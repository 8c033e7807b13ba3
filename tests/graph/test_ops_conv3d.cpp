// col2im_1d, im2col_3d, conv_3d (direct and as im2col_3d + mul_mat) against
// double-precision references written from their definitions (harness.hpp: every arch,
// 1 and 2 threads, float types, views), and their errors for bad shapes.
#include <doctest/doctest.h>

#include <algorithm>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

TEST_CASE("conv3d ops: col2im_1d scatter-adds GEMM columns (stride, padding, channels, long signals), float types") {
    struct cc {
        std::int64_t K, OC, T_in;
        int s, p;
    };
    for (cc c : {cc{4, 3, 5, 2, 1}, cc{3, 1, 40, 1, 1}, cc{1, 2, 7, 3, 0}, cc{7, 2, 300, 2, 3}, cc{2, 5, 1, 1, 0}, cc{6, 1, 9, 4, 2}})
        for (type_id t : float_types)
            for (bool via_gemm : {false, true}) {  // a leaf, or the result of mul_mat (as conv_transpose_1d builds it)
                if (via_gemm && t != type_id::f32) continue;
                const std::int64_t T_out = (c.T_in - 1) * c.s + c.K - 2 * c.p;
                check("col2im_1d " + tn(t) + " K " + std::to_string(c.K) + " OC " + std::to_string(c.OC) + " T_in " + std::to_string(c.T_in) +
                          " s " + std::to_string(c.s) + " p " + std::to_string(c.p) + (via_gemm ? " after mul_mat" : ""),
                      [&](context& ctx) {
                          built b;
                          node* cols = ctx.new_tensor(t, {c.K * c.OC, c.T_in, 1, 1});
                          b.inputs = {cols};
                          if (via_gemm) {  // w [IC, K*OC] x x^T [IC, T_in]
                              node* w = ctx.new_tensor(type_id::f32, {3, c.K * c.OC, 1, 1});
                              node* x = ctx.new_tensor(type_id::f32, {3, c.T_in, 1, 1});
                              cols = mul_mat(any_tensor(w), any_tensor(x)).get();
                              b.inputs = {w, x};
                          }
                          b.out = col2im_1d(any_tensor(cols), c.s, c.OC, c.p).get();
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host cols = in[0];
                          if (via_gemm) {
                              cols = host::zeros({c.K * c.OC, c.T_in, 1, 1});
                              for (std::int64_t ti = 0; ti < c.T_in; ++ti)
                                  for (std::int64_t m = 0; m < c.K * c.OC; ++m)
                                      for (std::int64_t i = 0; i < 3; ++i) cols.at(m, ti) += in[0].at(i, m) * in[1].at(i, ti);
                          }
                          host o = host::zeros({T_out, c.OC, 1, 1});
                          for (std::int64_t ti = 0; ti < c.T_in; ++ti)
                              for (std::int64_t oc = 0; oc < c.OC; ++oc)
                                  for (std::int64_t k = 0; k < c.K; ++k) {
                                      const std::int64_t pos = ti * c.s + k - c.p;
                                      if (pos >= 0 && pos < T_out) o.at(pos, oc) += cols.at(oc * c.K + k, ti);
                                  }
                          return o;
                      });
            }
}

namespace {
struct c3 {
    ne4 in;  // [W, H, D, IC*N]
    std::int64_t KW, KH, KD, IC, OC;
    conv3d_params p;
};
const c3 conv3d_cases[] = {
    {{7, 6, 5, 3}, 3, 2, 3, 3, 4, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 3}},  // N 1
    {{8, 7, 6, 6}, 3, 3, 2, 3, 2, {{2, 1, 2}, {1, 0, 1}, {1, 2, 1}, 3}},  // N 2, strides, padding, dilation
    {{5, 5, 5, 2}, 1, 1, 1, 1, 3, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1}},  // 1x1x1, N 2
    {{9, 4, 6, 2}, 2, 3, 3, 2, 1, {{3, 2, 1}, {2, 1, 2}, {2, 1, 2}, 2}},
    {{62, 3, 2, 64}, 3, 3, 2, 64, 2, {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 64}},  // long patches: the direct op's x chunks
};
std::string c3_name(const c3& c) {
    return "in " + sh(c.in) + " k " + std::to_string(c.KW) + "x" + std::to_string(c.KH) + "x" + std::to_string(c.KD) + " IC " + std::to_string(c.IC) +
           " OC " + std::to_string(c.OC) + " s " + std::to_string(c.p.s[0]) + std::to_string(c.p.s[1]) + std::to_string(c.p.s[2]) + " p " +
           std::to_string(c.p.p[0]) + std::to_string(c.p.p[1]) + std::to_string(c.p.p[2]) + " d " + std::to_string(c.p.d[0]) +
           std::to_string(c.p.d[1]) + std::to_string(c.p.d[2]);
}
std::int64_t out_extent(std::int64_t in, std::int64_t k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }
}  // namespace

TEST_CASE("conv3d ops: im2col_3d gathers the kernel windows (stride, padding, dilation, batch), f32/f16 output, views") {
    for (const c3& c : conv3d_cases)
        for (type_id t : float_types)
            for (type_id dst : {type_id::f32, type_id::f16})
                for (bool strided : {false, true}) {
                    const std::int64_t OW = out_extent(c.in[0], c.KW, c.p.s[0], c.p.p[0], c.p.d[0]);
                    const std::int64_t OH = out_extent(c.in[1], c.KH, c.p.s[1], c.p.p[1], c.p.d[1]);
                    const std::int64_t OD = out_extent(c.in[2], c.KD, c.p.s[2], c.p.p[2], c.p.d[2]);
                    const std::int64_t N = c.in[3] / c.IC;
                    check("im2col_3d " + tn(t) + " -> " + tn(dst) + " " + c3_name(c) + (strided ? " strided" : ""),
                          [&](context& ctx) {
                              built b;
                              node* k = ctx.new_tensor(type_id::f16, {c.KW, c.KH, c.KD, c.IC * c.OC});
                              node* x = strided_input(ctx, t, c.in, strided);
                              b.out = im2col_3d(any_tensor(k), any_tensor(x), c.p, dst).get();
                              b.inputs = {x};
                              b.max_nmse = 0;  // copies (rounded to dst's type)
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              const std::int64_t E = c.IC * c.KD * c.KH * c.KW;
                              host o = host::zeros({E, OW, OH, OD * N});
                              for (std::int64_t n = 0; n < N; ++n)
                                  for (std::int64_t od = 0; od < OD; ++od)
                                      for (std::int64_t oh = 0; oh < OH; ++oh)
                                          for (std::int64_t ow = 0; ow < OW; ++ow)
                                              for (std::int64_t ic = 0; ic < c.IC; ++ic)
                                                  for (std::int64_t kd = 0; kd < c.KD; ++kd)
                                                      for (std::int64_t kh = 0; kh < c.KH; ++kh)
                                                          for (std::int64_t kw = 0; kw < c.KW; ++kw) {
                                                              const std::int64_t x = ow * c.p.s[0] + kw * c.p.d[0] - c.p.p[0];
                                                              const std::int64_t y = oh * c.p.s[1] + kh * c.p.d[1] - c.p.p[1];
                                                              const std::int64_t z = od * c.p.s[2] + kd * c.p.d[2] - c.p.p[2];
                                                              if (x < 0 || x >= c.in[0] || y < 0 || y >= c.in[1] || z < 0 || z >= c.in[2]) continue;
                                                              o.at(((ic * c.KD + kd) * c.KH + kh) * c.KW + kw, ow, oh, n * OD + od) =
                                                                  in[0].at(x, y, z, n * c.IC + ic);
                                                          }
                              return o;
                          });
                }
}

TEST_CASE("conv3d ops: conv_3d direct and as im2col_3d + mul_mat (batch, channels, stride, padding, dilation)") {
    for (const c3& c : conv3d_cases)
        for (type_id tk : {type_id::f32, type_id::f16})
            for (type_id t : {type_id::f32, type_id::bf16})
                for (int variant : {0, 1, 2}) {  // direct, direct with a strided kernel, im2col_3d + mul_mat
                    const bool direct = variant < 2, strided_k = variant == 1;
                    if (strided_k && tk != type_id::f32) continue;
                    const std::int64_t OW = out_extent(c.in[0], c.KW, c.p.s[0], c.p.p[0], c.p.d[0]);
                    const std::int64_t OH = out_extent(c.in[1], c.KH, c.p.s[1], c.p.p[1], c.p.d[1]);
                    const std::int64_t OD = out_extent(c.in[2], c.KD, c.p.s[2], c.p.p[2], c.p.d[2]);
                    const std::int64_t N = c.in[3] / c.IC;
                    check(std::string(direct ? "conv_3d_direct " : "conv_3d (im2col_3d + mul_mat) ") + tn(tk) + (strided_k ? " strided" : "") +
                              " kernel, " + tn(t) + " input " + c3_name(c),
                          [&](context& ctx) {
                              built b;
                              node* k = strided_input(ctx, tk, {c.KW, c.KH, c.KD, c.IC * c.OC}, strided_k);
                              node* x = ctx.new_tensor(t, c.in);
                              b.out = (direct ? conv_3d_direct(any_tensor(k), any_tensor(x), c.p) : conv_3d(any_tensor(k), any_tensor(x), c.p)).get();
                              b.inputs = {k, x};
                              // the composite rounds the windows to the kernel's type (f16): test-backend-ops' bound
                              b.max_nmse = !direct && tk == type_id::f16 ? 5e-4 : 1e-7;
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = host::zeros({OW, OH, OD, c.OC * N});
                              for (std::int64_t n = 0; n < N; ++n)
                                  for (std::int64_t oc = 0; oc < c.OC; ++oc)
                                      for (std::int64_t od = 0; od < OD; ++od)
                                          for (std::int64_t oh = 0; oh < OH; ++oh)
                                              for (std::int64_t ow = 0; ow < OW; ++ow) {
                                                  double acc = 0;
                                                  for (std::int64_t ic = 0; ic < c.IC; ++ic)
                                                      for (std::int64_t kd = 0; kd < c.KD; ++kd)
                                                          for (std::int64_t kh = 0; kh < c.KH; ++kh)
                                                              for (std::int64_t kw = 0; kw < c.KW; ++kw) {
                                                                  const std::int64_t x = ow * c.p.s[0] + kw * c.p.d[0] - c.p.p[0];
                                                                  const std::int64_t y = oh * c.p.s[1] + kh * c.p.d[1] - c.p.p[1];
                                                                  const std::int64_t z = od * c.p.s[2] + kd * c.p.d[2] - c.p.p[2];
                                                                  if (x < 0 || x >= c.in[0] || y < 0 || y >= c.in[1] || z < 0 || z >= c.in[2]) continue;
                                                                  acc += in[0].at(kw, kh, kd, oc * c.IC + ic) * in[1].at(x, y, z, n * c.IC + ic);
                                                              }
                                                  o.at(ow, oh, od, n * c.OC + oc) = acc;
                                              }
                              return o;
                          });
                }
}

TEST_CASE("conv3d ops: bad shapes and parameters give a tessera::error naming the op") {
    context ctx({.no_alloc = true});
    auto t = [&](type_id ty, ne4 ne) { return any_tensor(ctx.new_tensor(ty, ne)); };
    const auto f = type_id::f32;
    CHECK_THROWS_WITH_AS(col2im_1d(t(f, {7, 5, 1, 1}), 1, 3, 0), doctest::Contains("col2im_1d: a"), tessera::error);
    CHECK_THROWS_WITH_AS(col2im_1d(t(f, {6, 1, 1, 1}), 1, 3, 2), doctest::Contains("leaves no output"), tessera::error);
    CHECK_THROWS_WITH_AS(col2im_1d(transpose(t(f, {6, 4, 1, 1})), 1, 3, 0), doctest::Contains("contiguous"), tessera::error);
    CHECK_THROWS_WITH_AS(col2im_1d(t(type_id::i32, {6, 4, 1, 1}), 1, 3, 0), doctest::Contains("f32, f16 or bf16"), tessera::error);
    const conv3d_params p{{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 2};
    CHECK_THROWS_WITH_AS(im2col_3d(t(f, {3, 3, 3, 4}), t(f, {5, 5, 5, 3}), p), doctest::Contains("im2col_3d: input"), tessera::error);
    CHECK_THROWS_WITH_AS(im2col_3d(t(f, {3, 3, 6, 4}), t(f, {5, 5, 5, 2}), p), doctest::Contains("does not fit"), tessera::error);
    CHECK_THROWS_WITH_AS(im2col_3d(t(f, {3, 3, 3, 4}), t(f, {5, 5, 5, 2}), p, type_id::bf16), doctest::Contains("output type"), tessera::error);
    CHECK_THROWS_WITH_AS(conv_3d_direct(t(f, {3, 3, 3, 5}), t(f, {5, 5, 5, 2}), p), doctest::Contains("conv_3d: kernel"), tessera::error);
    CHECK_THROWS_WITH_AS(conv_3d_direct(t(f, {3, 3, 3, 4}), t(f, {5, 5, 5, 2}), {{1, 0, 1}, {0, 0, 0}, {1, 1, 1}, 2}),
                         doctest::Contains("stride"), tessera::error);
    CHECK_THROWS_WITH_AS(conv_3d(t(f, {3, 3, 3, 4}), t(f, {5, 5, 5, 2}), {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 0}), doctest::Contains("IC"), tessera::error);
    tensor<float, 4> typed = conv_3d(new_tensor<f16, 4>(ctx, {3, 3, 3, 4}), new_tensor<float, 4>(ctx, {5, 5, 5, 4}), p);
    CHECK(typed.lay().ne == ne4{3, 3, 3, 4});  // OC 2, N 2
}
