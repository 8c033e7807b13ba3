// tokenize: tessera's counterpart of llama.cpp's `llama-tokenize` tool. Loads only the
// vocabulary of a GGUF file and prints the tokens of a prompt, with the same options,
// output format, messages and exit codes (so, unlike the other examples, a usage error
// exits 1 with llama.cpp's "Error: ..." line, not 2). What the tool itself does not
// catch (running out of memory, say) still ends in one "tokenize: ..." line and status 1.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../common/cli.hpp"
#include "tessera/text/load.hpp"

namespace {

void print_usage(const char* argv0) {
    std::printf("usage: %s [options]\n\n", argv0);
    std::printf("The tokenize program tokenizes a prompt using a given model,\n");
    std::printf("and prints the resulting tokens to standard output.\n\n");
    std::printf("It needs a model file, a prompt, and optionally other flags\n");
    std::printf("to control the behavior of the tokenizer.\n\n");
    std::printf("    The possible options are:\n");
    std::printf("\n");
    std::printf("    -h, --help                           print this help and exit\n");
    std::printf("    --version                            print the version, compiler and SIMD arch and exit\n");
    std::printf("    -m MODEL_PATH, --model MODEL_PATH    path to model.\n");
    std::printf("    --ids                                if given, only print numerical token IDs, and not token strings.\n");
    std::printf("                                         The output format looks like [1, 2, 3], i.e. parseable by Python.\n");
    std::printf("    -f PROMPT_FNAME, --file PROMPT_FNAME read prompt from a file.\n");
    std::printf("    -p PROMPT, --prompt PROMPT           read prompt from the argument.\n");
    std::printf("    --stdin                              read prompt from standard input.\n");
    std::printf("    --no-bos                             do not ever add a BOS token to the prompt, even if normally the model uses a BOS token.\n");
    std::printf("    --no-escape                          do not escape input (such as \\n, \\t, etc.).\n");
    std::printf("    --no-parse-special                   do not parse control tokens.\n");
    std::printf("    --log-disable                        disable logs. Makes stderr quiet when loading the model.\n");
    std::printf("    --show-count                         print the total number of tokens.\n");
}

bool read_prompt_file(const char* path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "%s: could not open file '%s' for reading: %s\n", "read_prompt_from_file", path, std::strerror(errno));
        return false;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    if (in.fail()) {
        std::fprintf(stderr, "%s: could not read the entire file '%s': %s\n", "read_prompt_from_file", path, std::strerror(errno));
        return false;
    }
    out = buf.str();
    return true;
}

// llama.cpp's string_process_escapes: \n \r \t \' \" \\ and \xHH (exactly two
// characters that strtol takes as hex); any other escape is kept as written.
void process_escapes(std::string& s) {
    const std::size_t n = s.size();
    std::size_t o = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (s[i] == '\\' && i + 1 < n) {
            const char c = s[++i];
            switch (c) {
                case 'n': s[o++] = '\n'; continue;
                case 'r': s[o++] = '\r'; continue;
                case 't': s[o++] = '\t'; continue;
                case '\'': s[o++] = '\''; continue;
                case '"': s[o++] = '"'; continue;
                case '\\': s[o++] = '\\'; continue;
                case 'x':
                    if (i + 2 < n) {
                        const char x[3] = {s[i + 1], s[i + 2], 0};
                        char* end = nullptr;
                        const long v = std::strtol(x, &end, 16);
                        if (end == x + 2) {
                            i += 2;
                            s[o++] = static_cast<char>(v);
                            continue;
                        }
                    }
                    break;
                default:
                    break;
            }
            s[o++] = '\\';
            s[o++] = c;
        } else {
            s[o++] = s[i];
        }
    }
    s.resize(o);
}

int run(int argc, char** argv) {
    if (argc <= 1) {
        print_usage(argv[0]);
        return 1;
    }
    bool printing_ids = false, no_bos = false, no_escape = false, no_parse_special = false, disable_logging = false,
         show_token_count = false;
    const char* model_path = nullptr;
    const char* prompt_path = nullptr;
    const char* prompt_arg = nullptr;
    bool model_path_set = false, prompt_path_set = false, prompt_set = false, stdin_set = false;

    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        // An option that needs a value and is last gets a null value (llama.cpp reads
        // past the end there; we report "requires an argument" instead).
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : (++i, nullptr); };
        if (arg == "-h" || arg == "--help") {
            print_usage(argv[0]);
            return 0;
        } else if (arg == "--version") {
            cli::print_version();
            return 0;
        } else if (arg == "--ids") {
            printing_ids = true;
        } else if (arg == "-m" || arg == "--model") {
            if (model_path_set) {
                std::fprintf(stderr, "Error: -m or --model specified multiple times.\n");
                return 1;
            }
            model_path = value();
            model_path_set = true;
        } else if (arg == "--no-bos") {
            no_bos = true;
        } else if (arg == "--no-escape") {
            no_escape = true;
        } else if (arg == "--no-parse-special") {
            no_parse_special = true;
        } else if (arg == "-p" || arg == "--prompt") {
            if (prompt_set) {
                std::fprintf(stderr, "Error: -p or --prompt specified multiple times.\n");
                return 1;
            }
            prompt_arg = value();
            prompt_set = true;
        } else if (arg == "-f" || arg == "--file") {
            if (prompt_path_set) {
                std::fprintf(stderr, "Error: -f or --file specified multiple times.\n");
                return 1;
            }
            prompt_path = value();
            prompt_path_set = true;
        } else if (arg == "--stdin") {
            stdin_set = true;
        } else if (arg == "--log-disable") {
            disable_logging = true;
        } else if (arg == "--show-count") {
            show_token_count = true;
        } else {
            std::fprintf(stderr, "Error: unknown option '%s'\n", argv[i]);
            return 1;
        }
    }

    if (model_path_set && model_path == nullptr) {
        std::fprintf(stderr, "Error: --model requires an argument.\n");
        return 1;
    }
    if (!model_path_set) {
        std::fprintf(stderr, "Error: must specify --model.\n");
        return 1;
    }
    if (prompt_path_set && prompt_path == nullptr) {
        std::fprintf(stderr, "Error: --file requires an argument.\n");
        return 1;
    }
    if (prompt_set && prompt_arg == nullptr) {
        std::fprintf(stderr, "Error: --prompt requires an argument.\n");
        return 1;
    }
    const int prompts_set = int(prompt_path_set) + int(prompt_set) + int(stdin_set);
    if (prompts_set > 1) {
        std::fprintf(stderr, "Error: --stdin, --file and --prompt are mutually exclusive.\n");
        return 1;
    }
    if (prompts_set == 0) {
        std::fprintf(stderr, "Error: must specify one of: --stdin, --file or --prompt.\n");
        return 1;
    }

    std::string prompt;
    if (prompt_path_set) {
        if (!read_prompt_file(prompt_path, prompt)) return 1;
    } else if (prompt_set) {
        prompt = prompt_arg;
    }

    std::optional<tessera::text::tokenizer> tok;
    try {
        tok.emplace(tessera::text::load_tokenizer(model_path));
    } catch (const std::exception& e) {
        if (!disable_logging) std::fprintf(stderr, "tessera: error loading vocabulary: %s\n", e.what());
        std::fprintf(stderr, "Error: could not load model from file '%s'.\n", model_path);
        return 1;
    }
    const auto& v = tok->get_vocab();
    if (!disable_logging) {
        std::fprintf(stderr, "tessera: loaded vocabulary of '%s': type %s, model '%s', pre '%s', %u tokens, %zu merges\n",
                     model_path, std::string(tessera::text::vocab_type_name(v.type())).c_str(), v.model().c_str(),
                     v.pre().c_str(), v.n_tokens(), v.n_merges());
    }

    if (stdin_set) {
        std::stringstream buf;
        buf << std::cin.rdbuf();
        if (std::cin.fail()) {
            std::fprintf(stderr, "Error: could not read the entire standard input.\n");
            return 1;
        }
        prompt = buf.str();
    }

    const bool add_bos = v.add_bos && !no_bos;
    if (!no_escape) process_escapes(prompt);

    std::vector<tessera::text::token> tokens;
    try {
        tokens = tok->tokenize(prompt, add_bos, !no_parse_special);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "Error: tokenization failed: %s\n", e.what());
        return 1;
    }

    if (printing_ids) std::printf("[");
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (printing_ids) {
            if (i > 0) std::printf(", ");
            std::printf("%d", tokens[i]);
        } else {
            std::printf("%6d -> '", tokens[i]);
            const std::string piece(tok->token_to_piece(tokens[i], true));
            std::printf("%s", piece.c_str());  // like llama.cpp: a NUL byte ends the piece
            std::printf("'\n");
        }
    }
    if (printing_ids) std::printf("]\n");
    if (show_token_count) std::printf("Total number of tokens: %zu\n", tokens.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return cli::run("tokenize", "", [&](cli::state&) { return run(argc, argv); });
}
