#version 450
// tessera Vulkan, mul_mat f32 x f32 -> f32: d[m, n, i2, i3] = sum_k a[k, m, i2 / r2, i3 / r3] *
// b[k, n, i2, i3] (ggml's mul_mat: a's rows dot b's rows; a repeated over dims 2 and 3 when
// b has r2 = b.ne2 / a.ne2 and r3 = b.ne3 / a.ne3 times as many). A simple, correct shader:
// one invocation per output element, k in order, f32 accumulation; operands addressed by
// their strides in elements, so permuted views need no copy.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(push_constant) uniform P {
    uvec4 ne;   // d's extents: M, N, ne2, ne3
    uvec4 anb;  // strides in elements
    uvec4 bnb;
    uvec4 dnb;
    uint K;
    uint r2;
    uint r3;
    uint aoff;
    uint boff;
    uint doff;
} p;
void main() {
    const uint idx = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
    if (idx >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uint r = idx;
    const uint m = r % p.ne.x;
    r /= p.ne.x;
    const uint n = r % p.ne.y;
    r /= p.ne.y;
    const uint i2 = r % p.ne.z;
    const uint i3 = r / p.ne.z;
    uint ia = p.aoff + m * p.anb.y + (i2 / p.r2) * p.anb.z + (i3 / p.r3) * p.anb.w;
    uint ib = p.boff + n * p.bnb.y + i2 * p.bnb.z + i3 * p.bnb.w;
    float s = 0.0;
    for (uint k = 0u; k < p.K; ++k) {
        s += a[ia] * b[ib];
        ia += p.anb.x;
        ib += p.bnb.x;
    }
    d[p.doff + m * p.dnb.x + n * p.dnb.y + i2 * p.dnb.z + i3 * p.dnb.w] = s;
}
