// fit and evaluate (ggml-opt's ggml_opt_fit / ggml_opt_epoch): epochs of shuffled
// mini-batches over a dataset with a trainer, an optional validation split, a progress
// line per epoch; evaluation of a dataset (loss with its standard error, accuracy,
// predictions) with the forward pass only.
//
//   opt::trainer t(ctx, images, logits, {.optimizer = {.lr = 1e-3f}});
//   opt::fit(t, train, {.epochs = 10, .val_split = 0.05});
//   opt::result r = opt::evaluate(t, test);
//
// The training part of each epoch is the first (1 - val_split) of the datapoints, rounded
// down to whole optimizer steps (batch x accumulation), shuffled with seed + epoch; the rest
// is validated after the epoch. A final partial batch of an evaluation is padded with zeros
// and only its real datapoints are counted (its loss is left out of the mean).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/opt/dataset.hpp"
#include "tessera/opt/trainer.hpp"

TESSERA_BEGIN_NAMESPACE
namespace opt {

struct epoch_report {
    std::int64_t epoch = 0, epochs = 0;  // 1-based
    result train, val;
    double seconds = 0;                  // training part of the epoch
};

struct fit_options {
    std::int64_t epochs = 1;
    double val_split = 0.0;         // fraction of the datapoints (the last ones) kept for validation
    std::uint64_t seed = 0;         // shuffle seed (epoch e uses seed + e)
    bool shuffle = true;
    std::FILE* progress = stderr;   // one line per epoch; null: silent
    std::function<void(const epoch_report&)> on_epoch;
};

namespace detail {
inline void check_fits(const trainer& t, const dataset& d) {
    const auto* in = t.inputs();
    const auto* lab = t.labels();
    if (in->lay.nelements() != t.batch_size() * d.ne_datapoint())
        fail_cat(errc::shape_mismatch, "fit: the model's inputs ", in->lay.to_string(), " are not ", t.batch_size(), " datapoints of ",
                 d.ne_datapoint(), " floats");
    if (lab->lay.nelements() != t.batch_size() * d.ne_label())
        fail_cat(errc::shape_mismatch, "fit: the model's outputs ", lab->lay.to_string(), " are not ", t.batch_size(), " labels of ",
                 d.ne_label(), " floats");
}
inline void print_result(std::FILE* f, const char* what, const result& r) {
    const auto [l, lu] = r.loss();
    const auto [a, au] = r.accuracy();
    std::fprintf(f, "%s loss %.4f ± %.4f", what, l, lu);
    if (!std::isnan(a)) std::fprintf(f, ", accuracy %.2f ± %.2f %%", 100 * a, 100 * au);
}
}  // namespace detail

// The forward pass over datapoints [first, first + count) of d's current order (count < 0:
// to the end).
inline result evaluate(trainer& t, const dataset& d, std::int64_t first = 0, std::int64_t count = -1) {
    detail::check_fits(t, d);
    if (count < 0) count = d.size() - first;
    if (first < 0 || count < 0 || first + count > d.size())
        fail_cat(errc::invalid_argument, "evaluate: datapoints [", first, ", ", first + count, ") outside the dataset's ", d.size());
    const std::int64_t b = t.batch_size();
    result r;
    r.reserve(count / b + 1, b);
    for (std::int64_t s = 0; s < count; s += b) {
        const std::int64_t n = std::min(b, count - s);
        d.get_range(t.inputs(), t.labels(), first + s, n);  // a partial batch is padded with zeros
        t.forward();
        if (n == b) {
            t.record(r, n);
        } else {  // partial: count its datapoints, keep its (padded) loss out of the mean
            result part;
            t.record(part, n);
            r.add_batch(std::nanf(""), part.predictions(), part.ncorrect(), !std::isnan(part.accuracy().first));
        }
    }
    return r;
}

// Trains t on d for o.epochs epochs; returns one report per epoch.
inline std::vector<epoch_report> fit(trainer& t, dataset& d, const fit_options& o) {
    detail::check_fits(t, d);
    if (o.epochs < 1) fail_cat(errc::invalid_argument, "fit: epochs ", o.epochs, " must be >= 1");
    if (!(o.val_split >= 0.0 && o.val_split < 1.0)) fail(errc::invalid_argument, "fit: val_split must be in [0, 1)");
    const std::int64_t b = t.batch_size();
    const std::int64_t logical = b * t.options().accumulation;
    const auto wanted = static_cast<std::int64_t>(static_cast<double>(d.size()) * (1.0 - o.val_split));
    const std::int64_t n_train = wanted / logical * logical;
    if (n_train == 0)
        fail_cat(errc::invalid_argument, "fit: ", wanted, " training datapoints do not make one optimizer step of ", logical,
                 " (batch ", b, " x accumulation ", t.options().accumulation, ")");
    if (logical % d.shard() != 0) fail_cat(errc::invalid_argument, "fit: batch ", logical, " is not whole shards of ", d.shard());
    const std::int64_t n_batches = n_train / b;
    t.set_total_steps(o.epochs * (n_train / logical));
    std::vector<epoch_report> reports;
    for (std::int64_t e = 1; e <= o.epochs; ++e) {
        epoch_report rep;
        rep.epoch = e;
        rep.epochs = o.epochs;
        if (o.shuffle) d.shuffle(o.seed + static_cast<std::uint64_t>(e), n_train);
        rep.train.reserve(n_batches, b);
        const auto t0 = std::chrono::steady_clock::now();
        for (std::int64_t i = 0; i < n_batches; ++i) {
            d.get_batch(t.inputs(), t.labels(), i);
            t.step(&rep.train);
        }
        rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (n_train < d.size()) rep.val = evaluate(t, d, n_train);
        if (o.progress) {
            std::fprintf(o.progress, "epoch %lld/%lld: ", static_cast<long long>(e), static_cast<long long>(o.epochs));
            detail::print_result(o.progress, "train", rep.train);
            if (rep.val.ndata()) {
                std::fprintf(o.progress, "; ");
                detail::print_result(o.progress, "val", rep.val);
            }
            std::fprintf(o.progress, "; %.2f s (%.1f us/datapoint)\n", rep.seconds, 1e6 * rep.seconds / static_cast<double>(n_train));
            std::fflush(o.progress);
        }
        if (o.on_epoch) o.on_epoch(rep);
        reports.push_back(std::move(rep));
    }
    return reports;
}

}  // namespace opt
TESSERA_END_NAMESPACE
