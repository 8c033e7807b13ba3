// Umbrella header of the reference (scalar) quantization API.
//
//   quantize_row_ref(x, y, n)            f32 row -> blocks (ggml's reference algorithm)
//   quantize_row_ref(x, y, n, imatrix)   the same with optional importance weights
//   dequantize_row_ref(y, x, n)          blocks -> f32
//   vec_dot_ref(n, x, y)                 row of B . row of block_traits<B>::dot_partner
//
// one overload per supported block type of blocks.hpp. n must be a whole number of
// blocks, else tessera::error(errc::shape_mismatch).
#pragma once

#include "tessera/quant/q4_q5.hpp"
#include "tessera/quant/q8.hpp"
