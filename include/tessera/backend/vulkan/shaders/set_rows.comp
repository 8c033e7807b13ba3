#version 450
// tessera Vulkan, set_rows: d[j, idx[i, i2 % ine.y, i3 % ine.z], i2, i3] = a[j, i, i2, i3],
// one invocation per element of the source a (f32, f16, bf16; d f32 or f16, in place).
// Indices are i32, or i64 read as two i32 words (low, high); an index outside [0, d's
// rows) skips its row, as the CPU. Two equal indices write one row twice, in no fixed order.
layout(local_size_x = 256) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // a's extents
    uvec4 anb;  // strides in elements
    uvec4 inb;  // idx's strides in i32 words
    uvec4 ine;  // idx's extents (y, z repeat over a's dims 2 and 3)
    uvec4 dnb;
    uint aoff;
    uint ioff;
    uint doff;
    uint types;  // a | d << 8
    uint drows;  // d's extent in dim 1
    uint i64;    // indices are i64
} p;
void main() {
    const uint idx = flat_index(256u);
    if (idx >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    const uvec4 i = unravel(idx, p.ne);
    const uint ip = p.ioff + i.y * p.inb.x + (i.z % p.ine.y) * p.inb.y + (i.w % p.ine.z) * p.inb.z;
    const int lo = bi32[ip];
    const bool ok = p.i64 != 0u ? bi32[ip + 1u] == 0 && uint(lo) < p.drows : lo >= 0 && uint(lo) < p.drows;
    if (!ok) return;
    const float v = load_a(p.types & 15u, p.aoff + at(i, p.anb));
    store_d((p.types >> 8) & 15u, p.doff + i.x * p.dnb.x + uint(lo) * p.dnb.y + i.z * p.dnb.z + i.w * p.dnb.w, v);
}
