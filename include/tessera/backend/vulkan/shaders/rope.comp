#version 450
// tessera Vulkan, rope and rope_back, one invocation per element of d (the one at a pair's
// first element writes both of the pair, so an in-place rope reads before it writes;
// the one at its second returns), in every mode: normal
// (pairs 2i, 2i+1), neox (pairs i, i + n_dims/2) and the multi-section ones (neox pairs):
// mrope, imrope (pair i takes the position stream of its sector, sections s0..s3) and
// vision (pairs i, i + n_dims over the whole row; the angle index restarts per section),
// as the CPU's rope_stream. Pair i of row (i1, i2, i3) turns by
// theta = pos * base^(-2 ia/n_dims) / ff[i] * (freq_scale (1 - mix) + mix), pos = the
// position of stream st at i2 + st * ne2 (st = 0 and ia = i but in the multi modes), mix = YaRN's
// ramp over [corr0, corr1] times ext_factor (0 without YaRN); cos and sin are scaled by
// mscale (attn_factor and YaRN's magnitude correction, from the host); rope_back negates
// sin. Elements past n_dims are copied. The angle is reduced to [-pi, pi] in two steps
// (Cody and Waite) before sin and cos, whose accuracy Vulkan bounds only there.
layout(local_size_x = 256) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // a's (= d's) extents
    uvec4 anb;  // strides in elements
    uvec4 dnb;
    uint aoff;
    uint poff;  // positions (binding 1, i32) and their stride
    uint pnb;
    uint doff;
    uint foff;  // frequency factors (binding 3, f32) when flags bit 1, and their stride
    uint fnb;
    uint flags;  // bit 0: neox-ordered pairs, bit 1: frequency factors, bits 8..: ggml's mode
    uint types;  // a | d << 8
    uint n_dims;
    uint sec01;  // sections s0 | s1 << 16, s2 | s3 << 16 (multi modes)
    uint sec23;
    float freq_base;
    float freq_scale;
    float ext_factor;
    float corr0;
    float corr1;
    float mscale;
    float sin_sign;
} p;

void main() {
    const uint idx = flat_index(256u);
    if (idx >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    const uvec4 i = unravel(idx, p.ne);
    const uint ta = p.types & 15u, td = (p.types >> 8) & 15u;
    const uint ab = p.aoff + i.y * p.anb.y + i.z * p.anb.z + i.w * p.anb.w;
    const uint di = p.doff + at(i, p.dnb);
    const uint mode = p.flags >> 8;
    const bool multi = (mode & 8u) != 0u, vision = mode == 24u;
    const uint rot = vision ? p.ne.x : p.n_dims;  // the elements the rotation covers
    if (i.x >= rot) {
        store_d(td, di, load_a(ta, ab + i.x * p.anb.x));
        return;
    }
    // the pair and its two elements
    const uint h = rot / 2u;
    uint pair, e0, e1;
    if ((p.flags & 1u) != 0u) {
        if (i.x >= h) return;
        pair = i.x;
        e0 = pair;
        e1 = pair + h;
    } else {
        if ((i.x & 1u) != 0u) return;
        pair = i.x / 2u;
        e0 = i.x;
        e1 = e0 + 1u;
    }
    // the position stream of the pair and the index its angle is computed from
    uint st = 0u, ia = pair;
    if (multi) {
        const uint s0 = p.sec01 & 0xffffu, s1 = p.sec01 >> 16, s2 = p.sec23 & 0xffffu, s3 = p.sec23 >> 16;
        const uint sec = pair % (s0 + s1 + s2 + s3);
        if (mode == 40u) {
            st = sec % 3u == 1u && sec < 3u * s1 ? 1u : sec % 3u == 2u && sec < 3u * s2 ? 2u : sec % 3u == 0u && sec < 3u * s0 ? 0u : 3u;
        } else {
            st = sec < s0 ? 0u : sec < s0 + s1 ? 1u : sec < s0 + s1 + s2 ? 2u : 3u;
            if (vision) ia = sec - (st == 0u ? 0u : st == 1u ? s0 : st == 2u ? s0 + s1 : s0 + s1 + s2);
        }
    }
    float f = pow(p.freq_base, -2.0 * float(ia) / float(p.n_dims));
    if ((p.flags & 2u) != 0u) f /= c32[p.foff + pair * p.fnb];
    float mix = 0.0;
    if (p.ext_factor != 0.0) {
        const float y = (float(pair) - p.corr0) / max(0.001, p.corr1 - p.corr0);
        mix = (1.0 - min(1.0, max(0.0, y))) * p.ext_factor;
    }
    const float theta = float(bi32[p.poff + (i.z + st * p.ne.z) * p.pnb]) * (f * (p.freq_scale * (1.0 - mix) + mix));
    const float k = round(theta * 0.15915494309189535);
    const float r = (theta - k * 6.28125) - k * 0.0019353071795864769;
    const float c = cos(r) * p.mscale, s = sin(r) * p.mscale * p.sin_sign;
    const float x0 = load_a(ta, ab + e0 * p.anb.x), x1 = load_a(ta, ab + e1 * p.anb.x);
    const uint db = p.doff + i.y * p.dnb.y + i.z * p.dnb.z + i.w * p.dnb.w;
    store_d(td, db + e0 * p.dnb.x, x0 * c - x1 * s);
    store_d(td, db + e1 * p.dnb.x, x0 * s + x1 * c);
}
