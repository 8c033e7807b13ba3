#version 450
// tessera Vulkan, flash_attn_ext: one workgroup of 128 per (query i1, head h, i3), the
// online softmax over tiles of 128 keys. Operands: q (binding 0, f32), k (1), v (3), both
// f32/f16/bf16/q4_0/q8_0 with contiguous rows (common.glsl's row loaders), the mask (4, f32/f16, optional), the sinks (5, f32,
// optional), d (2, f32 [Dv, H, n_q, ne3], contiguous). KV head h / rk2, i3 / rk3 (GQA).
// Score s_j = q . k_j, then s * scale (or softcap * tanh(s * scale / softcap)) + slope *
// mask[j, i1, h % mne2, i3 % mne3], slope as soft_max.comp (ALiBi over the H heads).
// Thread t computes the score of key j0 + t of a tile and owns the output elements
// t, t + 128, ... (Dv <= 512). A query whose every score is -inf gives zeros; a sink joins
// the max and the sum.
layout(local_size_x = 128) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uint qnb1, qnb2, qnb3;  // strides in elements (dim 0 contiguous)
    uint knb1, knb2, knb3;
    uint vnb1, vnb2, vnb3;
    uint mnb1, mnb2, mnb3;
    uint Dk, Dv, n_q, H, ne3, n_kv;
    uint rk23;   // rk2 | rk3 << 16
    uint mne23;  // mne2 | mne3 << 16
    uint qoff, koff, voff, doff, moff, soff;
    uint flags;  // tk | tv << 4 | tm << 8, bit 12 mask, bit 13 sinks, bit 14 ALiBi
    float scale;
    float softcap;
    float m0;
    float m1;
    uint n_log2;
} p;

shared float qs[1024];
shared float sc[128];
shared float red[128];

float group_max(float v) {
    const uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint s = 64u; s > 0u; s >>= 1u) {
        if (t < s) red[t] = max(red[t], red[t + s]);
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

void main() {
    const uint row = group_index();
    if (row >= p.n_q * p.H * p.ne3) return;  // the whole workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint i1 = row % p.n_q, h = (row / p.n_q) % p.H, i3 = row / (p.n_q * p.H);
    const uint rk2 = p.rk23 & 0xffffu, rk3 = p.rk23 >> 16, mne2 = p.mne23 & 0xffffu, mne3 = p.mne23 >> 16;
    const uint tk = p.flags & 15u, tv = (p.flags >> 4) & 15u, tm = (p.flags >> 8) & 15u;
    const bool has_mask = (p.flags & 0x1000u) != 0u, has_sinks = (p.flags & 0x2000u) != 0u, alibi = (p.flags & 0x4000u) != 0u;
    const uint kb = p.koff + (h / rk2) * p.knb2 + (i3 / rk3) * p.knb3;
    const uint vb = p.voff + (h / rk2) * p.vnb2 + (i3 / rk3) * p.vnb3;
    const uint mb = p.moff + i1 * p.mnb1 + (h % mne2) * p.mnb2 + (i3 % mne3) * p.mnb3;
    float slope = 1.0;
    if (alibi) slope = h < p.n_log2 ? pow(p.m0, float(h + 1u)) : pow(p.m1, float(2u * (h - p.n_log2) + 1u));
    const float ninf = -1.0 / 0.0;

    const uint qb = p.qoff + i1 * p.qnb1 + h * p.qnb2 + i3 * p.qnb3;
    for (uint e = t; e < p.Dk; e += 128u) qs[e] = a32[qb + e];
    barrier();

    float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
    float m = ninf, sum = 0.0;
    for (uint j0 = 0u; j0 < p.n_kv; j0 += 128u) {
        const uint j = j0 + t;
        float s = ninf;
        if (j < p.n_kv) {
            float dot = 0.0;
            const uint kr = kb + j * p.knb1;
            for (uint e = 0u; e < p.Dk; ++e) dot += qs[e] * load_b_row(tk, kr, e, 1u);
            s = p.softcap != 0.0 ? p.softcap * tanh(clamp(dot * p.scale / p.softcap, -15.0, 15.0)) : dot * p.scale;
            if (has_mask) s += slope * load_e(tm, mb + j);
        }
        const float mt = group_max(s);
        const float m_new = max(m, mt);
        sc[t] = m_new == ninf ? 0.0 : exp(s - m_new);
        barrier();
        if (m_new != ninf) {
            const float f = exp(m - m_new);  // 0 while m is -inf
            float ts = 0.0;
            const uint n = min(128u, p.n_kv - j0);
            for (uint jj = 0u; jj < n; ++jj) ts += sc[jj];
            sum = sum * f + ts;
            for (uint r = 0u; r < 4u; ++r) {
                const uint e = t + 128u * r;
                if (e >= p.Dv) break;
                float a = acc[r] * f;
                for (uint jj = 0u; jj < n; ++jj) a += sc[jj] * load_c_row(tv, vb + (j0 + jj) * p.vnb1, e, 1u);
                acc[r] = a;
            }
            m = m_new;
        }
        barrier();
    }
    float f = 1.0;
    if (has_sinks) {
        const float sk = f32[p.soff + h];
        if (sk > m) {
            f = exp(m - sk);
            sum = sum * f + 1.0;
        } else {
            sum += exp(sk - m);
        }
    }
    const float inv = sum > 0.0 ? f / sum : 0.0;
    const uint db = p.doff + h * p.Dv + i1 * p.Dv * p.H + i3 * p.Dv * p.H * p.n_q;
    for (uint r = 0u; r < 4u; ++r) {
        const uint e = t + 128u * r;
        if (e < p.Dv) d32[db + e] = acc[r] * inv;
    }
}
