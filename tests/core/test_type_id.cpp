#include <doctest/doctest.h>

#include "tessera/core/type_id.hpp"

using namespace tessera;

TEST_CASE("type ids and geometry follow GGUF numbering") {
    // Spot checks against the GGUF/ggml table: id, name, block size, bytes per block.
    struct row { int id; const char* name; std::int64_t blck, bytes; };
    const row rows[] = {
        {0, "f32", 1, 4},       {1, "f16", 1, 2},        {2, "q4_0", 32, 18},    {3, "q4_1", 32, 20},
        {6, "q5_0", 32, 22},    {7, "q5_1", 32, 24},     {8, "q8_0", 32, 34},    {9, "q8_1", 32, 36},
        {10, "q2_K", 256, 84},  {11, "q3_K", 256, 110},  {12, "q4_K", 256, 144}, {13, "q5_K", 256, 176},
        {14, "q6_K", 256, 210}, {15, "q8_K", 256, 292},  {16, "iq2_xxs", 256, 66}, {19, "iq1_s", 256, 50},
        {20, "iq4_nl", 32, 18}, {23, "iq4_xs", 256, 136}, {26, "i32", 1, 4},     {28, "f64", 1, 8},
        {29, "iq1_m", 256, 56}, {30, "bf16", 1, 2},      {34, "tq1_0", 256, 54}, {35, "tq2_0", 256, 66},
        {39, "mxfp4", 32, 17},  {40, "nvfp4", 64, 36},   {41, "q1_0", 128, 18},  {42, "q2_0", 64, 18},
    };
    for (const auto& r : rows) {
        CAPTURE(r.id);
        const auto t = static_cast<type_id>(r.id);
        CHECK(is_valid_type_id(r.id));
        CHECK(type_name(t) == r.name);
        CHECK(block_size(t) == r.blck);
        CHECK(type_size(t) == r.bytes);
        CHECK(type_from_name(r.name) == t);
    }
}

TEST_CASE("removed and out-of-range ids are rejected with a clear error") {
    for (int id : {-1, 4, 5, 31, 32, 33, 36, 37, 38, 43, 1000}) {
        CAPTURE(id);
        CHECK_FALSE(is_valid_type_id(id));
        CHECK_THROWS_WITH_AS(type_name(static_cast<type_id>(id)),
                             ("type id " + std::to_string(id) + " is not a valid ggml type").c_str(), error);
    }
    CHECK_FALSE(type_from_name("q4_2").has_value());
}

TEST_CASE("row_size checks whole blocks") {
    CHECK(row_size(type_id::f32, 7) == 28);
    CHECK(row_size(type_id::q4_K, 512) == 288);
    CHECK_THROWS_AS(row_size(type_id::q4_0, 33), error);
    try {
        (void)row_size(type_id::q8_0, 172);
        FAIL("expected an error");
    } catch (const error& e) {
        CHECK(e.code() == errc::shape_mismatch);
        CHECK(std::string(e.what()) == "row of 172 elements is not a multiple of the q8_0 block size 32");
    }
}
