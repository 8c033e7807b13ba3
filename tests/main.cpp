// The doctest main of every test program. Beside doctest's own run it reports the data
// run (`--test-suite=data`, see shared_data.hpp) as skipped (exit 77) when a data case
// lacked its files, and as failed when the program has no data case to run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

#include "shared_data.hpp"

int main(int argc, char** argv) {
    doctest::Context ctx(argc, argv);
    const int result = ctx.run();
    if (ctx.shouldExit()) return result;
    bool data_run = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "-ts=data" || a == "--test-suite=data") data_run = true;
    }
    if (!data_run || result != 0) return result;
    const auto& r = test_data::reg();
    if (r.cases == 0) {
        std::printf("FAIL: --test-suite=data, but this program declares no DATA_TEST_CASE\n");
        return 1;
    }
    if (!r.missing.empty()) {
        for (const auto& m : r.missing) std::printf("SKIP: %s\n", m.c_str());
        std::printf("SKIP: %zu missing file(s) of ../shared/data; the data cases above did not run (exit 77)\n", r.missing.size());
        return 77;
    }
    return 0;
}
