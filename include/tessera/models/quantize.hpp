// A model quantizer in the manner of llama.cpp's llama-quantize: reads a GGUF file,
// quantizes its 2-D weight matrices to one type and writes a new GGUF file with the
// same metadata (general.file_type and general.quantization_version updated).
//
// Which tensors are quantized (see docs/quantize.md):
//   - 2-D tensors whose name ends in "weight" (1-D tensors such as norms keep their type);
//   - when a tensor's row length (ne[0]) is not a multiple of the target's block size,
//     K-quants and iq4_xs fall back as llama.cpp does (q2_K, q3_K, iq4_xs -> iq4_nl;
//     q4_K -> q5_0; q5_K -> q5_1; q6_K -> q8_0); if the fallback does not fit either,
//     an f32 tensor becomes f16 (llama.cpp's last resort) and an f16/bf16 one is kept;
//     for the other targets (q4_0, q8_0, ...) a tensor that does not fit keeps its type.
//   - with a file type (quantize_options::ftype: Q4_K_M, Q3_K_S, IQ2_XXS, ...) each weight
//     gets the type llama-quantize's mixture rules give it (models/quant_mixture.hpp),
//     after the --output-tensor-type / --token-embedding-type / --tensor-type overrides,
//     in llama-quantize's tensor order; targets that need an importance matrix are refused
//     without one; `dry_run` plans without converting or writing;
//   - with a single `type` instead, the output projection (output.weight, or
//     token_embd.weight when the file has no output.weight) is written as q6_K (falling
//     back to q8_0) for every quantized target but q8_0, as llama-quantize does, and every
//     other weight in `type`; `pure` turns that off.
//   - f32, f16 and bf16 inputs are dequantized to f32 and quantized; inputs already in a
//     quantized type are refused (errc::unsupported) unless allow_requantize.
#pragma once

#include <algorithm>
#include <cstring>
#include <array>
#include <cmath>
#include <exception>
#include <fstream>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"
#include "tessera/models/hparams.hpp"
#include "tessera/models/imatrix.hpp"
#include "tessera/models/quant_mixture.hpp"
#include "tessera/quant/reference.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

struct quantize_tensor_report {
    std::string name;
    type_id in_type = type_id::f32;
    type_id out_type = type_id::f32;
    std::array<std::int64_t, 4> ne{1, 1, 1, 1};
    int n_dims = 0;
    std::uint64_t bytes_in = 0, bytes_out = 0;
    bool quantized = false;     // written in a type other than its input's by quantization
    bool fell_back = false;     // quantized to a fallback type (row length did not fit)
    bool used_imatrix = false;
};

// Where quantize_model is, for a progress line: passed to quantize_options::progress
// after each tensor is converted or copied, on the calling thread.
struct quantize_progress {
    std::size_t done = 0, total = 0;                // tensors, in the input's order
    std::uint64_t bytes_done = 0, bytes_total = 0;  // input tensor data
    const quantize_tensor_report* tensor = nullptr;  // the tensor just done
};

// A metadata key set in the output (llama-quantize's --override-kv KEY=TYPE:VALUE): an int
// is written as u32 of its absolute value (as llama.cpp does), a float as f32.
struct kv_override {
    enum class kind { int_, float_, bool_, str } tag = kind::str;
    std::string key;
    std::int64_t i = 0;
    double f = 0;
    bool b = false;
    std::string s;
};

struct quantize_options {
    type_id type = type_id::q8_0;
    // Importance weights per tensor name (ne[0] floats each, shared by all rows).
    const std::unordered_map<std::string, std::vector<float>>* imatrix = nullptr;
    int n_threads = 1;
    bool allow_requantize = false;
    bool pure = false;  // every fitting weight in `type` / the file type's default (no mixture rules)
    // llama-quantize's file type (its mixture of types per tensor); when set, `type` is unused.
    std::optional<llama_ftype> ftype = {};
    std::optional<type_id> output_tensor_type = {};    // --output-tensor-type
    std::optional<type_id> token_embedding_type = {};  // --token-embedding-type
    // --tensor-type NAME=TYPE: the first pattern found in a weight's name (std::regex
    // search, as llama-quantize) sets its type, before the mixture rules.
    std::vector<std::pair<std::string, type_id>> tensor_types = {};
    bool leave_output_tensor = false;  // output.weight is copied as it is
    bool dry_run = false;              // plan and size every tensor; convert and write nothing
    // Set in the output after general.file_type, in order (the command line adds the
    // quantize.imatrix.* keys of an --imatrix file after the user's --override-kv ones).
    std::vector<kv_override> override_kv = {};
    // Called once per tensor (done = 1 .. total); the output file is written after the
    // last call. An exception it throws stops the conversion (nothing is written) and
    // leaves quantize_model. Empty: no calls.
    std::function<void(const quantize_progress&)> progress = {};  // (a default: designated initializers may omit it)
};

struct quantize_stats {
    std::size_t n_quantized = 0;  // tensors converted
    std::size_t n_kept = 0;       // tensors copied unchanged
    std::size_t n_fallback = 0;   // of n_quantized, those written in a fallback type
    std::uint64_t bytes_in = 0, bytes_out = 0;  // tensor data only
    std::vector<quantize_tensor_report> tensors;
    bool needs_imatrix = false;   // (dry_run) some target would need an importance matrix
};

// ggml's llama_ftype value for a file mostly in type t (general.file_type), or nullopt.
// The K-quants map to the _M variants (as the CLI's Q4_K_M etc. names).
inline std::optional<std::uint32_t> llama_ftype_of(type_id t) noexcept {
    switch (t) {
        case type_id::f32: return 0;
        case type_id::f16: return 1;
        case type_id::q4_0: return 2;
        case type_id::q4_1: return 3;
        case type_id::q8_0: return 7;
        case type_id::q5_0: return 8;
        case type_id::q5_1: return 9;
        case type_id::q2_K: return 10;
        case type_id::q3_K: return 12;  // Q3_K_M
        case type_id::q4_K: return 15;  // Q4_K_M
        case type_id::q5_K: return 17;  // Q5_K_M
        case type_id::q6_K: return 18;
        case type_id::iq4_nl: return 25;
        case type_id::iq4_xs: return 30;
        case type_id::bf16: return 32;
        case type_id::tq1_0: return 36;
        case type_id::tq2_0: return 37;
        case type_id::iq2_xxs: return 19;
        case type_id::iq2_xs: return 20;
        case type_id::iq3_xxs: return 23;
        case type_id::iq1_s: return 24;
        case type_id::iq3_s: return 26;
        case type_id::iq2_s: return 29;  // IQ2_M (IQ2_S files are mostly iq2_xs)
        case type_id::iq1_m: return 31;
        case type_id::nvfp4: return 39;
        case type_id::q1_0: return 40;
        case type_id::q2_0: return 41;
        default: return std::nullopt;
    }
}

// The type llama.cpp falls back to when a row length does not fit t's blocks, or t.
inline type_id quantize_fallback_type(type_id t) noexcept {
    switch (t) {
        case type_id::q2_K:
        case type_id::q3_K:
        case type_id::iq4_xs:
        case type_id::tq1_0:
        case type_id::tq2_0: return type_id::iq4_nl;
        case type_id::q4_K: return type_id::q5_0;
        case type_id::q5_K: return type_id::q5_1;
        case type_id::q6_K: return type_id::q8_0;
        case type_id::q2_0: return type_id::q4_0;  // (llama.cpp's rule since q2_0 was added)
        default: return t;  // q1_0, nvfp4: none (llama.cpp refuses; tessera keeps the tensor's type)
    }
}

namespace detail {

// The type tensor t is written in (its own type when kept); fell_back set when a
// fallback type was chosen.
inline type_id choose_type(const gguf::tensor_info& t, type_id target, bool& fell_back, bool is_output = false) {
    fell_back = false;
    const bool weight = t.n_dims == 2 && t.name.ends_with("weight");
    if (!weight) return t.type;
    if (is_output && is_quantized(target) && target != type_id::q8_0) target = type_id::q6_K;
    if (t.ne[0] % block_size(target) == 0) return target;
    const type_id fb = quantize_fallback_type(target);
    if (fb != target && t.ne[0] % block_size(fb) == 0) {
        fell_back = true;
        return fb;
    }
    if (fb != target && t.type == type_id::f32) {
        fell_back = true;
        return type_id::f16;
    }
    return t.type;
}

struct plan_entry {
    const gguf::tensor_info* t = nullptr;
    type_id out = type_id::f32;
    bool fell_back = false;
};

// blk.N.* -> N, else -1 (llama-quantize writes the non-layer tensors first, then layer by
// layer, each group by name).
inline int layer_number(std::string_view name) {
    if (!name.starts_with("blk.")) return -1;
    int n = 0;
    std::size_t i = 4;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && n < 1'000'000; ++i) n = n * 10 + (name[i] - '0');
    return i > 4 && i < name.size() && name[i] == '.' ? n : -1;
}

// The type of t by the llama-quantize rules (o.ftype set); fell_back when a shape fallback
// was taken.
inline type_id mixture_type(const gguf::tensor_info& t, const quantize_options& o, mixture& mix,
                            const std::vector<std::pair<std::regex, type_id>>& patterns, bool has_output, bool& fell_back) {
    fell_back = false;
    int dims = 1;
    for (int d = 3; d > 0; --d)
        if (t.ne[static_cast<std::size_t>(d)] > 1) {
            dims = d + 1;
            break;
        }
    const std::string_view name = t.name;
    bool allowed = dims >= 2 && name.ends_with("weight") && name.find("_norm.weight") == std::string_view::npos &&
                   name.find("ffn_gate_inp.weight") == std::string_view::npos && name != "position_embd.weight" &&
                   name != "token_types.weight";
    if (o.leave_output_tensor && name == "output.weight") allowed = false;
    if (!allowed) return t.type;
    const tensor_role r = role_of(name);
    if (o.token_embedding_type && r == tensor_role::token_embd) return *o.token_embedding_type;
    if (o.output_tensor_type && (r == tensor_role::output || (r == tensor_role::token_embd && !has_output)))
        return *o.output_tensor_type;
    type_id out = ftype_info(*o.ftype).default_type;
    if (!is_quantized(out)) return out;
    bool manual = false;
    for (const auto& [re, ty] : patterns)
        if (std::regex_search(t.name, re)) {
            out = ty;
            manual = true;
            break;
        }
    if (!manual && !o.pure) out = mix.pick(name, t.ne[0], t.ne[2]);
    return choose_type(t, out, fell_back);  // (the shape fallbacks)
}

// Every tensor of `in` with the type it is written in, in the order it is written.
inline std::vector<plan_entry> plan_tensors(const gguf::file& in, const quantize_options& o) {
    std::vector<plan_entry> plan;
    if (!o.ftype) {
        const bool has_output = in.find_tensor("output.weight") != nullptr;
        for (const auto& t : in.tensors()) {
            plan_entry e{&t, t.type, false};
            const bool is_output = !o.pure && (t.name == "output.weight" || (t.name == "token_embd.weight" && !has_output));
            e.out = choose_type(t, o.type, e.fell_back, is_output);
            plan.push_back(e);
        }
        return plan;
    }
    for (const auto& t : in.tensors()) plan.push_back({&t, t.type, false});
    std::stable_sort(plan.begin(), plan.end(), [](const plan_entry& a, const plan_entry& b) {
        const int la = layer_number(a.t->name), lb = layer_number(b.t->name);
        return la != lb ? la < lb : a.t->name < b.t->name;
    });
    mixture_model mm;
    const gguf::metadata& meta = in.meta();
    if (const gguf::value* a = meta.find_value("general.architecture")) mm.arch = a->get<std::string>("general.architecture");
    const std::string p = mm.arch + ".";
    mm.n_layer = detail::meta_int(meta, p + "block_count").value_or(0);
    mm.n_head = detail::meta_int(meta, p + "attention.head_count").value_or(1);
    mm.n_head_kv = detail::meta_int(meta, p + "attention.head_count_kv").value_or(mm.n_head);
    mm.n_expert = detail::meta_int(meta, p + "expert_count").value_or(0);
    mm.has_output = in.find_tensor("output.weight") != nullptr;
    mm.has_imatrix = o.imatrix != nullptr;
    std::int64_t n_attn_v = 0;
    for (const auto& e : plan)
        if (role_of(e.t->name) == tensor_role::attn_v) ++n_attn_v;
    std::vector<std::pair<std::regex, type_id>> patterns;
    for (const auto& [pat, ty] : o.tensor_types) {
        try {
            patterns.emplace_back(std::regex(pat), ty);
        } catch (const std::regex_error& e) {
            fail(errc::invalid_argument, "quantize_model: tensor type pattern '" + pat + "' is not a regular expression (" + e.what() + ")");
        }
    }
    mixture mix(*o.ftype, mm, n_attn_v);
    for (auto& e : plan) e.out = mixture_type(*e.t, o, mix, patterns, mm.has_output, e.fell_back);
    return plan;
}

}  // namespace detail

// Quantizes in_path to out_path. Throws tessera::error naming the tensor (name, shape,
// type) on bad input; out_path is only written once every tensor is converted.
inline quantize_stats quantize_model(const std::string& in_path, const std::string& out_path,
                                     const quantize_options& o) {
    const type_id target = o.ftype ? ftype_info(*o.ftype).default_type : o.type;
    const auto ftype = o.ftype ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(*o.ftype)) : llama_ftype_of(target);
    if (!o.ftype && (!is_valid_type_id(static_cast<std::int64_t>(target)) || !ftype || !quant::can_quantize(target)))
        fail(errc::unsupported, "quantize_model: cannot quantize to type id " +
                                    std::to_string(static_cast<int>(target)) +
                                    (is_valid_type_id(static_cast<std::int64_t>(target))
                                         ? " (" + std::string(type_name(target)) + ")"
                                         : std::string()));
    for (const auto& ot : {o.output_tensor_type, o.token_embedding_type})
        if (ot && !is_valid_type_id(static_cast<std::int64_t>(*ot)))
            fail(errc::invalid_argument, "quantize_model: output/token embedding type id " + std::to_string(static_cast<int>(*ot)) + " is not a type");
    if ((o.output_tensor_type || o.token_embedding_type || !o.tensor_types.empty() || o.leave_output_tensor) && !o.ftype)
        fail(errc::invalid_argument, "quantize_model: output_tensor_type, token_embedding_type, tensor_types and leave_output_tensor need a file type (ftype)");
    if (o.n_threads < 1)
        fail(errc::invalid_argument, "quantize_model: n_threads = " + std::to_string(o.n_threads) + " (must be >= 1)");
    if (in_path == out_path && !o.dry_run) fail(errc::invalid_argument, "quantize_model: input and output are the same file '" + in_path + "'");

    gguf::file in = gguf::file::open(in_path);
    const std::vector<detail::plan_entry> plan = detail::plan_tensors(in, o);
    gguf::writer w;
    w.copy_metadata(in.meta());
    if (o.ftype) {  // llama-quantize's keys, in its order
        w.set<std::uint32_t>("general.quantization_version", 2);
        w.set<std::uint32_t>("general.file_type", *ftype);
    } else {
        w.set<std::uint32_t>("general.file_type", *ftype);
        if (is_quantized(target))
            w.set<std::uint32_t>("general.quantization_version", 2);
        else
            w.remove("general.quantization_version");
    }
    for (const kv_override& k : o.override_kv) {
        if (k.key.empty() || k.key.size() > 127) fail(errc::invalid_argument, "quantize_model: override key '" + k.key + "' must be 1..127 bytes");
        switch (k.tag) {
            case kv_override::kind::int_:
                w.set<std::uint32_t>(k.key, static_cast<std::uint32_t>(k.i < 0 ? -static_cast<std::uint64_t>(k.i) : static_cast<std::uint64_t>(k.i)));
                break;
            case kv_override::kind::float_: w.set<float>(k.key, static_cast<float>(k.f)); break;
            case kv_override::kind::bool_: w.set(k.key, k.b); break;
            case kv_override::kind::str: w.set(k.key, std::string_view(k.s)); break;
        }
    }

    quantize_stats st;
    // targets that need an importance matrix, before any work (as llama-quantize)
    for (const detail::plan_entry& pe : plan) {
        const gguf::tensor_info& t = *pe.t;
        if (!o.ftype || !is_quantized(pe.out) || pe.out == t.type || !requires_imatrix(t.name, pe.out, *o.ftype)) continue;
        if (o.imatrix && o.imatrix->count(t.name)) continue;
        if (!o.dry_run)
            fail(errc::invalid_argument, "quantize_model: " + detail::tensor_label(t) + " -> " + std::string(type_name(pe.out)) +
                                             " needs an importance matrix (" + std::string(ftype_info(*o.ftype).name) +
                                             "; give one with --imatrix, as llama-quantize requires)");
        st.needs_imatrix = true;
    }
    quantize_progress progress;
    progress.total = in.tensors().size();
    for (const auto& t : in.tensors()) progress.bytes_total += t.size_bytes;
    std::vector<std::vector<std::byte>> buffers;  // outputs, kept alive until the write
    buffers.reserve(in.tensors().size());
    std::vector<float> f32;
    for (const detail::plan_entry& pe : plan) {
        const gguf::tensor_info& t = *pe.t;
        quantize_tensor_report rep;
        rep.name = t.name;
        rep.in_type = t.type;
        rep.ne = t.ne;
        rep.n_dims = t.n_dims;
        rep.bytes_in = t.size_bytes;
        const bool fb = pe.fell_back;
        const type_id out_t = pe.out;
        if (out_t == t.type) {
            w.add_tensor_view(t);
            rep.out_type = t.type;
            rep.bytes_out = t.size_bytes;
            ++st.n_kept;
        } else if (o.dry_run) {
            const std::int64_t nrows = t.n_elements() / std::max<std::int64_t>(t.ne[0], 1);
            rep.out_type = out_t;
            rep.bytes_out = static_cast<std::uint64_t>(nrows * row_size(out_t, t.ne[0]));
            rep.quantized = true;
            rep.fell_back = fb;
            rep.used_imatrix = o.imatrix && o.imatrix->count(t.name);
            ++st.n_quantized;
            if (fb) ++st.n_fallback;
        } else {
            if (is_quantized(t.type) && !o.allow_requantize)
                fail(errc::unsupported, "quantize_model: " + detail::tensor_label(t) +
                                            " is already quantized (allow_requantize, or --allow-requantize on the command line, converts it again)");
            if (!quant::can_dequantize(t.type))
                fail(errc::unsupported, "quantize_model: " + detail::tensor_label(t) + ": cannot read this type");
            if (!quant::can_quantize(out_t))
                fail(errc::unsupported, "quantize_model: " + detail::tensor_label(t) + " -> " + std::string(type_name(out_t)) +
                                            ": tessera cannot quantize to " + std::string(type_name(out_t)) + " yet");
            const std::int64_t n_per_row = t.ne[0];
            const std::int64_t nrows = t.n_elements() / std::max<std::int64_t>(n_per_row, 1);
            const float* imat = nullptr;
            if (o.imatrix) {
                if (auto it = o.imatrix->find(t.name); it != o.imatrix->end()) {
                    if (static_cast<std::int64_t>(it->second.size()) != n_per_row)
                        fail(errc::shape_mismatch, "quantize_model: " + detail::tensor_label(t) + ": imatrix has " +
                                                       std::to_string(it->second.size()) + " values, not " +
                                                       std::to_string(n_per_row));
                    imat = it->second.data();
                }
            }
            const std::int64_t in_rs = row_size(t.type, n_per_row);
            const std::int64_t out_rs = row_size(out_t, n_per_row);
            f32.resize(static_cast<std::size_t>(std::max<std::int64_t>(t.n_elements(), 0)));
            std::vector<std::byte> out(static_cast<std::size_t>(nrows * out_rs));
            const auto* src = t.data;
            const int nt = static_cast<int>(std::min<std::int64_t>(o.n_threads, std::max<std::int64_t>(nrows, 1)));
            auto work = [&](std::int64_t r0, std::int64_t r1) {
                for (std::int64_t r = r0; r < r1; ++r)
                    quant::dequantize_row(t.type, src + r * in_rs, f32.data() + r * n_per_row, n_per_row);
                quant::quantize(out_t, f32.data() + r0 * n_per_row, out.data() + r0 * out_rs, r1 - r0, n_per_row, imat);
            };
            try {
                if (nt <= 1) {
                    work(0, nrows);
                } else {
                    std::vector<std::thread> th;
                    std::vector<std::exception_ptr> errs(static_cast<std::size_t>(nt));
                    for (int i = 0; i < nt; ++i) {
                        const std::int64_t r0 = nrows * i / nt, r1 = nrows * (i + 1) / nt;
                        th.emplace_back([&, i, r0, r1] {
                            try {
                                work(r0, r1);
                            } catch (...) {
                                errs[static_cast<std::size_t>(i)] = std::current_exception();
                            }
                        });
                    }
                    for (auto& x : th) x.join();
                    for (auto& e : errs)
                        if (e) std::rethrow_exception(e);
                }
            } catch (const error& e) {
                fail(e.code(), "quantize_model: " + detail::tensor_label(t) + " -> " + std::string(type_name(out_t)) +
                                   ": " + e.what());
            }
            const std::size_t nd = t.n_dims > 0 ? static_cast<std::size_t>(t.n_dims) : 1;
            buffers.push_back(std::move(out));
            w.add_tensor_view(t.name, out_t, std::span<const std::int64_t>(t.ne.data(), nd), buffers.back());
            rep.out_type = out_t;
            rep.bytes_out = buffers.back().size();
            rep.quantized = true;
            rep.fell_back = fb;
            rep.used_imatrix = imat != nullptr;
            ++st.n_quantized;
            if (fb) ++st.n_fallback;
        }
        st.bytes_in += rep.bytes_in;
        st.bytes_out += rep.bytes_out;
        st.tensors.push_back(std::move(rep));
        if (o.progress) {
            ++progress.done;
            progress.bytes_done += st.tensors.back().bytes_in;
            progress.tensor = &st.tensors.back();
            o.progress(progress);
        }
    }
    if (!o.dry_run) w.write_to_file(out_path);
    return st;
}

}  // namespace models
TESSERA_END_NAMESPACE
