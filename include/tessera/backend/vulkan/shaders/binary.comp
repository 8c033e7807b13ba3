#version 450
// tessera Vulkan, f32 element-wise ops: d = a OP b for add (op 0), sub (1), mul (2), div (3),
// with b repeated over d (ggml's broadcast: b's extent divides d's), or d = a * s + t for
// scale (op 4, b unused). One invocation per element of d; every operand is addressed by
// its own strides in elements (push constants), so views, permutations and broadcast
// operands need no copy. The host splits a large grid over x and y (65535 groups each).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(push_constant) uniform P {
    uvec4 ne;   // d's extents (= a's)
    uvec4 bne;  // b's extents
    uvec4 anb;  // strides in elements
    uvec4 bnb;
    uvec4 dnb;
    uint aoff;  // first element of each operand inside its binding
    uint boff;
    uint doff;
    uint op;
    float s;
    float t;
} p;
void main() {
    const uint idx = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (idx >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    uint r = idx;
    const uint i0 = r % p.ne.x;
    r /= p.ne.x;
    const uint i1 = r % p.ne.y;
    r /= p.ne.y;
    const uint i2 = r % p.ne.z;
    const uint i3 = r / p.ne.z;
    const float x = a[p.aoff + i0 * p.anb.x + i1 * p.anb.y + i2 * p.anb.z + i3 * p.anb.w];
    float v;
    if (p.op == 4u) {
        v = x * p.s + p.t;
    } else {
        const float y = b[p.boff + (i0 % p.bne.x) * p.bnb.x + (i1 % p.bne.y) * p.bnb.y + (i2 % p.bne.z) * p.bnb.z +
                          (i3 % p.bne.w) * p.bnb.w];
        if (p.op == 0u) v = x + y;
        else if (p.op == 1u) v = x - y;
        else if (p.op == 2u) v = x * y;
        else v = x / y;
    }
    d[p.doff + i0 * p.dnb.x + i1 * p.dnb.y + i2 * p.dnb.z + i3 * p.dnb.w] = v;
}
