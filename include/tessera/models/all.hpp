// The model layer: llama-architecture models on tessera (hyperparameters from GGUF,
// the forward graph, the KV cache), samplers, and random-weight models for demos and
// tests. Built on the graph, backend, gguf and text layers; nothing below depends on it.
#pragma once

#include "tessera/models/hparams.hpp"
#include "tessera/models/llama.hpp"
#include "tessera/models/quantize.hpp"
#include "tessera/models/random.hpp"
#include "tessera/models/sampling.hpp"
