// cli.hpp: what the example programs share for their command lines and their failures.
//
//   int main(int argc, char** argv) {
//       return cli::run("quantize", "try fewer threads (-t)", [&](cli::state& st) { ... return 0; });
//   }
//
// cli::run catches everything the body throws and turns it into one line on stderr and
// an exit status:
//   cli::usage_error      "<program>: <message> (try '<program> --help')", status 2
//   std::bad_alloc        "<program>: out of memory ...; <hint>", status 1
//   tessera::error and every other exception
//                         "<program>: <message>", status 1; when st.file names the file
//                         being worked on and the message names neither it nor st.also,
//                         "'<file>': " goes in front of the message
// Messages are folded onto one line (newlines become "; "). A failed write to stdout
// (a full disk, a closed pipe that does not raise SIGPIPE) is a failure too. A
// terminate handler turns what escapes anyway (an exception from a noexcept function,
// a destructor or a thread) into one line and status 1 instead of "terminate called"
// and SIGABRT.
//
// cli::to_int / cli::to_float parse an option's value strictly: the whole string, in
// range, else a usage_error naming the option and the value.
//
// Every program answers --version (cli::print_version: "<program> (tessera <version>)",
// the compiler and the SIMD arch in use) and --help, and reports an option it does not
// know with cli::unknown_option: llama.cpp's "error: invalid argument: <option>" (its
// common/arg.cpp wording), kept on our one line with status 2 and the --help hint:
//   quantize: error: invalid argument: --bogus (try 'quantize --help')
// (tokenize keeps llama-tokenize's own messages and status 1, which its goldens check.)
#pragma once

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/simd/dispatch.hpp"

// The version comes from meson's project() (examples/meson.build passes it); a program
// compiled by hand gets the headers' own. The two must agree, so a version bump that
// forgets include/tessera/config.hpp stops the build here instead of printing a wrong one.
#ifndef TESSERA_BUILD_VERSION
#define TESSERA_BUILD_VERSION TESSERA_VERSION_STRING
#endif
static_assert(std::string_view(TESSERA_BUILD_VERSION) == std::string_view(TESSERA_VERSION_STRING),
              "meson.build's project version and TESSERA_VERSION_STRING in include/tessera/config.hpp differ");

namespace cli {

// A mistake on the command line: exit status 2 and a hint to read --help.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An option the program does not know, said as llama.cpp says it (see the top):
//   throw cli::unknown_option(arg);
inline usage_error unknown_option(std::string_view opt) {
    return usage_error("error: invalid argument: " + std::string(opt));
}

// What the body of cli::run is working on, for the failure message.
struct state {
    std::string file;  // the file being read or written ("" for none)
    std::string also;  // another file a message may name instead (a temporary being written)
};

namespace detail {
inline const char*& program() {
    static const char* p = "program";
    return p;
}

// The message on one line: CR/LF runs become "; ", trailing ones are dropped.
inline std::string one_line(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    bool pending = false;
    for (char c : s) {
        if (c == '\n' || c == '\r') {
            pending = true;
            continue;
        }
        if (pending && !out.empty()) out += "; ";
        pending = false;
        out += c;
    }
    return out;
}

inline void print(const std::string& msg) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", program(), one_line(msg).c_str());
    std::fflush(stderr);
}

inline std::string with_file(const state& st, const char* what) {
    std::string msg = what ? what : "unknown error";
    const bool named = msg.find(st.file) != std::string::npos || (!st.also.empty() && msg.find(st.also) != std::string::npos);
    if (!st.file.empty() && !named) msg = "'" + st.file + "': " + msg;
    return msg;
}

[[noreturn]] inline void on_terminate() noexcept {
    const char* what = "an exception escaped where none may (noexcept function, destructor or thread)";
    std::string buf;
    if (std::exception_ptr p = std::current_exception()) {
        try {
            std::rethrow_exception(p);
        } catch (const std::exception& e) {
            try {
                buf = std::string("uncaught exception: ") + e.what();
                what = buf.c_str();
            } catch (...) {
                what = "uncaught exception";
            }
        } catch (...) {
            what = "uncaught exception of unknown type";
        }
    } else {
        what = "std::terminate called without an exception";
    }
    std::fflush(stdout);
    try {
        std::fprintf(stderr, "%s: internal error: %s\n", program(), one_line(what).c_str());
    } catch (...) {
        std::fprintf(stderr, "%s: internal error (and out of memory)\n", program());
    }
    std::fflush(stderr);
    std::_Exit(1);
}
}  // namespace detail

// The compiler that built the program, e.g. "g++ 12.2.0" or "clang++ 16.0.6".
inline std::string compiler() {
#if defined(__clang__)
    std::string s = "clang++ " __clang_version__;
#elif defined(__GNUC__)
    std::string s = "g++ " __VERSION__;
#elif defined(_MSC_VER)
    std::string s = "MSVC " + std::to_string(_MSC_VER);
#else
    std::string s = "an unknown compiler";
#endif
    while (!s.empty() && s.back() == ' ') s.pop_back();  // (clang's version ends in a space)
    return s;
}

// What --version prints (on stdout): the program and tessera's version, the compiler,
// and the SIMD arch the dispatched kernels use (TESSERA_ARCH can change it).
inline void print_version() {
    const std::string simd = std::string(tessera::simd::name_of(tessera::simd::active_arch())) +
                             (tessera::simd::multiarch_build() ? " (multiarch build)" : " (plain include)");
    std::printf("%s (tessera %s)\nbuilt with %s, C++ %ld\nsimd: %s\n", detail::program(), TESSERA_BUILD_VERSION,
                compiler().c_str(), static_cast<long>(__cplusplus), simd.c_str());
}

// For a parser that cannot return a status: --version's text, then exit (status 1 when
// stdout could not be written, as cli::run would say).
[[noreturn]] inline void print_version_and_exit() {
    print_version();
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "%s: writing to standard output failed: %s\n", detail::program(), std::strerror(errno ? errno : EIO));
        std::exit(1);
    }
    std::exit(0);
}

// The program's hint line for --help.
inline std::string hint(std::string_view program) { return "try '" + std::string(program) + " --help'"; }

// Runs body(state&) and returns the exit status (see the top of this file). oom_hint says
// what to try when memory runs out (e.g. "try a smaller context (-c), a quantized model or
// fewer threads (-t)"); "" for none.
template <class F>
int run(const char* program, const char* oom_hint, F&& body) noexcept {
    detail::program() = program;
    std::set_terminate(detail::on_terminate);
    state st;
    int status = 1;
    try {
        try {
            status = body(st);
        } catch (const usage_error& e) {
            std::fflush(stdout);
            std::fprintf(stderr, "%s: %s (%s)\n", program, detail::one_line(e.what()).c_str(), hint(program).c_str());
            return 2;
        } catch (const std::bad_alloc&) {
            std::string msg = "out of memory";
            if (!st.file.empty()) msg += " while working on '" + st.file + "'";
            if (oom_hint && *oom_hint) msg += std::string("; ") + oom_hint;
            detail::print(msg);
            return 1;
        } catch (const tessera::error& e) {
            // (the library's own out-of-memory messages usually say what to try already)
            if (e.code() == tessera::errc::out_of_memory && oom_hint && *oom_hint &&
                std::string_view(e.what()).find("; try ") == std::string_view::npos)
                detail::print(detail::with_file(st, e.what()) + "; " + oom_hint);
            else
                detail::print(detail::with_file(st, e.what()));
            return 1;
        } catch (const std::filesystem::filesystem_error& e) {
            detail::print(e.what());  // names its paths
            return 1;
        } catch (const std::exception& e) {
            detail::print(detail::with_file(st, e.what()));
            return 1;
        } catch (...) {
            detail::print(detail::with_file(st, "unknown exception"));
            return 1;
        }
    } catch (...) {  // building a message ran out of memory: say so without allocating
        std::fprintf(stderr, "%s: out of memory\n", program);
        return 1;
    }
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        const int err = errno;
        std::fprintf(stderr, "%s: writing to standard output failed: %s\n", program, std::strerror(err ? err : EIO));
        return 1;
    }
    return status;
}

// The value of option opt as an integer in lo..hi (the whole string; a leading '+' is taken).
inline long long to_int(std::string_view opt, std::string_view v, long long lo, long long hi) {
    std::string_view s = v;
    if (s.size() > 1 && s[0] == '+') s.remove_prefix(1);
    long long x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size())
        throw usage_error(std::string(opt) + " wants an integer, not '" + std::string(v) + "'");
    if (ec == std::errc::result_out_of_range || x < lo || x > hi)
        throw usage_error(std::string(opt) + " " + std::string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
}

// The value of option opt as a finite number in [lo, hi].
inline double to_float(std::string_view opt, std::string_view v, double lo, double hi) {
    std::string_view s = v;
    if (s.size() > 1 && s[0] == '+') s.remove_prefix(1);
    double x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size() || std::isnan(x))
        throw usage_error(std::string(opt) + " wants a number, not '" + std::string(v) + "'");
    if (ec == std::errc::result_out_of_range || !(x >= lo && x <= hi)) {
        char b[64];
        std::snprintf(b, sizeof b, "%g..%g", lo, hi);
        throw usage_error(std::string(opt) + " " + std::string(v) + " is outside " + b);
    }
    return x;
}

// A file written under a temporary name in the destination's folder
// ("<path>.tmp.<pid>") and renamed onto path by commit(); destroyed without commit()
// (a failure), it removes the temporary, and path keeps what it had.
class atomic_output {
public:
    explicit atomic_output(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {}
    atomic_output(const atomic_output&) = delete;
    atomic_output& operator=(const atomic_output&) = delete;
    ~atomic_output() {
        if (!done_) std::remove(tmp_.c_str());
    }
    const std::string& tmp_path() const noexcept { return tmp_; }
    const std::string& path() const noexcept { return path_; }
    void commit() {
        if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
            const int err = errno;
            throw std::runtime_error("cannot rename '" + tmp_ + "' to '" + path_ + "': " + std::strerror(err));
        }
        done_ = true;
    }

private:
    std::string path_, tmp_;
    bool done_ = false;
};

// Throws unless path's folder exists (checked before long work that ends in writing path).
inline void check_output_folder(const std::string& opt, const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw std::runtime_error(opt + " '" + path + "' is a folder, not a file");
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec))
        throw std::runtime_error(opt + " '" + path + "': no folder '" + parent.string() + "'");
}

// For a program that takes no arguments: true (after printing usage on stdout) for
// -h / --help, or the version for --version; any other argument is a usage_error.
inline bool help_only(int argc, char** argv, const char* usage) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "-h" || a == "--help") {
            std::fputs(usage, stdout);
            return true;
        }
        if (a == "--version") {
            print_version();
            return true;
        }
    }
    if (argc > 1) {
        if (argv[1][0] == '-' && argv[1][1] != '\0') throw unknown_option(argv[1]);
        throw usage_error(std::string("unexpected argument '") + argv[1] + "'");
    }
    return false;
}

// True when a and b name the same existing file (symbolic and hard links included).
inline bool same_file(const std::string& a, const std::string& b) {
    if (a == b) return true;
    std::error_code ec;
    const bool same = std::filesystem::equivalent(a, b, ec);
    return !ec && same;
}

}  // namespace cli
