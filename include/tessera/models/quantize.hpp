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
//   - the output projection (output.weight, or token_embd.weight when the file has no
//     output.weight) is written as q6_K (falling back to q8_0) for every quantized
//     target but q8_0, as llama-quantize does; `pure` turns that off. The other
//     per-tensor mixture rules of llama-quantize's _M/_S types (attn_v, ffn_down a step
//     up) are not applied.
//   - f32, f16 and bf16 inputs are dequantized to f32 and quantized; inputs already in a
//     quantized type are refused (errc::unsupported) unless allow_requantize.
#pragma once

#include <algorithm>
#include <cstring>
#include <array>
#include <exception>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <optional>
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

struct quantize_options {
    type_id type = type_id::q8_0;
    // Importance weights per tensor name (ne[0] floats each, shared by all rows).
    const std::unordered_map<std::string, std::vector<float>>* imatrix = nullptr;
    int n_threads = 1;
    bool allow_requantize = false;
    bool pure = false;  // every fitting weight in `type` (no q6_K output projection)
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
        default: return t;
    }
}

namespace detail {

inline std::string tensor_label(const gguf::tensor_info& t) {
    return "tensor " + gguf::detail::quote(t.name) + " " + gguf::detail::shape_string(t.ne, t.n_dims) + " " +
           std::string(type_name(t.type));
}

inline bool ends_with(std::string_view s, std::string_view suf) {
    return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

// The type tensor t is written in (its own type when kept); fell_back set when a
// fallback type was chosen.
inline type_id choose_type(const gguf::tensor_info& t, type_id target, bool& fell_back, bool is_output = false) {
    fell_back = false;
    const bool weight = t.n_dims == 2 && ends_with(t.name, "weight");
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

}  // namespace detail

// Reads an importance matrix in llama-imatrix's GGUF format: for each weight W a tensor
// "W.in_sum2" (f32, ne = [n_per_row, n_mat]: sums of squared activations per column)
// and "W.counts" (f32, ne = [1, n_mat]: how many activations were summed). The result
// maps W to in_sum2 / counts (n_per_row * n_mat values, matrix after matrix); a matrix
// with count 0 gets weights 1 (no information). The legacy .dat format is not read.
inline std::unordered_map<std::string, std::vector<float>> load_imatrix_gguf(const std::string& path) {
    const gguf::file f = gguf::file::open(path);
    std::unordered_map<std::string, std::vector<float>> out;
    constexpr std::string_view sums_suffix = ".in_sum2", counts_suffix = ".counts";
    for (const auto& t : f.tensors()) {
        if (!detail::ends_with(t.name, sums_suffix)) continue;
        const std::string base = t.name.substr(0, t.name.size() - sums_suffix.size());
        const std::string label = "load_imatrix_gguf: '" + path + "': " + detail::tensor_label(t);
        const auto* c = f.find_tensor(base + std::string(counts_suffix));
        if (c == nullptr) fail(errc::format, label + " has no '" + base + std::string(counts_suffix) + "' tensor");
        if (t.type != type_id::f32 || c->type != type_id::f32)
            fail(errc::format, label + " and " + detail::tensor_label(*c) + " must both be f32");
        const std::int64_t n = t.ne[0], n_mat = t.n_elements() / std::max<std::int64_t>(n, 1);
        if (c->n_elements() != n_mat)
            fail(errc::format, label + ": " + detail::tensor_label(*c) + " should hold " + std::to_string(n_mat) +
                                   " counts");
        std::vector<float> sums(static_cast<std::size_t>(t.n_elements())), counts(static_cast<std::size_t>(n_mat));
        std::memcpy(sums.data(), t.data, sums.size() * sizeof(float));
        std::memcpy(counts.data(), c->data, counts.size() * sizeof(float));
        for (std::int64_t m = 0; m < n_mat; ++m)
            for (std::int64_t j = 0; j < n; ++j) {
                float& v = sums[static_cast<std::size_t>(m * n + j)];
                const float k = counts[static_cast<std::size_t>(m)];
                v = k > 0 ? v / k : 1.0f;
            }
        out.emplace(base, std::move(sums));
    }
    for (const auto& t : f.tensors())
        if (detail::ends_with(t.name, counts_suffix) &&
            !f.find_tensor(t.name.substr(0, t.name.size() - counts_suffix.size()) + std::string(sums_suffix)))
            fail(errc::format, "load_imatrix_gguf: '" + path + "': " + detail::tensor_label(t) + " has no .in_sum2 tensor");
    return out;
}

// Quantizes in_path to out_path. Throws tessera::error naming the tensor (name, shape,
// type) on bad input; out_path is only written once every tensor is converted.
inline quantize_stats quantize_model(const std::string& in_path, const std::string& out_path,
                                     const quantize_options& o) {
    const type_id target = o.type;
    const auto ftype = llama_ftype_of(target);
    if (!is_valid_type_id(static_cast<std::int64_t>(target)) || !ftype || !quant::can_quantize(target))
        fail(errc::unsupported, "quantize_model: cannot quantize to type id " +
                                    std::to_string(static_cast<int>(target)) +
                                    (is_valid_type_id(static_cast<std::int64_t>(target))
                                         ? " (" + std::string(type_name(target)) + ")"
                                         : std::string()));
    if (o.n_threads < 1)
        fail(errc::invalid_argument, "quantize_model: n_threads = " + std::to_string(o.n_threads) + " (must be >= 1)");
    if (in_path == out_path) fail(errc::invalid_argument, "quantize_model: input and output are the same file '" + in_path + "'");

    gguf::file in = gguf::file::open(in_path);
    gguf::writer w;
    w.copy_metadata(in.meta());
    w.set<std::uint32_t>("general.file_type", *ftype);
    if (is_quantized(target))
        w.set<std::uint32_t>("general.quantization_version", 2);
    else
        w.remove("general.quantization_version");

    quantize_stats st;
    quantize_progress progress;
    progress.total = in.tensors().size();
    for (const auto& t : in.tensors()) progress.bytes_total += t.size_bytes;
    std::vector<std::vector<std::byte>> buffers;  // outputs, kept alive until the write
    buffers.reserve(in.tensors().size());
    std::vector<float> f32;
    for (const auto& t : in.tensors()) {
        quantize_tensor_report rep;
        rep.name = t.name;
        rep.in_type = t.type;
        rep.ne = t.ne;
        rep.n_dims = t.n_dims;
        rep.bytes_in = t.size_bytes;
        bool fb = false;
        const bool is_output = !o.pure && (t.name == "output.weight" || (t.name == "token_embd.weight" && !in.find_tensor("output.weight")));
        const type_id out_t = detail::choose_type(t, target, fb, is_output);
        if (out_t == t.type) {
            w.add_tensor_view(t);
            rep.out_type = t.type;
            rep.bytes_out = t.size_bytes;
            ++st.n_kept;
        } else {
            if (is_quantized(t.type) && !o.allow_requantize)
                fail(errc::unsupported, "quantize_model: " + detail::tensor_label(t) +
                                            " is already quantized (allow_requantize, or --allow-requantize on the command line, converts it again)");
            if (!quant::can_dequantize(t.type))
                fail(errc::unsupported, "quantize_model: " + detail::tensor_label(t) + ": cannot read this type");
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
    w.write_to_file(out_path);
    return st;
}

}  // namespace models
TESSERA_END_NAMESPACE
