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
//   - only_copy (llama-quantize's COPY) writes every tensor as it is.
// The input may be split in parts (gguf/split.hpp: give the first); the output is one file,
// or with keep_split one part per input part. prune_layers drops whole blk.N layers.
// Metadata keys the quantizer sets (general.file_type, ..., --override-kv keys) move to the
// end of the key list, as ggml's gguf_set_val_* put them.
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
#include "tessera/gguf/split.hpp"
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
    // COPY (llama-quantize's COPY file type): every tensor is written as it is, and
    // general.file_type keeps the input's value (without one: llama.cpp's guess from the
    // most common tensor type, plus 1024, llama.cpp's mark of a guess). With prune_layers,
    // keep_split or override_kv it edits a model without converting a tensor; type, ftype
    // and the type options are not used.
    bool only_copy = false;
    // --prune-layers: the blk.N layers to leave out (any order, repeats ignored; each
    // below <arch>.block_count, and not all of them). The layers kept are numbered again
    // from 0 in order and <arch>.block_count becomes their number. As in llama-quantize,
    // the mixture rules still count the input's layers, and the imatrix is looked up under
    // a tensor's input name.
    std::vector<int> prune_layers = {};
    // --keep-split: one output part per input part, with the same tensors, named
    // gguf::split_path(out_path without its ".gguf", i, n), each with split.no,
    // split.count and split.tensors.count when n > 1 (an input in one part gives
    // OUT-00001-of-00001.gguf, as llama-quantize). Without it a split input is merged into
    // out_path and its split.* keys are dropped.
    bool keep_split = false;
    // Writes one output file (default: w.write_to_file(path)); the CLI writes to a
    // temporary name and renames once every part is written.
    std::function<void(const gguf::writer& w, const std::string& path)> write = {};
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
    std::vector<std::string> outputs;  // the files written (or, for a dry run, that would be)
    std::size_t n_pruned = 0;          // tensors left out by prune_layers
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
    std::string name;  // the output's name (t->name unless prune_layers renumbered its layer)
    int part = 0;      // the input part (gguf/split.hpp) t is in
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

// The type of a tensor (named `name` in the output) by the llama-quantize rules (o.ftype
// set); fell_back when a shape fallback was taken.
inline type_id mixture_type(const gguf::tensor_info& t, std::string_view name, const quantize_options& o, mixture& mix,
                            const std::vector<std::pair<std::regex, type_id>>& patterns, bool has_output, bool& fell_back) {
    fell_back = false;
    int dims = 1;
    for (int d = 3; d > 0; --d)
        if (t.ne[static_cast<std::size_t>(d)] > 1) {
            dims = d + 1;
            break;
        }
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
    const std::string name_s(name);
    for (const auto& [re, ty] : patterns)
        if (std::regex_search(name_s, re)) {
            out = ty;
            manual = true;
            break;
        }
    if (!manual && !o.pure) out = mix.pick(name, t.ne[0], t.ne[2]);
    return choose_type(t, out, fell_back);  // (the shape fallbacks)
}

// llama.cpp's guess of a file type from its tensors (llama_model_loader): the type most
// tensors have (a tie goes to the type that reached the count first, in `order`), as a
// llama_ftype, plus 1024.
inline std::uint32_t guessed_ftype(const std::vector<plan_entry>& order) {
    std::unordered_map<int, std::uint32_t> n;
    std::uint32_t n_max = 0;
    type_id t_max = type_id::f32;
    for (const plan_entry& e : order) {
        const std::uint32_t c = ++n[static_cast<int>(e.t->type)];
        if (c > n_max) {
            n_max = c;
            t_max = e.t->type;
        }
    }
    const std::uint32_t f = t_max == type_id::iq2_s ? 28u : llama_ftype_of(t_max).value_or(0u);  // (iq2_s: MOSTLY_IQ2_S here)
    return f | 1024u;
}

struct plan_result {
    std::vector<plan_entry> entries;  // in the order they are written
    int n_parts = 1;                  // output parts
    std::optional<std::uint32_t> block_count;  // <arch>.block_count after prune_layers
    std::uint32_t copy_ftype = 0;     // general.file_type of only_copy
    std::size_t n_pruned = 0;
};

// Every tensor of the input parts with the type and name it is written with, in the
// order it is written.
inline plan_result plan_tensors(const std::vector<gguf::file>& parts, const quantize_options& o) {
    plan_result res;
    std::vector<plan_entry>& plan = res.entries;
    for (std::size_t i = 0; i < parts.size(); ++i)
        for (const auto& t : parts[i].tensors()) plan.push_back({&t, t.type, false, t.name, static_cast<int>(i)});
    const gguf::metadata& meta = parts[0].meta();
    std::string arch;
    if (const gguf::value* a = meta.find_value("general.architecture")) arch = a->get<std::string>("general.architecture");
    const std::optional<std::int64_t> n_layer = detail::meta_int(meta, arch + ".block_count");
    // llama-quantize's order (ftype, COPY): the tensors outside layers by name, then layer by layer
    const bool llama_order = o.ftype || o.only_copy;
    if (llama_order)
        std::stable_sort(plan.begin(), plan.end(), [](const plan_entry& a, const plan_entry& b) {
            const int la = layer_number(a.t->name), lb = layer_number(b.t->name);
            return la != lb ? la < lb : a.t->name < b.t->name;
        });
    if (o.only_copy) {
        const std::optional<std::int64_t> ft = detail::meta_int(meta, "general.file_type");
        res.copy_ftype = ft ? static_cast<std::uint32_t>(*ft) : guessed_ftype(plan);
    }
    if (!o.prune_layers.empty()) {
        std::vector<int> prune = o.prune_layers;
        std::sort(prune.begin(), prune.end());
        prune.erase(std::unique(prune.begin(), prune.end()), prune.end());
        if (arch.empty() || !n_layer)
            fail(errc::invalid_argument, "quantize_model: prune_layers needs general.architecture and <arch>.block_count in the input");
        if (prune.front() < 0 || prune.back() >= *n_layer)
            fail(errc::invalid_argument, "quantize_model: prune_layers: layer " + std::to_string(prune.front() < 0 ? prune.front() : prune.back()) +
                                             " is not a layer of the model (" + arch + ".block_count = " + std::to_string(*n_layer) + ")");
        if (static_cast<std::int64_t>(prune.size()) >= *n_layer)
            fail(errc::invalid_argument, "quantize_model: prune_layers would leave out all " + std::to_string(*n_layer) + " layers");
        // llama-quantize's renumbering, visiting the layers in its order: a layer below the
        // first pruned one keeps its number, every later kept layer takes the next free one
        std::unordered_map<int, int> mapped;  // -1: pruned
        int next = 0;
        std::vector<plan_entry> kept;
        for (plan_entry& e : plan) {
            const int b = layer_number(e.t->name);
            if (b < 0) {
                kept.push_back(std::move(e));
                continue;
            }
            auto it = mapped.find(b);
            if (it == mapped.end()) {
                int m = -1;
                if (std::binary_search(prune.begin(), prune.end(), b)) m = -1;
                else if (b < prune.front()) next = (m = b) + 1;
                else m = next++;
                it = mapped.emplace(b, m).first;
            }
            if (it->second < 0) {
                ++res.n_pruned;
                continue;
            }
            e.name = "blk." + std::to_string(it->second) + e.t->name.substr(e.t->name.find('.', 4));
            kept.push_back(std::move(e));
        }
        plan = std::move(kept);
        res.block_count = static_cast<std::uint32_t>(next);
    }
    // --keep-split: each part's tensors together, in the part's data order
    if (o.keep_split) {
        std::stable_sort(plan.begin(), plan.end(), [](const plan_entry& a, const plan_entry& b) {
            return a.part != b.part ? a.part < b.part : a.t->offset < b.t->offset;
        });
        for (const plan_entry& e : plan) res.n_parts = std::max(res.n_parts, e.part + 1);
    }
    if (o.only_copy) return res;  // (every entry keeps its type)
    if (!o.ftype) {
        bool has_output = false;
        for (const auto& e : plan) has_output |= e.name == "output.weight";
        for (auto& e : plan) {
            const bool is_output = !o.pure && (e.name == "output.weight" || (e.name == "token_embd.weight" && !has_output));
            e.out = choose_type(*e.t, o.type, e.fell_back, is_output);
        }
        return res;
    }
    mixture_model mm;
    mm.arch = arch.empty() ? mm.arch : arch;
    const std::string p = mm.arch + ".";
    mm.n_layer = n_layer.value_or(0);  // (the input's count, also after pruning, as llama-quantize)
    mm.n_head = detail::meta_int(meta, p + "attention.head_count").value_or(1);
    mm.n_head_kv = detail::meta_int(meta, p + "attention.head_count_kv").value_or(mm.n_head);
    mm.n_expert = detail::meta_int(meta, p + "expert_count").value_or(0);
    mm.has_output = false;
    for (const auto& e : plan) mm.has_output |= e.name == "output.weight";
    mm.has_imatrix = o.imatrix != nullptr;
    std::int64_t n_attn_v = 0;
    for (const auto& e : plan)
        if (role_of(e.name) == tensor_role::attn_v) ++n_attn_v;
    std::vector<std::pair<std::regex, type_id>> patterns;
    for (const auto& [pat, ty] : o.tensor_types) {
        try {
            patterns.emplace_back(std::regex(pat), ty);
        } catch (const std::regex_error& e) {
            fail(errc::invalid_argument, "quantize_model: tensor type pattern '" + pat + "' is not a regular expression (" + e.what() + ")");
        }
    }
    mixture mix(*o.ftype, mm, n_attn_v);
    for (auto& e : plan) e.out = mixture_type(*e.t, e.name, o, mix, patterns, mm.has_output, e.fell_back);
    return res;
}

}  // namespace detail

// Quantizes in_path to out_path. Throws tessera::error naming the tensor (name, shape,
// type) on bad input; out_path is only written once every tensor is converted.
inline quantize_stats quantize_model(const std::string& in_path, const std::string& out_path,
                                     const quantize_options& o) {
    const type_id target = o.ftype ? ftype_info(*o.ftype).default_type : o.type;
    const auto ftype = o.ftype ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(*o.ftype)) : llama_ftype_of(target);
    if (!o.only_copy && !o.ftype && (!is_valid_type_id(static_cast<std::int64_t>(target)) || !ftype || !quant::can_quantize(target)))
        fail(errc::unsupported, "quantize_model: cannot quantize to type id " +
                                    std::to_string(static_cast<int>(target)) +
                                    (is_valid_type_id(static_cast<std::int64_t>(target))
                                         ? " (" + std::string(type_name(target)) + ")"
                                         : std::string()));
    for (const auto& ot : {o.output_tensor_type, o.token_embedding_type})
        if (ot && !is_valid_type_id(static_cast<std::int64_t>(*ot)))
            fail(errc::invalid_argument, "quantize_model: output/token embedding type id " + std::to_string(static_cast<int>(*ot)) + " is not a type");
    const bool type_options = o.output_tensor_type || o.token_embedding_type || !o.tensor_types.empty() || o.leave_output_tensor;
    if (type_options && o.only_copy)
        fail(errc::invalid_argument, "quantize_model: only_copy (COPY) writes every tensor as it is; output_tensor_type, "
                                     "token_embedding_type, tensor_types and leave_output_tensor do not apply");
    if (type_options && !o.ftype)
        fail(errc::invalid_argument, "quantize_model: output_tensor_type, token_embedding_type, tensor_types and leave_output_tensor need a file type (ftype)");
    if (o.n_threads < 1)
        fail(errc::invalid_argument, "quantize_model: n_threads = " + std::to_string(o.n_threads) + " (must be >= 1)");
    if (in_path == out_path && !o.dry_run) fail(errc::invalid_argument, "quantize_model: input and output are the same file '" + in_path + "'");

    const std::vector<gguf::file> parts = gguf::open_split(in_path);
    const gguf::file& in = parts[0];
    const detail::plan_result pr = detail::plan_tensors(parts, o);
    const std::vector<detail::plan_entry>& plan = pr.entries;
    // llama-quantize's keys, each set as ggml sets one (moved to the end of the list)
    std::vector<gguf::writer> ws(static_cast<std::size_t>(pr.n_parts));
    gguf::writer& w = ws[0];
    w.copy_metadata(in.meta());
    auto set_last = [&](std::string_view key, auto v) {
        w.remove(key);
        w.set(key, v);
    };
    if (o.only_copy) {
        set_last("general.quantization_version", std::uint32_t{2});
        set_last("general.file_type", pr.copy_ftype);
    } else if (o.ftype) {
        set_last("general.quantization_version", std::uint32_t{2});
        set_last("general.file_type", *ftype);
    } else {
        set_last("general.file_type", *ftype);
        if (is_quantized(target))
            set_last("general.quantization_version", std::uint32_t{2});
        else
            w.remove("general.quantization_version");
    }
    for (const std::string_view k : {gguf::split_no_key, gguf::split_count_key, gguf::split_tensors_count_key}) w.remove(k);
    for (const kv_override& k : o.override_kv) {
        if (k.key.empty() || k.key.size() > 127) fail(errc::invalid_argument, "quantize_model: override key '" + k.key + "' must be 1..127 bytes");
        switch (k.tag) {
            case kv_override::kind::int_:
                set_last(k.key, static_cast<std::uint32_t>(k.i < 0 ? -static_cast<std::uint64_t>(k.i) : static_cast<std::uint64_t>(k.i)));
                break;
            case kv_override::kind::float_: set_last(k.key, static_cast<float>(k.f)); break;
            case kv_override::kind::bool_: set_last(k.key, k.b); break;
            case kv_override::kind::str: set_last(k.key, std::string_view(k.s)); break;
        }
    }
    if (pr.block_count) set_last(in.meta().get<std::string>("general.architecture") + ".block_count", *pr.block_count);
    if (pr.n_parts > 1)
        for (std::size_t i = 0; i < ws.size(); ++i) {
            ws[i].remove(gguf::split_no_key);
            ws[i].set(gguf::split_no_key, static_cast<std::uint16_t>(i));
            ws[i].remove(gguf::split_count_key);
            ws[i].set(gguf::split_count_key, static_cast<std::uint16_t>(pr.n_parts));
            ws[i].remove(gguf::split_tensors_count_key);
            ws[i].set(gguf::split_tensors_count_key, static_cast<std::int32_t>(plan.size()));
        }
    // The imatrix of an output tensor: under its input name (prune_layers renames)
    auto imatrix_of = [&](const detail::plan_entry& pe) -> const std::vector<float>* {
        if (!o.imatrix) return nullptr;
        auto it = o.imatrix->find(pe.t->name);
        return it == o.imatrix->end() ? nullptr : &it->second;
    };

    quantize_stats st;
    if (o.keep_split) {
        const std::string prefix = out_path.ends_with(".gguf") ? out_path.substr(0, out_path.size() - 5) : out_path;
        for (int i = 0; i < pr.n_parts; ++i) st.outputs.push_back(gguf::split_path(prefix, i, pr.n_parts));
    } else {
        st.outputs.push_back(out_path);
    }
    if (!o.dry_run)
        for (const std::string& out : st.outputs)
            for (const gguf::file& f : parts)
                if (f.source() == out) fail(errc::invalid_argument, "quantize_model: the output '" + out + "' is an input file");
    // targets that need an importance matrix, before any work (as llama-quantize)
    for (const detail::plan_entry& pe : plan) {
        const gguf::tensor_info& t = *pe.t;
        if (!o.ftype || !is_quantized(pe.out) || pe.out == t.type || !requires_imatrix(pe.name, pe.out, *o.ftype)) continue;
        if (imatrix_of(pe)) continue;
        if (!o.dry_run)
            fail(errc::invalid_argument, "quantize_model: " + detail::tensor_label(t) + " -> " + std::string(type_name(pe.out)) +
                                             " needs an importance matrix (" + std::string(ftype_info(*o.ftype).name) +
                                             "; give one with --imatrix, as llama-quantize requires)");
        st.needs_imatrix = true;
    }
    quantize_progress progress;
    progress.total = plan.size();
    for (const auto& pe : plan) progress.bytes_total += pe.t->size_bytes;
    std::vector<std::vector<std::byte>> buffers;  // outputs, kept alive until the write
    buffers.reserve(plan.size());
    std::vector<float> f32;
    for (const detail::plan_entry& pe : plan) {
        const gguf::tensor_info& t = *pe.t;
        gguf::writer& wp = ws[static_cast<std::size_t>(o.keep_split ? pe.part : 0)];
        quantize_tensor_report rep;
        rep.name = pe.name;
        rep.in_type = t.type;
        rep.ne = t.ne;
        rep.n_dims = t.n_dims;
        rep.bytes_in = t.size_bytes;
        const bool fb = pe.fell_back;
        const type_id out_t = pe.out;
        if (out_t == t.type) {
            const std::size_t nd = t.n_dims > 0 ? static_cast<std::size_t>(t.n_dims) : 1;
            wp.add_tensor_view(pe.name, t.type, std::span<const std::int64_t>(t.ne.data(), nd), t.bytes());
            rep.out_type = t.type;
            rep.bytes_out = t.size_bytes;
            ++st.n_kept;
        } else if (o.dry_run) {
            const std::int64_t nrows = t.n_elements() / std::max<std::int64_t>(t.ne[0], 1);
            rep.out_type = out_t;
            rep.bytes_out = static_cast<std::uint64_t>(nrows * row_size(out_t, t.ne[0]));
            rep.quantized = true;
            rep.fell_back = fb;
            rep.used_imatrix = imatrix_of(pe) != nullptr;
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
            if (const std::vector<float>* im = imatrix_of(pe)) {
                if (static_cast<std::int64_t>(im->size()) != n_per_row)
                    fail(errc::shape_mismatch, "quantize_model: " + detail::tensor_label(t) + ": imatrix has " +
                                                   std::to_string(im->size()) + " values, not " + std::to_string(n_per_row));
                imat = im->data();
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
            wp.add_tensor_view(pe.name, out_t, std::span<const std::int64_t>(t.ne.data(), nd), buffers.back());
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
    st.n_pruned = pr.n_pruned;
    if (!o.dry_run)
        for (std::size_t i = 0; i < ws.size(); ++i) {
            if (o.write)
                o.write(ws[i], st.outputs[i]);
            else
                ws[i].write_to_file(st.outputs[i]);
        }
    return st;
}

}  // namespace models
TESSERA_END_NAMESPACE
