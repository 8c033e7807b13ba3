// Handcrafted GGUF files, valid and broken, in the manner of ggml's test-gguf: each
// broken one must be rejected with errc::format and a message naming the offset and
// the field; the valid ones must load with the expected geometry.
#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <string>

#include "gguf_test_util.hpp"
#include "tessera/gguf/reader.hpp"

using namespace tessera;
using gguf_test::raw;

namespace {

// Parses bytes and returns the error; fails the test if parsing succeeds.
error parse_error(const std::vector<std::byte>& b) {
    try {
        (void)gguf::file::from_buffer(b, "case.gguf");
    } catch (const error& e) {
        return e;
    }
    FAIL("the reader accepted a broken file");
    return error(errc::format, "");
}

void expect_rejected(const raw& r, const std::string& needle, std::int64_t at = -1) {
    const error e = parse_error(r.b);
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(e.code() == errc::format);
    CHECK(msg.find("gguf file 'case.gguf': offset ") == 0);
    CHECK(msg.find(needle) != std::string::npos);
    if (at >= 0) CHECK(msg.find("offset " + std::to_string(at) + ":") != std::string::npos);
}

// A header with one KV that is general.alignment of the given type and value.
raw with_alignment_kv(std::uint32_t type, std::uint32_t v) {
    raw r;
    r.header(0, 1).str("general.alignment").u32(type).u32(v);
    return r;
}

// A valid file: two KVs, n tensors of f32 [ne0, 2] with data bytes (offset + j) % 256.
raw valid_file(std::uint32_t alignment = 32, int n = 3, std::int64_t ne0 = 5) {
    raw r;
    const bool custom = alignment != 32;
    r.header(static_cast<std::uint64_t>(n), custom ? 2 : 1);
    r.str("my_key_0").u32(4).u32(77);
    if (custom) r.str("general.alignment").u32(4).u32(alignment);
    const std::uint64_t sz = static_cast<std::uint64_t>(ne0) * 2 * 4;
    const std::uint64_t padded = (sz + alignment - 1) / alignment * alignment;
    for (int i = 0; i < n; ++i) r.tensor("my_tensor_" + std::to_string(i), {ne0, 2}, 0, padded * static_cast<std::uint64_t>(i));
    r.pad(alignment);
    const std::size_t data = r.size();
    for (int i = 0; i < n; ++i) {
        for (std::uint64_t j = 0; j < sz; ++j) r.u8(static_cast<std::uint8_t>((r.size() - data) % 256));
        r.pad(alignment);
    }
    return r;
}

}  // namespace

TEST_CASE("header: bad magic, versions and counts are rejected") {
    raw m;
    m.bytes("FUGG").u32(3).u64(0).u64(0);
    expect_rejected(m, "bad magic 'FUGG'", 0);

    for (std::uint32_t v : {0u, 1u, 4u, 0x7fffffffu}) {
        CAPTURE(v);
        raw r;
        r.header(0, 0, v);
        expect_rejected(r, v == 0 ? "invalid GGUF version 0"
                           : v == 1 ? "version 1 is no longer supported"
                                    : "unsupported GGUF version " + std::to_string(v),
                        4);
    }
    raw be;
    be.header(0, 0, 0x03000000u);
    expect_rejected(be, "looks byte-swapped: big-endian", 4);

    raw nt;
    nt.header(std::numeric_limits<std::uint64_t>::max(), 0);
    expect_rejected(nt, "tensor count 18446744073709551615 is impossible", 8);
    raw nkv;
    nkv.header(0, std::numeric_limits<std::uint64_t>::max());
    expect_rejected(nkv, "key/value count 18446744073709551615 is impossible", 16);
    raw big;  // a plausible-looking count that the remaining bytes cannot hold
    big.header(0, 1000).zeros(100);
    expect_rejected(big, "hold at most 7 key/value pairs");

    raw tiny;
    tiny.bytes("GG");
    expect_rejected(tiny, "2 bytes, too short for the GGUF magic", 0);
    raw cut;
    cut.bytes("GGUF").u32(3).u32(0);
    expect_rejected(cut, "truncated file: the tensor count needs 8 bytes, only 4 remain", 8);
    CHECK_THROWS_AS(gguf::file::from_buffer({}), error);
}

TEST_CASE("header: an empty file (no KV, no tensor) is valid") {
    raw r;
    r.header(0, 0);
    const auto f = gguf::file::from_buffer(r.b);
    CHECK(f.version() == 3);
    CHECK(f.meta().empty());
    CHECK(f.tensors().empty());
    CHECK(f.alignment() == 32);
    CHECK(f.data_offset() == 32);  // 24 header bytes padded to the alignment
    CHECK(f.data_section().empty());
    raw v2;
    v2.header(0, 0, 2);
    CHECK(gguf::file::from_buffer(v2.b).version() == 2);
}

TEST_CASE("key/value: bad keys, types, duplicates and alignment are rejected") {
    raw ks;
    ks.header(0, 1).u64(std::numeric_limits<std::uint64_t>::max()).zeros(16);
    expect_rejected(ks, "the name of key #0: string length 18446744073709551615 runs past the end", 24);
    raw ek;
    ek.header(0, 1).str("").u32(4).u32(0);
    expect_rejected(ek, "key #0 is empty", 24);
    raw bt;
    bt.header(0, 1).str("my_key_0").u32(13).u32(0);
    expect_rejected(bt, "key 'my_key_0' has unknown value type 13 (valid types are 0..12)", 40);
    raw dk;
    dk.header(0, 2).str("my_key_0").u32(4).u32(1).str("my_key_0").u32(5).i32(2);
    expect_rejected(dk, "duplicate key 'my_key_0' (key #1 repeats key #0 at offset 24)", 48);

    expect_rejected(with_alignment_kv(4, 13), "general.alignment = 13 is not a non-zero power of two", 24);
    expect_rejected(with_alignment_kv(4, 0), "general.alignment = 0 is not a non-zero power of two", 24);
    expect_rejected(with_alignment_kv(5, 64), "key 'general.alignment' must have type u32, not i32", 24);
    CHECK(gguf::file::from_buffer(with_alignment_kv(4, 64).b).alignment() == 64);
    CHECK(gguf::file::from_buffer(with_alignment_kv(4, 1).b).alignment() == 1);

    raw tv;  // a u64 value cut short
    tv.header(0, 1).str("k").u32(10).u32(0);
    expect_rejected(tv, "truncated file: the u64 value of key 'k' needs 8 bytes, only 4 remain", 37);
    raw sv;  // a string value longer than the file
    sv.header(0, 1).str("k").u32(8).u64(1000).bytes("abc");
    expect_rejected(sv, "key 'k': string length 1000 runs past the end of the file (3 bytes remain)", 37);
}

TEST_CASE("key/value: broken arrays are rejected without allocating from their counts") {
    raw et;
    et.header(0, 1).str("arr").u32(9).u32(99).u64(0);
    expect_rejected(et, "key 'arr': array has unknown element type 99", 39);
    raw hc;  // 2^60 u32 elements claimed
    hc.header(0, 1).str("arr").u32(9).u32(4).u64(1ull << 60).u32(1);
    expect_rejected(hc, "key 'arr': array of 1152921504606846976 u32 elements needs at least", 43);
    raw hs;  // 2^62 strings claimed: no reserve() of that size may happen
    hs.header(0, 1).str("arr").u32(9).u32(8).u64(1ull << 62);
    expect_rejected(hs, "array of 4611686018427387904 str elements");
    raw hn;  // nested arrays claimed
    hn.header(0, 1).str("arr").u32(9).u32(9).u64(std::numeric_limits<std::uint64_t>::max());
    expect_rejected(hn, "array of 18446744073709551615 arr elements needs at least 2^64 bytes");
    raw ts;  // the third string of a string array runs past the end
    ts.header(0, 1).str("tok").u32(9).u32(8).u64(3).str("a").str("b").u64(50).bytes("xyz");
    expect_rejected(ts, "key 'tok'[2]: string length 50 runs past the end");
    raw deep;  // 20 levels of arrays of one array
    deep.header(0, 1).str("deep").u32(9);
    for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
    deep.u32(0).u64(0);
    expect_rejected(deep, "arrays nested deeper than 16 levels");
    raw nb;  // an element type error inside a nested array names the path
    nb.header(0, 1).str("n").u32(9).u32(9).u64(2).u32(5).u64(1).i32(7).u32(77).u64(0);
    expect_rejected(nb, "key 'n'[1]: array has unknown element type 77");
}

TEST_CASE("tensor infos: bad names, dims, shapes, types and offsets are rejected") {
    auto one = [](std::string name, std::vector<std::int64_t> ne, std::int32_t type, std::uint64_t off) {
        raw r;
        r.header(1, 0).tensor(name, std::move(ne), type, off);
        r.pad(32).zeros(4096);
        return r;
    };
    expect_rejected(one(std::string(64, 'x'), {4}, 0, 0),
                    "tensor #0 has a name of 64 bytes; ggml limits tensor names to 63 bytes", 24);
    CHECK_NOTHROW((void)gguf::file::from_buffer(one(std::string(63, 'x'), {4}, 0, 0).b));

    raw dims;
    dims.header(1, 0).str("t").u32(5);
    for (int i = 0; i < 5; ++i) dims.i64(1);
    dims.i32(0).u64(0).pad(32).zeros(32);
    expect_rejected(dims, "tensor 't' has 5 dimensions; ggml supports at most 4", 33);

    expect_rejected(one("t", {4, -1}, 0, 0), "tensor 't': ne[1] = -1 is negative", 45);
    const std::int64_t big = 4ll * std::numeric_limits<std::int32_t>::max();
    expect_rejected(one("t", {big, big, big, big}, 0, 0), "the element count overflows 64 bits", 33);
    // 2^61 f64 elements: the count fits in int64, the byte size does not fit in 63 bits.
    expect_rejected(one("t", {1ll << 61}, 28, 0), "of type f64: the byte size overflows 63 bits", 33);
    expect_rejected(one("t", {4}, 43, 0), "tensor 't' has unknown ggml type id 43", 45);
    expect_rejected(one("t", {4}, 4, 0), "tensor 't' has unknown ggml type id 4 (a removed type)", 45);
    expect_rejected(one("t", {4}, -1, 0), "unknown ggml type id -1");
    expect_rejected(one("t", {33, 2}, 2, 0), "tensor 't' of type q4_0: ne[0] = 33 is not a multiple of the block size 32");
    expect_rejected(one("t", {4}, 0, std::numeric_limits<std::uint64_t>::max()),
                    "has data offset 18446744073709551615, not a multiple of the alignment 32", 49);
    expect_rejected(one("t", {4}, 0, 32), "tensor 't' has data offset 32, expected 0", 49);
    // A zero-sized dimension is valid and gives a tensor of zero bytes.
    const auto r0 = one("t", {4, 0}, 0, 0);
    const auto f0 = gguf::file::from_buffer(r0.b);
    CHECK(f0.tensors()[0].size_bytes == 0);
    CHECK(f0.tensors()[0].n_elements() == 0);

    raw dup;
    dup.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).pad(32).zeros(64);
    expect_rejected(dup, "duplicate tensor name 't' (tensor #1 repeats tensor #0)");

    raw cut;  // the tensor info ends inside ne[1]
    cut.header(1, 0).str("t").u32(2).i64(4).u32(0);
    expect_rejected(cut, "truncated file: ne[1] of tensor 't' needs 8 bytes, only 4 remain", 45);
}

TEST_CASE("tensor data: layout, alignment and end of file are checked") {
    SUBCASE("inconsistent alignment: offsets packed with alignment 1") {
        raw r;
        r.header(2, 0).tensor("a", {2}, 0, 0).tensor("b", {2}, 0, 8).pad(32).zeros(64);
        expect_rejected(r, "tensor 'b' has data offset 8, not a multiple of the alignment 32");
    }
    SUBCASE("a gap between tensors") {
        raw r;
        r.header(2, 0).tensor("a", {2}, 0, 0).tensor("b", {2}, 0, 64).pad(32).zeros(128);
        expect_rejected(r, "tensor 'b' has data offset 64, expected 32: tensor data must be contiguous");
    }
    SUBCASE("overlapping tensors") {
        raw r;
        r.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {2}, 0, 32).pad(32).zeros(128);
        expect_rejected(r, "tensor 'b' has data offset 32, expected 64");
    }
    SUBCASE("out of order") {
        raw r;
        r.header(2, 0).tensor("a", {2}, 0, 32).tensor("b", {2}, 0, 0).pad(32).zeros(128);
        expect_rejected(r, "tensor 'a' has data offset 32, expected 0");
    }
    SUBCASE("not enough data: one byte short") {
        raw r = valid_file();
        const std::size_t full = r.size();
        // Data starts at 224; the last tensor's 40 bytes at 352 end 24 bytes before the
        // file's end (its padding).
        CHECK(full == 416);
        r.b.resize(full - 24 - 1);
        expect_rejected(r, "tensor 'my_tensor_2' data (40 bytes at file offset 352) runs past the end of the file (391 bytes)", 193);
        r.b.resize(full - 24);  // without its padding the last tensor is complete: accepted
        CHECK(gguf::file::from_buffer(r.b).tensors().size() == 3);
    }
    SUBCASE("memory size overflow: two huge i8 tensors") {
        raw r;
        r.header(2, 0)
            .tensor("a", {0x7FFFFFFFFFFFFFC0}, 24, 0)
            .tensor("b", {0x7FFFFFFFFFFFFFC0}, 24, 0x7FFFFFFFFFFFFFC0)
            .pad(32)
            .zeros(64);
        expect_rejected(r, "tensor 'a' data (9223372036854775744 bytes at file offset 96) runs past the end of the file (160 bytes)", 49);
    }
    SUBCASE("custom alignment in a header with data") {
        raw r;
        r.header(1, 1).str("general.alignment").u32(4).u32(13).tensor("a", {2}, 0, 0).pad(32).zeros(32);
        expect_rejected(r, "general.alignment = 13");
    }
}

TEST_CASE("valid handcrafted files load with the right geometry and data") {
    for (std::uint32_t align : {32u, 1u, 8u, 64u}) {
        CAPTURE(align);
        const raw r = valid_file(align, 3, 5);
        const auto f = gguf::file::from_buffer(r.b);
        CHECK(f.alignment() == align);
        CHECK(f.meta().get<std::uint32_t>("my_key_0") == 77);
        REQUIRE(f.tensors().size() == 3);
        const std::uint64_t padded = (40 + align - 1) / align * align;
        for (std::size_t i = 0; i < 3; ++i) {
            const auto& t = f.tensors()[i];
            CHECK(t.name == "my_tensor_" + std::to_string(i));
            CHECK(t.type == type_id::f32);
            CHECK(t.n_dims == 2);
            CHECK(t.ne == std::array<std::int64_t, 4>{5, 2, 1, 1});
            CHECK(t.offset == padded * i);
            CHECK(t.size_bytes == 40);
            CHECK(t.nb() == std::array<std::uint64_t, 4>{4, 20, 40, 40});
            CHECK(t.data == r.b.data() + f.data_offset() + t.offset);
            for (std::uint64_t j = 0; j < t.size_bytes; ++j)
                CHECK(static_cast<std::uint8_t>(t.data[j]) == (t.offset + j) % 256);
            CHECK(f.find_tensor(t.name) == &t);
        }
        CHECK(f.data_offset() % align == 0);
        CHECK(f.find_tensor("nope") == nullptr);
        CHECK_THROWS_WITH_AS(f.tensor("nope"), "gguf file '<memory>': no tensor named 'nope'", error);
    }
}

TEST_CASE("every truncation of a valid file is rejected cleanly") {
    raw r = valid_file(32, 2, 8);
    // Add KVs of every kind so cuts land inside strings and arrays too.
    raw k;
    k.header(2, 4)
        .str("s").u32(8).str("hello")
        .str("a").u32(9).u32(4).u64(3).u32(1).u32(2).u32(3)
        .str("sa").u32(9).u32(8).u64(2).str("x").str("yz")
        .str("n").u32(9).u32(9).u64(1).u32(0).u64(2).u8(1).u8(2)
        .tensor("t0", {8}, 0, 0)
        .tensor("t1", {8}, 0, 32)
        .pad(32);
    const std::size_t meta = k.size();
    k.zeros(64);
    const auto full = gguf::file::from_buffer(k.b);
    CHECK(full.data_offset() == meta);
    const std::size_t needed = meta + 32 + 32;  // the last tensor's 32 bytes
    for (std::size_t n = 0; n < needed; ++n) {
        CAPTURE(n);
        std::vector<std::byte> cut(k.b.begin(), k.b.begin() + static_cast<std::ptrdiff_t>(n));
        try {
            (void)gguf::file::from_buffer(cut);
            FAIL("accepted a truncated file");
        } catch (const error& e) {
            CHECK(e.code() == errc::format);
        }
    }
}

TEST_CASE("random byte corruption never crashes and only ever throws tessera::error") {
    raw k;
    k.header(1, 3)
        .str("s").u32(8).str("hello")
        .str("a").u32(9).u32(6).u64(3).put(1.0f).put(2.0f).put(3.0f)
        .str("sa").u32(9).u32(8).u64(2).str("x").str("yz")
        .tensor("t0", {32}, 2, 0)
        .pad(32)
        .zeros(32);
    std::mt19937 rng(1234);
    int accepted = 0;
    for (int iter = 0; iter < 4000; ++iter) {
        auto b = k.b;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < flips; ++i) b[rng() % b.size()] = static_cast<std::byte>(rng());
        try {
            const auto f = gguf::file::from_buffer(b);
            for (const auto& e : f.meta()) (void)e.val.to_string();
            ++accepted;
        } catch (const error& e) {
            CHECK((e.code() == errc::format));
        }
    }
    MESSAGE("random corruption: " << accepted << " of 4000 mutants still valid");
}
