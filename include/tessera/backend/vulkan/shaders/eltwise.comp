#version 450
// tessera Vulkan, element-wise ops, one invocation per element of d (computed in f32):
//   op 0..3   d = a OP b: add, sub, mul, div, with b repeated over d (ggml's broadcast:
//             b's extent divides d's)
//   op 4      d = a * s + t (scale)
//   op 5      copy: d's element k = a's element k in the row-major traversals of d's
//             extents (ne) and a's (bne): ggml's cpy / dup / cont (i32 to i32 bit-exact)
//   op 16 + u unary op u in ggml's unary order (abs 0 ... trunc 21; xielu 17 takes
//             alpha_n = s, alpha_p = t, beta = u, eps = w)
//   op 7      repeat: d = a[i % bne] (bne: a's extents)
//   op 8      concat along dim (the bits of s): d = a where i[dim] < bne[dim] (a's
//             extents), else b at i[dim] - bne[dim]
//   (5, 7, 8: i32 to i32 as the bits)
//   op 6      diag_mask: d = a, but -inf (t = 1) or 0 (t = 0) where i0 > n_past + i1
//             (n_past: the bits of s, an int)
//   op 48..55 sqr, sqrt, log, sin, cos, clamp (min s, max t), leaky_relu (slope s), fill (s)
//   op 64 + g gated unit g (reglu 0, geglu 1, swiglu 2, swiglu_oai 3, geglu_erf 4,
//             geglu_quick 5): d = act(a) * b; the one-tensor form binds the same tensor
//             twice with the two halves' offsets; swiglu_oai takes alpha = s, limit = t
// Every operand is addressed by its own strides in its own elements (push constants), so
// views, permutations and broadcast operands need no copy.
layout(local_size_x = 256) in;
#include "common.glsl"
layout(push_constant) uniform P {
    uvec4 ne;   // d's extents (= a's, but for copy)
    uvec4 bne;  // b's extents; a's for copy
    uvec4 anb;  // strides in elements
    uvec4 bnb;
    uvec4 dnb;
    uint aoff;  // first element of each operand inside its binding
    uint boff;
    uint doff;
    uint op;
    uint types;  // a | b << 4 | d << 8 (type codes of common.glsl)
    float s;     // the op's parameters
    float t;
    float u;
    float w;
} p;

float tanh_f(float x) {  // tanh without exp overflow: 1 - 2 / (e^2x + 1)
    return 1.0 - 2.0 / (exp(2.0 * x) + 1.0);
}
float erf_f(float x) {  // Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7)
    const float z = abs(x);
    const float k = 1.0 / (1.0 + 0.3275911 * z);
    const float y = 1.0 - (((((1.061405429 * k - 1.453152027) * k) + 1.421413741) * k - 0.284496736) * k + 0.254829592) * k * exp(-z * z);
    return sign(x) * y;
}
float gelu_f(float x) { return 0.5 * x * (1.0 + tanh_f(0.79788456080286535588 * x * (1.0 + 0.044715 * x * x))); }
float gelu_erf_f(float x) { return 0.5 * x * (1.0 + erf_f(x * 0.70710678118654752440)); }
float gelu_quick_f(float x) { return x / (1.0 + exp(-1.702 * x)); }

float expm1_f(float x) {  // Kahan: (e^x - 1) x / log(e^x), exact near 0
    const float e = exp(x);
    if (e == 1.0) return x;
    if (e - 1.0 == -1.0) return -1.0;
    return (e - 1.0) * x / log(e);
}
float log1p_f(float y) {  // Kahan: log(1 + y) y / ((1 + y) - 1)
    const float v = 1.0 + y;
    return v == 1.0 ? y : log(v) * y / (v - 1.0);
}
float round_f(float x) {  // half away from zero, as std::round
    const float r = trunc(x);
    return abs(x - r) >= 0.5 ? r + sign(x) : r;
}

float unary(uint u, float x) {
    switch (u) {
        case 0u: return abs(x);
        case 1u: return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
        case 2u: return -x;
        case 3u: return x > 0.0 ? 1.0 : 0.0;
        case 4u: return tanh_f(x);
        case 5u: return x > 0.0 ? x : expm1_f(x);
        case 6u: return x > 0.0 ? x : 0.0;
        case 7u: return 1.0 / (1.0 + exp(-x));
        case 8u: return gelu_f(x);
        case 9u: return gelu_quick_f(x);
        case 10u: return x / (1.0 + exp(-x));
        case 11u: return x * min(1.0, max(0.0, (x + 3.0) / 6.0));
        case 12u: return min(1.0, max(0.0, (x + 3.0) / 6.0));
        case 13u: return exp(x);
        case 14u: return expm1_f(x);
        case 15u: return x > 20.0 ? x : log1p_f(exp(x));
        case 16u: return gelu_erf_f(x);
        case 17u: return x > 0.0 ? p.t * x * x + p.u * x : (expm1_f(min(x, p.w)) - x) * p.s + p.u * x;
        case 18u: return floor(x);
        case 19u: return ceil(x);
        case 20u: return round_f(x);
        case 21u: return trunc(x);
        case 16u + 16u: return x * x;
        case 16u + 17u: return sqrt(x);
        case 16u + 18u: return log(x);
        case 16u + 19u: return sin(x);
        case 16u + 20u: return cos(x);
        case 16u + 21u: return x < p.s ? p.s : (x > p.t ? p.t : x);
        case 16u + 22u: return x > 0.0 ? x : p.s * x;
        case 16u + 23u: return p.s;
    }
    return x;
}
float glu(uint g, float x, float y) {
    switch (g) {
        case 0u: return (x > 0.0 ? x : 0.0) * y;
        case 1u: return gelu_f(x) * y;
        case 2u: return x / (1.0 + exp(-x)) * y;
        case 3u: {
            const float xv = min(x, p.t);
            const float yv = clamp(y, -p.t, p.t);
            return xv / (1.0 + exp(-p.s * xv)) * (yv + 1.0);
        }
        case 4u: return gelu_erf_f(x) * y;
        case 5u: return gelu_quick_f(x) * y;
    }
    return 0.0;
}

void main() {
    const uint idx = flat_index(256u);
    if (idx >= p.ne.x * p.ne.y * p.ne.z * p.ne.w) return;
    const uint ta = p.types & 15u, tb = (p.types >> 4) & 15u, td = (p.types >> 8) & 15u;
    const uvec4 i = unravel(idx, p.ne);
    float v;
    if (p.op == 5u || p.op == 7u || p.op == 8u) {
        bool from_b = false;
        uint ia;
        if (p.op == 5u) {
            ia = p.aoff + at(unravel(idx, p.bne), p.anb);
        } else if (p.op == 7u) {
            ia = p.aoff + at(i % p.bne, p.anb);
        } else {
            const uint dim = uint(floatBitsToInt(p.s));
            uvec4 j = i;
            from_b = j[dim] >= p.bne[dim];
            if (from_b) j[dim] -= p.bne[dim];
            ia = from_b ? p.boff + at(j, p.bnb) : p.aoff + at(j, p.anb);
        }
        if (ta == 3u && td == 3u) {  // i32 to i32: the bits, not through f32
            di32[p.doff + at(i, p.dnb)] = from_b ? bi32[ia] : ai32[ia];
            return;
        }
        v = from_b ? load_b(tb, ia) : load_a(ta, ia);
    } else {
        const float x = load_a(ta, p.aoff + at(i, p.anb));
        if (p.op == 4u) {
            v = x * p.s + p.t;
        } else if (p.op == 6u) {
            v = int(i.x) > floatBitsToInt(p.s) + int(i.y) ? (p.t != 0.0 ? -1.0 / 0.0 : 0.0) : x;
        } else if (p.op >= 64u) {
            v = glu(p.op - 64u, x, load_b(tb, p.boff + at(i, p.bnb)));
        } else if (p.op >= 16u) {  // unary, and the ops 48..54
            v = unary(p.op - 16u, x);
        } else {
            const float y = load_b(tb, p.boff + at(i % p.bne, p.bnb));
            if (p.op == 0u) v = x + y;
            else if (p.op == 1u) v = x - y;
            else if (p.op == 2u) v = x * y;
            else v = x / y;
        }
    }
    store_d(td, p.doff + at(i, p.dnb), v);
}
