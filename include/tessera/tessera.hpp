// The umbrella header: all of tessera. Inside the library, include the specific header.
#pragma once

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/core/element.hpp"
#include "tessera/core/extents.hpp"
#include "tessera/core/layout.hpp"
#include "tessera/core/tensor_view.hpp"
#include "tessera/core/type_id.hpp"
#include "tessera/kernels/all.hpp"
#include "tessera/quant/blocks.hpp"
#include "tessera/simd/arch.hpp"
#include "tessera/simd/cpu.hpp"
#include "tessera/simd/dispatch.hpp"
