// A test-backend-ops style harness: each case builds a small graph in a no_alloc
// context; the harness places every tensor in one buffer with a 1024-float sentinel
// after each (out-of-bounds writes show up as changed sentinels), fills inputs with
// uniform random values, computes under every arch this machine has at 1 and 2
// threads, and compares the output with a double-precision reference written
// independently of the kernels, by NMSE = sum (out - ref)^2 / sum ref^2 with a per-op
// bound (llama.cpp test-backend-ops: 1e-7 by default, 5e-4 for mul_mat and
// flash_attn_ext with non-f32 operands, 1e-6 for soft_max, 0 for argmax and same-type
// copies). Infinities must match exactly and are left out of the NMSE; NaN fails.
//
// A device target: with TESSERA_HARNESS_DEVICE=<device name> (e.g. Vulkan0) check() runs
// each case on that device instead of the CPU archs. The whole placed image -- tensors,
// pads and sentinels -- is uploaded into one buffer of the device, the graph computed
// there, and the image read back, so the same comparison and sentinel checks judge the
// device's bytes. A case whose graph the device does not take is counted and named, not
// failed (the scheduler would keep it on the CPU). The lookup of the device lives in
// harness_device.cpp, so the op-test units do not include device headers.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tessera/graph/all.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/quant/reference.hpp"

#include "../shared_data.hpp"

namespace harness {

using namespace tessera;
using namespace tessera::graph;

// A tensor's logical elements (dim 0 fastest) in double.
struct host {
    std::array<std::int64_t, 4> ne{1, 1, 1, 1};
    std::vector<double> v;
    std::int64_t n() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    double& at(std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) {
        return v[static_cast<std::size_t>(((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0)];
    }
    double at(std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) const {
        return v[static_cast<std::size_t>(((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0)];
    }
    static host zeros(std::array<std::int64_t, 4> ne) {
        host h;
        h.ne = ne;
        h.v.assign(static_cast<std::size_t>(h.n()), 0.0);
        return h;
    }
};

inline double read_elem(type_id t, const std::byte* p) {
    switch (t) {
        case type_id::f32: { float v; std::memcpy(&v, p, 4); return v; }
        case type_id::f16: { std::uint16_t b; std::memcpy(&b, p, 2); return f16::from_bits(b).to_float(); }
        case type_id::bf16: { std::uint16_t b; std::memcpy(&b, p, 2); return bf16::from_bits(b).to_float(); }
        case type_id::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
        case type_id::i64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
        default: FAIL("harness: no reader for type"); return 0;
    }
}
inline void write_elem(type_id t, std::byte* p, double x) {
    switch (t) {
        case type_id::f32: { const float v = static_cast<float>(x); std::memcpy(p, &v, 4); break; }
        case type_id::f16: { const auto b = f16::from_float(static_cast<float>(x)).bits; std::memcpy(p, &b, 2); break; }
        case type_id::bf16: { const auto b = bf16::from_float(static_cast<float>(x)).bits; std::memcpy(p, &b, 2); break; }
        case type_id::i32: { const auto v = static_cast<std::int32_t>(x); std::memcpy(p, &v, 4); break; }
        case type_id::i64: { const auto v = static_cast<std::int64_t>(x); std::memcpy(p, &v, 8); break; }
        default: FAIL("harness: no writer for type");
    }
}
// Rounds x as storing it in type t would.
inline double round_to(type_id t, double x) {
    switch (t) {
        case type_id::f16: return f16::from_float(static_cast<float>(x)).to_float();
        case type_id::bf16: return bf16::from_float(static_cast<float>(x)).to_float();
        case type_id::f32: return static_cast<float>(x);
        default: return x;
    }
}

inline host to_host(const node* n) {
    host h;
    h.ne = n->lay.ne;
    h.v.resize(static_cast<std::size_t>(h.n()));
    std::size_t k = 0;
    if (is_quantized(n->lay.type)) {  // block rows: dequantized with the reference
        std::vector<float> row(static_cast<std::size_t>(h.ne[0]));
        for (std::int64_t i3 = 0; i3 < h.ne[3]; ++i3)
            for (std::int64_t i2 = 0; i2 < h.ne[2]; ++i2)
                for (std::int64_t i1 = 0; i1 < h.ne[1]; ++i1) {
                    quant::dequantize_row(n->lay.type, n->bytes() + n->lay.offset_of(0, i1, i2, i3), row.data(), h.ne[0]);
                    for (float x : row) h.v[k++] = x;
                }
        return h;
    }
    for (std::int64_t i3 = 0; i3 < h.ne[3]; ++i3)
        for (std::int64_t i2 = 0; i2 < h.ne[2]; ++i2)
            for (std::int64_t i1 = 0; i1 < h.ne[1]; ++i1)
                for (std::int64_t i0 = 0; i0 < h.ne[0]; ++i0)
                    h.v[k++] = read_elem(n->lay.type, n->bytes() + n->lay.offset_of(i0, i1, i2, i3));
    return h;
}

// One case: the graph's output, the tensors the reference reads, how inputs are filled.
struct built {
    node* out = nullptr;
    std::vector<node*> inputs;                                      // what ref() receives, in order
    std::vector<std::pair<node*, std::function<void(node*, std::mt19937&)>>> init;  // custom fills
    double max_nmse = 1e-7;
    double lo = -1.0, hi = 1.0;  // uniform range of the default fill
};
using build_fn = std::function<built(context&)>;
using ref_fn = std::function<host(const std::vector<host>&)>;

// Fills a leaf with uniform random values in [lo, hi) (any element type).
inline std::function<void(node*, std::mt19937&)> uniform(double lo, double hi) {
    return [lo, hi](node* t, std::mt19937& rng) {
        std::uniform_real_distribution<double> u(lo, hi);
        const auto es = static_cast<std::size_t>(type_size(t->lay.type));
        for (std::int64_t i = 0; i < t->lay.nelements(); ++i) write_elem(t->lay.type, t->data + static_cast<std::size_t>(i) * es, u(rng));
    };
}
// Fills a leaf with small integers in [0, n) (values with ties).
inline std::function<void(node*, std::mt19937&)> small_ints(int n) {
    return [n](node* t, std::mt19937& rng) {
        std::uniform_int_distribution<int> d(0, n - 1);
        const auto es = static_cast<std::size_t>(type_size(t->lay.type));
        for (std::int64_t i = 0; i < t->lay.nelements(); ++i) write_elem(t->lay.type, t->data + static_cast<std::size_t>(i) * es, d(rng));
    };
}
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Fills a leaf with random integers in [0, n) (index tensors).
inline std::function<void(node*, std::mt19937&)> indices_below(std::int64_t n) {
    return [n](node* t, std::mt19937& rng) {
        std::uniform_int_distribution<std::int64_t> d(0, n - 1);
        for (std::int64_t i = 0; i < t->lay.nelements(); ++i)
            write_elem(t->lay.type, t->data + static_cast<std::size_t>(i) * t->lay.nb[0], static_cast<double>(d(rng)));
    };
}
// A permutation of [0, n) per column (set_rows: distinct destination rows).
inline std::function<void(node*, std::mt19937&)> distinct_indices(std::int64_t n) {
    return [n](node* t, std::mt19937& rng) {
        const std::int64_t per = t->lay.ne[0];
        for (std::int64_t c = 0; c < t->lay.nelements() / per; ++c) {
            std::vector<std::int64_t> p(static_cast<std::size_t>(n));
            for (std::int64_t i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
            std::shuffle(p.begin(), p.end(), rng);
            for (std::int64_t i = 0; i < per; ++i)
                write_elem(t->lay.type, t->data + static_cast<std::size_t>(c * per + i) * t->lay.nb[0],
                           static_cast<double>(p[static_cast<std::size_t>(i)]));
        }
    };
}

inline constexpr std::size_t sentinel_floats = 1024;
inline void write_sentinel(std::byte* p) {
    for (std::size_t i = 0; i < sentinel_floats * 4; ++i) p[i] = static_cast<std::byte>((i * 37 + 11) & 0xff);
}
inline bool sentinel_ok(const std::byte* p) {
    for (std::size_t i = 0; i < sentinel_floats * 4; ++i)
        if (p[i] != static_cast<std::byte>((i * 37 + 11) & 0xff)) return false;
    return true;
}

inline backend::cpu::executor& executor(int threads) {
    static backend::cpu::executor one(1), two(2);
    two.set_solo_cost(0);  // split every node over both threads: the op tests cover the split paths
    return threads == 1 ? one : two;
}

// Where run_once placed the case: every owned tensor at base + offs[i], inside total bytes.
struct image {
    std::byte* base = nullptr;
    std::size_t total = 0;
    std::vector<node*> owned;
    std::vector<std::size_t> offs;
};
using compute_fn = std::function<void(cgraph&, const image&)>;

// The device target (set up by harness_device.cpp when TESSERA_HARNESS_DEVICE is set).
struct device_target {
    std::string name;
    std::string missing;                                  // non-empty: the device is not there, and why
    std::function<std::string(const cgraph&)> refusal;    // "" when the device takes every node of g
    compute_fn compute;                                   // uploads the image, computes g, reads the image back
    std::size_t ran = 0, refused = 0;
    std::map<std::string, std::size_t> refusals;          // first line of each reason -> cases
};
// Filled in by harness_device.cpp (linked into the op-test binary); null without it.
inline device_target* (*&device_provider())() {
    static device_target* (*p)() = nullptr;
    return p;
}
inline device_target* device_requested() {
    const char* e = std::getenv("TESSERA_HARNESS_DEVICE");
    if (!e || !*e) return nullptr;
    if (!device_provider()) FAIL("TESSERA_HARNESS_DEVICE is set, but this binary has no device target (harness_device.cpp)");
    return device_provider()();
}

struct outcome {
    double nmse = 0;
    bool sentinels = true, nan = false, inf_mismatch = false;
    std::string refused;  // the device target did not take the graph (nothing was computed)
};

// Fills a case's inputs: the leafs, and the trainable parameters (op none, but graph nodes,
// as in ggml), from the case's custom fills or uniform in [lo, hi) (block types: random
// floats quantized with the reference quantizer).
inline void fill_inputs(const cgraph& g, const built& b, unsigned seed) {
    std::vector<node*> to_fill(g.leafs().begin(), g.leafs().end());
    for (node* n : g.nodes())
        if (n->op == op_kind::none) to_fill.push_back(n);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(b.lo, b.hi);
    for (node* n : to_fill) {
        bool custom = false;
        for (auto& [t, f] : b.init)
            if (t == n) f(n, rng), custom = true;
        if (custom) continue;
        if (is_quantized(n->lay.type)) {  // random floats quantized with the reference
            std::vector<float> f(static_cast<std::size_t>(n->lay.nelements()));
            for (float& x : f) x = static_cast<float>(u(rng));
            const type_id t = n->lay.type;  // ggml's iq2_xxs, iq2_xs, iq1_s quantizers require importance weights
            const std::vector<float> imatrix(t == type_id::iq2_xxs || t == type_id::iq2_xs || t == type_id::iq1_s
                                                 ? static_cast<std::size_t>(n->lay.ne[0]) : 0, 1.0f);
            quant::quantize(t, f.data(), n->data, n->lay.nrows(), n->lay.ne[0], imatrix.empty() ? nullptr : imatrix.data());
            continue;
        }
        for (std::int64_t i = 0; i < n->lay.nelements(); ++i)
            write_elem(n->lay.type, n->data + static_cast<std::size_t>(i) * static_cast<std::size_t>(type_size(n->lay.type)), u(rng));
    }
}

// A case's filled inputs (the whole image, sentinels included) and its reference output,
// kept by check() between its runs: the build is deterministic and the seed fixed, so every
// arch and thread count gets the same bytes, and the double-precision reference (and the
// reference quantizer of block-typed inputs, both slow) run once per case instead of once
// per run.
struct prepared {
    bool ready = false;
    std::vector<std::byte> image;
    host expect;
};

// Builds, fills, computes (with `compute`, or on the device target when refusal is set)
// and compares one case. With `cache`, the first call fills it and later calls copy the
// inputs and take the reference from it.
inline outcome run_once(const build_fn& build, const ref_fn& ref, const compute_fn& compute, unsigned seed,
                        const std::function<std::string(const cgraph&)>& refusal = {}, prepared* cache = nullptr) {
    context ctx({.no_alloc = true});
    built b = build(ctx);
    cgraph g;
    g.build_forward_expand(any_tensor(b.out));
    if (refusal)
        if (std::string why = refusal(g); !why.empty()) return outcome{.refused = why};
    // placement: [sentinel][t0][sentinel][t1][sentinel]...
    std::vector<node*> owned;
    for (node* n : g.leafs()) owned.push_back(n);
    for (node* n : g.nodes())
        if (!n->is_view()) owned.push_back(n);
    const std::size_t sb = sentinel_floats * 4;
    std::size_t total = sb;
    std::vector<std::size_t> offs;
    for (node* n : owned) {
        offs.push_back(total);
        total += (n->lay.nbytes() + 63) / 64 * 64 + sb;
    }
    std::vector<std::byte, std::allocator<std::byte>> mem(total + 64);
    std::byte* base = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(mem.data()) + 63) / 64 * 64);
    write_sentinel(base);
    for (std::size_t i = 0; i < owned.size(); ++i) {
        context::bind(*owned[i], base + offs[i]);
        const std::size_t pad = (owned[i]->lay.nbytes() + 63) / 64 * 64 - owned[i]->lay.nbytes();
        std::memset(base + offs[i] + owned[i]->lay.nbytes(), 0x5a, pad);
        write_sentinel(base + offs[i] + owned[i]->lay.nbytes() + pad);
    }
    host expect;
    if (cache && cache->ready) {
        REQUIRE(cache->image.size() == total);  // (the same case builds the same graph)
        std::memcpy(base, cache->image.data(), total);
        expect = cache->expect;
    } else {
        fill_inputs(g, b, seed);
        // the reference reads the inputs before the compute (in-place ops overwrite them)
        std::vector<host> in;
        for (node* n : b.inputs) in.push_back(to_host(n));
        expect = ref(in);
        if (cache) {
            cache->image.assign(base, base + total);
            cache->expect = expect;
            cache->ready = true;
        }
    }
    compute(g, image{base, total, owned, offs});
    host got = to_host(b.out);
    outcome o;
    REQUIRE(expect.ne == got.ne);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < got.v.size(); ++i) {
        const double e = round_to(b.out->lay.type, expect.v[i]), x = got.v[i];
        if (std::isnan(x) || std::isnan(e)) {
            o.nan = true;
            continue;
        }
        if (std::isinf(x) || std::isinf(e)) {
            if (x != e) o.inf_mismatch = true;
            continue;
        }
        num += (x - e) * (x - e);
        den += e * e;
    }
    o.nmse = den > 0 ? num / den : num;
    o.sentinels = sentinel_ok(base);
    for (std::size_t i = 0; i < owned.size(); ++i) {
        const std::size_t pad = (owned[i]->lay.nbytes() + 63) / 64 * 64 - owned[i]->lay.nbytes();
        for (std::size_t j = 0; j < pad; ++j)
            if (base[offs[i] + owned[i]->lay.nbytes() + j] != std::byte{0x5a}) o.sentinels = false;
        if (!sentinel_ok(base + offs[i] + owned[i]->lay.nbytes() + pad)) o.sentinels = false;
    }
    return o;
}

// Names for case labels: a type, and extents as [a,b,c,d].
inline std::string tn(type_id t) { return std::string(type_name(t)); }
inline std::string sh(std::array<std::int64_t, 4> n) {
    return "[" + std::to_string(n[0]) + "," + std::to_string(n[1]) + "," + std::to_string(n[2]) + "," + std::to_string(n[3]) + "]";
}
inline constexpr type_id float_types[] = {type_id::f32, type_id::f16, type_id::bf16};

// A leaf, or (strided) a column slice of a wider leaf: a non-contiguous view with the
// same logical shape.
inline node* strided_input(context& ctx, type_id t, std::array<std::int64_t, 4> ne, bool strided) {
    if (!strided) return ctx.new_tensor(t, ne);
    std::array<std::int64_t, 4> wide = ne;
    wide[0] += 3;
    node* w = ctx.new_tensor(t, wide);
    return view(any_tensor(w), ne, {w->lay.nb[1], w->lay.nb[2], w->lay.nb[3]}, 0).get();
}

// Runs a case under every available arch at 1 and 2 threads and checks it; or, with a
// device target, on that device only.
inline void check(const std::string& name, const build_fn& build, const ref_fn& ref) {
    const auto saved = simd::active_arch();
    double bound = 0;
    {
        context ctx({.no_alloc = true});
        bound = build(ctx).max_nmse;
    }
    if (device_target* d = device_requested()) {
        if (!d->missing.empty()) {
            std::printf("SKIP: %s\n", d->missing.c_str());
            std::fflush(stdout);
            std::_Exit(77);  // Meson's "skipped": the device this run is for is not on this machine
        }
        const outcome o = run_once(build, ref, d->compute, 1234u, d->refusal);
        if (!o.refused.empty()) {
            ++d->refused;
            ++d->refusals[o.refused.substr(0, o.refused.find('\n'))];
            return;
        }
        ++d->ran;
        INFO(name, " device=", d->name, " nmse=", o.nmse, " bound=", bound);
        CHECK(o.sentinels);
        CHECK_FALSE(o.nan);
        CHECK_FALSE(o.inf_mismatch);
        CHECK(o.nmse <= bound);
        return;
    }
    prepared cache;
    // Under emulation (qemu-aarch64 in CI, TESSERA_TEST_EMULATED=1) the 2-thread run is
    // made at the best arch only: the split of a node between threads is the same code at
    // every arch, and each arch's kernels are still checked at 1 thread.
    const auto archs = simd::available_archs();
    const bool emulated = test_env::emulated();
    for (auto a : archs) {
        simd::set_active_arch(a);
        for (int threads : {1, 2}) {
            if (threads == 2 && emulated && a != archs.back()) continue;
            const outcome o =
                run_once(build, ref, [threads](cgraph& g, const image&) { executor(threads).compute(g); }, 1234u, {}, &cache);
            INFO(name, " arch=", std::string(simd::name_of(a)), " threads=", threads, " nmse=", o.nmse, " bound=", bound);
            CHECK(o.sentinels);
            CHECK_FALSE(o.nan);
            CHECK_FALSE(o.inf_mismatch);
            CHECK(o.nmse <= bound);
        }
    }
    simd::set_active_arch(saved);
}

}  // namespace harness
