// Every kernel header. The generated per-arch units include this file, so a kernel
// whose header is listed here is instantiated for every arch of the build.
#pragma once

#include "tessera/kernels/convert.hpp"
#include "tessera/kernels/quant/dequant.hpp"
#include "tessera/kernels/quant/gemm.hpp"
#include "tessera/kernels/quant/quantize_act.hpp"
#include "tessera/kernels/quant/quantize_w.hpp"
#include "tessera/kernels/quant/table.hpp"
#include "tessera/kernels/quant/vec_dot.hpp"
#include "tessera/kernels/vec.hpp"
#include "tessera/kernels/elementwise.hpp"
#include "tessera/kernels/gemm.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/softmax.hpp"
