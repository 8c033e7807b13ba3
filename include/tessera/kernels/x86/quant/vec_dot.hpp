// x86 bodies of the quantized dot products of kernels/quant/vec_dot.hpp. q8_0, q4_0,
// q4_K, q6_K and the f16 / bf16 rows have one body each for both widths, over the vector
// traits vd256 (AVX2) and vd512 (AVX-512). q4_1, q5_0, q5_1, iq4_nl, mxfp4 (vdot_32),
// q5_K (vdot_q4K), q2_K, q3_K (vdot_q6K) run those bodies on vd256 only, through hooks
// that vd512 does not have (dot_x, k5_high, k16_values): their AVX-512 BW bodies (VNNI
// through dpbusd512 / dpwssd512) are written for that width, as are iq4_xs's and tq2_0's,
// whose AVX2 bodies are written for 256 bits too. tq1_0 has an AVX2 body, which the
// AVX-512 levels run as well. And the four-row q4_0 matrix x vector. Each returns what the
// scalar body there returns, within the bounds of tests/kernels. Part of
// kernels/quant/vec_dot.hpp, which includes it after the scalar bodies.
#pragma once

#include "tessera/config.hpp"

#if defined(TESSERA_X86)

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "tessera/core/f16.hpp"
#include "tessera/kernels/quant/common.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/quant/iquants.hpp"
#include "tessera/quant/tables.hpp"
#include "tessera/simd/arch.hpp"

TESSERA_BEGIN_NAMESPACE
namespace kernels {
namespace qdetail {

namespace q = ::tessera::quant;

// ---- helpers (AVX-512 BW, and VNNI through dpbusd512 / dpwssd512) ------------------------
// Per-block scale products d_x * d_y of four consecutive 32-element blocks, spread
// over two vectors: lanes 0-7 block 0, 8-15 block 1 (s01), then blocks 2, 3 (s23).
template <class A, class BX, class BY>
TESSERA_ALWAYS_INLINE void scales4(const BX* x, const BY* y, __m512& s01, __m512& s23) {
    const __m128 s = _mm_mul_ps(h2f_x4<A>(x[0].d.bits, x[1].d.bits, x[2].d.bits, x[3].d.bits),
                                h2f_x4<A>(y[0].d.bits, y[1].d.bits, y[2].d.bits, y[3].d.bits));
    const __m512 w = _mm512_castps128_ps512(s);
    s01 = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), w);
    s23 = _mm512_permutexvar_ps(_mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), w);
}
template <class A>
TESSERA_ALWAYS_INLINE __m512i load_2x256(const void* a, const void* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(a))),
                              _mm256_loadu_si256(static_cast<const __m256i*>(b)), 1);
}
// Signed x signed bytes through the unsigned x signed instruction: |x| times y with x's sign.
template <class A>
TESSERA_ALWAYS_INLINE __m512i dot_s8s8_512(__m512i x, __m512i y) {
    const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
    return dpbusd512<A>(_mm512_setzero_si512(), _mm512_abs_epi8(x), sy);
}

// Nibbles of two 16-byte groups (q4_0 order) as bytes: [a low, a high, b low, b high],
// i.e. the 64 elements of two 32-element blocks in order.
template <class A>
TESSERA_ALWAYS_INLINE __m512i nibbles_pair(const std::uint8_t* a, const std::uint8_t* b16) {
    const __m512i b = _mm512_mask_broadcast_i32x4(
        bcast128<A>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))), 0xFF00,
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(b16)));
    const __m512i cnt = _mm512_setr_epi64(0, 0, 0x0004000400040004, 0x0004000400040004, 0, 0, 0x0004000400040004,
                                          0x0004000400040004);
    return _mm512_and_si512(_mm512_srlv_epi16(b, cnt), _mm512_set1_epi8(0x0F));
}
template <class A, class B>
TESSERA_ALWAYS_INLINE __m512i q4_0_pair(const B* x) {
    return nibbles_pair<A>(x[0].qs, x[1].qs);
}

// The eight 6-bit scales (bytes 0-7) and mins (bytes 8-15) of a q4_K/q5_K block.
template <class A>
TESSERA_ALWAYS_INLINE __m128i k4_scales_mins(const std::uint8_t* s) {
    std::uint32_t u[4];
    std::memcpy(u, s, 12);
    constexpr std::uint32_t k1 = 0x3f3f3f3fu, k2 = 0x0f0f0f0fu, k3 = 0x03030303u;
    u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
    const std::uint32_t mins_lo = u[1] & k1;
    u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
    u[2] = mins_lo;
    u[0] &= k1;
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
}

// q3_K's sixteen 6-bit scales minus 32 as bytes (q3k_scales in vectors): low nibbles of
// bytes 0..7 then their high nibbles, and two bits of bytes 8..11 for each, in groups of
// four (scale j: byte 8 + j % 4 shifted by 2 (j / 4)). Reads the 12 bytes only.
template <class A>
TESSERA_ALWAYS_INLINE __m128i q3k_scales128(const std::uint8_t* s) {
    std::uint64_t lo8;
    std::uint32_t hi4;
    std::memcpy(&lo8, s, 8);
    std::memcpy(&hi4, s + 8, 4);
    const __m128i a = _mm_cvtsi64_si128(static_cast<long long>(lo8)), m4 = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(_mm_unpacklo_epi64(a, _mm_srli_epi16(a, 4)), m4);
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(hi4)), _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

// The weight scale of a 32-element block as f32: d, or mxfp4's E8M0 exponent (halved, as
// its doubled table wants).
template <class A, class B>
TESSERA_ALWAYS_INLINE float xscale(const B& b) {
    if constexpr (std::is_same_v<B, q::block_mxfp4>)
        return e8m0_half<A>(b.e);
    else
        return h2f<A>(b.d);
}

// ---- the vector traits of each width --------------------------------------------------------
// vd256 (AVX2) and vd512 (AVX-512): the one body of each kernel below runs on either.
// f32: zerof / splat / add / hsum, fma of an f32 vector or of i32 lanes converted, load
// of 16-bit floats widened (F16C for f16, a 16-bit shift for bf16; `lanes` per vector).
// q8_0 / q4_0 blocks: `blocks` 32-element blocks per vector (1 or 2); load / q4 read the
// bytes or the nibbles of that many consecutive blocks; scales2 gives the scale products
// d_x * d_y of the 2 * blocks blocks of one step, each over its block's lanes; dot_s8s8 /
// dot_q4 the integer dot of a vector of blocks in 32-bit lanes (q4: the nibbles minus 8,
// folded in as -8 * y). K-quants: see below.
template <class A>
struct vd256 {
    using vi = __m256i;
    using vf = __m256;
    static constexpr int blocks = 1, lanes = 8;
    static TESSERA_ALWAYS_INLINE vf zerof() { return _mm256_setzero_ps(); }
    static TESSERA_ALWAYS_INLINE vf splat(float v) { return _mm256_set1_ps(v); }
    static TESSERA_ALWAYS_INLINE vf add(vf a, vf b) { return _mm256_add_ps(a, b); }
    static TESSERA_ALWAYS_INLINE float hsum(vf v) { return hsum256<A>(v); }
    static TESSERA_ALWAYS_INLINE vf fma(vf a, vf b, vf acc) { return _mm256_fmadd_ps(a, b, acc); }
    static TESSERA_ALWAYS_INLINE vf fma(vi p, vf s, vf acc) { return _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, acc); }
    static TESSERA_ALWAYS_INLINE vf load(const f16* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static TESSERA_ALWAYS_INLINE vf load(const bf16* p) {
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
    }
    template <class B>
    static TESSERA_ALWAYS_INLINE vi load(const B* b) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
    }
    template <class B>
    static TESSERA_ALWAYS_INLINE vi q4(const B* b) {
        return nibbles32<A>(b[0].qs);
    }
    template <class BX, class BY>
    static TESSERA_ALWAYS_INLINE vf scale1(const BX* x, const BY* y) {
        return splat(xscale<A>(x[0]) * h2f<A>(y[0].d));
    }
    template <class BX, class BY>
    static TESSERA_ALWAYS_INLINE void scales2(const BX* x, const BY* y, vf& s0, vf& s1) {
        s0 = scale1(x, y);
        s1 = scale1(x + 1, y + 1);
    }
    static TESSERA_ALWAYS_INLINE vi dot_s8s8(vi x, vi y) {
        return dpbusd256<A>(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    }
    static TESSERA_ALWAYS_INLINE vi dot_q4(vi q, vi y) { return dot_off<8>(q, y); }
    // q - Off times y for unsigned q < 32: in i16 first (|pair sums| <= 2 * 31 * 128 and
    // 2 * Off * 128, no saturation), one widening for both products
    template <int Off>
    static TESSERA_ALWAYS_INLINE vi dot_off(vi q, vi y) {
        const __m256i p16 = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y), _mm256_maddubs_epi16(_mm256_set1_epi8(Off), y));
        return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
    }
    // The other 32-element types (dot_x: the integer dot of one block in i32 lanes; vdot_32
    // adds q4_1's / q5_1's m_x * s_y): q4_1 / q5_1 unsigned (<= 31) times y; q5_0 the
    // 5-bit values minus 16; iq4_nl / mxfp4 their table values (vpshufb), signed x signed.
    template <class B>
    static TESSERA_ALWAYS_INLINE vi q5(const B* b) {
        return _mm256_or_si256(nibbles32<A>(b[0].qs), fifth_bits32<A>(b[0].qh));
    }
    static TESSERA_ALWAYS_INLINE vi lut(const std::int8_t* table, vi idx) {
        return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table))), idx);
    }
    static TESSERA_ALWAYS_INLINE vi dot_x(const q::block_q4_1* x, const q::block_q8_1* y) {
        return dpbusd256<A>(_mm256_setzero_si256(), q4(x), load(y));
    }
    static TESSERA_ALWAYS_INLINE vi dot_x(const q::block_q5_1* x, const q::block_q8_1* y) {
        return dpbusd256<A>(_mm256_setzero_si256(), q5(x), load(y));
    }
    static TESSERA_ALWAYS_INLINE vi dot_x(const q::block_q5_0* x, const q::block_q8_0* y) { return dot_off<16>(q5(x), load(y)); }
    static TESSERA_ALWAYS_INLINE vi dot_x(const q::block_iq4_nl* x, const q::block_q8_0* y) {
        return dot_s8s8(lut(tables<A>::iq4nl, q4(x)), load(y));
    }
    static TESSERA_ALWAYS_INLINE vi dot_x(const q::block_mxfp4* x, const q::block_q8_0* y) {
        return dot_s8s8(lut(tables<A>::mxfp4, q4(x)), load(y));
    }
    // ---- K-quants: sub-blocks of 32 (q4_K) or 16 (q6_K) elements, i16 products
    static TESSERA_ALWAYS_INLINE vi zero() { return _mm256_setzero_si256(); }
    static TESSERA_ALWAYS_INLINE vi load_y(const std::int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
    static TESSERA_ALWAYS_INLINE vi maddubs(vi u, vi s) { return _mm256_maddubs_epi16(u, s); }
    static TESSERA_ALWAYS_INLINE vi dpwssd(vi acc, vi a, vi b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
    // q4_K: the 64 nibbles of 32 bytes (low nibbles: sub-block 2j, high: 2j + 1), and each
    // element's 6-bit scale as i16 (k4s: the scales and mins of k4_scales_mins)
    struct k4s {
        __m256i w;  // the eight scales as i16, in both 128-bit lanes
    };
    static TESSERA_ALWAYS_INLINE k4s k4_prep(__m128i sm) { return {_mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm))}; }
    static TESSERA_ALWAYS_INLINE __m256i pick16(int e) {  // vpshufb control: i16 element e in every element
        return _mm256_set1_epi16(static_cast<short>((2 * e) | ((2 * e + 1) << 8)));
    }
    static TESSERA_ALWAYS_INLINE void k4_nibbles(const std::uint8_t* qs, vi out[2]) {
        const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)), m4 = _mm256_set1_epi8(0x0F);
        out[0] = _mm256_and_si256(qv, m4);
        out[1] = _mm256_and_si256(_mm256_srli_epi16(qv, 4), m4);
    }
    static TESSERA_ALWAYS_INLINE void k4_scales(const k4s& s, int j, vi out[2]) {
        out[0] = _mm256_shuffle_epi8(s.w, pick16(2 * j));
        out[1] = _mm256_shuffle_epi8(s.w, pick16(2 * j + 1));
    }
    // q6_K: the 6-bit values of half h (128 elements, 32 per vector) and their i16 scales
    // (q6s: the sixteen scales as i16, scales 8h..8h+7 in both 128-bit lanes of half[h], so
    // that one vpshufb gives a vector's two scales)
    struct q6s {
        __m256i half[2];
    };
    static TESSERA_ALWAYS_INLINE q6s q6_prep(const std::int8_t* scales) {
        const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
        return {{_mm256_permute2x128_si256(w, w, 0x00), _mm256_permute2x128_si256(w, w, 0x11)}};
    }
    static TESSERA_ALWAYS_INLINE void q6_values(const std::uint8_t* ql, const std::uint8_t* qh, vi out[4]) {
        const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
        const __m256i hh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
        out[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hh, 4), m30));
        out[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hh, 2), m30));
        out[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hh, m30));
        out[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(hh, 2), m30));
    }
    static TESSERA_ALWAYS_INLINE vi q6_scale(const q6s& sc, int h, int k) {  // vector k of half h: scales 8h + 2k, + 1
        // i16 element 2k in the low lane, 2k + 1 in the high one
        return _mm256_shuffle_epi8(sc.half[h], _mm256_permute2x128_si256(pick16(2 * k), pick16(2 * k + 1), 0x20));
    }
    static TESSERA_ALWAYS_INLINE vi sub_shl5(vi v, __m256i c) { return _mm256_sub_epi32(v, _mm256_slli_epi32(c, 5)); }
    static TESSERA_ALWAYS_INLINE vi sub_shl2(vi v, __m256i c) { return _mm256_sub_epi32(v, _mm256_slli_epi32(c, 2)); }
    // q5_K: the fifth bits of the 64 elements of k4_nibbles(qs + 32 j): bit 2j (low nibbles)
    // and 2j + 1 (high) of qh[l], added as 16
    static TESSERA_ALWAYS_INLINE void k5_high(const std::uint8_t* qh, int j, vi q[2]) {
        const __m256i hb = _mm256_srl_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)), _mm_cvtsi32_si128(2 * j));
        const __m256i k16 = _mm256_set1_epi8(0x10);  // bit 0 of each byte to bit 4, bit 1 to bit 4
        q[0] = _mm256_or_si256(q[0], _mm256_and_si256(_mm256_slli_epi16(hb, 4), k16));
        q[1] = _mm256_or_si256(q[1], _mm256_and_si256(_mm256_slli_epi16(hb, 3), k16));
    }
    // q2_K / q3_K: the 128 elements of half h as q6_values' four vectors (element
    // 128 h + 32 k + l: bits 2k of qs[32 h + l]); q3_K adds 4 where its hmask bit 4h + k of
    // byte l is set (0..7 = the value + 4). Shifts of 16-bit lanes by less than 8 keep
    // each byte's bits in that byte before the masks.
    static TESSERA_ALWAYS_INLINE void k16_values(const q::block_q2_K& b, int h, vi out[4]) {
        const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h)), m3 = _mm256_set1_epi8(3);
        for (int k = 0; k < 4; ++k) out[k] = _mm256_and_si256(_mm256_srl_epi16(qv, _mm_cvtsi32_si128(2 * k)), m3);
    }
    static TESSERA_ALWAYS_INLINE void k16_values(const q::block_q3_K& b, int h, vi out[4]) {
        const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h)), m3 = _mm256_set1_epi8(3);
        const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask)), k4 = _mm256_set1_epi8(4);
        for (int k = 0; k < 4; ++k) {
            const __m256i hb = _mm256_srl_epi16(hm, _mm_cvtsi32_si128(4 * h + k));  // the bit at bit 0 of its byte
            out[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srl_epi16(qv, _mm_cvtsi32_si128(2 * k)), m3),
                                     _mm256_and_si256(_mm256_slli_epi16(hb, 2), k4));
        }
    }
};
template <class A>
struct vd512 {
    using vi = __m512i;
    using vf = __m512;
    using half = vd256<A>;  // the tail of fewer than four blocks
    static constexpr int blocks = 2, lanes = 16;
    static TESSERA_ALWAYS_INLINE vf zerof() { return _mm512_setzero_ps(); }
    static TESSERA_ALWAYS_INLINE vf splat(float v) { return _mm512_set1_ps(v); }
    static TESSERA_ALWAYS_INLINE vf add(vf a, vf b) { return _mm512_add_ps(a, b); }
    static TESSERA_ALWAYS_INLINE float hsum(vf v) { return hsum512<A>(v); }
    static TESSERA_ALWAYS_INLINE vf fma(vf a, vf b, vf acc) { return _mm512_fmadd_ps(a, b, acc); }
    static TESSERA_ALWAYS_INLINE vf fma(vi p, vf s, vf acc) { return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc); }
    static TESSERA_ALWAYS_INLINE vf load(const f16* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static TESSERA_ALWAYS_INLINE vf load(const bf16* p) {
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
    }
    template <class B>
    static TESSERA_ALWAYS_INLINE vi load(const B* b) {
        return load_2x256<A>(b[0].qs, b[1].qs);
    }
    template <class B>
    static TESSERA_ALWAYS_INLINE vi q4(const B* b) {
        return nibbles_pair<A>(b[0].qs, b[1].qs);
    }
    template <class BX, class BY>
    static TESSERA_ALWAYS_INLINE void scales2(const BX* x, const BY* y, vf& s0, vf& s1) {
        scales4<A>(x, y, s0, s1);
    }
    static TESSERA_ALWAYS_INLINE vi dot_s8s8(vi x, vi y) { return dot_s8s8_512<A>(x, y); }
    static TESSERA_ALWAYS_INLINE vi dot_q4(vi q, vi y) {
        const __m512i z = _mm512_setzero_si512();
        return _mm512_sub_epi32(dpbusd512<A>(z, q, y), dpbusd512<A>(z, _mm512_set1_epi8(8), y));
    }
    // ---- K-quants (see vd256)
    static TESSERA_ALWAYS_INLINE vi zero() { return _mm512_setzero_si512(); }
    static TESSERA_ALWAYS_INLINE vi load_y(const std::int8_t* p) { return _mm512_loadu_si512(p); }
    static TESSERA_ALWAYS_INLINE vi maddubs(vi u, vi s) { return _mm512_maddubs_epi16(u, s); }
    static TESSERA_ALWAYS_INLINE vi dpwssd(vi acc, vi a, vi b) { return dpwssd512<A>(acc, a, b); }
    using k4s = __m512i;  // the eight scales as i16 lanes 0..7
    static TESSERA_ALWAYS_INLINE k4s k4_prep(__m128i sm) { return _mm512_castsi128_si512(_mm_cvtepu8_epi16(sm)); }
    static TESSERA_ALWAYS_INLINE void k4_nibbles(const std::uint8_t* qs, vi out[1]) {  // [low 32 | high 32]
        const __m512i cnt = _mm512_setr_epi64(0, 0, 0, 0, 0x0004000400040004, 0x0004000400040004, 0x0004000400040004,
                                              0x0004000400040004);
        out[0] = _mm512_and_si512(_mm512_srlv_epi16(bcast256<A>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs))), cnt),
                                  _mm512_set1_epi8(0x0F));
    }
    static TESSERA_ALWAYS_INLINE void k4_scales(k4s s, int j, vi out[1]) {
        const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(2 * j)),
                                               _mm256_set1_epi16(static_cast<short>(2 * j + 1)), 1);
        out[0] = _mm512_permutexvar_epi16(idx, s);
    }
    using q6s = __m512i;  // the sixteen scales as i16 lanes 0..15
    static TESSERA_ALWAYS_INLINE q6s q6_prep(const std::int8_t* scales) {
        return _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales))));
    }
    static TESSERA_ALWAYS_INLINE void q6_values(const std::uint8_t* ql, const std::uint8_t* qh, vi out[2]) {
        const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
        const __m512i shl = _mm512_setr_epi64(0x0004000400040004, 0x0004000400040004, 0x0004000400040004,
                                              0x0004000400040004, 0x0002000200020002, 0x0002000200020002,
                                              0x0002000200020002, 0x0002000200020002);
        const __m512i shr = _mm512_setr_epi64(0, 0, 0, 0, 0x0002000200020002, 0x0002000200020002, 0x0002000200020002,
                                              0x0002000200020002);
        const __m512i l = _mm512_loadu_si512(ql);
        const __m512i hh = bcast256<A>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)));
        out[0] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_sllv_epi16(hh, shl), m30));
        out[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(_mm512_srlv_epi16(hh, shr), m30));
    }
    static TESSERA_ALWAYS_INLINE vi q6_scale(q6s scw, int h, int k) {  // vector k of half h: four scales of 16
        const long long b = 8 * h + 4 * k;
        const __m512i idx = _mm512_setr_epi64(0x0001000100010001LL * b, 0x0001000100010001LL * b,
                                              0x0001000100010001LL * (b + 1), 0x0001000100010001LL * (b + 1),
                                              0x0001000100010001LL * (b + 2), 0x0001000100010001LL * (b + 2),
                                              0x0001000100010001LL * (b + 3), 0x0001000100010001LL * (b + 3));
        return _mm512_permutexvar_epi16(idx, scw);
    }
    static TESSERA_ALWAYS_INLINE vi sub_shl5(vi v, __m256i c) {
        return _mm512_sub_epi32(v, _mm512_slli_epi32(_mm512_zextsi256_si512(c), 5));
    }
};

// x . y for 32-element blocks (y: q8_0, or q8_1 for q4_1 / q5_1): two vectors of blocks per
// step into two accumulators; the last block (AVX2) or the last one to three (AVX-512,
// through the AVX2 traits) after. q8_0 and q4_0 run on both widths; q4_1, q5_0, q5_1,
// iq4_nl and mxfp4 (V::dot_x) on vd256, their AVX-512 bodies being written for that width
// below. q4_1's / q5_1's m_x * s_y terms are summed apart, in f32.
template <class A, class V, class BX, class BY>
float vdot_32(std::int64_t n, const BX* x, const BY* y) {
    constexpr int nbv = V::blocks;
    const auto step = [&](std::int64_t i, typename V::vf s, typename V::vf acc) {
        if constexpr (std::is_same_v<BX, q::block_q4_0>)
            return V::fma(V::dot_q4(V::q4(x + i), V::load(y + i)), s, acc);
        else if constexpr (std::is_same_v<BX, q::block_q8_0>)
            return V::fma(V::dot_s8s8(V::load(x + i), V::load(y + i)), s, acc);
        else
            return V::fma(V::dot_x(x + i, y + i), s, acc);
    };
    const std::int64_t nb = n / 32;
    typename V::vf acc0 = V::zerof(), acc1 = acc0;
    float sm = 0.0f;  // q4_1 / q5_1: sum of m_x * s_y
    std::int64_t i = 0;
    for (; i + 2 * nbv <= nb; i += 2 * nbv) {
        typename V::vf s0, s1;
        V::scales2(x + i, y + i, s0, s1);
        acc0 = step(i, s0, acc0);
        acc1 = step(i + nbv, s1, acc1);
    }
    if constexpr (nbv == 1) {
        if (i < nb) acc0 = step(i, V::scale1(x + i, y + i), acc0), ++i;
    }
    if constexpr (requires { x[0].m; }) {
        static_assert(nbv == 1, "the AVX-512 q4_1 / q5_1 body is vdot_q41_51");
        for (std::int64_t j = 0; j < nb; ++j) sm += h2f<A>(x[j].m) * h2f<A>(y[j].s);
    }
    float s = V::hsum(V::add(acc0, acc1)) + sm;
    if constexpr (nbv > 1) {
        if (i < nb) s += vdot_32<A, typename V::half>((nb - i) * 32, x + i, y + i);
    }
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q8_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    return vdot_32<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    return vdot_32<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_1* x, const q::block_q8_1* y, simd::requires_arch<simd::avx2>) {
    return vdot_32<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_1* x, const q::block_q8_1* y, simd::requires_arch<simd::avx2>) {
    return vdot_32<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    return vdot_32<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_iq4_nl* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    return vdot_32<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_mxfp4* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    return vdot_32<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q8_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_32<A, vd512<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_32<A, vd512<A>>(n, x, y);
}

// ---- q4_K and q6_K x q8_K: one body for both widths ---------------------------------------
// Per super-block: the i16 products of each vector of weights with its activations, times
// their sub-block scales into i32 lanes (dpwssd), then one FMA by d * d_y. q4_K's mins
// and q6_K's -32 offset go through the activations' sums (bsums), 16 per super-block.
// q5_K (vd256: V::k5_high) is q4_K with a fifth bit.
template <class A, class V, class BK>
float vdot_q4K(std::int64_t n, const BK* x, const q::block_q8_K* y) {
    constexpr int parts = 64 / static_cast<int>(sizeof(typename V::vi));  // vectors per 64 elements
    constexpr bool q5 = std::is_same_v<BK, q::block_q5_K>;
    typename V::vf acc = V::zerof();
    __m256 accm = _mm256_setzero_ps();
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const __m128i sm = k4_scales_mins<A>(x[i].scales);
        const __m256i mn32 = _mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8));
        const __m256i mn16 = _mm256_or_si256(mn32, _mm256_slli_epi32(mn32, 16));  // each min twice
        const __m256i summ = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums)), mn16);
        const auto sc = V::k4_prep(sm);
        typename V::vi sumi = V::zero();
        for (int j = 0; j < 4; ++j) {
            typename V::vi q[parts], s[parts];
            V::k4_nibbles(x[i].qs + 32 * j, q);
            if constexpr (q5) V::k5_high(x[i].qh, j, q);
            V::k4_scales(sc, j, s);
            for (int k = 0; k < parts; ++k)
                sumi = V::dpwssd(sumi, V::maddubs(q[k], V::load_y(y[i].qs + 64 * j + static_cast<int>(sizeof(q[k])) * k)), s[k]);
        }
        acc = V::fma(sumi, V::splat(y[i].d * h2f<A>(x[i].d)), acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_set1_ps(y[i].d * h2f<A>(x[i].dmin)), accm);
    }
    return V::hsum(acc) - hsum256<A>(accm);
}
// The K-quants with sixteen scales of 16 elements, element 128 h + 32 k + l of a half h
// in vector k: q6_K (values + 32, the -32 through the bsums), and on vd256 (V::k16_values)
// q3_K (values + 4, scales -32..31 from q3k_scales) and q2_K (values 0..3, scales the low
// nibbles, the mins, high nibbles, times the bsums apart in f32, by dmin).
template <class A, class V, class BK>
float vdot_q6K(std::int64_t n, const BK* x, const q::block_q8_K* y) {
    constexpr int parts = 128 / static_cast<int>(sizeof(typename V::vi));  // vectors per half super-block
    constexpr bool q6 = std::is_same_v<BK, q::block_q6_K>, q2 = std::is_same_v<BK, q::block_q2_K>;
    typename V::vf acc = V::zerof();
    [[maybe_unused]] __m256 accm = _mm256_setzero_ps();  // q2_K
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        alignas(16) std::int8_t sc8[16];
        const std::int8_t* scp = sc8;
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums));
        __m256i corr;  // q6_K, q3_K: sum of bsums * scale, times the offset; q2_K: of bsums * min
        if constexpr (q6) {
            scp = x[i].scales;
            corr = _mm256_madd_epi16(bs, _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales))));
        } else if constexpr (q2) {
            const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales)), m4 = _mm_set1_epi8(0x0F);
            _mm_store_si128(reinterpret_cast<__m128i*>(sc8), _mm_and_si128(raw, m4));
            corr = _mm256_madd_epi16(bs, _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4)));
        } else {
            const __m128i s3 = q3k_scales128<A>(x[i].scales);
            _mm_store_si128(reinterpret_cast<__m128i*>(sc8), s3);
            corr = _mm256_madd_epi16(bs, _mm256_cvtepi8_epi16(s3));
        }
        const auto sc = V::q6_prep(scp);
        typename V::vi sumi = V::zero();
        for (int h = 0; h < 2; ++h) {
            typename V::vi q[parts];
            if constexpr (q6)
                V::q6_values(x[i].ql + 64 * h, x[i].qh + 32 * h, q);
            else
                V::k16_values(x[i], h, q);
            for (int k = 0; k < parts; ++k)
                sumi = V::dpwssd(sumi, V::maddubs(q[k], V::load_y(y[i].qs + 128 * h + static_cast<int>(sizeof(q[k])) * k)),
                                 V::q6_scale(sc, h, k));
        }
        if constexpr (q6) {
            acc = V::fma(V::sub_shl5(sumi, corr), V::splat(y[i].d * h2f<A>(x[i].d)), acc);
        } else if constexpr (q2) {
            acc = V::fma(sumi, V::splat(y[i].d * h2f<A>(x[i].d)), acc);
            accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(corr), _mm256_set1_ps(y[i].d * h2f<A>(x[i].dmin)), accm);
        } else {
            acc = V::fma(V::sub_shl2(sumi, corr), V::splat(y[i].d * h2f<A>(x[i].d)), acc);
        }
    }
    if constexpr (q2)
        return V::hsum(acc) - hsum256<A>(accm);
    else
        return V::hsum(acc);
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    return vdot_q4K<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q6_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    return vdot_q6K<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    return vdot_q4K<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q3_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    return vdot_q6K<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q2_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    return vdot_q6K<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_q4K<A, vd512<A>>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q6_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_q6K<A, vd512<A>>(n, x, y);
}

// ---- the lattice i-quants, q1_0, q2_0 and nvfp4 on AVX2 -----------------------------------
// The i-quants keep the scalar body's integer sums (exact, in i32 lanes, one horizontal
// sum per super-block) and its float operations in the same order, so they return the
// scalar body's value; grid entries are loaded per 8 (or 4) values and the signs applied
// to y by vpsignb with the sign bytes of tables<A>::signs. q1_0, q2_0 and nvfp4 scale each
// 32 (16 for nvfp4) in f32 lanes and sum once per row. The AVX-512 levels run these too.
template <class A>
TESSERA_ALWAYS_INLINE __m256i load32(const std::int8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
template <class A>
TESSERA_ALWAYS_INLINE __m256i u64x4(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
    return _mm256_setr_epi64x(static_cast<long long>(a), static_cast<long long>(b), static_cast<long long>(c),
                              static_cast<long long>(d));
}
// 32 unsigned grid bytes g (<= 62: no saturation) times y with the signs pm (+-1 bytes), as
// i16 pair sums, then times the i16 scale of each 128-bit half into i32 lanes.
template <class A>
TESSERA_ALWAYS_INLINE __m256i grid_dot32(__m256i g, __m256i pm, const std::int8_t* q8, __m256i ls) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(g, _mm256_sign_epi8(load32<A>(q8), pm)), ls);
}
template <class A>
TESSERA_ALWAYS_INLINE __m256i halves16(int lo, int hi) {  // i16 lo in the low 128 bits, hi in the high
    return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(hi)), _mm_set1_epi16(static_cast<short>(lo)));
}
template <class A>
TESSERA_ALWAYS_INLINE __m256i code7_signs(std::uint32_t aux) {  // four 7-bit sign codes (i-quant parity)
    const auto& t = tables<A>::signs.code7;
    return u64x4<A>(t[aux & 127], t[(aux >> 7) & 127], t[(aux >> 14) & 127], t[(aux >> 21) & 127]);
}
template <class A>
TESSERA_ALWAYS_INLINE __m256i byte_signs(const std::uint8_t* s) {  // four sign bytes
    const auto& t = tables<A>::signs.byte;
    return u64x4<A>(t[s[0]], t[s[1]], t[s[2]], t[s[3]]);
}

template <class A>
float vdot(std::int64_t n, const q::block_iq2_xxs* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    float sum = 0;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        const float d = h2f<A>(x[b].d) * y[b].d;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const auto* qb = reinterpret_cast<const std::uint8_t*>(x[b].qs + 4 * ib);
            const std::uint32_t aux = q::detail::load_u32(qb + 4);
            const __m256i g = u64x4<A>(q::iq2xxs_grid[qb[0]], q::iq2xxs_grid[qb[1]], q::iq2xxs_grid[qb[2]], q::iq2xxs_grid[qb[3]]);
            const int ls = static_cast<int>(2 * (aux >> 28) + 1);
            acc = _mm256_add_epi32(acc, grid_dot32<A>(g, code7_signs<A>(aux), y[b].qs + 32 * ib, halves16<A>(ls, ls)));
        }
        sum += d * static_cast<float>(hsum256_i32<A>(acc));
    }
    return 0.125f * sum;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq2_xs* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    float sum = 0;
    const auto& st = tables<A>::signs.code7;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        const float d = h2f<A>(x[b].d) * y[b].d;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint16_t* qb = x[b].qs + 4 * ib;
            const __m256i g = u64x4<A>(q::iq2xs_grid[qb[0] & 511], q::iq2xs_grid[qb[1] & 511], q::iq2xs_grid[qb[2] & 511],
                                       q::iq2xs_grid[qb[3] & 511]);
            const __m256i pm = u64x4<A>(st[qb[0] >> 9], st[qb[1] >> 9], st[qb[2] >> 9], st[qb[3] >> 9]);
            const int sc = x[b].scales[ib];
            acc = _mm256_add_epi32(acc, grid_dot32<A>(g, pm, y[b].qs + 32 * ib, halves16<A>(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1)));
        }
        sum += d * static_cast<float>(hsum256_i32<A>(acc));
    }
    return 0.125f * sum;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq2_s* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    float sum = 0;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        const float d = h2f<A>(x[b].d) * y[b].d;
        const std::uint8_t* signs = x[b].qs + q::qk_k / 8;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i g = u64x4<A>(q::detail::iq2s_entry(x[b], ib, 0), q::detail::iq2s_entry(x[b], ib, 1),
                                       q::detail::iq2s_entry(x[b], ib, 2), q::detail::iq2s_entry(x[b], ib, 3));
            const int sc = x[b].scales[ib];
            acc = _mm256_add_epi32(acc, grid_dot32<A>(g, byte_signs<A>(signs + 4 * ib), y[b].qs + 32 * ib,
                                                      halves16<A>(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1)));
        }
        sum += d * static_cast<float>(hsum256_i32<A>(acc));
    }
    return 0.125f * sum;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq3_xxs* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    float sum = 0;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        const float d = h2f<A>(x[b].d) * y[b].d;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint8_t* qs = x[b].qs + 8 * ib;
            const std::uint32_t aux = q::detail::load_u32(x[b].qs + q::qk_k / 4 + 4 * ib);
            const auto e = [&](int k) { return static_cast<int>(q::iq3xxs_grid[qs[k]]); };
            const __m256i g = _mm256_setr_epi32(e(0), e(1), e(2), e(3), e(4), e(5), e(6), e(7));
            const int ls = static_cast<int>(2 * (aux >> 28) + 1);
            acc = _mm256_add_epi32(acc, grid_dot32<A>(g, code7_signs<A>(aux), y[b].qs + 32 * ib, halves16<A>(ls, ls)));
        }
        sum += d * static_cast<float>(hsum256_i32<A>(acc));
    }
    return 0.25f * sum;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq3_s* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    float sum = 0;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        const float d = h2f<A>(x[b].d) * y[b].d;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const auto e = [&](int k) { return static_cast<int>(q::detail::iq3s_entry(x[b], ib, k / 2, k % 2)); };
            const __m256i g = _mm256_setr_epi32(e(0), e(1), e(2), e(3), e(4), e(5), e(6), e(7));
            const int ls = 2 * ((x[b].scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1;
            acc = _mm256_add_epi32(acc, grid_dot32<A>(g, byte_signs<A>(x[b].signs + 4 * ib), y[b].qs + 32 * ib,
                                                      halves16<A>(ls, ls)));
        }
        sum += d * static_cast<float>(hsum256_i32<A>(acc));
    }
    return sum;
}
// iq1: grid values -1, 0, 1 (int8) times y by vpsignb, summed by vpmaddubsw with ones.
template <class A>
TESSERA_ALWAYS_INLINE __m256i signed_sum32(__m256i s, const std::int8_t* q8, __m256i ls) {  // sum y * sign(s), weighted
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_sign_epi8(load32<A>(q8), s)), ls);
}
template <class A>
float vdot(std::int64_t n, const q::block_iq1_s* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    float sum = 0;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        __m256i acc = _mm256_setzero_si256();
        int sumi1 = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const std::uint16_t qh = x[b].qh[ib];
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            const auto e = [&](int l) { return q::iq1s_grid[x[b].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)]; };
            acc = _mm256_add_epi32(acc, signed_sum32<A>(u64x4<A>(e(0), e(1), e(2), e(3)), y[b].qs + 32 * ib, halves16<A>(ls, ls)));
            sumi1 += ls * (qh & 0x8000 ? -1 : 1) * (y[b].bsums[2 * ib] + y[b].bsums[2 * ib + 1]);
        }
        const float t = static_cast<float>(hsum256_i32<A>(acc)) +
                        q::detail::rounded(q::detail::iq1_delta * static_cast<float>(sumi1));
        sum += h2f<A>(x[b].d) * y[b].d * t;
    }
    return sum;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq1_m* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    float sum = 0;
    constexpr std::uint64_t plus = 0x0101010101010101ull, minus = ~0ull;
    for (std::int64_t b = 0; b < n / q::qk_k; ++b) {
        __m256i acc1 = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const auto e = [&](int l) { return q::detail::iq1m_entry(x[b], ib, l); };
            const auto dl = [&](int l) { return q::detail::iq1m_negative(x[b], ib, l) ? minus : plus; };
            const __m256i ls = halves16<A>(q::detail::iq1m_ls(x[b], ib, 0), q::detail::iq1m_ls(x[b], ib, 1));
            acc1 = _mm256_add_epi32(acc1, signed_sum32<A>(u64x4<A>(e(0), e(1), e(2), e(3)), y[b].qs + 32 * ib, ls));
            acc2 = _mm256_add_epi32(acc2, signed_sum32<A>(u64x4<A>(dl(0), dl(1), dl(2), dl(3)), y[b].qs + 32 * ib, ls));
        }
        const float t = static_cast<float>(hsum256_i32<A>(acc1)) +
                        q::detail::rounded(q::detail::iq1_delta * static_cast<float>(hsum256_i32<A>(acc2)));
        sum += h2f<A>(q::detail::iq1m_scale(x[b])) * y[b].d * t;
    }
    return sum;
}
// q1_0: the sign bits select +y or -y (a clear bit is -d); per q8_0 block the i32 lanes
// are scaled by d_x d_y into f32 lanes.
template <class A>
float vdot(std::int64_t n, const q::block_q1_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    const auto& st = tables<A>::signs.byte;
    const __m256i one16 = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < n / 128; ++b) {
        const float dx = h2f<A>(x[b].d);
        for (int k = 0; k < 4; ++k) {
            const q::block_q8_0& yb = y[4 * b + k];
            const std::uint8_t* bits = x[b].qs + 4 * k;
            const __m256i pm = u64x4<A>(st[bits[0] ^ 255], st[bits[1] ^ 255], st[bits[2] ^ 255], st[bits[3] ^ 255]);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(signed_sum32<A>(pm, yb.qs, one16)), _mm256_set1_ps(dx * h2f<A>(yb.d)), acc);
        }
    }
    return hsum256<A>(acc);
}
// q2_0: the 2-bit codes u (0..3) of each 32 spread to bytes, sum u y - sum y.
template <class A>
TESSERA_ALWAYS_INLINE __m256i q2_0_codes(const std::uint8_t* qs) {  // byte j = bits 2 (j % 4) of qs[j / 4]
    std::uint64_t v;
    std::memcpy(&v, qs, 8);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi64x(static_cast<long long>(v)),
                                               _mm256_setr_epi64x(0x0101010100000000, 0x0303030302020202,
                                                                  0x0505050504040404, 0x0707070706060606));
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m256i pos = _mm256_set1_epi32(0x03020100);  // j % 4 per byte
    __m256i u = _mm256_and_si256(spread, m3);
    for (int l = 1; l < 4; ++l)
        u = _mm256_blendv_epi8(u, _mm256_and_si256(_mm256_srli_epi16(spread, 2 * l), m3),
                               _mm256_cmpeq_epi8(pos, _mm256_set1_epi8(static_cast<char>(l))));
    return u;
}
template <class A>
float vdot(std::int64_t n, const q::block_q2_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    const __m256i one16 = _mm256_set1_epi16(1), one8 = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < n / 64; ++b) {
        const float dx = h2f<A>(x[b].d);
        for (int k = 0; k < 2; ++k) {
            const q::block_q8_0& yb = y[2 * b + k];
            const __m256i yv = load32<A>(yb.qs);
            const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q2_0_codes<A>(x[b].qs + 8 * k), yv), _mm256_maddubs_epi16(one8, yv));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(p, one16)), _mm256_set1_ps(dx * h2f<A>(yb.d)), acc);
        }
    }
    return hsum256<A>(acc);
}
// nvfp4: two 16-value groups (one q8_0 block) per vector: their nibbles in element order
// looked up in the doubled E2M1 table, |v| x sign(y, v); each 128-bit half scaled by its
// group's d_x d_y.
template <class A>
float vdot(std::int64_t n, const q::block_nvfp4* x, const q::block_q8_0* y, simd::requires_arch<simd::avx2>) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tables<A>::mxfp4)));
    const __m128i m15 = _mm_set1_epi8(15);
    __m256 acc = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < n / 64; ++b)
        for (int h = 0; h < 2; ++h) {
            const q::block_q8_0& yb = y[2 * b + h];
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs + 16 * h));
            const __m128i lo = _mm_and_si128(v, m15), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m15);
            const __m256i vals = _mm256_shuffle_epi8(table, _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi)));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(vals, vals), _mm256_sign_epi8(load32<A>(yb.qs), vals)),
                                                _mm256_set1_epi16(1));
            const float dy = h2f<A>(yb.d);
            const __m256 s = _mm256_set_m128(_mm_set1_ps(dy * q::ue4m3_half[x[b].d[2 * h + 1]]),
                                             _mm_set1_ps(dy * q::ue4m3_half[x[b].d[2 * h]]));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, acc);
        }
    return hsum256<A>(acc);
}

// ---- iq4_xs, tq2_0 and tq1_0 on AVX2 -------------------------------------------------------
// iq4_xs: per 32-element sub-block the table values (vpshufb) times y as |v| x sign(y, v)
// (|v|, |y| <= 127: no saturation) in i16, times the sub-block's scale - 32 (vpmaddwd), in
// i32 over the super-block; one FMA by d * d_y.
template <class A>
float vdot(std::int64_t n, const q::block_iq4_xs* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    __m256 acc = _mm256_setzero_ps();
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        __m256i sumi = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x[i].scales_h >> (2 * ib)) & 3) << 4);
            const __m256i v = vd256<A>::lut(tables<A>::iq4nl, nibbles32<A>(x[i].qs + 16 * ib));
            const __m256i yv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 32 * ib));
            const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(yv, v));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set1_epi16(static_cast<short>(ls - 32))));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(y[i].d * h2f<A>(x[i].d)), acc);
    }
    return hsum256<A>(acc);
}
// tq2_0 and tq1_0: the trits t + 1 (0..2) times y (u8 x s8), minus the sums of y (the
// bsums), in i32 lanes per super-block; then one FMA by d * d_y.
template <class A>
TESSERA_ALWAYS_INLINE __m256i tq_sum_y(const q::block_q8_K& y) {  // the sums of y in i32 lanes
    return _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.bsums)), _mm256_set1_epi16(1));
}
template <class A>
float vdot(std::int64_t n, const q::block_tq2_0* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(3);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {  // element 128 h + 32 l + m: bits 2l of qs[32 h + m]
            const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * h));
            for (int l = 0; l < 4; ++l)
                sumi = dpbusd256<A>(sumi, _mm256_and_si256(_mm256_srl_epi16(qv, _mm_cvtsi32_si128(2 * l)), m3),
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + 128 * h + 32 * l)));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sumi, tq_sum_y<A>(y[i]))),
                              _mm256_set1_ps(y[i].d * h2f<A>(x[i].d)), acc);
    }
    return hsum256<A>(acc);
}
// Trit k (0 = most significant) of each byte b, ((b * 3^k mod 256) * 3) >> 8, with the
// multiplier 3^k per 16-bit lane of p: each byte of a pair moved to the high byte of its
// lane (the low byte zero), where vpmullw keeps the product mod 256 and vpmulhuw by 3 then
// gives the trit.
template <class A>
TESSERA_ALWAYS_INLINE __m256i trits_hi(__m256i ev, __m256i od) {  // the even / odd bytes' q in the high halves
    const __m256i three = _mm256_set1_epi16(3);
    return _mm256_or_si256(_mm256_mulhi_epu16(ev, three), _mm256_slli_epi16(_mm256_mulhi_epu16(od, three), 8));
}
template <class A>
TESSERA_ALWAYS_INLINE __m256i even_hi(__m256i b) { return _mm256_slli_epi16(b, 8); }
template <class A>
TESSERA_ALWAYS_INLINE __m256i odd_hi(__m256i b) { return _mm256_and_si256(b, _mm256_set1_epi16(static_cast<short>(0xFF00))); }
template <class A>
TESSERA_ALWAYS_INLINE __m256i times9(__m256i v) { return _mm256_add_epi16(_mm256_slli_epi16(v, 3), v); }  // mod 2^16
template <class A>
TESSERA_ALWAYS_INLINE __m256i trits256(__m256i b, __m256i p) {
    return trits_hi<A>(_mm256_mullo_epi16(even_hi<A>(b), p), _mm256_mullo_epi16(odd_hi<A>(b), p));
}
// tq1_0 (quant/ternary.hpp): qs[0..31] hold elements m + 32k (k = 0..4), one vector per k;
// qs[32..47] elements 160 + m + 16k, two k per vector (the 16 bytes in both halves); the
// last vector is k = 4 of those (elements 224..239) and the four qh bytes, elements
// 240 + j + 4k (k = 0..3), byte j + 4k of its high half.
template <class A>
float vdot(std::int64_t n, const q::block_tq1_0* x, const q::block_q8_K* y, simd::requires_arch<simd::avx2>) {
    __m256 acc = _mm256_setzero_ps();
    const auto yv = [&](std::int64_t i, int off) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs + off));
    };
    const __m256i p01 = _mm256_setr_epi16(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i p4h = _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].qs + 32));
        std::uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        const __m256i bb = _mm256_broadcastsi128_si256(b);
        const __m256i bh = _mm256_inserti128_si256(_mm256_castsi128_si256(b), _mm_set1_epi32(static_cast<int>(qh)), 1);
        __m256i sumi = _mm256_setzero_si256();
        // the five trits of qs[0..31] in turn: b * 3^(k+1) mod 256 from b * 3^k by two adds
        // (the byte in the high half of its lane, the sums mod 2^16), each trit by vpmulhuw
        __m256i ev = even_hi<A>(a), od = odd_hi<A>(a);
        for (int k = 0; k < 5; ++k) {
            sumi = dpbusd256<A>(sumi, trits_hi<A>(ev, od), yv(i, 32 * k));
            ev = _mm256_add_epi16(ev, _mm256_add_epi16(ev, ev));
            od = _mm256_add_epi16(od, _mm256_add_epi16(od, od));
        }
        const __m256i e01 = _mm256_mullo_epi16(even_hi<A>(bb), p01), o01 = _mm256_mullo_epi16(odd_hi<A>(bb), p01);
        sumi = dpbusd256<A>(sumi, trits_hi<A>(e01, o01), yv(i, 160));
        sumi = dpbusd256<A>(sumi, trits_hi<A>(times9<A>(e01), times9<A>(o01)), yv(i, 192));  // 9, 27 = 9 (1, 3)
        sumi = dpbusd256<A>(sumi, trits256<A>(bh, p4h), yv(i, 224));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sumi, tq_sum_y<A>(y[i]))),
                              _mm256_set1_ps(y[i].d * h2f<A>(x[i].d)), acc);
    }
    return hsum256<A>(acc);
}

// (f16 has no 512-bit body: vcvtph2ps on zmm is slower here than two on ymm, so the
// AVX2 body serves the AVX-512 levels too.)

// ---- more 32-element types on AVX-512 ------------------------------------------------------
template <class A>
TESSERA_ALWAYS_INLINE float hsum128(__m128 v) noexcept {
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_movehdup_ps(v));
    return _mm_cvtss_f32(v);
}
// q4_1 / q5_1: d_x d_y sum(q y) + m_x s_y per block, q unsigned.
template <class A, class B>
float vdot_q41_51(std::int64_t n, const B* x, const q::block_q8_1* y) {
    const std::int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m128 accm = _mm_setzero_ps();
    const __m512i z = _mm512_setzero_si512(), k16 = _mm512_set1_epi8(0x10);
    std::int64_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        __m512 s01, s23;
        scales4<A>(x + i, y + i, s01, s23);
        accm = _mm_fmadd_ps(h2f_x4<A>(x[i].m.bits, x[i + 1].m.bits, x[i + 2].m.bits, x[i + 3].m.bits),
                            h2f_x4<A>(y[i].s.bits, y[i + 1].s.bits, y[i + 2].s.bits, y[i + 3].s.bits), accm);
        __m512i q0 = q4_0_pair<A>(x + i), q1 = q4_0_pair<A>(x + i + 2);
        if constexpr (std::is_same_v<B, q::block_q5_1>) {
            std::uint32_t h[4];
            for (int k = 0; k < 4; ++k) std::memcpy(&h[k], x[i + k].qh, 4);
            q0 = _mm512_mask_add_epi8(q0, static_cast<__mmask64>(h[0]) | (static_cast<__mmask64>(h[1]) << 32), q0, k16);
            q1 = _mm512_mask_add_epi8(q1, static_cast<__mmask64>(h[2]) | (static_cast<__mmask64>(h[3]) << 32), q1, k16);
        }
        const __m512i p0 = dpbusd512<A>(z, q0, load_2x256<A>(y[i].qs, y[i + 1].qs));
        const __m512i p1 = dpbusd512<A>(z, q1, load_2x256<A>(y[i + 2].qs, y[i + 3].qs));
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), s01, acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), s23, acc1);
    }
    float s = hsum512<A>(_mm512_add_ps(acc0, acc1)) + hsum128<A>(accm);
    if (i < nb) s += vdot<A>((nb - i) * 32, x + i, y + i, simd::scalar{});
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_q4_1* x, const q::block_q8_1* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_q41_51<A>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_1* x, const q::block_q8_1* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_q41_51<A>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_0* x, const q::block_q8_0* y, simd::requires_arch<simd::avx512bw>) {
    const std::int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    const __m512i z = _mm512_setzero_si512(), k16 = _mm512_set1_epi8(0x10);
    std::int64_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        __m512 s01, s23;
        scales4<A>(x + i, y + i, s01, s23);
        std::uint32_t h[4];
        for (int k = 0; k < 4; ++k) std::memcpy(&h[k], x[i + k].qh, 4);
        __m512i q0 = q4_0_pair<A>(x + i), q1 = q4_0_pair<A>(x + i + 2);
        q0 = _mm512_mask_add_epi8(q0, static_cast<__mmask64>(h[0]) | (static_cast<__mmask64>(h[1]) << 32), q0, k16);
        q1 = _mm512_mask_add_epi8(q1, static_cast<__mmask64>(h[2]) | (static_cast<__mmask64>(h[3]) << 32), q1, k16);
        const __m512i y0 = load_2x256<A>(y[i].qs, y[i + 1].qs), y1 = load_2x256<A>(y[i + 2].qs, y[i + 3].qs);
        const __m512i p0 = dpbusd512<A>(_mm512_sub_epi32(z, dpbusd512<A>(z, k16, y0)), q0, y0);
        const __m512i p1 = dpbusd512<A>(_mm512_sub_epi32(z, dpbusd512<A>(z, k16, y1)), q1, y1);
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), s01, acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), s23, acc1);
    }
    float s = hsum512<A>(_mm512_add_ps(acc0, acc1));
    if (i < nb) s += vdot<A>((nb - i) * 32, x + i, y + i, simd::scalar{});
    return s;
}
// iq4_nl / mxfp4: nibbles index a signed table (vpshufb), then a signed x signed dot.
template <class A, class B>
float vdot_lut(std::int64_t n, const B* x, const q::block_q8_0* y) {
    const std::int64_t nb = n / 32;
    const std::int8_t* t = std::is_same_v<B, q::block_iq4_nl> ? tables<A>::iq4nl : tables<A>::mxfp4;
    const __m512i lut = bcast128<A>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::int64_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        __m512 s01, s23;
        if constexpr (std::is_same_v<B, q::block_mxfp4>) {
            const __m128 xs = _mm_setr_ps(e8m0_half<A>(x[i].e), e8m0_half<A>(x[i + 1].e), e8m0_half<A>(x[i + 2].e),
                                          e8m0_half<A>(x[i + 3].e));
            const __m512 w = _mm512_castps128_ps512(
                _mm_mul_ps(h2f_x4<A>(y[i].d.bits, y[i + 1].d.bits, y[i + 2].d.bits, y[i + 3].d.bits), xs));
            s01 = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), w);
            s23 = _mm512_permutexvar_ps(_mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), w);
        } else {
            scales4<A>(x + i, y + i, s01, s23);
        }
        const __m512i v0 = _mm512_shuffle_epi8(lut, q4_0_pair<A>(x + i));
        const __m512i v1 = _mm512_shuffle_epi8(lut, q4_0_pair<A>(x + i + 2));
        const __m512i p0 = dot_s8s8_512<A>(v0, load_2x256<A>(y[i].qs, y[i + 1].qs));
        const __m512i p1 = dot_s8s8_512<A>(v1, load_2x256<A>(y[i + 2].qs, y[i + 3].qs));
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), s01, acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), s23, acc1);
    }
    float s = hsum512<A>(_mm512_add_ps(acc0, acc1));
    if (i < nb) s += vdot<A>((nb - i) * 32, x + i, y + i, simd::scalar{});
    return s;
}
template <class A>
float vdot(std::int64_t n, const q::block_iq4_nl* x, const q::block_q8_0* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_lut<A>(n, x, y);
}
template <class A>
float vdot(std::int64_t n, const q::block_mxfp4* x, const q::block_q8_0* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_lut<A>(n, x, y);
}

// ---- more K-quants on AVX-512 -----------------------------------------------------------------
// i16 scale vector with one scale per 128-bit lane: scales[b], scales[b+1], scales[b+2], scales[b+3]
// taken from the 16 i16 lanes of sc (low 256 bits).
template <class A>
TESSERA_ALWAYS_INLINE __m512i scale_per_lane(__m512i sc, short b) {
    const long long w = 0x0001000100010001LL;
    const __m512i idx = _mm512_setr_epi64(w * b, w * b, w * (b + 1), w * (b + 1), w * (b + 2), w * (b + 2), w * (b + 3),
                                          w * (b + 3));
    return _mm512_permutexvar_epi16(idx, sc);
}
// Two 2-bit fields of the 32 bytes at p as bytes 0..31 (shift s0) and 32..63 (shift s1).
template <class A>
TESSERA_ALWAYS_INLINE __m512i crumbs_pair(const std::uint8_t* p, int s0) {
    const __m512i b = bcast256<A>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    const __m512i cnt = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(s0)), _mm256_set1_epi16(static_cast<short>(s0 + 2)), 1);
    return _mm512_and_si512(_mm512_srlv_epi16(b, cnt), _mm512_set1_epi8(3));
}
template <class A>
float vdot(std::int64_t n, const q::block_q2_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx512bw>) {
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
        const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, _mm_set1_epi8(0x0F)));
        const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F)));
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums));
        const __m256i summ = _mm256_madd_epi16(bs, mn16);
        const __m512i scw = _mm512_castsi256_si512(sc16);
        __m512i sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; ++h)
            for (int sp = 0; sp < 4; sp += 2) {
                const __m512i qv = crumbs_pair<A>(x[i].qs + 32 * h, 2 * sp);
                const __m512i p = _mm512_maddubs_epi16(qv, _mm512_loadu_si512(y[i].qs + 128 * h + 32 * sp));
                sumi = dpwssd512<A>(sumi, p, scale_per_lane<A>(scw, static_cast<short>(8 * h + 2 * sp)));
            }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(y[i].d * h2f<A>(x[i].d)), acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_set1_ps(y[i].d * h2f<A>(x[i].dmin)), accm);
    }
    return hsum512<A>(acc) - hsum256<A>(accm);
}
template <class A>
float vdot(std::int64_t n, const q::block_q3_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx512bw>) {
    __m512 acc = _mm512_setzero_ps();
    const __m512i k4 = _mm512_set1_epi8(4);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(q3k_scales128<A>(x[i].scales));
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums));
        const __m256i corr = _mm256_madd_epi16(bs, sc16);
        const __m512i scw = _mm512_castsi256_si512(sc16);
        const __m512i hm = bcast256<A>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].hmask)));
        __m512i sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; ++h)
            for (int sp = 0; sp < 4; sp += 2) {
                const int g = 4 * h + sp;  // hmask bit of the first 32 elements
                const __m512i bits = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << g)),
                                                        _mm256_set1_epi8(static_cast<char>(1 << (g + 1))), 1);
                __m512i qv = crumbs_pair<A>(x[i].qs + 32 * h, 2 * sp);
                qv = _mm512_mask_add_epi8(qv, _mm512_test_epi8_mask(hm, bits), qv, k4);  // 0..7 = value + 4
                const __m512i p = _mm512_maddubs_epi16(qv, _mm512_loadu_si512(y[i].qs + 128 * h + 32 * sp));
                sumi = dpwssd512<A>(sumi, p, scale_per_lane<A>(scw, static_cast<short>(8 * h + 2 * sp)));
            }
        sumi = _mm512_sub_epi32(sumi, _mm512_slli_epi32(_mm512_zextsi256_si512(corr), 2));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(y[i].d * h2f<A>(x[i].d)), acc);
    }
    return hsum512<A>(acc);
}
template <class A>
float vdot(std::int64_t n, const q::block_q5_K* x, const q::block_q8_K* y, simd::requires_arch<simd::avx512bw>) {
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0F), k16 = _mm512_set1_epi8(0x10);
    const __m512i cnt = _mm512_setr_epi64(0, 0, 0, 0, 0x0004000400040004, 0x0004000400040004, 0x0004000400040004,
                                          0x0004000400040004);
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        const __m128i sm = k4_scales_mins<A>(x[i].scales);
        const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sm));
        const __m256i mn32 = _mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8));
        const __m256i mn16 = _mm256_or_si256(mn32, _mm256_slli_epi32(mn32, 16));
        const __m256i summ = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums)), mn16);
        const __m512i hb = bcast256<A>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh)));
        __m512i sumi = _mm512_setzero_si512();
        for (int j = 0; j < 4; ++j) {
            __m512i qv = _mm512_and_si512(
                _mm512_srlv_epi16(bcast256<A>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * j))),
                                  cnt),
                m4);
            const __m512i bits = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * j))),
                                                    _mm256_set1_epi8(static_cast<char>(1 << (2 * j + 1))), 1);
            qv = _mm512_mask_add_epi8(qv, _mm512_test_epi8_mask(hb, bits), qv, k16);
            const __m512i p = _mm512_maddubs_epi16(qv, _mm512_loadu_si512(y[i].qs + 64 * j));
            const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(2 * j)),
                                                   _mm256_set1_epi16(static_cast<short>(2 * j + 1)), 1);
            sumi = dpwssd512<A>(sumi, p, _mm512_permutexvar_epi16(idx, sc16));
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(y[i].d * h2f<A>(x[i].d)), acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_set1_ps(y[i].d * h2f<A>(x[i].dmin)), accm);
    }
    return hsum512<A>(acc) - hsum256<A>(accm);
}
template <class A>
float vdot(std::int64_t n, const q::block_iq4_xs* x, const q::block_q8_K* y, simd::requires_arch<simd::avx512bw>) {
    __m512 acc = _mm512_setzero_ps();
    const __m512i lut = bcast128<A>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tables<A>::iq4nl)));
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        __m512i sumi = _mm512_setzero_si512();
        for (int ib = 0; ib < 8; ib += 2) {
            const int l0 = ((x[i].scales_l[ib / 2] & 0xF) | (((x[i].scales_h >> (2 * ib)) & 3) << 4)) - 32;
            const int l1 = ((x[i].scales_l[ib / 2] >> 4) | (((x[i].scales_h >> (2 * ib + 2)) & 3) << 4)) - 32;
            const __m512i v = _mm512_shuffle_epi8(lut, nibbles_pair<A>(x[i].qs + 16 * ib, x[i].qs + 16 * ib + 16));
            const __m512i yv = _mm512_loadu_si512(y[i].qs + 32 * ib);
            const __m512i sy = _mm512_mask_sub_epi8(yv, _mm512_movepi8_mask(v), _mm512_setzero_si512(), yv);
            const __m512i p = _mm512_maddubs_epi16(_mm512_abs_epi8(v), sy);  // |v|, |y| <= 127: no saturation
            const __m512i sc = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(l0)),
                                                  _mm256_set1_epi16(static_cast<short>(l1)), 1);
            sumi = dpwssd512<A>(sumi, p, sc);
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(y[i].d * h2f<A>(x[i].d)), acc);
    }
    return hsum512<A>(acc);
}
template <class A>
float vdot(std::int64_t n, const q::block_tq2_0* x, const q::block_q8_K* y, simd::requires_arch<simd::avx512bw>) {
    __m512 acc = _mm512_setzero_ps();
    float corr = 0.0f;
    const __m512i z = _mm512_setzero_si512();
    for (std::int64_t i = 0; i < n / q::qk_k; ++i) {
        __m512i sumi = z;
        for (int h = 0; h < 2; ++h)
            for (int sp = 0; sp < 4; sp += 2)
                sumi = dpbusd512<A>(sumi, crumbs_pair<A>(x[i].qs + 32 * h, 2 * sp),
                                    _mm512_loadu_si512(y[i].qs + 128 * h + 32 * sp));
        int sumy = 0;
        for (int j = 0; j < 16; ++j) sumy += y[i].bsums[j];
        const float dd = y[i].d * h2f<A>(x[i].d);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(dd), acc);
        corr += dd * static_cast<float>(sumy);
    }
    return hsum512<A>(acc) - corr;
}

// q4_0, four rows at a time: the activation side (loads, its scales, the -8 * sum(y)
// correction folded into the accumulator start) is done once for the four rows.
// The four rows are taken from the four quarters of the range (r, r + q, r + 2q, r + 3q),
// not adjacent: four adjacent rows share 4 KiB pages, and the hardware prefetcher,
// which follows one stream per page, then loses the pattern. From DRAM the adjacent
// order read 12 GB/s at 2 threads and this order 25 GB/s (bench_quant matvec/q4_0).
template <class A>
void gemv(std::int64_t n, std::int64_t nrows, const q::block_q4_0* x, std::size_t row_stride, const q::block_q8_0* y,
          float* out, simd::requires_arch<simd::avx512bw>) {
    const std::int64_t nb = n / 32, nb4 = nb / 4 * 4;
    const auto* base = reinterpret_cast<const unsigned char*>(x);
    auto row = [&](std::int64_t r) {
        return reinterpret_cast<const q::block_q4_0*>(base + static_cast<std::size_t>(r) * row_stride);
    };
    const __m512i k8 = _mm512_set1_epi8(8), z = _mm512_setzero_si512();
    const __m512i i01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i i23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const std::int64_t q4 = nrows / 4;
    for (std::int64_t r = 0; r < q4; ++r) {
        const std::int64_t rr[4] = {r, r + q4, r + 2 * q4, r + 3 * q4};
        const q::block_q4_0* xr[4] = {row(rr[0]), row(rr[1]), row(rr[2]), row(rr[3])};
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (std::int64_t i = 0; i < nb4; i += 4) {
            const __m128 ys = h2f_x4<A>(y[i].d.bits, y[i + 1].d.bits, y[i + 2].d.bits, y[i + 3].d.bits);
            const __m512i y0 = load_2x256<A>(y[i].qs, y[i + 1].qs), y1 = load_2x256<A>(y[i + 2].qs, y[i + 3].qs);
            const __m512i c0 = _mm512_sub_epi32(z, dpbusd512<A>(z, k8, y0));
            const __m512i c1 = _mm512_sub_epi32(z, dpbusd512<A>(z, k8, y1));
            for (int k = 0; k < 4; ++k) {
                const q::block_q4_0* b = xr[k] + i;
                const __m512 s = _mm512_castps128_ps512(
                    _mm_mul_ps(h2f_x4<A>(b[0].d.bits, b[1].d.bits, b[2].d.bits, b[3].d.bits), ys));
                const __m512i p0 = dpbusd512<A>(c0, q4_0_pair<A>(b), y0);
                const __m512i p1 = dpbusd512<A>(c1, q4_0_pair<A>(b + 2), y1);
                acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p0), _mm512_permutexvar_ps(i01, s), acc[k]);
                acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p1), _mm512_permutexvar_ps(i23, s), acc[k]);
            }
        }
        for (int k = 0; k < 4; ++k) {
            float t = hsum512<A>(acc[k]);
            if (nb4 < nb) t += vdot<A>((nb - nb4) * 32, xr[k] + nb4, y + nb4, simd::avx2{});
            out[rr[k]] = t;
        }
    }
    for (std::int64_t r = 4 * q4; r < nrows; ++r) out[r] = vdot<A>(n, row(r), y, A{});
}

// ---- f16 / bf16 rows: one body for both widths --------------------------------------------
// sum of x[i] * y[i] over 16-bit float rows: four accumulators of V::lanes, then one, then
// the scalar tail.
template <class A, class V, class T>
float vdot_h16(std::int64_t n, const T* x, const T* y) {
    constexpr std::int64_t w = V::lanes;
    typename V::vf a0 = V::zerof(), a1 = a0, a2 = a0, a3 = a0;
    std::int64_t i = 0;
    for (; i + 4 * w <= n; i += 4 * w) {
        a0 = V::fma(V::load(x + i), V::load(y + i), a0);
        a1 = V::fma(V::load(x + i + w), V::load(y + i + w), a1);
        a2 = V::fma(V::load(x + i + 2 * w), V::load(y + i + 2 * w), a2);
        a3 = V::fma(V::load(x + i + 3 * w), V::load(y + i + 3 * w), a3);
    }
    for (; i + w <= n; i += w) a0 = V::fma(V::load(x + i), V::load(y + i), a0);
    float s = V::hsum(V::add(V::add(a0, a1), V::add(a2, a3)));
    for (; i < n; ++i) {
        if constexpr (std::is_same_v<T, f16>)
            s += h2f<A>(x[i]) * h2f<A>(y[i]);
        else
            s += bf2f<A>(x[i]) * bf2f<A>(y[i]);
    }
    return s;
}
// f16 stays on 8 lanes with AVX-512 too: 512-bit vcvtph2ps is no faster on the Zen
// machines here.
template <class A>
float vdot_f16(std::int64_t n, const f16* x, const f16* y, simd::requires_arch<simd::avx2>) {
    return vdot_h16<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot_bf16(std::int64_t n, const bf16* x, const bf16* y, simd::requires_arch<simd::avx2>) {
    return vdot_h16<A, vd256<A>>(n, x, y);
}
template <class A>
float vdot_bf16(std::int64_t n, const bf16* x, const bf16* y, simd::requires_arch<simd::avx512bw>) {
    return vdot_h16<A, vd512<A>>(n, x, y);
}

}  // namespace qdetail
}  // namespace kernels
TESSERA_END_NAMESPACE

#endif  // TESSERA_X86
