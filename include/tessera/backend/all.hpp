// The backend layer: concepts, type-erased handles, the CPU and reference backends, the
// Vulkan device (when built with TESSERA_VULKAN), the MPI devices (with TESSERA_MPI),
// the registry, the scheduler and the utilities.
#pragma once

#include "tessera/backend/any.hpp"
#include "tessera/backend/backend.hpp"
#include "tessera/backend/buffer.hpp"
#include "tessera/backend/buffer_type.hpp"
#include "tessera/backend/common.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/backend/device.hpp"
#include "tessera/backend/event.hpp"
#include "tessera/backend/mpi.hpp"  // (empty without TESSERA_MPI)
#include "tessera/backend/reference.hpp"
#include "tessera/backend/reg.hpp"
#include "tessera/backend/registry.hpp"
#include "tessera/backend/scheduler.hpp"
#include "tessera/backend/utils.hpp"
#include "tessera/backend/vulkan.hpp"
