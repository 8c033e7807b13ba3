// A llama-architecture model on tessera: weights mapped from a GGUF file (zero
// copy), a KV cache, and the forward graph built from tessera's ops, run through
// the backend scheduler so that every compute tensor's memory is planned by
// tessera's memory planner (no hand-sized buffers).
//
//   models::llama_model m = models::llama_model::load("stories260K.gguf", {.n_threads = 2});
//   auto ids = m.tokenizer().tokenize("Once upon a time", true);
//   std::vector<float> logits = m.eval(ids);          // batched prompt, last token's logits
//   logits = m.eval(std::span(&next, 1));             // then one token at a time
//
// The graph per layer (llama.cpp's llm_build_llama):
//   h   = rms_norm(x) * attn_norm
//   q,k = rope(Wq h), rope(Wk h)   (normal mode: adjacent pairs rotate)
//   v   = Wv h
//   K/V caches <- k, v             (set_rows at the tokens' positions)
//   a   = softmax(q K^T / sqrt(d) + causal mask) V   (flash_attn_ext, or mul_mat + soft_max)
//   x  += Wo a
//   h   = rms_norm(x) * ffn_norm
//   x  += Wdown (silu(Wgate h) * (Wup h))
// then logits = Woutput (rms_norm(x) * output_norm), Woutput = token_embd when the file
// has no output.weight (tied embeddings).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <new>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/backend/registry.hpp"  // (the devices a program includes: backend/vulkan.hpp adds Vulkan)
#include "tessera/backend/scheduler.hpp"
#include "tessera/backend/utils.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/gguf/reader.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/models/hparams.hpp"
#include "tessera/quant/reference.hpp"
#include "tessera/text/load.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

// Where loading is, for a progress line: passed to llama_options::progress as each
// weight is placed.
struct load_progress {
    std::size_t done = 0, total = 0;                // weights, in the order they are placed
    std::uint64_t bytes_done = 0, bytes_total = 0;  // their data
    std::string_view name;                          // the weight just placed
};

struct llama_options {
    int n_threads = 0;                 // 0: the machine's hardware threads
    std::int64_t n_ctx = 0;            // KV cache length; 0: min(training context, 4096)
    std::int64_t n_batch = 512;        // prompt tokens per graph
    // Micro-batches (llama.cpp's n_ubatch): graphs of at most this many tokens; 0 = n_batch,
    // larger values are clamped to n_batch. In a pipeline (below) rank 0 queues micro-batch
    // i+1 while later devices still compute micro-batch i, so the devices overlap on a long
    // prompt; only the last one's logits are waited for (unless all_logits).
    std::int64_t n_ubatch = 0;
    type_id kv_type = type_id::f16;    // f16 or f32
    bool flash_attn = true;            // flash_attn_ext; false: mul_mat + soft_max + mul_mat
    // Where the model runs: "cpu" (the CPU backend alone); "best" (registry::best_device():
    // the first GPU that is not emulated, else the CPU); or a device or family name of
    // registry::global(), case-insensitive ("Vulkan0"; "vulkan" = that family's first
    // device). On a device with memory of its own the weights are uploaded into it once,
    // the KV cache lives there, and the scheduler runs the ops the device does not compute
    // on the CPU, copying their inputs across (llama.cpp's offload).
    std::string device = "cpu";
    int n_copies = 1;                  // the scheduler's pipeline copy sets (1..4; ggml's parallel)
    // Layers across devices, first to last (e.g. {"CPU", "MPI1", "MPI2"}; names as for
    // `device`, which it replaces when not empty): the token embedding runs on the first,
    // each device its range of layers (layer_split), the output norm and projection on the
    // last. Each device holds its own layers' weights and KV cache; a device that maps the
    // file itself (caps().buffer_from_file: an MPI rank) gets no weight byte sent.
    std::vector<std::string> pipeline = {};
    // Layers per pipeline device (summing to the layer count); empty: even, earlier devices
    // take the remainder.
    std::vector<int> layer_split = {};
    // Called once per weight tensor (done = 1 .. total) as it is mapped, and on a device
    // with memory of its own uploaded, on the loading thread (llama.cpp's
    // progress_callback). On the CPU the weights are mapped, not read, so the calls come
    // fast; the upload to a device is where the bytes move. An exception it throws stops
    // the load and leaves the constructor. Empty: no calls.
    std::function<void(const load_progress&)> progress = {};  // (a default: designated initializers may omit it)
    // true: the matrices the CPU multiplies (attention and FFN weights, an untied
    // output.weight) in q4_0, q8_0 or q4_K (and iq4_nl on AArch64) whose rows fill whole
    // records of the repacked layout are copied at load into a CPU_REPACK buffer
    // (backend/cpu/repack.hpp), the layout the packed GEMM reads, as llama.cpp's CPU_REPACK
    // does; their bytes then live in memory besides the mapping. Off by default: on the
    // machines measured (docs/models.md) the weights read in place were as fast or faster,
    // for one token and for prompts.
    bool repack = false;
};

class llama_model {
public:
    // Opens (mmaps) a GGUF file and maps its weights; errors name the file and tensor.
    static llama_model load(const std::string& path, const llama_options& o = {}) {
        return llama_model(gguf::file::open(path), o);
    }

    llama_model(gguf::file f, const llama_options& o = {}) : s_(std::make_unique<state>()) {
        s_->file = std::move(f);
        s_->opt = o;
        try {
            init();
        } catch (const std::bad_alloc&) {  // (buffers report their own sizes; this is any other allocation)
            fail(errc::out_of_memory, "model '" + s_->file.source() +
                                          "': ran out of memory while loading; try a smaller context (n_ctx, generate -c)");
        }
    }

    const llama_hparams& hparams() const noexcept { return s_->hp; }
    const gguf::file& file() const noexcept { return s_->file; }
    bool has_tokenizer() const noexcept { return s_->tok.has_value(); }
    const text::tokenizer& tokenizer() const {
        if (!s_->tok) fail(errc::unsupported, "model '" + s_->file.source() + "' has no tokenizer.ggml.* vocabulary");
        return *s_->tok;
    }
    std::int64_t n_ctx() const noexcept { return s_->n_ctx; }
    std::int64_t n_past() const noexcept { return s_->n_past; }
    std::int64_t n_vocab() const noexcept { return s_->hp.n_vocab; }
    int n_threads() const noexcept { return s_->n_threads; }
    // The device the weights and the KV cache are on ("CPU", "Vulkan0", ...); for a
    // pipeline, each device with its layers: "CPU[0-2] MPI1[3-4]+out".
    std::string_view device_name() const { return s_->device_label; }
    // The last eval's graph: its splits (llama.cpp's "graph splits") and how many of its
    // nodes ran on device_name() (all of them when that is the CPU).
    int last_n_splits() const noexcept { return s_->last_splits; }
    std::size_t last_nodes_on_device() const noexcept { return s_->last_on_device; }
    // Graphs built by eval so far: one per new shape (tokens per graph, attention length
    // padded to 256, all_logits); an eval of the last shape re-uses its graph, placement
    // and allocation and only sets the inputs (a decode graph serves 256 tokens).
    std::uint64_t n_graph_builds() const noexcept { return s_->n_builds; }
    // Number of parameters (elements of all weight tensors).
    std::int64_t n_params() const noexcept { return s_->n_params; }
    // Bytes of all weight tensors.
    std::size_t weight_bytes() const noexcept { return s_->weight_bytes; }
    // Bytes of the CPU_REPACK buffers holding the matrices repacked at load (llama_options::
    // repack; 0 when none was).
    std::size_t repacked_bytes() const noexcept {
        std::size_t n = 0;
        for (const placed& d : s_->devs)
            if (d.repacked) n += d.repacked.size();
        return n;
    }
    // Bytes of the compute buffer the scheduler planned for the graphs so far (ggml's
    // "compute buffer size"): intermediate tensors share memory where their lifetimes
    // allow, and ops run in place over dying sources (graph/op_traits.hpp).
    std::size_t compute_buffer_size() const {
        std::size_t n = 0;
        for (std::size_t i = 0; i < s_->sched->n_backends(); ++i) n += s_->sched->buffer_size(i);
        return n;
    }

    void set_n_threads(int n) {
        if (n < 1) fail(errc::invalid_argument, "llama_model: n_threads must be >= 1");
        s_->n_threads = n;
        backend::cpu_set_n_threads(s_->cpu, n);
    }

    // Forgets the cached tokens: the next eval starts at position 0.
    void reset() noexcept { s_->n_past = 0; }
    // Keeps only the first n cached tokens (n <= n_past).
    void truncate(std::int64_t n) {
        if (n < 0 || n > s_->n_past)
            fail(errc::invalid_argument, "llama_model::truncate: " + std::to_string(n) + " is outside 0.." +
                                             std::to_string(s_->n_past));
        s_->n_past = n;
    }

    // Feeds tokens at positions n_past, n_past+1, ...; prompts longer than n_ubatch run in
    // several graphs. Returns the logits of the last token (n_vocab floats), or with
    // all_logits those of every token (token i at [i * n_vocab, (i+1) * n_vocab)).
    std::vector<float> eval(std::span<const std::int32_t> tokens, bool all_logits = false) {
        if (tokens.empty()) fail(errc::invalid_argument, "llama_model::eval: no tokens");
        const auto n = static_cast<std::int64_t>(tokens.size());
        if (s_->n_past + n > s_->n_ctx)
            fail(errc::out_of_memory, "llama_model::eval: " + std::to_string(s_->n_past) + " cached + " + std::to_string(n) +
                                          " new tokens exceed the context of " + std::to_string(s_->n_ctx));
        for (std::size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] < 0 || tokens[i] >= s_->hp.n_vocab)
                fail(errc::invalid_argument, "llama_model::eval: token " + std::to_string(tokens[i]) + " at index " +
                                                 std::to_string(i) + " is outside the vocabulary of " +
                                                 std::to_string(s_->hp.n_vocab));
        std::vector<float> out;
        if (all_logits) out.reserve(static_cast<std::size_t>(n * s_->hp.n_vocab));
        const std::int64_t ub = n_ubatch(), past = s_->n_past;
        try {
            for (std::int64_t i0 = 0; i0 < n; i0 += ub) {
                const std::int64_t k = std::min(ub, n - i0);
                const bool last = i0 + k == n;
                std::vector<float> part;
                try {
                    if (i0 == 0) reserve(std::min(ub, n), past + n, all_logits);
                    // only logits that are read wait for the devices: earlier micro-batches are queued
                    part = eval_batch(tokens.subspan(static_cast<std::size_t>(i0), static_cast<std::size_t>(k)), all_logits,
                                      all_logits || last);
                } catch (const std::bad_alloc&) {
                    fail(errc::out_of_memory, "llama_model::eval: ran out of memory for a batch of " + std::to_string(k) +
                                                  " tokens after " + std::to_string(s_->n_past) +
                                                  " cached ones; try a smaller batch (n_batch) or context (n_ctx)");
                }
                if (all_logits) out.insert(out.end(), part.begin(), part.end());
                else if (last) out = std::move(part);
            }
        } catch (...) {
            // nothing queued outlives a failed eval, and the cache holds what it held before
            s_->sched->synchronize_quietly();
            s_->n_past = past;
            throw;
        }
        return out;
    }

    // Tokens per graph: n_ubatch (0: n_batch), at most n_batch.
    std::int64_t n_ubatch() const noexcept {
        return s_->opt.n_ubatch > 0 ? std::min(s_->opt.n_ubatch, s_->opt.n_batch) : s_->opt.n_batch;
    }

    // The graph of one batch (for printing or inspection): n tokens at position n_past.
    // Builds into the model's context; call discard_graph() when done.
    graph::cgraph build_graph(std::int64_t n, bool all_logits) {
        drop_graph();
        s_->mark = s_->ctx->size();
        return build(n, all_logits).g;
    }
    void discard_graph() { s_->ctx->rollback(s_->mark); s_->sched->reset(); }

private:
    struct layer {
        graph::node *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *w_gate, *w_up, *w_down;
        graph::node *k_cache, *v_cache;
    };
    // A device of the pipeline (one when there is none): its weights (the mapped file, the
    // file mapped by the device itself, or uploaded), its KV cache, its stream, its layers.
    struct placed {
        backend::any_device dev;
        backend::any_backend stream;  // the CPU's is state::cpu
        backend::any_buffer weights, kv;
        backend::any_buffer repacked;          // (CPU, llama_options::repack) the matrices stored repacked
        std::vector<graph::node*> to_repack;  // their nodes, placed in `repacked` once all are known
        bool upload = false;          // weights are copied into `weights` tensor by tensor
        std::int64_t first = 0, end = 0;
        graph::node* rope_freqs = nullptr;
    };
    struct built {
        graph::cgraph g;
        graph::node *tokens, *pos, *kv_idx, *mask, *logits;
        std::vector<std::size_t> layer_start;  // node id where layer i's nodes begin; then the output's
    };
    struct state {
        gguf::file file;
        llama_options opt;
        llama_hparams hp;
        std::optional<text::tokenizer> tok;
        std::unique_ptr<graph::context> ctx;
        backend::any_buffer weights_buf, kv_buf;
        struct aligned_free {
            void operator()(std::byte* p) const noexcept { ::operator delete(p, std::align_val_t(64)); }
        };
        std::unique_ptr<std::byte, aligned_free> weights_copy;  // when the file's data is not aligned
        backend::any_backend cpu;
        backend::any_device dev;         // where weights and KV cache are (the CPU device, or another)
        backend::any_backend dev_stream;  // its stream when it is not the CPU
        std::unique_ptr<backend::scheduler> sched;
        std::vector<placed> devs;
        std::string device_label;
        graph::node *tok_embd = nullptr, *output_norm = nullptr, *output = nullptr, *rope_freqs = nullptr;
        std::vector<layer> layers;
        std::int64_t n_ctx = 0, n_past = 0, n_params = 0;
        std::size_t weight_bytes = 0;
        load_progress loading;  // for opt.progress
        std::size_t mark = 0;
        int n_threads = 1;
        int last_splits = 0;
        std::size_t last_on_device = 0;
        std::int64_t res_n = 0, res_kv = 0;  // the largest graph the compute buffers were sized for
        bool res_all = false;
        // The last eval's graph, kept built, placed and allocated: the next eval of the same
        // shape (n tokens, padded attention length, all_logits) only sets its inputs.
        std::unique_ptr<built> graph;
        std::size_t graph_mark = 0;
        std::int64_t graph_n = 0, graph_kv = 0;
        bool graph_all = false;
        std::uint64_t n_builds = 0;
    };

    std::unique_ptr<state> s_;

    static std::string shape_str(const std::array<std::int64_t, 4>& ne, int nd) {
        std::string s = "[";
        for (int d = 0; d < std::max(nd, 1); ++d) s += (d ? ", " : "") + std::to_string(ne[static_cast<std::size_t>(d)]);
        return s + "]";
    }

    // A weight tensor of the file with the expected shape, placed in the mapped buffer.
    graph::node* weight(const std::string& name, std::initializer_list<std::int64_t> shape, bool optional = false, std::size_t dev = 0) {
        state& s = *s_;
        const gguf::tensor_info* t = s.file.find_tensor(name);
        if (!t) {
            if (optional) return nullptr;
            fail(errc::format, "model '" + s.file.source() + "': tensor '" + name + "' is missing");
        }
        std::array<std::int64_t, 4> want{1, 1, 1, 1};
        std::size_t d = 0;
        for (std::int64_t v : shape) want[d++] = v;
        if (t->ne != want)
            fail(errc::shape_mismatch, "model '" + s.file.source() + "': tensor '" + name + "' has shape " +
                                           shape_str(t->ne, t->n_dims) + ", expected " +
                                           shape_str(want, static_cast<int>(shape.size())));
        if (is_activation_only(t->type))
            fail(errc::format, "model '" + s.file.source() + "': weight '" + name + "' has type " +
                                   std::string(type_name(t->type)) + ", a type of quantized activations only (no weight is stored in it)");
        if (!is_float(t->type) && !quant::can_dequantize(t->type))
            fail(errc::unsupported, "model '" + s.file.source() + "': tensor '" + name + "' has type " +
                                        std::string(type_name(t->type)) + ", which tessera cannot compute with yet");
        if (shape.size() == 1 && t->type != type_id::f32)
            fail(errc::unsupported, "model '" + s.file.source() + "': norm tensor '" + name + "' must be f32, not " +
                                        std::string(type_name(t->type)));
        graph::node* n = place_weight(*t, dev);
        s.n_params += t->n_elements();
        s.weight_bytes += static_cast<std::size_t>(t->size_bytes);
        if (s.opt.progress) {
            ++s.loading.done;
            s.loading.bytes_done += t->size_bytes;
            s.loading.name = t->name;
            s.opt.progress(s.loading);
        }
        return n;
    }

    // A node for file tensor t in device dev's weights buffer (at its file offset; uploaded
    // when that device does not hold the file's bytes).
    graph::node* place_weight(const gguf::tensor_info& t, std::size_t dev) {
        state& s = *s_;
        placed& d = s.devs.at(dev);
        graph::node* n = s.ctx->new_tensor(t.type, t.ne, t.name);
        // llama_options::repack: a matrix mul_mat reads, on the CPU, that CPU_REPACK stores
        // repacked with no padding: a row that fills part of its last record (768 wide: 1.5
        // records of 512) costs more bytes per token than the layout saves (docs/models.md)
        if (s.opt.repack && d.dev.type() == backend::device_type::cpu && multiplied(t.name) && backend::repackable(*n) &&
            backend::repack_alloc_size(*n) * 288 <= static_cast<std::size_t>(t.size_bytes) * 296) {
            d.to_repack.push_back(n);  // (memory and bytes once every weight is placed)
            return n;
        }
        const auto section = s.file.data_section();
        backend::tensor_alloc(d.weights, *n, static_cast<std::byte*>(d.weights.base()) + (t.data - section.data()));
        if (d.upload) backend::tensor_set(*n, t.data, 0, static_cast<std::size_t>(t.size_bytes));  // upload once
        return n;
    }
    // A matrix mul_mat reads as its weights.
    static bool multiplied(std::string_view name) {
        if (name == "output.weight") return true;
        if (!name.starts_with("blk.")) return false;
        for (const char* w : {".attn_q.weight", ".attn_k.weight", ".attn_v.weight", ".attn_output.weight", ".ffn_gate.weight",
                              ".ffn_up.weight", ".ffn_down.weight"})
            if (name.ends_with(w)) return true;
        return false;
    }
    // The same file tensor as w, also on device dev (tied output, rope_freqs per device).
    graph::node* weight_on(const graph::node* w, std::size_t dev) {
        const gguf::tensor_info* t = s_->file.find_tensor(w->name);
        if (!t) fail(errc::invalid_argument, "llama_model: '" + w->name + "' is not a tensor of the file");
        return place_weight(*t, dev);
    }
    // The pipeline device of layer il.
    std::size_t layer_dev(std::int64_t il) const {
        for (std::size_t d = 0; d < s_->devs.size(); ++d)
            if (il >= s_->devs[d].first && il < s_->devs[d].end) return d;
        return s_->devs.size() - 1;
    }

    void init() {
        state& s = *s_;
        try {
            s.hp = llama_hparams::from_metadata(s.file.meta());
        } catch (const error& e) {
            fail(e.code(), "model '" + s.file.source() + "': " + e.what());
        }
        llama_hparams& h = s.hp;
        if (s.file.meta().contains("tokenizer.ggml.model")) {
            try {
                s.tok.emplace(text::vocab_from_gguf(s.file));
            } catch (const error& e) {
                fail(e.code(), "model '" + s.file.source() + "': vocabulary: " + e.what());
            }
        }
        const gguf::tensor_info* emb = s.file.find_tensor("token_embd.weight");
        if (!emb) fail(errc::format, "model '" + s.file.source() + "': tensor 'token_embd.weight' is missing");
        if (h.n_vocab == 0) h.n_vocab = emb->ne[1];
        if (emb->ne[1] != h.n_vocab)
            fail(errc::format, "model '" + s.file.source() + "': 'token_embd.weight' has " + std::to_string(emb->ne[1]) +
                                   " rows but the vocabulary has " + std::to_string(h.n_vocab) + " tokens" +
                                   (s.file.meta().contains(h.arch + ".vocab_size") ? " ('" + h.arch + ".vocab_size')" : ""));
        if (s.tok && s.tok->get_vocab().n_tokens() != static_cast<std::uint64_t>(h.n_vocab))
            fail(errc::format, "model '" + s.file.source() + "': 'tokenizer.ggml.tokens' has " +
                                   std::to_string(s.tok->get_vocab().n_tokens()) + " tokens but the model's vocabulary size is " +
                                   std::to_string(h.n_vocab) + " (the rows of 'token_embd.weight')");
        check_blocks();
        if (s.opt.kv_type != type_id::f16 && s.opt.kv_type != type_id::f32)
            fail(errc::unsupported, "llama_model: KV cache type " + std::string(type_name(s.opt.kv_type)) +
                                        " (only f16 and f32 so far)");
        if (s.opt.n_batch < 1) fail(errc::invalid_argument, "llama_model: n_batch must be >= 1");
        if (s.opt.n_ubatch < 0) fail(errc::invalid_argument, "llama_model: n_ubatch must be >= 0 (0: n_batch)");
        if (s.opt.n_ctx < 0 || s.opt.n_ctx > llama_hparams::max_context)
            fail(errc::invalid_argument, "llama_model: n_ctx " + std::to_string(s.opt.n_ctx) + " is outside 0.." +
                                             std::to_string(llama_hparams::max_context) + " (0: the training context, at most 4096)");
        s.n_ctx = s.opt.n_ctx > 0 ? s.opt.n_ctx : std::min<std::int64_t>(h.n_ctx_train, 4096);
        s.n_threads = s.opt.n_threads > 0 ? s.opt.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

        if (s.opt.n_copies < 1 || s.opt.n_copies > backend::scheduler::max_copies)
            fail(errc::invalid_argument, "llama_model: n_copies must be 1.." + std::to_string(backend::scheduler::max_copies) +
                                             ", not " + std::to_string(s.opt.n_copies));
        // the devices, first to last, and their layers
        const std::vector<std::string> names = s.opt.pipeline.empty() ? std::vector<std::string>{s.opt.device} : s.opt.pipeline;
        for (const std::string& nm : names) {
            placed d;
            d.dev = find_device(nm);
            for (const placed& o : s.devs)
                if (o.dev == d.dev) fail(errc::invalid_argument, "llama_model: the pipeline names device " + std::string(d.dev.name()) + " twice");
            s.devs.push_back(std::move(d));
        }
        s.dev = s.devs.front().dev;
        const auto nd = static_cast<std::int64_t>(s.devs.size());
        if (!s.opt.layer_split.empty()) {
            if (static_cast<std::int64_t>(s.opt.layer_split.size()) != nd)
                fail(errc::invalid_argument, "llama_model: layer_split has " + std::to_string(s.opt.layer_split.size()) +
                                                 " counts for " + std::to_string(nd) + " pipeline devices");
            std::int64_t at = 0;
            for (std::size_t d = 0; d < s.devs.size(); ++d) {
                const int c = s.opt.layer_split[d];
                if (c < 0) fail(errc::invalid_argument, "llama_model: layer_split: " + std::to_string(c) + " layers for " + std::string(s.devs[d].dev.name()));
                s.devs[d].first = at;
                at += c;
                s.devs[d].end = at;
            }
            if (at != h.n_layer)
                fail(errc::invalid_argument, "llama_model: layer_split sums to " + std::to_string(at) + " layers, the model has " +
                                                 std::to_string(h.n_layer));
        } else {
            std::int64_t at = 0;
            for (std::int64_t d = 0; d < nd; ++d) {
                const std::int64_t c = h.n_layer / nd + (d < h.n_layer % nd ? 1 : 0);
                s.devs[static_cast<std::size_t>(d)].first = at;
                at += c;
                s.devs[static_cast<std::size_t>(d)].end = at;
            }
        }

        s.ctx = std::make_unique<graph::context>(graph::context_options{true});
        const auto data = s.file.data_section();
        for (placed& d : s.devs) {
            if (d.dev.type() == backend::device_type::cpu) {
                std::byte* wp = const_cast<std::byte*>(data.data());
                if (reinterpret_cast<std::uintptr_t>(wp) % 32 != 0) {
                    // a buffer given to gguf::file::from_buffer need not be aligned: copy the data section
                    s.weights_copy.reset(static_cast<std::byte*>(::operator new(std::max<std::size_t>(data.size(), 1), std::align_val_t(64))));
                    std::memcpy(s.weights_copy.get(), data.data(), data.size());
                    wp = s.weights_copy.get();
                }
                d.weights = backend::cpu_buffer_from_ptr(wp, data.size());
                continue;
            }
            d.stream = d.dev.init_backend(std::to_string(s.n_threads));
            if (d.dev.caps().buffer_from_file) {
                // the device maps the file itself: no weight byte travels
                if (!s.file.is_mapped())
                    fail(errc::invalid_argument, "model '" + s.file.source() + "': device " + std::string(d.dev.name()) +
                                                     " maps the model file itself; load the model from a file");
                std::error_code ec;
                const std::filesystem::path real = std::filesystem::canonical(s.file.source(), ec);
                d.weights = d.dev.buffer_from_file({ec ? s.file.source() : real.string(), s.file.data_offset(), data.size(),
                                                    gguf::header_fingerprint(s.file)});
            } else {
                // the weights go into the device's memory (uploaded tensor by tensor in weight())
                d.weights = d.dev.buffer_type().alloc_buffer(std::max<std::size_t>(data.size(), 1));
                d.upload = true;
            }
        }
        for (placed& d : s.devs) d.weights.set_usage(backend::buffer_usage::weights);
        s.dev_stream = s.devs.front().stream;
        s.weights_buf = s.devs.front().weights;
        if (s.devs.size() == 1) {
            s.device_label = std::string(s.dev.name());
        } else {
            for (std::size_t d = 0; d < s.devs.size(); ++d) {
                const placed& p = s.devs[d];
                s.device_label += (d ? " " : "") + std::string(p.dev.name()) + "[" +
                                  (p.end > p.first ? std::to_string(p.first) + "-" + std::to_string(p.end - 1) : std::string()) + "]";
            }
            s.device_label += "+out";
        }

        if (s.opt.progress) {  // the totals: the weights placed below that the file has
            auto count = [&](const std::string& name) {
                if (const gguf::tensor_info* t = s.file.find_tensor(name)) {
                    ++s.loading.total;
                    s.loading.bytes_total += t->size_bytes;
                }
            };
            for (const char* name : {"token_embd.weight", "output_norm.weight", "output.weight", "rope_freqs.weight"}) count(name);
            for (std::int64_t i = 0; i < h.n_layer; ++i)
                for (const char* w : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"})
                    count("blk." + std::to_string(i) + "." + w + ".weight");
        }
        const std::int64_t E = h.n_embd, EKV = h.n_embd_kv(), F = h.n_ff, V = h.n_vocab;
        const std::size_t last = s.devs.size() - 1;
        s.tok_embd = weight("token_embd.weight", {E, V}, false, 0);
        s.output_norm = weight("output_norm.weight", {E}, false, last);
        s.output = weight("output.weight", {E, V}, true, last);
        if (!s.output) s.output = last == 0 ? s.tok_embd : weight_on(s.tok_embd, last);  // tied: every device maps the file
        s.rope_freqs = weight("rope_freqs.weight", {h.n_rot / 2}, true, 0);
        for (std::size_t d = 0; d < s.devs.size(); ++d)
            s.devs[d].rope_freqs = !s.rope_freqs ? nullptr : d == 0 ? s.rope_freqs : weight_on(s.rope_freqs, d);
        std::vector<std::vector<graph::node*>> caches(s.devs.size());
        for (std::int64_t i = 0; i < h.n_layer; ++i) {
            const std::string p = "blk." + std::to_string(i) + ".";
            const std::size_t d = layer_dev(i);
            layer l{};
            l.attn_norm = weight(p + "attn_norm.weight", {E}, false, d);
            l.wq = weight(p + "attn_q.weight", {E, E}, false, d);
            l.wk = weight(p + "attn_k.weight", {E, EKV}, false, d);
            l.wv = weight(p + "attn_v.weight", {E, EKV}, false, d);
            l.wo = weight(p + "attn_output.weight", {E, E}, false, d);
            l.ffn_norm = weight(p + "ffn_norm.weight", {E}, false, d);
            l.w_gate = weight(p + "ffn_gate.weight", {E, F}, false, d);
            l.w_up = weight(p + "ffn_up.weight", {E, F}, false, d);
            l.w_down = weight(p + "ffn_down.weight", {F, E}, false, d);
            l.k_cache = s.ctx->new_tensor(s.opt.kv_type, {EKV, s.n_ctx, 1, 1}, "cache_k_l" + std::to_string(i));
            l.v_cache = s.ctx->new_tensor(s.opt.kv_type, {EKV, s.n_ctx, 1, 1}, "cache_v_l" + std::to_string(i));
            caches[d].push_back(l.k_cache);
            caches[d].push_back(l.v_cache);
            s.layers.push_back(l);
        }
        for (placed& pd : s.devs) {  // llama_options::repack: one CPU_REPACK buffer, the bytes stored repacked
            if (pd.to_repack.empty()) continue;
            pd.repacked = backend::alloc_tensors(pd.to_repack, backend::repack_buffer_type(), backend::buffer_usage::weights);
            for (graph::node* n : pd.to_repack) {
                const gguf::tensor_info& t = s.file.tensor(n->name);
                backend::tensor_set(*n, t.data, 0, static_cast<std::size_t>(t.size_bytes));
            }
        }
        for (std::size_t d = 0; d < s.devs.size(); ++d) {
            placed& pd = s.devs[d];
            if (caches[d].empty()) continue;
            try {
                pd.kv = backend::alloc_tensors(caches[d], pd.stream ? pd.dev.buffer_type() : backend::cpu_buffer_type());
            } catch (const error& e) {
                if (e.code() != errc::out_of_memory) throw;
                const std::int64_t nl = pd.end - pd.first;
                const auto bytes = static_cast<std::uint64_t>(2 * nl * EKV * s.n_ctx * type_size(s.opt.kv_type));
                fail(errc::out_of_memory, "model '" + s.file.source() + "': the KV cache (" + std::to_string(s.n_ctx) + " tokens x " +
                                              std::to_string(nl) + " layers, " + std::string(type_name(s.opt.kv_type)) + ", " +
                                              bytes_str(bytes) + ") could not be allocated on " + std::string(pd.dev.name()) +
                                              " (" + e.what() + "); try a smaller context (n_ctx, generate -c)");
            }
            pd.kv.clear(0);
        }
        s.kv_buf = s.devs.front().kv;
        s.cpu = backend::cpu_init(s.n_threads);
        // a family whose transfers need the caller's help to move (MPI) gets it between the
        // CPU's nodes: its "progress" entry as the CPU stream's abort callback
        for (const placed& pd : s.devs) {
            if (!pd.stream) continue;
            const backend::registry& reg = backend::registry::global();
            for (std::size_t i = 0; i < reg.reg_count(); ++i) {
                const backend::any_reg g = reg.reg(i);
                bool mine = false;
                for (std::size_t k = 0; k < g.device_count() && !mine; ++k) mine = g.device(k) == pd.dev;
                if (!mine) continue;
                if (const auto progress = g.proc<backend::progress_fn>("progress")) {
                    backend::cpu_set_abort_callback(s.cpu, [progress] { return progress(); });
                    break;
                }
            }
        }
        // the scheduler's backends: the devices with streams of their own in pipeline order, the CPU last
        std::vector<backend::any_backend> streams;
        for (const placed& pd : s.devs)
            if (pd.stream) streams.push_back(pd.stream);
        streams.push_back(s.cpu);
        s.sched = std::make_unique<backend::scheduler>(std::move(streams), std::vector<backend::any_buffer_type>{}, s.opt.n_copies);
    }

    // Every 'blk.N.' tensor belongs to a block below the declared block count.
    void check_blocks() const {
        const state& s = *s_;
        for (const auto& t : s.file.tensors()) {
            const std::string_view nm = t.name;
            if (!nm.starts_with("blk.")) continue;
            std::int64_t b = 0;
            std::size_t i = 4;
            for (; i < nm.size() && nm[i] >= '0' && nm[i] <= '9' && b <= llama_hparams::max_layers; ++i) b = b * 10 + (nm[i] - '0');
            if (i > 4 && i < nm.size() && nm[i] == '.' && b >= s.hp.n_layer)
                fail(errc::format, "model '" + s.file.source() + "': tensor '" + t.name + "' belongs to block " + std::to_string(b) +
                                       ", but '" + s.hp.arch + ".block_count' is " + std::to_string(s.hp.n_layer));
        }
    }

    static backend::any_device find_device(const std::string& name) {
        const backend::registry& r = backend::registry::global();
        if (name.empty() || backend::detail::iequal(name, "cpu")) return backend::cpu_device();
        if (backend::detail::iequal(name, "best")) return r.best_device();
        if (backend::any_device d = r.dev_by_name(name)) return d;
        if (const backend::any_reg g = r.reg_by_name(name); g && g.device_count() > 0) return g.device(0);
        fail(errc::invalid_argument, "llama_model: no device '" + name + "' (devices: " + r.names() + "; or cpu, best)");
    }

    // The graph of n tokens at n_past (n_kv: the cached positions it attends to, n_past + n
    // unless a worst case is being sized).
    built build(std::int64_t n, bool all_logits, std::int64_t n_kv = 0) {
        using namespace graph;
        state& s = *s_;
        const llama_hparams& h = s.hp;
        context& ctx = *s.ctx;
        const std::int64_t E = h.n_embd, D = h.n_embd_head(), H = h.n_head, HKV = h.n_head_kv;
        if (n_kv <= 0) n_kv = s.n_past + n;
        const float kq_scale = 1.0f / std::sqrt(static_cast<float>(D));
        built b;
        any_tensor tokens = new_tensor(ctx, type_id::i32, {n, 1, 1, 1}, "inp_tokens");
        any_tensor pos = new_tensor(ctx, type_id::i32, {n, 1, 1, 1}, "inp_pos");
        any_tensor kv_idx = new_tensor(ctx, type_id::i64, {n, 1, 1, 1}, "inp_kv_idx");
        any_tensor mask = new_tensor(ctx, type_id::f32, {n_kv, n, 1, 1}, "inp_kq_mask");
        for (any_tensor t : {tokens, pos, kv_idx, mask}) t.set_input();
        rope_params rp{static_cast<int>(h.n_rot)};
        rp.mode = rope_mode::normal;
        rp.n_ctx_orig = static_cast<int>(h.n_ctx_train);
        rp.freq_base = h.rope_freq_base;
        rp.freq_scale = h.rope_freq_scale;

        const std::size_t kv_elt = type_size(s.opt.kv_type);
        any_tensor x = get_rows(any_tensor(s.tok_embd), tokens).set_name("inp_embd");
        for (std::size_t il = 0; il < s.layers.size(); ++il) {
            b.layer_start.push_back(ctx.size());
            const layer& l = s.layers[il];
            const std::string li = "-" + std::to_string(il);
            graph::node* rf = s.devs[layer_dev(static_cast<std::int64_t>(il))].rope_freqs;
            any_tensor freqs = rf ? any_tensor(rf) : any_tensor();
            any_tensor cur = mul(rms_norm(x, h.rms_eps), any_tensor(l.attn_norm)).set_name("attn_norm" + li);
            any_tensor q = reshape(mul_mat(any_tensor(l.wq), cur), {D, H, n, 1});
            any_tensor k = reshape(mul_mat(any_tensor(l.wk), cur), {D, HKV, n, 1});
            any_tensor v = mul_mat(any_tensor(l.wv), cur).set_name("Vcur" + li);
            q = rope_ext(q, pos, freqs, rp).set_name("Qcur" + li);
            k = rope_ext(k, pos, freqs, rp).set_name("Kcur" + li);
            // write this batch's keys and values into the caches at their positions
            any_tensor kc = set_rows(any_tensor(l.k_cache), reshape(k, {D * HKV, n, 1, 1}), kv_idx);
            any_tensor vc = set_rows(any_tensor(l.v_cache), v, kv_idx);
            // all cached positions, one head per dim-2 slice
            const std::size_t row = kv_elt * static_cast<std::size_t>(D * HKV), head = kv_elt * static_cast<std::size_t>(D);
            any_tensor K = view(kc, {D, n_kv, HKV, 1}, {row, head, row * static_cast<std::size_t>(n_kv)}, 0);
            any_tensor Vv = view(vc, {D, n_kv, HKV, 1}, {row, head, row * static_cast<std::size_t>(n_kv)}, 0);
            any_tensor Q = permute(q, {0, 2, 1, 3});  // [D, n, H]
            // ggml multiplies an f16 cache with queries (and probabilities) rounded to f16;
            // doing the same keeps the logits within llama.cpp's rounding
            const bool f16_kv = s.opt.kv_type == type_id::f16;
            if (f16_kv) Q = cast(Q, type_id::f16);
            any_tensor attn;
            if (s.opt.flash_attn) {
                if (f16_kv) Q = cast(Q, type_id::f32);
                attn = reshape(flash_attn_ext(Q, K, Vv, mask, kq_scale), {E, n, 1, 1});  // [D, H, n] -> [E, n]
            } else {
                any_tensor kq = soft_max_ext(mul_mat(K, Q), mask, kq_scale);                // [n_kv, n, H]
                any_tensor vt = cont(permute(Vv, {1, 0, 2, 3}));                            // [n_kv, D, HKV]
                if (f16_kv) kq = cast(kq, type_id::f16);
                any_tensor kqv = mul_mat(vt, kq);                                           // [D, n, H]
                attn = reshape(cont(permute(kqv, {0, 2, 1, 3})), {E, n, 1, 1});
            }
            attn.set_name("kqv_out" + li);
            x = add(x, mul_mat(any_tensor(l.wo), attn)).set_name("ffn_inp" + li);
            cur = mul(rms_norm(x, h.rms_eps), any_tensor(l.ffn_norm)).set_name("ffn_norm" + li);
            any_tensor ff = swiglu_split(mul_mat(any_tensor(l.w_gate), cur), mul_mat(any_tensor(l.w_up), cur));
            x = add(x, mul_mat(any_tensor(l.w_down), ff)).set_name("l_out" + li);
        }
        b.layer_start.push_back(ctx.size());
        if (!all_logits && n > 1)  // only the last token's logits are wanted
            x = view(x, {E, 1, 1, 1}, {x.nb(1), x.nb(1), x.nb(1)}, static_cast<std::size_t>(n - 1) * x.nb(1));
        x = mul(rms_norm(x, h.rms_eps), any_tensor(s.output_norm)).set_name("result_norm");
        any_tensor logits = mul_mat(any_tensor(s.output), x).set_name("result_output");
        logits.set_output();
        b.g.build_forward_expand(logits);
        b.tokens = tokens.get();
        b.pos = pos.get();
        b.kv_idx = kv_idx.get();
        b.mask = mask.get();
        b.logits = logits.get();
        return b;
    }

    // A pipeline: every node goes to its layer's device (the embedding to the first, the
    // output to the last) when that device computes it, so one tensor crosses each
    // boundary (the residual); the scheduler's passes place the rest.
    void pin(const built& b) {
        state& s = *s_;
        const std::size_t last = s.devs.size() - 1;
        for (graph::node* x : b.g.nodes()) {
            if (graph::op_is_view(x->op) || x->op == graph::op_kind::none) continue;
            std::size_t d = 0;
            if (x->id >= b.layer_start.back()) d = last;
            else
                for (std::size_t il = b.layer_start.size() - 1; il-- > 0;)
                    if (x->id >= b.layer_start[il]) {
                        d = layer_dev(static_cast<std::int64_t>(il));
                        break;
                    }
            const placed& pd = s.devs[d];
            if (pd.dev.supports_op(*x)) s.sched->set_tensor_backend(x, pd.stream ? pd.stream : s.cpu);
        }
    }

    // Sizes the compute buffers for graphs of up to n tokens attending to up to n_kv cached
    // positions (rounded up to a multiple of 256, at most n_ctx), so that the graphs of an
    // eval, and the next tokens' decode graphs, allocate nothing: a buffer that grows while
    // micro-batches are queued would make the scheduler wait for them, and one per token
    // costs an allocation per token (a round trip for a remote device).
    void reserve(std::int64_t n, std::int64_t n_kv, bool all_logits) {
        state& s = *s_;
        n_kv = padded_kv(n_kv);
        if (n <= s.res_n && n_kv <= s.res_kv && (!all_logits || s.res_all)) return;
        drop_graph();
        n = std::max(n, s.res_n);
        n_kv = std::max(n_kv, s.res_kv);
        all_logits = all_logits || s.res_all;
        s.mark = s.ctx->size();
        struct guard {
            state& s;
            ~guard() {
                s.sched->reset();
                s.ctx->rollback(s.mark);
            }
        } g{s};
        built b = build(n, all_logits, n_kv);
        if (s.devs.size() > 1) pin(b);
        s.sched->reserve(b.g);
        s.res_n = n;
        s.res_kv = n_kv;
        s.res_all = all_logits;
    }

    // The attention length of a graph whose last position is n_kv - 1: rounded up to a
    // multiple of kv_pad (at most n_ctx), as llama.cpp pads it; the slots past the last
    // position are masked (-inf). So a decode graph keeps its shape for kv_pad tokens and is
    // reused. (The cache is zeroed at load, so a masked slot never holds a NaN.)
    static constexpr std::int64_t kv_pad = 256;
    std::int64_t padded_kv(std::int64_t n_kv) const noexcept { return std::min(s_->n_ctx, (n_kv + kv_pad - 1) / kv_pad * kv_pad); }

    // Forgets the kept graph (its nodes, placement and allocation).
    void drop_graph() noexcept {
        state& s = *s_;
        if (!s.graph) return;
        s.graph.reset();
        s.sched->reset();
        s.ctx->rollback(s.graph_mark);
    }

    // The graph for n tokens at n_past: the kept one when the shape matches, else built,
    // placed and allocated (and kept).
    built& graph_for(std::int64_t n, bool all_logits) {
        state& s = *s_;
        const std::int64_t kv = padded_kv(s.n_past + n);
        if (s.graph && s.graph_n == n && s.graph_kv == kv && s.graph_all == all_logits) return *s.graph;
        drop_graph();
        s.graph_mark = s.ctx->size();
        try {
            auto b = std::make_unique<built>(build(n, all_logits, kv));
            if (s.devs.size() > 1) pin(*b);
            s.sched->alloc_graph(b->g);
            s.graph = std::move(b);
        } catch (...) {
            s.sched->reset();
            s.ctx->rollback(s.graph_mark);
            throw;
        }
        ++s.n_builds;
        s.graph_n = n;
        s.graph_kv = kv;
        s.graph_all = all_logits;
        return *s.graph;
    }

    // Computes one graph of toks; with wait false it only queues the compute (the logits are
    // not read, and an empty vector is returned).
    std::vector<float> eval_batch(std::span<const std::int32_t> toks, bool all_logits, bool wait) {
        try {
            return run_batch(toks, all_logits, wait);
        } catch (...) {
            drop_graph();
            throw;
        }
    }
    std::vector<float> run_batch(std::span<const std::int32_t> toks, bool all_logits, bool wait) {
        state& s = *s_;
        const auto n = static_cast<std::int64_t>(toks.size());
        const built& b = graph_for(n, all_logits);
        const std::int64_t n_kv = s.graph_kv;
        std::vector<std::int32_t> pos(static_cast<std::size_t>(n));
        std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            pos[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(s.n_past + i);
            idx[static_cast<std::size_t>(i)] = s.n_past + i;
        }
        // causal mask: token i (at position n_past + i) sees cache slots 0 .. n_past + i
        std::vector<float> mask(static_cast<std::size_t>(n * n_kv), 0.0f);
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = s.n_past + i + 1; j < n_kv; ++j)
                mask[static_cast<std::size_t>(i * n_kv + j)] = -std::numeric_limits<float>::infinity();
        backend::tensor_set(*b.tokens, toks.data(), 0, toks.size_bytes());
        backend::tensor_set(*b.pos, pos.data(), 0, pos.size() * sizeof(std::int32_t));
        backend::tensor_set(*b.kv_idx, idx.data(), 0, idx.size() * sizeof(std::int64_t));
        backend::tensor_set(*b.mask, mask.data(), 0, mask.size() * sizeof(float));
        if (!wait) {
            s.sched->graph_compute_async(b.g);
            s.n_past += n;
            return {};
        }
        s.sched->graph_compute(b.g);
        s.last_splits = s.sched->n_splits();
        s.last_on_device = 0;
        for (const auto& sp : s.sched->splits())
            if (sp.backend == 0) s.last_on_device += sp.nodes.size();
        std::vector<float> out(static_cast<std::size_t>(b.logits->lay.nelements()));
        backend::tensor_get(*b.logits, out.data(), 0, out.size() * sizeof(float));
        s.n_past += n;
        return out;
    }
};

}  // namespace models
TESSERA_END_NAMESPACE
