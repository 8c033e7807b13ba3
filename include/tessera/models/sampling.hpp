// Choosing the next token from logits. A sampler is a chain of stages over a candidate
// list (id, logit, p), in llama.cpp's order by default:
//
//   penalties -> top-k -> typical -> top-p -> min-p -> temperature (or dynamic) -> draw
//   penalties -> temperature -> mirostat v1 / v2 (which draws)      with mirostat on
//
// Each stage is also a free function here (apply_top_k, ...) so a caller can compose
// its own; sampler_params::order reorders (or drops) the stages of the first chain.
// The draw uses a seeded generator whose stream is the same on every platform
// (std::mt19937_64 bits; the distributions are written here because the standard
// library's differ between implementations), and the arithmetic is in double, so a seed
// gives the same tokens everywhere.
//
// The definitions are the published ones, as llama.cpp implements them:
//   repeat penalty   (CTRL, Keskar et al. 2019, llama.cpp's variant) a logit of a token in
//                    the last repeat_last_n tokens is divided by the penalty when positive
//                    and multiplied by it otherwise;
//   frequency / presence penalties (OpenAI's) logit -= count * frequency + (count > 0) * presence;
//   top-k            the k largest logits;
//   typical          (Meister et al. 2022, "Locally typical sampling") tokens ordered by
//                    |-log p - H| (H the entropy), the smallest prefix of mass > typical_p;
//   top-p            (Holtzman et al. 2019) the smallest prefix by probability of mass >= top_p;
//   min-p            tokens with p >= min_p * p_max;
//   temperature      logits / temp; temp <= 0 keeps only the largest (greedy);
//   dynamic temperature (llama.cpp's "dynatemp") temp in [temp - range, temp + range]:
//                    min + (max - min) * (H / log n)^exponent, n the candidates left;
//   mirostat v1      (Basu et al. 2021, "Mirostat", algorithm 1) Zipf exponent s from the
//                    m most likely tokens, k = (e 2^mu / (1 - N^-e))^(1/s) with e = s - 1,
//                    top-k, draw, mu -= eta * (-log2 p - tau); mu starts at 2 tau;
//   mirostat v2      (algorithm 2) drop tokens with -log2 p > mu, draw, the same mu update.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace models {

// The stages sampler_params::order can list (mirostat is chosen by sampler_params::mirostat).
enum class sampler_stage : std::uint8_t { penalties, top_k, typical, top_p, min_p, temperature };

inline constexpr std::string_view stage_name(sampler_stage s) noexcept {
    switch (s) {
        case sampler_stage::penalties: return "penalties";
        case sampler_stage::top_k: return "top_k";
        case sampler_stage::typical: return "typical";
        case sampler_stage::top_p: return "top_p";
        case sampler_stage::min_p: return "min_p";
        case sampler_stage::temperature: return "temperature";
    }
    return "?";
}

// llama.cpp's default order (common_params_sampling::samplers without dry, top-n-sigma, xtc).
inline std::vector<sampler_stage> default_sampler_order() {
    return {sampler_stage::penalties, sampler_stage::top_k, sampler_stage::typical,
            sampler_stage::top_p,     sampler_stage::min_p, sampler_stage::temperature};
}

// Every stage is off at its default except top-k and top-p, so {temp, top_k, top_p, seed}
// alone means what it always did (apart from the order: top-p now cuts before the
// temperature, as in llama.cpp).
struct sampler_params {
    float temp = 0.0f;                 // <= 0: greedy (with dynatemp_range 0)
    int top_k = 40;                    // <= 0: all tokens
    float top_p = 0.95f;               // in (0, 1]; >= 1: no nucleus cut
    std::uint64_t seed = 0;
    float min_p = 0.0f;                // in [0, 1]; 0: off (llama.cpp's default is 0.05)
    float typical_p = 1.0f;            // in [0, 1]; 1: off
    float repeat_penalty = 1.0f;       // > 0; 1: off
    int repeat_last_n = 64;            // tokens of history the penalties look at; 0: none, -1: all
    float frequency_penalty = 0.0f;    // per occurrence; 0: off
    float presence_penalty = 0.0f;     // once per token that occurs; 0: off
    float dynatemp_range = 0.0f;       // >= 0; 0: a fixed temperature
    float dynatemp_exponent = 1.0f;    // >= 0
    int mirostat = 0;                  // 0: off, 1: v1, 2: v2
    float mirostat_tau = 5.0f;         // target surprise (bits), >= 0
    float mirostat_eta = 0.1f;         // learning rate, >= 0
    int mirostat_m = 100;              // v1: tokens used to estimate the Zipf exponent, >= 2
    std::vector<sampler_stage> order = default_sampler_order();
};

// The index of the largest logit (the first one on ties), as ggml's argmax.
inline std::int32_t argmax(std::span<const float> logits) {
    if (logits.empty()) fail(errc::invalid_argument, "argmax: no logits");
    std::size_t best = 0;
    for (std::size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return static_cast<std::int32_t>(best);
}

// Throws, naming the token, when a logit is NaN or +inf (-inf masks a token and is fine).
inline void check_logits(std::span<const float> logits) {
    if (logits.empty()) fail(errc::invalid_argument, "sampler: no logits");
    for (std::size_t i = 0; i < logits.size(); ++i) {
        const float l = logits[i];
        if (std::isnan(l) || l == std::numeric_limits<float>::infinity())
            fail_cat(errc::invalid_argument, "sampler: the logit of token ", static_cast<std::int64_t>(i), " is ",
                     std::isnan(l) ? "NaN" : "+inf");
    }
}

// One candidate token. p is meaningful after softmax (the stages that need it run it).
struct token_candidate {
    std::int32_t id;
    double logit;
    double p;
};

// The candidates a chain narrows down. sorted: by logit, descending, ties by id.
struct candidates {
    std::vector<token_candidate> data;
    bool sorted = false;

    // Every token of logits (id = index). NaN or +inf logits are refused by name.
    static candidates from_logits(std::span<const float> logits) {
        check_logits(logits);
        candidates c;
        c.data.reserve(logits.size());
        for (std::size_t i = 0; i < logits.size(); ++i)
            c.data.push_back({static_cast<std::int32_t>(i), static_cast<double>(logits[i]), 0.0});
        return c;
    }
};

namespace detail {
inline bool by_logit(const token_candidate& a, const token_candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}
inline void sort_by_logit(candidates& c) {
    if (!c.sorted) std::sort(c.data.begin(), c.data.end(), by_logit);  // a total order: the same result everywhere
    c.sorted = true;
}
}  // namespace detail

// Sorts by logit and sets p = softmax(logit) (in double).
inline void softmax(candidates& c) {
    if (c.data.empty()) fail(errc::invalid_argument, "sampler: no candidates left");
    detail::sort_by_logit(c);
    const double top = c.data[0].logit;
    if (top == -std::numeric_limits<double>::infinity()) fail(errc::invalid_argument, "sampler: every logit is -inf");
    double sum = 0;
    for (auto& t : c.data) sum += t.p = std::exp(t.logit - top);
    for (auto& t : c.data) t.p /= sum;
}

// Repeat, frequency and presence penalties for the tokens of history (the caller passes
// the last repeat_last_n tokens).
inline void apply_penalties(candidates& c, std::span<const std::int32_t> history, double repeat, double frequency,
                            double presence) {
    if (history.empty() || (repeat == 1.0 && frequency == 0.0 && presence == 0.0)) return;
    std::unordered_map<std::int32_t, int> count;
    for (std::int32_t id : history) ++count[id];
    for (auto& t : c.data) {
        const auto it = count.find(t.id);
        if (it == count.end()) continue;
        t.logit = t.logit <= 0 ? t.logit * repeat : t.logit / repeat;
        t.logit -= it->second * frequency + presence;
    }
    c.sorted = false;
}

// The k largest logits (all for k <= 0), sorted.
inline void apply_top_k(candidates& c, int k) {
    if (k <= 0 || static_cast<std::size_t>(k) >= c.data.size()) {
        detail::sort_by_logit(c);
        return;
    }
    if (!c.sorted) {
        std::partial_sort(c.data.begin(), c.data.begin() + k, c.data.end(), detail::by_logit);
        c.sorted = true;
    }
    c.data.resize(static_cast<std::size_t>(k));
}

// Nucleus: the smallest prefix (by probability) whose mass reaches p; p >= 1 keeps all.
inline void apply_top_p(candidates& c, double p) {
    if (p >= 1.0) return;
    softmax(c);
    double acc = 0;
    for (std::size_t i = 0; i < c.data.size(); ++i) {
        acc += c.data[i].p;
        if (acc >= p) {
            c.data.resize(i + 1);
            return;
        }
    }
}

// Tokens with probability >= p times the largest (compared as logits: l >= l_max + log p).
inline void apply_min_p(candidates& c, double p) {
    if (p <= 0.0) return;
    detail::sort_by_logit(c);
    const double cut = c.data[0].logit + std::log(p);
    std::size_t keep = 1;
    while (keep < c.data.size() && c.data[keep].logit >= cut) ++keep;
    c.data.resize(keep);
}

// Locally typical sampling: the tokens whose surprise -log p is closest to the entropy,
// the smallest such set of mass > p (at least one). Leaves them in that order (unsorted).
inline void apply_typical(candidates& c, double p) {
    if (p >= 1.0) return;
    softmax(c);
    double entropy = 0;
    for (const auto& t : c.data)
        if (t.p > 0) entropy -= t.p * std::log(t.p);
    std::vector<std::pair<double, std::size_t>> order(c.data.size());  // (|surprise - H|, index)
    for (std::size_t i = 0; i < c.data.size(); ++i)
        order[i] = {std::abs(-std::log(c.data[i].p) - entropy), i};
    std::sort(order.begin(), order.end());  // ties by index: by logit, then id
    std::vector<token_candidate> kept;
    double acc = 0;
    for (const auto& [score, i] : order) {
        kept.push_back(c.data[i]);
        acc += c.data[i].p;
        if (acc > p) break;
    }
    c.data = std::move(kept);
    c.sorted = false;
}

// logits / temp; temp <= 0 keeps only the largest logit (greedy).
inline void apply_temperature(candidates& c, double temp) {
    if (temp <= 0) {
        detail::sort_by_logit(c);
        c.data.resize(1);
        return;
    }
    for (auto& t : c.data) t.logit /= temp;
}

// Dynamic temperature: with range > 0, temp - range .. temp + range by the normalized
// entropy of the candidates raised to exponent. Returns the temperature used.
inline double apply_dynamic_temperature(candidates& c, double temp, double range, double exponent) {
    if (range <= 0 || c.data.size() <= 1) {
        apply_temperature(c, temp);
        return temp;
    }
    const double lo = std::max(0.0, temp - range), hi = temp + range;
    softmax(c);
    double entropy = 0;
    for (const auto& t : c.data)
        if (t.p > 0) entropy -= t.p * std::log(t.p);
    const double normalized = entropy / std::log(static_cast<double>(c.data.size()));
    const double t = lo + (hi - lo) * std::pow(normalized, exponent);
    apply_temperature(c, t);
    return t;
}

// The candidate whose cumulative probability first exceeds u in [0, 1) (after softmax).
inline std::size_t draw(const candidates& c, double u) {
    double acc = 0;
    for (std::size_t i = 0; i < c.data.size(); ++i) {
        acc += c.data[i].p;
        if (u < acc) return i;
    }
    // u at or past the rounded total: the last candidate that can be drawn
    std::size_t last = c.data.size() - 1;
    while (last > 0 && !(c.data[last].p > 0)) --last;
    return last;
}

// Mirostat v1's k for the candidates (after softmax): the Zipf exponent s estimated by
// least squares over the m most likely tokens, then k = (e 2^mu / (1 - N^-e))^(1/s).
inline double mirostat_k(const candidates& c, double mu, int m, std::int64_t n_vocab) {
    double sum_tb = 0, sum_tt = 0;
    // (pairs stop at a zero probability, a -inf logit, whose log ratio is infinite)
    for (std::size_t i = 0; i + 1 < c.data.size() && i + 1 < static_cast<std::size_t>(m) && c.data[i + 1].p > 0; ++i) {
        const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
        const double b = std::log(c.data[i].p / c.data[i + 1].p);
        sum_tb += t * b;
        sum_tt += t * t;
    }
    if (sum_tt == 0) return 1;  // one candidate
    const double s = sum_tb / sum_tt, e = s - 1;
    const double n = static_cast<double>(n_vocab);
    // e -> 0: e / (1 - N^-e) -> 1 / ln N
    const double ratio = std::abs(e) < 1e-12 ? 1.0 / std::log(n) : e / (1 - std::pow(n, -e));
    const double k = std::pow(ratio * std::pow(2.0, mu), 1 / s);
    return k >= 1 ? k : 1;  // (also for a NaN)
}

class sampler {
public:
    explicit sampler(sampler_params p = {}) : p_(std::move(p)), rng_(p_.seed) {
        check(p_);
        mu_ = 2.0 * p_.mirostat_tau;
    }

    const sampler_params& params() const noexcept { return p_; }

    // The next token; it is also accepted into the history.
    std::int32_t sample(std::span<const float> logits) {
        if (p_.temp <= 0.0f && p_.dynatemp_range <= 0.0f && p_.mirostat == 0 && !penalties_on() && !max_may_go()) {
            // every stage keeps the largest logit: argmax, without building and sorting candidates
            check_logits(logits);
            const std::int32_t id = argmax(logits);
            accept(id);
            return id;
        }
        candidates c = candidates::from_logits(logits);
        return sample(c);
    }

    // Runs the chain on c (left as the last stage left it) and returns the token drawn.
    // Mirostat v1's N is the number of candidates given (the vocabulary for sample(logits)).
    std::int32_t sample(candidates& c) {
        if (c.data.empty()) fail(errc::invalid_argument, "sampler: no candidates");
        const auto n_vocab = static_cast<std::int64_t>(c.data.size());
        std::int32_t id;
        if (p_.mirostat == 0) {
            for (sampler_stage s : p_.order) run(s, c);
            softmax(c);
            id = c.data[draw(c, uniform())].id;
        } else {
            run(sampler_stage::penalties, c);
            apply_temperature(c, p_.temp);
            softmax(c);
            if (p_.mirostat == 1) {
                const double k = mirostat_k(c, mu_, p_.mirostat_m, n_vocab);
                apply_top_k(c, static_cast<int>(std::clamp(k, 1.0, static_cast<double>(c.data.size()))));
            } else {
                std::size_t keep = 0;
                while (keep < c.data.size() && -std::log2(c.data[keep].p) <= mu_) ++keep;
                c.data.resize(std::max<std::size_t>(keep, 1));
            }
            softmax(c);
            const std::size_t i = draw(c, uniform());
            id = c.data[i].id;
            mu_ -= p_.mirostat_eta * (-std::log2(c.data[i].p) - p_.mirostat_tau);
        }
        accept(id);
        return id;
    }

    // Adds a token to the history the penalties look at (the prompt's tokens, a user's input).
    void accept(std::int32_t id) {
        if (p_.repeat_last_n == 0) return;
        history_.push_back(id);
        if (p_.repeat_last_n > 0 && history_.size() > static_cast<std::size_t>(p_.repeat_last_n)) history_.pop_front();
    }

    // The history the penalties use (at most repeat_last_n tokens, oldest first).
    std::vector<std::int32_t> history() const { return {history_.begin(), history_.end()}; }

    // Mirostat's current maximum surprise (2 tau before the first token).
    double mirostat_mu() const noexcept { return mu_; }

    // Empties the history and restarts mirostat and the generator from the seed.
    void reset() {
        history_.clear();
        mu_ = 2.0 * p_.mirostat_tau;
        rng_.seed(p_.seed);
    }

    // A double in [0, 1) from the top 53 bits of the generator.
    double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

    // Throws, naming the parameter, unless every value is in its range.
    static void check(const sampler_params& p) {
        const auto bad = [](const char* name, double v, const char* want) {
            fail_cat(errc::invalid_argument, "sampler: ", name, " is ", std::isnan(v) ? std::string("NaN") : num(v), ", not ", want);
        };
        // v in [lo, hi] and finite (NaN fails every comparison)
        const auto in = [&](const char* name, double v, double lo, double hi, const char* want) {
            if (!(v >= lo && v <= hi && std::isfinite(v))) bad(name, v, want);
        };
        constexpr double big = std::numeric_limits<double>::max();
        if (std::isnan(p.temp)) bad("temp", p.temp, "a number");
        if (!(p.top_p > 0.0f)) bad("top_p", p.top_p, "in (0, 1]");
        in("min_p", p.min_p, 0, 1, "in [0, 1]");
        in("typical_p", p.typical_p, 0, 1, "in [0, 1]");
        in("repeat_penalty", p.repeat_penalty, 0, big, "a finite number > 0");
        if (p.repeat_penalty == 0.0f) bad("repeat_penalty", 0, "a finite number > 0");
        if (p.repeat_last_n < -1) bad("repeat_last_n", p.repeat_last_n, ">= -1 (-1: all, 0: none)");
        in("frequency_penalty", p.frequency_penalty, -big, big, "a finite number");
        in("presence_penalty", p.presence_penalty, -big, big, "a finite number");
        in("dynatemp_range", p.dynatemp_range, 0, big, "a finite number >= 0");
        in("dynatemp_exponent", p.dynatemp_exponent, 0, big, "a finite number >= 0");
        if (p.mirostat < 0 || p.mirostat > 2) bad("mirostat", p.mirostat, "0, 1 or 2");
        in("mirostat_tau", p.mirostat_tau, 0, big, "a finite number >= 0");
        in("mirostat_eta", p.mirostat_eta, 0, big, "a finite number >= 0");
        if (p.mirostat_m < 2) bad("mirostat_m", p.mirostat_m, ">= 2");
        for (sampler_stage s : p.order)
            if (static_cast<unsigned>(s) > static_cast<unsigned>(sampler_stage::temperature))
                bad("a stage of order", static_cast<unsigned>(s), "a sampler_stage");
    }

private:
    static std::string num(double v) {
        std::string s = std::to_string(v);  // "%f": trim the trailing zeros
        if (s.find('.') != std::string::npos) {
            while (s.back() == '0') s.pop_back();
            if (s.back() == '.') s.pop_back();
        }
        return s;
    }

    bool penalties_on() const {
        return p_.repeat_last_n != 0 && (p_.repeat_penalty != 1.0f || p_.frequency_penalty != 0.0f || p_.presence_penalty != 0.0f) &&
               std::find(p_.order.begin(), p_.order.end(), sampler_stage::penalties) != p_.order.end();
    }
    // whether a stage may drop the most likely token (typical), or no greedy stage runs
    bool max_may_go() const {
        const auto has = [&](sampler_stage s) { return std::find(p_.order.begin(), p_.order.end(), s) != p_.order.end(); };
        return (p_.typical_p < 1.0f && has(sampler_stage::typical)) || !has(sampler_stage::temperature);
    }

    void run(sampler_stage s, candidates& c) {
        switch (s) {
            case sampler_stage::penalties:
                if (p_.repeat_last_n != 0) {
                    const std::vector<std::int32_t> h(history_.begin(), history_.end());
                    apply_penalties(c, h, p_.repeat_penalty, p_.frequency_penalty, p_.presence_penalty);
                }
                break;
            case sampler_stage::top_k: apply_top_k(c, p_.top_k); break;
            case sampler_stage::typical: apply_typical(c, p_.typical_p); break;
            case sampler_stage::top_p: apply_top_p(c, p_.top_p); break;
            case sampler_stage::min_p: apply_min_p(c, p_.min_p); break;
            case sampler_stage::temperature: apply_dynamic_temperature(c, p_.temp, p_.dynatemp_range, p_.dynatemp_exponent); break;
        }
    }

    sampler_params p_;
    std::mt19937_64 rng_;
    std::deque<std::int32_t> history_;
    double mu_ = 0;
};

}  // namespace models
TESSERA_END_NAMESPACE
