// trainer: a model's static training graph (ggml-opt's ggml_opt_context).
//
// Given the model's input and output tensors in a no_alloc context (its trainable tensors
// flagged with set_param()), the trainer builds once:
//
//   labels (an input of the outputs' shape), loss (cross-entropy of the outputs as logits,
//   or mean squared error), predictions (argmax of each output row), the gradients of the
//   loss for every parameter (graph/autodiff.hpp), and one optimizer step per parameter
//   (AdamW or SGD, graph/ops/optimizer.hpp),
//
// in one graph whose node list is forward | backward | optimizer, so a forward pass, a
// gradient pass and a full step are prefixes of it. It places the parameters that have no
// memory, the optimizer's moments and the gradient accumulators in CPU backend buffers,
// everything else in one planned compute buffer, and makes the compute plans; a step
// then only copies the step's hyper-parameters in and runs the executor, allocating
// nothing.
//
// Gradient accumulation: with accumulation = k, step() adds each micro-batch's gradients
// into the accumulators (the seed is loss_scale / k, so the sum is the mean over the
// window) and every k-th call runs the optimizer and zeroes them. Loss scaling: the seed is
// multiplied by loss_scale and the gradients divided by it before the optimizer reads them.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tessera/backend/cpu.hpp"
#include "tessera/backend/utils.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/allocate.hpp"
#include "tessera/graph/autodiff.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/graph/ops.hpp"
#include "tessera/opt/optimizer.hpp"

TESSERA_BEGIN_NAMESPACE
namespace opt {

enum class loss_kind : std::uint8_t { cross_entropy, mean_squared_error };

// Loss and accuracy over the batches of an epoch (ggml_opt_result).
class result {
public:
    // Room for n batches of b datapoints, so adding them allocates nothing.
    void reserve(std::int64_t n_batches, std::int64_t batch) {
        losses_.reserve(static_cast<std::size_t>(n_batches));
        pred_.reserve(static_cast<std::size_t>(n_batches * batch));
    }
    void clear() noexcept {
        losses_.clear();
        pred_.clear();
        ndata_ = ncorrect_ = 0;
    }
    // One batch: its mean loss, and per datapoint the prediction and whether it was right
    // (has_accuracy false: a regression loss). A NaN loss is left out of the mean (a padded
    // partial batch).
    void add_batch(float loss, std::span<const std::int32_t> pred, std::int64_t n_correct, bool has_accuracy) {
        if (!std::isnan(loss)) losses_.push_back(loss);
        pred_.insert(pred_.end(), pred.begin(), pred.end());
        ndata_ += static_cast<std::int64_t>(pred.size());
        ncorrect_ += n_correct;
        has_acc_ = has_accuracy;
    }

    std::int64_t ndata() const noexcept { return ndata_; }
    std::int64_t n_batches() const noexcept { return static_cast<std::int64_t>(losses_.size()); }
    std::int64_t ncorrect() const noexcept { return ncorrect_; }
    const std::vector<std::int32_t>& predictions() const noexcept { return pred_; }
    const std::vector<float>& batch_losses() const noexcept { return losses_; }

    // Mean batch loss and its standard error (0 for one batch).
    std::pair<double, double> loss() const {
        const auto n = static_cast<double>(losses_.size());
        if (losses_.empty()) return {std::nan(""), std::nan("")};
        double s = 0, s2 = 0;
        for (float l : losses_) s += l, s2 += static_cast<double>(l) * l;
        const double mean = s / n;
        if (losses_.size() < 2) return {mean, 0.0};
        const double var = std::max(0.0, (s2 / n - mean * mean) * n / (n - 1));
        return {mean, std::sqrt(var / n)};
    }
    // Fraction right and its standard error (binomial); NaN without labels to compare with.
    std::pair<double, double> accuracy() const {
        if (!has_acc_ || ndata_ == 0) return {std::nan(""), std::nan("")};
        const double a = static_cast<double>(ncorrect_) / static_cast<double>(ndata_);
        return {a, ndata_ > 1 ? std::sqrt(a * (1 - a) / static_cast<double>(ndata_ - 1)) : 0.0};
    }

private:
    std::vector<float> losses_;
    std::vector<std::int32_t> pred_;
    std::int64_t ndata_ = 0, ncorrect_ = 0;
    bool has_acc_ = false;
};

struct trainer_options {
    loss_kind loss = loss_kind::cross_entropy;
    optimizer_params optimizer{};
    std::int64_t accumulation = 1;  // micro-batches per optimizer step
    float loss_scale = 1.0f;        // the seed of the backward pass; gradients are divided by it again
    int n_threads = 1;
    std::int64_t total_steps = 0;   // optimizer steps the schedule spans (fit sets it; 0: unknown, schedule sees 0)
};

class trainer {
public:
    // ctx: the no_alloc context of the model; inputs: f32, the batch in its last used dim
    // (datapoints of inputs.ne(0..d-1)); outputs: f32 [n_out, B] (logits for cross-entropy).
    trainer(graph::context& ctx, graph::any_tensor inputs, graph::any_tensor outputs, trainer_options o = {})
        : opt_(std::move(o)), ex_(opt_.n_threads) {
        using namespace graph;
        opt_.optimizer.validate();
        if (ctx.allocates()) fail(errc::invalid_argument, "trainer: the model's context must be made with no_alloc (the trainer places its tensors)");
        if (opt_.accumulation < 1) fail_cat(errc::invalid_argument, "trainer: accumulation ", opt_.accumulation, " must be >= 1");
        if (!(opt_.loss_scale > 0.0f) || !std::isfinite(opt_.loss_scale))
            fail(errc::invalid_argument, "trainer: loss_scale must be finite and > 0");
        if (!inputs || inputs.type() != type_id::f32) fail(errc::invalid_argument, "trainer: the inputs must be an f32 tensor");
        if (!outputs || outputs.type() != type_id::f32 || outputs.ne(2) != 1 || outputs.ne(3) != 1)
            fail(errc::invalid_argument, "trainer: the outputs must be an f32 matrix [n_out, batch]");
        const int bd = std::max(1, inputs.n_dims()) - 1;
        batch_ = inputs.ne(bd);
        if (outputs.ne(1) != batch_)
            fail_cat(errc::shape_mismatch, "trainer: the outputs ", outputs.lay().to_string(), " do not hold one row per datapoint of the inputs ",
                     inputs.lay().to_string(), " (batch ", batch_, " in dim ", bd, ")");
        inputs_ = inputs.get();
        outputs_ = outputs.get();
        // inputs and labels are written before a compute and read after it (accuracy); flagged
        // outputs too, the planner never gives their memory to another tensor
        inputs_->flags |= flag_input | flag_output;

        labels_ = ctx.new_tensor(type_id::f32, outputs_->lay.ne, "labels");
        labels_->flags |= flag_input | flag_output;
        any_tensor out(outputs_), lab(labels_);
        if (opt_.loss == loss_kind::cross_entropy) {
            loss_ = cross_entropy_loss(out, lab).get();
        } else {
            loss_ = scale(sum(sqr(sub(out, lab))), 1.0f / static_cast<float>(outputs_->lay.nelements())).get();
        }
        loss_->name = "loss";
        loss_->flags |= flag_loss | flag_output;
        pred_ = argmax(out).get();
        pred_->name = "predictions";
        pred_->flags |= flag_output;

        g_.build_forward_expand(any_tensor(loss_));
        g_.build_forward_expand(any_tensor(pred_));
        n_forward_ = g_.n_nodes();
        grads_ = build_backward(g_, {.accumulate = opt_.accumulation > 1});
        n_backward_ = g_.n_nodes();

        // optimizer steps
        const bool adamw = opt_.optimizer.kind == optimizer_kind::adamw;
        hparams_ = ctx.new_tensor(type_id::f32, {adamw ? 7 : 2, 1, 1, 1}, "optimizer params");
        hparams_->flags |= flag_input | flag_output;
        std::vector<node*> state;
        for (node* p : grads_.params()) {
            if (p->lay.type != type_id::f32)
                fail_cat(errc::unsupported, "trainer: parameter '", p->name, "' is ", type_name(p->lay.type), "; the optimizer steps f32 parameters");
            params_.push_back(p);
            node* gr = grads_.of(p);
            if (opt_.loss_scale != 1.0f) gr = scale(any_tensor(gr), 1.0f / opt_.loss_scale).get();
            node* stepped;
            if (adamw) {
                node* m = ctx.new_tensor(type_id::f32, p->lay.ne, "adamw m " + p->name);
                node* v = ctx.new_tensor(type_id::f32, p->lay.ne, "adamw v " + p->name);
                state.push_back(m);
                state.push_back(v);
                stepped = opt_step_adamw(any_tensor(p), any_tensor(gr), any_tensor(m), any_tensor(v), any_tensor(hparams_)).get();
            } else {
                stepped = opt_step_sgd(any_tensor(p), any_tensor(gr), any_tensor(hparams_)).get();
            }
            stepped->flags |= flag_output;
            g_.build_forward_expand(any_tensor(stepped));
        }
        for (node* a : grads_.accumulators()) state.push_back(a);

        // memory: parameters, optimizer state and accumulators in CPU backend buffers that
        // live as long as the trainer; the rest in one planned compute buffer
        param_buf_ = backend::alloc_tensors(std::span<node* const>(params_), backend::cpu_buffer_type());
        state_buf_ = backend::alloc_tensors(std::span<node* const>(state), backend::cpu_buffer_type());
        state_ = std::move(state);
        compute_buf_ = graph::allocate(g_);

        make_plans();
        pred_host_.resize(static_cast<std::size_t>(batch_));
        reset_optimizer();
    }
    trainer(const trainer&) = delete;
    trainer& operator=(const trainer&) = delete;

    graph::node* inputs() const noexcept { return inputs_; }
    graph::node* outputs() const noexcept { return outputs_; }
    graph::node* labels() const noexcept { return labels_; }
    graph::node* loss() const noexcept { return loss_; }
    graph::node* predictions() const noexcept { return pred_; }
    const std::vector<graph::node*>& params() const noexcept { return params_; }
    const graph::gradients& grads() const noexcept { return grads_; }
    const graph::cgraph& graph() const noexcept { return g_; }
    const trainer_options& options() const noexcept { return opt_; }
    std::int64_t batch_size() const noexcept { return batch_; }
    std::int64_t iteration() const noexcept { return iter_; }  // optimizer steps done
    std::int64_t n_forward_nodes() const noexcept { return static_cast<std::int64_t>(n_forward_); }
    std::int64_t n_backward_nodes() const noexcept { return static_cast<std::int64_t>(n_backward_); }
    void set_total_steps(std::int64_t n) noexcept { opt_.total_steps = n; }
    void set_n_threads(int n) {
        ex_.set_n_threads(n);
        make_plans();
    }

    // Zeroes the moments and accumulators and restarts the iteration count (the learning
    // rate schedule and the bias corrections start again).
    void reset_optimizer() {
        for (graph::node* s : state_) std::memset(s->bytes(), 0, s->lay.nbytes());
        grads_.reset(opt_.loss_scale / static_cast<float>(opt_.accumulation));
        iter_ = 0;
        micro_ = 0;
    }

    // The batch in inputs() and labels(): the loss and predictions only.
    void forward(result* r = nullptr) {
        ex_.run(std::span<graph::node* const>(g_.nodes().data(), n_forward_), plan_f_);
        if (r) record(*r, batch_);
    }
    // The batch in inputs() and labels(): forward, gradients, and every accumulation-th call
    // the optimizer step. Returns whether the parameters changed.
    bool step(result* r = nullptr) {
        const bool update = micro_ + 1 == opt_.accumulation;
        if (update) {
            const std::int64_t t = iter_ + 1;
            if (opt_.optimizer.kind == optimizer_kind::adamw) {
                const auto v = opt_.optimizer.adamw_values(t, opt_.total_steps);
                std::memcpy(hparams_->bytes(), v.data(), sizeof v);
            } else {
                const auto v = opt_.optimizer.sgd_values(t, opt_.total_steps);
                std::memcpy(hparams_->bytes(), v.data(), sizeof v);
            }
            ex_.run(std::span<graph::node* const>(g_.nodes()), plan_all_);
            for (graph::node* a : grads_.accumulators()) std::memset(a->bytes(), 0, a->lay.nbytes());
            iter_ = t;
            micro_ = 0;
        } else {
            ex_.run(std::span<graph::node* const>(g_.nodes().data(), n_backward_), plan_b_);
            ++micro_;
        }
        if (r) record(*r, batch_);
        return update;
    }

    // Adds the last computed batch to r, counting only its first n datapoints (a partial
    // last batch): predictions, correct ones (cross-entropy), the loss.
    void record(result& r, std::int64_t n) {
        float l;
        std::memcpy(&l, loss_->bytes(), sizeof l);
        std::memcpy(pred_host_.data(), pred_->bytes(), static_cast<std::size_t>(batch_) * 4);
        std::int64_t correct = 0;
        const bool acc = opt_.loss == loss_kind::cross_entropy;
        if (acc) {
            const auto* lab = reinterpret_cast<const float*>(labels_->bytes());
            const std::int64_t k = labels_->lay.ne[0];
            for (std::int64_t i = 0; i < n; ++i) {
                std::int64_t best = 0;
                for (std::int64_t j = 1; j < k; ++j)
                    if (lab[i * k + j] > lab[i * k + best]) best = j;
                correct += pred_host_[static_cast<std::size_t>(i)] == best;
            }
        }
        r.add_batch(l, std::span<const std::int32_t>(pred_host_.data(), static_cast<std::size_t>(n)), correct, acc);
    }

private:
    // The executor's plans of the three prefixes (forward, + backward, + optimizer).
    void make_plans() {
        const auto& nodes = g_.nodes();
        plan_f_ = ex_.plan(std::span<graph::node* const>(nodes.data(), n_forward_));
        plan_b_ = ex_.plan(std::span<graph::node* const>(nodes.data(), n_backward_));
        plan_all_ = ex_.plan(std::span<graph::node* const>(nodes));
    }

    trainer_options opt_;
    backend::cpu::executor ex_;
    graph::cgraph g_;
    graph::gradients grads_;
    graph::node *inputs_ = nullptr, *outputs_ = nullptr, *labels_ = nullptr, *loss_ = nullptr, *pred_ = nullptr, *hparams_ = nullptr;
    std::vector<graph::node*> params_, state_;
    backend::any_buffer param_buf_, state_buf_;
    graph::graph_buffer compute_buf_;
    backend::cpu::compute_plan plan_f_, plan_b_, plan_all_;
    std::size_t n_forward_ = 0, n_backward_ = 0;
    std::int64_t batch_ = 0, iter_ = 0, micro_ = 0;
    std::vector<std::int32_t> pred_host_;
};

}  // namespace opt
TESSERA_END_NAMESPACE
