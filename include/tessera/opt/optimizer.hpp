// Optimizer settings (ggml-opt's ggml_opt_optimizer_params): AdamW or SGD, the learning
// rate with an optional schedule, and the per-iteration values the optimizer-step ops
// read (graph/ops/optimizer.hpp). The library computes AdamW's bias corrections from the
// iteration number, so a caller never has to:
//
//   beta1h = 1 / (1 - beta1^t),  beta2h = 1 / (1 - beta2^t)     (t = 1, 2, ... optimizer steps)
//
// A schedule maps (step, total steps) to a factor on the learning rate; constant when
// empty. linear_decay and cosine_decay (both with an optional linear warm-up) are here.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace opt {

enum class optimizer_kind : std::uint8_t { adamw, sgd };

constexpr std::string_view optimizer_name(optimizer_kind k) noexcept { return k == optimizer_kind::adamw ? "adamw" : "sgd"; }

// Factor on the learning rate at optimizer step `step` (0-based) of `total`.
using lr_schedule = std::function<double(std::int64_t step, std::int64_t total)>;

struct optimizer_params {
    optimizer_kind kind = optimizer_kind::adamw;
    float lr = 1e-3f;      // alpha
    float beta1 = 0.9f;    // AdamW only
    float beta2 = 0.999f;  // AdamW only
    float eps = 1e-8f;     // AdamW only
    float wd = 0.0f;       // decoupled weight decay: p *= 1 - lr * wd before the update
    lr_schedule schedule;  // empty: constant

    // Throws naming the first value out of range.
    void validate() const {
        auto bad = [](const char* what, double v, const char* range) {
            fail_cat(errc::invalid_argument, "optimizer: ", what, " = ", std::to_string(v), " is outside ", range);
        };
        if (!(lr >= 0.0f) || !std::isfinite(lr)) bad("lr", lr, "[0, inf)");
        if (!(wd >= 0.0f) || !std::isfinite(wd)) bad("wd", wd, "[0, inf)");
        if (kind == optimizer_kind::adamw) {
            if (!(beta1 >= 0.0f && beta1 < 1.0f)) bad("beta1", beta1, "[0, 1)");
            if (!(beta2 >= 0.0f && beta2 < 1.0f)) bad("beta2", beta2, "[0, 1)");
            if (!(eps > 0.0f) || !std::isfinite(eps)) bad("eps", eps, "(0, inf)");
        }
    }

    // The learning rate at optimizer step `step` (0-based) of `total`.
    double lr_at(std::int64_t step, std::int64_t total) const {
        const double f = schedule ? schedule(step, total) : 1.0;
        if (!std::isfinite(f) || f < 0)
            fail_cat(errc::invalid_argument, "optimizer: the schedule gave ", std::to_string(f), " at step ", step, " (must be finite and >= 0)");
        return static_cast<double>(lr) * f;
    }

    // opt_step_adamw's parameter vector for optimizer step t (1-based) of total:
    // {alpha, beta1, beta2, eps, wd, beta1h, beta2h}.
    std::array<float, 7> adamw_values(std::int64_t t, std::int64_t total) const {
        if (t < 1) fail_cat(errc::invalid_argument, "optimizer: iteration ", t, " (AdamW counts from 1)");
        const double b1h = 1.0 / (1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t)));
        const double b2h = 1.0 / (1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t)));
        return {static_cast<float>(lr_at(t - 1, total)), beta1, beta2, eps, wd, static_cast<float>(b1h), static_cast<float>(b2h)};
    }
    // opt_step_sgd's parameter vector for optimizer step t (1-based): {alpha, wd}.
    std::array<float, 2> sgd_values(std::int64_t t, std::int64_t total) const {
        if (t < 1) fail_cat(errc::invalid_argument, "optimizer: iteration ", t, " (counts from 1)");
        return {static_cast<float>(lr_at(t - 1, total)), wd};
    }
};

// Linear warm-up over `warmup` steps (factor 0 -> 1), then a linear decay to `final_factor`
// at the last step.
inline lr_schedule linear_decay(double final_factor, std::int64_t warmup = 0) {
    return [final_factor, warmup](std::int64_t step, std::int64_t total) {
        if (step < warmup) return static_cast<double>(step + 1) / static_cast<double>(warmup);
        const std::int64_t n = total - warmup;
        if (n <= 1) return 1.0;
        const double x = static_cast<double>(step - warmup) / static_cast<double>(n - 1);
        return 1.0 + (final_factor - 1.0) * std::min(1.0, x);
    };
}
// Linear warm-up, then half a cosine from 1 down to `final_factor`.
inline lr_schedule cosine_decay(double final_factor, std::int64_t warmup = 0) {
    return [final_factor, warmup](std::int64_t step, std::int64_t total) {
        if (step < warmup) return static_cast<double>(step + 1) / static_cast<double>(warmup);
        const std::int64_t n = total - warmup;
        if (n <= 1) return 1.0;
        const double x = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(n - 1));
        return final_factor + (1.0 - final_factor) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * x));
    };
}

}  // namespace opt
TESSERA_END_NAMESPACE
