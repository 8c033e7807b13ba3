// generate: text generation with a llama-architecture GGUF model on tessera.
//
//   generate -m model.gguf -p "Once upon a time" -n 64      greedy
//   generate -m model.gguf -p "..." --temp 0.8 --top-k 40 --top-p 0.95 --seed 1
//   generate -m model.gguf -f prompt.txt --mirostat 2 -s 7   mirostat v2, prompt from a file
//   generate -m model.gguf -p "User:" -r "User:" -i           line mode: stdin answers
//   generate                                                  no model: a random-weight demo
//   generate -m model.gguf --device vulkan                    on the first Vulkan device
//   generate -m chat.gguf -cnv -sys "Be brief." -p "Hi" -i     a chat with the file's template
//   mpirun -np 3 generate -m model.gguf --mpi -t 1             layers on rank 0's CPU, rank 1, rank 2
//
// stdout gets the prompt and then each generated piece as it comes (nothing else; the
// lines read in -i mode are not echoed); stderr gets the model summary and the prompt
// and generation speeds. The prompt is processed in graphs of -ub tokens (at most -b;
// with --mpi rank 0 queues the next while the later ranks compute), then one token per graph with the KV cache. The sampler chain and its options
// are llama.cpp's (models/sampling.hpp); the prompt's tokens are in the penalties'
// history, as in llama.cpp.
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/backend/mpi.hpp"     // --mpi (built with TESSERA_MPI)
#include "tessera/backend/vulkan.hpp"  // --device vulkan (registry::global() lists the devices a program includes)
#include "tessera/text/chat_template_gguf.hpp"
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
    "  -f, --file PATH      the prompt from a file (one trailing newline dropped)\n"
    "  -e, --escape         process escapes in the prompt and reverse prompts: \\n \\r \\t\n"
    "                       \\a \\b \\f \\v \\\\ \\' \\\" \\? \\xHH\n"
    "  --no-display-prompt  do not write the prompt to stdout\n"
    "  -n, --n-predict N    tokens to generate (default 64; per turn with -i); stops early\n"
    "                       at end of text or a reverse prompt\n"
    "  -r, --reverse-prompt STR  stop when the generated text reaches STR (repeatable);\n"
    "                       with -i, read the next line then\n"
    "  -i, --interactive    line mode: when generation stops, read a line from stdin,\n"
    "                       append it (with its newline) and go on; end of input ends\n"
    "  --logits-out PATH    write the logits after the prompt as a JSON array (n_vocab\n"
    "                       numbers; null for a non-finite one)\n"
    "  -v, --verbose        also write the prompt's and the generated token ids to stderr\n"
    "  -q, --quiet          no loading progress on stderr\n"
    "chat (the prompt and each line of -i become user messages of a chat template):\n"
    "  -cnv, --conversation use the model's template (GGUF tokenizer.chat_template)\n"
    "  --chat-template T    use template T: llama2, llama3, chatml, mistral, or a Jinja\n"
    "                       template text (implies -cnv)\n"
    "  -sys, --system-prompt TEXT  a system message first (implies -cnv)\n"
    "sampling (llama.cpp's chain: penalties, top-k, typical, top-p, min-p, temperature):\n"
    "  --temp T             temperature; 0 (default) is greedy\n"
    "  --top-k K            keep the K most likely tokens (default 40; 0: all)\n"
    "  --top-p P            keep the smallest set of probability >= P (default 0.95)\n"
    "  --min-p P            keep tokens of probability >= P times the largest (default 0: off)\n"
    "  --typical P          locally typical sampling with mass P (default 1: off)\n"
    "  --repeat-penalty F   divide positive / multiply negative logits of recent tokens by F\n"
    "                       (default 1: off)\n"
    "  --repeat-last-n N    tokens the penalties look at (default 64; 0: none, -1: all)\n"
    "  --presence-penalty F subtract F from the logit of each recent token (default 0)\n"
    "  --frequency-penalty F  subtract F times its count from each recent token (default 0)\n"
    "  --dynatemp-range R   dynamic temperature in [T - R, T + R] by entropy (default 0: off)\n"
    "  --dynatemp-exp E     dynamic temperature exponent (default 1)\n"
    "  --mirostat N         mirostat 1 or 2 instead of top-k .. min-p (default 0: off)\n"
    "  --mirostat-lr ETA    mirostat learning rate (default 0.1)\n"
    "  --mirostat-ent TAU   mirostat target entropy (default 5)\n"
    "  -s, --seed S         sampler seed (default 1)\n"
    "  -t, --threads N      threads (default: all hardware threads)\n"
    "  -c, --ctx-size N     KV cache length (default: min(training context, 4096))\n"
    "  -b, --batch-size N   prompt tokens per graph (default 512)\n"
    "  -ub, --ubatch-size N micro-batches: graphs of N tokens (default: -b); with --mpi\n"
    "                       the ranks overlap on successive micro-batches\n"
    "  --kv f16|f32         KV cache type (default f16)\n"
    "  --no-fa              mul_mat + soft_max attention instead of flash_attn_ext\n"
    "  --repack             copy the CPU's q4_0 / q8_0 / q4_K matrices into the packed GEMM's layout\n"
    "                       at load (llama.cpp's CPU_REPACK; default: read in place from the file)\n"
    "  --device NAME        cpu, vulkan, a device name such as Vulkan0, or best (default):\n"
    "                       the first GPU that is not a software driver, else the CPU; ops\n"
    "                       the device does not compute run on the CPU\n"
    "  --n-copies N         the scheduler's pipeline copy sets, 1..4 (default 1)\n"
    "  --mpi                under mpirun -np N (N >= 2): the layers split across rank 0's CPU\n"
    "                       and ranks 1..N-1 (devices MPI1..), each rank mapping the model\n"
    "                       file itself; the output runs on the last rank\n"
    "  --split-layers A,B,..  with --mpi: layers per rank (summing to the layer count;\n"
    "                       default: even, earlier ranks take the remainder)\n"
    "  --random-type TYPE   weight type of the random demo model (default q8_0)\n"
    "  --random-size S      its size: small (default; 4 layers, 256 wide) or 110M (12 layers,\n"
    "                       768 wide, 16000 tokens: bench_models' model, for timing)\n"
    "  --random-out PATH    keep the random demo model's GGUF file at PATH\n"
    "  -h, --help           this text\n"
    "  --version            version, compiler and SIMD arch\n";

struct args {
    std::string model, prompt = "Once upon a time", random_out, logits_out;
    std::vector<std::string> reverse;
    bool display_prompt = true, interactive = false, verbose = false, quiet = false;
    bool chat = false;                   // -cnv: messages through a chat template
    std::string chat_template, system;  // "" = the file's template; no system message
    int n_predict = 64, threads = 0;
    std::int64_t n_ctx = 0, n_batch = 512, n_ubatch = 0;
    models::sampler_params sp{.temp = 0.0f, .top_k = 40, .top_p = 0.95f, .seed = 1};
    type_id kv = type_id::f16, random_type = type_id::q8_0;
    bool random_110m = false;
    bool flash_attn = true, repack = false;
    std::string device = "best";
    int n_copies = 1;
    bool mpi = false;
    std::vector<int> split_layers;
};

using cli::to_int;
using cli::usage_error;

float to_float(std::string_view opt, const std::string& v, double lo, double hi) {
    return static_cast<float>(cli::to_float(opt, v, lo, hi));
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// C escapes as llama.cpp's -e takes them; an unknown one (and a trailing backslash) stays as it is.
std::string process_escapes(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        switch (c) {
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'v': out += '\v'; break;
            case '\\':
            case '\'':
            case '"':
            case '?': out += c; break;
            case 'x':
                if (i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
                    out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
                    i += 2;
                    break;
                }
                [[fallthrough]];
            default:
                out += '\\';
                out += c;
        }
    }
    return out;
}

// The whole of a prompt file, less one trailing newline (as llama.cpp's -f).
std::string read_prompt_file(const std::string& opt, const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error(opt + ": cannot open '" + path + "': " + std::strerror(errno));
    std::string text;
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    const bool bad = std::ferror(f) != 0;
    const int err = errno;
    std::fclose(f);
    if (bad) throw std::runtime_error(opt + ": cannot read '" + path + "': " + std::strerror(err));
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

// The options; throws cli::usage_error. help is set for -h / --help (nothing else is read).
args parse(int argc, char** argv, bool& help) {
    args a;
    bool escape = false;
    std::string prompt_from;  // the option that set the prompt
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
        } else if (o == "-p" || o == "--prompt" || o == "-f" || o == "--file") {
            const bool file = o == "-f" || o == "--file";
            if (!prompt_from.empty())
                throw usage_error(std::string(o) + " after " + prompt_from + ": give the prompt once (-p or -f)");
            prompt_from = o;
            a.prompt = file ? read_prompt_file(std::string(o), value()) : value();
        } else if (o == "-e" || o == "--escape") {
            escape = true;
        } else if (o == "--no-display-prompt") {
            a.display_prompt = false;
        } else if (o == "-r" || o == "--reverse-prompt") {
            a.reverse.push_back(value());
            if (a.reverse.back().empty()) throw usage_error(std::string(o) + " needs a string, not ''");
        } else if (o == "-i" || o == "--interactive") {
            a.interactive = true;
        } else if (o == "--logits-out") {
            a.logits_out = value();
            if (a.logits_out.empty()) throw usage_error("--logits-out needs a file name, not ''");
        } else if (o == "-v" || o == "--verbose") {
            a.verbose = true;
        } else if (o == "-q" || o == "--quiet") {
            a.quiet = true;
        } else if (o == "-cnv" || o == "--conversation") {
            a.chat = true;
        } else if (o == "--chat-template") {
            a.chat = true;
            a.chat_template = value();
            if (a.chat_template.empty()) throw usage_error("--chat-template needs a name or a template, not ''");
        } else if (o == "-sys" || o == "--system-prompt") {
            a.chat = true;
            a.system = value();
        } else if (o == "--min-p") {
            a.sp.min_p = to_float(o, value(), 0.0, 1.0);
        } else if (o == "--typical") {
            a.sp.typical_p = to_float(o, value(), 0.0, 1.0);
        } else if (o == "--repeat-penalty") {
            a.sp.repeat_penalty = to_float(o, value(), 0.0, 1e9);
            if (!(a.sp.repeat_penalty > 0.0f)) throw usage_error("--repeat-penalty " + std::string(argv[i]) + " is outside (0, 1e9]");
        } else if (o == "--repeat-last-n") {
            a.sp.repeat_last_n = static_cast<int>(to_int(o, value(), -1, 1 << 24));
        } else if (o == "--presence-penalty") {
            a.sp.presence_penalty = to_float(o, value(), -1e9, 1e9);
        } else if (o == "--frequency-penalty") {
            a.sp.frequency_penalty = to_float(o, value(), -1e9, 1e9);
        } else if (o == "--dynatemp-range") {
            a.sp.dynatemp_range = to_float(o, value(), 0.0, 1e9);
        } else if (o == "--dynatemp-exp") {
            a.sp.dynatemp_exponent = to_float(o, value(), 0.0, 1e9);
        } else if (o == "--mirostat") {
            a.sp.mirostat = static_cast<int>(to_int(o, value(), 0, 2));
        } else if (o == "--mirostat-lr") {
            a.sp.mirostat_eta = to_float(o, value(), 0.0, 1e9);
        } else if (o == "--mirostat-ent") {
            a.sp.mirostat_tau = to_float(o, value(), 0.0, 1e9);
        } else if (o == "-n" || o == "--n-predict") {
            a.n_predict = static_cast<int>(to_int(o, value(), 0, 1 << 20));
        } else if (o == "--temp") {
            a.sp.temp = to_float(o, value(), 0.0, 1e9);
        } else if (o == "--top-k") {
            a.sp.top_k = static_cast<int>(to_int(o, value(), 0, 1 << 30));
        } else if (o == "--top-p") {
            a.sp.top_p = to_float(o, value(), 0.0, 1.0);
            if (!(a.sp.top_p > 0.0f)) throw usage_error("--top-p " + std::string(argv[i]) + " is outside (0, 1]");
        } else if (o == "-s" || o == "--seed") {
            a.sp.seed = static_cast<std::uint64_t>(to_int(o, value(), 0, std::numeric_limits<long long>::max()));
        } else if (o == "-t" || o == "--threads") {
            a.threads = static_cast<int>(to_int(o, value(), 1, 1024));
        } else if (o == "-c" || o == "--ctx-size") {
            a.n_ctx = to_int(o, value(), 1, 1 << 24);
        } else if (o == "-b" || o == "--batch-size") {
            a.n_batch = to_int(o, value(), 1, 1 << 20);
        } else if (o == "-ub" || o == "--ubatch-size") {
            a.n_ubatch = to_int(o, value(), 1, 1 << 20);
        } else if (o == "--kv") {
            const std::string v = value();
            if (v == "f16") a.kv = type_id::f16;
            else if (v == "f32") a.kv = type_id::f32;
            else throw usage_error("--kv must be f16 or f32, not '" + v + "'");
        } else if (o == "--no-fa") {
            a.flash_attn = false;
        } else if (o == "--repack") {
            a.repack = true;
        } else if (o == "--device") {
            a.device = value();
        } else if (o == "--n-copies") {
            a.n_copies = static_cast<int>(to_int(o, value(), 1, 4));
        } else if (o == "--mpi") {
            a.mpi = true;
        } else if (o == "--split-layers") {
            const std::string v = value();
            a.split_layers.clear();
            std::size_t at = 0;
            while (true) {
                const std::size_t comma = v.find(',', at);
                a.split_layers.push_back(static_cast<int>(to_int(o, v.substr(at, comma == std::string::npos ? std::string::npos : comma - at), 0, 1 << 20)));
                if (comma == std::string::npos) break;
                at = comma + 1;
            }
        } else if (o == "--random-type") {
            const std::string v = value();
            const auto t = type_from_name(v);
            if (!t) throw usage_error("--random-type: unknown type '" + v + "'");
            a.random_type = *t;
        } else if (o == "--random-size") {
            const std::string v = value();
            if (v != "small" && v != "110M") throw usage_error("--random-size: '" + v + "' is not small or 110M");
            a.random_110m = v == "110M";
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
    if (!a.split_layers.empty() && !a.mpi) throw usage_error("--split-layers needs --mpi");
    if (escape) {
        a.prompt = process_escapes(a.prompt);
        for (auto& r : a.reverse) r = process_escapes(r);
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
    if (a.random_110m) {
        c = models::random_llama_config::llama_110m(a.random_type);
    } else {
        c.n_embd = 256;
        c.n_layer = 4;
        c.n_ff = 768;
        c.n_head = 8;
        c.n_head_kv = 4;
        c.n_ctx = 1024;
        c.weight_type = a.random_type;
    }
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

// Writes logits to path as one JSON array (null for a non-finite value), under a
// temporary name renamed at the end, so a failure leaves no partial file.
void write_logits(const std::string& path, std::span<const float> logits) {
    cli::atomic_output out(path);
    std::FILE* f = std::fopen(out.tmp_path().c_str(), "wb");
    if (!f) throw std::runtime_error("--logits-out: cannot create '" + out.tmp_path() + "': " + std::strerror(errno));
    std::fputc('[', f);
    for (std::size_t i = 0; i < logits.size(); ++i) {
        if (i) std::fputs(i % 8 ? ", " : ",\n", f);
        if (std::isfinite(logits[i])) std::fprintf(f, "%.9g", static_cast<double>(logits[i]));
        else std::fputs("null", f);
    }
    std::fputs("]\n", f);
    const bool bad = std::ferror(f) != 0;
    const int err = errno;
    if (std::fclose(f) != 0 || bad)
        throw std::runtime_error("--logits-out: writing '" + out.tmp_path() + "' failed: " + std::strerror(bad ? err : errno));
    out.commit();
}

// One line from stdin without its newline; false at end of input.
bool read_line(std::string& line) {
    line.clear();
    char buf[4096];
    while (std::fgets(buf, sizeof buf, stdin)) {
        line += buf;
        if (!line.empty() && line.back() == '\n') {
            line.pop_back();
            return true;
        }
    }
    if (std::ferror(stdin)) throw std::runtime_error(std::string("reading standard input failed: ") + std::strerror(errno));
    return !line.empty();  // a last line without a newline
}

std::string ids_text(std::span<const std::int32_t> ids) {
    std::string s;
    for (std::int32_t id : ids) {
        if (!s.empty()) s += ' ';
        s += std::to_string(id);
    }
    return s;
}

// A chat (-cnv): the messages so far and their template. What a new user message adds
// to the model's input is the conversation rendered with it and the generation prompt,
// less the conversation rendered before it (as llama.cpp's chat mode).
struct chat_state {
    text::chat_template tmpl;
    text::chat_options opt;
    std::vector<text::chat_message> msgs;

    // The first prompt: the whole conversation (a system message and this user message).
    std::string start(const std::string& content) {
        msgs.push_back({"user", content});
        return tmpl.apply(msgs, opt);
    }

    std::string add_user(const std::string& content) {
        text::chat_options no_gen = opt;
        no_gen.add_generation_prompt = false;
        const std::string before = msgs.empty() ? std::string() : tmpl.apply(msgs, no_gen);
        msgs.push_back({"user", content});
        const std::string after = tmpl.apply(msgs, opt);
        if (after.compare(0, before.size(), before) != 0)
            throw std::runtime_error("the chat template renders the earlier messages differently once a message is added; "
                                     "the conversation cannot go on (try another --chat-template)");
        return after.substr(before.size());
    }
};

// Loading progress on stderr: a line every 2 s while weights are placed (an upload to a
// device can take that long), and one at the end with the totals; none with -q.
struct load_reporter {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now(), last = t0;
    models::load_progress seen;

    void line(const models::load_progress& p, const char* what) const {
        const double s = std::max(seconds_since(t0), 1e-6);
        std::fprintf(stderr, "generate: %s %zu/%zu weights, %.1f/%.1f MiB, %.1f MB/s\n", what, p.done, p.total,
                     static_cast<double>(p.bytes_done) / (1024.0 * 1024.0), static_cast<double>(p.bytes_total) / (1024.0 * 1024.0),
                     static_cast<double>(p.bytes_done) / 1e6 / s);
    }
    void operator()(const models::load_progress& p) {
        seen = p;
        const auto now = std::chrono::steady_clock::now();
        if (p.done < p.total && std::chrono::duration<double>(now - last).count() >= 2.0) {
            line(p, "loading");
            last = now;
        }
    }
};

int run(const args& a, cli::state& st) {
    remove_on_exit cleanup;
    std::string path = a.model;
    bool mid_line = false;  // stdout has the prompt and pieces but no newline yet
    try {
        if (!a.logits_out.empty()) cli::check_output_folder("--logits-out", a.logits_out);
        if (path.empty()) {
            st.file = a.random_out;
            path = write_random_model(a, cleanup);
        }
        st.file = path;
        std::vector<std::string> pipeline;  // --mpi: CPU, MPI1, ..
        if (a.mpi) {
#if defined(TESSERA_MPI) && TESSERA_MPI
            const backend::mpi::session* s = backend::mpi::session::current();
            if (!s || s->size() < 2) throw usage_error("--mpi needs mpirun -np N with N >= 2");
            pipeline.push_back("CPU");
            for (int r = 1; r < s->size(); ++r) pipeline.push_back("MPI" + std::to_string(r));
#else
            throw usage_error("--mpi: built without MPI (meson -Dmpi=enabled, Debian libopenmpi-dev)");
#endif
        }
        auto progress = std::make_shared<load_reporter>();
        models::llama_model m = models::llama_model::load(
            path, {.n_threads = a.threads,
                   .n_ctx = a.n_ctx,
                   .n_batch = a.n_batch,
                   .n_ubatch = a.n_ubatch,
                   .kv_type = a.kv,
                   .flash_attn = a.flash_attn,
                   .device = a.device,
                   .n_copies = a.n_copies,
                   .pipeline = pipeline,
                   .layer_split = a.split_layers,
                   .progress = a.quiet ? std::function<void(const models::load_progress&)>()
                                       : [progress](const models::load_progress& p) { (*progress)(p); },
                   .repack = a.repack});
        if (!a.quiet) progress->line(progress->seen, "loaded");
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
        std::optional<chat_state> chat;
        std::string prompt_text = a.prompt;
        bool add_bos = true;
        if (a.chat) {
            chat.emplace(chat_state{text::chat_template(text::resolve_chat_template(a.chat_template, m.file().meta())),
                                    text::chat_options_from_vocab(tok.get_vocab(), true), {}});
            if (!a.system.empty()) chat->msgs.push_back({"system", a.system});
            prompt_text = chat->start(a.prompt);
            // the llama-2/3 and mistral templates write the BOS text themselves
            add_bos = chat->opt.bos_token.empty() || prompt_text.rfind(chat->opt.bos_token, 0) != 0;
            if (a.verbose) std::fprintf(stderr, "generate: chat prompt: %s\n", prompt_text.c_str());
        }
        const auto ids = tok.tokenize(prompt_text, add_bos, a.chat);
        if (ids.empty()) {
            std::fprintf(stderr, "generate: the prompt has no tokens\n");
            return 1;
        }
        if (static_cast<std::int64_t>(ids.size()) >= m.n_ctx()) {
            std::fprintf(stderr, "generate: the prompt has %zu tokens, the context (-c) only %lld\n", ids.size(),
                         static_cast<long long>(m.n_ctx()));
            return 1;
        }
        if (a.display_prompt) {
            std::fputs(prompt_text.c_str(), stdout);
            std::fflush(stdout);
            mid_line = true;
        }

        models::sampler smp(a.sp);
        const std::vector<std::int32_t> prompt(ids.begin(), ids.end());
        for (std::int32_t id : prompt) smp.accept(id);  // the penalties see the prompt, as llama.cpp's
        if (a.verbose) std::fprintf(stderr, "generate: prompt ids: %s\n", ids_text(prompt).c_str());
#if defined(TESSERA_MPI) && TESSERA_MPI
        const backend::mpi::session* mpi_s = a.mpi ? backend::mpi::session::current() : nullptr;
        backend::mpi::traffic_counters before_prompt, after_prompt;
        if (mpi_s) before_prompt = mpi_s->traffic();
#endif
        auto t0 = std::chrono::steady_clock::now();
        std::vector<float> logits = m.eval(prompt);
        double t_prompt = seconds_since(t0);
#if defined(TESSERA_MPI) && TESSERA_MPI
        if (mpi_s) after_prompt = mpi_s->traffic();
#endif
        std::size_t n_prompt = prompt.size();  // tokens of the prompt and the lines read (-i)
        if (!a.logits_out.empty()) write_logits(a.logits_out, logits);

        int n_gen = 0, n_eval = 0;  // tokens written; tokens run through the model one by one
        bool full = false;
        std::vector<std::int32_t> generated;
        std::vector<std::int32_t> pending;  // written but not yet run through the model (-i)
        double t_gen = 0;
        for (;;) {  // a turn: generate until -n, end of text or a reverse prompt
            t0 = std::chrono::steady_clock::now();
            std::string text;  // this turn's text, for the reverse prompts
            for (int n_turn = 0; n_turn < a.n_predict;) {
                const std::int32_t next = smp.sample(logits);
                if (tok.get_vocab().is_eog(next)) {
                    if (chat) pending.assign(1, next);  // the end of the assistant's message, for the next turn
                    break;
                }
                const std::string_view piece = tok.token_to_piece(next, false);
                std::fwrite(piece.data(), 1, piece.size(), stdout);
                std::fflush(stdout);
                mid_line = true;
                generated.push_back(next);
                ++n_gen;
                // a reverse prompt that this piece completes
                const std::size_t before = text.size();
                text += piece;
                bool stop = false;
                for (const auto& r : a.reverse)
                    if (text.find(r, before + 1 > r.size() ? before + 1 - r.size() : 0) != std::string::npos) stop = true;
                if (stop || ++n_turn == a.n_predict) {
                    pending.assign(1, next);
                    break;
                }
                if (m.n_past() >= m.n_ctx()) {
                    full = true;
                    break;
                }
                logits = m.eval(std::span<const std::int32_t>(&next, 1));
                ++n_eval;
            }
            t_gen += seconds_since(t0);
            if (!a.interactive || full) break;
            // line mode: the next line goes after what was written; end of input ends
            std::string line;
            if (!read_line(line)) break;
            std::vector<std::int32_t> input;
            input.swap(pending);  // (already in the sampler's history)
            const std::size_t n_pending = input.size();
            if (chat) {
                chat->msgs.push_back({"assistant", text});
                const std::string turn = chat->add_user(line);
                if (a.verbose) std::fprintf(stderr, "generate: chat turn: %s\n", turn.c_str());
                const auto more = tok.tokenize(turn, false, true);
                input.insert(input.end(), more.begin(), more.end());
            } else if (!line.empty()) {
                const auto more = tok.tokenize(line + "\n", false);
                input.insert(input.end(), more.begin(), more.end());
            }
            for (std::size_t i = n_pending; i < input.size(); ++i) smp.accept(input[i]);
            if (input.empty()) continue;  // an empty line after end of text: generate on
            if (m.n_past() + static_cast<std::int64_t>(input.size()) > m.n_ctx()) {
                full = true;
                break;
            }
            t0 = std::chrono::steady_clock::now();
            logits = m.eval(input);
            t_prompt += seconds_since(t0);
            n_prompt += input.size();
        }
        std::fputc('\n', stdout);
        std::fflush(stdout);
        mid_line = false;
        if (a.verbose) std::fprintf(stderr, "generate: generated ids: %s\n", ids_text(generated).c_str());
        if (full) std::fprintf(stderr, "generate: the context of %lld tokens is full\n", static_cast<long long>(m.n_ctx()));
        std::fprintf(stderr, "generate: prompt     %5zu tokens in %8.2f ms = %9.1f tokens/s\n", n_prompt, t_prompt * 1e3,
                     static_cast<double>(n_prompt) / t_prompt);
        std::fprintf(stderr, "generate: generation %5d tokens in %8.2f ms = %9.1f tokens/s (%d generated)\n", n_eval,
                     t_gen * 1e3, n_eval > 0 ? n_eval / t_gen : 0.0, n_gen);
        std::fprintf(stderr, "generate: compute buffer %.2f MiB\n", static_cast<double>(m.compute_buffer_size()) / (1024.0 * 1024.0));
#if defined(TESSERA_MPI) && TESSERA_MPI
        if (mpi_s) {  // rank 0's MPI traffic: the first prompt's per prompt token, the rest per token run one by one
            auto line = [](const char* what, const backend::mpi::traffic_counters& a0, const backend::mpi::traffic_counters& a1, std::size_t n_tok) {
                const double n = static_cast<double>(std::max<std::size_t>(n_tok, 1));
                auto per = [n](std::uint64_t x0, std::uint64_t x1) { return static_cast<double>(x1 - x0) / n; };
                std::fprintf(stderr,
                             "generate: mpi: %s: per token %.0f bytes of tensors, %.0f worker to worker, %.0f of graph encodings "
                             "(%.1f graphs), %.0f of control (%.1f commands)\n",
                             what, per(a0.tensor_bytes, a1.tensor_bytes), per(a0.peer_bytes, a1.peer_bytes),
                             per(a0.graph_bytes, a1.graph_bytes), per(a0.graphs, a1.graphs), per(a0.control_bytes, a1.control_bytes),
                             per(a0.commands, a1.commands));
            };
            line("prompt", before_prompt, after_prompt, prompt.size());
            line("generation", after_prompt, mpi_s->traffic(), static_cast<std::size_t>(std::max(n_eval, 0)));
        }
#endif
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
#if defined(TESSERA_MPI) && TESSERA_MPI
    // --mpi: every rank starts the session (mpirun gives them the same argv); the workers
    // run rank 0's commands until it is done, rank 0 generates
    std::unique_ptr<backend::mpi::session> mpi_session;
    for (int i = 1; i < argc; ++i)
        if (std::string_view(argv[i]) == "--mpi") {
            try {
                mpi_session = std::make_unique<backend::mpi::session>(argc, argv);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "generate: --mpi: %s\n", e.what());
                return 1;
            }
            if (!mpi_session->is_root()) return mpi_session->serve();
            break;
        }
#endif
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
