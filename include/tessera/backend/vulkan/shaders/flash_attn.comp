#version 450
// tessera Vulkan, flash_attn_ext: for query row (iq1, head h, batch i3) and every KV row j,
//   s_j = scale * q . k_j, s_j = softcap * tanh(s_j / softcap) when softcap > 0,
//   s_j += slope(h) * mask[j, iq1, h % mne2, i3 % mne3],
//   d[:, h, iq1, i3] = sum_j exp(s_j - M) v_j / (sum_j exp(s_j - M) + exp(sink_h - M)),
// with K/V head h / (H / Hkv) and batch i3 / (B / Bkv) (grouped-query attention), ALiBi
// slopes as ggml (m0^(h+1) below n_log2, the largest power of two <= H, else
// m1^(2 (h - n_log2) + 1)), the sink term only with sinks, and zeros for a row with no
// visible KV row. One workgroup of 64 per query row: the KV rows go by in chunks of 64,
// each invocation scores one row of the chunk, then the chunk's weights are folded into a
// running maximum and sum (online softmax) and into the output dims each invocation owns
// (dim t, t + 64, ... up to 8 of them: Dv <= 512). K/V are f32, f16 or bf16.
layout(local_size_x = 64) in;
#include "common.glsl"
TESSERA_OPERAND(4, m)
TESSERA_OPERAND(5, s)
// bindings: a = q (f32), b = k, d = the result (f32), c = v, m = the mask, s = the sinks (f32)
layout(push_constant) uniform P {
    uint D;     // head size of q and k
    uint Dv;    // of v and the result
    uint nkv;   // KV rows
    uint nq;    // query rows (q's dim 1)
    uint H;     // q's heads (dim 2)
    uint B;     // q's dim 3
    uint rh;    // H / Hkv
    uint rb;    // B / Bkv
    uint q1, q2, q3;  // strides in elements (dim 0 is contiguous in every operand)
    uint k1, k2, k3;
    uint v1, v2, v3;
    uint m1, m2, m3;
    uint mne2, mne3;  // the mask's extents in dims 2 and 3
    uint qoff, koff, voff, moff, soff, doff;
    uint types;  // k | v << 4 | mask << 8 | has_mask << 12 | has_sinks << 13
    float scale;
    float max_bias;
    float softcap;
} p;

shared float sq[512];  // the query row
shared float sw[64];   // the chunk's scores, then its weights

void main() {
    const uint row = group_index();
    if (row >= p.nq * p.H * p.B) return;  // the whole workgroup
    const uint t = gl_LocalInvocationID.x;
    const uint iq1 = row % p.nq, h = (row / p.nq) % p.H, i3 = row / (p.nq * p.H);
    const uint tk = p.types & 15u, tv = (p.types >> 4) & 15u, tm = (p.types >> 8) & 15u;
    const bool has_mask = ((p.types >> 12) & 1u) != 0u, has_sinks = ((p.types >> 13) & 1u) != 0u;
    const uint qb = p.qoff + iq1 * p.q1 + h * p.q2 + i3 * p.q3;
    const uint kb = p.koff + (h / p.rh) * p.k2 + (i3 / p.rb) * p.k3;
    const uint vb = p.voff + (h / p.rh) * p.v2 + (i3 / p.rb) * p.v3;
    const uint mb = p.moff + iq1 * p.m1 + (h % p.mne2) * p.m2 + (i3 % p.mne3) * p.m3;
    for (uint e = t; e < p.D; e += 64u) sq[e] = a32[qb + e];
    float slope = 1.0;
    if (p.max_bias > 0.0) {
        const uint n_log2 = 1u << uint(findMSB(p.H));
        const float m0 = exp2(-p.max_bias / float(n_log2)), m1 = exp2(-(p.max_bias / 2.0) / float(n_log2));
        slope = h < n_log2 ? pow(m0, float(h + 1u)) : pow(m1, float(2u * (h - n_log2) + 1u));
    }
    barrier();
    const float ninf = -1.0 / 0.0;
    float M = ninf, S = 0.0;
    float acc[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (uint j0 = 0u; j0 < p.nkv; j0 += 64u) {
        const uint j = j0 + t;
        float sc = ninf;
        if (j < p.nkv) {
            const float mv = has_mask ? slope * load_m(tm, mb + j) : 0.0;
            if (!(isinf(mv) && mv < 0.0)) {  // a masked row needs no dot product
                float dot = 0.0;
                const uint kr = kb + j * p.k1;
                for (uint e = 0u; e < p.D; ++e) dot += sq[e] * load_b(tk, kr + e);
                sc = dot * p.scale;
                if (p.softcap > 0.0) sc = p.softcap * tanh(sc / p.softcap);
                sc += mv;
            }
        }
        sw[t] = sc;
        barrier();
        float cm = ninf;
        for (uint i = 0u; i < 64u; ++i) cm = max(cm, sw[i]);
        const float Mn = max(M, cm);
        barrier();
        if (Mn == ninf) continue;  // nothing visible yet (uniform over the workgroup)
        sw[t] = sc == ninf ? 0.0 : exp(sc - Mn);
        barrier();
        const float alpha = M == ninf ? 0.0 : exp(M - Mn);
        S *= alpha;
        for (uint r = 0u; r < 8u; ++r) acc[r] *= alpha;
        const uint n = min(64u, p.nkv - j0);
        for (uint i = 0u; i < n; ++i) {
            const float w = sw[i];
            S += w;
            if (w == 0.0) continue;
            const uint vr = vb + (j0 + i) * p.v1;
            for (uint r = 0u; r < 8u; ++r) {
                const uint e = t + 64u * r;
                if (e < p.Dv) acc[r] += w * load_c(tv, vr + e);
            }
        }
        M = Mn;
        barrier();
    }
    if (has_sinks) {
        const float sk = load_s(0u, p.soff + h);
        const float Mn = max(M, sk);
        if (Mn != ninf) {
            const float alpha = M == ninf ? 0.0 : exp(M - Mn);
            S = S * alpha + exp(sk - Mn);
            for (uint r = 0u; r < 8u; ++r) acc[r] *= alpha;
        }
    }
    const float inv = S > 0.0 ? 1.0 / S : 0.0;
    const uint db = p.doff + ((i3 * p.nq + iq1) * p.H + h) * p.Dv;
    for (uint r = 0u; r < 8u; ++r) {
        const uint e = t + 64u * r;
        if (e < p.Dv) store_d(0u, db + e, acc[r] * inv);
    }
}
