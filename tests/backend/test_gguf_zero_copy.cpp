// Zero copy: an mmap'ed GGUF file's tensor data becomes a CPU buffer as is, and a
// graph computes from it.
#include <doctest/doctest.h>

#include "../shared_data.hpp"
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tessera/backend/all.hpp"
#include "tessera/graph/all.hpp"
#include "tessera/gguf/reader.hpp"

using namespace tessera;
using namespace tessera::backend;

DATA_TEST_CASE("an mmap'ed GGUF becomes a CPU buffer without copying", "models/stories260K.gguf") {
    const std::string path = test_data::path("models/stories260K.gguf");
    gguf::file f = gguf::file::open(path);
    REQUIRE(f.is_mapped());
    const auto data = f.data_section();
    any_buffer buf = cpu_buffer_from_ptr(const_cast<std::byte*>(data.data()), data.size());
    buf.set_usage(buffer_usage::weights);
    CHECK(buf.name() == "CPU_Mapped");

    graph::context ctx({true});
    std::size_t placed = 0;
    graph::node* emb = nullptr;
    for (const gguf::tensor_info& t : f.tensors()) {
        graph::node* n = ctx.new_tensor(t.type, t.ne, t.name);
        tensor_alloc(buf, *n, const_cast<std::byte*>(t.data));
        CHECK(n->bytes() == t.data);  // the file's bytes, not a copy
        CHECK(buffer_of(*n) == buf);
        ++placed;
        if (t.name == "token_embd.weight") emb = n;
    }
    CHECK(placed == f.tensors().size());
    REQUIRE(emb != nullptr);
    if (emb->lay.type != type_id::f32 && emb->lay.type != type_id::f16) {
        MESSAGE("token_embd.weight is " << type_name(emb->lay.type) << ": skipping the compute check");
        return;
    }
    // get_rows of three tokens straight from the mapping, on the CPU via the scheduler
    graph::any_tensor ids = graph::new_tensor(ctx, type_id::i32, {3, 1, 1, 1}, "ids");
    ids.set_input();
    graph::any_tensor rows = graph::get_rows(graph::any_tensor(emb), ids).set_name("rows");
    graph::cgraph g;
    g.build_forward_expand(rows);
    scheduler s({cpu_init(2)});
    s.alloc_graph(g);
    const std::int32_t tok[3] = {1, 5, 42};
    tensor_set(*ids.get(), tok, 0, sizeof tok);
    s.graph_compute(g);
    const auto out = tensor_to_f32(*rows.get());
    const auto all = tensor_to_f32(*emb);
    const auto D = static_cast<std::size_t>(emb->lay.ne[0]);
    for (std::size_t r = 0; r < 3; ++r)
        for (std::size_t i = 0; i < D; ++i) CHECK(out[r * D + i] == all[static_cast<std::size_t>(tok[r]) * D + i]);
}
