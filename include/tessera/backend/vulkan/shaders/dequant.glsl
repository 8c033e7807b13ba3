// tessera Vulkan: element k of a row of operand a (binding 0) of any weight type, in f32.
// `base` is the row's start in the operand's units: elements for f32/f16/bf16 (then `step`
// is the element stride, a's nb0), 16-bit words for the block types, whose rows are whole
// blocks (ggml's layouts, quant/blocks.hpp):
//   4 q4_0  (9 words):  f16 d, 16 bytes: element j < 16 the low nibble of byte j, else the
//                       high nibble of byte j - 16; x = d (q - 8)
//   5 q8_0  (17 words): f16 d, 32 int8; x = d q
//   6 q4_K  (72 words): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (eight of each),
//                       128 bytes of nibbles: element 64 c + l is the low (l < 32) or high
//                       nibble of byte 32 c + l % 32; x = d sc_j q - dmin m_j, j = e / 32
//   7 q6_K  (105 words): 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d; element
//                       128 h + 32 g + l: 4 low bits from ql[64 h + l + 32 (g & 1)] (the
//                       high nibble when g >= 2), 2 high bits from qh[32 h + l] >> 2 g;
//                       x = d scales[e / 16] (q - 32)
// Needs common.glsl first; the block types need 16-bit storage (the host refuses them
// without it).
#ifndef TESSERA_F32_ONLY
uint a_byte(uint w0, uint k) {  // byte k after 16-bit word w0 of operand a
    return (uint(au16[w0 + k / 2u]) >> (8u * (k & 1u))) & 255u;
}
#endif

float load_a_elem(uint t, uint base, uint step, uint k) {
    if (t < 4u) return load_a(t, base + k * step);
#ifndef TESSERA_F32_ONLY
    if (t == 4u) {
        const uint blk = base + (k / 32u) * 9u, j = k % 32u;
        const uint q = a_byte(blk + 1u, j % 16u);
        return float(a16[blk]) * (float(j < 16u ? (q & 15u) : (q >> 4u)) - 8.0);
    }
    if (t == 5u) {
        const uint blk = base + (k / 32u) * 17u;
        return float(a16[blk]) * float(int(a_byte(blk + 1u, k % 32u) << 24u) >> 24);
    }
    if (t == 6u) {
        const uint blk = base + (k / 256u) * 72u, e = k % 256u, j = e / 32u;
        uint sc, mn;
        if (j < 4u) {
            sc = a_byte(blk + 2u, j) & 63u;
            mn = a_byte(blk + 2u, j + 4u) & 63u;
        } else {
            sc = (a_byte(blk + 2u, j + 4u) & 15u) | ((a_byte(blk + 2u, j - 4u) >> 6u) << 4u);
            mn = (a_byte(blk + 2u, j + 4u) >> 4u) | ((a_byte(blk + 2u, j) >> 6u) << 4u);
        }
        const uint l = e % 64u, qb = a_byte(blk + 8u, (e / 64u) * 32u + l % 32u);
        const uint q = l < 32u ? (qb & 15u) : (qb >> 4u);
        return float(a16[blk]) * float(sc) * float(q) - float(a16[blk + 1u]) * float(mn);
    }
    {
        const uint blk = base + (k / 256u) * 105u, e = k % 256u;
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
