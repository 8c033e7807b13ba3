// The model fuzzer's property (fuzz_model.cpp), shared with the test that replays its
// seeds and findings: any bytes, read as a GGUF file, either are refused with a
// tessera::error (by the reader, the vocabulary or the model loader) or load as a llama
// model that tokenizes a prompt, runs it and one more token with a tiny context, and
// detokenizes what it picked. Anything else (a crash, a sanitizer report, another
// exception type) is a finding.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/gguf/reader.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/random.hpp"

namespace model_fuzz {

// Returns whether the model loaded and ran.
inline bool run_one(const std::uint8_t* data, std::size_t size) {
    using namespace tessera;
    try {
        models::llama_model m(gguf::file::from_buffer(std::as_bytes(std::span(data, size)), "fuzz.gguf"),
                              {.n_threads = 1, .n_ctx = 8, .n_batch = 4});
        std::vector<std::int32_t> toks;
        if (m.has_tokenizer()) {
            for (text::token t : m.tokenizer().tokenize("Once upon a time, 42 cats\xE2\x80\x94 \xF0\x9F\x98\x80!", true))
                toks.push_back(static_cast<std::int32_t>(t));
        }
        if (toks.size() > 6) toks.resize(6);
        if (toks.empty()) toks.push_back(0);
        const std::vector<float> logits = m.eval(toks);
        const auto best = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        (void)m.eval(std::span<const std::int32_t>(&best, 1));
        if (m.has_tokenizer()) {
            const std::vector<text::token> out{static_cast<text::token>(best)};
            (void)m.tokenizer().detokenize(out);
        }
        return true;
    } catch (const error&) {
        return false;
    }
}

// Seeds: tiny valid models (one block, tied embeddings, the built-in 386-token
// vocabulary) in f32, f16, q8_0 and q4_0, each well under the fuzzer's 128 KiB inputs.
struct seed {
    std::string name;
    std::vector<std::byte> bytes;
};
inline std::vector<seed> seeds() {
    using namespace tessera;
    std::vector<seed> out;
    auto add = [&](const std::string& name, std::int64_t n_embd, type_id t, std::int64_t n_head_kv) {
        models::random_llama_config c;
        c.n_embd = n_embd;
        c.n_layer = 1;
        c.n_ff = 32;
        c.n_head = 2;
        c.n_head_kv = n_head_kv;
        c.n_ctx = 16;
        c.weight_type = t;
        c.tied_output = true;
        out.push_back({name, models::random_llama(c).to_bytes()});
    };
    add("tiny-f32", 16, type_id::f32, 1);
    add("tiny-f16", 16, type_id::f16, 2);
    add("tiny-q8_0", 32, type_id::q8_0, 1);
    add("tiny-q4_0", 32, type_id::q4_0, 2);
    return out;
}

}  // namespace model_fuzz
