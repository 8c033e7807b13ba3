// tessera Vulkan, shared by every shader: the six operand bindings (0 a, 1 b, 2 d, 3 c, 4 e, 5 f) with one
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
TESSERA_OPERAND(4, e)
TESSERA_OPERAND(5, f)

// Element j of a row of operand N (a, b or c) that starts at element (or, quantized,
// 16-bit word) `row` and has element stride nb0: the typed loads, and the quantized
// blocks read in 16-bit words (type codes 4 q4_0: f16 scale, 16 bytes, low nibbles
// elements 0-15, high 16-31, x = d (q - 8); 5 q8_0: f16 scale, 32 int8, x = d q).
#ifndef TESSERA_F32_ONLY
#define TESSERA_ROW_LOADER(N)                                                                  \
    uint N##_byte(uint word0, uint k) { return (uint(N##u16[word0 + k / 2u]) >> (8u * (k & 1u))) & 255u; } \
    float load_##N##_row(uint t, uint row, uint j, uint nb0) {                                 \
        if (t < 4u) return load_##N(t, row + j * nb0);                                         \
        if (t == 4u) {                                                                         \
            const uint blk = row + (j / 32u) * 9u, k = j % 32u;                                \
            const uint q = N##_byte(blk + 1u, k % 16u);                                        \
            return float(N##16[blk]) * (float(k < 16u ? (q & 15u) : (q >> 4u)) - 8.0);        \
        }                                                                                      \
        const uint blk = row + (j / 32u) * 17u;                                                \
        return float(N##16[blk]) * float(int(N##_byte(blk + 1u, j % 32u) << 24u) >> 24);      \
    }
#else
#define TESSERA_ROW_LOADER(N) \
    float load_##N##_row(uint t, uint row, uint j, uint nb0) { return load_##N(t, row + j * nb0); }
#endif
TESSERA_ROW_LOADER(a)
TESSERA_ROW_LOADER(b)
TESSERA_ROW_LOADER(c)

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
