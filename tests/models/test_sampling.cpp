// The sampler chain (models/sampling.hpp) on fixed logits against the published
// definitions, computed here in double from the formulas (not by calling the stage under
// test): which ids survive each stage and with what probability, the penalties on a
// hand-made history, mirostat's k and mu update, dynamic temperature, the draw's
// distribution, seeded determinism, and bad parameters.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "tessera/models/sampling.hpp"

using namespace tessera;
using models::candidates;
using models::sampler;
using models::sampler_params;
using models::sampler_stage;

namespace {

// Ids 1 and 7 tie (the lower id ranks first).
const std::vector<float> L = {1.0f, 3.0f, 2.0f, 0.5f, -1.0f, 2.5f, 0.0f, 3.0f};

// softmax of the logits of ids, as id -> p
std::map<std::int32_t, double> softmax_of(const std::vector<double>& logits, const std::set<std::int32_t>& ids) {
    double sum = 0;
    for (std::int32_t i : ids) sum += std::exp(logits[static_cast<std::size_t>(i)]);
    std::map<std::int32_t, double> p;
    for (std::int32_t i : ids) p[i] = std::exp(logits[static_cast<std::size_t>(i)]) / sum;
    return p;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

std::set<std::int32_t> all_ids(std::size_t n) {
    std::set<std::int32_t> s;
    for (std::size_t i = 0; i < n; ++i) s.insert(static_cast<std::int32_t>(i));
    return s;
}

std::set<std::int32_t> ids_of(const candidates& c) {
    std::set<std::int32_t> s;
    for (const auto& t : c.data) s.insert(t.id);
    return s;
}

// c's probabilities after softmax equal want (same ids, within 1e-12).
void check_probs(candidates c, const std::map<std::int32_t, double>& want) {
    models::softmax(c);
    REQUIRE(c.data.size() == want.size());
    for (const auto& t : c.data) {
        INFO("id ", t.id);
        REQUIRE(want.count(t.id) == 1);
        CHECK(std::abs(t.p - want.at(t.id)) < 1e-12);
    }
}

}  // namespace

TEST_CASE("sampling: softmax sorts by logit, ties by id, and normalizes") {
    auto c = candidates::from_logits(L);
    models::softmax(c);
    const std::vector<std::int32_t> order = {1, 7, 5, 2, 0, 3, 6, 4};
    REQUIRE(c.data.size() == order.size());
    const auto want = softmax_of(to_double(L), all_ids(L.size()));
    for (std::size_t i = 0; i < order.size(); ++i) {
        CHECK(c.data[i].id == order[i]);
        CHECK(std::abs(c.data[i].p - want.at(c.data[i].id)) < 1e-12);
    }
}

TEST_CASE("sampling: top-k keeps the k largest logits") {
    auto c = candidates::from_logits(L);
    models::apply_top_k(c, 3);
    CHECK(ids_of(c) == std::set<std::int32_t>{1, 7, 5});
    check_probs(c, softmax_of(to_double(L), {1, 7, 5}));
    auto d = candidates::from_logits(L);
    models::apply_top_k(d, 2);  // the tie at 3.0: both
    CHECK(ids_of(d) == std::set<std::int32_t>{1, 7});
    auto e = candidates::from_logits(L);
    models::apply_top_k(e, 0);  // 0: all
    CHECK(e.data.size() == L.size());
}

TEST_CASE("sampling: top-p keeps the smallest set of mass >= p") {
    const auto p = softmax_of(to_double(L), all_ids(L.size()));
    for (double top_p : {0.05, 0.3, 0.5, 0.7, 0.9, 0.99}) {
        // the reference: the m most likely for the smallest m whose mass reaches top_p
        std::vector<std::pair<double, std::int32_t>> by_p;
        for (const auto& [id, v] : p) by_p.push_back({-v, id});
        std::sort(by_p.begin(), by_p.end());
        std::set<std::int32_t> want;
        double mass = 0;
        for (const auto& [negp, id] : by_p) {
            if (mass >= top_p) break;
            want.insert(id);
            mass -= negp;
        }
        auto c = candidates::from_logits(L);
        models::apply_top_p(c, top_p);
        INFO("top_p ", top_p);
        CHECK(ids_of(c) == want);
        check_probs(c, softmax_of(to_double(L), want));
    }
    // by hand: p(1) = p(7) = e^3 / 65.477 = 0.3068, p(5) = 0.1861: 0.6 needs 1 and 7
    // (0.6135), 0.65 adds 5
    auto c = candidates::from_logits(L);
    models::apply_top_p(c, 0.6);
    CHECK(ids_of(c) == std::set<std::int32_t>{1, 7});
    c = candidates::from_logits(L);
    models::apply_top_p(c, 0.65);
    CHECK(ids_of(c) == std::set<std::int32_t>{1, 7, 5});
}

TEST_CASE("sampling: min-p keeps p >= min_p * p_max") {
    const auto p = softmax_of(to_double(L), all_ids(L.size()));
    const double pmax = p.at(1);
    for (double min_p : {0.01, 0.1, 0.3, 0.5, 0.61, 0.9, 1.0}) {
        std::set<std::int32_t> want;
        for (const auto& [id, v] : p)
            if (v >= min_p * pmax * (1 - 1e-12)) want.insert(id);
        auto c = candidates::from_logits(L);
        models::apply_min_p(c, min_p);
        INFO("min_p ", min_p);
        CHECK(ids_of(c) == want);
        check_probs(c, softmax_of(to_double(L), want));
    }
    // by hand: p(5) / p_max = e^-0.5 = 0.6065: in at 0.6, out at 0.61
    auto c = candidates::from_logits(L);
    models::apply_min_p(c, 0.6);
    CHECK(ids_of(c) == std::set<std::int32_t>{1, 7, 5});
    c = candidates::from_logits(L);
    models::apply_min_p(c, 0.61);
    CHECK(ids_of(c) == std::set<std::int32_t>{1, 7});
}

TEST_CASE("sampling: typical keeps the tokens whose surprise is nearest the entropy") {
    // By hand: p = 1/2, 1/4, 1/8, 1/8 (logits log p). H = 1.75 bits; surprises 1, 2, 3, 3
    // bits, distances to H 0.75, 0.25, 1.25, 1.25: the order is 1, 0, 2, 3 with masses
    // 0.25, 0.75, 0.875, 1.
    const std::vector<float> q = {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)};
    const std::vector<std::pair<double, std::set<std::int32_t>>> cases = {
        {0.0, {1}}, {0.2, {1}}, {0.3, {1, 0}}, {0.5, {1, 0}}, {0.8, {1, 0, 2}}, {0.9, {1, 0, 2, 3}}};
    for (const auto& cs : cases) {
        const double typ = cs.first;  // (INFO cannot capture a structured binding under clang < 16)
        const auto& want = cs.second;
        auto c = candidates::from_logits(q);
        models::apply_typical(c, typ);
        INFO("typical ", typ);
        CHECK(ids_of(c) == want);
        CHECK(c.data[0].id == 1);  // the most typical first, not the most likely
        check_probs(c, softmax_of(to_double(q), want));
    }
    // the 8 logits against the definition computed here
    const auto p = softmax_of(to_double(L), all_ids(L.size()));
    double h = 0;
    for (const auto& [id, v] : p) h -= v * std::log(v);
    std::vector<std::pair<double, std::int32_t>> by_dist;
    for (const auto& [id, v] : p) by_dist.push_back({std::abs(-std::log(v) - h), id});
    std::sort(by_dist.begin(), by_dist.end());
    for (double typ : {0.1, 0.4, 0.7, 0.95}) {
        std::set<std::int32_t> want;
        double mass = 0;
        for (const auto& [d, id] : by_dist) {
            want.insert(id);
            mass += p.at(id);
            if (mass > typ) break;
        }
        auto c = candidates::from_logits(L);
        models::apply_typical(c, typ);
        INFO("typical ", typ);
        CHECK(ids_of(c) == want);
    }
}

TEST_CASE("sampling: temperature divides the logits; 0 keeps the largest") {
    for (double t : {0.25, 0.7, 1.0, 3.0}) {
        std::vector<double> scaled;
        for (float l : L) scaled.push_back(l / t);
        auto c = candidates::from_logits(L);
        models::apply_temperature(c, t);
        INFO("temp ", t);
        check_probs(c, softmax_of(scaled, all_ids(L.size())));
    }
    auto c = candidates::from_logits(L);
    models::apply_temperature(c, 0.0);
    REQUIRE(c.data.size() == 1);
    CHECK(c.data[0].id == 1);  // first of the tie
}

TEST_CASE("sampling: dynamic temperature follows the normalized entropy") {
    // uniform logits: entropy = log n, normalized 1, so the temperature is temp + range
    const std::vector<float> flat(6, 0.5f);
    auto f = candidates::from_logits(flat);
    CHECK(models::apply_dynamic_temperature(f, 1.0, 0.5, 1.0) == doctest::Approx(1.5).epsilon(1e-12));
    // one dominant token: entropy near 0, temperature near max(0, temp - range)
    const std::vector<float> peaked = {40.0f, 0.0f, 0.0f, 0.0f};
    auto g = candidates::from_logits(peaked);
    CHECK(models::apply_dynamic_temperature(g, 0.8, 0.5, 1.0) == doctest::Approx(0.3).epsilon(1e-9));
    // the 8 logits: t = lo + (hi - lo) * (H / log n)^exponent, computed here
    const auto p = softmax_of(to_double(L), all_ids(L.size()));
    double h = 0;
    for (const auto& [id, v] : p) h -= v * std::log(v);
    const double norm = h / std::log(8.0);
    for (double e : {0.5, 1.0, 2.0}) {
        const double lo = std::max(0.0, 0.9 - 0.6), hi = 0.9 + 0.6;
        const double want_t = lo + (hi - lo) * std::pow(norm, e);
        auto c = candidates::from_logits(L);
        INFO("exponent ", e);
        CHECK(std::abs(models::apply_dynamic_temperature(c, 0.9, 0.6, e) - want_t) < 1e-12);
        std::vector<double> scaled;
        for (float l : L) scaled.push_back(l / want_t);
        check_probs(c, softmax_of(scaled, all_ids(L.size())));
    }
    // exponent 0: always the maximum; range larger than temp: the minimum clamps at 0
    auto c = candidates::from_logits(L);
    CHECK(models::apply_dynamic_temperature(c, 0.9, 0.6, 0.0) == doctest::Approx(1.5).epsilon(1e-12));
    auto d = candidates::from_logits(peaked);
    CHECK(models::apply_dynamic_temperature(d, 0.2, 0.5, 1.0) < 1e-12);
}

TEST_CASE("sampling: repeat, frequency and presence penalties on a hand-made history") {
    // history: 1 twice, 4 and 6 once. repeat 1.5, frequency 0.25, presence 0.5:
    //   id 1 (3.0 > 0):  3.0 / 1.5 - 2 * 0.25 - 0.5 = 1.0
    //   id 4 (-1.0):    -1.0 * 1.5 - 0.25 - 0.5     = -2.25
    //   id 6 (0.0):      0.0 * 1.5 - 0.25 - 0.5     = -0.75
    const std::vector<std::int32_t> history = {1, 4, 1, 6};
    auto c = candidates::from_logits(L);
    models::apply_penalties(c, history, 1.5, 0.25, 0.5);
    std::vector<double> want = to_double(L);
    want[1] = 1.0;
    want[4] = -2.25;
    want[6] = -0.75;
    REQUIRE(c.data.size() == L.size());
    for (const auto& t : c.data) {
        INFO("id ", t.id);
        CHECK(std::abs(t.logit - want[static_cast<std::size_t>(t.id)]) < 1e-12);
    }
    // the sampler keeps the last repeat_last_n tokens
    sampler s({.temp = 0.0f, .repeat_penalty = 1.5f, .repeat_last_n = 3});
    for (std::int32_t id : {9, 1, 4, 1, 6}) s.accept(id);
    CHECK(s.history() == std::vector<std::int32_t>{4, 1, 6});
    // greedy with the penalty: 1 and 7 tie at 3.0; 1 is penalized to 2.0, so 7 wins
    CHECK(s.sample(L) == 7);
    CHECK(s.history() == std::vector<std::int32_t>{1, 6, 7});
    // now 7 -> 2.0 and 1 -> 2.0 (still in the history): 5 (2.5) wins
    CHECK(s.sample(L) == 5);
    // repeat_last_n 0: no history, no penalty
    sampler off({.temp = 0.0f, .repeat_penalty = 100.0f, .repeat_last_n = 0});
    off.accept(1);
    CHECK(off.history().empty());
    CHECK(off.sample(L) == 1);
}

TEST_CASE("sampling: a huge repeat penalty never repeats a token with a positive logit") {
    sampler s({.temp = 0.0f, .repeat_penalty = 1e9f, .repeat_last_n = -1});
    const std::vector<float> pos = {1.0f, 3.0f, 2.0f, 0.5f, 4.0f, 2.5f};
    std::set<std::int32_t> seen;
    for (int i = 0; i < 6; ++i) {
        const std::int32_t id = s.sample(pos);
        CHECK(seen.insert(id).second);
    }
}

TEST_CASE("sampling: greedy and the default chain") {
    sampler g;  // temp 0
    CHECK(g.sample(L) == 1);
    CHECK(g.sample(std::vector<float>{-5.0f, -1.0f, -3.0f}) == 1);
    // typical can drop the most likely token; with temp 0 the chain then takes the most
    // likely of the typical set
    const std::vector<float> q = {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)};
    sampler t({.temp = 0.0f, .top_k = 0, .top_p = 1.0f, .typical_p = 0.2f});
    CHECK(t.sample(q) == 1);
    // min-p 1 keeps only the most likely: at any temperature that is greedy
    sampler m({.temp = 5.0f, .top_k = 0, .top_p = 1.0f, .seed = 3, .min_p = 1.0f});
    for (int i = 0; i < 20; ++i) CHECK(m.sample(std::vector<float>{0.1f, 0.3f, 0.2f}) == 1);
    // temp 0 with a dynamic range is not greedy: the temperature is 0 .. range by entropy
    sampler d({.temp = 0.0f, .top_k = 0, .top_p = 1.0f, .seed = 2, .dynatemp_range = 3.0f});
    std::set<std::int32_t> drawn;
    for (int i = 0; i < 50; ++i) drawn.insert(d.sample(L));
    CHECK(drawn.size() > 2);
}

TEST_CASE("sampling: the draw follows the probabilities") {
    // temp 1.3, top-k 5, top-p 0.9 in llama.cpp's order: top-k, top-p at temperature 1,
    // then the temperature. The reference set and probabilities are computed here.
    const auto p1 = softmax_of(to_double(L), {1, 7, 5, 2, 0});
    std::set<std::int32_t> kept;
    double mass = 0;
    for (std::int32_t id : {1, 7, 5, 2, 0}) {
        if (mass >= 0.9) break;
        kept.insert(id);
        mass += p1.at(id);
    }
    std::vector<double> scaled;
    for (float l : L) scaled.push_back(l / 1.3);
    const auto want = softmax_of(scaled, kept);
    sampler s({.temp = 1.3f, .top_k = 5, .top_p = 0.9f, .seed = 42});
    const int n = 40000;
    std::map<std::int32_t, int> count;
    for (int i = 0; i < n; ++i) ++count[s.sample(L)];
    for (const auto& [id, k] : count) CHECK(kept.count(id) == 1);
    for (const auto& w : want) {
        const std::int32_t id = w.first;
        const double p = w.second;
        // within 5 standard deviations of the binomial count
        const double sd = std::sqrt(n * p * (1 - p));
        INFO("id ", id, " p ", p, " count ", count[id]);
        CHECK(std::abs(count[id] - n * p) < 5 * sd);
    }
}

TEST_CASE("sampling: the user's order changes what survives") {
    // top-p 0.65 before temperature 3 keeps {1, 7, 5} (masses at temperature 1); after
    // it, the flatter distribution needs more tokens: computed here
    sampler_params a{.temp = 3.0f, .top_k = 0, .top_p = 0.65f, .seed = 1};
    a.order = {sampler_stage::top_p, sampler_stage::temperature};
    sampler_params b = a;
    b.order = {sampler_stage::temperature, sampler_stage::top_p};
    std::vector<double> scaled;
    for (float l : L) scaled.push_back(l / 3.0);
    const auto p3 = softmax_of(scaled, all_ids(L.size()));
    std::set<std::int32_t> want_b;
    double mass = 0;
    for (std::int32_t id : {1, 7, 5, 2, 0, 3, 6, 4}) {
        if (mass >= 0.65f) break;
        want_b.insert(id);
        mass += p3.at(id);
    }
    REQUIRE(want_b.size() > 3);
    sampler sa(a), sb(b);
    auto ca = candidates::from_logits(L), cb = candidates::from_logits(L);
    sa.sample(ca);
    sb.sample(cb);
    CHECK(ids_of(ca) == std::set<std::int32_t>{1, 7, 5});
    CHECK(ids_of(cb) == want_b);
}

TEST_CASE("sampling: mirostat v1's k from a Zipf distribution") {
    // p_i proportional to i^-s: the least-squares estimate is s itself, and
    // k = (e 2^mu / (1 - N^-e))^(1/s) with e = s - 1
    const int n = 500;
    const double s = 1.5, mu = 6.0;
    std::vector<float> logits;
    for (int i = 1; i <= n; ++i) logits.push_back(static_cast<float>(-s * std::log(static_cast<double>(i))));
    auto c = candidates::from_logits(logits);
    models::softmax(c);
    const double e = s - 1;
    const double want = std::pow(e * std::pow(2.0, mu) / (1 - std::pow(static_cast<double>(n), -e)), 1 / s);
    CHECK(std::abs(models::mirostat_k(c, mu, 100, n) - want) < 1e-4 * want);  // float logits
}

TEST_CASE("sampling: mirostat's mu update") {
    // v2, tau 0.1: mu = 0.2 keeps only tokens with p >= 2^-0.2 = 0.87, so the top one alone
    // (p 1 after renormalizing, surprise 0): mu' = 0.2 - eta * (0 - 0.1)
    sampler s({.temp = 1.0f, .seed = 5, .mirostat = 2, .mirostat_tau = 0.1f, .mirostat_eta = 0.5f});
    CHECK(s.mirostat_mu() == doctest::Approx(0.2).epsilon(1e-7));
    CHECK(s.sample(L) == 1);
    CHECK(s.mirostat_mu() == doctest::Approx(0.2 + 0.5 * 0.1).epsilon(1e-7));

    // tau 3: v2 keeps p >= 2^-mu, v1 the k of the definition; the drawn token's surprise
    // (renormalized over what is kept) moves mu, computed here for whichever token was drawn
    for (int version : {1, 2}) {
        const double tau = 3.0, eta = 0.125;  // exact in float
        sampler m({.temp = 1.0f, .seed = 11, .mirostat = version, .mirostat_tau = static_cast<float>(tau),
                   .mirostat_eta = static_cast<float>(eta)});
        const auto p = softmax_of(to_double(L), all_ids(L.size()));
        for (int step = 0; step < 12; ++step) {
            const double mu = m.mirostat_mu();
            std::set<std::int32_t> kept;
            if (version == 2) {
                for (const auto& [id, v] : p)
                    if (-std::log2(v) <= mu) kept.insert(id);
                if (kept.empty()) kept.insert(1);
            } else {
                // least squares of log(p_i / p_i+1) on log((i+1) / i) over the sorted p
                const std::vector<std::int32_t> order = {1, 7, 5, 2, 0, 3, 6, 4};
                double tb = 0, tt = 0;
                for (std::size_t i = 0; i + 1 < order.size(); ++i) {
                    const double t = std::log((i + 2.0) / (i + 1.0)), b = std::log(p.at(order[i]) / p.at(order[i + 1]));
                    tb += t * b;
                    tt += t * t;
                }
                const double sh = tb / tt, e = sh - 1;
                const double k = std::pow(e * std::pow(2.0, mu) / (1 - std::pow(8.0, -e)), 1 / sh);
                const auto kk = static_cast<std::size_t>(std::clamp(k, 1.0, 8.0));
                for (std::size_t i = 0; i < kk; ++i) kept.insert(order[i]);
            }
            const std::int32_t id = m.sample(L);
            INFO("mirostat ", version, " step ", step, " mu ", mu);
            REQUIRE(kept.count(id) == 1);
            const double pk = softmax_of(to_double(L), kept).at(id);
            CHECK(std::abs(m.mirostat_mu() - (mu - eta * (-std::log2(pk) - tau))) < 1e-9);
        }
    }
}

TEST_CASE("sampling: masked (-inf) tokens are never drawn, and mirostat's mu stays finite") {
    const float ninf = -std::numeric_limits<float>::infinity();
    const std::vector<float> masked = {1.0f, ninf, 2.0f, ninf, ninf, 0.5f};
    for (int mirostat : {0, 1, 2}) {
        sampler s({.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 3, .mirostat = mirostat, .mirostat_tau = 8.0f});
        for (int i = 0; i < 200; ++i) {
            const std::int32_t id = s.sample(masked);
            INFO("mirostat ", mirostat, " draw ", i);
            REQUIRE((id == 0 || id == 2 || id == 5));
            REQUIRE(std::isfinite(s.mirostat_mu()));
        }
    }
}

TEST_CASE("sampling: a seed gives the same tokens, another seed others") {
    // the generator is std::mt19937_64, whose stream the standard fixes: its 10000th
    // value from the default seed 5489 is 9981545732273789042
    sampler r({.seed = 5489});
    for (int i = 0; i < 9999; ++i) (void)r.uniform();
    CHECK(r.uniform() == static_cast<double>(9981545732273789042ull >> 11) * 0x1.0p-53);

    for (int mirostat : {0, 1, 2}) {
        sampler_params p{.temp = 1.5f, .top_k = 0, .top_p = 1.0f, .seed = 7, .repeat_penalty = 1.1f, .mirostat = mirostat};
        sampler a(p), b(p);
        p.seed = 8;
        sampler c(p);
        std::vector<std::int32_t> sa, sb, sc;
        for (int i = 0; i < 64; ++i) {
            sa.push_back(a.sample(L));
            sb.push_back(b.sample(L));
            sc.push_back(c.sample(L));
        }
        INFO("mirostat ", mirostat);
        CHECK(sa == sb);
        CHECK(sa != sc);
        a.reset();
        std::vector<std::int32_t> again;
        for (int i = 0; i < 64; ++i) again.push_back(a.sample(L));
        CHECK(again == sa);
    }
}

TEST_CASE("sampling: bad parameters and logits are refused by name") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    struct bad_case {
        sampler_params p;
        const char* text;
    };
    const auto f = [](double v) { return static_cast<float>(v); };
    const std::vector<bad_case> cases = {
        {{.temp = f(nan)}, "temp is NaN"},
        {{.top_p = 0.0f}, "top_p is 0"},
        {{.top_p = f(nan)}, "top_p is NaN"},
        {{.min_p = -0.1f}, "min_p is -0.1"},
        {{.min_p = 1.5f}, "min_p is 1.5"},
        {{.min_p = f(nan)}, "min_p is NaN"},
        {{.typical_p = 2.0f}, "typical_p is 2"},
        {{.typical_p = f(nan)}, "typical_p is NaN"},
        {{.repeat_penalty = 0.0f}, "repeat_penalty is 0"},
        {{.repeat_penalty = -1.0f}, "repeat_penalty is -1"},
        {{.repeat_penalty = f(inf)}, "repeat_penalty is inf"},
        {{.repeat_last_n = -2}, "repeat_last_n is -2"},
        {{.frequency_penalty = f(nan)}, "frequency_penalty is NaN"},
        {{.presence_penalty = f(inf)}, "presence_penalty is inf"},
        {{.dynatemp_range = -1.0f}, "dynatemp_range is -1"},
        {{.dynatemp_exponent = f(nan)}, "dynatemp_exponent is NaN"},
        {{.mirostat = 3}, "mirostat is 3"},
        {{.mirostat_tau = f(nan)}, "mirostat_tau is NaN"},
        {{.mirostat_eta = -0.5f}, "mirostat_eta is -0.5"},
        {{.mirostat_m = 1}, "mirostat_m is 1"},
    };
    for (const auto& c : cases) {
        INFO(c.text);
        CHECK_THROWS_WITH_AS(sampler{c.p}, doctest::Contains(c.text), error);
    }
    sampler s({.temp = 1.0f});
    std::vector<float> bad = L;
    bad[5] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH_AS(s.sample(bad), doctest::Contains("logit of token 5 is NaN"), error);
    sampler g;  // the greedy path checks too
    bad[5] = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH_AS(g.sample(bad), doctest::Contains("logit of token 5 is +inf"), error);
    CHECK_THROWS_WITH_AS(g.sample(std::vector<float>{}), doctest::Contains("no logits"), error);
    const float ninf = -std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH_AS(s.sample(std::vector<float>{ninf, ninf}), doctest::Contains("every logit is -inf"), error);
}
