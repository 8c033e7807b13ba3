// All of tessera::graph: tensors, contexts, op builders, graphs and allocation. It
// describes and computes nothing: computing is a backend's (tessera/backend/cpu.hpp).
#pragma once

#include "tessera/graph/allocate.hpp"
#include "tessera/graph/autodiff.hpp"
#include "tessera/graph/context.hpp"
#include "tessera/graph/graph.hpp"
#include "tessera/graph/node.hpp"
#include "tessera/graph/op.hpp"
#include "tessera/graph/ops.hpp"
#include "tessera/graph/tensor.hpp"
