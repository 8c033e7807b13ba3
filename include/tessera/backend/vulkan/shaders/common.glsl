// tessera Vulkan, shared by every shader: the four operand bindings (0 a, 1 b, 2 d, 3 c) with one
// alias per element type, typed loads and stores that compute in f32, and index math.
//
// Element types (the host's type codes, detail_ops::tcode in ops.hpp): 0 f32, 1 f16,
// 2 bf16, 3 i32 (stored truncated toward zero). An operand's offset and strides are in
// its own elements. bf16 stores round to nearest even (NaN kept quiet), as tessera's
// f32_bits_to_bf16_bits; f16 stores convert with the device's float16_t conversion.
// Built twice by tools/gen_spirv.py: with 16-bit storage, and with TESSERA_F32_ONLY for
// devices without storageBuffer16BitAccess (then only codes 0 and 3 occur: the host
// refuses f16 and bf16 operands there).
#ifndef TESSERA_F32_ONLY
#extension GL_EXT_shader_16bit_storage : require
#define TESSERA_OPERAND_16(B, N)                                          \
    layout(std430, binding = B) buffer N##_f16_ { float16_t N##16[]; };  \
    layout(std430, binding = B) buffer N##_u16_ { uint16_t N##u16[]; };
#define TESSERA_LOAD_16(N, t, i) \
    ((t) == 1u ? float(N##16[i]) : uintBitsToFloat(uint(N##u16[i]) << 16))
#define TESSERA_STORE_16(N, t, i, v)                 \
    if ((t) == 1u) N##16[i] = float16_t(v);           \
    else N##u16[i] = uint16_t(bf16_bits(v))
uint bf16_bits(float v) {
    const uint x = floatBitsToUint(v);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
#else
#define TESSERA_OPERAND_16(B, N)
#define TESSERA_LOAD_16(N, t, i) 0.0
#define TESSERA_STORE_16(N, t, i, v)
#endif

#define TESSERA_OPERAND(B, N)                                              \
    layout(std430, binding = B) buffer N##_f32_ { float N##32[]; };       \
    layout(std430, binding = B) buffer N##_i32_ { int N##i32[]; };        \
    TESSERA_OPERAND_16(B, N)                                               \
    float load_##N(uint t, uint i) {                                       \
        if (t == 0u) return N##32[i];                                      \
        if (t == 3u) return float(N##i32[i]);                              \
        return TESSERA_LOAD_16(N, t, i);                                   \
    }                                                                      \
    void store_##N(uint t, uint i, float v) {                              \
        if (t == 0u) N##32[i] = v;                                         \
        else if (t == 3u) N##i32[i] = int(v);                              \
        else { TESSERA_STORE_16(N, t, i, v); }                             \
    }

TESSERA_OPERAND(0, a)
TESSERA_OPERAND(1, b)
TESSERA_OPERAND(2, d)
TESSERA_OPERAND(3, c)

// Element j of a row of operand a, in f32. `row` is the row's start in the operand's units:
// elements for the float types (then nb0 is the element stride, a's nb0), 16-bit words for
// the block types, whose rows are whole blocks (ggml's layouts, quant/blocks.hpp):
//   4 q4_0  (9 words):   f16 d, 16 bytes: element k < 16 the low nibble of byte k, else the
//                        high nibble of byte k - 16; x = d (q - 8)
//   5 q8_0  (17 words):  f16 d, 32 int8; x = d q
//   6 q4_K  (72 words):  f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (eight of
//                        each), 128 bytes of nibbles: element 64 c + l is the low (l < 32)
//                        or high nibble of byte 32 c + l % 32; x = d sc_s q - dmin m_s, s = e / 32
//   7 q6_K  (105 words): 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d; element
//                        128 h + 32 g + l: 4 low bits from ql[64 h + l + 32 (g & 1)] (its
//                        high nibble when g >= 2), 2 high bits from qh[32 h + l] >> 2 g;
//                        x = d scales[e / 16] (q - 32)
#ifndef TESSERA_F32_ONLY
uint a_byte(uint word0, uint k) { return (uint(au16[word0 + k / 2u]) >> (8u * (k & 1u))) & 255u; }
#endif
float load_a_row(uint t, uint row, uint j, uint nb0) {
    if (t < 4u) return load_a(t, row + j * nb0);
#ifndef TESSERA_F32_ONLY
    if (t == 4u) {
        const uint blk = row + (j / 32u) * 9u, k = j % 32u;
        const uint q = a_byte(blk + 1u, k % 16u);
        return float(a16[blk]) * (float(k < 16u ? (q & 15u) : (q >> 4u)) - 8.0);
    }
    if (t == 5u) {
        const uint blk = row + (j / 32u) * 17u;
        return float(a16[blk]) * float(int(a_byte(blk + 1u, j % 32u) << 24u) >> 24);
    }
    if (t == 6u) {
        const uint blk = row + (j / 256u) * 72u, e = j % 256u, s = e / 32u;
        uint sc, mn;
        if (s < 4u) {
            sc = a_byte(blk + 2u, s) & 63u;
            mn = a_byte(blk + 2u, s + 4u) & 63u;
        } else {
            sc = (a_byte(blk + 2u, s + 4u) & 15u) | ((a_byte(blk + 2u, s - 4u) >> 6u) << 4u);
            mn = (a_byte(blk + 2u, s + 4u) >> 4u) | ((a_byte(blk + 2u, s) >> 6u) << 4u);
        }
        const uint l = e % 64u, qb = a_byte(blk + 8u, (e / 64u) * 32u + l % 32u);
        const uint q = l < 32u ? (qb & 15u) : (qb >> 4u);
        return float(a16[blk]) * float(sc) * float(q) - float(a16[blk + 1u]) * float(mn);
    }
    {
        const uint blk = row + (j / 256u) * 105u, e = j % 256u;
        const uint h = e / 128u, g = (e % 128u) / 32u, l = e % 32u;
        const uint lo = (a_byte(blk, 64u * h + l + 32u * (g & 1u)) >> (g >= 2u ? 4u : 0u)) & 15u;
        const uint hi = (a_byte(blk + 64u, 32u * h + l) >> (2u * g)) & 3u;
        const int sc = int(a_byte(blk + 96u, e / 16u) << 24u) >> 24;
        return float(a16[blk + 104u]) * float(sc) * float(int(lo | (hi << 4u)) - 32);
    }
#else
    return 0.0;
#endif
}
// The invocation's flat index: the host splits a large grid over x and y.
uint flat_index(uint local) {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * local + gl_LocalInvocationID.x;
}
// The workgroup's flat index (shaders that give each workgroup one row).
uint group_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// (i0, i1, i2, i3) of flat index idx in a row-major traversal of extents ne.
uvec4 unravel(uint idx, uvec4 ne) {
    uvec4 i;
    i.x = idx % ne.x;
    idx /= ne.x;
    i.y = idx % ne.y;
    idx /= ne.y;
    i.z = idx % ne.z;
    i.w = idx / ne.z;
    return i;
}
uint at(uvec4 i, uvec4 nb) { return i.x * nb.x + i.y * nb.y + i.z * nb.z + i.w * nb.w; }
