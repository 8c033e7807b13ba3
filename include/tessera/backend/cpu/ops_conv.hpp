// CPU implementations of the convolution and pooling ops (builders in
// graph/ops/conv.hpp): im2col, im2col_3d, col2im_1d, conv_2d (direct), conv_3d (direct),
// conv_2d_dw (direct), conv_transpose_1d, conv_transpose_2d, pool_1d, pool_2d. Each thread
// computes its share of the destination rows (col2im_1d: of (channel, time block) items);
// sources are read element by element through their strides (any float type, any layout).
#pragma once

#include <algorithm>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/backend/cpu/gather.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

inline std::string conv_unsupported_reason(const node& n) {
    const auto f = [](type_id t) { return t == type_id::f32 || t == type_id::f16 || t == type_id::bf16; };
    for (int i = 0; i < max_src; ++i) {
        const node* s = n.src[static_cast<std::size_t>(i)];
        if ((n.op == op_kind::im2col || n.op == op_kind::im2col_3d) && i == 0) continue;  // the kernel: only its shape is read
        if (s && !f(s->lay.type)) return std::string(op_name(n.op)) + " on " + std::string(type_name(s->lay.type));
    }
    return f(n.lay.type) ? std::string() : std::string(op_name(n.op)) + " into " + std::string(type_name(n.lay.type));
}

namespace impl {

inline void im2col(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& cp = d.param<conv_params>();
    const std::int64_t KW = a.lay.ne[0], KH = cp.is_2d ? a.lay.ne[1] : 1;
    const std::int64_t W = b.lay.ne[0], H = cp.is_2d ? b.lay.ne[1] : 1, IC = cp.is_2d ? b.lay.ne[2] : b.lay.ne[1];
    if (b.lay.type == type_id::f32 && cp.is_2d) {  // f32 input: read the floats in place (the common case)
        const auto& nb = b.lay.nb;
        const std::byte* base = b.bytes();
        fill_rows(d, p, [&](float* z, std::int64_t ox, std::int64_t oy, std::int64_t nn) {
            for (std::int64_t ic = 0; ic < IC; ++ic)
                for (std::int64_t ky = 0; ky < KH; ++ky) {
                    const std::int64_t y = oy * cp.s[1] + ky * cp.d[1] - cp.p[1];
                    float* o = z + (ic * KH + ky) * KW;
                    if (y < 0 || y >= H) {
                        std::fill_n(o, KW, 0.f);
                        continue;
                    }
                    const std::byte* row = base + static_cast<std::size_t>(y) * nb[1] + static_cast<std::size_t>(ic) * nb[2] +
                                           static_cast<std::size_t>(nn) * nb[3];
                    for (std::int64_t kx = 0; kx < KW; ++kx) {
                        const std::int64_t x = ox * cp.s[0] + kx * cp.d[0] - cp.p[0];
                        float v = 0.f;
                        if (x >= 0 && x < W) std::memcpy(&v, row + static_cast<std::size_t>(x) * nb[0], 4);
                        o[kx] = v;
                    }
                }
        });
        return;
    }
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        // 2-D: row (ox, oy, n); 1-D: row (ox, n)
        const std::int64_t ox = i1, oy = cp.is_2d ? i2 : 0, nn = cp.is_2d ? i3 : i2;
        for (std::int64_t ic = 0; ic < IC; ++ic)
            for (std::int64_t ky = 0; ky < KH; ++ky) {
                const std::int64_t y = oy * cp.s[1] + ky * cp.d[1] - cp.p[1];
                float* o = z + (ic * KH + ky) * KW;
                for (std::int64_t kx = 0; kx < KW; ++kx) {
                    const std::int64_t x = ox * cp.s[0] + kx * cp.d[0] - cp.p[0];
                    if (x < 0 || x >= W || y < 0 || y >= H) o[kx] = 0.f;
                    else o[kx] = cp.is_2d ? elem(b, x, y, ic, nn) : elem(b, x, ic, nn);
                }
            }
    });
}

// 3-D: row (ox, oy, n*OD + od) of [IC*KD*KH*KW, OW, OH, OD*N]; the input's dim 3 is n*IC + ic.
inline void im2col_3d(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& cp = d.param<conv3d_params>();
    const std::int64_t KW = a.lay.ne[0], KH = a.lay.ne[1], KD = a.lay.ne[2];
    const std::int64_t W = b.lay.ne[0], H = b.lay.ne[1], D = b.lay.ne[2], IC = cp.ic;
    const std::int64_t OD = d.lay.ne[3] / (b.lay.ne[3] / IC);
    fill_rows(d, p, [&](float* z, std::int64_t ox, std::int64_t oy, std::int64_t i3) {
        const std::int64_t od = i3 % OD, nn = i3 / OD;
        for (std::int64_t ic = 0; ic < IC; ++ic)
            for (std::int64_t kd = 0; kd < KD; ++kd) {
                const std::int64_t zz = od * cp.s[2] + kd * cp.d[2] - cp.p[2];
                for (std::int64_t ky = 0; ky < KH; ++ky) {
                    const std::int64_t y = oy * cp.s[1] + ky * cp.d[1] - cp.p[1];
                    float* o = z + ((ic * KD + kd) * KH + ky) * KW;
                    for (std::int64_t kx = 0; kx < KW; ++kx) {
                        const std::int64_t x = ox * cp.s[0] + kx * cp.d[0] - cp.p[0];
                        const bool in = x >= 0 && x < W && y >= 0 && y < H && zz >= 0 && zz < D;
                        o[kx] = in ? elem(b, x, y, zz, nn * IC + ic) : 0.f;
                    }
                }
            }
    });
}

// a [K*OC, T_in] -> [T_out, OC]: out[t, oc] sums a[oc*K + k, t_in] over t_in s + k = t + p.
// Work items are (channel, block of 256 times), so even one channel splits across threads.
inline constexpr std::int64_t col2im_time_block = 256;
inline void col2im_1d(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& cp = d.param<conv_params>();
    const std::int64_t OC = d.lay.ne[1], T_out = d.lay.ne[0], T_in = a.lay.ne[1], K = a.lay.ne[0] / OC;
    const std::int64_t s = cp.s[0], pad = cp.p[0];
    const std::int64_t blocks = (T_out + col2im_time_block - 1) / col2im_time_block;
    const auto [w0, w1] = p.split(OC * blocks);
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t oc = w / blocks, t0 = (w % blocks) * col2im_time_block, t1 = std::min(T_out, t0 + col2im_time_block);
        for (std::int64_t t = t0; t < t1; ++t) {
            const std::int64_t ta = t + pad;  // in the uncropped signal
            // inputs t_in with 0 <= ta - t_in*s < K
            const std::int64_t lo = ta >= K ? (ta - K) / s + 1 : 0, hi = std::min(T_in - 1, ta / s);
            float acc = 0.f;
            for (std::int64_t ti = lo; ti <= hi; ++ti) acc += elem(a, oc * K + ta - ti * s, ti);
            write_scalar(d.lay.type, row_ptr(d, oc, 0, 0) + static_cast<std::size_t>(t) * d.lay.nb[0], acc);
        }
    }
}

// Direct 3-D convolution: kernel [KW, KH, KD, IC*OC] (dim 3 = oc*IC + ic), input [W, H, D, IC*N]
// -> [OW, OH, OD, OC*N]. Work items are (output row (oy, oz, n), chunk of output x): the
// chunk's patches are gathered as f32 rows of E = IC*KD*KH*KW (im2col_3d's order, which is
// the kernel's), then one GEMM with the kernel's OC rows gives every output channel. A
// kernel that is not contiguous f32 is first converted into the shared scratch.
inline std::int64_t conv3d_chunk(std::int64_t E) { return std::clamp<std::int64_t>(65536 / std::max<std::int64_t>(E, 1), 1, 64); }
inline bool conv3d_kernel_in_place(const node& a) { return a.lay.type == type_id::f32 && a.lay.is_contiguous(); }

inline void conv_3d(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& cp = d.param<conv3d_params>();
    const auto& k = *p.k;
    const std::int64_t KW = a.lay.ne[0], KH = a.lay.ne[1], KD = a.lay.ne[2];
    const std::int64_t W = b.lay.ne[0], H = b.lay.ne[1], D = b.lay.ne[2], IC = cp.ic, OC = a.lay.ne[3] / IC;
    const std::int64_t E = KW * KH * KD * IC, OW = d.lay.ne[0], OH = d.lay.ne[1], OD = d.lay.ne[2], N = d.lay.ne[3] / OC;
    const float* kernel = reinterpret_cast<const float*>(a.bytes());  // [OC][E]
    if (!conv3d_kernel_in_place(a)) {
        auto* kf = reinterpret_cast<float*>(p.shared);
        const auto [r0, r1] = p.split(OC * IC * KD * KH);  // kernel rows of KW
        for (std::int64_t r = r0; r < r1; ++r) {
            const std::int64_t ky = r % KH, kd = (r / KH) % KD, j3 = r / KH / KD;  // j3 = oc*IC + ic
            const float* x = load_f32(k, a.lay.type, row_ptr(a, ky, kd, j3), a.lay.nb[0], KW, kf + r * KW);
            if (x != kf + r * KW) std::copy_n(x, KW, kf + r * KW);
        }
        p.barrier();
        kernel = kf;
    }
    const std::int64_t chunk = conv3d_chunk(E), chunks = (OW + chunk - 1) / chunk;
    float* patches = reinterpret_cast<float*>(p.scratch);  // [chunk][E]
    float* out = patches + chunk * E;                      // [chunk][OC]
    const auto [w0, w1] = p.split(OH * OD * N * chunks);
    for (std::int64_t w = w0; w < w1; ++w) {
        const std::int64_t x0 = (w % chunks) * chunk, xl = std::min(chunk, OW - x0);
        const std::int64_t row = w / chunks, oy = row % OH, oz = (row / OH) % OD, nn = row / OH / OD;
        for (std::int64_t xi = 0; xi < xl; ++xi) {
            float* pr = patches + xi * E;
            const std::int64_t ox = x0 + xi;
            for (std::int64_t ic = 0; ic < IC; ++ic)
                for (std::int64_t kd = 0; kd < KD; ++kd) {
                    const std::int64_t zz = oz * cp.s[2] + kd * cp.d[2] - cp.p[2];
                    for (std::int64_t ky = 0; ky < KH; ++ky) {
                        const std::int64_t y = oy * cp.s[1] + ky * cp.d[1] - cp.p[1];
                        float* o = pr + ((ic * KD + kd) * KH + ky) * KW;
                        for (std::int64_t kx = 0; kx < KW; ++kx) {
                            const std::int64_t x = ox * cp.s[0] + kx * cp.d[0] - cp.p[0];
                            const bool in = x >= 0 && x < W && y >= 0 && y < H && zz >= 0 && zz < D;
                            o[kx] = in ? elem(b, x, y, zz, nn * IC + ic) : 0.f;
                        }
                    }
                }
        }
        // out[xi][oc] = kernel row oc . patch xi
        k.gemm(kernel, static_cast<std::size_t>(E), patches, static_cast<std::size_t>(E), out, static_cast<std::size_t>(OC),
               static_cast<std::size_t>(OC), static_cast<std::size_t>(xl), static_cast<std::size_t>(E));
        for (std::int64_t oc = 0; oc < OC; ++oc) {
            auto* drow = reinterpret_cast<float*>(row_ptr(d, oy, oz, nn * OC + oc));
            for (std::int64_t xi = 0; xi < xl; ++xi) drow[x0 + xi] = out[xi * OC + oc];
        }
    }
}

// Per-thread and shared scratch of conv_3d (see conv_3d).
inline std::pair<std::size_t, std::size_t> conv_scratch(const node& n) {
    if (n.op != op_kind::conv_3d) return {0, 0};
    const node& a = *n.src[0];
    const std::int64_t IC = n.param<conv3d_params>().ic, OC = a.lay.ne[3] / IC, E = a.lay.ne[0] * a.lay.ne[1] * a.lay.ne[2] * IC;
    const std::int64_t chunk = conv3d_chunk(E);
    const auto per_thread = static_cast<std::size_t>(chunk * (E + OC)) * sizeof(float) + 64;
    const auto shared = conv3d_kernel_in_place(a) ? 0 : static_cast<std::size_t>(OC * E) * sizeof(float) + 64;
    return {per_thread, shared};
}

// Direct convolution: conv_2d (kernel [KW, KH, IC, OC]) and depthwise conv_2d_dw
// (kernel [KW, KH, 1, C]); destination row (oy, oc, n).
inline void conv_2d(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const auto& cp = d.param<conv_params>();
    const bool dw = d.op == op_kind::conv_2d_dw;
    const std::int64_t KW = a.lay.ne[0], KH = a.lay.ne[1], W = b.lay.ne[0], H = b.lay.ne[1];
    const std::int64_t IC = dw ? 1 : b.lay.ne[2];
    fill_rows(d, p, [&](float* z, std::int64_t oy, std::int64_t oc, std::int64_t nn) {
        for (std::int64_t ox = 0; ox < d.lay.ne[0]; ++ox) {
            float acc = 0.f;
            for (std::int64_t ic = 0; ic < IC; ++ic) {
                const std::int64_t bc = dw ? oc : ic;
                for (std::int64_t ky = 0; ky < KH; ++ky) {
                    const std::int64_t y = oy * cp.s[1] + ky * cp.d[1] - cp.p[1];
                    if (y < 0 || y >= H) continue;
                    for (std::int64_t kx = 0; kx < KW; ++kx) {
                        const std::int64_t x = ox * cp.s[0] + kx * cp.d[0] - cp.p[0];
                        if (x < 0 || x >= W) continue;
                        acc += elem(a, kx, ky, dw ? 0 : ic, oc) * elem(b, x, y, bc, nn);
                    }
                }
            }
            z[ox] = acc;
        }
    });
}

// kernel [K, OC, IC], input [L, IC] -> [(L-1)*s + K, OC]; destination row oc.
inline void conv_transpose_1d(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const std::int64_t s = d.param<conv_params>().s[0];
    const std::int64_t K = a.lay.ne[0], IC = a.lay.ne[2], L = b.lay.ne[0];
    fill_rows(d, p, [&](float* z, std::int64_t oc, std::int64_t, std::int64_t) {
        for (std::int64_t t = 0; t < d.lay.ne[0]; ++t) {
            // inputs l with 0 <= t - l*s < K
            const std::int64_t l0 = t >= K ? (t - K) / s + 1 : 0, l1 = std::min(L - 1, t / s);
            float acc = 0.f;
            for (std::int64_t l = l0; l <= l1; ++l)
                for (std::int64_t ic = 0; ic < IC; ++ic) acc += elem(a, t - l * s, oc, ic) * elem(b, l, ic);
            z[t] = acc;
        }
    });
}

// kernel [KW, KH, OC, IC], input [W, H, IC, N] -> [(W-1)*s + KW, (H-1)*s + KH, OC, N];
// destination row (y, oc, n).
inline void conv_transpose_2d(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& b = *d.src[1];
    const std::int64_t s = d.param<conv_params>().s[0];
    const std::int64_t KW = a.lay.ne[0], KH = a.lay.ne[1], IC = a.lay.ne[3], W = b.lay.ne[0], H = b.lay.ne[1];
    // inputs i with 0 <= o - i*s < K
    const auto first = [s](std::int64_t o, std::int64_t K) { return o >= K ? (o - K) / s + 1 : 0; };
    fill_rows(d, p, [&](float* z, std::int64_t y, std::int64_t oc, std::int64_t nn) {
        const std::int64_t iy0 = first(y, KH), iy1 = std::min(H - 1, y / s);
        for (std::int64_t x = 0; x < d.lay.ne[0]; ++x) {
            const std::int64_t ix0 = first(x, KW), ix1 = std::min(W - 1, x / s);
            float acc = 0.f;
            for (std::int64_t ic = 0; ic < IC; ++ic)
                for (std::int64_t iy = iy0; iy <= iy1; ++iy)
                    for (std::int64_t ix = ix0; ix <= ix1; ++ix) acc += elem(a, x - ix * s, y - iy * s, oc, ic) * elem(b, ix, iy, ic, nn);
            z[x] = acc;
        }
    });
}

inline void pool(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& pp = d.param<pool_params>();
    const bool two = d.op == op_kind::pool_2d;
    const bool mx = pp.op == pool_op::max;
    const std::int64_t W = a.lay.ne[0], H = a.lay.ne[1];
    const std::int64_t k1 = two ? pp.k[1] : 1;
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        const std::int64_t y0 = two ? i1 * pp.s[1] - pp.p[1] : i1;
        for (std::int64_t o = 0; o < d.lay.ne[0]; ++o) {
            const std::int64_t x0 = o * pp.s[0] - pp.p[0];
            float acc = mx ? -std::numeric_limits<float>::max() : 0.f;
            std::int64_t count = 0;
            for (std::int64_t ky = 0; ky < k1; ++ky) {
                const std::int64_t y = y0 + ky;
                if (y < 0 || y >= H) continue;
                for (std::int64_t kx = 0; kx < pp.k[0]; ++kx) {
                    const std::int64_t x = x0 + kx;
                    if (x < 0 || x >= W) continue;
                    const float v = elem(a, x, y, i2, i3);
                    if (mx) acc = v > acc ? v : acc;
                    else acc += v;
                    ++count;
                }
            }
            // avg: pool_1d divides by the taps inside the row, pool_2d by the whole window (as ggml)
            if (!mx) acc = two ? acc / static_cast<float>(pp.k[0] * pp.k[1]) : (count > 0 ? acc / static_cast<float>(count) : 0.f);
            z[o] = acc;
        }
    });
}

}  // namespace impl

inline void conv_compute(const node& n, const exec_params& p) {
    switch (n.op) {
        case op_kind::im2col: return impl::im2col(n, p);
        case op_kind::im2col_3d: return impl::im2col_3d(n, p);
        case op_kind::col2im_1d: return impl::col2im_1d(n, p);
        case op_kind::conv_3d: return impl::conv_3d(n, p);
        case op_kind::conv_2d:
        case op_kind::conv_2d_dw: return impl::conv_2d(n, p);
        case op_kind::conv_transpose_1d: return impl::conv_transpose_1d(n, p);
        case op_kind::conv_transpose_2d: return impl::conv_transpose_2d(n, p);
        case op_kind::pool_1d:
        case op_kind::pool_2d: return impl::pool(n, p);
        default: return;
    }
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
