// The Vulkan loader, opened at run time: dlopen("libvulkan.so.1") (or the file named by
// TESSERA_VULKAN_LOADER), one process-wide dispatch table of the entry points the backend
// uses (VK_NO_PROTOTYPES: nothing links against libvulkan), the instance and the list of
// usable physical devices. When anything is missing (no loader, no driver, no device with
// Vulkan 1.2 and timeline semaphores, or TESSERA_VULKAN=0) the list is empty and status()
// says why; nothing throws. The instance is never destroyed (drivers run their own exit
// handlers; destroying it from a static destructor races them).
//
// Compiled only with TESSERA_VULKAN (Meson sets it when the Vulkan headers are found);
// without it this header is empty.
#pragma once

#if defined(TESSERA_VULKAN) && TESSERA_VULKAN

#if !__has_include(<vulkan/vulkan.h>)
#error "TESSERA_VULKAN is set but <vulkan/vulkan.h> is missing: install the Vulkan headers (Debian: libvulkan-dev)"
#endif
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::vulkan {

// The entry points used. Device-level ones are loaded through vkGetInstanceProcAddr too
// (the loader's trampolines dispatch on the device), so one table serves every device.
#define TESSERA_VK_INSTANCE_FNS(X)                                                                                  \
    X(vkEnumeratePhysicalDevices)                                                                                   \
    X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice)
#define TESSERA_VK_DEVICE_FNS(X)                                                                                    \
    X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) \
    X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)         \
    X(vkCreateDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkCreateComputePipelines) X(vkCreateDescriptorPool) \
    X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreateCommandPool)       \
    X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers) X(vkBeginCommandBuffer)           \
    X(vkEndCommandBuffer) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) X(vkCmdPipelineBarrier) X(vkCmdBindPipeline)      \
    X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkQueueSubmit) X(vkQueueWaitIdle)         \
    X(vkCreateSemaphore) X(vkDestroySemaphore) X(vkWaitSemaphores) X(vkSignalSemaphore)                          \
    X(vkGetSemaphoreCounterValue)

struct api {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    PFN_vkCreateInstance vkCreateInstance = nullptr;
#define TESSERA_VK_DECL(f) PFN_##f f = nullptr;
    TESSERA_VK_INSTANCE_FNS(TESSERA_VK_DECL)
    TESSERA_VK_DEVICE_FNS(TESSERA_VK_DECL)
#undef TESSERA_VK_DECL
};

inline const char* result_name(VkResult r) noexcept {
    switch (r) {
        case VK_SUCCESS: return "VK_SUCCESS";
        case VK_NOT_READY: return "VK_NOT_READY";
        case VK_TIMEOUT: return "VK_TIMEOUT";
        case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
        case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
        case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
        case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
        case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
        case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
        case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
        case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
        case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
        default: return "VkResult";
    }
}

// Throws a tessera::error naming the call and the result (out_of_memory for the two
// out-of-memory results, io otherwise).
inline void check(VkResult r, const char* what) {
    if (r == VK_SUCCESS) return;
    const errc c = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? errc::out_of_memory : errc::io;
    fail(c, std::string("Vulkan: ") + what + " failed: " + result_name(r) + " (" + std::to_string(static_cast<int>(r)) + ")");
}

// Vulkan structs start with sType and pNext; GCC 12's -Wmissing-field-initializers fires on
// `T x{VK_STRUCTURE_TYPE_...}`, so they are value-initialized and then typed.
template <class T>
T make(VkStructureType s, const void* next = nullptr) noexcept {
    T x{};
    x.sType = s;
    x.pNext = const_cast<void*>(next);
    return x;
}

struct instance_state {
    api fn;
    VkInstance instance = VK_NULL_HANDLE;
    std::vector<VkPhysicalDevice> devices;  // usable ones, in enumeration order
    std::string status;                     // why there is no device, or what was found
};

inline bool env_is(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::strcmp(v, value) == 0;
}

inline instance_state load_instance() {
    instance_state s;
    if (env_is("TESSERA_VULKAN", "0")) {
        s.status = "disabled by TESSERA_VULKAN=0";
        return s;
    }
    const char* env_lib = std::getenv("TESSERA_VULKAN_LOADER");
    const char* libname = env_lib && *env_lib ? env_lib : "libvulkan.so.1";
    void* lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = dlerror();
        s.status = std::string("no Vulkan loader: dlopen(") + libname + ") failed" + (why ? std::string(": ") + why : "");
        return s;
    }
    s.fn.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!s.fn.vkGetInstanceProcAddr) {
        s.status = std::string(libname) + " has no vkGetInstanceProcAddr";
        return s;
    }
    s.fn.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(s.fn.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
    if (!s.fn.vkCreateInstance) {
        s.status = "the loader has no vkCreateInstance";
        return s;
    }
    auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.pApplicationName = "tessera";
    app.pEngineName = "tessera";
    app.apiVersion = VK_API_VERSION_1_2;
    auto ii = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ii.pApplicationInfo = &app;
    if (const VkResult r = s.fn.vkCreateInstance(&ii, nullptr, &s.instance); r != VK_SUCCESS) {
        s.instance = VK_NULL_HANDLE;
        s.status = std::string("no Vulkan driver: vkCreateInstance returned ") + result_name(r) + " (" +
                   std::to_string(static_cast<int>(r)) + ")";
        return s;
    }
    bool all = true;
#define TESSERA_VK_LOAD(f)                                                                        \
    s.fn.f = reinterpret_cast<PFN_##f>(s.fn.vkGetInstanceProcAddr(s.instance, #f));             \
    all = all && s.fn.f != nullptr;
    TESSERA_VK_INSTANCE_FNS(TESSERA_VK_LOAD)
    TESSERA_VK_DEVICE_FNS(TESSERA_VK_LOAD)
#undef TESSERA_VK_LOAD
    if (!all) {
        s.status = "the Vulkan loader lacks a Vulkan 1.2 entry point";
        return s;
    }
    std::uint32_t n = 0;
    s.fn.vkEnumeratePhysicalDevices(s.instance, &n, nullptr);
    std::vector<VkPhysicalDevice> phys(n);
    if (n) s.fn.vkEnumeratePhysicalDevices(s.instance, &n, phys.data());
    std::string skipped;
    for (VkPhysicalDevice p : phys) {
        auto props = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
        s.fn.vkGetPhysicalDeviceProperties2(p, &props);
        auto f12 = make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
        auto feats = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12);
        if (props.properties.apiVersion >= VK_API_VERSION_1_2) s.fn.vkGetPhysicalDeviceFeatures2(p, &feats);
        if (props.properties.apiVersion < VK_API_VERSION_1_2 || !f12.timelineSemaphore) {
            skipped += std::string(skipped.empty() ? "" : ", ") + props.properties.deviceName;
            continue;
        }
        s.devices.push_back(p);
    }
    if (s.devices.empty())
        s.status = n == 0 ? "the Vulkan driver lists no physical device"
                          : "no device with Vulkan 1.2 and timeline semaphores (skipped: " + skipped + ")";
    else
        s.status = std::to_string(s.devices.size()) + " device(s)" + (skipped.empty() ? "" : " (skipped: " + skipped + ")");
    return s;
}

// The process-wide instance, loaded on first use (thread-safe).
inline const instance_state& instance() {
    static const instance_state* s = new instance_state(load_instance());  // never destroyed (see above)
    return *s;
}
inline const api& fn() { return instance().fn; }

}  // namespace backend::vulkan
TESSERA_END_NAMESPACE

#endif  // TESSERA_VULKAN
