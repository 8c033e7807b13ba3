// Every op builder of tessera::graph (one header per family under graph/ops/).
#pragma once

#include "tessera/graph/ops/attention.hpp"
#include "tessera/graph/ops/common.hpp"
#include "tessera/graph/ops/elementwise.hpp"
#include "tessera/graph/ops/matmul.hpp"
#include "tessera/graph/ops/norm.hpp"
#include "tessera/graph/ops/recurrent.hpp"
#include "tessera/graph/ops/reduce.hpp"
#include "tessera/graph/ops/shape.hpp"
