// tessera::text: load a vocabulary / tokenizer from a GGUF file's metadata
// (tokenizer.ggml.* keys; tensors are not read).
#pragma once

#include <string>

#include "tessera/gguf/reader.hpp"
#include "tessera/text/tokenizer.hpp"
#include "tessera/text/vocab.hpp"

TESSERA_BEGIN_NAMESPACE
namespace text {

inline vocab vocab_from_gguf(const gguf::file& f) { return vocab(vocab_source_from_metadata(f.meta())); }

inline vocab load_vocab(const std::string& path) { return vocab_from_gguf(gguf::file::open(path)); }

inline tokenizer load_tokenizer(const std::string& path) { return tokenizer(load_vocab(path)); }

}  // namespace text
TESSERA_END_NAMESPACE
