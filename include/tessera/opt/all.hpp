// All of tessera::opt: optimizer settings, datasets, the trainer (static training graph)
// and fit/evaluate, plus the IDX reader of MNIST-style data files.
#pragma once

#include "tessera/opt/dataset.hpp"
#include "tessera/opt/fit.hpp"
#include "tessera/opt/optimizer.hpp"
#include "tessera/opt/trainer.hpp"
