// llama-quantize's file types and their per-tensor mixtures: which type each weight of a
// model gets for Q4_K_M, Q3_K_S, IQ2_XXS, ... (llama.cpp's llama_ftype and its rules in
// llama-quant.cpp; the rules are facts of that tool, restated here), and which targets
// need an importance matrix. quantize_model (models/quantize.hpp) applies them; see
// docs/quantize.md.
//
// The rules, per tensor category (attn_v / attn_qkv / attn_kv_b count as "attn_v"):
//   - output (and token_embd when the file has no output.weight): q6_K for every file type
//     whose default is quantized and not q8_0, q5_K for the 1-2 bit i-quants, q8_0 when
//     the row does not fit the default's blocks or for MXFP4_MOE;
//   - token_embd: q2_K for IQ2_XXS/IQ2_XS/IQ1_S/IQ1_M, iq3_s for IQ2_S/IQ2_M/IQ3_XXS, q4_K
//     for TQ1_0/TQ2_0;
//   - attn_v, ffn_down, attn_output, attn_k/q, ffn_gate/up: a step up in the layers where
//     `more_bits(i, n)` holds (the first and last eighth, and every third layer between),
//     depending on the file type (the table in docs/quantize.md);
// counted in llama.cpp's order: the tensors sorted by layer (non-layer tensors first),
// then by name.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/core/type_id.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

// llama.cpp's llama_ftype values (general.file_type).
enum class llama_ftype : std::uint32_t {
    all_f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q8_0 = 7, q5_0 = 8, q5_1 = 9,
    q2_K = 10, q3_K_S = 11, q3_K_M = 12, q3_K_L = 13, q4_K_S = 14, q4_K_M = 15, q5_K_S = 16, q5_K_M = 17, q6_K = 18,
    iq2_xxs = 19, iq2_xs = 20, q2_K_S = 21, iq3_xs = 22, iq3_xxs = 23, iq1_s = 24, iq4_nl = 25, iq3_s = 26, iq3_m = 27,
    iq2_s = 28, iq2_m = 29, iq4_xs = 30, iq1_m = 31, bf16 = 32, tq1_0 = 36, tq2_0 = 37, mxfp4_moe = 38,
    nvfp4 = 39, q1_0 = 40, q2_0 = 41,
};

struct llama_ftype_info {
    std::string_view name;  // as llama-quantize lists it
    llama_ftype ftype;
    type_id default_type;   // the type of every weight no rule changes
};

inline constexpr llama_ftype_info llama_ftypes[] = {
    {"F32", llama_ftype::all_f32, type_id::f32},       {"F16", llama_ftype::f16, type_id::f16},
    {"BF16", llama_ftype::bf16, type_id::bf16},        {"Q4_0", llama_ftype::q4_0, type_id::q4_0},
    {"Q4_1", llama_ftype::q4_1, type_id::q4_1},        {"Q5_0", llama_ftype::q5_0, type_id::q5_0},
    {"Q5_1", llama_ftype::q5_1, type_id::q5_1},        {"Q8_0", llama_ftype::q8_0, type_id::q8_0},
    {"Q2_K", llama_ftype::q2_K, type_id::q2_K},        {"Q2_K_S", llama_ftype::q2_K_S, type_id::q2_K},
    {"Q3_K_S", llama_ftype::q3_K_S, type_id::q3_K},    {"Q3_K_M", llama_ftype::q3_K_M, type_id::q3_K},
    {"Q3_K_L", llama_ftype::q3_K_L, type_id::q3_K},    {"Q4_K_S", llama_ftype::q4_K_S, type_id::q4_K},
    {"Q4_K_M", llama_ftype::q4_K_M, type_id::q4_K},    {"Q5_K_S", llama_ftype::q5_K_S, type_id::q5_K},
    {"Q5_K_M", llama_ftype::q5_K_M, type_id::q5_K},    {"Q6_K", llama_ftype::q6_K, type_id::q6_K},
    {"IQ2_XXS", llama_ftype::iq2_xxs, type_id::iq2_xxs}, {"IQ2_XS", llama_ftype::iq2_xs, type_id::iq2_xs},
    {"IQ2_S", llama_ftype::iq2_s, type_id::iq2_xs},    {"IQ2_M", llama_ftype::iq2_m, type_id::iq2_s},
    {"IQ1_S", llama_ftype::iq1_s, type_id::iq1_s},     {"IQ1_M", llama_ftype::iq1_m, type_id::iq1_m},
    {"IQ3_XXS", llama_ftype::iq3_xxs, type_id::iq3_xxs}, {"IQ3_XS", llama_ftype::iq3_xs, type_id::iq3_s},
    {"IQ3_S", llama_ftype::iq3_s, type_id::iq3_s},     {"IQ3_M", llama_ftype::iq3_m, type_id::iq3_s},
    {"IQ4_NL", llama_ftype::iq4_nl, type_id::iq4_nl},  {"IQ4_XS", llama_ftype::iq4_xs, type_id::iq4_xs},
    {"TQ1_0", llama_ftype::tq1_0, type_id::tq1_0},     {"TQ2_0", llama_ftype::tq2_0, type_id::tq2_0},
    {"MXFP4_MOE", llama_ftype::mxfp4_moe, type_id::mxfp4}, {"NVFP4", llama_ftype::nvfp4, type_id::nvfp4},
    {"Q1_0", llama_ftype::q1_0, type_id::q1_0},        {"Q2_0", llama_ftype::q2_0, type_id::q2_0},
};

inline const llama_ftype_info& ftype_info(llama_ftype f) {
    for (const auto& i : llama_ftypes)
        if (i.ftype == f) return i;
    return llama_ftypes[0];  // (every enumerator is in the table)
}

// A file type by llama-quantize's name, case-insensitive; Q3_K, Q4_K and Q5_K are the _M
// mixtures, as in llama-quantize.
inline std::optional<llama_ftype> parse_llama_ftype(std::string_view s) {
    std::string u(s);
    for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (u == "Q3_K" || u == "Q4_K" || u == "Q5_K") u += "_M";
    for (const auto& i : llama_ftypes)
        if (i.name == u) return i.ftype;
    return std::nullopt;
}

// What the rules look at besides the tensor.
struct mixture_model {
    std::string arch = "llama";
    std::int64_t n_layer = 0, n_head = 1, n_head_kv = 1, n_expert = 0;
    bool has_output = true;   // the file has output.weight (else token_embd is the output)
    bool has_imatrix = false;
    std::int64_t n_gqa() const noexcept { return n_head_kv > 0 ? n_head / n_head_kv : 1; }
    // llama.cpp's LLM_TYPE_70B: llama with 80 layers and grouped KV heads
    bool is_70b() const noexcept { return arch == "llama" && n_layer == 80 && n_head != n_head_kv; }
};

enum class tensor_role { token_embd, attn_q, attn_v, attn_k, attn_output, ffn_up, ffn_gate, ffn_down, output, other };

inline tensor_role role_of(std::string_view name) noexcept {
    auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
    if (name == "output.weight") return tensor_role::output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return tensor_role::token_embd;
    if (has("attn_qkv.weight") || has("attn_kv_b.weight") || has("attn_v.weight")) return tensor_role::attn_v;
    if (has("attn_k.weight")) return tensor_role::attn_k;
    if (has("attn_q.weight")) return tensor_role::attn_q;
    if (has("attn_output.weight")) return tensor_role::attn_output;
    if (has("ffn_up")) return tensor_role::ffn_up;
    if (has("ffn_gate")) return tensor_role::ffn_gate;
    if (has("ffn_down")) return tensor_role::ffn_down;
    return tensor_role::other;
}

// The layers that get more bits: the first and last eighth, and every third one between.
inline bool more_bits(std::int64_t i, std::int64_t n) noexcept {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// Does a weight of this name quantized to t need an importance matrix (llama-quantize
// refuses to write it without one)?
inline bool requires_imatrix(std::string_view name, type_id t, llama_ftype f) noexcept {
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
    switch (t) {
        case type_id::iq3_xxs:
        case type_id::iq2_xxs:
        case type_id::iq2_xs:
        case type_id::iq2_s:
        case type_id::iq1_m:
        case type_id::iq1_s: return true;
        case type_id::q2_K: return f == llama_ftype::q2_K_S;
        default: return false;
    }
}

// The rules of one file type over one model, applied tensor by tensor in llama.cpp's
// order (they count attn_v and ffn_* tensors as they go).
class mixture {
public:
    mixture(llama_ftype f, mixture_model m, std::int64_t n_attn_v) : f_(f), m_(std::move(m)), n_attn_v_(n_attn_v) {}

    // The type for a weight whose rows are ne0 wide, starting from the file type's default.
    type_id pick(std::string_view name, std::int64_t ne0, std::int64_t ne2) {
        using F = llama_ftype;
        using T = type_id;
        const tensor_role r = role_of(name);
        const F f = f_;
        type_id t = ftype_info(f).default_type;
        const std::int64_t gqa = m_.n_gqa(), n_exp = m_.n_expert;
        const bool falcon = m_.arch == "falcon";
        auto is = [f](std::initializer_list<F> l) { return std::find(l.begin(), l.end(), f) != l.end(); };
        const bool low_iq = is({F::iq2_xxs, F::iq2_xs, F::iq1_s, F::iq2_s, F::iq2_m, F::iq1_m});
        const bool iq2sm = is({F::iq2_s, F::iq2_m});
        if (r == tensor_role::output || (!m_.has_output && r == tensor_role::token_embd)) {
            if (f == F::mxfp4_moe || falcon || ne0 % block_size(t) != 0) t = T::q8_0;
            else if (is({F::iq2_xxs, F::iq2_xs, F::iq3_xxs, F::iq1_s, F::iq2_s, F::iq2_m, F::iq1_m})) t = T::q5_K;
            else if (t != T::q8_0) t = T::q6_K;
        } else if (f == F::mxfp4_moe) {
            t = ne2 > 1 ? T::mxfp4 : T::q8_0;
        } else if (r == tensor_role::token_embd) {
            if (is({F::iq2_xxs, F::iq2_xs, F::iq1_s, F::iq1_m})) t = T::q2_K;
            else if (is({F::iq2_s, F::iq2_m, F::iq3_xxs})) t = T::iq3_s;
            else if (is({F::tq1_0, F::tq2_0, F::q2_0})) t = T::q4_K;
        } else if (low_iq) {
            if (r == tensor_role::attn_v) {
                t = gqa >= 4 || n_exp >= 4 ? T::q4_K : iq2sm ? T::iq3_s : T::q2_K;
                ++i_attn_v_;
            } else if (n_exp == 8 && r == tensor_role::attn_k) {
                t = T::q4_K;
            } else if (r == tensor_role::ffn_down) {
                if (i_ffn_down_ < m_.n_layer / 8) t = iq2sm ? T::iq3_s : T::q2_K;
                ++i_ffn_down_;
            } else if (r == tensor_role::attn_output) {
                if (n_exp == 8) t = T::q5_K;
                else if (is({F::iq1_s, F::iq1_m})) t = T::iq2_xxs;
                else if (iq2sm) t = T::iq3_s;
            }
        } else if (r == tensor_role::attn_v) {
            if (f == F::q2_K) t = gqa >= 4 ? T::q4_K : T::q3_K;
            else if (f == F::q2_K_S && gqa >= 4) t = T::q4_K;
            else if (f == F::iq3_xxs) t = gqa >= 4 ? T::q4_K : !m_.has_imatrix ? T::iq3_s : T::iq3_xxs;
            else if (is({F::iq3_xs, F::iq3_s}) && gqa >= 4) t = T::q4_K;
            else if (f == F::iq3_m) t = T::q4_K;
            else if (f == F::q3_K_M) t = i_attn_v_ < 2 ? T::q5_K : T::q4_K;
            else if (f == F::q3_K_L) t = T::q5_K;
            else if (is({F::iq4_nl, F::iq4_xs}) && gqa >= 4) t = T::q5_K;
            else if (is({F::q4_K_M, F::q5_K_M}) && more_bits(i_attn_v_, n_attn_v_)) t = T::q6_K;
            else if (f == F::q4_K_S && i_attn_v_ < 4) t = T::q5_K;
            if (m_.is_70b() && (t == T::q3_K || t == T::q4_K)) t = T::q5_K;
            if (n_exp == 8) t = T::q8_0;
            ++i_attn_v_;
        } else if (r == tensor_role::attn_k) {
            if (n_exp == 8) t = T::q8_0;
            else if (f == F::iq3_xs) t = T::iq3_xxs;
            else if (f == F::iq3_xxs) t = T::iq2_s;
        } else if (r == tensor_role::attn_q) {
            if (f == F::iq3_xs) t = T::iq3_xxs;
            else if (f == F::iq3_xxs) t = T::iq2_s;
        } else if (r == tensor_role::ffn_down) {
            const std::int64_t i = layer_of(name, i_ffn_down_), n = m_.n_layer;
            if (f == F::q2_K) t = T::q3_K;
            else if (f == F::q2_K_S) {
                if (i < n / 8) t = T::q4_K;
            } else if (f == F::iq3_xxs && !m_.has_imatrix) t = i < n / 8 ? T::q4_K : T::q3_K;
            else if (f == F::q3_K_M) t = i < n / 16 ? T::q5_K : !falcon || more_bits(i, n) ? T::q4_K : T::q3_K;
            else if (f == F::iq3_m && (i < n / 8 || (n_exp == 8 && more_bits(i, n)))) t = T::q4_K;
            else if (f == F::q3_K_L) t = falcon ? T::q4_K : T::q5_K;
            else if (f == F::q4_K_M) {
                if (falcon) t = i < n / 16 ? T::q6_K : more_bits(i, n) ? T::q5_K : T::q4_K;
                else if (more_bits(i, n)) t = T::q6_K;
            } else if (i < n / 8 && is({F::iq4_nl, F::iq4_xs}) && !m_.has_imatrix) t = T::q5_K;
            else if (f == F::q5_K_M && more_bits(i, n)) t = T::q6_K;
            else if (f == F::q4_K_S && !falcon && i < n / 8) t = T::q5_K;
            else if (is({F::q4_0, F::q5_0}) && m_.has_imatrix && i < n / 8) t = f == F::q4_0 ? T::q4_1 : T::q5_1;
            ++i_ffn_down_;
        } else if (r == tensor_role::attn_output) {
            if (!falcon) {
                if (n_exp == 8) {
                    if (is({F::q2_K, F::iq3_xs, F::iq3_xxs, F::q3_K_S, F::q3_K_M, F::iq4_nl, F::q4_K_S, F::q4_K_M, F::iq3_s,
                            F::iq3_m, F::iq4_xs}))
                        t = T::q5_K;
                } else if (f == F::q2_K) t = T::q3_K;
                else if (f == F::iq3_xxs) t = T::iq3_s;
                else if (f == F::q3_K_M) t = T::q4_K;
                else if (f == F::q3_K_L) t = T::q5_K;
                else if (f == F::iq3_m) t = T::q4_K;
            } else if (f == F::q3_K_L) {
                t = T::q4_K;
            }
        } else if (r == tensor_role::ffn_gate || r == tensor_role::ffn_up) {
            std::int64_t& c = r == tensor_role::ffn_gate ? i_ffn_gate_ : i_ffn_up_;
            const std::int64_t i = layer_of(name, c), n = m_.n_layer;
            if (f == F::iq3_xs && i >= n / 8 && i < 7 * n / 8) t = T::iq3_xxs;
            ++c;
        }
        return t;
    }

private:
    // The layer a ffn tensor counts as: its position among its kind, or with experts the
    // number in its name (experts are not stored in layer order).
    std::int64_t layer_of(std::string_view name, std::int64_t counted) const {
        if (m_.n_expert <= 1) return counted;
        int l = -1;
        const std::string s(name);
        if (std::sscanf(s.c_str(), "blk.%d.", &l) != 1) return counted;
        return l;
    }

    llama_ftype f_;
    mixture_model m_;
    std::int64_t n_attn_v_ = 0, i_attn_v_ = 0, i_ffn_down_ = 0, i_ffn_gate_ = 0, i_ffn_up_ = 0;
};

}  // namespace models
TESSERA_END_NAMESPACE
