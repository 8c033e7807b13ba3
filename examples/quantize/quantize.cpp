// quantize: converts a GGUF model's weight matrices to one quantized type, as
// llama.cpp's llama-quantize does (see docs/quantize.md for which tensors are kept).
//
//   quantize [--imatrix file.gguf] [-t threads] [--allow-requantize] [--pure] [--quiet] in.gguf out.gguf TYPE
//
// TYPE: q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs f16 bf16 f32
// (any case; Q3_K_M, Q4_K_M, Q5_K_M name q3_K, q4_K, q5_K). A progress line per tensor
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
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/models/quantize.hpp"

namespace {

using namespace tessera;

constexpr const char* usage_text =
    "usage: quantize [--imatrix file.gguf] [-t threads] [--allow-requantize] [--pure] in.gguf out.gguf TYPE\n"
    "  TYPE: q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs f16 bf16 f32\n"
    "        (case-insensitive; Q3_K_M, Q4_K_M, Q5_K_M are q3_K, q4_K, q5_K)\n"
    "  -t, --threads N       threads (default 1)\n"
    "  --allow-requantize    accept inputs whose weights are already quantized\n"
    "  --pure                every fitting weight in TYPE (no q6_K/q8_0 output projection)\n"
    "  --imatrix FILE        importance matrix of llama-imatrix (GGUF format; not the legacy .dat)\n"
    "  -q, --quiet           no progress lines or totals on stderr (errors only)\n"
    "  -h, --help            this text\n"
    "  --version             version, compiler and SIMD arch\n";

using cli::usage_error;

std::optional<type_id> parse_type(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == "q3_k_m") s = "q3_k";
    if (s == "q4_k_m") s = "q4_k";
    if (s == "q5_k_m") s = "q5_k";
    static constexpr type_id allowed[] = {type_id::q4_0, type_id::q4_1, type_id::q5_0, type_id::q5_1, type_id::q8_0,
                                          type_id::q2_K, type_id::q3_K, type_id::q4_K, type_id::q5_K, type_id::q6_K,
                                          type_id::iq4_nl, type_id::iq4_xs, type_id::f16, type_id::bf16, type_id::f32};
    for (type_id t : allowed) {
        std::string n(type_name(t));
        for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (n == s) return t;
    }
    return std::nullopt;
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
        } else if (a.size() > 1 && a[0] == '-') {
            throw cli::unknown_option(a);
        } else {
            pos.emplace_back(a);
        }
    }
    if (pos.size() != 3) throw usage_error("expected in.gguf out.gguf TYPE, got " + std::to_string(pos.size()) + " arguments");
    const auto t = parse_type(pos[2]);
    if (!t) throw usage_error("unknown type '" + pos[2] + "'");
    o.type = *t;
    const std::string& in_path = pos[0];
    const std::string& out_path = pos[1];
    if (cli::same_file(in_path, out_path))
        throw usage_error("the output '" + out_path + "' is the input file; give another output path");
    if (!imatrix_path.empty() && cli::same_file(imatrix_path, out_path))
        throw usage_error("the output '" + out_path + "' is the --imatrix file; give another output path");
    cli::check_output_folder("output", out_path);

    if (!imatrix_path.empty()) {
        st.file = imatrix_path;
        imatrix = models::load_imatrix_gguf(imatrix_path);
        if (!quiet) std::fprintf(stderr, "quantize: %zu importance vectors from '%s'\n", imatrix.size(), imatrix_path.c_str());
        o.imatrix = &imatrix;
    }
    st.file = in_path;
    cli::atomic_output out(out_path);  // removes the temporary unless committed
    st.also = out.tmp_path();
    const auto t0 = std::chrono::steady_clock::now();
    if (!quiet) o.progress = [&](const models::quantize_progress& p) { print_progress(p, t0); };
    const models::quantize_stats stats = models::quantize_model(in_path, out.tmp_path(), o);
    st.file = out_path;
    out.commit();
    if (!quiet)
        std::fprintf(stderr, "quantize: %zu tensors quantized (%zu with a fallback type), %zu kept; %.3f MB -> %.3f MB\n",
                     stats.n_quantized, stats.n_fallback, stats.n_kept, static_cast<double>(stats.bytes_in) / 1e6,
                     static_cast<double>(stats.bytes_out) / 1e6);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return cli::run("quantize", "try fewer threads (-t)", [&](cli::state& st) { return run(argc, argv, st); });
}
