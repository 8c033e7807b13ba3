// Random-weight llama models written by tessera's GGUF writer (models/random.hpp):
// KV-cache correctness (batched prompt == token by token == split batches), agreement
// across thread counts, archs and attention paths, quantized weight types against the
// same weights dequantized to f32, and bad models that must fail with the tensor named.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tessera/gguf/reader.hpp"
#include "tessera/kernels/quant/repack.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/random.hpp"
#include "tessera/simd/dispatch.hpp"

using namespace tessera;

namespace {

// A model loaded from bytes that it keeps alive.
struct mem_model {
    std::shared_ptr<std::vector<std::byte>> bytes;
    std::unique_ptr<models::llama_model> m;
};

mem_model load(const gguf::writer& w, const models::llama_options& o) {
    mem_model r;
    r.bytes = std::make_shared<std::vector<std::byte>>(w.to_bytes());
    r.m = std::make_unique<models::llama_model>(gguf::file::from_buffer(*r.bytes, "random.gguf"), o);
    return r;
}

models::random_llama_config small_config() {
    models::random_llama_config c;
    c.n_embd = 64;
    c.n_layer = 2;
    c.n_ff = 160;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.n_ctx = 128;
    c.seed = 7;
    return c;
}

std::vector<std::int32_t> some_tokens(std::int64_t n_vocab, int n) {
    std::vector<std::int32_t> t{1};
    models::detail::splitmix64 r{42};
    while (static_cast<int>(t.size()) < n) t.push_back(static_cast<std::int32_t>(3 + r.next() % static_cast<std::uint64_t>(n_vocab - 3)));
    return t;
}

// max |a - b| / max |b|
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double d = 0, m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
        m = std::max(m, std::abs(static_cast<double>(b[i])));
    }
    return m > 0 ? d / m : d;
}

std::vector<float> one_by_one(models::llama_model& m, const std::vector<std::int32_t>& toks) {
    m.reset();
    std::vector<float> all;
    for (std::int32_t t : toks) {
        const auto l = m.eval(std::span<const std::int32_t>(&t, 1));
        all.insert(all.end(), l.begin(), l.end());
    }
    return all;
}

// A copy of a model's file with every weight dequantized to f32.
gguf::writer dequantized(const gguf::writer& w, std::vector<std::vector<std::byte>>& keep) {
    const auto bytes = w.to_bytes();
    const gguf::file f = gguf::file::from_buffer(bytes);
    gguf::writer out;
    out.copy_metadata(f.meta());
    for (const auto& t : f.tensors()) {
        std::vector<float> x(static_cast<std::size_t>(t.n_elements()));
        const std::int64_t row = t.ne[0], nrows = t.n_elements() / row;
        for (std::int64_t r = 0; r < nrows; ++r)
            quant::dequantize_row(t.type, t.data + static_cast<std::size_t>(r) * row_size(t.type, row),
                                  x.data() + r * row, row);
        keep.emplace_back(x.size() * 4);
        std::memcpy(keep.back().data(), x.data(), keep.back().size());
        out.add_tensor(t.name, type_id::f32, std::span<const std::int64_t>(t.ne.data(), static_cast<std::size_t>(t.n_dims)),
                       keep.back());
    }
    return out;
}

}  // namespace

TEST_CASE("random model: the batched prompt pass equals feeding tokens one by one") {
    const auto w = models::random_llama(small_config());
    for (type_id kv : {type_id::f32, type_id::f16}) {
        for (bool fa : {true, false}) {
            CAPTURE(type_name(kv));
            CAPTURE(fa);
            auto mm = load(w, {.n_threads = 1, .kv_type = kv, .flash_attn = fa});
            auto& m = *mm.m;
            const auto toks = some_tokens(m.n_vocab(), 40);
            const auto batched = m.eval(toks, true);
            REQUIRE(batched.size() == toks.size() * static_cast<std::size_t>(m.n_vocab()));
            CHECK(m.n_past() == 40);
            const auto single = one_by_one(m, toks);
            // Only sum orders differ between the paths. Without flash attention an f16
            // cache also rounds q and the probabilities to f16 (as ggml does), and a
            // sum-order difference of one f32 ulp can move such a value by one f16 ulp
            // (2^-11 relative): measured up to 1.3e-4 with AVX2 kernels, 4e-5 with
            // SSE4.2, 0 with the scalar ones; f32 caches stay below 1e-6.
            const double tol = kv == type_id::f16 && !fa ? 5e-4 : 1e-4;
            CHECK(rel_diff(single, batched) < tol);
            // two batches (a cached prefix, then 25 tokens at once)
            m.reset();
            auto part = m.eval(std::span(toks).first(15), true);
            const auto rest = m.eval(std::span(toks).subspan(15), true);
            part.insert(part.end(), rest.begin(), rest.end());
            CHECK(rel_diff(part, batched) < tol);
            // truncate and re-evaluate the tail: the same logits
            m.truncate(30);
            const auto tail = m.eval(std::span(toks).subspan(30), true);
            const std::vector<float> want(batched.end() - static_cast<std::ptrdiff_t>(tail.size()), batched.end());
            CHECK(rel_diff(tail, want) < tol);
        }
    }
}

TEST_CASE("random model: a small n_batch splits the prompt into several graphs") {
    const auto w = models::random_llama(small_config());
    auto a = load(w, {.n_threads = 1, .kv_type = type_id::f32});
    auto b = load(w, {.n_threads = 1, .n_batch = 6, .kv_type = type_id::f32});
    const auto toks = some_tokens(a.m->n_vocab(), 23);
    CHECK(rel_diff(b.m->eval(toks, true), a.m->eval(toks, true)) < 1e-4);
}

TEST_CASE("random model: a decode graph is built once per 256 positions and re-used, with the logits of a fresh build") {
    auto c = small_config();
    c.n_ctx = 600;
    const auto w = models::random_llama(c);
    auto a = load(w, {.n_threads = 1, .n_ctx = 600, .kv_type = type_id::f32});
    const auto toks = some_tokens(a.m->n_vocab(), 300);
    (void)a.m->eval(std::span(toks).first(20), true);
    CHECK(a.m->n_graph_builds() == 1);
    // one by one from position 20: one graph for positions 20..255, one for 256..299
    std::vector<float> last;
    for (std::size_t i = 20; i < 300; ++i) last = a.m->eval(std::span(toks).subspan(i, 1));
    CHECK(a.m->n_graph_builds() == 3);
    CHECK(a.m->n_past() == 300);
    // the same logits as one graph of all 300 tokens
    auto b = load(w, {.n_threads = 1, .n_ctx = 600, .kv_type = type_id::f32});
    const auto ref = b.m->eval(toks);
    CHECK(rel_diff(last, ref) < 1e-4);
    // after truncate the cache's later slots still hold old keys: masked, not read
    a.m->truncate(100);
    const auto again = a.m->eval(std::span(toks).subspan(100, 1));
    auto d = load(w, {.n_threads = 1, .n_ctx = 600, .kv_type = type_id::f32});
    const auto ref101 = d.m->eval(std::span(toks).first(101));
    CHECK(rel_diff(again, ref101) < 1e-4);
}

TEST_CASE("random model: micro-batches (n_ubatch) give the logits of one graph, and n_ubatch is clamped to n_batch") {
    const auto w = models::random_llama(small_config());
    auto a = load(w, {.n_threads = 1, .kv_type = type_id::f32});
    const auto toks = some_tokens(a.m->n_vocab(), 23);
    const auto all = a.m->eval(toks, true);
    a.m->reset();
    const auto last = a.m->eval(toks);
    for (const std::int64_t ub : {1, 5, 23, 100}) {
        CAPTURE(ub);
        auto b = load(w, {.n_threads = 1, .n_batch = 16, .n_ubatch = ub, .kv_type = type_id::f32});
        CHECK(b.m->n_ubatch() == std::min<std::int64_t>(ub, 16));
        CHECK(rel_diff(b.m->eval(toks, true), all) < 1e-4);
        CHECK(b.m->n_past() == 23);
        b.m->reset();
        // without all_logits only the last micro-batch is waited for and read
        CHECK(rel_diff(b.m->eval(toks), last) < 1e-4);
        CHECK(b.m->n_past() == 23);
    }
}

TEST_CASE("random model: 1 and 2 threads, every arch, flash attention and soft_max agree") {
    const auto w = models::random_llama(small_config());
    const auto toks = some_tokens(386, 32);
    auto base = load(w, {.n_threads = 1, .kv_type = type_id::f32, .flash_attn = false});
    const simd::arch_id active = simd::active_arch();
    simd::set_active_arch(simd::arch_id::scalar);
    const auto ref = base.m->eval(toks, true);
    for (simd::arch_id a : simd::available_archs()) {
        simd::set_active_arch(a);
        for (int nt : {1, 2}) {
            for (bool fa : {false, true}) {
                CAPTURE(simd::name_of(a));
                CAPTURE(nt);
                CAPTURE(fa);
                auto mm = load(w, {.n_threads = nt, .kv_type = type_id::f32, .flash_attn = fa});
                CHECK(rel_diff(mm.m->eval(toks, true), ref) < 1e-4);
            }
        }
    }
    simd::set_active_arch(active);
}

TEST_CASE("random model: quantized weights against the same weights in f32") {
    // The only difference left is the activations' rounding to the dot partner (q8_0,
    // q8_1 or q8_K) and, for f16/bf16, none: bounds per type on max|diff|/max|logit|.
    struct tc {
        type_id t;
        double bound;
    };
    for (const tc c : {tc{type_id::f16, 1e-4}, tc{type_id::bf16, 1e-4}, tc{type_id::q8_0, 3e-2}, tc{type_id::q4_0, 3e-2},
                       tc{type_id::q4_1, 3e-2}, tc{type_id::q5_0, 3e-2}, tc{type_id::q5_1, 3e-2}, tc{type_id::q4_K, 3e-2},
                       tc{type_id::q5_K, 3e-2}, tc{type_id::q6_K, 3e-2}}) {
        CAPTURE(type_name(c.t));
        auto cfg = small_config();
        cfg.n_embd = 256;  // K-quant rows need 256 elements
        cfg.n_ff = 512;
        cfg.n_head = 8;
        cfg.weight_type = c.t;
        const auto wq = models::random_llama(cfg);
        std::vector<std::vector<std::byte>> keep;
        const auto wf = dequantized(wq, keep);
        auto q = load(wq, {.n_threads = 2, .kv_type = type_id::f32});
        auto f = load(wf, {.n_threads = 2, .kv_type = type_id::f32});
        const auto toks = some_tokens(q.m->n_vocab(), 12);
        const auto lq = q.m->eval(toks, true), lf = f.m->eval(toks, true);
        const double d = rel_diff(lq, lf);
        MESSAGE(type_name(c.t) << ": max|diff|/max|logit| = " << d);
        CHECK(d < c.bound);
        // every arch's kernels give the scalar kernels' logits (the integer dots are exact;
        // only the f32 sum orders differ)
        const simd::arch_id active = simd::active_arch();
        simd::set_active_arch(simd::arch_id::scalar);
        q.m->reset();
        const auto ls = q.m->eval(toks, true);
        for (simd::arch_id a : simd::available_archs()) {
            CAPTURE(simd::name_of(a));
            simd::set_active_arch(a);
            q.m->reset();
            CHECK(rel_diff(q.m->eval(toks, true), ls) < 1e-4);
        }
        simd::set_active_arch(active);
        // and the weights really are of the type (a quantized model is smaller)
        if (c.t != type_id::f16 && c.t != type_id::bf16) CHECK(q.m->weight_bytes() * 3 < f.m->weight_bytes());
    }
}

TEST_CASE("random model: matrices repacked at load (llama_options::repack, CPU_REPACK) give the logits of the weights read in place") {
    for (const type_id t : {type_id::q4_0, type_id::q8_0, type_id::q4_K, type_id::q6_K}) {
        for (const std::int64_t E : {512, 256}) {
            CAPTURE(type_name(t));
            CAPTURE(E);
            auto cfg = small_config();
            cfg.n_embd = E;
            cfg.n_ff = 2 * E;
            cfg.n_head = 8;
            cfg.weight_type = t;
            const auto w = models::random_llama(cfg);
            auto plain = load(w, {.n_threads = 2, .kv_type = type_id::f32});  // (the default: in place)
            CHECK(plain.m->repacked_bytes() == 0);
            const std::size_t q4k = t == type_id::q4_K ? 296 : 288;  // q4_K's records: 296 bytes for 288
            for (const int threads : {1, 2}) {
                CAPTURE(threads);
                auto rep = load(w, {.n_threads = threads, .kv_type = type_id::f32, .repack = true});
                if (t == type_id::q6_K) {
                    CHECK(rep.m->repacked_bytes() == 0);  // (not a CPU_REPACK type: read in place)
                } else if (E == 512) {
                    // every matrix of the 2 layers (512 x 512 q and output, 512 x 128 k and v,
                    // 512 x 1024 gate and up, 1024 x 512 down: 2228224 weights a layer) and
                    // output.weight when untied: rows of 512 or 1024 fill whole records
                    const std::size_t mats = 2 * 2228224 / 256 * static_cast<std::size_t>(row_size(t, 256)) * q4k / 288;
                    CHECK(rep.m->repacked_bytes() >= mats);
                    CHECK(rep.m->repacked_bytes() <= rep.m->weight_bytes() * q4k / 288 + 64 * 16);
                } else {
                    const std::size_t down = 2 * 256 * static_cast<std::size_t>(row_size(t, 512)) * q4k / 288;
                    if (kernels::repack_layout_for(t, 256, simd::active_arch()) == kernels::repack_layout::rows4_x16) {
                        // records of 16 blocks: 256-wide rows would fill half of one, so only
                        // ffn_down (rows of 512) is repacked
                        CHECK(rep.m->repacked_bytes() == down);
                    } else {  // (AArch64's q4_0 interleaves have the plain size: every matrix)
                        CHECK(rep.m->repacked_bytes() > down);
                        CHECK(rep.m->repacked_bytes() <= rep.m->weight_bytes());
                    }
                }
                const auto toks = some_tokens(rep.m->n_vocab(), 9);
                plain.m->reset();
                const auto a = rep.m->eval(toks, true), b = plain.m->eval(toks, true);
                CHECK(rel_diff(a, b) < 1e-4);  // the same integer dots, f32 sums in another order
                // and token by token (the N = 1 path of the repacked GEMM against the plain gemv)
                const double d1 = rel_diff(one_by_one(*rep.m, toks), one_by_one(*plain.m, toks));
                MESSAGE(type_name(t) << " E " << E << ": token by token, repacked against in place: " << d1);
                // The two N = 1 paths sum the same integer dots in another order, so their f32
                // outputs differ in the last bits. That moves some of the next layer's
                // activations to the other side of a q8_0 / q8_K rounding step, and this random
                // model amplifies it like quantization noise: measured 5e-3 (q4_0) and 1.6e-2
                // (q4_K) at 512 wide on AArch64 under qemu, and 5e-3 (q4_0) on x86 once the
                // attention's sums changed order (f32 KV rows read in place by the GEMM); 0 to
                // 1e-7 at 256 wide. Held to the quantized types' bound against the same weights
                // in f32 (the test above: 3e-2); a wrong layout gives differences of order 1.
                CHECK(d1 < 3e-2);
            }
        }
    }
}

TEST_CASE("random model: tied output embeddings and a padded vocabulary") {
    auto cfg = small_config();
    cfg.tied_output = true;
    cfg.n_vocab = 1000;
    auto mm = load(models::random_llama(cfg), {.n_threads = 1});
    CHECK(mm.m->n_vocab() == 1000);
    const auto toks = mm.m->tokenizer().tokenize("once upon a time", true);
    REQUIRE(toks.size() >= 2);
    CHECK(toks[0] == 1);
    const auto l = mm.m->eval(toks);
    CHECK(l.size() == 1000);
    CHECK(std::all_of(l.begin(), l.end(), [](float v) { return std::isfinite(v); }));
}

TEST_CASE("bad models fail with an error that names the tensor") {
    const auto w = models::random_llama(small_config());
    const auto bytes = w.to_bytes();
    const gguf::file f = gguf::file::from_buffer(bytes);
    // rebuild the file, dropping or replacing one tensor, or changing one key
    auto rebuilt = [&](const std::string& drop, const std::string& reshape, const char* arch) {
        gguf::writer out;
        out.copy_metadata(f.meta());
        if (arch) out.set("general.architecture", arch);
        for (const auto& t : f.tensors()) {
            if (t.name == drop) continue;
            if (t.name == reshape) {
                const std::int64_t ne[2] = {t.ne[0], t.ne[1] - 1};
                out.add_tensor(t.name, t.type, std::span<const std::int64_t>(ne, 2),
                               std::vector<std::byte>(static_cast<std::size_t>(row_size(t.type, ne[0]) * static_cast<std::size_t>(ne[1]))));
            } else {
                out.add_tensor_view(t);
            }
        }
        return out;
    };
    auto error_of = [](const gguf::writer& g) -> std::string {
        try {
            (void)load(g, {.n_threads = 1});
        } catch (const error& e) {
            return e.what();
        }
        return "no error";
    };
    const std::string missing = error_of(rebuilt("blk.1.ffn_up.weight", "", nullptr));
    CHECK(missing.find("blk.1.ffn_up.weight") != std::string::npos);
    CHECK(missing.find("missing") != std::string::npos);
    const std::string shape = error_of(rebuilt("", "blk.0.attn_k.weight", nullptr));
    CHECK(shape.find("blk.0.attn_k.weight") != std::string::npos);
    CHECK(shape.find("shape") != std::string::npos);
    const std::string arch = error_of(rebuilt("", "", "gpt2"));
    CHECK(arch.find("gpt2") != std::string::npos);
    const std::string no_embd = error_of(rebuilt("token_embd.weight", "", nullptr));
    CHECK(no_embd.find("token_embd.weight") != std::string::npos);
    MESSAGE(missing << "\n" << shape << "\n" << arch);
    // bad configurations of the generator itself
    auto c = small_config();
    c.n_head = 3;
    CHECK_THROWS_AS(models::random_llama(c), error);
    c = small_config();
    c.n_vocab = 10;
    CHECK_THROWS_AS(models::random_llama(c), error);
}
