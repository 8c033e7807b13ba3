// mul_mat, rope, soft_max, flash_attn_ext, get_rows, set_rows, copies, masks, repeat
// and concat against double-precision references (harness.hpp), every arch, 1 and 2
// threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness.hpp"

using namespace harness;
using ne4 = std::array<std::int64_t, 4>;

namespace {
double alibi(double max_bias, std::int64_t h, std::int64_t n_head) {
    if (max_bias <= 0) return 1;
    std::int64_t n_log2 = 1;
    while (n_log2 * 2 <= n_head) n_log2 *= 2;
    const double m0 = std::pow(2.0, -max_bias / static_cast<double>(n_log2));
    const double m1 = std::pow(2.0, -(max_bias / 2) / static_cast<double>(n_log2));
    return h < n_log2 ? std::pow(m0, static_cast<double>(h + 1)) : std::pow(m1, static_cast<double>(2 * (h - n_log2) + 1));
}
constexpr double neg_inf = -std::numeric_limits<double>::infinity();

// flash_attn_ext from its definition, in double: q [Dk, n_q, H, ne3], k [Dk, n_kv, Hkv, ne3],
// v [Dv, n_kv, Hkv, ne3], mask [n_kv, >= n_q, m2, m3] (or null), sinks [H] (or null) ->
// [Dv, H, n_q, ne3]. A query whose logits are all -inf (and has no sink) gives zeros.
host flash_attn_reference(const host& Q, const host& K, const host& V, const host* M, const host* S, double scale,
                          double max_bias, double softcap) {
    const std::int64_t Dk = Q.ne[0], n_q = Q.ne[1], H = Q.ne[2], ne3 = Q.ne[3], n_kv = K.ne[1], Hkv = K.ne[2], Dv = V.ne[0];
    host o = host::zeros({Dv, H, n_q, ne3});
    std::vector<double> s(static_cast<std::size_t>(n_kv));
    for (std::int64_t i3 = 0; i3 < ne3; ++i3)
        for (std::int64_t h = 0; h < H; ++h)
            for (std::int64_t iq = 0; iq < n_q; ++iq) {
                const std::int64_t hk = h / (H / Hkv), k3 = i3 / (ne3 / K.ne[3]);
                double mx = neg_inf;
                for (std::int64_t j = 0; j < n_kv; ++j) {
                    double d = 0;
                    for (std::int64_t e = 0; e < Dk; ++e) d += Q.at(e, iq, h, i3) * K.at(e, j, hk, k3);
                    d *= scale;
                    if (softcap != 0) d = softcap * std::tanh(d / softcap);
                    if (M) d += alibi(max_bias, h, H) * M->at(j, iq, h % M->ne[2], i3 % M->ne[3]);
                    s[static_cast<std::size_t>(j)] = d;
                    mx = std::max(mx, d);
                }
                const double sk = S ? S->v[static_cast<std::size_t>(h)] : neg_inf;
                mx = std::max(mx, sk);
                if (mx == neg_inf) continue;
                double sum = S ? std::exp(sk - mx) : 0.0;
                for (double& x : s) sum += (x = std::exp(x - mx));
                for (std::int64_t e = 0; e < Dv; ++e) {
                    double acc = 0;
                    for (std::int64_t j = 0; j < n_kv; ++j) acc += s[static_cast<std::size_t>(j)] * V.at(e, j, hk, k3);
                    o.at(e, h, iq, i3) = acc / sum;
                }
            }
    return o;
}
}  // namespace

TEST_CASE("ops: mul_mat f32/f16/bf16 weights, odd sizes, K blocking, batch broadcast, strided b") {
    struct mm {
        std::int64_t M, N, K, A2, A3, B2, B3;
        int b_layout;  // 0 packed, 1 permuted batch (rows still packed), 2 transposed (strided k)
    };
    const mm cases[] = {{16, 1, 256, 1, 1, 1, 1, 0},   {16, 9, 256, 1, 1, 1, 1, 0}, {33, 17, 67, 1, 1, 1, 1, 0},
                        {64, 64, 128, 1, 1, 1, 1, 0},  {5, 3, 4100, 1, 1, 1, 1, 0}, {7, 13, 1, 1, 1, 1, 1, 0},
                        {10, 6, 32, 2, 1, 6, 2, 0},    {10, 6, 32, 1, 2, 3, 4, 0},  {12, 7, 48, 3, 1, 3, 1, 1},
                        {9, 5, 40, 1, 1, 1, 1, 2},     {130, 2, 100, 1, 1, 2, 1, 0},
                        // packed GEMM (N >= fgemm_min_cols): panel, KC and MC edges, broadcast, strided b
                        {45, 37, 300, 1, 1, 1, 1, 0},  {600, 33, 520, 1, 1, 1, 1, 0}, {70, 40, 64, 2, 1, 4, 1, 0},
                        {33, 35, 17, 1, 1, 1, 1, 2},   {40, 50, 70, 3, 1, 3, 1, 1}};
    for (const auto& c : cases)
        for (type_id ta : {type_id::f32, type_id::f16, type_id::bf16})
            for (type_id tb : {type_id::f32, type_id::f16}) {
                if (tb == type_id::f16 && (c.b_layout != 0 || ta == type_id::bf16)) continue;
                check("mul_mat " + tn(ta) + " x " + tn(tb) + " M" + std::to_string(c.M) + " N" + std::to_string(c.N) + " K" +
                          std::to_string(c.K) + " batch " + std::to_string(c.A2) + "x" + std::to_string(c.A3) + " -> " +
                          std::to_string(c.B2) + "x" + std::to_string(c.B3) + " layout " + std::to_string(c.b_layout),
                      [&](context& ctx) {
                          built b;
                          node* a = ctx.new_tensor(ta, {c.K, c.M, c.A2, c.A3});
                          node* bb;
                          if (c.b_layout == 1) {
                              node* leaf = ctx.new_tensor(tb, {c.K, c.B2, c.N, c.B3});
                              bb = permute(any_tensor(leaf), {0, 2, 1, 3}).get();
                          } else if (c.b_layout == 2) {
                              node* leaf = ctx.new_tensor(tb, {c.N, c.K, c.B2, c.B3});
                              bb = transpose(any_tensor(leaf)).get();
                          } else {
                              bb = ctx.new_tensor(tb, {c.K, c.N, c.B2, c.B3});
                          }
                          b.out = mul_mat(any_tensor(a), any_tensor(bb)).get();
                          b.inputs = {a, bb};
                          // f32 activations: the 16-bit weights are widened exactly, so only f32
                          // summation error remains (as for f32 weights)
                          b.max_nmse = tb == type_id::f32 ? 1e-7 : 5e-4;
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          const host& A = in[0];
                          const host& B = in[1];
                          host o = host::zeros({c.M, c.N, c.B2, c.B3});
                          for (std::int64_t i3 = 0; i3 < c.B3; ++i3)
                              for (std::int64_t i2 = 0; i2 < c.B2; ++i2)
                                  for (std::int64_t n = 0; n < c.N; ++n)
                                      for (std::int64_t m = 0; m < c.M; ++m) {
                                          double s = 0;
                                          for (std::int64_t k = 0; k < c.K; ++k)
                                              s += A.at(k, m, i2 / (c.B2 / c.A2), i3 / (c.B3 / c.A3)) * B.at(k, n, i2, i3);
                                          o.at(m, n, i2, i3) = s;
                                      }
                          return o;
                      });
            }
}

TEST_CASE("ops: mul_mat f32/f16 weights with strided rows (a permuted view, nb0 > element size)") {
    // a = permute(leaf [X, K, M]) = [K, M, X] with nb0 = X elements: both GEMM paths
    // (few and many columns) must gather the rows rather than read them as contiguous.
    constexpr std::int64_t X = 3, K = 70, M = 37;
    for (std::int64_t N : {5, 40})
        for (type_id ta : {type_id::f32, type_id::f16})
            check("mul_mat strided " + tn(ta) + " weights N" + std::to_string(N),
                  [&](context& ctx) {
                      built b;
                      node* leaf = ctx.new_tensor(ta, {X, K, M, 1});
                      node* bb = ctx.new_tensor(type_id::f32, {K, N, X, 1});
                      any_tensor a = permute(any_tensor(leaf), {2, 0, 1, 3});
                      b.out = mul_mat(a, any_tensor(bb)).get();
                      b.inputs = {leaf, bb};
                      b.max_nmse = ta == type_id::f32 ? 1e-7 : 5e-4;
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host o = host::zeros({M, N, X, 1});
                      for (std::int64_t x = 0; x < X; ++x)
                          for (std::int64_t n = 0; n < N; ++n)
                              for (std::int64_t m = 0; m < M; ++m) {
                                  double s = 0;
                                  for (std::int64_t k = 0; k < K; ++k) s += in[0].at(x, k, m, 0) * in[1].at(k, n, x, 0);
                                  o.at(m, n, x, 0) = s;
                              }
                      return o;
                  });
}

TEST_CASE("ops: rope normal and neox, YaRN parameters, freq factors, partial rotation") {
    for (int mode : {rope_mode_normal, rope_mode_neox})
        for (type_id t : {type_id::f32, type_id::f16})
            for (float fs : {1.f, 1.4245f})
                for (float ext : {0.f, 0.7465f})
                    for (bool ff : {false, true})
                        for (ne4 s : {ne4{128, 4, 5, 1}, ne4{64, 3, 7, 2}})
                            for (int n_dims : {static_cast<int>(s[0]), 32}) {
                                const float attn = ext != 0.f ? 1.4245f : 1.f;
                                rope_params p;
                                p.n_dims = n_dims;
                                p.mode = rope_mode{mode};
                                p.n_ctx_orig = 4096;
                                p.freq_base = 10000.f;
                                p.freq_scale = fs;
                                p.ext_factor = ext;
                                p.attn_factor = attn;
                                check("rope mode " + std::to_string(mode) + " " + tn(t) + sh(s) + " n_dims " + std::to_string(n_dims) +
                                          " fs " + std::to_string(fs) + " ext " + std::to_string(ext) + (ff ? " ff" : ""),
                                      [&](context& ctx) {
                                          built b;
                                          node* x = ctx.new_tensor(t, s);
                                          node* pos = ctx.new_tensor(type_id::i32, {s[2], 1, 1, 1});
                                          node* f = ff ? ctx.new_tensor(type_id::f32, {n_dims / 2, 1, 1, 1}) : nullptr;
                                          b.out = rope_ext(any_tensor(x), any_tensor(pos), any_tensor(f), p).get();
                                          b.inputs = {x, pos};
                                          if (f) {
                                              b.inputs.push_back(f);
                                              b.init.push_back({f, [](node* tt, std::mt19937& rng) {
                                                                    std::uniform_real_distribution<double> d(0.9, 1.1);
                                                                    for (std::int64_t i = 0; i < tt->lay.nelements(); ++i)
                                                                        write_elem(type_id::f32, tt->data + i * 4, d(rng));
                                                                }});
                                          }
                                          b.init.push_back({pos, indices_below(512)});
                                          return b;
                                      },
                                      [&](const std::vector<host>& in) {
                                          host o = in[0];
                                          const double base = 10000.0;
                                          auto corr = [&](double beta) {
                                              return n_dims * std::log(4096.0 / (beta * 2 * M_PI)) / (2 * std::log(base));
                                          };
                                          const double lo = std::max(0.0, std::floor(corr(32.0)));
                                          const double hi = std::min(double(n_dims - 1), std::ceil(corr(1.0)));
                                          for (std::int64_t i3 = 0; i3 < s[3]; ++i3)
                                              for (std::int64_t i2 = 0; i2 < s[2]; ++i2)
                                                  for (std::int64_t i1 = 0; i1 < s[1]; ++i1)
                                                      for (std::int64_t i = 0; i < n_dims / 2; ++i) {
                                                          double te = in[1].v[static_cast<std::size_t>(i2)] * std::pow(base, -2.0 * i / n_dims);
                                                          if (ff) te /= in[2].v[static_cast<std::size_t>(i)];
                                                          double th = fs * te, ms = attn;
                                                          if (ext != 0) {
                                                              const double y = (i - lo) / std::max(0.001, hi - lo);
                                                              const double mix = (1 - std::min(1.0, std::max(0.0, y))) * ext;
                                                              th = fs * te * (1 - mix) + te * mix;
                                                              ms *= 1 + 0.1 * std::log(1.0 / fs);
                                                          }
                                                          const std::int64_t j0 = mode == rope_mode_neox ? i : 2 * i;
                                                          const std::int64_t j1 = mode == rope_mode_neox ? i + n_dims / 2 : 2 * i + 1;
                                                          const double x0 = in[0].at(j0, i1, i2, i3), x1 = in[0].at(j1, i1, i2, i3);
                                                          o.at(j0, i1, i2, i3) = (x0 * std::cos(th) - x1 * std::sin(th)) * ms;
                                                          o.at(j1, i1, i2, i3) = (x0 * std::sin(th) + x1 * std::cos(th)) * ms;
                                                      }
                                          return o;
                                      });
                            }
}

// rope of the multi modes (mrope, imrope, vision) and rope_back, from ggml's definition:
// four angle streams advanced by base^(-2/n_dims) per pair, the stream of pair i picked
// by its sector i % sum(sections); vision resets a stream's angle where its section starts.
host rope_multi_ref(const std::vector<host>& in, const rope_params& p, bool ff, double sin_sign) {
    host o = in[0];
    const auto& s = in[0].ne;
    const int mode = p.mode;
    const bool vision = mode == rope_mode_vision;
    const std::int64_t pairs = vision ? p.n_dims : p.n_dims / 2;
    const int* sec = p.sections.data();
    const int total = sec[0] + sec[1] + sec[2] + sec[3];
    const double scale = std::pow(double(p.freq_base), -2.0 / p.n_dims);
    for (std::int64_t i3 = 0; i3 < s[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < s[2]; ++i2) {
            double base[4];
            for (int st = 0; st < 4; ++st) base[st] = in[1].v[static_cast<std::size_t>(i2 + st * s[2])];
            double th[4] = {base[0], base[1], base[2], base[3]};
            std::vector<double> c(static_cast<std::size_t>(pairs)), sn(static_cast<std::size_t>(pairs));
            for (std::int64_t i = 0; i < pairs; ++i) {
                const int sector = static_cast<int>(i % total);
                if (vision) {
                    if (sector == 0) th[0] = base[0];
                    else if (sector == sec[0]) th[1] = base[1];
                    else if (sector == sec[0] + sec[1]) th[2] = base[2];
                    else if (sector == sec[0] + sec[1] + sec[2]) th[3] = base[3];
                }
                double theta = th[0];
                if (mode == rope_mode_imrope) {
                    if (sector % 3 == 1 && sector < 3 * sec[1]) theta = th[1];
                    else if (sector % 3 == 2 && sector < 3 * sec[2]) theta = th[2];
                    else if (sector % 3 == 0 && sector < 3 * sec[0]) theta = th[0];
                    else theta = th[3];
                } else {
                    if (sector >= sec[0] && sector < sec[0] + sec[1]) theta = th[1];
                    else if (sector >= sec[0] + sec[1] && sector < sec[0] + sec[1] + sec[2]) theta = th[2];
                    else if (sector >= sec[0] + sec[1] + sec[2]) theta = th[3];
                }
                if (ff) theta /= in[2].v[static_cast<std::size_t>(i)];
                c[static_cast<std::size_t>(i)] = std::cos(p.freq_scale * theta) * p.attn_factor;
                sn[static_cast<std::size_t>(i)] = std::sin(p.freq_scale * theta) * p.attn_factor * sin_sign;
                for (double& t : th) t *= scale;
            }
            const std::int64_t off = vision ? p.n_dims : p.n_dims / 2;  // pairs (i, i + off)
            for (std::int64_t i1 = 0; i1 < s[1]; ++i1)
                for (std::int64_t i = 0; i < pairs; ++i) {
                    const double x0 = in[0].at(i, i1, i2, i3), x1 = in[0].at(i + off, i1, i2, i3);
                    const double cc = c[static_cast<std::size_t>(i)], ss = sn[static_cast<std::size_t>(i)];
                    o.at(i, i1, i2, i3) = x0 * cc - x1 * ss;
                    o.at(i + off, i1, i2, i3) = x0 * ss + x1 * cc;
                }
        }
    return o;
}

TEST_CASE("ops: rope multi-section modes (mrope, imrope, vision) and rope_back") {
    struct mcase {
        int mode;
        ne4 s;
        int n_dims;
        std::array<int, 4> sections;
    };
    const mcase cases[] = {
        {rope_mode_mrope, {128, 4, 5, 1}, 128, {16, 24, 24, 0}},   // qwen2-vl
        {rope_mode_mrope, {96, 3, 7, 2}, 64, {8, 12, 8, 4}},       // partial rotation, an e stream
        {rope_mode_imrope, {128, 2, 6, 1}, 128, {24, 20, 20, 0}},  // qwen3-vl
        {rope_mode_vision, {64, 3, 5, 1}, 32, {8, 8, 0, 0}},       // vit: two section cycles per row
        {rope_mode_normal, {64, 3, 5, 1}, 64, {}},                  // rope_back of the plain modes too
        {rope_mode_neox, {80, 2, 4, 1}, 48, {}},
    };
    for (const mcase& mc : cases)
        for (op_kind op : {op_kind::rope, op_kind::rope_back})
            for (type_id t : {type_id::f32, type_id::f16})
                for (bool ff : {false, true}) {
                    if ((mc.mode & rope_mode_mrope) == 0 && op == op_kind::rope) continue;  // covered above
                    rope_params p;
                    p.n_dims = mc.n_dims;
                    p.mode = rope_mode{mc.mode};
                    p.n_ctx_orig = 4096;
                    p.freq_scale = ff ? 0.75f : 1.f;
                    p.attn_factor = ff ? 1.25f : 1.f;
                    p.sections = mc.sections;
                    const bool multi = (mc.mode & rope_mode_mrope) != 0;
                    const std::int64_t pairs = mc.mode == rope_mode_vision ? mc.n_dims : mc.n_dims / 2;
                    check(std::string(op_name(op)) + " mode " + std::to_string(mc.mode) + " " + tn(t) + sh(mc.s) +
                              (ff ? " ff" : ""),
                          [&](context& ctx) {
                              built b;
                              node* x = ctx.new_tensor(t, mc.s);
                              node* pos = ctx.new_tensor(type_id::i32, {mc.s[2] * (multi ? 4 : 1), 1, 1, 1});
                              node* f = ff ? ctx.new_tensor(type_id::f32, {pairs, 1, 1, 1}) : nullptr;
                              b.out = (op == op_kind::rope ? rope_ext(any_tensor(x), any_tensor(pos), any_tensor(f), p)
                                                           : rope_ext_back(any_tensor(x), any_tensor(pos), any_tensor(f), p))
                                          .get();
                              b.inputs = {x, pos};
                              if (f) {
                                  b.inputs.push_back(f);
                                  b.init.push_back({f, [](node* tt, std::mt19937& rng) {
                                                        std::uniform_real_distribution<double> d(0.9, 1.1);
                                                        for (std::int64_t i = 0; i < tt->lay.nelements(); ++i)
                                                            write_elem(type_id::f32, tt->data + i * 4, d(rng));
                                                    }});
                              }
                              b.init.push_back({pos, indices_below(512)});
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              if (multi) return rope_multi_ref(in, p, ff, op == op_kind::rope_back ? -1.0 : 1.0);
                              // normal / neox rope_back: rotate by -theta
                              host o = in[0];
                              const auto& s = mc.s;
                              for (std::int64_t i3 = 0; i3 < s[3]; ++i3)
                                  for (std::int64_t i2 = 0; i2 < s[2]; ++i2)
                                      for (std::int64_t i1 = 0; i1 < s[1]; ++i1)
                                          for (std::int64_t i = 0; i < mc.n_dims / 2; ++i) {
                                              double th = in[1].v[static_cast<std::size_t>(i2)] * std::pow(10000.0, -2.0 * i / mc.n_dims);
                                              if (ff) th /= in[2].v[static_cast<std::size_t>(i)];
                                              th *= p.freq_scale;
                                              const std::int64_t j0 = mc.mode == rope_mode_neox ? i : 2 * i;
                                              const std::int64_t j1 = mc.mode == rope_mode_neox ? i + mc.n_dims / 2 : 2 * i + 1;
                                              const double x0 = in[0].at(j0, i1, i2, i3), x1 = in[0].at(j1, i1, i2, i3);
                                              o.at(j0, i1, i2, i3) = (x0 * std::cos(th) + x1 * std::sin(th)) * p.attn_factor;
                                              o.at(j1, i1, i2, i3) = (-x0 * std::sin(th) + x1 * std::cos(th)) * p.attn_factor;
                                          }
                              return o;
                          });
                }
    // rope_back undoes rope (attn_factor 1): back(rope(x)) == x
    for (const mcase& mc : cases) {
        rope_params p;
        p.n_dims = mc.n_dims;
        p.mode = rope_mode{mc.mode};
        p.sections = mc.sections;
        const bool multi = (mc.mode & rope_mode_mrope) != 0;
        check("rope_back(rope) mode " + std::to_string(mc.mode),
              [&](context& ctx) {
                  built b;
                  node* x = ctx.new_tensor(type_id::f32, mc.s);
                  node* pos = ctx.new_tensor(type_id::i32, {mc.s[2] * (multi ? 4 : 1), 1, 1, 1});
                  any_tensor r = rope_ext(any_tensor(x), any_tensor(pos), any_tensor(), p);
                  b.out = rope_ext_back(r, any_tensor(pos), any_tensor(), p).get();
                  b.inputs = {x};
                  b.init.push_back({pos, indices_below(512)});
                  b.max_nmse = 1e-12;
                  return b;
              },
              [&](const std::vector<host>& in) { return in[0]; });
    }
    // bad parameters are refused with the reason
    context ctx({.no_alloc = true});
    node* x = ctx.new_tensor(type_id::f32, {64, 2, 3, 1});
    node* pos4 = ctx.new_tensor(type_id::i32, {12, 1, 1, 1});
    rope_params p;
    p.n_dims = 32;
    p.mode = rope_mode{5};
    CHECK_THROWS_WITH_AS(rope_ext(any_tensor(x), any_tensor(pos4), any_tensor(), p), doctest::Contains("mode 5 is not one of ggml's"),
                         tessera::error);
    p.mode = rope_mode::mrope;
    CHECK_THROWS_WITH_AS(rope_ext(any_tensor(x), any_tensor(pos4), any_tensor(), p), doctest::Contains("sections {0, 0, 0, 0}"),
                         tessera::error);
    p.mode = rope_mode::vision;
    p.n_dims = 16;
    p.sections = {4, 4, 0, 0};
    CHECK_THROWS_WITH_AS(rope_ext(any_tensor(x), any_tensor(pos4), any_tensor(), p), doctest::Contains("n_dims = a.ne0 / 2"),
                         tessera::error);
    p.n_dims = 32;
    node* pos1 = ctx.new_tensor(type_id::i32, {3, 1, 1, 1});
    CHECK_THROWS_WITH_AS(rope_ext(any_tensor(x), any_tensor(pos1), any_tensor(), p), doctest::Contains("need 4 x a.ne2 entries"),
                         tessera::error);
}

TEST_CASE("ops: soft_max with mask (f32/f16, broadcast), scale, ALiBi, sinks") {
    struct sm {
        ne4 a;
        ne4 m;  // m[0] == 0: no mask
    };
    const sm cases[] = {{{16, 16, 4, 2}, {0, 0, 0, 0}}, {{37, 7, 3, 2}, {37, 9, 1, 2}}, {{16, 5, 4, 1}, {16, 5, 4, 1}},
                        {{1024, 2, 2, 1}, {1024, 2, 1, 1}}, {{5, 3, 6, 1}, {5, 3, 3, 1}}};
    for (const auto& c : cases)
        for (type_id mt : {type_id::f32, type_id::f16})
            for (float scale : {1.f, 0.1f})
                for (float max_bias : {0.f, 8.f})
                    for (bool sinks : {false, true})
                        for (int causal = 0; causal < 2; ++causal) {
                            const bool has_mask = c.m[0] != 0;
                            if (!has_mask && (mt == type_id::f16 || max_bias > 0 || causal)) continue;
                            check("soft_max " + sh(c.a) + (has_mask ? " mask " + tn(mt) + sh(c.m) : "") + " scale " + std::to_string(scale) +
                                      " max_bias " + std::to_string(max_bias) + (sinks ? " sinks" : "") + (causal ? " causal" : ""),
                                  [&](context& ctx) {
                                      built b;
                                      node* x = ctx.new_tensor(type_id::f32, c.a);
                                      node* m = has_mask ? ctx.new_tensor(mt, c.m) : nullptr;
                                      node* sk = sinks ? ctx.new_tensor(type_id::f32, {c.a[2], 1, 1, 1}) : nullptr;
                                      node* r = soft_max_ext(any_tensor(x), any_tensor(m), scale, max_bias).get();
                                      if (sk) soft_max_add_sinks(tensor<float, 4>(r), tensor<float, 1>(sk));
                                      b.out = r;
                                      b.inputs = {x};
                                      if (m) b.inputs.push_back(m);
                                      if (sk) b.inputs.push_back(sk);
                                      if (m && causal)
                                          b.init.push_back({m, [](node* t, std::mt19937&) {
                                                                for (std::int64_t r3 = 0; r3 < t->lay.nrows(); ++r3)
                                                                    for (std::int64_t i = 0; i < t->lay.ne[0]; ++i)
                                                                        write_elem(t->lay.type, t->data + (r3 * t->lay.ne[0] + i) * type_size(t->lay.type),
                                                                                   i > (r3 % t->lay.ne[1]) ? neg_inf : 0.0);
                                                            }});
                                      b.max_nmse = 1e-6;
                                      b.lo = -5, b.hi = 5;
                                      return b;
                                  },
                                  [&](const std::vector<host>& in) {
                                      host o = in[0];
                                      const host* M = has_mask ? &in[1] : nullptr;
                                      const host* S = sinks ? &in[has_mask ? 2 : 1] : nullptr;
                                      for (std::int64_t i3 = 0; i3 < c.a[3]; ++i3)
                                          for (std::int64_t i2 = 0; i2 < c.a[2]; ++i2)
                                              for (std::int64_t i1 = 0; i1 < c.a[1]; ++i1) {
                                                  std::vector<double> z(static_cast<std::size_t>(c.a[0]));
                                                  const double slope = alibi(max_bias, i2, c.a[2]);
                                                  double mx = neg_inf;
                                                  for (std::int64_t i = 0; i < c.a[0]; ++i) {
                                                      double v = in[0].at(i, i1, i2, i3) * scale;
                                                      if (M) v += slope * M->at(i, i1, i2 % M->ne[2], i3 % M->ne[3]);
                                                      z[static_cast<std::size_t>(i)] = v;
                                                      mx = std::max(mx, v);
                                                  }
                                                  if (S) mx = std::max(mx, S->v[static_cast<std::size_t>(i2)]);
                                                  double sum = S ? std::exp(S->v[static_cast<std::size_t>(i2)] - mx) : 0.0;
                                                  for (double& v : z) sum += (v = std::exp(v - mx));
                                                  for (std::int64_t i = 0; i < c.a[0]; ++i) o.at(i, i1, i2, i3) = z[static_cast<std::size_t>(i)] / sum;
                                              }
                                      return o;
                                  });
                        }
}

TEST_CASE("ops: flash_attn_ext f32/f16 K/V, mask, GQA, ALiBi, softcap, sinks") {
    struct fa {
        std::int64_t D, n_q, H, Hkv, n_kv, ne3;
    };
    const fa cases[] = {{64, 1, 4, 4, 47, 1}, {64, 7, 4, 1, 47, 1}, {40, 3, 2, 2, 33, 2}, {128, 2, 4, 2, 32, 1}, {32, 19, 2, 1, 40, 1}};
    for (const auto& c : cases)
        for (type_id kt : {type_id::f32, type_id::f16})
            for (bool mask : {false, true})
                for (float max_bias : {0.f, 8.f})
                    for (float softcap : {0.f, 10.f})
                        for (bool sinks : {false, true}) {
                            if (max_bias > 0 && !mask) continue;
                            if (softcap > 0 && (sinks || max_bias > 0)) continue;
                            if (c.D == 128 && (kt == type_id::f32 || softcap > 0)) continue;
                            const float scale = 1.f / std::sqrt(static_cast<float>(c.D));
                            check("flash_attn_ext D" + std::to_string(c.D) + " q" + std::to_string(c.n_q) + " H" + std::to_string(c.H) + "/" +
                                      std::to_string(c.Hkv) + " kv" + std::to_string(c.n_kv) + " " + tn(kt) + (mask ? " mask" : "") +
                                      " max_bias " + std::to_string(max_bias) + " softcap " + std::to_string(softcap) + (sinks ? " sinks" : ""),
                                  [&](context& ctx) {
                                      built b;
                                      node* q = ctx.new_tensor(type_id::f32, {c.D, c.n_q, c.H, c.ne3});
                                      node* k = ctx.new_tensor(kt, {c.D, c.n_kv, c.Hkv, c.ne3});
                                      node* v = ctx.new_tensor(kt, {c.D, c.n_kv, c.Hkv, c.ne3});
                                      node* m = mask ? ctx.new_tensor(type_id::f16, {c.n_kv, c.n_q + 3, 1, 1}) : nullptr;
                                      any_tensor r = flash_attn_ext(any_tensor(q), any_tensor(k), any_tensor(v), any_tensor(m), scale, max_bias, softcap);
                                      node* sk = sinks ? ctx.new_tensor(type_id::f32, {c.H, 1, 1, 1}) : nullptr;
                                      if (sk) flash_attn_ext_add_sinks(r.as<float, 4>(), tensor<float, 1>(sk));
                                      b.out = r.get();
                                      b.inputs = {q, k, v};
                                      if (m) b.inputs.push_back(m);
                                      if (sk) b.inputs.push_back(sk);
                                      b.max_nmse = kt == type_id::f32 ? 1e-7 : 5e-4;
                                      return b;
                                  },
                                  [&](const std::vector<host>& in) {
                                      return flash_attn_reference(in[0], in[1], in[2], mask ? &in[3] : nullptr,
                                                                  sinks ? &in[mask ? 4 : 3] : nullptr, scale, max_bias, softcap);
                                  });
                        }
}

TEST_CASE("ops: flash_attn_ext tiled path: tile edges, causal and fully masked blocks, Dk != Dv, bf16 and quantized K/V") {
    // n_q >= fa_tile_min_q runs the tiled kernel (fa_tile_q = 96 queries, fa_tile_kv = 128 KV rows)
    struct fa {
        std::int64_t Dk, Dv, n_q, H, Hkv, n_kv, ne3;
        int mask;  // 0 none, 1 random, 2 causal (KV j visible to query i when j <= i + n_kv - n_q), 3 causal with empty rows
    };
    const fa cases[] = {{64, 64, 100, 2, 1, 300, 1, 2}, {80, 48, 9, 2, 2, 129, 1, 1}, {36, 36, 97, 1, 1, 128, 2, 3},
                        {128, 128, 40, 4, 2, 200, 1, 0}, {64, 64, 200, 1, 1, 64, 1, 2}};
    for (const auto& c : cases)
        for (type_id kt : {type_id::f32, type_id::f16, type_id::bf16, type_id::q8_0, type_id::q4_0})
            for (bool sinks : {false, true}) {
                if (is_quantized(kt) && (c.Dk % 32 || c.Dv % 32)) continue;
                const float scale = 1.f / std::sqrt(static_cast<float>(c.Dk));
                const float max_bias = c.mask == 1 ? 8.f : 0.f, softcap = c.mask == 0 ? 20.f : 0.f;
                check("flash_attn_ext tiled Dk" + std::to_string(c.Dk) + " Dv" + std::to_string(c.Dv) + " q" + std::to_string(c.n_q) + " H" +
                          std::to_string(c.H) + "/" + std::to_string(c.Hkv) + " kv" + std::to_string(c.n_kv) + " ne3 " + std::to_string(c.ne3) +
                          " " + tn(kt) + " mask " + std::to_string(c.mask) + (sinks ? " sinks" : ""),
                      [&](context& ctx) {
                          built b;
                          node* q = ctx.new_tensor(type_id::f32, {c.Dk, c.n_q, c.H, c.ne3});
                          node* k = ctx.new_tensor(kt, {c.Dk, c.n_kv, c.Hkv, c.ne3});
                          node* v = ctx.new_tensor(kt, {c.Dv, c.n_kv, c.Hkv, c.ne3});
                          node* m = c.mask ? ctx.new_tensor(type_id::f16, {c.n_kv, c.n_q + 1, 1, c.ne3}) : nullptr;
                          any_tensor r = flash_attn_ext(any_tensor(q), any_tensor(k), any_tensor(v), any_tensor(m), scale, max_bias, softcap);
                          node* sk = sinks ? ctx.new_tensor(type_id::f32, {c.H, 1, 1, 1}) : nullptr;
                          if (sk) flash_attn_ext_add_sinks(r.as<float, 4>(), tensor<float, 1>(sk));
                          b.out = r.get();
                          b.inputs = {q, k, v};
                          if (m) b.inputs.push_back(m);
                          if (sk) b.inputs.push_back(sk);
                          if (c.mask >= 2)
                              b.init.push_back({m, [&c](node* t, std::mt19937&) {
                                                    const std::int64_t off = c.n_kv - c.n_q;
                                                    for (std::int64_t i3 = 0; i3 < t->lay.ne[3]; ++i3)
                                                        for (std::int64_t i = 0; i < t->lay.ne[1]; ++i)
                                                            for (std::int64_t j = 0; j < t->lay.ne[0]; ++j) {
                                                                // mode 3: every 7th query sees nothing
                                                                const bool on = j <= i + off && !(c.mask == 3 && i % 7 == 3);
                                                                write_elem(t->lay.type, t->data + t->lay.offset_of(j, i, 0, i3), on ? 0.0 : neg_inf);
                                                            }
                                                }});
                          b.max_nmse = kt == type_id::f32 ? 1e-7 : 5e-4;
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          return flash_attn_reference(in[0], in[1], in[2], c.mask ? &in[3] : nullptr, sinks ? &in[c.mask ? 4 : 3] : nullptr,
                                                      scale, max_bias, softcap);
                      });
            }
}

TEST_CASE("ops: get_rows from float and i32 tensors, batched, view indices") {
    for (type_id t : {type_id::f32, type_id::f16, type_id::bf16, type_id::i32})
        for (ne4 s : {ne4{10, 5, 1, 1}, ne4{33, 7, 3, 2}, ne4{256, 5, 7, 1}})
            check("get_rows " + tn(t) + sh(s),
                  [&](context& ctx) {
                      built b;
                      node* a = ctx.new_tensor(t, s);
                      node* idx = ctx.new_tensor(type_id::i32, {4, s[2], s[3], 1});
                      b.out = get_rows(any_tensor(a), any_tensor(idx)).get();
                      b.inputs = {a, idx};
                      b.init.push_back({idx, indices_below(s[1])});
                      if (t == type_id::i32) b.init.push_back({a, indices_below(1000)});
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host o = host::zeros({s[0], 4, s[2], s[3]});
                      for (std::int64_t i3 = 0; i3 < s[3]; ++i3)
                          for (std::int64_t i2 = 0; i2 < s[2]; ++i2)
                              for (std::int64_t i = 0; i < 4; ++i)
                                  for (std::int64_t e = 0; e < s[0]; ++e)
                                      o.at(e, i, i2, i3) = in[0].at(e, static_cast<std::int64_t>(in[1].at(i, i2, i3)), i2, i3);
                      return o;
                  });
}

TEST_CASE("ops: set_rows into f32/f16/bf16 with i32/i64 indices and broadcast") {
    struct sr {
        ne4 dst;
        std::int64_t n;
        std::int64_t i1, i2;  // index broadcast extents
    };
    const sr cases[] = {{{256, 5, 3, 3}, 3, 3, 3}, {{31, 11, 2, 3}, 4, 1, 3}, {{33, 6, 4, 1}, 6, 2, 1}};
    for (const auto& c : cases)
        for (type_id td : {type_id::f32, type_id::f16, type_id::bf16})
            for (type_id ts : {type_id::f32, type_id::f16})
                for (type_id ti : {type_id::i32, type_id::i64})
                    check("set_rows " + tn(ts) + " -> " + tn(td) + sh(c.dst) + " idx " + tn(ti),
                          [&](context& ctx) {
                              built b;
                              node* a = ctx.new_tensor(td, c.dst);
                              node* src = ctx.new_tensor(ts, {c.dst[0], c.n, c.dst[2], c.dst[3]});
                              node* idx = ctx.new_tensor(ti, {c.n, c.i1, c.i2, 1});
                              b.out = set_rows(any_tensor(a), any_tensor(src), any_tensor(idx)).get();
                              b.inputs = {a, src, idx};
                              b.init.push_back({idx, distinct_indices(c.dst[1])});
                              return b;
                          },
                          [&](const std::vector<host>& in) {
                              host o = in[0];
                              for (std::int64_t i3 = 0; i3 < c.dst[3]; ++i3)
                                  for (std::int64_t i2 = 0; i2 < c.dst[2]; ++i2)
                                      for (std::int64_t i = 0; i < c.n; ++i) {
                                          const auto row = static_cast<std::int64_t>(in[2].at(i, i2 % c.i1, i3 % c.i2));
                                          for (std::int64_t e = 0; e < c.dst[0]; ++e) o.at(e, row, i2, i3) = in[1].at(e, i, i2, i3);
                                      }
                              return o;
                          });
}

TEST_CASE("ops: cpy/cont/dup between types, permuted and reshaped, exact for same type") {
    const type_id types[] = {type_id::f32, type_id::f16, type_id::bf16, type_id::i32};
    for (type_id ts : types)
        for (type_id td : types)
            for (int kind = 0; kind < 4; ++kind) {  // 0 same shape, 1 permuted source, 2 other shape, 3 transposed 2-D
                check("cpy " + tn(ts) + " -> " + tn(td) + " kind " + std::to_string(kind),
                      [&](context& ctx) {
                          built b;
                          node* src;
                          node* dst;
                          if (kind == 0) {
                              src = ctx.new_tensor(ts, {7, 5, 3, 2});
                              dst = ctx.new_tensor(td, {7, 5, 3, 2});
                          } else if (kind == 1) {
                              node* leaf = ctx.new_tensor(ts, {3, 5, 7, 8});
                              src = permute(any_tensor(leaf), {2, 0, 3, 1}).get();
                              dst = ctx.new_tensor(td, src->lay.ne);
                          } else if (kind == 2) {
                              src = ctx.new_tensor(ts, {6, 4, 5, 1});
                              dst = ctx.new_tensor(td, {8, 15, 1, 1});
                          } else {
                              node* leaf = ctx.new_tensor(ts, {33, 17, 1, 1});
                              src = transpose(any_tensor(leaf)).get();
                              dst = ctx.new_tensor(td, {17, 33, 1, 1});
                          }
                          b.out = cpy(any_tensor(src), any_tensor(dst)).get();
                          b.inputs = {src};
                          b.max_nmse = ts == td ? 0.0 : 1e-6;
                          b.lo = -100, b.hi = 100;
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o;
                          o.v = in[0].v;
                          if (kind == 0) o.ne = {7, 5, 3, 2};
                          else if (kind == 1) o.ne = in[0].ne;
                          else if (kind == 2) o.ne = {8, 15, 1, 1};
                          else o.ne = {17, 33, 1, 1};
                          if (td == type_id::i32)
                              for (double& v : o.v) v = std::trunc(ts == type_id::i32 ? v : round_to(ts, v));
                          return o;
                      });
            }
    // cont of a permuted view, and dup
    check("cont(permute)", [&](context& ctx) {
        built b;
        node* leaf = ctx.new_tensor(type_id::f16, {3, 5, 7, 32});
        node* p = permute(any_tensor(leaf), {1, 3, 0, 2}).get();
        b.out = cont(any_tensor(p)).get();
        b.inputs = {p};
        b.max_nmse = 0;
        return b;
    },
    [](const std::vector<host>& in) { return in[0]; });
}

TEST_CASE("ops: diag_mask_inf, diag_mask_zero, repeat, concat") {
    for (type_id t : {type_id::f32, type_id::f16})
        for (op_kind op : {op_kind::diag_mask_inf, op_kind::diag_mask_zero})
            for (ne4 s : {ne4{10, 10, 3, 2}, ne4{17, 5, 1, 1}})
                check(std::string(op_name(op)) + " " + tn(t) + sh(s),
                      [&](context& ctx) {
                          built b;
                          node* x = ctx.new_tensor(t, s);
                          b.out = (op == op_kind::diag_mask_inf ? diag_mask_inf(any_tensor(x), 5) : diag_mask_zero(any_tensor(x), 5)).get();
                          b.inputs = {x};
                          return b;
                      },
                      [&](const std::vector<host>& in) {
                          host o = in[0];
                          for (std::int64_t r = 0; r < s[1] * s[2] * s[3]; ++r)
                              for (std::int64_t i = 0; i < s[0]; ++i)
                                  if (i > 5 + r % s[1]) o.v[static_cast<std::size_t>(r * s[0] + i)] = op == op_kind::diag_mask_inf ? neg_inf : 0.0;
                          return o;
                      });
    for (type_id t : {type_id::f32, type_id::f16, type_id::i32})
        for (ne4 src : {ne4{3, 2, 1, 1}, ne4{10, 5, 4, 1}, ne4{1, 1, 1, 1}}) {
            const ne4 dst = {src[0] * 2, src[1] * 3, src[2] * 2, 2};
            check("repeat " + tn(t) + sh(src) + " -> " + sh(dst),
                  [&](context& ctx) {
                      built b;
                      node* x = ctx.new_tensor(t, src);
                      b.out = repeat(any_tensor(x), dst).get();
                      b.inputs = {x};
                      b.max_nmse = 0;
                      if (t == type_id::i32) b.init.push_back({x, indices_below(100)});
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host o = host::zeros(dst);
                      for (std::int64_t i3 = 0; i3 < dst[3]; ++i3)
                          for (std::int64_t i2 = 0; i2 < dst[2]; ++i2)
                              for (std::int64_t i1 = 0; i1 < dst[1]; ++i1)
                                  for (std::int64_t i0 = 0; i0 < dst[0]; ++i0)
                                      o.at(i0, i1, i2, i3) = in[0].at(i0 % src[0], i1 % src[1], i2 % src[2], i3 % src[3]);
                      return o;
                  });
        }
    for (type_id t : {type_id::f32, type_id::f16, type_id::i32})
        for (int dim = 0; dim < 4; ++dim) {
            ne4 sa = {5, 4, 3, 2}, sb = sa;
            sb[static_cast<std::size_t>(dim)] = 3;
            check("concat " + tn(t) + " dim " + std::to_string(dim),
                  [&](context& ctx) {
                      built b;
                      node* x = ctx.new_tensor(t, sa);
                      node* y = ctx.new_tensor(t, sb);
                      b.out = concat(any_tensor(x), any_tensor(y), dim).get();
                      b.inputs = {x, y};
                      b.max_nmse = 0;
                      if (t == type_id::i32) b.init = {{x, indices_below(100)}, {y, indices_below(100)}};
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      ne4 so = sa;
                      so[static_cast<std::size_t>(dim)] += sb[static_cast<std::size_t>(dim)];
                      host o = host::zeros(so);
                      for (std::int64_t i3 = 0; i3 < so[3]; ++i3)
                          for (std::int64_t i2 = 0; i2 < so[2]; ++i2)
                              for (std::int64_t i1 = 0; i1 < so[1]; ++i1)
                                  for (std::int64_t i0 = 0; i0 < so[0]; ++i0) {
                                      std::array<std::int64_t, 4> j{i0, i1, i2, i3};
                                      const bool fa = j[static_cast<std::size_t>(dim)] < sa[static_cast<std::size_t>(dim)];
                                      if (!fa) j[static_cast<std::size_t>(dim)] -= sa[static_cast<std::size_t>(dim)];
                                      o.at(i0, i1, i2, i3) = (fa ? in[0] : in[1]).at(j[0], j[1], j[2], j[3]);
                                  }
                      return o;
                  });
        }
}

TEST_CASE("ops: block-type weights: mul_mat (activations quantized to the dot partner), get_rows, cpy and set_rows into blocks") {
    const type_id qtypes[] = {type_id::q4_0, type_id::q4_1, type_id::q5_0, type_id::q5_1, type_id::q8_0, type_id::q8_1,
                              type_id::iq4_nl, type_id::mxfp4, type_id::q2_K, type_id::q3_K, type_id::q4_K, type_id::q5_K,
                              type_id::q6_K, type_id::iq4_xs, type_id::tq1_0, type_id::tq2_0, type_id::nvfp4, type_id::q1_0,
                              type_id::q2_0, type_id::iq2_xxs, type_id::iq2_xs, type_id::iq2_s, type_id::iq3_xxs, type_id::iq3_s,
                              type_id::iq1_s, type_id::iq1_m};
    for (type_id t : qtypes) {
        // N = 1 runs the gemv path, N >= 4 the packed GEMM (2 x 4 / 4 x 4 tiles, 16-row panels,
        // 16-lane groups: K = 768 leaves half a group of 32-element lanes, M = 37 a partial panel)
        for (const auto& mnbk : {std::array<std::int64_t, 4>{16, 1, 1, 256}, {19, 7, 2, 256}, {70, 9, 1, 256}, {37, 5, 1, 768}, {20, 13, 1, 512}}) {
            const std::int64_t M = mnbk[0], N = mnbk[1], B2 = mnbk[2], K = mnbk[3];
            check("mul_mat " + tn(t) + " M" + std::to_string(M) + " N" + std::to_string(N) + " K" + std::to_string(K),
                  [&](context& ctx) {
                      built b;
                      node* a = ctx.new_tensor(t, {K, M, 1, 1});
                      node* x = ctx.new_tensor(type_id::f32, {K, N, B2, 1});
                      b.out = mul_mat(any_tensor(a), any_tensor(x)).get();
                      b.inputs = {a, x};
                      b.max_nmse = 5e-4;
                      return b;
                  },
                  [&](const std::vector<host>& in) {
                      host o = host::zeros({M, N, B2, 1});
                      for (std::int64_t i2 = 0; i2 < B2; ++i2)
                          for (std::int64_t n = 0; n < N; ++n)
                              for (std::int64_t m = 0; m < M; ++m) {
                                  double s = 0;
                                  for (std::int64_t kk = 0; kk < K; ++kk) s += in[0].at(kk, m) * in[1].at(kk, n, i2);
                                  o.at(m, n, i2) = s;
                              }
                      return o;
                  });
        }
        check("get_rows " + tn(t),
              [&](context& ctx) {
                  built b;
                  node* a = ctx.new_tensor(t, {512, 6, 2, 1});
                  node* idx = ctx.new_tensor(type_id::i32, {3, 2, 1, 1});
                  b.out = get_rows(any_tensor(a), any_tensor(idx)).get();
                  b.inputs = {a, idx};
                  b.init.push_back({idx, indices_below(6)});
                  b.max_nmse = 0;  // dequantization is exact
                  return b;
              },
              [&](const std::vector<host>& in) {
                  host o = host::zeros({512, 3, 2, 1});
                  for (std::int64_t i2 = 0; i2 < 2; ++i2)
                      for (std::int64_t i = 0; i < 3; ++i)
                          for (std::int64_t e = 0; e < 512; ++e) o.at(e, i, i2) = in[0].at(e, static_cast<std::int64_t>(in[1].at(i, i2)), i2);
                  return o;
              });
    }
    // into blocks: the dequantized result must be the input within the type's quantization error
    for (auto [t, bound] : {std::pair{type_id::q8_0, 1e-4}, std::pair{type_id::q4_0, 1e-2}, std::pair{type_id::q4_K, 1e-2}}) {
        check("cpy f32 -> " + tn(t),
              [&, t = t, bound = bound](context& ctx) {
                  built b;
                  node* x = ctx.new_tensor(type_id::f32, {256, 5, 1, 1});
                  node* q = ctx.new_tensor(t, {256, 5, 1, 1});
                  b.out = cpy(any_tensor(x), any_tensor(q)).get();
                  b.inputs = {x};
                  b.max_nmse = bound;
                  return b;
              },
              [](const std::vector<host>& in) { return in[0]; });
        check("set_rows f32 -> " + tn(t),
              [&, t = t, bound = bound](context& ctx) {
                  built b;
                  node* dst = ctx.new_tensor(t, {256, 6, 1, 1});
                  node* x = ctx.new_tensor(type_id::f32, {256, 6, 1, 1});
                  node* idx = ctx.new_tensor(type_id::i64, {6, 1, 1, 1});
                  b.out = set_rows(any_tensor(dst), any_tensor(x), any_tensor(idx)).get();
                  b.inputs = {x, idx};
                  b.init.push_back({idx, distinct_indices(6)});
                  b.max_nmse = bound;
                  return b;
              },
              [](const std::vector<host>& in) {
                  host o = in[0];
                  for (std::int64_t i = 0; i < 6; ++i)
                      for (std::int64_t e = 0; e < 256; ++e) o.at(e, static_cast<std::int64_t>(in[1].at(i))) = in[0].at(e, i);
                  return o;
              });
    }
}
