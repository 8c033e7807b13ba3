// quantize: converts a GGUF model's weight matrices to one of llama-quantize's file
// types (Q4_K_M, Q3_K_S, IQ4_XS, ...), each tensor getting the type llama-quantize's
// mixture rules give it (see docs/quantize.md for the rules and which tensors are kept).
//
//   quantize [options] in.gguf out.gguf TYPE        quantize [options] --dry-run in.gguf [out.gguf] TYPE
//
// TYPE: a file type of llama-quantize, any case (Q4_K = Q4_K_M, as there). A progress line per tensor
// as it is done ("[done/total] name shape type -> type bytes -> bytes, MB/s so far") and
// the totals go to stderr, whole lines whether or not stderr is a terminal (as
// llama-quantize prints); --quiet prints nothing but errors. The output is written as out.gguf.tmp.<pid> in out.gguf's
// folder and renamed onto out.gguf only when it is complete: a failure leaves no partial
// file, and an out.gguf that was there is left as it was. Exit status 0; 1 when the
// conversion fails (one line on stderr); 2 on bad arguments.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/models/quantize.hpp"

namespace {

using namespace tessera;

constexpr const char* usage_text =
    "usage: quantize [options] in.gguf out.gguf TYPE\n"
    "       quantize [options] --dry-run in.gguf [out.gguf] TYPE\n"
    "  TYPE: a llama-quantize file type, case-insensitive: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q2_K_S\n"
    "        Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ2_XXS IQ2_XS IQ2_S IQ2_M\n"
    "        IQ1_S IQ1_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE NVFP4 Q1_0\n"
    "        Q2_0 F16 BF16 F32 (Q3_K, Q4_K, Q5_K = the _M types); each tensor gets the type of\n"
    "        llama-quantize's rules for it. COPY: every tensor as it is (to prune, split or edit keys)\n"
    "  -t, --threads N       threads (default 1)\n"
    "  --allow-requantize    accept inputs whose weights are already quantized\n"
    "  --pure                every fitting weight in TYPE's default type (no mixture rules)\n"
    "  --imatrix FILE        importance matrix of llama-imatrix (GGUF, or the legacy .dat)\n"
    "  --output-tensor-type T     output.weight in type T (a ggml type name: q8_0, f16, ...)\n"
    "  --token-embedding-type T   token_embd.weight in type T\n"
    "  --tensor-type NAME=T  weights whose name contains the regular expression NAME in type T\n"
    "                        (repeatable; the first that matches wins)\n"
    "  --leave-output-tensor output.weight as it is\n"
    "  --override-kv KEY=TYPE:VALUE  set a metadata key (TYPE int, float, bool or str; repeatable)\n"
    "  --include-weights NAME  use the imatrix only for weights whose name contains NAME (repeatable)\n"
    "  --exclude-weights NAME  use the imatrix for every weight but those (repeatable; not with --include-weights)\n"
    "  --prune-layers L0,L1,...  leave out these layers (blk.N); the others are numbered again from 0\n"
    "  --keep-split          an input in parts gives an output in the same parts: OUT-00001-of-0000N.gguf, ...\n"
    "                        (OUT = out.gguf without .gguf); without it the parts are merged into out.gguf\n"
    "                        (an input in parts is named by its first part, NAME-00001-of-0000N.gguf)\n"
    "  --dry-run             print each tensor's type and size, write nothing\n"
    "  -q, --quiet           no progress lines or totals on stderr (errors only)\n"
    "  -h, --help            this text\n"
    "  --version             version, compiler and SIMD arch\n";

using cli::usage_error;

// A ggml type by name, any case (q8_0, Q4_K, f16, ...).
std::optional<type_id> parse_type(std::string_view what, std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::int64_t i = 0; i < 64; ++i) {
        if (!is_valid_type_id(i)) continue;
        std::string n(type_name(static_cast<type_id>(i)));
        for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (n == s) return static_cast<type_id>(i);
    }
    throw usage_error(std::string(what) + ": unknown type '" + s + "'");
}

// --override-kv KEY=TYPE:VALUE, as llama.cpp parses it.
models::kv_override parse_override(const std::string& v) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq > 127) throw usage_error("--override-kv: '" + v + "' is not KEY=TYPE:VALUE (KEY of 1..127 bytes)");
    models::kv_override k;
    k.key = v.substr(0, eq);
    const std::string rest = v.substr(eq + 1);
    auto starts = [&](std::string_view p) { return rest.rfind(p, 0) == 0; };
    try {
        if (starts("int:")) {
            k.tag = models::kv_override::kind::int_;
            std::size_t used = 0;
            k.i = std::stoll(rest.substr(4), &used);
            if (used != rest.size() - 4) throw std::invalid_argument("trailing");
        } else if (starts("float:")) {
            k.tag = models::kv_override::kind::float_;
            std::size_t used = 0;
            k.f = std::stod(rest.substr(6), &used);
            if (used != rest.size() - 6) throw std::invalid_argument("trailing");
        } else if (starts("bool:")) {
            k.tag = models::kv_override::kind::bool_;
            const std::string b = rest.substr(5);
            if (b != "true" && b != "false") throw std::invalid_argument("bool");
            k.b = b == "true";
        } else if (starts("str:")) {
            k.tag = models::kv_override::kind::str;
            k.s = rest.substr(4);
            if (k.s.size() > 127) throw std::invalid_argument("long");
        } else {
            throw std::invalid_argument("type");
        }
    } catch (const std::exception&) {
        throw usage_error("--override-kv: '" + v + "': the value must be int:N, float:X, bool:true|false or str:TEXT (up to 127 bytes)");
    }
    return k;
}

// One tensor done: "quantize: [  3/ 48] name [64, 64] f32 -> q8_0 16384 -> 4352 bytes, 12.3 MB/s"
// (MB/s: input bytes done so far over the time since the start).
void print_progress(const models::quantize_progress& p, std::chrono::steady_clock::time_point t0) {
    const models::quantize_tensor_report& r = *p.tensor;
    std::string shape = "[";
    for (int d = 0; d < std::max(r.n_dims, 1); ++d) shape += (d ? ", " : "") + std::to_string(r.ne[static_cast<std::size_t>(d)]);
    shape += "]";
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int w = static_cast<int>(std::to_string(p.total).size());
    std::fprintf(stderr, "quantize: [%*zu/%zu] %-32s %-16s %6s -> %-6s %10llu -> %10llu bytes, %.1f MB/s%s%s\n", w, p.done,
                 p.total, r.name.c_str(), shape.c_str(), std::string(type_name(r.in_type)).c_str(),
                 std::string(type_name(r.out_type)).c_str(), static_cast<unsigned long long>(r.bytes_in),
                 static_cast<unsigned long long>(r.bytes_out), static_cast<double>(p.bytes_done) / 1e6 / std::max(s, 1e-6),
                 r.quantized ? (r.fell_back ? " (fallback)" : "") : " (kept)", r.used_imatrix ? " (imatrix)" : "");
}

int run(int argc, char** argv, cli::state& st) {
    std::vector<std::string> pos;
    models::quantize_options o;
    std::string imatrix_path;
    std::vector<std::string> include_w, exclude_w;
    std::vector<models::kv_override> overrides;
    bool quiet = false;
    std::unordered_map<std::string, std::vector<float>> imatrix;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw usage_error(std::string(a) + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            std::fputs(usage_text, stdout);
            return 0;
        } else if (a == "--version") {
            cli::print_version();
            return 0;
        } else if (a == "-t" || a == "--threads") {
            o.n_threads = static_cast<int>(cli::to_int(a, value(), 1, 1024));
        } else if (a == "--allow-requantize") {
            o.allow_requantize = true;
        } else if (a == "--pure") {
            o.pure = true;
        } else if (a == "-q" || a == "--quiet") {
            quiet = true;
        } else if (a == "--imatrix") {
            imatrix_path = value();
        } else if (a == "--output-tensor-type") {
            o.output_tensor_type = parse_type(a, value());
        } else if (a == "--token-embedding-type") {
            o.token_embedding_type = parse_type(a, value());
        } else if (a == "--tensor-type") {
            const std::string v = value();
            const auto eq = v.rfind('=');
            if (eq == std::string::npos || eq == 0) throw usage_error("--tensor-type: '" + v + "' is not NAME=TYPE");
            o.tensor_types.emplace_back(v.substr(0, eq), *parse_type(a, v.substr(eq + 1)));
        } else if (a == "--leave-output-tensor") {
            o.leave_output_tensor = true;
        } else if (a == "--override-kv") {
            overrides.push_back(parse_override(value()));
        } else if (a == "--include-weights") {
            include_w.push_back(value());
        } else if (a == "--exclude-weights") {
            exclude_w.push_back(value());
        } else if (a == "--dry-run") {
            o.dry_run = true;
        } else if (a == "--keep-split") {
            o.keep_split = true;
        } else if (a == "--prune-layers") {
            const std::string v = value();
            std::size_t b = 0;
            while (b <= v.size()) {  // comma-separated layer numbers
                const std::size_t e = std::min(v.find(',', b), v.size());
                o.prune_layers.push_back(static_cast<int>(cli::to_int(a, v.substr(b, e - b), 0, 1'000'000)));
                b = e + 1;
            }
        } else if (a.size() > 1 && a[0] == '-') {
            throw cli::unknown_option(a);
        } else {
            pos.emplace_back(a);
        }
    }
    if (o.dry_run && pos.size() == 2) pos.insert(pos.begin() + 1, std::string());
    if (pos.size() != 3)
        throw usage_error(std::string("expected in.gguf ") + (o.dry_run ? "[out.gguf]" : "out.gguf") + " TYPE, got " +
                          std::to_string(pos.size()) + " arguments");
    if (!include_w.empty() && !exclude_w.empty()) throw usage_error("--include-weights and --exclude-weights cannot be used together");
    if ((!include_w.empty() || !exclude_w.empty()) && imatrix_path.empty())
        throw usage_error("--include-weights / --exclude-weights need --imatrix");
    std::string type_upper = pos[2];
    for (char& c : type_upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    o.only_copy = type_upper == "COPY";
    if (!o.only_copy) {
        o.ftype = models::parse_llama_ftype(pos[2]);
        if (!o.ftype) throw usage_error("unknown type '" + pos[2] + "'");
    } else if (o.output_tensor_type || o.token_embedding_type || !o.tensor_types.empty() || o.leave_output_tensor || o.pure) {
        throw usage_error("COPY writes every tensor as it is: --output-tensor-type, --token-embedding-type, --tensor-type, "
                          "--leave-output-tensor and --pure do not apply");
    }
    const std::string& in_path = pos[0];
    const std::string& out_path = pos[1];
    if (!o.dry_run) {
        if (cli::same_file(in_path, out_path))
            throw usage_error("the output '" + out_path + "' is the input file; give another output path");
        if (!imatrix_path.empty() && cli::same_file(imatrix_path, out_path))
            throw usage_error("the output '" + out_path + "' is the --imatrix file; give another output path");
        cli::check_output_folder("output", out_path);
    }

    if (!imatrix_path.empty()) {
        st.file = imatrix_path;
        models::imatrix_metadata im;
        imatrix = models::load_imatrix(imatrix_path, &im);
        // as llama-quantize: keep the entries named (a substring of the name), or drop them
        auto named = [](const std::string& n, const std::vector<std::string>& l) {
            return std::any_of(l.begin(), l.end(), [&](const std::string& x) { return n.find(x) != std::string::npos; });
        };
        for (auto it = imatrix.begin(); it != imatrix.end();) {
            const bool drop = (!include_w.empty() && !named(it->first, include_w)) || (!exclude_w.empty() && named(it->first, exclude_w));
            it = drop ? imatrix.erase(it) : std::next(it);
        }
        if (!quiet) std::fprintf(stderr, "quantize: %zu importance vectors from '%s'\n", imatrix.size(), imatrix_path.c_str());
        if (!imatrix.empty()) {
            o.imatrix = &imatrix;
            // the keys llama-quantize records, after the user's overrides
            models::kv_override k;
            k.key = "quantize.imatrix.file";
            k.s = imatrix_path.substr(0, 127);
            overrides.push_back(k);
            if (!im.dataset.empty()) {
                k.key = "quantize.imatrix.dataset";
                k.s = im.dataset.substr(0, 127);
                overrides.push_back(k);
            }
            k.tag = models::kv_override::kind::int_;
            k.key = "quantize.imatrix.entries_count";
            k.i = static_cast<std::int64_t>(imatrix.size());
            overrides.push_back(k);
            if (im.chunks) {
                k.key = "quantize.imatrix.chunks_count";
                k.i = *im.chunks;
                overrides.push_back(k);
            }
        }
    }
    o.override_kv = overrides;
    st.file = in_path;
    const auto t0 = std::chrono::steady_clock::now();
    if (o.dry_run) {  // every tensor's line, the totals; nothing written
        o.progress = [&](const models::quantize_progress& p) { print_progress(p, t0); };
        const models::quantize_stats stats = models::quantize_model(in_path, out_path, o);
        std::fprintf(stderr, "quantize: dry run (%s): %zu tensors quantized (%zu with a fallback type), %zu kept; %.3f MB -> %.3f MB%s\n",
                     o.only_copy ? "COPY" : std::string(models::ftype_info(*o.ftype).name).c_str(), stats.n_quantized, stats.n_fallback, stats.n_kept,
                     static_cast<double>(stats.bytes_in) / 1e6, static_cast<double>(stats.bytes_out) / 1e6,
                     stats.needs_imatrix ? "; this file type needs an importance matrix (--imatrix)" : "");
        return 0;
    }
    // each output (one, or one per part) to a temporary name, renamed once all are written;
    // the temporaries are removed unless committed
    std::vector<std::unique_ptr<cli::atomic_output>> outs;
    o.write = [&](const gguf::writer& w, const std::string& path) {
        outs.push_back(std::make_unique<cli::atomic_output>(path));
        st.also = outs.back()->tmp_path();
        w.write_to_file(outs.back()->tmp_path());
    };
    if (!quiet) o.progress = [&](const models::quantize_progress& p) { print_progress(p, t0); };
    const models::quantize_stats stats = models::quantize_model(in_path, out_path, o);
    for (auto& out : outs) {
        st.file = out->path();
        out->commit();
    }
    if (!quiet) {
        std::fprintf(stderr, "quantize: %zu tensors quantized (%zu with a fallback type), %zu kept%s; %.3f MB -> %.3f MB\n",
                     stats.n_quantized, stats.n_fallback, stats.n_kept,
                     stats.n_pruned ? (", " + std::to_string(stats.n_pruned) + " pruned").c_str() : "",
                     static_cast<double>(stats.bytes_in) / 1e6, static_cast<double>(stats.bytes_out) / 1e6);
        if (stats.outputs.size() > 1)
            for (const std::string& f : stats.outputs) std::fprintf(stderr, "quantize: wrote %s\n", f.c_str());
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return cli::run("quantize", "try fewer threads (-t)", [&](cli::state& st) { return run(argc, argv, st); });
}
