// main of test_backend_vulkan: runs the Vulkan tests when the loader finds a device, else
// prints why and exits 77 (Meson's "skipped"). With TESSERA_TEST_VULKAN_ABSENT=1 it runs
// only the test suite "vulkan_absent" instead, which expects no Vulkan device (run with
// VK_ICD_FILENAMES=/nonexistent.json) and checks the CPU fallback.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tessera/backend/vulkan.hpp"

int main(int argc, char** argv) {
#if defined(TESSERA_VULKAN) && TESSERA_VULKAN
    using namespace tessera::backend;
    doctest::Context ctx;
    ctx.applyCommandLine(argc, argv);
    const char* absent = std::getenv("TESSERA_TEST_VULKAN_ABSENT");
    if (absent && std::strcmp(absent, "1") == 0) {
        std::printf("expecting no Vulkan device: %s\n", vulkan_status().c_str());
        ctx.addFilter("test-suite", "vulkan_absent");
        return ctx.run();
    }
    if (vulkan_device_count() == 0) {
        std::printf("SKIP: no Vulkan device (%s)\n", vulkan_status().c_str());
        return 77;
    }
    const auto& c = vulkan::context_at(0);
    std::printf("Vulkan0: %s; host I/O through %s\n", c.description().c_str(),
                c.staging() ? "staging buffers" : "the mapped device memory");
    ctx.addFilter("test-suite-exclude", "vulkan_absent");
    return ctx.run();
#else
    (void)argc;
    (void)argv;
    std::printf("SKIP: tessera was built without Vulkan (TESSERA_VULKAN unset)\n");
    return 77;
#endif
}
