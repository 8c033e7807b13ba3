// scheduler: runs one graph on several backends (ggml_backend_sched).
//
// Given backends in priority order (lowest index first; the last one is normally
// the CPU) and a buffer type for each (default: its device's), split_graph assigns
// every tensor to a backend:
//   1. user assignments (set_tensor_backend) are kept;
//      a tensor that already has memory goes to the first backend that can use its
//      buffer (and, for a node, compute its op); input-flagged leafs go to the last
//      backend; a node reading a weight (a tensor in a buffer with usage weights) goes
//      to that weight's backend if it can compute it (not for rope), or to a
//      higher-priority backend whose device wants to offload the op;
//   2. assignments spread to neighbouring nodes the backend supports: non-last
//      backends down then up, then all backends down then up (view ops are skipped);
//   3. a node still unassigned goes to the backend supporting it that can read the
//      most of its sources in place;
//   4. view ops take their source's backend, data-less leafs their first consumer's;
//      a node no backend supports is an error naming it;
//   5. consecutive nodes on one backend form a split; each source a split's backend
//      cannot read (its device does not support the source's buffer type) gets a copy
//      in the split backend's buffer type, made before the split runs and shared by
//      later splits on that backend.
// Pipeline parallelism (n_copies > 1, ggml's `parallel`): every such input copy, and
// every graph input a split reads, exists n_copies times; compute i uses copy set
// i % n_copies, so the inputs of the next compute can be written while the splits of
// earlier ones still run on other backends. Before a split overwrites its copies of
// set c it waits for the event recorded when set c was last used on its backend.
// Copies are then persistent in the compute buffer (never reused for other tensors).
// alloc_graph plans all compute memory with tessera::memory's planner (one buffer
// per distinct buffer type, grown only when a graph needs more; reserve sizes them
// for a worst case up front) and binds the graph; graph_compute runs the splits in
// order, copying inputs across backends (synchronizing the producer through its
// event, or the whole backend when its device has no events; not at all when the
// destination stream orders the copy itself, backend::ordered_copy_from), with an optional eval
// callback that observes nodes. The user's graph is left as it was: sources are
// redirected to the copies only while the splits run.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/allocate.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/graph/op_traits.hpp"  // op_is_view
#include "tessera/memory/planner.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

class scheduler {
public:
    // Called with ask = true to ask whether t should be observed; then, after t (and
    // every node before it) has been computed, with ask = false: return false to stop.
    using eval_callback = std::function<bool(node& t, bool ask)>;

    // Most copies of the split inputs for pipeline parallelism (ggml's GGML_SCHED_MAX_COPIES).
    static constexpr int max_copies = 4;

    // A tensor a split reads from memory its backend cannot use, and its copies there.
    struct split_input {
        node* src = nullptr;
        std::array<node*, max_copies> copies{};  // one per copy set; the first n_copies() are used
    };
    struct split {
        int backend = 0;
        std::vector<node*> nodes;
        std::vector<split_input> inputs;
    };

    // backends in priority order; bufts: the buffer type for each (default: its
    // device's); n_copies: copy sets of the split inputs (1 = no pipelining).
    explicit scheduler(std::vector<any_backend> backends, std::vector<any_buffer_type> bufts = {}, int n_copies = 1)
        : backends_(std::move(backends)), n_copies_(n_copies) {
        if (backends_.empty()) fail(errc::invalid_argument, "scheduler: no backends");
        if (backends_.size() > 16) fail(errc::invalid_argument, "scheduler: more than 16 backends");
        if (n_copies < 1 || n_copies > max_copies)
            fail(errc::invalid_argument, "scheduler: n_copies is " + std::to_string(n_copies) + ", must be 1.." +
                                             std::to_string(max_copies));
        if (!bufts.empty() && bufts.size() != backends_.size())
            fail(errc::invalid_argument, "scheduler: " + std::to_string(bufts.size()) + " buffer types for " +
                                             std::to_string(backends_.size()) + " backends");
        for (std::size_t i = 0; i < backends_.size(); ++i) {
            if (!backends_[i]) fail(errc::invalid_argument, "scheduler: backend " + std::to_string(i) + " is empty");
            devices_.push_back(backends_[i].device());
            any_buffer_type bt = bufts.empty() ? devices_[i].buffer_type() : bufts[i];
            if (!devices_[i].supports_buft(bt))
                fail(errc::invalid_argument, "scheduler: backend " + std::string(backends_[i].name()) +
                                                 " cannot use buffer type " + std::string(bt.name()));
            bufts_.push_back(bt);
            // one planner buffer per distinct buffer type
            int id = -1;
            for (std::size_t j = 0; j < i; ++j)
                if (bufts_[j] == bt) id = buf_id_[j];
            if (id < 0) {
                id = static_cast<int>(buf_types_.size());
                buf_types_.push_back(bt);
            }
            buf_id_.push_back(id);
            events_.emplace_back();
            for (int c = 0; c < n_copies_; ++c) events_.back().push_back(devices_[i].event_new());
        }
        buffers_.resize(buf_types_.size());
        // memory of no buffer (a graph::context's, the user's) is host memory: it counts as
        // the host buffer type of the lowest-priority backend that has one
        for (std::size_t i = backends_.size(); i-- > 0 && !host_buft_;)
            if (const any_buffer_type bt = devices_[i].buffer_type(); bt && bt.is_host()) host_buft_ = bt;
    }

    std::size_t n_backends() const noexcept { return backends_.size(); }
    const any_backend& get_backend(std::size_t i) const { return backends_.at(i); }
    void set_eval_callback(eval_callback cb) { eval_ = std::move(cb); }

    // Pins t to backend b (never overwritten by the passes).
    void set_tensor_backend(const node* t, const any_backend& b) {
        user_[t] = index_of(b);
        allocated_ = nullptr;
    }
    // The backend t was assigned to in the last split (empty when it was not).
    any_backend tensor_backend(const node* t) const {
        const auto it = assigned_.find(t);
        return it == assigned_.end() ? any_backend() : backends_[static_cast<std::size_t>(it->second)];
    }
    int n_splits() const noexcept { return static_cast<int>(splits_.size()); }
    const std::vector<split>& splits() const noexcept { return splits_; }
    // Copy sets of the split inputs (pipeline parallelism; 1 = none).
    int n_copies() const noexcept { return n_copies_; }
    // The copy set the next compute uses.
    int current_copy() const noexcept { return cur_copy_; }
    // Tensors copied to a split's backend in the last split (per copy set).
    int n_input_copies() const noexcept { return static_cast<int>(copy_src_.size()) / n_copies_; }
    // Bytes of compute buffer held for backend i.
    std::size_t buffer_size(std::size_t i) const {
        const any_buffer& b = buffers_.at(static_cast<std::size_t>(buf_id_.at(i)));
        return b ? b.size() : 0;
    }
    // How many times a compute buffer had to be re-allocated because a graph outgrew it.
    std::size_t n_reallocs() const noexcept { return reallocs_; }

    // Forgets assignments and allocations (user assignments too). The copy set rotation
    // goes on (as ggml's), so a caller that builds a new graph per batch (llama's
    // micro-batches) still pipelines; the next graph's copies may then lie where the
    // previous graph's tensors did, which is safe because every stream runs its commands
    // (copies included) in order: CPU, Vulkan, MPI.
    void reset() {
        user_.clear();
        assigned_.clear();
        splits_.clear();
        copy_src_.clear();
        redirects_.clear();
        allocated_ = nullptr;
    }

    // Sizes the compute buffers for a worst-case graph, so that smaller graphs
    // allocate without re-allocating.
    void reserve(const graph::cgraph& worst) {
        alloc_graph(worst);
        unbind(worst);
        allocated_ = nullptr;
    }

    // Assigns and splits g (pass 1 to 5 above) without allocating.
    void split_graph(const graph::cgraph& g) {
        assigned_.clear();
        splits_.clear();
        copy_src_.clear();
        redirects_.clear();
        copies_ = std::make_unique<graph::context>(graph::context_options{true, 64, std::size_t{1} << 20});
        assign(g);
        make_splits(g);
    }

    // Splits g and places every tensor without memory in the compute buffers.
    void alloc_graph(const graph::cgraph& g) {
        unbind(g);
        split_graph(g);
        allocate(g);
        allocated_ = &g;
        allocated_nodes_ = g.n_nodes();
    }

    // Computes g (allocating it first unless alloc_graph(g) was the last allocation)
    // and waits for every backend.
    void graph_compute(const graph::cgraph& g) {
        graph_compute_async(g);
        synchronize();
    }

    // Queues g's splits and returns without waiting for the last ones; the next call
    // uses the next copy set. The backends must have taken what they need from the
    // nodes when their graph_compute_async returns (the user's graph is restored then).
    void graph_compute_async(const graph::cgraph& g) {
        if (allocated_ != &g || allocated_nodes_ != g.n_nodes()) alloc_graph(g);
        const auto cur = static_cast<std::size_t>(cur_copy_);
        struct restore {
            scheduler* s;
            ~restore() {
                for (auto it = s->redirects_.rbegin(); it != s->redirects_.rend(); ++it) it->n->src[it->slot] = it->orig;
            }
        } guard{this};
        for (const redirect& r : redirects_) r.n->src[r.slot] = r.copies[cur];
        for (const split& sp : splits_) {
            const auto b = static_cast<std::size_t>(sp.backend);
            any_backend& be = backends_[b];
            // copy set cur on this backend may still be read by an earlier compute
            if (n_copies_ > 1 && !sp.inputs.empty()) wait_for(b, cur);
            for (const split_input& in : sp.inputs) {
                // a copy the stream orders after the producer's queued work itself (MPI
                // streams: both ranks run rank 0's commands in order) needs no host wait
                const int from = location_backend(*in.src);
                const bool cross = from >= 0 && from != sp.backend;
                const bool ordered = cross && be.ordered_copy_from(backends_[static_cast<std::size_t>(from)]);
                if (cross && !ordered) wait_for(static_cast<std::size_t>(from), cur);
                node& copy = *in.copies[cur];
                if (!be.cpy_tensor_async(*in.src, copy)) {
                    if (ordered) wait_for(static_cast<std::size_t>(from), cur);  // the fallback reads on the host
                    tensor_copy(*in.src, copy);
                }
            }
            if (!eval_) {
                be.graph_compute_async(graph_view(std::span<node* const>(sp.nodes)));
            } else {
                std::size_t start = 0;
                for (std::size_t j = 0; j < sp.nodes.size(); ++j) {
                    if (!eval_(*sp.nodes[j], true)) continue;
                    be.graph_compute_async(graph_view(std::span<node* const>(sp.nodes.data() + start, j + 1 - start)));
                    be.synchronize();
                    start = j + 1;
                    if (!eval_(*sp.nodes[j], false)) {
                        synchronize();
                        cur_copy_ = (cur_copy_ + 1) % n_copies_;
                        return;
                    }
                }
                if (start < sp.nodes.size())
                    be.graph_compute_async(graph_view(std::span<node* const>(sp.nodes.data() + start, sp.nodes.size() - start)));
            }
            if (events_[b][cur]) events_[b][cur].record(be);
        }
        cur_copy_ = (cur_copy_ + 1) % n_copies_;
    }

    void synchronize() {
        for (auto& b : backends_) b.synchronize();
    }
    // Waits for every backend and drops their errors (for a caller already failing).
    void synchronize_quietly() noexcept {
        for (auto& b : backends_) try {
                b.synchronize();
            } catch (...) {
            }
    }

    // One line per split: backend, node range, inputs.
    std::string print() const {
        std::string s;
        for (std::size_t i = 0; i < splits_.size(); ++i) {
            const split& sp = splits_[i];
            s += "split " + std::to_string(i) + ": " + std::string(backends_[static_cast<std::size_t>(sp.backend)].name()) + ", " +
                 std::to_string(sp.nodes.size()) + " nodes";
            if (!sp.inputs.empty()) {
                s += ", inputs:";
                for (const auto& in : sp.inputs) s += " " + in.copies[0]->name;
            }
            s += "\n";
        }
        return s;
    }

private:
    struct redirect {
        node* n;
        std::size_t slot;
        node* orig;
        std::array<node*, max_copies> copies;
    };

    // Waits until the work of backend b recorded for copy set c is done (the whole
    // backend when its device has no events).
    void wait_for(std::size_t b, std::size_t c) {
        if (events_[b][c]) events_[b][c].synchronize();
        else backends_[b].synchronize();
    }
    // A graph input the user writes before each compute (gets copy sets when pipelining).
    static bool is_graph_input(const node& t) noexcept {
        return t.op == graph::op_kind::none && (t.flags & graph::flag_input) && !t.view_src;
    }

    static bool is_view_op(const node& n) noexcept { return graph::op_is_view(n.op); }
    static const node& root(const node& t) noexcept { return t.view_src ? *t.view_src : t; }

    int index_of(const any_backend& b) const {
        for (std::size_t i = 0; i < backends_.size(); ++i)
            if (backends_[i] == b) return static_cast<int>(i);
        fail(errc::invalid_argument, "scheduler: backend " + std::string(b ? b.name() : "(empty)") + " is not one of its backends");
    }
    std::string backend_names() const {
        std::string s;
        for (const auto& b : backends_) s += (s.empty() ? "" : ", ") + std::string(b.name());
        return s;
    }
    bool supports(int b, const node& n) const {
        return is_view_op(n) || n.op == graph::op_kind::none || devices_[static_cast<std::size_t>(b)].supports_op(n);
    }
    int assigned(const node* t) const {
        const auto it = assigned_.find(t);
        return it == assigned_.end() ? -1 : it->second;
    }
    // Is t's memory one of this scheduler's compute buffers?
    bool in_compute_buffer(const node& t) const {
        if (!t.data) return false;
        const any_buffer b = buffer_of(t);
        return b && std::find(buffers_.begin(), buffers_.end(), b) != buffers_.end();
    }
    // Tensors bound by an earlier alloc_graph get placed again.
    void unbind(const graph::cgraph& g) {
        for (node* t : g.leafs())
            if (in_compute_buffer(*t)) graph::context::bind(*t, nullptr);
        for (node* t : g.nodes())
            if (!t->is_view() && in_compute_buffer(*t)) graph::context::bind(*t, nullptr);
    }
    // The buffer type holding t's memory: its buffer's, host memory of no buffer counts as
    // host_buft_, and memory still to be planned is that of its root's backend.
    any_buffer_type location(const node& t) const {
        if (t.bytes()) {
            const any_buffer b = buffer_of(t);
            return b ? b.type() : host_buft_;
        }
        const int a = assigned(&root(t));
        return a >= 0 ? bufts_[static_cast<std::size_t>(a)] : any_buffer_type();
    }
    // The backend whose work produces t's memory (for synchronization), or -1.
    int location_backend(const node& t) const {
        const int a = assigned(&root(t));
        return a >= 0 ? a : assigned(&t);
    }
    // First backend that can use buft (and compute op, when given).
    int backend_for(const any_buffer_type& bt, const node* op) const {
        for (std::size_t i = 0; i < backends_.size(); ++i)
            if (devices_[i].supports_buft(bt) && (!op || supports(static_cast<int>(i), *op))) return static_cast<int>(i);
        return -1;
    }

    void assign(const graph::cgraph& g) {
        const int last = static_cast<int>(backends_.size()) - 1;
        for (const auto& [t, b] : user_) assigned_[t] = b;
        // pass 1: memory that exists decides
        auto pass1 = [&](node* t, bool is_node) {
            if (assigned(t) >= 0) return;
            if (t->bytes()) {
                const any_buffer buf = buffer_of(*t);
                const any_buffer_type bt = buf ? buf.type() : host_buft_;
                const node* op = is_node && !is_view_op(*t) ? t : nullptr;
                const int b = backend_for(bt, op);
                if (b < 0)
                    fail(errc::invalid_argument,
                         "scheduler: " + detail::tensor_desc(*t) + " lives in " +
                             (buf ? "buffer '" + std::string(buf.name()) + "' of type " + std::string(bt.name()) : std::string("host memory")) +
                             (op ? ", and no backend that can use that memory computes its op " + graph::cgraph::op_label(*t)
                                 : ", which none of the scheduler's backends (" + backend_names() + ") can use"));
                assigned_[t] = b;
                return;
            }
            if (!is_node) {
                if (t->flags & graph::flag_input) assigned_[t] = last;
                return;
            }
            if (t->op == graph::op_kind::rope || is_view_op(*t)) return;
            for (const node* s : t->src) {
                if (!s || !s->bytes()) continue;
                const any_buffer buf = buffer_of(*s);
                if (!buf || buf.usage() != buffer_usage::weights) continue;
                const int b = backend_for(buf.type(), nullptr);
                if (b < 0) continue;
                if (b == last && buf.is_host()) {  // op offload: a faster backend may take it
                    for (int i = 0; i < last; ++i)
                        if (devices_[static_cast<std::size_t>(i)].offload_op(*t) && supports(i, *t)) {
                            assigned_[t] = i;
                            return;
                        }
                }
                if (supports(b, *t)) {
                    assigned_[t] = b;
                    return;
                }
            }
        };
        for (node* t : g.leafs()) pass1(t, false);
        for (node* t : g.nodes()) pass1(t, true);

        // pass 2: spread to neighbours
        const auto& nodes = g.nodes();
        auto expand = [&](bool down, bool include_last) {
            int cur = -1;
            const std::size_t n = nodes.size();
            for (std::size_t k = 0; k < n; ++k) {
                node* t = nodes[down ? k : n - 1 - k];
                if (is_view_op(*t)) continue;
                const int a = assigned(t);
                if (a >= 0) cur = (a == last && !include_last) ? -1 : a;
                else if (cur >= 0 && supports(cur, *t)) assigned_[t] = cur;
            }
        };
        expand(true, false);
        expand(false, false);
        expand(true, true);
        expand(false, true);

        // pass 3: the supporting backend that reads the most sources in place
        for (node* t : nodes) {
            if (assigned(t) >= 0 || is_view_op(*t)) continue;
            int best = -1, best_n = -1;
            for (int b = 0; b <= last; ++b) {
                if (!supports(b, *t)) continue;
                int n_ok = 0;
                for (const node* s : t->src)
                    if (s) {
                        const any_buffer_type bt = location(*s);
                        if (bt && devices_[static_cast<std::size_t>(b)].supports_buft(bt)) ++n_ok;
                    }
                if (n_ok > best_n) best = b, best_n = n_ok;
            }
            if (best >= 0) assigned_[t] = best;
        }

        // pass 4: views follow their source, leafs their consumer; nothing left over
        for (node* t : nodes) {
            if (assigned(t) < 0 && is_view_op(*t)) {
                int a = assigned(&root(*t));
                if (a < 0 && t->src[0]) a = assigned(t->src[0]);
                assigned_[t] = a >= 0 ? a : last;
            }
            if (assigned(t) < 0) {
                std::string why;
                for (std::size_t b = 0; b < backends_.size(); ++b)
                    why += (b ? ", " : "") + std::string(backends_[b].name());
                fail(errc::unsupported, "scheduler: node '" + t->name + "' (" + graph::cgraph::op_label(*t) + " " +
                                            t->lay.to_string() + ") is supported by none of the backends (" + why + ")");
            }
            for (node* s : t->src)
                if (s && assigned(s) < 0 && !s->bytes() && s->op == graph::op_kind::none) assigned_[s] = assigned(t);
        }
        for (node* t : g.leafs())
            if (assigned(t) < 0) assigned_[t] = last;
    }

    void make_splits(const graph::cgraph& g) {
        std::unordered_map<const node*, std::vector<std::array<node*, max_copies>>> copy_of;  // source -> copies per buffer
        for (node* t : g.nodes()) {
            int b = assigned(t);
            if (is_view_op(*t) && !splits_.empty()) b = splits_.back().backend;  // views do not cut splits
            if (splits_.empty() || splits_.back().backend != b) splits_.push_back(split{b, {}, {}});
            split& sp = splits_.back();
            sp.nodes.push_back(t);
            if (is_view_op(*t)) continue;
            const any_device& dev = devices_[static_cast<std::size_t>(b)];
            for (std::size_t k = 0; k < static_cast<std::size_t>(graph::max_src); ++k) {
                node* s = t->src[k];
                if (!s) continue;
                const any_buffer_type bt = location(*s);
                if (bt && dev.supports_buft(bt) && !(n_copies_ > 1 && is_graph_input(*s))) continue;
                auto& per = copy_of[s];
                if (per.empty()) per.resize(backends_.size());
                std::array<node*, max_copies>& c = per[static_cast<std::size_t>(buf_id_[static_cast<std::size_t>(b)])];
                if (!c[0]) {
                    for (int ci = 0; ci < n_copies_; ++ci) {
                        node* cp = copies_->new_tensor(s->lay.type, s->lay.ne, std::string(backends_[static_cast<std::size_t>(b)].name()) +
                                                                                   "#" + s->name + "#" + std::to_string(ci));
                        cp->lay = s->lay;
                        cp->flags = graph::flag_input;
                        assigned_[cp] = b;
                        copy_src_[cp] = s;
                        c[static_cast<std::size_t>(ci)] = cp;
                    }
                    sp.inputs.push_back(split_input{s, c});
                }
                redirects_.push_back({t, k, s, c});
            }
        }
    }

    void allocate(const graph::cgraph& g) {
        // the planning order: leafs, then per split its input copies and its nodes
        std::vector<node*> order;
        std::unordered_map<const node*, int> index;
        auto add = [&](node* t) {
            index[t] = static_cast<int>(order.size());
            order.push_back(t);
        };
        for (node* t : g.leafs()) add(t);
        for (const split& sp : splits_) {
            for (const auto& in : sp.inputs)
                for (int c = 0; c < n_copies_; ++c) add(in.copies[static_cast<std::size_t>(c)]);
            for (node* t : sp.nodes)
                if (!index.count(t)) add(t);
        }
        std::unordered_map<const node*, std::vector<std::pair<std::size_t, node*>>> redirected;
        for (const redirect& r : redirects_) redirected[r.n].emplace_back(r.slot, r.copies[0]);

        std::vector<memory::tensor_desc> descs(order.size());
        for (std::size_t i = 0; i < order.size(); ++i) {
            node* t = order[i];
            memory::tensor_desc& d = descs[i];
            if (copy_src_.count(t)) {  // a copy: written when its split starts, keeps its source alive
                d.size = t->lay.nbytes();
                if (n_copies_ > 1) d.flags = memory::tensor_flags::input;  // pipelining: never reused
                d.n_srcs = 1;
                const auto it = index.find(copy_src_[t]);
                d.srcs[0] = it != index.end() ? it->second : -1;
                if (d.srcs[0] < 0 || d.srcs[0] >= static_cast<int>(i)) d.n_srcs = 0;
            } else {  // what the graph layer describes, read through the redirected sources
                std::array<node*, graph::max_src> srcs = t->src;
                if (auto it = redirected.find(t); it != redirected.end())
                    for (const auto& [slot, c] : it->second) srcs[slot] = c;
                d = graph::describe(*t, static_cast<int>(i), index, srcs);
            }
            d.buffer_id = buf_id_[static_cast<std::size_t>(std::max(0, assigned(t)))];
        }
        std::vector<std::size_t> aligns;
        for (const auto& bt : buf_types_) aligns.push_back(bt.alignment());
        const memory::plan p = memory::plan_graph(std::span<const memory::tensor_desc>(descs), std::span<const std::size_t>(aligns));
        for (std::size_t b = 0; b < buf_types_.size(); ++b) {
            const std::size_t need = p.buffers[b].peak;
            if (!buffers_[b] || buffers_[b].size() < need) {
                if (buffers_[b]) {
                    ++reallocs_;
                    synchronize();  // queued work may still use the old buffer
                }
                buffers_[b] = any_buffer();
                try {
                    buffers_[b] = buf_types_[b].alloc_buffer(need);
                } catch (const error& e) {
                    if (e.code() != errc::out_of_memory) throw;
                    fail(errc::out_of_memory, "scheduler: the compute buffer of " + std::string(buf_types_[b].name()) +
                                                  " for a graph of " + std::to_string(order.size()) + " tensors needs " +
                                                  bytes_str(need) + " (" + e.what() +
                                                  "); try a smaller batch or context");
                }
                buffers_[b].set_usage(buffer_usage::compute);
            }
        }
        for (std::size_t i = 0; i < order.size(); ++i) {
            node* t = order[i];
            if (p.buffer[i] < 0 || t->is_view() || t->data) continue;
            const any_buffer& buf = buffers_[static_cast<std::size_t>(p.buffer[i])];
            tensor_alloc(buf, *t, buf.base() + p.offset[i]);
        }
    }

    std::vector<any_backend> backends_;
    std::vector<any_device> devices_;
    std::vector<any_buffer_type> bufts_;      // per backend
    any_buffer_type host_buft_;               // what memory of no buffer counts as (may be empty)
    std::vector<int> buf_id_;                 // per backend: its planner buffer
    std::vector<any_buffer_type> buf_types_;  // per planner buffer
    std::vector<any_buffer> buffers_;         // per planner buffer
    std::vector<std::vector<any_event>> events_;  // per backend, per copy set (empty when its device has none)
    std::unordered_map<const node*, int> user_;
    std::unordered_map<const node*, int> assigned_;
    std::unordered_map<const node*, node*> copy_src_;
    std::vector<split> splits_;
    std::vector<redirect> redirects_;
    std::unique_ptr<graph::context> copies_;
    const graph::cgraph* allocated_ = nullptr;
    std::size_t allocated_nodes_ = 0;
    std::size_t reallocs_ = 0;
    int n_copies_ = 1;
    int cur_copy_ = 0;
    eval_callback eval_;
};

}  // namespace backend
TESSERA_END_NAMESPACE
