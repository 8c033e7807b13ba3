#version 450
// tessera Vulkan, soft_max with an optional mask and ALiBi, one workgroup of 128 per row:
// v = x * scale + slope * mask[j, i1, i2 % mne2, i3 % mne3], d = exp(v - max v) / sum;
// with sinks (binding 3, f32, one logit per head i2) the sink joins the max and the sum;
// a row whose every v is -inf gives zeros (as the CPU). slope (ALiBi, ggml's formula) is
// m0^(h+1) for head h = i2 < n_log2, else m1^(2 (h - n_log2) + 1); 1 without max_bias.
// Three passes over the row (max, sum, write); sums by a shared-memory tree.
layout(local_size_x = 128) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // a's (= d's) extents
    uvec4 anb;  // strides in elements
    uvec4 mnb;
    uvec4 dnb;
    uint mne2;  // the mask's extents in dims 2 and 3
    uint mne3;
    uint aoff;
    uint moff;
    uint doff;
    uint types;  // a | mask << 4 | d << 8
    uint has_mask;
    float scale;
    float m0;  // ALiBi: m0, m1, n_log2; max_bias > 0 iff alibi = 1
    float m1;
    uint n_log2;
    uint alibi;
    uint has_sinks;
    uint soff;  // the sinks' first element and stride
    uint snb;
} p;

shared float sv[128];

float workgroup_op(float v, bool is_max) {
    const uint t = gl_LocalInvocationID.x;
    sv[t] = v;
    barrier();
    for (uint s = 64u; s > 0u; s >>= 1u) {
        if (t < s) sv[t] = is_max ? max(sv[t], sv[t + s]) : sv[t] + sv[t + s];
        barrier();
    }
    const float r = sv[0];
    barrier();
    return r;
}

void main() {
    const uint row = group_index();
    if (row >= p.ne.y * p.ne.z * p.ne.w) return;  // the whole workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint i1 = row % p.ne.y, i2 = (row / p.ne.y) % p.ne.z, i3 = row / (p.ne.y * p.ne.z);
    const uint ab = p.aoff + i1 * p.anb.y + i2 * p.anb.z + i3 * p.anb.w;
    const uint mb = p.moff + i1 * p.mnb.y + (i2 % p.mne2) * p.mnb.z + (i3 % p.mne3) * p.mnb.w;
    const uint db = p.doff + i1 * p.dnb.y + i2 * p.dnb.z + i3 * p.dnb.w;
    const uint ta = p.types & 15u, tm = (p.types >> 4) & 15u, td = (p.types >> 8) & 15u;
    float slope = 1.0;
    if (p.alibi != 0u) slope = i2 < p.n_log2 ? pow(p.m0, float(i2 + 1u)) : pow(p.m1, float(2u * (i2 - p.n_log2) + 1u));
    const uint n = p.ne.x;
    float mx = -1.0 / 0.0;
    for (uint j = t; j < n; j += 128u) {
        float v = load_a(ta, ab + j * p.anb.x) * p.scale;
        if (p.has_mask != 0u) v += slope * load_b(tm, mb + j * p.mnb.x);
        mx = max(mx, v);
    }
    mx = workgroup_op(mx, true);
    const float sink = p.has_sinks != 0u ? c32[p.soff + i2 * p.snb] : -1.0 / 0.0;
    mx = max(mx, sink);
    if (isinf(mx) && mx < 0.0) {  // every element masked
        for (uint j = t; j < n; j += 128u) store_d(td, db + j * p.dnb.x, 0.0);
        return;
    }
    float s = 0.0;
    for (uint j = t; j < n; j += 128u) {
        float v = load_a(ta, ab + j * p.anb.x) * p.scale;
        if (p.has_mask != 0u) v += slope * load_b(tm, mb + j * p.mnb.x);
        s += exp(v - mx);
    }
    s = workgroup_op(s, false);
    if (p.has_sinks != 0u) s += exp(sink - mx);
    const float inv = 1.0 / s;
    for (uint j = t; j < n; j += 128u) {
        float v = load_a(ta, ab + j * p.anb.x) * p.scale;
        if (p.has_mask != 0u) v += slope * load_b(tm, mb + j * p.mnb.x);
        store_d(td, db + j * p.dnb.x, exp(v - mx) * inv);
    }
}
