// models::quantize_model (llama-quantize's job) on stories260K: which tensors are
// quantized and which kept, byte-exact quantized data against quant::quantize of the
// input, metadata copied, general.file_type set; greedy generation and perplexity of
// the quantized models against llama.cpp's goldens and the f32 model; bad inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include "model_data.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/quantize.hpp"
#include "tessera/models/sampling.hpp"

using namespace tessera;

namespace {

// This process's scratch folder (created), or its subfolder `sub`.
std::string temp_dir(const std::string& sub = {}) {
    auto d = std::filesystem::temp_directory_path() /
             ("tessera-quantize-test-" + std::to_string(static_cast<long long>(::getpid())));
    if (!sub.empty()) d /= sub;
    std::filesystem::create_directories(d);
    return d.string();
}

// exp(mean negative log-likelihood) of every token after the first, over the texts
// (each case's prompt ids followed by its greedy ids).
double perplexity(models::llama_model& m, const std::vector<model_test::greedy_case>& cases) {
    model_test::nll_sum total;
    for (const auto& gc : cases) {
        std::vector<std::int32_t> toks(gc.prompt_ids.begin(), gc.prompt_ids.end());
        toks.insert(toks.end(), gc.greedy_ids.begin(), gc.greedy_ids.end());
        const model_test::nll_sum r = model_test::negative_log_likelihood(m, toks);
        total.sum += r.sum;
        total.n += r.n;
    }
    return std::exp(total.sum / static_cast<double>(total.n));
}

bool ends_with_weight(const std::string& s) { return s.size() >= 6 && s.substr(s.size() - 6) == "weight"; }

}  // namespace

DATA_TEST_CASE("quantize_model: stories260K to q8_0, q4_0, q4_K", "models/stories260K.gguf", "goldens/stories260K-greedy.jsonl") {
    const std::string model = test_data::path("models/stories260K.gguf");
    const std::string gold = test_data::path("goldens/stories260K-greedy.jsonl");
    const auto cases = model_test::load_greedy(gold);
    REQUIRE(cases.size() >= 3);
    const std::string dir = temp_dir();
    const gguf::file in = gguf::file::open(model);

    models::llama_options lo;
    lo.n_ctx = 128;
    double ppl_f32 = 0;
    {
        models::llama_model m = models::llama_model::load(model, lo);
        ppl_f32 = perplexity(m, cases);
        std::string counts;
        for (const auto& gc : cases) {
            const std::size_t same = model_test::greedy_prefix(m, gc);
            counts += " " + std::to_string(same) + "/" + std::to_string(gc.greedy_ids.size());
        }
        MESSAGE("f32: greedy prefix matches" << counts << "; perplexity " << ppl_f32);
    }

    struct target {
        type_id t;
        std::uint32_t ftype;
    };
    for (const target tg : {target{type_id::q8_0, 7}, target{type_id::q4_0, 2}, target{type_id::q4_K, 15}}) {
        CAPTURE(type_name(tg.t));
        const std::string out = dir + "/stories260K-" + std::string(type_name(tg.t)) + ".gguf";
        models::quantize_options qo;
        qo.type = tg.t;
        qo.n_threads = 2;
        const models::quantize_stats st = models::quantize_model(model, out, qo);
        CHECK(st.n_quantized + st.n_kept == in.tensors().size());
        CHECK(st.n_quantized > 0);
        CHECK(st.bytes_out < st.bytes_in);

        const gguf::file q = gguf::file::open(out);
        // metadata: every key copied with its bytes, except the two the quantizer sets
        for (const auto& e : in.meta()) {
            CAPTURE(e.key);
            REQUIRE(q.meta().contains(e.key));
            if (e.key == "general.file_type" || e.key == "general.quantization_version") continue;
            const auto a = e.val.payload(), b = q.meta().at(e.key).payload();
            CHECK(e.val.type() == q.meta().at(e.key).type());
            CHECK((a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0));
        }
        CHECK(q.meta().get<std::uint32_t>("general.file_type") == tg.ftype);
        CHECK(q.meta().get<std::uint32_t>("general.quantization_version") == 2);

        // tensor types follow the rules; quantized bytes equal quant::quantize of the input
        REQUIRE(q.tensors().size() == in.tensors().size());
        std::size_t checked_bytes = 0, same_as_llama_cpp = 0;
        const std::string lc_path = test_data::need("models-quantized/stories260K-" +
                                                          std::string(tg.t == type_id::q4_K ? "q4_K_M" : type_name(tg.t)) + ".gguf");
        std::optional<gguf::file> llama_cpp;
        if (!lc_path.empty()) llama_cpp.emplace(gguf::file::open(lc_path));
        for (const auto& ti : in.tensors()) {
            CAPTURE(ti.name);
            const auto& to = q.tensor(ti.name);
            CHECK(to.ne == ti.ne);
            CHECK(to.n_dims == ti.n_dims);
            type_id want = ti.type;
            if (ti.n_dims == 2 && ends_with_weight(ti.name)) {
                if (ti.name == "output.weight" && tg.t != type_id::q8_0) want = ti.ne[0] % 256 == 0 ? type_id::q6_K : type_id::q8_0;
                else if (ti.ne[0] % block_size(tg.t) == 0) want = tg.t;
                else if (tg.t == type_id::q4_K) want = ti.ne[0] % 32 == 0 ? type_id::q5_0 : type_id::f16;
            }
            CHECK(type_name(to.type) == type_name(want));
            if (to.type == ti.type) {
                CHECK((to.size_bytes == ti.size_bytes &&
                       std::memcmp(to.data, ti.data, static_cast<std::size_t>(ti.size_bytes)) == 0));
                continue;
            }
            REQUIRE(ti.type == type_id::f32);
            if (llama_cpp) {
                // llama.cpp's own file: same type -> the same bytes (its mixture rules give
                // output.weight q8_0 in q4_0 and q4_K_M, and attn_v q8_0 in some q4_K_M blocks)
                const auto* lt = llama_cpp->find_tensor(ti.name);
                REQUIRE(lt != nullptr);
                if (lt->type == to.type) {
                    CHECK((lt->size_bytes == to.size_bytes &&
                           std::memcmp(lt->data, to.data, static_cast<std::size_t>(to.size_bytes)) == 0));
                    ++same_as_llama_cpp;
                } else {
                    CHECK((tg.t != type_id::q8_0 && (ti.name == "output.weight" || ti.name.find("attn_v") != std::string::npos)));
                }
            }
            const std::int64_t npr = ti.ne[0], nrows = ti.n_elements() / npr;
            std::vector<std::byte> ref(static_cast<std::size_t>(nrows * row_size(to.type, npr)));
            const auto n = quant::quantize(to.type, reinterpret_cast<const float*>(ti.data), ref.data(), nrows, npr);
            REQUIRE(n == to.size_bytes);
            CHECK(std::memcmp(ref.data(), to.data, n) == 0);
            checked_bytes += n;
        }
        CHECK(checked_bytes > 0);
        if (llama_cpp) {
            MESSAGE(type_name(tg.t) << ": " << same_as_llama_cpp << " converted tensors byte-equal to llama.cpp's file");
            CHECK(same_as_llama_cpp + 1 >= st.n_quantized - (tg.t == type_id::q4_K ? 2 : 0));
            if (tg.t == type_id::q8_0) CHECK(same_as_llama_cpp == st.n_quantized);
        }

        // the quantized model runs: greedy tokens against llama.cpp's f32 goldens, perplexity
        models::llama_model m = models::llama_model::load(out, lo);
        std::size_t full = 0;
        std::string counts;
        for (const auto& gc : cases) {
            const std::size_t same = model_test::greedy_prefix(m, gc);
            counts += " " + std::to_string(same) + "/" + std::to_string(gc.greedy_ids.size());
            if (same == gc.greedy_ids.size()) ++full;
        }
        const double ppl = perplexity(m, cases);
        MESSAGE(type_name(tg.t) << ": greedy prefix matches" << counts << "; perplexity " << ppl << " (f32 "
                                << ppl_f32 << ", ratio " << ppl / ppl_f32 << ")");
        if (tg.t == type_id::q8_0) {
            CHECK(full * 3 >= cases.size() * 2);  // >= 2 of 3 prompts fully equal
            CHECK(ppl < ppl_f32 * 1.02);
        } else {
            CHECK(ppl < ppl_f32 * 1.15);
        }
        std::filesystem::remove(out);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("quantize_model: bad inputs are refused with clear errors") {
    const std::string dir = temp_dir();
    models::quantize_options qo;
    qo.type = type_id::q8_0;
    // a missing file
    CHECK_THROWS_AS(models::quantize_model(dir + "/no-such.gguf", dir + "/out.gguf", qo), tessera::error);
    // a file that is not GGUF
    {
        std::ofstream(dir + "/not.gguf") << "this is not a gguf file at all";
        CHECK_THROWS_AS(models::quantize_model(dir + "/not.gguf", dir + "/out.gguf", qo), tessera::error);
    }
    // a type that cannot be written
    {
        models::quantize_options bad = qo;
        bad.type = type_id::i32;
        try {
            models::quantize_model(dir + "/not.gguf", dir + "/out.gguf", bad);
            FAIL("no error");
        } catch (const tessera::error& e) {
            CHECK(e.code() == errc::unsupported);
            CHECK(std::string(e.what()).find("cannot quantize to type id 26 (i32)") != std::string::npos);
        }
        bad.type = type_id::q8_0;
        bad.n_threads = 0;
        CHECK_THROWS_AS(models::quantize_model(dir + "/not.gguf", dir + "/out.gguf", bad), tessera::error);
    }
    std::filesystem::remove_all(dir);
}

DATA_TEST_CASE("quantize_model: an already quantized input, and an imatrix of the wrong length",
               "models-quantized/stories260K-q8_0.gguf", "models/stories260K.gguf") {
    const std::string dir = temp_dir();
    // an already quantized input: refused, naming the tensor; accepted with allow_requantize
    const std::string q8 = test_data::path("models-quantized/stories260K-q8_0.gguf");
    {
        models::quantize_options q4;
        q4.type = type_id::q4_0;
        try {
            models::quantize_model(q8, dir + "/out.gguf", q4);
            FAIL("no error");
        } catch (const tessera::error& e) {
            const std::string w = e.what();
            CHECK(e.code() == errc::unsupported);
            CHECK(w.find("already quantized") != std::string::npos);
            CHECK(w.find("q8_0") != std::string::npos);
            CHECK(w.find("weight") != std::string::npos);
        }
        CHECK(!std::filesystem::exists(dir + "/out.gguf"));
        q4.allow_requantize = true;
        const auto st = models::quantize_model(q8, dir + "/out.gguf", q4);
        CHECK(st.n_quantized > 0);
        const gguf::file f = gguf::file::open(dir + "/out.gguf");
        for (const auto& t : f.tensors())
            if (t.n_dims == 2 && t.ne[0] % 32 == 0 && t.name != "output.weight") CHECK(type_name(t.type) == "q4_0");
    }
    // an imatrix of the wrong length names the tensor
    const std::string model = test_data::path("models/stories260K.gguf");
    {
        std::unordered_map<std::string, std::vector<float>> im{{"blk.0.attn_q.weight", std::vector<float>(3, 1.0f)}};
        models::quantize_options qi;
        qi.type = type_id::q4_K;
        qi.imatrix = &im;
        try {
            models::quantize_model(model, dir + "/out2.gguf", qi);
            FAIL("no error");
        } catch (const tessera::error& e) {
            CHECK(std::string(e.what()).find("blk.0.attn_q.weight") != std::string::npos);
        }
        // a correct imatrix changes the q4_0 data of that tensor and nothing else
        im["blk.0.attn_q.weight"] = std::vector<float>(64, 1.0f);
        im["blk.0.attn_q.weight"][0] = 100.0f;
        qi.type = type_id::q4_0;
        const auto st = models::quantize_model(model, dir + "/out2.gguf", qi);
        std::size_t used = 0;
        for (const auto& r : st.tensors) used += r.used_imatrix ? 1 : 0;
        CHECK(used == 1);
        const gguf::file f = gguf::file::open(dir + "/out2.gguf");
        const auto& t = f.tensor("blk.0.attn_q.weight");
        const gguf::file src = gguf::file::open(model);
        const auto& s = src.tensor("blk.0.attn_q.weight");
        std::vector<std::byte> ref(t.size_bytes);
        quant::quantize(type_id::q4_0, reinterpret_cast<const float*>(s.data), ref.data(), s.ne[1], s.ne[0],
                        im["blk.0.attn_q.weight"].data());
        CHECK(std::memcmp(ref.data(), t.data, ref.size()) == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("load_imatrix_gguf: llama-imatrix's GGUF format, used by quantize_model") {
    const std::string dir = temp_dir();
    std::vector<float> sums(64), counts{4.0f};
    for (int j = 0; j < 64; ++j) sums[static_cast<std::size_t>(j)] = static_cast<float>((j * 37) % 11 + 1);
    const auto as_bytes = [](const std::vector<float>& v) {
        return std::span<const std::byte>(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float));
    };
    {
        gguf::writer w;
        w.set<std::uint32_t>("imatrix.chunk_count", 1);
        w.add_tensor("blk.0.attn_q.weight.in_sum2", type_id::f32, {64, 1}, as_bytes(sums));
        w.add_tensor("blk.0.attn_q.weight.counts", type_id::f32, {1, 1}, as_bytes(counts));
        w.write_to_file(dir + "/imatrix.gguf");
    }
    const auto im = models::load_imatrix_gguf(dir + "/imatrix.gguf");
    REQUIRE(im.size() == 1);
    const auto& v = im.at("blk.0.attn_q.weight");
    REQUIRE(v.size() == 64);
    for (std::size_t j = 0; j < 64; ++j) CHECK(v[j] == sums[j] / 4.0f);
    {
        gguf::writer w;
        w.add_tensor("x.weight.in_sum2", type_id::f32, {64, 1}, as_bytes(sums));
        w.write_to_file(dir + "/bad-imatrix.gguf");
        try {
            (void)models::load_imatrix_gguf(dir + "/bad-imatrix.gguf");
            FAIL("no error");
        } catch (const tessera::error& e) {
            CHECK(std::string(e.what()).find("x.weight.counts") != std::string::npos);
        }
    }
    std::filesystem::remove_all(dir);
}

DATA_TEST_CASE("load_imatrix_gguf: the importance weights steer quantize_model (stories260K)", "models/stories260K.gguf") {
    const std::string dir = temp_dir();
    std::vector<float> sums(64), counts{4.0f};
    for (int j = 0; j < 64; ++j) sums[static_cast<std::size_t>(j)] = static_cast<float>((j * 37) % 11 + 1);
    {
        gguf::writer w;
        w.set<std::uint32_t>("imatrix.chunk_count", 1);
        w.add_tensor("blk.0.attn_q.weight.in_sum2", type_id::f32, {64, 1},
                     std::as_bytes(std::span<const float>(sums)));
        w.add_tensor("blk.0.attn_q.weight.counts", type_id::f32, {1, 1}, std::as_bytes(std::span<const float>(counts)));
        w.write_to_file(dir + "/imatrix.gguf");
    }
    const auto im = models::load_imatrix_gguf(dir + "/imatrix.gguf");
    const auto& v = im.at("blk.0.attn_q.weight");
    const std::string model = test_data::path("models/stories260K.gguf");
    {
        models::quantize_options qo;
        qo.type = type_id::q4_K;  // rows of 64: q5_0 (with importance weights)
        qo.imatrix = &im;
        const auto st = models::quantize_model(model, dir + "/out.gguf", qo);
        std::size_t used = 0;
        for (const auto& r : st.tensors) used += r.used_imatrix ? 1 : 0;
        CHECK(used == 1);
        const gguf::file src = gguf::file::open(model), f = gguf::file::open(dir + "/out.gguf");
        const auto& s = src.tensor("blk.0.attn_q.weight");
        const auto& t = f.tensor("blk.0.attn_q.weight");
        CHECK(type_name(t.type) == "q5_0");
        std::vector<std::byte> ref(t.size_bytes), plain(t.size_bytes);
        quant::quantize(type_id::q5_0, reinterpret_cast<const float*>(s.data), ref.data(), s.ne[1], s.ne[0], v.data());
        quant::quantize(type_id::q5_0, reinterpret_cast<const float*>(s.data), plain.data(), s.ne[1], s.ne[0]);
        CHECK(std::memcmp(ref.data(), t.data, ref.size()) == 0);
        CHECK(std::memcmp(plain.data(), t.data, plain.size()) != 0);  // the weights made a difference
    }
    std::filesystem::remove_all(dir);
}

// llama-quantize's file types on models-kquant's source model: for every llama.cpp file
// there, the plan (dry_run) gives each tensor llama.cpp's type in llama.cpp's order; where
// tessera quantizes every type of the plan, the written tensors' bytes equal llama.cpp's.
DATA_TEST_CASE("quantize_model: file types give every tensor llama-quantize's type, and its bytes",
               "models-kquant/random-llama-f32.gguf", "models-kquant/random-llama.imatrix.gguf") {
    const std::string src = test_data::need("models-kquant/random-llama-f32.gguf");
    const auto imat = models::load_imatrix_gguf(test_data::need("models-kquant/random-llama.imatrix.gguf"));
    struct file_case {
        const char* file;
        const char* ftype;
        bool imatrix;
    };
    const file_case cases[] = {
        {"Q4_K_M", "Q4_K_M", false}, {"Q4_K_M-imat", "Q4_K_M", true}, {"Q4_K_S", "Q4_K_S", false},
        {"Q5_K_M", "Q5_K_M", false}, {"Q6_K", "Q6_K", false},         {"Q3_K_M", "Q3_K_M", false},
        {"Q2_K", "Q2_K", false},     {"IQ4_XS", "IQ4_XS", true},      {"IQ4_NL", "IQ4_NL", true},
        {"IQ3_XXS", "IQ3_XXS", true}, {"IQ3_S", "IQ3_S", true},       {"IQ2_XXS", "IQ2_XXS", true},
        {"IQ2_XS", "IQ2_XS", true},  {"IQ2_S", "IQ2_S", true},        {"IQ2_M", "IQ2_M", true},
        {"IQ1_S", "IQ1_S", true},    {"IQ1_M", "IQ1_M", true},        {"TQ1_0", "TQ1_0", false},
        {"TQ2_0", "TQ2_0", false},   {"MXFP4", "MXFP4_MOE", false},
    };
    const std::string dir = temp_dir();
    int compared = 0;
    for (const file_case& c : cases) {
        CAPTURE(c.file);
        const std::string ref_path = test_data::need(std::string("models-kquant/random-llama-") + c.file + ".gguf");
        if (ref_path.empty()) continue;
        const gguf::file ref = gguf::file::open(ref_path);
        models::quantize_options o;
        o.ftype = models::parse_llama_ftype(c.ftype);
        REQUIRE(o.ftype.has_value());
        o.pure = std::string(c.file) == "MXFP4";  // (llama.cpp's file was made with --pure)
        if (c.imatrix) o.imatrix = &imat;
        o.dry_run = true;
        const std::string out = dir + "/q-" + c.file + ".gguf";
        const models::quantize_stats plan = models::quantize_model(src, out, o);
        CHECK_FALSE(std::filesystem::exists(out));  // a dry run writes nothing
        CHECK_FALSE(plan.needs_imatrix);
        REQUIRE(plan.tensors.size() == ref.tensors().size());
        bool all_quantizable = true;
        for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
            const auto& mine = plan.tensors[i];
            const auto& theirs = ref.tensors()[i];
            CHECK_MESSAGE(mine.name == theirs.name, "position ", i);
            CHECK_MESSAGE(mine.out_type == theirs.type, mine.name, ": tessera ", type_name(mine.out_type), ", llama.cpp ",
                          type_name(theirs.type));
            CHECK(mine.bytes_out == theirs.size_bytes);
            if (mine.quantized && !quant::can_quantize(mine.out_type)) all_quantizable = false;
        }
        CHECK(all_quantizable);
        o.dry_run = false;
        models::quantize_model(src, out, o);
        const gguf::file got = gguf::file::open(out);
        REQUIRE(got.tensors().size() == ref.tensors().size());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < got.tensors().size(); ++i) {
            const auto& a = got.tensors()[i];
            const auto& b = ref.tensors()[i];
            const bool same = a.name == b.name && a.type == b.type && a.size_bytes == b.size_bytes &&
                              std::memcmp(a.data, b.data, a.size_bytes) == 0;
            CHECK_MESSAGE(same, a.name, " (", type_name(a.type), ") differs from llama.cpp's");
            differ += same ? 0 : 1;
        }
        CHECK(differ == 0);
        CHECK(got.meta().find_value("general.file_type")->get<std::uint32_t>("general.file_type") ==
              ref.meta().find_value("general.file_type")->get<std::uint32_t>("general.file_type"));
        ++compared;
        std::filesystem::remove(out);
    }
    MESSAGE(compared << " files quantized and compared byte for byte");
    CHECK(compared == 20);
    std::filesystem::remove_all(dir);
}

TEST_CASE("quantize_model: file type names, overrides and the importance matrix requirement") {
    CHECK(models::parse_llama_ftype("q4_k_m") == models::llama_ftype::q4_K_M);
    CHECK(models::parse_llama_ftype("Q4_K") == models::llama_ftype::q4_K_M);
    CHECK(models::parse_llama_ftype("iq2_xxs") == models::llama_ftype::iq2_xxs);
    CHECK_FALSE(models::parse_llama_ftype("Q9_K").has_value());
    CHECK(models::ftype_info(models::llama_ftype::iq2_s).default_type == type_id::iq2_xs);
    // more_bits: the first and last eighth, every third between (32 layers)
    std::vector<int> up;
    for (int i = 0; i < 32; ++i)
        if (models::more_bits(i, 32)) up.push_back(i);
    CHECK(up == std::vector<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31});
    CHECK(models::requires_imatrix("blk.0.ffn_up.weight", type_id::iq2_xxs, models::llama_ftype::iq2_xxs));
    CHECK_FALSE(models::requires_imatrix("token_embd.weight", type_id::iq2_xxs, models::llama_ftype::iq2_xxs));
    CHECK(models::requires_imatrix("blk.0.ffn_up.weight", type_id::q2_K, models::llama_ftype::q2_K_S));
    CHECK_FALSE(models::requires_imatrix("blk.0.ffn_up.weight", type_id::q2_K, models::llama_ftype::q2_K));
}

DATA_TEST_CASE("quantize_model: --tensor-type, --output-tensor-type, --token-embedding-type, --leave-output-tensor, "
               "and i-quants refused without an importance matrix",
               "models-kquant/random-llama-f32.gguf") {
    const std::string src = test_data::need("models-kquant/random-llama-f32.gguf");
    const std::string dir = temp_dir(), out = dir + "/o.gguf";
    models::quantize_options o;
    o.ftype = models::llama_ftype::q4_K_M;
    o.dry_run = true;
    o.tensor_types = {{"attn_q", type_id::q8_0}, {"ffn_(up|gate)", type_id::q5_0}};
    o.output_tensor_type = type_id::f16;
    o.token_embedding_type = type_id::q8_0;
    const auto st = models::quantize_model(src, out, o);
    for (const auto& t : st.tensors) {
        CAPTURE(t.name);
        if (t.name.find("attn_q.") != std::string::npos) CHECK(t.out_type == type_id::q8_0);
        if (t.name.find("ffn_up") != std::string::npos || t.name.find("ffn_gate") != std::string::npos) CHECK(t.out_type == type_id::q5_0);
        if (t.name == "output.weight") CHECK(t.out_type == type_id::f16);
        if (t.name == "token_embd.weight") CHECK(t.out_type == type_id::q8_0);
        if (t.name.find("attn_k.") != std::string::npos) CHECK(t.out_type == type_id::q4_K);
    }
    o = {};
    o.ftype = models::llama_ftype::q4_K_M;
    o.dry_run = true;
    o.leave_output_tensor = true;
    for (const auto& t : models::quantize_model(src, out, o).tensors)
        if (t.name == "output.weight") CHECK(t.out_type == type_id::f32);
    // i-quant targets need an importance matrix: a dry run says so, a real run refuses
    o = {};
    o.ftype = models::llama_ftype::iq2_xxs;
    o.dry_run = true;
    CHECK(models::quantize_model(src, out, o).needs_imatrix);
    o.dry_run = false;
    CHECK_THROWS_WITH_AS(models::quantize_model(src, out, o),
                         doctest::Contains("-> iq2_xxs needs an importance matrix (IQ2_XXS; give one with --imatrix"), tessera::error);
    CHECK_FALSE(std::filesystem::exists(out));
    o = {};
    o.ftype = models::llama_ftype::q4_K_M;
    o.tensor_types = {{"attn_q(", type_id::q8_0}};
    CHECK_THROWS_WITH_AS(models::quantize_model(src, out, o), doctest::Contains("tensor type pattern 'attn_q(' is not a regular expression"),
                         tessera::error);
    std::filesystem::remove_all(dir);
}

namespace {
// llama.cpp's legacy imatrix bytes: the entries (sums = weights x ncall), then optionally
// the chunk count and dataset name.
std::vector<std::byte> legacy_imatrix(const std::vector<std::pair<std::string, std::vector<float>>>& entries, std::int32_t ncall,
                                      bool trailer) {
    std::vector<std::byte> b;
    auto put = [&](const void* p, std::size_t n) {
        const auto* c = static_cast<const std::byte*>(p);
        b.insert(b.end(), c, c + n);
    };
    auto i32 = [&](std::int32_t v) { put(&v, 4); };
    i32(static_cast<std::int32_t>(entries.size()));
    for (const auto& [name, w] : entries) {
        i32(static_cast<std::int32_t>(name.size()));
        put(name.data(), name.size());
        i32(ncall);
        i32(static_cast<std::int32_t>(w.size()));
        for (float x : w) {
            const float s = x * static_cast<float>(std::max(ncall, 1));
            put(&s, 4);
        }
    }
    if (trailer) {
        i32(11);
        const std::string ds = "imatrix-text.txt";
        i32(static_cast<std::int32_t>(ds.size()));
        put(ds.data(), ds.size());
    }
    return b;
}
}  // namespace

DATA_TEST_CASE("load_imatrix: the legacy .dat gives the GGUF imatrix's weights and the same quantized bytes",
               "models-kquant/random-llama-f32.gguf", "models-kquant/random-llama.imatrix.gguf") {
    const std::string src = test_data::need("models-kquant/random-llama-f32.gguf");
    const std::string gguf_imat = test_data::need("models-kquant/random-llama.imatrix.gguf");
    models::imatrix_metadata gm;
    const auto want = models::load_imatrix(gguf_imat, &gm);
    CHECK(gm.dataset == "imatrix-text.txt");
    CHECK(gm.chunks == std::optional<std::uint32_t>(11));
    std::vector<std::pair<std::string, std::vector<float>>> entries(want.begin(), want.end());
    const std::string dir = temp_dir(), dat = dir + "/imatrix.dat";
    {
        const auto bytes = legacy_imatrix(entries, 4, true);
        std::ofstream(dat, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    models::imatrix_metadata dm;
    const auto got = models::load_imatrix(dat, &dm);
    CHECK(got == want);  // sums / ncall, exactly (ncall 4)
    CHECK(dm.dataset == "imatrix-text.txt");
    CHECK(dm.chunks == std::optional<std::uint32_t>(11));
    models::quantize_options o;
    o.ftype = models::llama_ftype::iq4_xs;
    o.imatrix = &got;
    models::quantize_model(src, dir + "/a.gguf", o);
    o.imatrix = &want;
    models::quantize_model(src, dir + "/b.gguf", o);
    const gguf::file a = gguf::file::open(dir + "/a.gguf"), b = gguf::file::open(dir + "/b.gguf");
    REQUIRE(a.tensors().size() == b.tensors().size());
    for (std::size_t i = 0; i < a.tensors().size(); ++i)
        CHECK(std::memcmp(a.tensors()[i].data, b.tensors()[i].data, a.tensors()[i].size_bytes) == 0);
    std::filesystem::remove_all(dir);
}

TEST_CASE("load_imatrix: a hostile legacy .dat is refused with its offset, never read out of bounds") {
    const std::vector<std::pair<std::string, std::vector<float>>> entries = {{"blk.0.attn_q.weight", {1.f, 2.f, 3.f}},
                                                                            {"blk.0.ffn_up.weight", {0.5f, 0.25f}}};
    const auto good = legacy_imatrix(entries, 2, true);
    const auto w = models::parse_imatrix_dat(good, "good");
    REQUIRE(w.size() == 2);
    CHECK(w.at("blk.0.attn_q.weight") == std::vector<float>{1.f, 2.f, 3.f});
    // every truncation: refused, except exactly at the end of the entries (no trailer)
    const std::size_t entries_end = legacy_imatrix(entries, 2, false).size();
    for (std::size_t n = 0; n < good.size(); ++n) {
        CAPTURE(n);
        const std::span<const std::byte> cut(good.data(), n);
        if (n == entries_end) {
            CHECK(models::parse_imatrix_dat(cut, "cut").size() == 2);
            continue;
        }
        CHECK_THROWS_WITH_AS(models::parse_imatrix_dat(cut, "cut"), doctest::Contains("load_imatrix: 'cut': offset "), tessera::error);
    }
    auto patched = [&](std::size_t at, std::int32_t v) {
        auto b = good;
        std::memcpy(b.data() + at, &v, 4);
        return b;
    };
    CHECK_THROWS_WITH_AS(models::parse_imatrix_dat(patched(0, -1), "x"), doctest::Contains("entry count -1 does not fit the file"), tessera::error);
    CHECK_THROWS_WITH_AS(models::parse_imatrix_dat(patched(4, 1 << 30), "x"), doctest::Contains("entry 0: name length 1073741824"), tessera::error);
    CHECK_THROWS_WITH_AS(models::parse_imatrix_dat(patched(4 + 4 + 19 + 4, 0), "x"),
                         doctest::Contains("entry 0 'blk.0.attn_q.weight': value count 0"), tessera::error);
    // random corruption (a fixed seed): an error or a result, never a crash (ASan/UBSan in CI)
    std::uint64_t s = 12345;
    int refused = 0;
    for (int it = 0; it < 3000; ++it) {
        auto b = good;
        for (int k = 0; k < 3; ++k) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            b[static_cast<std::size_t>((s >> 33) % b.size())] = static_cast<std::byte>(s >> 17);
        }
        try {
            (void)models::parse_imatrix_dat(b, "r");
        } catch (const tessera::error&) {
            ++refused;
        }
    }
    CHECK(refused > 1000);
}

// --- models in parts, COPY, --prune-layers and where the quantizer puts its keys ---------

namespace {

// A 4-layer llama-shaped model (rows of 256, so the K-quant mixtures apply): general.file_type
// early in the keys when `file_type` is set, weights in `wtype` (f32 or f16), norms f32.
struct tiny_model {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> shapes;
    std::vector<std::vector<std::byte>> data;
    type_id wtype = type_id::f32;
    std::optional<std::uint32_t> file_type;

    explicit tiny_model(type_id wt = type_id::f32, std::optional<std::uint32_t> ft = std::nullopt) : wtype(wt), file_type(ft) {
        shapes.push_back({"token_embd.weight", {256, 16}});
        for (int l = 0; l < 4; ++l) {
            const std::string b = "blk." + std::to_string(l) + ".";
            for (const char* n : {"attn_norm.weight", "attn_q.weight", "attn_v.weight", "ffn_down.weight"})
                shapes.push_back({b + n, std::string(n) == "attn_norm.weight" ? std::vector<std::int64_t>{256}
                                                                               : std::vector<std::int64_t>{256, 8}});
        }
        shapes.push_back({"output_norm.weight", {256}});
        shapes.push_back({"output.weight", {256, 16}});
        std::uint32_t seed = 12345;
        for (const auto& [name, ne] : shapes) {
            std::int64_t n = 1;
            for (auto x : ne) n *= x;
            const bool is_w = ne.size() == 2;
            const type_id t = is_w ? wtype : type_id::f32;
            std::vector<std::byte> b(static_cast<std::size_t>(n * (t == type_id::f16 ? 2 : 4)));
            for (std::int64_t i = 0; i < n; ++i) {
                seed = seed * 1664525u + 1013904223u;
                const float v = static_cast<float>(static_cast<std::int32_t>(seed >> 8) % 2001 - 1000) / 1000.0f;
                if (t == type_id::f16) {
                    const std::uint16_t h = to_f16(v).bits;
                    std::memcpy(b.data() + i * 2, &h, 2);
                } else {
                    std::memcpy(b.data() + i * 4, &v, 4);
                }
            }
            data.push_back(std::move(b));
        }
    }
    type_id type_of(std::size_t i) const { return shapes[i].second.size() == 2 ? wtype : type_id::f32; }
    void metadata(gguf::writer& w) const {
        w.set("general.architecture", "llama");
        if (file_type) w.set<std::uint32_t>("general.file_type", *file_type);
        w.set("general.name", "tiny");
        w.set<std::uint32_t>("llama.block_count", 4);
        w.set<std::uint32_t>("llama.attention.head_count", 4);
        w.set<std::uint32_t>("llama.attention.head_count_kv", 4);
    }
    void write(const std::string& path) const {
        gguf::writer w;
        metadata(w);
        for (std::size_t i = 0; i < shapes.size(); ++i) w.add_tensor(shapes[i].first, type_of(i), shapes[i].second, data[i]);
        w.write_to_file(path);
    }
    // As gguf-split writes it: the tensors in order, `cut` tensors before each part's end;
    // the metadata in part 0; split.no / split.count / split.tensors.count in every part.
    std::vector<std::string> write_split(const std::string& prefix, const std::vector<std::size_t>& ends) const {
        std::vector<std::string> paths;
        std::size_t first = 0;
        for (std::size_t p = 0; p < ends.size(); ++p) {
            gguf::writer w;
            if (p == 0) metadata(w);
            w.set<std::uint16_t>("split.no", static_cast<std::uint16_t>(p));
            w.set<std::uint16_t>("split.count", static_cast<std::uint16_t>(ends.size()));
            w.set<std::int32_t>("split.tensors.count", static_cast<std::int32_t>(shapes.size()));
            for (std::size_t i = first; i < ends[p]; ++i) w.add_tensor(shapes[i].first, type_of(i), shapes[i].second, data[i]);
            first = ends[p];
            paths.push_back(gguf::split_path(prefix, static_cast<int>(p), static_cast<int>(ends.size())));
            w.write_to_file(paths.back());
        }
        return paths;
    }
};

std::vector<char> file_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<std::string> key_names(const gguf::file& f) {
    std::vector<std::string> k;
    for (const auto& e : f.meta()) k.emplace_back(e.key);
    return k;
}

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("gguf::open_split: a model in parts, and the parts it refuses") {
    const std::string dir = temp_dir("split");
    CHECK(gguf::split_path(dir + "/m", 1, 3) == dir + "/m-00002-of-00003.gguf");
    CHECK(gguf::split_prefix("a/m-00002-of-00003.gguf", 1, 3) == std::optional<std::string>("a/m"));
    CHECK_FALSE(gguf::split_prefix("a/m-00002-of-00003.gguf", 0, 3));
    CHECK_FALSE(gguf::split_prefix("-00001-of-00001.gguf", 0, 1));  // (an empty prefix)
    const tiny_model m;
    const auto paths = m.write_split(dir + "/m", {5, 13, 19});
    const std::vector<gguf::file> parts = gguf::open_split(paths[0]);
    REQUIRE(parts.size() == 3);
    std::size_t n = 0;
    for (const auto& p : parts) n += p.tensors().size();
    CHECK(n == m.shapes.size());
    CHECK(parts[2].tensors().back().name == "output.weight");
    m.write(dir + "/whole.gguf");
    CHECK(gguf::open_split(dir + "/whole.gguf").size() == 1);
    // a later part given first; a missing part; a part that disagrees; a repeated tensor; a wrong total
    CHECK(error_of([&] { gguf::open_split(paths[1]); }).find("is part 2 of 3: open the first part, " + paths[0]) != std::string::npos);
    std::filesystem::rename(paths[2], dir + "/away.gguf");
    CHECK(error_of([&] { gguf::open_split(paths[0]); }).find(paths[2]) != std::string::npos);
    std::filesystem::rename(dir + "/away.gguf", paths[2]);
    std::filesystem::copy_file(paths[0], dir + "/other-00001-of-00003.gguf");
    std::filesystem::copy_file(paths[0], dir + "/other-00002-of-00003.gguf");  // split.no 0 where 1 is due
    std::filesystem::copy_file(paths[2], dir + "/other-00003-of-00003.gguf");
    CHECK(error_of([&] { gguf::open_split(dir + "/other-00001-of-00003.gguf"); })
              .find("other-00002-of-00003.gguf': split.no is 0, expected 1") != std::string::npos);
    std::filesystem::copy_file(paths[0], dir + "/renamed.gguf");
    CHECK(error_of([&] { gguf::open_split(dir + "/renamed.gguf"); }).find("does not end in -00001-of-00003.gguf") != std::string::npos);
    {
        tiny_model dup = m;  // blk.0's tensors again in part 2
        const auto dp = dup.write_split(dir + "/dup", {5, 13, 19});
        gguf::writer w;
        w.set<std::uint16_t>("split.no", 2);
        w.set<std::uint16_t>("split.count", 3);
        w.set<std::int32_t>("split.tensors.count", 19);
        w.add_tensor("blk.0.attn_q.weight", type_id::f32, {4}, std::vector<std::byte>(16));
        w.write_to_file(dp[2]);
        CHECK(error_of([&] { gguf::open_split(dp[0]); }).find("tensor 'blk.0.attn_q.weight' is also in an earlier part") != std::string::npos);
        w.remove("split.tensors.count");
        gguf::writer w2;
        w2.set<std::uint16_t>("split.no", 2);
        w2.set<std::uint16_t>("split.count", 3);
        w2.add_tensor("extra", type_id::f32, {4}, std::vector<std::byte>(16));
        w2.write_to_file(dp[2]);
        CHECK(error_of([&] { gguf::open_split(dp[0]); }).find("split.tensors.count = 19 but the 3 parts hold 14 tensors") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("quantize_model: a model in parts is merged, or with keep_split written in the same parts") {
    const std::string dir = temp_dir("keep-split");
    const tiny_model m;
    m.write(dir + "/whole.gguf");
    const auto paths = m.write_split(dir + "/m", {5, 13, 19});
    models::quantize_options o;
    o.ftype = models::llama_ftype::q4_K_M;
    // merged: the same file as from the model in one piece (the split.* keys dropped)
    const auto s1 = models::quantize_model(dir + "/whole.gguf", dir + "/a.gguf", o);
    const auto s2 = models::quantize_model(paths[0], dir + "/b.gguf", o);
    CHECK(s2.outputs == std::vector<std::string>{dir + "/b.gguf"});
    CHECK(s1.n_quantized == s2.n_quantized);
    CHECK(file_bytes(dir + "/a.gguf") == file_bytes(dir + "/b.gguf"));
    // keep_split: three parts with the input's tensors each, in the input's order
    o.keep_split = true;
    const auto s3 = models::quantize_model(paths[0], dir + "/c.gguf", o);
    REQUIRE(s3.outputs.size() == 3);
    CHECK(s3.outputs[2] == dir + "/c-00003-of-00003.gguf");
    const gguf::file merged = gguf::file::open(dir + "/a.gguf");
    const std::vector<gguf::file> out = gguf::open_split(s3.outputs[0]);
    const std::vector<gguf::file> in = gguf::open_split(paths[0]);
    REQUIRE(out.size() == 3);
    for (std::size_t p = 0; p < 3; ++p) {
        CAPTURE(p);
        REQUIRE(out[p].tensors().size() == in[p].tensors().size());
        for (std::size_t i = 0; i < in[p].tensors().size(); ++i) {
            const auto& t = out[p].tensors()[i];
            CHECK(t.name == in[p].tensors()[i].name);
            const gguf::tensor_info& r = merged.tensor(t.name);  // same type and bytes as merged
            CHECK(t.type == r.type);
            CHECK((t.size_bytes == r.size_bytes && std::memcmp(t.data, r.data, r.size_bytes) == 0));
        }
        const auto keys = key_names(out[p]);
        REQUIRE(keys.size() >= 3);
        CHECK(std::vector<std::string>(keys.end() - 3, keys.end()) ==
              std::vector<std::string>{"split.no", "split.count", "split.tensors.count"});
        CHECK(out[p].meta().get<std::uint16_t>("split.no") == p);
        CHECK(out[p].meta().get<std::int32_t>("split.tensors.count") == 19);
        if (p > 0) CHECK(keys.size() == 3);
    }
    auto k0 = key_names(out[0]);
    k0.resize(k0.size() - 3);
    CHECK(k0 == key_names(merged));
    // an input in one piece: OUT-00001-of-00001.gguf, no split keys
    const auto s4 = models::quantize_model(dir + "/whole.gguf", dir + "/d.gguf", o);
    CHECK(s4.outputs == std::vector<std::string>{dir + "/d-00001-of-00001.gguf"});
    const gguf::file d = gguf::file::open(s4.outputs[0]);
    CHECK(key_names(d) == key_names(merged));
    REQUIRE(d.tensors().size() == m.shapes.size());
    for (std::size_t i = 0; i < m.shapes.size(); ++i) {  // in the input's order (llama-quantize sorts by part and offset)
        const auto& t = d.tensors()[i];
        CHECK(t.name == m.shapes[i].first);
        CHECK(std::memcmp(t.data, merged.tensor(t.name).data, t.size_bytes) == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("quantize_model: COPY keeps every tensor; the keys it sets move to the end, as ggml sets them") {
    const std::string dir = temp_dir("copy");
    const tiny_model m(type_id::f16, 1u);  // general.file_type = 1, second key
    m.write(dir + "/in.gguf");
    models::quantize_options o;
    o.only_copy = true;
    const auto st = models::quantize_model(dir + "/in.gguf", dir + "/out.gguf", o);
    CHECK(st.n_quantized == 0);
    CHECK(st.n_kept == m.shapes.size());
    const gguf::file in = gguf::file::open(dir + "/in.gguf");
    const gguf::file out = gguf::file::open(dir + "/out.gguf");
    REQUIRE(out.tensors().size() == in.tensors().size());
    // llama-quantize's order: outside the layers by name, then layer by layer
    CHECK(out.tensors()[0].name == "output.weight");
    CHECK(out.tensors()[1].name == "output_norm.weight");
    CHECK(out.tensors()[2].name == "token_embd.weight");
    CHECK(out.tensors()[3].name == "blk.0.attn_norm.weight");
    for (const auto& t : out.tensors()) {
        const auto& r = in.tensor(t.name);
        CHECK((t.type == r.type && t.size_bytes == r.size_bytes && std::memcmp(t.data, r.data, r.size_bytes) == 0));
    }
    auto keys = key_names(out);
    CHECK(std::vector<std::string>(keys.end() - 2, keys.end()) == std::vector<std::string>{"general.quantization_version", "general.file_type"});
    CHECK(out.meta().get<std::uint32_t>("general.file_type") == 1);
    // without general.file_type: llama.cpp's guess (most tensors are f16: MOSTLY_F16 = 1) + 1024
    tiny_model(type_id::f16).write(dir + "/in2.gguf");
    models::quantize_model(dir + "/in2.gguf", dir + "/out2.gguf", o);
    CHECK(gguf::file::open(dir + "/out2.gguf").meta().get<std::uint32_t>("general.file_type") == 1025);
    tiny_model(type_id::f32).write(dir + "/in3.gguf");
    models::quantize_model(dir + "/in3.gguf", dir + "/out3.gguf", o);
    CHECK(gguf::file::open(dir + "/out3.gguf").meta().get<std::uint32_t>("general.file_type") == 1024);
    // an override of a key that is there moves it to the end too
    o.override_kv.push_back({models::kv_override::kind::str, "general.name", 0, 0, false, "renamed"});
    models::quantize_model(dir + "/in.gguf", dir + "/out4.gguf", o);
    const gguf::file o4 = gguf::file::open(dir + "/out4.gguf");
    CHECK(key_names(o4).back() == "general.name");
    CHECK(o4.meta().get<std::string>("general.name") == "renamed");
    // the type options do not apply to COPY
    o.override_kv.clear();
    o.leave_output_tensor = true;
    CHECK(error_of([&] { models::quantize_model(dir + "/in.gguf", dir + "/out5.gguf", o); }).find("only_copy (COPY) writes every tensor as it is") !=
          std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("quantize_model: prune_layers leaves out layers and numbers the others again, as llama-quantize") {
    const std::string dir = temp_dir("prune");
    const tiny_model m;
    m.write(dir + "/in.gguf");
    const gguf::file in = gguf::file::open(dir + "/in.gguf");
    models::quantize_options o;
    o.only_copy = true;
    o.prune_layers = {2, 1, 2};  // any order, repeats ignored
    const auto st = models::quantize_model(dir + "/in.gguf", dir + "/out.gguf", o);
    CHECK(st.n_pruned == 8);
    const gguf::file out = gguf::file::open(dir + "/out.gguf");
    CHECK(out.tensors().size() == m.shapes.size() - 8);
    CHECK(out.meta().get<std::uint32_t>("llama.block_count") == 2);
    CHECK(key_names(out).back() == "llama.block_count");
    CHECK(out.find_tensor("blk.2.attn_q.weight") == nullptr);
    for (const char* n : {"attn_norm.weight", "attn_q.weight", "attn_v.weight", "ffn_down.weight"}) {
        CAPTURE(n);
        const auto& a = out.tensor(std::string("blk.1.") + n);  // was blk.3
        const auto& b = in.tensor(std::string("blk.3.") + n);
        CHECK((a.size_bytes == b.size_bytes && std::memcmp(a.data, b.data, a.size_bytes) == 0));
        const auto& c = out.tensor(std::string("blk.0.") + n);  // stays blk.0
        CHECK(std::memcmp(c.data, in.tensor(std::string("blk.0.") + n).data, c.size_bytes) == 0);
    }
    // the first layer: every later one moves down
    o.prune_layers = {0};
    models::quantize_model(dir + "/in.gguf", dir + "/out0.gguf", o);
    const gguf::file o0 = gguf::file::open(dir + "/out0.gguf");
    CHECK(o0.meta().get<std::uint32_t>("llama.block_count") == 3);
    CHECK(std::memcmp(o0.tensor("blk.0.ffn_down.weight").data, in.tensor("blk.1.ffn_down.weight").data, 256 * 8 * 4) == 0);
    CHECK(std::memcmp(o0.tensor("blk.2.ffn_down.weight").data, in.tensor("blk.3.ffn_down.weight").data, 256 * 8 * 4) == 0);
    // quantizing: the imatrix is found under the input name; the rules count the input's 4 layers
    std::unordered_map<std::string, std::vector<float>> imat;
    imat["blk.3.ffn_down.weight"] = std::vector<float>(256, 1.0f);
    o.only_copy = false;
    o.ftype = models::llama_ftype::q4_K_M;
    o.imatrix = &imat;
    o.prune_layers = {1, 2};
    o.dry_run = true;
    const auto q = models::quantize_model(dir + "/in.gguf", "", o);
    bool found = false;
    for (const auto& r : q.tensors)
        if (r.name == "blk.1.ffn_down.weight") {
            found = true;
            CHECK(r.used_imatrix);
            // Q4_K_M gives ffn_down number i of n q6_K when i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2:
            // the 2nd one kept (i = 1) of the input's n = 4 stays q4_K (of n = 2 it would be q6_K)
            CHECK(r.out_type == type_id::q4_K);
        } else if (r.name == "blk.0.ffn_down.weight") {
            CHECK_FALSE(r.used_imatrix);
            CHECK(r.out_type == type_id::q4_K);
        }
    CHECK(found);
    // refused: a layer the model does not have, and every layer
    o.dry_run = false;
    o.prune_layers = {4};
    CHECK(error_of([&] { models::quantize_model(dir + "/in.gguf", dir + "/x.gguf", o); }).find("prune_layers: layer 4 is not a layer of the model (llama.block_count = 4)") !=
          std::string::npos);
    o.prune_layers = {0, 1, 2, 3};
    CHECK(error_of([&] { models::quantize_model(dir + "/in.gguf", dir + "/x.gguf", o); }).find("would leave out all 4 layers") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir + "/x.gguf"));
    std::filesystem::remove_all(dir);
}
