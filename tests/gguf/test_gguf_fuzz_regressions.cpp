// Replays the fuzz property (fuzz_body.hpp) on inputs the fuzzer found, on handcrafted
// cases, and on every file of ../shared/data, so a fixed crash stays fixed.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "fuzz_body.hpp"
#include "../shared_data.hpp"
#include "gguf_test_util.hpp"

namespace {
bool check(const std::vector<std::uint8_t>& b) { return gguf_fuzz::check_one(b.data(), b.size()); }

std::vector<std::uint8_t> bytes_of(const gguf_test::raw& r) {
    std::vector<std::uint8_t> v(r.b.size());
    std::memcpy(v.data(), r.b.data(), v.size());
    return v;
}

// Inputs found by the fuzzer (tests/gguf/run_fuzz.sh), kept as regression cases.
const std::vector<std::vector<std::uint8_t>> found = {
    // general.alignment = 2^30 on a file without tensors: the round trip would write 1 GiB
    // of padding (libFuzzer out-of-memory).
    {
      0x47, 0x47, 0x55, 0x46, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x67, 0x65, 0x6e, 0x65, 0x72, 0x61, 0x6c, 0x2e, 0x61, 0x72, 0x63, 0x68, 0x69, 0x74, 0x65, 0x63,
      0x74, 0x75, 0x72, 0x65, 0x08, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x6c, 0x6c, 0x61, 0x6d, 0x61, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x67, 0x65, 0x6e,
      0x65, 0x72, 0x61, 0x6c, 0x2e, 0x61, 0x6c, 0x69, 0x67, 0x6e, 0x6d, 0x65, 0x6e, 0x74, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    },
};
}  // namespace

TEST_CASE("fuzz regressions: inputs found by the fuzzer hold the property") {
    for (std::size_t i = 0; i < found.size(); ++i) {
        CAPTURE(i);
        CHECK_NOTHROW((void)check(found[i]));
    }
}

TEST_CASE("fuzz property on handcrafted valid and broken files") {
    gguf_test::raw scalar;  // a tensor with n_dims = 0 is re-written with one dimension
    scalar.header(1, 0).str("s").u32(0).i32(0).u64(0).pad(32).zeros(32);
    CHECK(check(bytes_of(scalar)));
    gguf_test::raw nested;
    nested.header(0, 1).str("n").u32(9).u32(9).u64(2).u32(7).u64(1).u8(3).u32(8).u64(0);
    CHECK(check(bytes_of(nested)));
    auto cut = bytes_of(nested);
    cut.resize(cut.size() - 1);
    CHECK_FALSE(check(cut));
}

DATA_TEST_CASE("fuzz property on every file of the shared data") {
    const std::optional<std::filesystem::path> data{test_data::root()};
    // Which files must pass is decided by what they are, not by counting them: the broken
    // files of gguf-bad/ and every file that is not GGUF (the quantizer goldens) are
    // rejected; every other GGUF file (llama.cpp's and tessera's models and
    // vocabularies) is accepted.
    int accepted = 0, rejected = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(*data)) {
        const auto ext = e.path().extension();
        if (!e.is_regular_file() || (ext != ".gguf" && ext != ".bin")) continue;
        CAPTURE(e.path().string());
        const auto f = tessera::gguf::mapped_file::open(e.path().string());
        const auto* p = reinterpret_cast<const std::uint8_t*>(f.data());
        bool ok = false;
        CHECK_NOTHROW(ok = gguf_fuzz::check_one(p, f.size()));
        const bool magic = f.size() >= 4 && std::memcmp(p, "GGUF", 4) == 0;
        const bool bad = e.path().parent_path().filename() == "gguf-bad";
        CHECK(ok == (magic && !bad));
        (ok ? accepted : rejected)++;
    }
    CHECK(accepted >= 24);  // the files of the data set this test was written on are still there
    CHECK(rejected >= 14);
}
