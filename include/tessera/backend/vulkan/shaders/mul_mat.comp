#version 450
// tessera Vulkan, mul_mat: d[m, n, i2, i3] = sum_k a[k, m, i2 / r2, i3 / r3] * b[k, n, i2, i3]
// (ggml's mul_mat: rows of a dot rows of b; a repeated over dims 2 and 3). a is f32, f16,
// bf16 or a block type (common.glsl's load_a_row decodes it), b f32/f16/bf16, d f32; sums
// in f32. Three builds of this source:
//   (default)    matvec: a workgroup of 64 per result element; the invocations take every
//                64th k and a shared-memory tree adds their sums (for few columns of b);
//   -DTILED      a workgroup of 16 x 16 computes a 64 x 64 tile of d, 4 x 4 per
//                invocation, from 64 x 16 slices of a and b staged (a decoded) in shared
//                memory (for many columns: each element of a is read 64 times fewer);
//   -DMUL_MAT_ID mul_mat_id (ids at binding 3, operand c): d[m, e, t] = sum_k as[k, m, ids[e, t]] * b[k, e % nb1, t],
//                matvec-style; an expert id outside [0, n_expert) gives zeros (the host
//                cannot be told from inside a shader; the CPU refuses such ids).
#ifdef TILED
layout(local_size_x = 256) in;
#else
layout(local_size_x = 64) in;
#endif
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // d's extents: M, N, ne2, ne3
    uvec4 anb;  // a's strides in its units (x: the element stride of a float a)
    uvec4 bnb;  // in elements
    uvec4 dnb;
    uint K;
    uint r2;    // mul_mat_id: n_expert
    uint r3;    // mul_mat_id: b's extent in dim 1
    uint aoff;
    uint boff;
    uint doff;
    uint types;  // a | b << 4
    uint ioff;   // mul_mat_id: ids' first element, then its strides (i32 units)
    uint inb0;
    uint inb1;
} p;

#ifdef TILED
shared float sa[16][64];
shared float sb[16][64];

void main() {
    const uint tiles_m = (p.ne.x + 63u) / 64u, tiles_n = (p.ne.y + 63u) / 64u;
    uint g = group_index();
    if (g >= tiles_m * tiles_n * p.ne.z * p.ne.w) return;  // the whole workgroup
    const uint tm = g % tiles_m;
    g /= tiles_m;
    const uint tn = g % tiles_n;
    g /= tiles_n;
    const uint i2 = g % p.ne.z, i3 = g / p.ne.z;
    const uint ta = p.types & 15u, tb = (p.types >> 4) & 15u;
    const uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
    const uint abase = p.aoff + (i2 / p.r2) * p.anb.z + (i3 / p.r3) * p.anb.w;
    const uint bbase = p.boff + i2 * p.bnb.z + i3 * p.bnb.w;
    float acc[4][4];
    for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
    for (uint k0 = 0u; k0 < p.K; k0 += 16u) {
        // stage: 1024 elements of each slice, 4 per invocation; zeros past the edges
        for (uint r = 0u; r < 4u; ++r) {
            const uint idx = t + 256u * r, kk = idx % 16u, mm = idx / 16u;
            const uint k = k0 + kk, m = tm * 64u + mm, n = tn * 64u + mm;
            sa[kk][mm] = (k < p.K && m < p.ne.x) ? load_a_row(ta, abase + m * p.anb.y, k, p.anb.x) : 0.0;
            sb[kk][mm] = (k < p.K && n < p.ne.y) ? load_b(tb, bbase + n * p.bnb.y + k * p.bnb.x) : 0.0;
        }
        barrier();
        for (uint kk = 0u; kk < 16u; ++kk) {
            float x[4], y[4];
            for (uint i = 0u; i < 4u; ++i) x[i] = sa[kk][tx + 16u * i];
            for (uint j = 0u; j < 4u; ++j) y[j] = sb[kk][ty + 16u * j];
            for (uint i = 0u; i < 4u; ++i)
                for (uint j = 0u; j < 4u; ++j) acc[i][j] += x[i] * y[j];
        }
        barrier();
    }
    for (uint i = 0u; i < 4u; ++i)
        for (uint j = 0u; j < 4u; ++j) {
            const uint m = tm * 64u + tx + 16u * i, n = tn * 64u + ty + 16u * j;
            if (m < p.ne.x && n < p.ne.y) store_d(0u, p.doff + m * p.dnb.x + n * p.dnb.y + i2 * p.dnb.z + i3 * p.dnb.w, acc[i][j]);
        }
}

#else

shared float red[64];

void main() {
    uint g = group_index();
    if (g >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;  // the whole workgroup
    const uint m = g % p.ne.x;
    g /= p.ne.x;
    const uint n = g % p.ne.y;
    g /= p.ne.y;
    const uint i2 = g % p.ne.z, i3 = g / p.ne.z;
    const uint ta = p.types & 15u, tb = (p.types >> 4) & 15u;
    const uint t = gl_LocalInvocationID.x;
#ifdef MUL_MAT_ID
    // n: the expert slot e, i2: the token
    const int e = ci32[p.ioff + n * p.inb0 + i2 * p.inb1];
    const bool ok = e >= 0 && uint(e) < p.r2;
    const uint abase = p.aoff + (ok ? uint(e) : 0u) * p.anb.z + m * p.anb.y;
    const uint bbase = p.boff + (n % p.r3) * p.bnb.y + i2 * p.bnb.z;
#else
    const bool ok = true;
    const uint abase = p.aoff + m * p.anb.y + (i2 / p.r2) * p.anb.z + (i3 / p.r3) * p.anb.w;
    const uint bbase = p.boff + n * p.bnb.y + i2 * p.bnb.z + i3 * p.bnb.w;
#endif
    float s = 0.0;
    if (ok)
        for (uint k = t; k < p.K; k += 64u) s += load_a_row(ta, abase, k, p.anb.x) * load_b(tb, bbase + k * p.bnb.x);
    red[t] = s;
    barrier();
    for (uint w = 32u; w > 0u; w >>= 1u) {
        if (t < w) red[t] += red[t + w];
        barrier();
    }
    if (t == 0u) store_d(0u, p.doff + m * p.dnb.x + n * p.dnb.y + i2 * p.dnb.z + i3 * p.dnb.w, red[0]);
}
#endif
