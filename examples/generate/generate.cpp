// generate: text generation with a llama-architecture GGUF model on tessera.
//
//   generate -m model.gguf -p "Once upon a time" -n 64      greedy
//   generate -m model.gguf -p "..." --temp 0.8 --top-k 40 --top-p 0.95 --seed 1
//   generate                                                  no model: a random-weight demo
//   generate -m model.gguf --device vulkan                    on the first Vulkan device
//
// stdout gets the prompt and then each generated piece as it comes (nothing else);
// stderr gets the model summary and the prompt and generation speeds. The prompt is
// processed in batches of -b tokens (one graph each), then one token per graph with
// the KV cache.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/backend/vulkan.hpp"  // --device vulkan (registry::global() lists the devices a program includes)
#include "tessera/models/llama.hpp"
#include "tessera/models/random.hpp"
#include "tessera/models/sampling.hpp"

namespace {

using namespace tessera;

constexpr const char* usage_text =
    "usage: generate [-m model.gguf] [-p prompt] [-n tokens] [options]\n"
    "  -m, --model PATH     llama-architecture GGUF model; without it a random-weight\n"
    "                       model is built with tessera's GGUF writer and run (a demo)\n"
    "  -p, --prompt TEXT    prompt (default \"Once upon a time\")\n"
    "  -n, --n-predict N    tokens to generate (default 64); stops early at end of text\n"
    "  --temp T             temperature; 0 (default) is greedy\n"
    "  --top-k K            keep the K most likely tokens (default 40; 0: all)\n"
    "  --top-p P            keep the smallest set of probability >= P (default 0.95)\n"
    "  --seed S             sampler seed (default 1)\n"
    "  -t, --threads N      threads (default: all hardware threads)\n"
    "  -c, --ctx-size N     KV cache length (default: min(training context, 4096))\n"
    "  -b, --batch-size N   prompt tokens per graph (default 512)\n"
    "  --kv f16|f32         KV cache type (default f16)\n"
    "  --no-fa              mul_mat + soft_max attention instead of flash_attn_ext\n"
    "  --device NAME        cpu, vulkan, a device name such as Vulkan0, or best (default):\n"
    "                       the first GPU that is not a software driver, else the CPU; ops\n"
    "                       the device does not compute run on the CPU\n"
    "  --n-copies N         the scheduler's pipeline copy sets, 1..4 (default 1)\n"
    "  --random-type TYPE   weight type of the random demo model (default q8_0)\n"
    "  --random-out PATH    keep the random demo model's GGUF file at PATH\n"
    "  -h, --help           this text\n"
    "  --version            version, compiler and SIMD arch\n";

struct args {
    std::string model, prompt = "Once upon a time", random_out;
    int n_predict = 64, threads = 0;
    std::int64_t n_ctx = 0, n_batch = 512;
    models::sampler_params sp{.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 1};
    type_id kv = type_id::f16, random_type = type_id::q8_0;
    bool flash_attn = true;
    std::string device = "best";
    int n_copies = 1;
};

using cli::to_int;
using cli::usage_error;

float to_float(std::string_view opt, const std::string& v, double lo, double hi) {
    return static_cast<float>(cli::to_float(opt, v, lo, hi));
}

// The options; throws cli::usage_error. help is set for -h / --help (nothing else is read).
args parse(int argc, char** argv, bool& help) {
    args a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view o = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw usage_error(std::string(o) + " needs a value");
            return argv[++i];
        };
        if (o == "-h" || o == "--help") {
            help = true;
            return a;
        } else if (o == "-m" || o == "--model") {
            a.model = value();
            if (a.model.empty()) throw usage_error(std::string(o) + " needs a file name, not ''");
        } else if (o == "-p" || o == "--prompt") {
            a.prompt = value();
        } else if (o == "-n" || o == "--n-predict") {
            a.n_predict = static_cast<int>(to_int(o, value(), 0, 1 << 20));
        } else if (o == "--temp") {
            a.sp.temp = to_float(o, value(), 0.0, 1e9);
        } else if (o == "--top-k") {
            a.sp.top_k = static_cast<int>(to_int(o, value(), 0, 1 << 30));
        } else if (o == "--top-p") {
            a.sp.top_p = to_float(o, value(), 0.0, 1.0);
            if (!(a.sp.top_p > 0.0f)) throw usage_error("--top-p " + std::string(argv[i]) + " is outside (0, 1]");
        } else if (o == "--seed") {
            a.sp.seed = static_cast<std::uint64_t>(to_int(o, value(), 0, std::numeric_limits<long long>::max()));
        } else if (o == "-t" || o == "--threads") {
            a.threads = static_cast<int>(to_int(o, value(), 1, 1024));
        } else if (o == "-c" || o == "--ctx-size") {
            a.n_ctx = to_int(o, value(), 1, 1 << 24);
        } else if (o == "-b" || o == "--batch-size") {
            a.n_batch = to_int(o, value(), 1, 1 << 20);
        } else if (o == "--kv") {
            const std::string v = value();
            if (v == "f16") a.kv = type_id::f16;
            else if (v == "f32") a.kv = type_id::f32;
            else throw usage_error("--kv must be f16 or f32, not '" + v + "'");
        } else if (o == "--no-fa") {
            a.flash_attn = false;
        } else if (o == "--device") {
            a.device = value();
        } else if (o == "--n-copies") {
            a.n_copies = static_cast<int>(to_int(o, value(), 1, 4));
        } else if (o == "--random-type") {
            const std::string v = value();
            const auto t = type_from_name(v);
            if (!t) throw usage_error("--random-type: unknown type '" + v + "'");
            a.random_type = *t;
        } else if (o == "--random-out") {
            a.random_out = value();
            if (a.random_out.empty()) throw usage_error("--random-out needs a file name, not ''");
        } else if (o == "--version") {
            cli::print_version_and_exit();
        } else if (o.size() > 1 && o[0] == '-') {
            throw cli::unknown_option(o);
        } else {
            throw usage_error("unexpected argument '" + std::string(o) + "' (the model goes after -m)");
        }
    }
    return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Removes a file when it goes out of scope (the random demo model's temporary file).
struct remove_on_exit {
    std::string path;
    ~remove_on_exit() {
        if (!path.empty()) std::remove(path.c_str());
    }
};

// Writes the random demo model and returns its path: --random-out (written under a
// temporary name and renamed, so a failure leaves no partial file), else a file in the
// temporary folder that cleanup removes.
std::string write_random_model(const args& a, remove_on_exit& cleanup) {
    models::random_llama_config c;
    c.n_embd = 256;
    c.n_layer = 4;
    c.n_ff = 768;
    c.n_head = 8;
    c.n_head_kv = 4;
    c.n_ctx = 1024;
    c.weight_type = a.random_type;
    std::string path = a.random_out;
    if (path.empty()) {
        path = (std::filesystem::temp_directory_path() /
                ("tessera-random-llama-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".gguf"))
                   .string();
        cleanup.path = path;
        models::random_llama(c).write_to_file(path);
    } else {
        cli::check_output_folder("--random-out", path);
        cli::atomic_output out(path);
        models::random_llama(c).write_to_file(out.tmp_path());
        out.commit();
    }
    std::fprintf(stderr,
                 "generate: no model given (-m); wrote a random-weight llama model (%lld layers, n_embd %lld, %s weights) "
                 "to %s (random weights: expect gibberish)\n",
                 static_cast<long long>(c.n_layer), static_cast<long long>(c.n_embd), std::string(type_name(c.weight_type)).c_str(),
                 path.c_str());
    return path;
}

int run(const args& a, cli::state& st) {
    remove_on_exit cleanup;
    std::string path = a.model;
    bool mid_line = false;  // stdout has the prompt and pieces but no newline yet
    try {
        if (path.empty()) {
            st.file = a.random_out;
            path = write_random_model(a, cleanup);
        }
        st.file = path;
        models::llama_model m = models::llama_model::load(
            path, {.n_threads = a.threads,
                   .n_ctx = a.n_ctx,
                   .n_batch = a.n_batch,
                   .kv_type = a.kv,
                   .flash_attn = a.flash_attn,
                   .device = a.device,
                   .n_copies = a.n_copies});
        if (!cleanup.path.empty()) {  // the weights stay mapped
            std::remove(cleanup.path.c_str());
            cleanup.path.clear();
        }
        const auto& hp = m.hparams();
        std::fprintf(stderr, "generate: %s: %s, %lld layers, n_embd %lld, n_vocab %lld, %.2f M parameters, %.1f MiB of weights, %d threads, device %s\n",
                     m.file().source().c_str(), hp.arch.c_str(), static_cast<long long>(hp.n_layer),
                     static_cast<long long>(hp.n_embd), static_cast<long long>(hp.n_vocab), static_cast<double>(m.n_params()) / 1e6,
                     static_cast<double>(m.weight_bytes()) / (1024.0 * 1024.0), m.n_threads(), std::string(m.device_name()).c_str());
        const auto& tok = m.tokenizer();
        const auto ids = tok.tokenize(a.prompt, true);
        if (ids.empty()) {
            std::fprintf(stderr, "generate: the prompt has no tokens\n");
            return 1;
        }
        if (static_cast<std::int64_t>(ids.size()) >= m.n_ctx()) {
            std::fprintf(stderr, "generate: the prompt has %zu tokens, the context (-c) only %lld\n", ids.size(),
                         static_cast<long long>(m.n_ctx()));
            return 1;
        }
        std::fputs(a.prompt.c_str(), stdout);
        std::fflush(stdout);
        mid_line = true;

        models::sampler smp(a.sp);
        const std::vector<std::int32_t> prompt(ids.begin(), ids.end());
        auto t0 = std::chrono::steady_clock::now();
        std::vector<float> logits = m.eval(prompt);
        const double t_prompt = seconds_since(t0);

        int n_gen = 0, n_eval = 0;  // tokens written; tokens run through the model one by one
        bool full = false;
        t0 = std::chrono::steady_clock::now();
        while (n_gen < a.n_predict) {
            const std::int32_t next = smp.sample(logits);
            if (tok.get_vocab().is_eog(next)) break;
            const std::string_view piece = tok.token_to_piece(next, false);
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            if (++n_gen == a.n_predict) break;
            if (m.n_past() >= m.n_ctx()) {
                full = true;
                break;
            }
            logits = m.eval(std::span<const std::int32_t>(&next, 1));
            ++n_eval;
        }
        const double t_gen = seconds_since(t0);
        std::fputc('\n', stdout);
        std::fflush(stdout);
        mid_line = false;
        if (full) std::fprintf(stderr, "generate: the context of %lld tokens is full\n", static_cast<long long>(m.n_ctx()));
        std::fprintf(stderr, "generate: prompt     %5zu tokens in %8.2f ms = %9.1f tokens/s\n", prompt.size(), t_prompt * 1e3,
                     static_cast<double>(prompt.size()) / t_prompt);
        std::fprintf(stderr, "generate: generation %5d tokens in %8.2f ms = %9.1f tokens/s (%d generated)\n", n_eval,
                     t_gen * 1e3, n_eval > 0 ? n_eval / t_gen : 0.0, n_gen);
        std::fprintf(stderr, "generate: compute buffer %.2f MiB\n", static_cast<double>(m.compute_buffer_size()) / (1024.0 * 1024.0));
        return 0;
    } catch (...) {
        if (mid_line) {  // end the text line so the error does not trail it on a terminal
            std::fputc('\n', stdout);
            std::fflush(stdout);
        }
        throw;
    }
}

}  // namespace

int main(int argc, char** argv) {
    return cli::run("generate", "try a smaller context (-c), a quantized model or fewer threads (-t)", [&](cli::state& st) {
        bool help = false;
        const args a = parse(argc, argv, help);
        if (help) {
            std::fputs(usage_text, stdout);
            return 0;
        }
        return run(a, st);
    });
}
