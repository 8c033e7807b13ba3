// Choosing the next token from logits: greedy (argmax), or temperature with top-k and
// top-p (nucleus) filtering, drawn with a seeded generator whose stream is the same on
// every platform (std::mt19937_64 bits; the distributions are written here because
// the standard library's differ between implementations).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

struct sampler_params {
    float temp = 0.0f;       // <= 0: greedy
    int top_k = 40;          // <= 0: all tokens
    float top_p = 0.95f;     // >= 1: no nucleus cut
    std::uint64_t seed = 0;
};

// The index of the largest logit (the first one on ties), as ggml's argmax.
inline std::int32_t argmax(std::span<const float> logits) {
    if (logits.empty()) fail(errc::invalid_argument, "argmax: no logits");
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return static_cast<std::int32_t>(best);
}

class sampler {
public:
    explicit sampler(sampler_params p = {}) : p_(p), rng_(p.seed) {
        if (!(p.top_p > 0.0f)) fail(errc::invalid_argument, "sampler: top_p must be > 0");
        if (std::isnan(p.temp)) fail(errc::invalid_argument, "sampler: temperature is NaN");
    }

    const sampler_params& params() const noexcept { return p_; }

    std::int32_t sample(std::span<const float> logits) {
        if (logits.empty()) fail(errc::invalid_argument, "sampler: no logits");
        if (p_.temp <= 0.0f) return argmax(logits);
        // candidates sorted by logit, descending (stable: lower ids first on ties)
        std::vector<std::int32_t> ids(logits.size());
        std::iota(ids.begin(), ids.end(), 0);
        std::size_t k = ids.size();
        if (p_.top_k > 0) k = std::min<std::size_t>(k, static_cast<std::size_t>(p_.top_k));
        const auto cmp = [&](std::int32_t a, std::int32_t b) {
            const float la = logits[static_cast<std::size_t>(a)], lb = logits[static_cast<std::size_t>(b)];
            return la > lb || (la == lb && a < b);
        };
        std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), cmp);
        ids.resize(k);
        // softmax with temperature over the candidates (in double)
        std::vector<double> pr(k);
        const double top = logits[static_cast<std::size_t>(ids[0])];
        double sum = 0;
        for (std::size_t i = 0; i < k; ++i) {
            pr[i] = std::exp((static_cast<double>(logits[static_cast<std::size_t>(ids[i])]) - top) / p_.temp);
            sum += pr[i];
        }
        for (double& v : pr) v /= sum;
        // nucleus: the smallest prefix whose mass reaches top_p
        if (p_.top_p < 1.0f) {
            double acc = 0;
            std::size_t keep = k;
            for (std::size_t i = 0; i < k; ++i) {
                acc += pr[i];
                if (acc >= p_.top_p) {
                    keep = i + 1;
                    break;
                }
            }
            pr.resize(keep);
            ids.resize(keep);
            sum = std::accumulate(pr.begin(), pr.end(), 0.0);
            for (double& v : pr) v /= sum;
        }
        const double u = uniform();
        double acc = 0;
        for (std::size_t i = 0; i < pr.size(); ++i) {
            acc += pr[i];
            if (u < acc) return ids[i];
        }
        return ids.back();
    }

    // A double in [0, 1) from the top 53 bits of the generator.
    double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

private:
    sampler_params p_;
    std::mt19937_64 rng_;
};

}  // namespace models
TESSERA_END_NAMESPACE
