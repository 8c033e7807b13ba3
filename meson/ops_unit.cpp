// The ops unit: the explicit instantiations that TESSERA_LINKED(...) lines in the headers
// name (include/tessera/config.hpp). Built once per build, at the build's own flags (no
// arch flags: the op bodies call kernels through the dispatcher), and linked with the
// per-arch kernel units into the same library; every other unit declares these
// instantiations extern and does not compile the op table's bodies or the Vulkan device.
#include "tessera/backend/cpu.hpp"
#include "tessera/backend/vulkan.hpp"
