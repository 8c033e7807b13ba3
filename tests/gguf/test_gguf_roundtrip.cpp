// Writer -> reader round trips: every value type, arrays (numeric, bool, string,
// nested), tensors with several alignments, the typed metadata API and its errors,
// and the byte layout of the writer against a handcrafted encoding.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <unistd.h>

#include "gguf_test_util.hpp"
#include "tessera/gguf/reader.hpp"
#include "tessera/gguf/writer.hpp"

using namespace tessera;
using gguf::value_type;

namespace {
std::string temp_path(const char* stem) {
    return (std::filesystem::temp_directory_path() /
            (std::string(stem) + "-" + std::to_string(::getpid()) + ".gguf"))
        .string();
}
}  // namespace

TEST_CASE("scalars of every type read back bit-exactly") {
    gguf::writer w;
    w.set<std::uint8_t>("u8", 0xfe);
    w.set<std::int8_t>("i8", -128);
    w.set<std::uint16_t>("u16", 0xfedc);
    w.set<std::int16_t>("i16", -32768);
    w.set<std::uint32_t>("u32", 0xfedcba98u);
    w.set<std::int32_t>("i32", std::numeric_limits<std::int32_t>::min());
    w.set("f32", -0.0f);
    w.set("f32nan", std::bit_cast<float>(0x7fc01234u));
    w.set("bool_t", true);
    w.set("bool_f", false);
    w.set("str", "h\xc3\xa9llo\n\0x");
    w.set("empty", std::string_view{});
    w.set<std::uint64_t>("u64", 0xfedcba9876543210ull);
    w.set<std::int64_t>("i64", std::numeric_limits<std::int64_t>::min());
    w.set("f64", 1.0 / 3.0);
    const auto bytes = w.to_bytes();
    const auto f = gguf::file::from_buffer(bytes);
    const auto& m = f.meta();
    CHECK(m.size() == 15);
    CHECK(m.get<std::uint8_t>("u8") == 0xfe);
    CHECK(m.get<std::int8_t>("i8") == -128);
    CHECK(m.get<std::uint16_t>("u16") == 0xfedc);
    CHECK(m.get<std::int16_t>("i16") == -32768);
    CHECK(m.get<std::uint32_t>("u32") == 0xfedcba98u);
    CHECK(m.get<std::int32_t>("i32") == std::numeric_limits<std::int32_t>::min());
    CHECK(std::bit_cast<std::uint32_t>(m.get<float>("f32")) == 0x80000000u);
    CHECK(std::bit_cast<std::uint32_t>(m.get<float>("f32nan")) == 0x7fc01234u);
    CHECK(m.get<bool>("bool_t"));
    CHECK_FALSE(m.get<bool>("bool_f"));
    CHECK(m.get<std::string_view>("str") == "h\xc3\xa9llo\n");  // the literal stops at its NUL
    CHECK(m.get<std::string>("empty").empty());
    CHECK(m.get<std::uint64_t>("u64") == 0xfedcba9876543210ull);
    CHECK(m.get<std::int64_t>("i64") == std::numeric_limits<std::int64_t>::min());
    CHECK(m.get<double>("f64") == 1.0 / 3.0);
    // Types and order follow the writer's insertion order.
    const value_type types[] = {value_type::u8, value_type::i8, value_type::u16, value_type::i16, value_type::u32,
                                value_type::i32, value_type::f32, value_type::f32, value_type::boolean,
                                value_type::boolean, value_type::string, value_type::string, value_type::u64,
                                value_type::i64, value_type::f64};
    for (std::size_t i = 0; i < m.size(); ++i) CHECK(m[i].val.type() == types[i]);
    CHECK(m[0].key == "u8");
    CHECK(m.index_of("f64") == 14);
    CHECK(m.type_of("str") == value_type::string);
}

TEST_CASE("C++ integer types map to GGUF types by size and signedness") {
    gguf::writer w;
    w.set("int", 1);            // int -> i32
    w.set("ll", -5LL);          // long long -> i64
    w.set("ull", 7ULL);         // unsigned long long -> u64
    w.set("us", static_cast<unsigned short>(3));
    const auto b = w.to_bytes();
    const auto f = gguf::file::from_buffer(b);
    CHECK(f.meta().type_of("int") == value_type::i32);
    CHECK(f.meta().type_of("ll") == value_type::i64);
    CHECK(f.meta().get<long long>("ll") == -5);
    CHECK(f.meta().get<std::int64_t>("ll") == -5);
    CHECK(f.meta().type_of("ull") == value_type::u64);
    CHECK(f.meta().type_of("us") == value_type::u16);
}

TEST_CASE("the metadata API reports missing keys and wrong types clearly") {
    gguf::writer w;
    w.set<std::uint32_t>("n", 7);
    w.set_array("v", std::vector<std::int32_t>{1, 2});
    const auto bytes = w.to_bytes();
    const auto f = gguf::file::from_buffer(bytes, "x.gguf");
    const auto& m = f.meta();
    CHECK(m.contains("n"));
    CHECK_FALSE(m.contains("m"));
    CHECK(m.find<std::uint32_t>("m") == std::nullopt);
    CHECK(m.find<std::uint32_t>("n") == 7u);
    CHECK(m.get_or<std::uint32_t>("m", 9) == 9u);
    auto check_err = [](auto&& fn, const std::string& text) {
        try {
            fn();
            FAIL("no error");
        } catch (const error& e) {
            CHECK(e.code() == errc::invalid_argument);
            CHECK(std::string(e.what()) == text);
        }
    };
    check_err([&] { (void)m.get<std::uint32_t>("missing"); },
              "gguf: key 'missing' not found in the metadata of gguf file 'x.gguf'");
    check_err([&] { (void)m.get<std::string>("n"); }, "gguf: key 'n' has type u32, not str");
    check_err([&] { (void)m.get<std::int32_t>("n"); }, "gguf: key 'n' has type u32, not i32");
    check_err([&] { (void)m.find<float>("n"); }, "gguf: key 'n' has type u32, not f32");
    check_err([&] { (void)m.get_array<float>("v"); }, "gguf: key 'v' is an array of i32, not of f32");
    check_err([&] { (void)m.get_string_array("v"); }, "gguf: key 'v' is an array of i32, not of str");
    check_err([&] { (void)m.get_array<std::int32_t>("n"); }, "gguf: key 'n' has type u32, not arr");
    check_err([&] { (void)m.array_size("n"); }, "gguf: key 'n' has type u32, not arr");
    check_err([&] { (void)m.type_of("zz"); }, "gguf: key 'zz' not found in the metadata of gguf file 'x.gguf'");
    CHECK(m.array_type("v") == value_type::i32);
    CHECK(m.array_size("v") == 2);
}

TEST_CASE("arrays of every element type, strings and nested arrays round trip") {
    std::mt19937_64 rng(7);
    std::vector<std::uint8_t> u8(1023);
    std::vector<std::int8_t> i8(17);
    std::vector<std::uint16_t> u16(100);
    std::vector<std::int16_t> i16(3);
    std::vector<std::uint32_t> u32(1000);
    std::vector<std::int32_t> i32(5);
    std::vector<float> f32(333);
    std::vector<std::uint64_t> u64(9);
    std::vector<std::int64_t> i64(64);
    std::vector<double> f64(10);
    for (auto& v : u8) v = static_cast<std::uint8_t>(rng());
    for (auto& v : i8) v = static_cast<std::int8_t>(rng());
    for (auto& v : u16) v = static_cast<std::uint16_t>(rng());
    for (auto& v : i16) v = static_cast<std::int16_t>(rng());
    for (auto& v : u32) v = static_cast<std::uint32_t>(rng());
    for (auto& v : i32) v = static_cast<std::int32_t>(rng());
    for (auto& v : f32) v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
    for (auto& v : u64) v = rng();
    for (auto& v : i64) v = static_cast<std::int64_t>(rng());
    for (auto& v : f64) v = std::bit_cast<double>(rng());
    std::vector<bool> bools{true, false, false, true, true};
    std::vector<std::string> strs{"", "a", "\xe2\x96\x81hello", std::string(300, 'z'), std::string("nul\0in", 6)};

    gguf::writer w;
    w.set_array("u8", u8);
    w.set<std::uint8_t>("pad", 1);  // shifts later arrays off their natural alignment
    w.set_array("i8", i8);
    w.set_array("u16", u16);
    w.set_array("i16", i16);
    w.set_array("u32", u32);
    w.set_array("i32", i32);
    w.set_array("f32", f32);
    w.set_array("bool", bools);
    w.set_array("str", strs);
    w.set_array("u64", u64);
    w.set_array("i64", i64);
    w.set_array("f64", f64);
    w.set_array("empty", std::vector<float>{});
    w.set_array("il", {1.5, 2.5});
    gguf::array_builder inner_a(value_type::u16), inner_b(value_type::u16), strings(value_type::string);
    inner_a.push<std::uint16_t>(1).push<std::uint16_t>(2);
    inner_b.push<std::uint16_t>(3);
    strings.push("x").push(std::string("yy"));
    gguf::array_builder outer(value_type::array), outer2(value_type::array);
    outer.push(inner_a).push(inner_b).push(strings);
    outer2.push(outer).push(gguf::array_builder(value_type::i8));
    w.set_array("nested", outer2);
    CHECK_THROWS_AS(inner_a.push(1.0f), error);
    CHECK_THROWS_AS(inner_a.push("s"), error);

    const auto bytes = w.to_bytes();
    // Read it from an aligned and from an odd address: the results must agree.
    std::vector<std::byte> shifted(bytes.size() + 1);
    std::copy(bytes.begin(), bytes.end(), shifted.begin() + 1);
    for (int shift = 0; shift < 2; ++shift) {
        CAPTURE(shift);
        const auto f = shift == 0 ? gguf::file::from_buffer(bytes)
                                  : gguf::file::from_buffer(std::span(shifted).subspan(1));
        const auto& m = f.meta();
        auto same = [&](const char* key, const auto& want) {
            using E = typename std::decay_t<decltype(want)>::value_type;
            const auto got = m.get_array<E>(key);
            CHECK(m.array_type(key) == gguf::value_type_v<E>);
            REQUIRE(got.size() == want.size());
            CHECK(reinterpret_cast<std::uintptr_t>(got.data()) % alignof(E) == 0);
            CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(E)) == 0);
        };
        same("u8", u8);
        same("i8", i8);
        same("u16", u16);
        same("i16", i16);
        same("u32", u32);
        same("i32", i32);
        same("f32", f32);
        same("u64", u64);
        same("i64", i64);
        same("f64", f64);
        CHECK(m.get_array<float>("empty").empty());
        CHECK(m.get_array<double>("il")[1] == 2.5);
        const auto b = m.get_array<bool>("bool");
        REQUIRE(b.size() == bools.size());
        for (std::size_t i = 0; i < b.size(); ++i) CHECK(b[i] == bools[i]);
        const auto s = m.get_string_array("str");
        REQUIRE(s.size() == strs.size());
        for (std::size_t i = 0; i < s.size(); ++i) CHECK(s[i] == strs[i]);
        const std::vector<std::string_view> as_vector = s;  // the documented conversion
        CHECK(as_vector.size() == strs.size());
        std::size_t count = 0;
        for (std::string_view sv : s) count += sv.size();
        CHECK(count == 0 + 1 + 8 + 300 + 6);
        const auto n = m.at("nested").get_nested("nested");
        REQUIRE(n.size() == 2);
        const auto n0 = n[0].get_nested();
        REQUIRE(n0.size() == 3);
        CHECK(n0[0].get_array<std::uint16_t>()[1] == 2);
        CHECK(n0[1].get_array<std::uint16_t>()[0] == 3);
        CHECK(n0[2].get_string_array()[1] == "yy");
        CHECK(n[1].array_type() == value_type::i8);
        CHECK(n[1].array_size() == 0);
        CHECK(m.at("nested").to_string() == "[[[1, 2], [3], ['x', 'yy']], []]");
        CHECK(m.at("u8").to_string(2).find(", ...]") != std::string::npos);
    }
}

TEST_CASE("bool arrays with bytes other than 0 and 1 read as true") {
    gguf_test::raw r;
    r.header(0, 2).str("b").u32(9).u32(7).u64(3).u8(0).u8(2).u8(255).str("s").u32(7).u8(9);
    const auto f = gguf::file::from_buffer(r.b);
    const auto b = f.meta().get_array<bool>("b");
    REQUIRE(b.size() == 3);
    CHECK_FALSE(b[0]);
    CHECK(b[1]);
    CHECK(b[2]);
    CHECK(f.meta().get<bool>("s"));
}

TEST_CASE("writer output matches the GGUF layout byte for byte") {
    gguf::writer w;
    w.set<std::uint32_t>("k", 5);
    w.set_array("a", std::vector<std::string>{"x"});
    const std::vector<float> data{1.0f, 2.0f};
    w.add_tensor("t", type_id::f32, {2}, std::as_bytes(std::span(data)));
    const std::vector<std::byte> q(18, std::byte{0xab});
    w.add_tensor("q", type_id::q4_0, {32, 1}, q);

    gguf_test::raw r;
    r.header(2, 2).str("k").u32(4).u32(5).str("a").u32(9).u32(8).u64(1).str("x");
    r.tensor("t", {2}, 0, 0).tensor("q", {32, 1}, 2, 32).pad(32);
    const std::size_t meta = r.size();
    r.put(1.0f).put(2.0f).pad(32);
    for (int i = 0; i < 18; ++i) r.u8(0xab);
    r.pad(32);
    CHECK(w.meta_size() == meta);
    CHECK(w.to_bytes() == r.b);

    // Overwriting keeps the position; removing drops the key.
    w.set("k", "now a string");
    CHECK(w.n_kv() == 2);
    CHECK(w.remove("a"));
    CHECK_FALSE(w.remove("a"));
    const auto b2 = w.to_bytes();
    const auto f2 = gguf::file::from_buffer(b2);
    CHECK(f2.meta().size() == 1);
    CHECK(f2.meta().get<std::string_view>("k") == "now a string");
}

TEST_CASE("tensors round trip with custom alignments, through a file and mmap") {
    std::mt19937 rng(99);
    for (std::uint32_t align : {32u, 1u, 16u, 256u}) {
        CAPTURE(align);
        gguf::writer w;
        w.set("general.architecture", "test");
        if (align != 32) w.set_alignment(align);
        struct spec { std::string name; type_id type; std::vector<std::int64_t> ne; std::vector<std::byte> data; };
        std::vector<spec> specs;
        const type_id types[] = {type_id::f32, type_id::f16, type_id::q4_0, type_id::q8_0, type_id::q4_K,
                                 type_id::q6_K, type_id::i8, type_id::bf16, type_id::tq1_0, type_id::nvfp4};
        for (int i = 0; i < 20; ++i) {
            spec s;
            s.name = "blk." + std::to_string(i) + ".weight";
            s.type = types[static_cast<std::size_t>(i) % std::size(types)];
            const int nd = 1 + static_cast<int>(rng() % 4);
            for (int d = 0; d < nd; ++d)
                s.ne.push_back(d == 0 ? block_size(s.type) * (1 + rng() % 3) : static_cast<std::int64_t>(1 + rng() % 3));
            std::int64_t nel = 1;
            for (auto v : s.ne) nel *= v;
            s.data.resize(static_cast<std::size_t>(nel / block_size(s.type) * type_size(s.type)));
            for (auto& b : s.data) b = static_cast<std::byte>(rng());
            w.add_tensor(s.name, s.type, s.ne, s.data);
            specs.push_back(std::move(s));
        }
        const std::string path = temp_path("tessera-gguf-rt");
        w.write_to_file(path);
        const auto bytes = w.to_bytes();
        CHECK(std::filesystem::file_size(path) == bytes.size());
        for (int via_file = 0; via_file < 2; ++via_file) {
            const auto f = via_file ? gguf::file::open(path) : gguf::file::from_buffer(bytes);
            CHECK(f.is_mapped() == (via_file == 1));
            CHECK(f.alignment() == align);
            CHECK(f.data_offset() == w.meta_size());
            CHECK(f.meta().get<std::string_view>("general.architecture") == "test");
            REQUIRE(f.tensors().size() == specs.size());
            std::uint64_t expect_off = 0;
            for (std::size_t i = 0; i < specs.size(); ++i) {
                const auto& t = f.tensors()[i];
                CHECK(t.name == specs[i].name);
                CHECK(t.type == specs[i].type);
                CHECK(t.n_dims == static_cast<int>(specs[i].ne.size()));
                for (std::size_t d = 0; d < 4; ++d) CHECK(t.ne[d] == (d < specs[i].ne.size() ? specs[i].ne[d] : 1));
                CHECK(t.offset == expect_off);
                expect_off += gguf::pad_to(t.size_bytes, align);
                REQUIRE(t.size_bytes == specs[i].data.size());
                CHECK(std::equal(t.bytes().begin(), t.bytes().end(), specs[i].data.begin()));
                CHECK(static_cast<std::uint64_t>(t.data - f.bytes().data()) % align == 0);
            }
            CHECK(f.bytes().size() == f.data_offset() + expect_off);
        }
        std::filesystem::remove(path);
    }
}

TEST_CASE("the writer rejects invalid tensors and keys") {
    gguf::writer w;
    const std::vector<std::byte> d(18);
    auto err = [&](auto&& fn, const std::string& text) {
        try {
            fn();
            FAIL("no error");
        } catch (const error& e) {
            CHECK(e.code() == errc::invalid_argument);
            CHECK(std::string(e.what()).find(text) != std::string::npos);
        }
    };
    err([&] { w.add_tensor("t", type_id::q4_0, {33}, d); }, "ne[0] = 33 is not a multiple of the q4_0 block size 32");
    err([&] { w.add_tensor("t", type_id::q4_0, {32}, std::span(d).first(17)); }, "data has 17 bytes, the q4_0 shape needs 18");
    err([&] { w.add_tensor("t", type_id::f32, {1, 1, 1, 1, 1}, d); }, "5 dimensions");
    err([&] { w.add_tensor(std::string(64, 'n'), type_id::f32, {1}, d); }, "name longer than ggml's limit of 63 bytes");
    err([&] { w.add_tensor("t", static_cast<type_id>(4), {1}, d); }, "invalid type id 4");
    err([&] { w.add_tensor("t", type_id::f32, {-1}, d); }, "negative dimension");
    w.add_tensor("t", type_id::q4_0, {32}, d);
    err([&] { w.add_tensor("t", type_id::q4_0, {32}, d); }, "duplicate tensor name");
    err([&] { w.set("", 1); }, "empty key");
    err([&] { w.set_alignment(12); }, "general.alignment = 12 is not a non-zero power of two");
    err([&] { w.set<std::int32_t>("general.alignment", 32); }, "general.alignment must be a u32, not i32");
    CHECK(w.alignment() == 32);
    const std::string bad_dir = "/nonexistent-dir/x.gguf";
    try {
        w.write_to_file(bad_dir);
        FAIL("no error");
    } catch (const error& e) {
        CHECK(e.code() == errc::io);
        CHECK(std::string(e.what()).find(bad_dir) != std::string::npos);
    }
}

TEST_CASE("open reports OS failures as errc::io") {
    try {
        (void)gguf::file::open("/nonexistent/model.gguf");
        FAIL("no error");
    } catch (const error& e) {
        CHECK(e.code() == errc::io);
        CHECK(std::string(e.what()) ==
              "gguf file '/nonexistent/model.gguf': cannot open: No such file or directory");
    }
    try {
        (void)gguf::file::open(std::filesystem::temp_directory_path().string());
        FAIL("no error");
    } catch (const error& e) {
        CHECK(e.code() == errc::io);
        CHECK(std::string(e.what()).find("not a regular file") != std::string::npos);
    }
    const std::string empty = temp_path("tessera-gguf-empty");
    { std::FILE* fp = std::fopen(empty.c_str(), "wb"); std::fclose(fp); }
    try {
        (void)gguf::file::open(empty);
        FAIL("no error");
    } catch (const error& e) {
        CHECK(e.code() == errc::format);
        CHECK(std::string(e.what()).find("0 bytes, too short for the GGUF magic") != std::string::npos);
    }
    std::filesystem::remove(empty);
}

TEST_CASE("random contexts round trip like test-gguf (random KVs and tensors)") {
    for (std::uint32_t seed : {1u, 2u, 3u}) {
        CAPTURE(seed);
        std::mt19937 rng(seed);
        gguf::writer w;
        struct expect { std::string key; value_type type; value_type elem; std::vector<std::byte> payload; };
        // The writer is checked through the reader and against raw payloads that this
        // test encodes itself.
        std::vector<expect> want;
        const int n_kv = static_cast<int>(rng() % 256);
        for (int i = 0; i < n_kv; ++i) {
            const std::string key = "my_key_" + std::to_string(i);
            const auto t = static_cast<value_type>(rng() % gguf::value_type_count);
            gguf_test::raw p;
            auto scalar = [&](value_type st, gguf::array_builder* ab) {
                switch (st) {
                    case value_type::u8: { auto v = static_cast<std::uint8_t>(rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::i8: { auto v = static_cast<std::int8_t>(rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::u16: { auto v = static_cast<std::uint16_t>(rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::i16: { auto v = static_cast<std::int16_t>(rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::u32: { auto v = static_cast<std::uint32_t>(rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::i32: { auto v = static_cast<std::int32_t>(rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::f32: { auto v = std::bit_cast<float>(static_cast<std::uint32_t>(rng())); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::boolean: { bool v = rng() % 2; p.u8(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::u64: { auto v = (std::uint64_t{rng()} << 32) | rng(); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::i64: { auto v = static_cast<std::int64_t>((std::uint64_t{rng()} << 32) | rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::f64: { auto v = std::bit_cast<double>((std::uint64_t{rng()} << 32) | rng()); p.put(v); if (ab) ab->push(v); else w.set(key, v); break; }
                    case value_type::string: {
                        std::string s(rng() % 20, ' ');
                        for (auto& c : s) c = static_cast<char>(1 + rng() % 255);
                        p.str(s);
                        if (ab) ab->push(s); else w.set(key, s);
                        break;
                    }
                    case value_type::array: break;
                }
            };
            value_type elem = value_type::u8;
            if (t == value_type::array) {
                do elem = static_cast<value_type>(rng() % gguf::value_type_count); while (elem == value_type::array);
                gguf::array_builder ab(elem);
                const std::uint64_t n = rng() % 1024;
                p.u32(static_cast<std::uint32_t>(elem)).u64(n);
                for (std::uint64_t j = 0; j < n; ++j) scalar(elem, &ab);
                w.set_array(key, ab);
            } else {
                scalar(t, nullptr);
            }
            want.push_back({key, t, elem, p.b});
        }
        const auto bytes = w.to_bytes();
        const auto f = gguf::file::from_buffer(bytes);
        REQUIRE(f.meta().size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            const auto& e = f.meta()[i];
            CHECK(e.key == want[i].key);
            CHECK(e.val.type() == want[i].type);
            if (want[i].type == value_type::array) CHECK(e.val.array_type() == want[i].elem);
            CHECK(std::equal(e.val.payload().begin(), e.val.payload().end(), want[i].payload.begin(),
                             want[i].payload.end()));
        }
        // Copying the metadata into a new writer reproduces the same bytes.
        gguf::writer w2;
        w2.copy_metadata(f.meta());
        CHECK(w2.to_bytes() == bytes);
    }
}
