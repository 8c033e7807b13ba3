// Attention building blocks: diag_mask_inf/zero, soft_max (with mask, scale, ALiBi
// max_bias and sinks), rope (normal and neox, with YaRN parameters and frequency
// factors), and flash_attn_ext.
#pragma once

#include <optional>

#include "tessera/graph/ops/common.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

namespace detail {

inline node* diag_mask(op_kind op, node* a, int n_past, bool inplace) {
    check_float(op_name(op), a, "a");
    if (inplace) return make_inplace(a, op, diag_mask_params{n_past}, {a});
    return make(*a->ctx, a->lay.type, a->lay.ne, op, diag_mask_params{n_past}, {a});
}

inline node* soft_max(node* a, node* mask, float scale, float max_bias, bool inplace) {
    check_float("soft_max", a, "a");
    if (mask) {
        if (mask->lay.type != type_id::f32 && mask->lay.type != type_id::f16)
            op_fail("soft_max", errc::unsupported, "mask " + desc(mask) + " must be f32 or f16");
        check_rows_contiguous("soft_max", mask, "mask");
        if (mask->lay.ne[0] != a->lay.ne[0] || mask->lay.ne[1] < a->lay.ne[1] || !divisible(a->lay.ne[2], mask->lay.ne[2]) ||
            !divisible(a->lay.ne[3], mask->lay.ne[3]))
            op_fail("soft_max", errc::shape_mismatch, "mask " + desc(mask) + " does not fit a " + desc(a) +
                                                          " (needs [a.ne0, >= a.ne1, divisor of a.ne2, divisor of a.ne3])");
    }
    if (max_bias > 0.0f && !mask) op_fail("soft_max", errc::invalid_argument, "ALiBi (max_bias > 0) needs a mask");
    soft_max_params p{scale, max_bias};
    if (inplace) return make_inplace(a, op_kind::soft_max, p, {a, mask});
    return make(*a->ctx, a->lay.type, a->lay.ne, op_kind::soft_max, p, {a, mask});
}

inline void add_sinks(node* t, node* sinks, int slot, std::int64_t heads) {
    check_type("sinks", sinks, type_id::f32, "sinks");
    if (sinks->lay.nelements() != heads)
        op_fail("sinks", errc::shape_mismatch, "sinks " + desc(sinks) + " needs one value per head (" + std::to_string(heads) + ")");
    t->src[static_cast<std::size_t>(slot)] = sinks;
}

// Cos/sin pairs a rope of these parameters computes per row (vision rotates the whole row).
inline std::int64_t rope_pairs(const rope_params& p) noexcept { return p.mode == rope_mode_vision ? p.n_dims : p.n_dims / 2; }

// op: rope, or rope_back (the inverse rotation: the same angles with sin negated).
inline node* rope(op_kind op, node* a, node* pos, node* freq, const rope_params& p, bool inplace) {
    const auto name = op_name(op);
    check_float(name, a, "a");
    check_type(name, pos, type_id::i32, "positions");
    const int m = p.mode;
    if (m != rope_mode_normal && m != rope_mode_neox && m != rope_mode_mrope && m != rope_mode_vision && m != rope_mode_imrope)
        op_fail(name, errc::invalid_argument, "mode " + std::to_string(m) +
                                                  " is not one of ggml's (0 normal, 2 neox, 8 mrope, 24 vision, 40 imrope)");
    const bool multi = (m & rope_mode_mrope) != 0;
    if (pos->lay.nelements() != a->lay.ne[2] * (multi ? 4 : 1) || pos->lay.ne[1] != 1)
        op_fail(name, errc::shape_mismatch, "positions " + desc(pos) + " need " + (multi ? "4 x " : "") +
                                                "a.ne2 entries for a " + desc(a));
    if (p.n_dims <= 0 || p.n_dims > a->lay.ne[0] || p.n_dims % 2 != 0)
        op_fail(name, errc::invalid_argument, "n_dims " + std::to_string(p.n_dims) + " must be even and in 1..a.ne0 (" +
                                                  std::to_string(a->lay.ne[0]) + ")");
    if (multi) {
        const auto& s = p.sections;
        if (s[0] < 0 || s[1] < 0 || s[2] < 0 || s[3] < 0 || s[0] + s[1] + s[2] <= 0 || s[0] + s[1] + s[2] + s[3] > a->lay.ne[0])
            op_fail(name, errc::invalid_argument, "sections {" + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " +
                                                      std::to_string(s[2]) + ", " + std::to_string(s[3]) +
                                                      "} must be >= 0, not all of the first three 0, and sum to at most a.ne0");
    }
    if (m == rope_mode_vision && 2 * p.n_dims != a->lay.ne[0])
        op_fail(name, errc::invalid_argument, "vision mode needs n_dims = a.ne0 / 2 (n_dims " + std::to_string(p.n_dims) +
                                                  ", a " + desc(a) + ")");
    if (freq) {
        check_type(name, freq, type_id::f32, "freq_factors");
        if (freq->lay.ne[0] < rope_pairs(p))
            op_fail(name, errc::shape_mismatch, "freq_factors " + desc(freq) + " need at least " + std::to_string(rope_pairs(p)) +
                                                    " entries (one per rotated pair)");
    }
    if (inplace) return make_inplace(a, op, p, {a, pos, freq});
    return make(*a->ctx, a->lay.type, a->lay.ne, op, p, {a, pos, freq});
}

inline node* flash_attn_ext(node* q, node* k, node* v, node* mask, const flash_attn_params& p) {
    check_type("flash_attn_ext", q, type_id::f32, "q");
    check_not_null("flash_attn_ext", k, "k");
    check_not_null("flash_attn_ext", v, "v");
    const auto& lq = q->lay;
    const auto& lk = k->lay;
    const auto& lv = v->lay;
    if (lk.ne[0] != lq.ne[0]) op_fail("flash_attn_ext", errc::shape_mismatch, "q " + desc(q) + " and k " + desc(k) + " differ in head size");
    if (lk.ne[1] != lv.ne[1] || lk.ne[2] != lv.ne[2] || lk.ne[3] != lv.ne[3])
        op_fail("flash_attn_ext", errc::shape_mismatch, "k " + desc(k) + " and v " + desc(v) + " differ in kv length or heads");
    if (!divisible(lq.ne[2], lk.ne[2]) || !divisible(lq.ne[3], lk.ne[3]))
        op_fail("flash_attn_ext", errc::shape_mismatch, "q heads " + desc(q) + " are not a multiple of kv heads " + desc(k));
    if (mask) {
        if (mask->lay.type != type_id::f16 && mask->lay.type != type_id::f32)
            op_fail("flash_attn_ext", errc::unsupported, "mask " + desc(mask) + " must be f16 (or f32)");
        if (mask->lay.ne[0] != lk.ne[1] || mask->lay.ne[1] < lq.ne[1] || !divisible(lq.ne[2], mask->lay.ne[2]) ||
            !divisible(lq.ne[3], mask->lay.ne[3]))
            op_fail("flash_attn_ext", errc::shape_mismatch, "mask " + desc(mask) + " must be [n_kv, >= n_q, divisor of heads, divisor of ne3]");
    }
    if (p.max_bias > 0.0f && !mask) op_fail("flash_attn_ext", errc::invalid_argument, "ALiBi (max_bias > 0) needs a mask");
    return make(*q->ctx, type_id::f32, {lv.ne[0], lq.ne[2], lq.ne[1], lq.ne[3]}, op_kind::flash_attn_ext, p, {q, k, v, mask});
}

}  // namespace detail

// ---- diag_mask -------------------------------------------------------------------------------
// Elements with column > n_past + row become -inf (diag_mask_inf) or 0 (diag_mask_zero);
// the *_inplace forms write over a.
#define TESSERA_DIAG_MASK_(NAME)                                                                   \
    template <float_element T, int R>                                                              \
        requires(R >= 2)                                                                           \
    tensor<T, R> NAME(tensor<T, R> a, int n_past) {                                                \
        return tensor<T, R>(detail::diag_mask(op_kind::NAME, a.get(), n_past, false));            \
    }                                                                                              \
    template <float_element T, int R>                                                              \
        requires(R >= 2)                                                                           \
    tensor<T, R> NAME##_inplace(tensor<T, R> a, int n_past) {                                      \
        return tensor<T, R>(detail::diag_mask(op_kind::NAME, a.get(), n_past, true));             \
    }                                                                                              \
    inline any_tensor NAME(any_tensor a, int n_past) {                                             \
        return any_tensor(detail::diag_mask(op_kind::NAME, a.get(), n_past, false));               \
    }                                                                                              \
    inline any_tensor NAME##_inplace(any_tensor a, int n_past) {                                   \
        return any_tensor(detail::diag_mask(op_kind::NAME, a.get(), n_past, true));                \
    }
TESSERA_DIAG_MASK_(diag_mask_inf)
TESSERA_DIAG_MASK_(diag_mask_zero)
#undef TESSERA_DIAG_MASK_

// ---- soft_max --------------------------------------------------------------------------------
// Row softmax of a*scale + slope*mask (slope from ALiBi when max_bias > 0, else 1).
template <float_element T, int R>
tensor<T, R> soft_max(tensor<T, R> a) {
    return tensor<T, R>(detail::soft_max(a.get(), nullptr, 1.0f, 0.0f, false));
}
template <float_element T, int R>
tensor<T, R> soft_max_inplace(tensor<T, R> a) {
    return tensor<T, R>(detail::soft_max(a.get(), nullptr, 1.0f, 0.0f, true));
}
template <float_element T, int R, float_element M, int Rm>
    requires(Rm <= R)
tensor<T, R> soft_max_ext(tensor<T, R> a, tensor<M, Rm> mask, float scale, float max_bias = 0.0f) {
    return tensor<T, R>(detail::soft_max(a.get(), mask.get(), scale, max_bias, false));
}
template <float_element T, int R>
tensor<T, R> soft_max_ext(tensor<T, R> a, std::nullopt_t, float scale, float max_bias = 0.0f) {
    return tensor<T, R>(detail::soft_max(a.get(), nullptr, scale, max_bias, false));
}
inline any_tensor soft_max_ext(any_tensor a, any_tensor mask, float scale, float max_bias = 0.0f) {
    return any_tensor(detail::soft_max(a.get(), mask.get(), scale, max_bias, false));
}
// Attention sinks: one extra logit per head (index along dim 2) in the max and the sum.
template <float_element T, int R>
tensor<T, R> soft_max_add_sinks(tensor<T, R> sm, tensor<float, 1> sinks) {
    if (sm.get()->op != op_kind::soft_max) fail(errc::invalid_argument, "soft_max_add_sinks: not a soft_max node");
    detail::add_sinks(sm.get(), sinks.get(), 2, sm.ne(2));
    return sm;
}

// ---- rope --------------------------------------------------------------------------------
// a [D, n_head, T, ne3], positions i32 [T]; rotates the first n_dims of each row.
// The mode (a rope_mode; rope_params::mode holds it): normal (pairs 2i, 2i+1), neox
// (pairs i, i + n_dims/2); the multi modes take 4 x T positions (4 streams: t, h, w, e;
// position s of token i at i + s*T) and sections (pairs per stream): mrope (neox pairs,
// pair i of a row uses the stream its sector i % sum(sections) falls in), imrope (streams
// interleaved t, h, w by sector % 3), vision (n_dims = D/2, pairs i, i + n_dims over the
// whole row; the angle index restarts at each section).
template <float_element T, int R>
    requires(R >= 3)
tensor<T, R> rope(tensor<T, R> a, tensor<std::int32_t, 1> pos, int n_dims, rope_mode mode) {
    rope_params p;
    p.n_dims = n_dims;
    p.mode = mode;
    return tensor<T, R>(detail::rope(op_kind::rope, a.get(), pos.get(), nullptr, p, false));
}
// rope_ext: every parameter (rope_params), optional frequency factors; rope_ext_back: its
// inverse with the same parameters (ggml's rope_ext_back / rope_multi_back: the gradient of
// rope). The *_inplace forms write over a.
#define TESSERA_ROPE_EXT_(NAME, OP)                                                                                          \
    template <float_element T, int R>                                                                                        \
        requires(R >= 3)                                                                                                     \
    tensor<T, R> NAME(tensor<T, R> a, tensor<std::int32_t, 1> pos, std::optional<tensor<float, 1>> freq_factors,             \
                      const rope_params& p) {                                                                                \
        return tensor<T, R>(detail::rope(OP, a.get(), pos.get(), freq_factors ? freq_factors->get() : nullptr, p, false));   \
    }                                                                                                                        \
    template <float_element T, int R>                                                                                        \
        requires(R >= 3)                                                                                                     \
    tensor<T, R> NAME##_inplace(tensor<T, R> a, tensor<std::int32_t, 1> pos, std::optional<tensor<float, 1>> freq_factors,   \
                                const rope_params& p) {                                                                      \
        return tensor<T, R>(detail::rope(OP, a.get(), pos.get(), freq_factors ? freq_factors->get() : nullptr, p, true));    \
    }
TESSERA_ROPE_EXT_(rope_ext, op_kind::rope)
TESSERA_ROPE_EXT_(rope_ext_back, op_kind::rope_back)
#undef TESSERA_ROPE_EXT_
template <typed_tensor A, typed_tensor P>
    requires(!float_tensor<A> || std::remove_cvref_t<A>::rank < 3 || !std::same_as<std::remove_cvref_t<P>, tensor<std::int32_t, 1>>)
void rope(A, P, int, rope_mode) {
    static_assert(detail::dependent_false<A, P>,
                  "tessera::graph::rope: a must be a float tensor of rank >= 3 ([head_dim, n_head, n_tokens]) "
                  "and the positions a tensor<int32_t, 1>");
}
inline any_tensor rope_ext(any_tensor a, any_tensor pos, any_tensor freq_factors, const rope_params& p) {
    return any_tensor(detail::rope(op_kind::rope, a.get(), pos.get(), freq_factors.get(), p, false));
}
inline any_tensor rope_ext_back(any_tensor a, any_tensor pos, any_tensor freq_factors, const rope_params& p) {
    return any_tensor(detail::rope(op_kind::rope_back, a.get(), pos.get(), freq_factors.get(), p, false));
}

// ---- flash_attn_ext ----------------------------------------------------------------------
// q f32 [Dk, n_q, H, ne3], k [Dk, n_kv, Hkv, ne3], v [Dv, n_kv, Hkv, ne3] (k, v f32,
// f16 or bf16), mask [n_kv, >= n_q, ...] -> f32 [Dv, H, n_q, ne3] (note the permuted
// output, as in ggml). flash_attn_ext_set_prec(fa, precision::f32) asks a backend for f32
// accumulation (the CPU accumulates in f32 always).
template <int Rq, float_element K, int Rk, float_element V, int Rv>
tensor<float, 4> flash_attn_ext(tensor<float, Rq> q, tensor<K, Rk> k, tensor<V, Rv> v, std::optional<any_tensor> mask,
                                float scale, float max_bias = 0.0f, float logit_softcap = 0.0f) {
    return tensor<float, 4>(
        detail::flash_attn_ext(q.get(), k.get(), v.get(), mask ? mask->get() : nullptr, {scale, max_bias, logit_softcap, precision::default_}));
}
inline any_tensor flash_attn_ext(any_tensor q, any_tensor k, any_tensor v, any_tensor mask, float scale,
                                 float max_bias = 0.0f, float logit_softcap = 0.0f) {
    return any_tensor(detail::flash_attn_ext(q.get(), k.get(), v.get(), mask.get(), {scale, max_bias, logit_softcap, precision::default_}));
}
template <class FA>
    requires(std::same_as<FA, tensor<float, 4>> || std::same_as<FA, any_tensor>)
FA flash_attn_ext_set_prec(FA fa, precision prec) {
    if (!fa || fa.get()->op != op_kind::flash_attn_ext)
        fail(errc::invalid_argument, "flash_attn_ext_set_prec: not a flash_attn_ext node");
    fa.get()->params.template get<flash_attn_params>().prec = prec;
    return fa;
}
inline tensor<float, 4> flash_attn_ext_add_sinks(tensor<float, 4> fa, tensor<float, 1> sinks) {
    if (fa.get()->op != op_kind::flash_attn_ext) fail(errc::invalid_argument, "flash_attn_ext_add_sinks: not a flash_attn_ext node");
    detail::add_sinks(fa.get(), sinks.get(), 4, fa.get()->src[0]->lay.ne[2]);
    return fa;
}

}  // namespace graph
TESSERA_END_NAMESPACE
