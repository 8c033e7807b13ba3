#version 450
// tessera Vulkan, row reductions, one workgroup of 128 per row of a (any strides), sums
// in f32 by a shared-memory tree (no assumption on the subgroup size):
//   op 0 rms_norm  d = x / sqrt(mean(x^2) + eps)
//   op 1 norm      d = (x - mean) / sqrt(mean((x - mean)^2) + eps)
//   op 2 sum_rows  d[0, row] = sum(x)
//   op 3 mean      d[0, row] = sum(x) / ne0
//   op 4 argmax    d[row] = the index of the largest x (ties: the lowest), i32; as the
//                  CPU's scan, NaNs never win, and a NaN first element gives 0
//   op 5 l2_norm   d = x / max(sqrt(sum(x^2)), eps)
layout(local_size_x = 128) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // a's extents
    uvec4 anb;  // strides in elements
    uvec4 dnb;
    uint aoff;
    uint doff;
    uint op;
    uint types;  // a | d << 8
    float eps;
} p;

shared float sv[128];
shared uint si[128];

float workgroup_sum(float v) {
    const uint t = gl_LocalInvocationID.x;
    sv[t] = v;
    barrier();
    for (uint s = 64u; s > 0u; s >>= 1u) {
        if (t < s) sv[t] += sv[t + s];
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
    const uint db = p.doff + i1 * p.dnb.y + i2 * p.dnb.z + i3 * p.dnb.w;
    const uint ta = p.types & 15u, td = (p.types >> 8) & 15u;
    const uint n = p.ne.x;
    if (p.op == 4u) {
        float best = -1.0 / 0.0;
        uint bi = 0xffffffffu;
        for (uint j = t; j < n; j += 128u) {
            const float x = load_a(ta, ab + j * p.anb.x);
            if (isnan(x)) continue;
            if (bi == 0xffffffffu || x > best) {
                best = x;
                bi = j;
            }
        }
        sv[t] = best;
        si[t] = bi;
        barrier();
        for (uint s = 64u; s > 0u; s >>= 1u) {
            if (t < s && si[t + s] != 0xffffffffu &&
                (si[t] == 0xffffffffu || sv[t + s] > sv[t] || (sv[t + s] == sv[t] && si[t + s] < si[t]))) {
                sv[t] = sv[t + s];
                si[t] = si[t + s];
            }
            barrier();
        }
        if (t == 0u) di32[p.doff + row * p.dnb.x] = si[0] == 0xffffffffu || isnan(load_a(ta, ab)) ? 0 : int(si[0]);
        return;
    }
    float s = 0.0;
    for (uint j = t; j < n; j += 128u) {
        const float x = load_a(ta, ab + j * p.anb.x);
        s += p.op == 0u || p.op == 5u ? x * x : x;
    }
    s = workgroup_sum(s);
    if (p.op == 2u || p.op == 3u) {
        if (t == 0u) store_d(td, db, p.op == 3u ? s / float(n) : s);
        return;
    }
    float mean = 0.0, sc;
    if (p.op == 5u) {
        sc = 1.0 / max(sqrt(s), p.eps);
    } else if (p.op == 0u) {
        sc = 1.0 / sqrt(s / float(n) + p.eps);
    } else {
        mean = s / float(n);
        float q = 0.0;
        for (uint j = t; j < n; j += 128u) {
            const float x = load_a(ta, ab + j * p.anb.x) - mean;
            q += x * x;
        }
        q = workgroup_sum(q);
        sc = 1.0 / sqrt(q / float(n) + p.eps);
    }
    for (uint j = t; j < n; j += 128u) store_d(td, db + j * p.dnb.x, (load_a(ta, ab + j * p.anb.x) - mean) * sc);
}
