// Tests that read ../shared/data (the folder in TESSERA_SHARED_DATA): where it is, and
// how a test case that needs it is declared, so that without its files doctest and
// meson report it skipped, never passed.
//
//   DATA_TEST_CASE("stories260K greedy", "models/stories260K.gguf", "goldens/stories260K-greedy.jsonl") {
//       const std::string model = test_data::path("models/stories260K.gguf");
//       ...
//   }
//
// A DATA_TEST_CASE is in doctest's test suite "data" and carries doctest::skip when the
// folder or one of the named files is missing. Meson runs each test program that has
// such cases twice: `--test-suite-exclude=data` (the test's own name) and
// `--test-suite=data` (name + "_data"). In the second run tests/main.cpp exits 77,
// Meson's "skipped", when a case lacked a file, either one named in the declaration or
// one asked for at run time with test_data::need() (files a case loops over), and it
// fails when the program has no data case at all.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace test_data {

// The shared data folder, "" when TESSERA_SHARED_DATA is unset or not a folder.
inline std::string root() {
    const char* p = std::getenv("TESSERA_SHARED_DATA");
    if (p == nullptr || *p == '\0' || !std::filesystem::is_directory(p)) return {};
    return p;
}

// root()/rel (whether or not it exists; "" without the folder).
inline std::string path(std::string_view rel) {
    const std::string r = root();
    if (r.empty()) return {};
    return rel.empty() ? r : r + "/" + std::string(rel);
}

struct registry {
    int cases = 0;                     // DATA_TEST_CASEs declared in this program
    std::vector<std::string> missing;  // "<case or need()>: <file>"
};
inline registry& reg() {
    static registry r;
    return r;
}

// Records what `what` lacks; true when the folder and every file are there.
inline bool available(const char* what, std::initializer_list<const char*> files) {
    bool ok = true;
    if (root().empty()) {
        reg().missing.push_back(std::string(what) + ": the shared data folder (TESSERA_SHARED_DATA)");
        return false;
    }
    for (const char* f : files)
        if (!std::filesystem::exists(path(f))) {
            reg().missing.push_back(std::string(what) + ": " + f);
            ok = false;
        }
    return ok;
}

// For declarations: counts the case too.
inline bool declare(const char* name, std::initializer_list<const char*> files) {
    ++reg().cases;
    return available(name, files);
}

// A file a data case needs at run time (e.g. one of the files it loops over): its path,
// or "" after recording it as missing (the data run then reports skipped).
inline std::string need(std::string_view rel) {
    const std::string p = path(rel);
    if (p.empty() || !std::filesystem::exists(p)) {
        reg().missing.push_back("need: " + std::string(rel));
        return {};
    }
    return p;
}

}  // namespace test_data

namespace test_env {
// TESSERA_TEST_EMULATED=1: the tests run under emulation (.ci/run's qemu-aarch64 runs);
// the slowest ones check less of what repeats there (each says what it leaves out).
inline bool emulated() {
    const char* e = std::getenv("TESSERA_TEST_EMULATED");
    return e && std::string_view(e) == "1";
}
}  // namespace test_env

#define DATA_TEST_CASE(name, ...) \
    TEST_CASE(name * doctest::test_suite("data") * doctest::skip(!::test_data::declare(name, {__VA_ARGS__})))
