#version 450
// tessera Vulkan, mul_mat -> f32: d[m, n, i2, i3] = sum_k a[k, m, i2 / r2, i3 / r3] *
// b[k, n, i2, i3] (ggml's mul_mat: a's rows dot b's rows; a repeated over dims 2 and 3 when
// b has r2 = b.ne2 / a.ne2 and r3 = b.ne3 / a.ne3 times as many). a is f32, f16, bf16, q4_0
// or q8_0 (common.glsl's load_a_row), b f32, f16 or bf16. A simple, correct shader: one
// invocation per output element, k in order, f32 accumulation; operands addressed by
// their strides, so permuted views need no copy.
layout(local_size_x = 64) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // d's extents: M, N, ne2, ne3
    uvec4 anb;  // strides in elements (a quantized: 16-bit words; x unused)
    uvec4 bnb;
    uvec4 dnb;
    uint K;
    uint r2;
    uint r3;
    uint aoff;
    uint boff;
    uint doff;
    uint types;  // a | b << 4
} p;
void main() {
    const uint idx = flat_index(64u);
    if (idx >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    const uvec4 i = unravel(idx, p.ne);
    const uint ta = p.types & 15u, tb = (p.types >> 4) & 15u;
    const uint ia = p.aoff + i.x * p.anb.y + (i.z / p.r2) * p.anb.z + (i.w / p.r3) * p.anb.w;
    uint ib = p.boff + i.y * p.bnb.y + i.z * p.bnb.z + i.w * p.bnb.w;
    float s = 0.0;
    if (ta == 0u && tb == 0u) {
        uint ka = ia;
        for (uint k = 0u; k < p.K; ++k) {
            s += a32[ka] * b32[ib];
            ka += p.anb.x;
            ib += p.bnb.x;
        }
    } else {
        for (uint k = 0u; k < p.K; ++k) {
            s += load_a_row(ta, ia, k, p.anb.x) * load_b(tb, ib);
            ib += p.bnb.x;
        }
    }
    d32[p.doff + at(i, p.dnb)] = s;
}
