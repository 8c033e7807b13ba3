#version 450
// tessera Vulkan, get_rows: d[j, i, i2, i3] = a[j, idx[i, i2, i3], i2, i3] in f32 (i32 rows
// into an i32 result: the bits), one invocation per element of d. a is f32, f16, bf16,
// q4_0 or q8_0 (common.glsl's load_a_row, quantized blocks read in 16-bit words).
// An index outside [0, a's rows) gives a row of zeros, as the CPU (never a wild read).
layout(local_size_x = 256) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // d's extents
    uvec4 anb;  // a's strides in its units (elements; 16-bit words when quantized)
    uvec4 inb;  // idx's strides in i32 (x: along the indices, y, z: dims 2 and 3)
    uvec4 dnb;
    uint aoff;
    uint ioff;
    uint doff;
    uint ta;     // type code: 0 f32, 1 f16, 2 bf16, 3 i32, 4 q4_0, 5 q8_0
    uint arows;  // a's extent in dim 1
} p;

void main() {
    const uint idx = flat_index(256u);
    if (idx >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    const uvec4 i = unravel(idx, p.ne);
    const int row = bi32[p.ioff + i.y * p.inb.x + i.z * p.inb.y + i.w * p.inb.z];
    if (p.ta == 3u) {
        const bool ok = row >= 0 && uint(row) < p.arows;
        di32[p.doff + at(i, p.dnb)] = ok ? ai32[p.aoff + uint(row) * p.anb.y + i.z * p.anb.z + i.w * p.anb.w + i.x * p.anb.x] : 0;
        return;
    }
    float v = 0.0;
    if (row >= 0 && uint(row) < p.arows) v = load_a_row(p.ta, p.aoff + uint(row) * p.anb.y + i.z * p.anb.z + i.w * p.anb.w, i.x, p.anb.x);
    store_d(0u, p.doff + at(i, p.dnb), v);
}
