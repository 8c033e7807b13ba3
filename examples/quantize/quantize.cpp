// quantize: converts a GGUF model's weight matrices to one quantized type, as
// llama.cpp's llama-quantize does (see docs/quantize.md for which tensors are kept).
//
//   quantize [--imatrix file.gguf] [-t threads] [--allow-requantize] [--pure] in.gguf out.gguf TYPE
//
// TYPE: q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs f16 bf16 f32
// (any case; Q3_K_M, Q4_K_M, Q5_K_M name q3_K, q4_K, q5_K). One line per tensor and
// the totals go to stderr. Exit status 1 on bad arguments or a failed conversion.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
    "  -h, --help            this text\n";

[[noreturn]] void usage_error(const std::string& msg) {
    std::fprintf(stderr, "quantize: %s\n%s", msg.c_str(), usage_text);
    std::exit(1);
}

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

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> pos;
    models::quantize_options o;
    std::string imatrix_path;
    std::unordered_map<std::string, std::vector<float>> imatrix;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "-h" || a == "--help") {
            std::fputs(usage_text, stdout);
            return 0;
        } else if (a == "-t" || a == "--threads") {
            if (i + 1 >= argc) usage_error(std::string(a) + " needs a value");
            const std::string v = argv[++i];
            char* end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || n < 1 || n > 1024) usage_error("bad thread count '" + v + "' (1 to 1024)");
            o.n_threads = static_cast<int>(n);
        } else if (a == "--allow-requantize") {
            o.allow_requantize = true;
        } else if (a == "--pure") {
            o.pure = true;
        } else if (a == "--imatrix") {
            if (i + 1 >= argc) usage_error("--imatrix needs a file");
            imatrix_path = argv[++i];
        } else if (a.size() > 1 && a[0] == '-') {
            usage_error("unknown option '" + std::string(a) + "'");
        } else {
            pos.emplace_back(a);
        }
    }
    if (pos.size() != 3) usage_error("expected in.gguf out.gguf TYPE, got " + std::to_string(pos.size()) + " arguments");
    const auto t = parse_type(pos[2]);
    if (!t) usage_error("unknown type '" + pos[2] + "'");
    o.type = *t;
    try {
        if (!imatrix_path.empty()) {
            imatrix = models::load_imatrix_gguf(imatrix_path);
            std::fprintf(stderr, "quantize: %zu importance vectors from '%s'\n", imatrix.size(), imatrix_path.c_str());
            o.imatrix = &imatrix;
        }
        const models::quantize_stats st = models::quantize_model(pos[0], pos[1], o);
        for (const auto& r : st.tensors) {
            std::string shape = "[";
            for (int d = 0; d < std::max(r.n_dims, 1); ++d) shape += (d ? ", " : "") + std::to_string(r.ne[d]);
            shape += "]";
            std::fprintf(stderr, "%-32s %-16s %6s -> %-6s %10llu -> %10llu bytes%s%s\n", r.name.c_str(), shape.c_str(),
                         std::string(type_name(r.in_type)).c_str(), std::string(type_name(r.out_type)).c_str(),
                         static_cast<unsigned long long>(r.bytes_in), static_cast<unsigned long long>(r.bytes_out),
                         r.quantized ? (r.fell_back ? " (fallback)" : "") : " (kept)",
                         r.used_imatrix ? " (imatrix)" : "");
        }
        std::fprintf(stderr, "quantize: %zu tensors quantized (%zu with a fallback type), %zu kept; %.3f MB -> %.3f MB\n",
                     st.n_quantized, st.n_fallback, st.n_kept, static_cast<double>(st.bytes_in) / 1e6,
                     static_cast<double>(st.bytes_out) / 1e6);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "quantize: %s\n", e.what());
        return 1;
    }
    return 0;
}
