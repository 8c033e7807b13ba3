// Hostile models (hostile_models.hpp): each breaks one rule of the loader and must be
// refused with a tessera::error naming what is wrong; the unedited base model loads and
// runs. Then memory exhaustion: under an address-space limit (RLIMIT_AS, in a forked
// child) loading a model whose KV cache does not fit, and running a prompt whose compute
// buffer does not fit, end in an error that says what failed, how much, and what to try.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_model_body.hpp"
#include "hostile_models.hpp"
#include "tessera/models/llama.hpp"

using namespace tessera;

namespace {

std::string load_error(const std::vector<std::byte>& bytes, const models::llama_options& o = {.n_threads = 1}) {
    try {
        models::llama_model m(gguf::file::from_buffer(bytes, "hostile.gguf"), o);
        const std::int32_t t = 1;
        (void)m.eval(std::span<const std::int32_t>(&t, 1));
    } catch (const error& e) {
        return e.what();
    }
    return "";
}

// AddressSanitizer and ThreadSanitizer reserve terabytes of address space: an
// RLIMIT_AS below that stops them, not the model.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool address_space_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool address_space_sanitizer = true;
#else
constexpr bool address_space_sanitizer = false;
#endif
#else
constexpr bool address_space_sanitizer = false;
#endif

// Whether RLIMIT_AS limits this process's allocations: not under the sanitizers above,
// nor under qemu-user (it ignores a guest's address-space limit; the aarch64 tests run
// there). A child limited to its size + 64 MiB tries to allocate 512 MiB.
bool address_limit_enforced() {
    if (address_space_sanitizer) return false;
    long pages = 0;
    {
        std::ifstream statm("/proc/self/statm");
        statm >> pages;
    }
    if (pages <= 0) return false;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{64} << 20);
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        rlimit rl{limit, limit};
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(1);
        try {
            char* volatile p = new char[std::size_t{512} << 20];
            delete[] p;
        } catch (const std::bad_alloc&) {
            _exit(0);  // refused: the limit holds
        }
        _exit(1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// Runs f in a child whose address space is limited to what it uses now + extra_mib;
// returns the error message f reports (or a description of how the child ended).
template <class F>
std::string under_rlimit_as(std::size_t extra_mib, F f) {
    long pages = 0;
    {
        std::ifstream statm("/proc/self/statm");
        statm >> pages;
    }
    REQUIRE(pages > 0);
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (extra_mib << 20);
    int fd[2];
    REQUIRE(pipe(fd) == 0);
    std::fflush(nullptr);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        rlimit rl{limit, limit};
        std::string msg;
        if (setrlimit(RLIMIT_AS, &rl) != 0) {
            msg = "setrlimit failed";
        } else {
            try {
                msg = "no error: " + f();
            } catch (const error& e) {
                msg = e.what();
            } catch (const std::bad_alloc&) {
                msg = "std::bad_alloc escaped";
            }
        }
        (void)!write(fd[1], msg.data(), msg.size());
        close(fd[1]);
        _exit(0);
    }
    close(fd[1]);
    std::string out;
    char buf[4096];
    for (ssize_t k; (k = read(fd[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(k));
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st)) out += " [child ended by signal " + std::to_string(WTERMSIG(st)) + "]";
    return out;
}

}  // namespace

TEST_CASE("hostile models: the base model loads and runs") {
    const hostile::model_case none{"none", "", {}, {}, {}, {}};
    CHECK(load_error(hostile::build(none)) == "");
}

TEST_CASE("hostile models: each is refused with its message") {
    for (const hostile::model_case& c : hostile::model_cases()) {
        CAPTURE(c.name);
        const std::string msg = load_error(hostile::build(c));
        CAPTURE(msg);
        CHECK(!msg.empty());
        for (const std::string& e : c.expect) {
            CAPTURE(e);
            CHECK(msg.find(e) != std::string::npos);
        }
    }
}

TEST_CASE("hostile models: options outside their range are refused") {
    const auto bytes = hostile::build({"none", "", {}, {}, {}, {}});
    const std::string ctx = load_error(bytes, {.n_threads = 1, .n_ctx = std::int64_t{1} << 40});
    CHECK(ctx.find("n_ctx 1099511627776 is outside 0..16777216") != std::string::npos);
    const std::string batch = load_error(bytes, {.n_threads = 1, .n_batch = 0});
    CHECK(batch.find("n_batch must be >= 1") != std::string::npos);
    const std::string ubatch = load_error(bytes, {.n_threads = 1, .n_ubatch = -1});
    CHECK(ubatch.find("n_ubatch must be >= 0 (0: n_batch)") != std::string::npos);
    const std::string copies = load_error(bytes, {.n_threads = 1, .n_copies = 9});
    CHECK(copies.find("n_copies must be 1..") != std::string::npos);
}

TEST_CASE("memory exhaustion: the KV cache that does not fit is named, with its size and what to try" *
          doctest::skip(!address_limit_enforced())) {
    const auto bytes = hostile::build({"none", "", {}, {}, {}, {}});
    // 2 layers x (K + V) x 32 values x 2^22 tokens x 2 bytes = 1 GiB, under a limit of +256 MiB
    const std::string msg = under_rlimit_as(256, [&] {
        models::llama_model m(gguf::file::from_buffer(bytes, "big-context.gguf"), {.n_threads = 1, .n_ctx = 1 << 22});
        return std::string("loaded");
    });
    MESSAGE(msg);
    CHECK(msg.find("model 'big-context.gguf': the KV cache (4194304 tokens x 2 layers, f16, 1073741824 bytes (1.00 GiB))") !=
          std::string::npos);
    CHECK(msg.find("could not allocate") != std::string::npos);
    CHECK(msg.find("try a smaller context") != std::string::npos);
}

TEST_CASE("memory exhaustion: a compute buffer that does not fit is named, with its size and what to try" *
          doctest::skip(!address_limit_enforced())) {
    const auto bytes = hostile::build({"none", "", {}, {}, {}, {}});
    // a prompt of 4096 tokens in one batch: its attention mask alone is 64 MiB
    const std::string msg = under_rlimit_as(48, [&] {
        models::llama_model m(gguf::file::from_buffer(bytes, "big-batch.gguf"), {.n_threads = 1, .n_ctx = 4096, .n_batch = 4096});
        std::vector<std::int32_t> toks(4096, 5);
        (void)m.eval(toks);
        return std::string("ran");
    });
    MESSAGE(msg);
    const bool named = msg.find("scheduler: the compute buffer of CPU for a graph of") != std::string::npos ||
                       msg.find("llama_model::eval: ran out of memory for a batch of 4096 tokens") != std::string::npos;
    CHECK(named);
    CHECK(msg.find("try a smaller batch") != std::string::npos);
}

TEST_CASE("model fuzzer: its seeds load and run, its findings are refused or run") {
    for (const auto& s : model_fuzz::seeds()) {
        CAPTURE(s.name);
        CHECK(s.bytes.size() < 128 * 1024);  // under the fuzzer's max_len
        CHECK(model_fuzz::run_one(reinterpret_cast<const std::uint8_t*>(s.bytes.data()), s.bytes.size()));
    }
#ifdef TESSERA_MODEL_FUZZ_REGRESSIONS
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(TESSERA_MODEL_FUZZ_REGRESSIONS)) {
        if (e.path().filename() == "README") continue;
        CAPTURE(e.path().string());
        std::ifstream f(e.path(), std::ios::binary);
        const std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        (void)model_fuzz::run_one(reinterpret_cast<const std::uint8_t*>(b.data()), b.size());  // must not crash
        ++n;
    }
    MESSAGE(n << " fuzz regression inputs replayed");
#endif
}
