// CPU implementations of the padding, shifting and resampling ops and the SAM window /
// relative-position ops (builders in graph/ops/image.hpp): pad, pad_reflect_1d, roll,
// arange, timestep_embedding, upscale (nearest, bilinear with or without antialias,
// bicubic), win_part, win_unpart, get_rel_pos, add_rel_pos.
// Each thread computes its share of the destination rows (arange: of its elements).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "tessera/config.hpp"
#include "tessera/backend/cpu/gather.hpp"
#include "tessera/graph/node.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::cpu {
using namespace tessera::graph;  // the op bodies read graph nodes

inline std::string image_unsupported_reason(const node& n) {
    const auto f = [](type_id t) { return t == type_id::f32 || t == type_id::f16 || t == type_id::bf16; };
    switch (n.op) {
        case op_kind::arange: return {};
        default: break;
    }
    for (const node* s : n.src)
        if (s && !f(s->lay.type)) return std::string(op_name(n.op)) + " on " + std::string(type_name(s->lay.type));
    return f(n.lay.type) ? std::string() : std::string(op_name(n.op)) + " into " + std::string(type_name(n.lay.type));
}

namespace impl {

inline std::int64_t wrap_index(std::int64_t i, std::int64_t n) {
    const std::int64_t r = i % n;
    return r < 0 ? r + n : r;
}

inline void pad(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& pp = d.param<pad_params>();
    const auto& ne = a.lay.ne;
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        std::int64_t j1 = i1 - pp.left[1], j2 = i2 - pp.left[2], j3 = i3 - pp.left[3];
        if (pp.circular) {
            j1 = wrap_index(j1, ne[1]), j2 = wrap_index(j2, ne[2]), j3 = wrap_index(j3, ne[3]);
        } else if (j1 < 0 || j1 >= ne[1] || j2 < 0 || j2 >= ne[2] || j3 < 0 || j3 >= ne[3]) {
            for (std::int64_t i0 = 0; i0 < d.lay.ne[0]; ++i0) z[i0] = 0.f;
            return;
        }
        for (std::int64_t i0 = 0; i0 < d.lay.ne[0]; ++i0) {
            std::int64_t j0 = i0 - pp.left[0];
            if (pp.circular) j0 = wrap_index(j0, ne[0]);
            z[i0] = (j0 >= 0 && j0 < ne[0]) ? elem(a, j0, j1, j2, j3) : 0.f;
        }
    });
}

inline void pad_reflect_1d(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const std::int64_t n = a.lay.ne[0], p0 = d.param<pad_params>().left[0];
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        for (std::int64_t i0 = 0; i0 < d.lay.ne[0]; ++i0) {
            std::int64_t j = i0 - p0;
            if (j < 0) j = -j;
            if (j >= n) j = 2 * (n - 1) - j;
            z[i0] = elem(a, j, i1, i2, i3);
        }
    });
}

inline void roll(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& s = d.param<roll_params>().shift;
    const auto& ne = a.lay.ne;
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        const std::int64_t j1 = wrap_index(i1 - s[1], ne[1]), j2 = wrap_index(i2 - s[2], ne[2]), j3 = wrap_index(i3 - s[3], ne[3]);
        for (std::int64_t i0 = 0; i0 < ne[0]; ++i0) z[i0] = elem(a, wrap_index(i0 - s[0], ne[0]), j1, j2, j3);
    });
}

inline void arange(const node& d, const exec_params& p) {
    const auto& ap = d.param<arange_params>();
    const auto [b, e] = p.split(d.lay.ne[0]);
    for (std::int64_t i = b; i < e; ++i)
        write_scalar(type_id::f32, d.bytes() + static_cast<std::size_t>(i) * d.lay.nb[0], ap.start + ap.step * static_cast<float>(i));
}

inline void timestep_embedding(const node& d, const exec_params& p) {
    const node& t = *d.src[0];
    const auto& tp = d.param<timestep_params>();
    const int half = tp.dim / 2;
    const float lmp = std::log(static_cast<float>(tp.max_period));
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t, std::int64_t) {
        const float ts = elem(t, i1);
        for (int j = 0; j < half; ++j) {
            const float freq = std::exp(-lmp * static_cast<float>(j) / static_cast<float>(half));
            const float arg = ts * freq;
            z[j] = std::cos(arg);
            z[j + half] = std::sin(arg);
        }
        if (tp.dim % 2 != 0) z[2 * half] = 0.f;
    });
}

inline void upscale(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const auto& up = d.param<upscale_params>();
    const auto& ns = a.lay.ne;
    const auto& nd = d.lay.ne;
    float sf[4];
    for (std::size_t i = 0; i < 4; ++i) sf[i] = static_cast<float>(nd[i]) / static_cast<float>(ns[i]);
    // align corners: the first and last pixels of dims 0 and 1 map onto each other (every mode)
    float off = 0.5f, s0 = sf[0], s1 = sf[1];
    if (up.align_corners) {
        off = 0.f;
        if (nd[0] > 1 && ns[0] > 1) s0 = static_cast<float>(nd[0] - 1) / static_cast<float>(ns[0] - 1);
        if (nd[1] > 1 && ns[1] > 1) s1 = static_cast<float>(nd[1] - 1) / static_cast<float>(ns[1] - 1);
    }
    const auto nearest = [&](std::int64_t i, int dim) {
        const float f = dim == 0 ? s0 : dim == 1 ? s1 : sf[dim];
        const auto j = static_cast<std::int64_t>(static_cast<float>(i) / f);
        return std::min(j, ns[static_cast<std::size_t>(dim)] - 1);
    };
    if (up.mode == scale_mode::nearest) {
        fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
            const std::int64_t j1 = nearest(i1, 1), j2 = nearest(i2, 2), j3 = nearest(i3, 3);
            for (std::int64_t i0 = 0; i0 < nd[0]; ++i0) z[i0] = elem(a, nearest(i0, 0), j1, j2, j3);
        });
        return;
    }
    // bilinear / bicubic in dims 0 and 1 at source coordinate (i + off)/sf - off
    if (up.mode == scale_mode::bicubic) {
        // Keys' cubic convolution with a = -0.75 (as PyTorch), the 4x4 taps around the
        // coordinate clamped into the image
        constexpr float ca = -0.75f;
        const auto near_w = [](float t) { return ((ca + 2) * t - (ca + 3)) * t * t + 1; };        // |t| <= 1
        const auto far_w = [](float t) { return ((ca * t - 5 * ca) * t + 8 * ca) * t - 4 * ca; };  // 1 < |t| < 2
        const auto cubic = [&](const float* v, float t) {
            return v[0] * far_w(t + 1) + v[1] * near_w(t) + v[2] * near_w(1 - t) + v[3] * far_w(2 - t);
        };
        fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
            const std::int64_t j2 = nearest(i2, 2), j3 = nearest(i3, 3);
            const float y = (static_cast<float>(i1) + off) / s1 - off;
            const float fy = std::floor(y);
            const auto y0 = static_cast<std::int64_t>(fy);
            const auto clampi = [](std::int64_t v, std::int64_t n) { return std::max<std::int64_t>(0, std::min(v, n - 1)); };
            for (std::int64_t i0 = 0; i0 < nd[0]; ++i0) {
                const float x = (static_cast<float>(i0) + off) / s0 - off;
                const float fx = std::floor(x);
                const auto x0 = static_cast<std::int64_t>(fx);
                float col[4];
                for (int r = 0; r < 4; ++r) {
                    const std::int64_t yy = clampi(y0 - 1 + r, ns[1]);
                    float row[4];
                    for (int c = 0; c < 4; ++c) row[c] = elem(a, clampi(x0 - 1 + c, ns[0]), yy, j2, j3);
                    col[r] = cubic(row, x - fx);
                }
                z[i0] = cubic(col, y - fy);
            }
        });
        return;
    }
    if (up.antialias) {
        // bilinear with antialiasing (PyTorch's interpolate(..., antialias=True), as ggml):
        // a triangle filter as wide as the scale when downsampling (support max(1, 1/scale)),
        // weights normalized over the source pixels inside the image
        const float support0 = std::max(1.f, 1.f / s0), support1 = std::max(1.f, 1.f / s1);
        const float inv0 = 1.f / support0, inv1 = 1.f / support1;
        const auto tri = [](float t) { return std::max(1.f - std::fabs(t), 0.f); };
        fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
            const std::int64_t j2 = nearest(i2, 2), j3 = nearest(i3, 3);
            const float y = (static_cast<float>(i1) + off) / s1;
            const std::int64_t y0 = std::max<std::int64_t>(static_cast<std::int64_t>(y - support1 + off), 0);
            const std::int64_t y1 = std::min<std::int64_t>(static_cast<std::int64_t>(y + support1 + off), ns[1]);
            for (std::int64_t i0 = 0; i0 < nd[0]; ++i0) {
                const float x = (static_cast<float>(i0) + off) / s0;
                const std::int64_t x0 = std::max<std::int64_t>(static_cast<std::int64_t>(x - support0 + off), 0);
                const std::int64_t x1 = std::min<std::int64_t>(static_cast<std::int64_t>(x + support0 + off), ns[0]);
                float val = 0.f, total = 0.f;
                for (std::int64_t sy = y0; sy < y1; ++sy) {
                    const float wy = tri((static_cast<float>(sy) - y + off) * inv1);
                    for (std::int64_t sx = x0; sx < x1; ++sx) {
                        const float w = tri((static_cast<float>(sx) - x + off) * inv0) * wy;
                        if (w <= 0.f) continue;
                        val += elem(a, sx, sy, j2, j3) * w;
                        total += w;
                    }
                }
                z[i0] = total > 0.f ? val / total : val;
            }
        });
        return;
    }
    // bilinear: the coordinate clamped to the edge
    struct tap {
        std::int64_t i0, i1;
        float w;  // weight of i1
    };
    const auto coord = [off](std::int64_t i, float s, std::int64_t n) {
        const float x = (static_cast<float>(i) + off) / s - off;
        const auto f = static_cast<std::int64_t>(std::floor(x));
        const std::int64_t lo = std::max<std::int64_t>(0, std::min(f, n - 1));
        const std::int64_t hi = std::max<std::int64_t>(0, std::min(f + 1, n - 1));
        const float w = std::max(0.f, std::min(x - static_cast<float>(lo), 1.f));
        return tap{lo, hi, w};
    };
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        const std::int64_t j2 = nearest(i2, 2), j3 = nearest(i3, 3);
        const tap y = coord(i1, s1, ns[1]);
        for (std::int64_t i0 = 0; i0 < nd[0]; ++i0) {
            const tap x = coord(i0, s0, ns[0]);
            const float v00 = elem(a, x.i0, y.i0, j2, j3), v10 = elem(a, x.i1, y.i0, j2, j3);
            const float v01 = elem(a, x.i0, y.i1, j2, j3), v11 = elem(a, x.i1, y.i1, j2, j3);
            z[i0] = v00 * (1 - x.w) * (1 - y.w) + v10 * x.w * (1 - y.w) + v01 * (1 - x.w) * y.w + v11 * x.w * y.w;
        }
    });
}

inline void win_part(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const std::int64_t w = d.param<win_params>().w;
    const std::int64_t npx = (a.lay.ne[1] + (w - a.lay.ne[1] % w) % w) / w;
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t i3) {
        const std::int64_t x = (i3 % npx) * w + i1, y = (i3 / npx) * w + i2;
        const bool in = x < a.lay.ne[1] && y < a.lay.ne[2];
        for (std::int64_t c = 0; c < d.lay.ne[0]; ++c) z[c] = in ? elem(a, c, x, y) : 0.f;
    });
}

inline void win_unpart(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const std::int64_t w = d.param<win_params>().w;
    const std::int64_t npx = (d.lay.ne[1] + (w - d.lay.ne[1] % w) % w) / w;
    fill_rows(d, p, [&](float* z, std::int64_t x, std::int64_t y, std::int64_t) {
        for (std::int64_t c = 0; c < d.lay.ne[0]; ++c) z[c] = elem(a, c, x % w, y % w, (y / w) * npx + x / w);
    });
}

inline void get_rel_pos(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const std::int64_t kh = d.lay.ne[1];
    fill_rows(d, p, [&](float* z, std::int64_t k, std::int64_t q, std::int64_t) {
        for (std::int64_t c = 0; c < d.lay.ne[0]; ++c) z[c] = elem(a, c, kh - 1 - k + q);
    });
}

inline void add_rel_pos(const node& d, const exec_params& p) {
    const node& a = *d.src[0];
    const node& pw = *d.src[1];
    const node& ph = *d.src[2];
    const std::int64_t K = pw.lay.ne[0], qw = pw.lay.ne[1];
    fill_rows(d, p, [&](float* z, std::int64_t i1, std::int64_t i2, std::int64_t) {
        const std::int64_t r1 = i1 % qw, r2 = i1 / qw;
        for (std::int64_t u = 0; u < K; ++u) {
            const float h = elem(ph, u, r1, r2, i2);
            for (std::int64_t v = 0; v < K; ++v) z[u * K + v] = elem(a, u * K + v, i1, i2) + h + elem(pw, v, r1, r2, i2);
        }
    });
}

}  // namespace impl

inline void image_compute(const node& n, const exec_params& p) {
    switch (n.op) {
        case op_kind::pad: return impl::pad(n, p);
        case op_kind::pad_reflect_1d: return impl::pad_reflect_1d(n, p);
        case op_kind::roll: return impl::roll(n, p);
        case op_kind::arange: return impl::arange(n, p);
        case op_kind::timestep_embedding: return impl::timestep_embedding(n, p);
        case op_kind::upscale: return impl::upscale(n, p);
        case op_kind::win_part: return impl::win_part(n, p);
        case op_kind::win_unpart: return impl::win_unpart(n, p);
        case op_kind::get_rel_pos: return impl::get_rel_pos(n, p);
        case op_kind::add_rel_pos: return impl::add_rel_pos(n, p);
        default: return;
    }
}

}  // namespace backend::cpu
TESSERA_END_NAMESPACE
