#version 450
// tessera Vulkan, quantizing copies into q4_0 or q8_0 blocks (cpy/dup/cont of one shape,
// mode 0; set_rows, mode 1), one invocation per block of 32 source elements, as tessera's
// reference quantizers: q8_0 d = amax / 127, q = round-half-away(x / d); q4_0 d = m / -8
// (m: the first value of largest magnitude), q = min(15, trunc(x / d + 8.5)); the scale
// stored as f16 rounded to nearest even. Each invocation writes its block's 16-bit words
// only. set_rows as set_rows.comp: i32 or i64 indices, an index out of range skips.
layout(local_size_x = 64) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // the source's extents
    uvec4 anb;  // its strides in elements
    uvec4 inb;  // the indices' strides in i32 words (mode 1)
    uvec4 ine;  // their extents (y, z repeat over dims 2 and 3)
    uvec4 dnb;  // the destination's strides in 16-bit words (x unused: blocks are contiguous)
    uint aoff;
    uint ioff;
    uint doff;
    uint ta;    // the source's type code
    uint tq;    // 4 q4_0, 5 q8_0
    uint mode;  // 0 copy, 1 set_rows
    uint drows;
    uint i64;
} p;

#ifndef TESSERA_F32_ONLY
uint f16_bits(float v) {  // round to nearest even, as tessera's f16::from_float
    const uint x = floatBitsToUint(v);
    const uint sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (ax >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up round to inf
    if (ax < 0x38800000u) return sign | uint(roundEven(uintBitsToFloat(ax) * 16777216.0));  // subnormal
    const uint r = ax - 0x38000000u;
    return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
}
int round_away(float v) {
    const float t = trunc(v), f = v - t;
    return int(t) + (f >= 0.5 ? 1 : 0) - (f <= -0.5 ? 1 : 0);
}
#endif

void main() {
#ifndef TESSERA_F32_ONLY
    const uint nb = p.ne.x / 32u;
    const uint idx = flat_index(64u);
    if (idx >= nb * p.ne.y * p.ne.z * p.ne.w) return;
    const uvec4 i = unravel(idx, uvec4(nb, p.ne.y, p.ne.z, p.ne.w));  // (block, i1, i2, i3)
    uint row = i.y;
    if (p.mode == 1u) {
        const uint ip = p.ioff + i.y * p.inb.x + (i.z % p.ine.y) * p.inb.y + (i.w % p.ine.z) * p.inb.z;
        const int lo = bi32[ip];
        const bool ok = p.i64 != 0u ? bi32[ip + 1u] == 0 && uint(lo) < p.drows : lo >= 0 && uint(lo) < p.drows;
        if (!ok) return;
        row = uint(lo);
    }
    const uint src = p.aoff + i.x * 32u * p.anb.x + i.y * p.anb.y + i.z * p.anb.z + i.w * p.anb.w;
    float x[32];
    float amax = 0.0, m = 0.0, mmag = 0.0;
    for (uint j = 0u; j < 32u; ++j) {
        x[j] = load_a(p.ta, src + j * p.anb.x);
        const float a = abs(x[j]);
        amax = amax > a ? amax : a;
        if (a > mmag) {
            mmag = a;
            m = x[j];
        }
    }
    const uint words = p.tq == 4u ? 9u : 17u;
    const uint dst = p.doff + i.x * words + row * p.dnb.y + i.z * p.dnb.z + i.w * p.dnb.w;
    if (p.tq == 5u) {
        const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
        du16[dst] = uint16_t(f16_bits(d));
        for (uint w = 0u; w < 16u; ++w) {
            const uint q0 = uint(round_away(x[2u * w] * id)) & 255u, q1 = uint(round_away(x[2u * w + 1u] * id)) & 255u;
            du16[dst + 1u + w] = uint16_t(q0 | q1 << 8);
        }
    } else {
        const float d = m / -8.0, id = d != 0.0 ? 1.0 / d : 0.0;
        du16[dst] = uint16_t(f16_bits(d));
        uint q[32];
        for (uint j = 0u; j < 32u; ++j) {
            precise const float prod = x[j] * id;  // rounded, never fused with the add
            precise const float v = prod + 8.5;
            q[j] = min(15u, uint(int(trunc(v))) & 255u);
        }
        for (uint w = 0u; w < 8u; ++w) {
            const uint b0 = q[2u * w] | q[2u * w + 16u] << 4, b1 = q[2u * w + 1u] | q[2u * w + 17u] << 4;
            du16[dst + 1u + w] = uint16_t(b0 | b1 << 8);
        }
    }
#endif
}
