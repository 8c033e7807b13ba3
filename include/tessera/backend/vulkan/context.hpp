// One Vulkan device's context (per physical device, created on first use, alive until
// exit): the VkDevice and its one compute queue (shared by every stream, behind a mutex),
// the memory types of the two buffer types, the compute pipelines (created lazily, one
// per shader), and a transfer context for the synchronous tensor I/O of buffers.
//
// Memory model. Device-local buffers are VkBuffers the host never dereferences; their
// base() is a PROT_NONE address range (see vulkan.hpp). Host I/O goes either through a
// host-visible staging buffer and vkCmdCopyBuffer (a discrete GPU's only way), or, when
// the device-local memory type is also host-visible (lavapipe, integrated GPUs), by memcpy
// into its persistent mapping after the queue is idle. TESSERA_VULKAN_STAGING=1 (or
// set_force_staging(true)) forces the staging path, so CI exercises it on lavapipe.
//
// Every command buffer starts with a full memory barrier (all earlier work on the queue,
// any stream, is complete and its writes visible) and ends with one that makes its writes
// visible to the host; inside a graph, a barrier separates consecutive dispatches.
#pragma once

#if defined(TESSERA_VULKAN) && TESSERA_VULKAN

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/backend/vulkan/loader.hpp"
#include "tessera/backend/vulkan/spirv/shaders.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend::vulkan {

// The compiled shaders (spirv/shaders.hpp), one pipeline each. Each has two builds: with
// 16-bit storage (f16/bf16 operands), used when the device has storageBuffer16BitAccess,
// and an f32-only one (NAME_f32only) for devices without it.
enum class shader_id : std::uint8_t {
    eltwise, get_rows, set_rows, reduce, soft_max, rope, mul_mat_vec, mul_mat_tiled, mul_mat_id, flash_attn, quantize, count
};

inline constexpr std::uint32_t push_constant_bytes = 128;  // the minimum every device offers
inline constexpr std::uint32_t max_bindings = 6;           // storage buffers per dispatch (at most)

// A VkBuffer with its memory (and its mapping when host-visible).
struct memory_block {
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    void* map = nullptr;
    VkDeviceSize size = 0;
};

inline void full_barrier(VkCommandBuffer cb, VkPipelineStageFlags dst_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                         VkAccessFlags dst_access = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT) {
    auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
    mb.dstAccessMask = dst_access;
    fn().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, dst_stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

class context {
public:
    context(std::size_t index, VkPhysicalDevice phys) : index_(index) {
        const api& f = fn();
        auto m3 = make<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
        auto p2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &m3);
        f.vkGetPhysicalDeviceProperties2(phys, &p2);
        props_ = p2.properties;
        max_allocation_ = static_cast<std::size_t>(m3.maxMemoryAllocationSize);
        f.vkGetPhysicalDeviceMemoryProperties(phys, &mem_);
        name_ = "Vulkan" + std::to_string(index);
        const char* kind = "other";
        switch (props_.deviceType) {
            case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: kind = "integrated GPU"; break;
            case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: kind = "discrete GPU"; break;
            case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: kind = "virtual GPU"; break;
            case VK_PHYSICAL_DEVICE_TYPE_CPU: kind = "CPU (software)"; break;
            default: break;
        }
        description_ = std::string(props_.deviceName) + " (Vulkan " + std::to_string(VK_API_VERSION_MAJOR(props_.apiVersion)) + "." +
                       std::to_string(VK_API_VERSION_MINOR(props_.apiVersion)) + ", " + kind + ")";

        std::uint32_t nq = 0;
        f.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
        std::vector<VkQueueFamilyProperties> qf(nq);
        f.vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
        qfam_ = UINT32_MAX;
        for (std::uint32_t i = 0; i < nq && qfam_ == UINT32_MAX; ++i)
            if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) qfam_ = i;
        if (qfam_ == UINT32_MAX) fail(errc::unsupported, name_ + ": " + props_.deviceName + " has no compute queue");
        const float prio = 1.0f;
        auto qi = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
        qi.queueFamilyIndex = qfam_;
        qi.queueCount = 1;
        qi.pQueuePriorities = &prio;
        // 16-bit storage (f16 and bf16 operands), when the device has it; TESSERA_VULKAN_NO_16BIT=1
        // leaves it off (the _f32only shader builds, f16/bf16 refused), so CI runs that path too
        auto have11 = make<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
        auto have = make<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &have11);
        f.vkGetPhysicalDeviceFeatures2(phys, &have);
        storage16_ = have11.storageBuffer16BitAccess == VK_TRUE && !env_is("TESSERA_VULKAN_NO_16BIT", "1");
        auto e11 = make<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
        e11.storageBuffer16BitAccess = storage16_ ? VK_TRUE : VK_FALSE;
        auto e12 = make<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &e11);
        e12.timelineSemaphore = VK_TRUE;
        auto di = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &e12);
        di.queueCreateInfoCount = 1;
        di.pQueueCreateInfos = &qi;
        check(f.vkCreateDevice(phys, &di, nullptr, &dev_), "vkCreateDevice");
        f.vkGetDeviceQueue(dev_, qfam_, 0, &queue_);

        // memory types: device-local (else any), and host-visible coherent (cached if offered)
        dev_type_ = pick_type(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
        if (dev_type_ == UINT32_MAX) dev_type_ = pick_type(0, 0);
        host_type_ = pick_type(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                   VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                               0);
        if (host_type_ == UINT32_MAX)
            host_type_ = pick_type(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
        if (dev_type_ == UINT32_MAX || host_type_ == UINT32_MAX)
            fail(errc::unsupported, name_ + ": no usable memory types (device-local and host-visible coherent)");
        dev_mappable_ = (mem_.memoryTypes[dev_type_].propertyFlags & (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) ==
                        (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        force_staging_ = env_is("TESSERA_VULKAN_STAGING", "1");

        // one pipeline layout for every shader: max_bindings storage buffers and 128 bytes of push
        // constants (a device may offer fewer per stage, at least 4: the ops that need more refuse)
        bindings_ = std::min(max_bindings, props_.limits.maxPerStageDescriptorStorageBuffers);
        std::array<VkDescriptorSetLayoutBinding, max_bindings> binds{};
        for (std::uint32_t i = 0; i < bindings_; ++i) {
            binds[i].binding = i;
            binds[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            binds[i].descriptorCount = 1;
            binds[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        }
        auto dli = make<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
        dli.bindingCount = bindings_;
        dli.pBindings = binds.data();
        check(f.vkCreateDescriptorSetLayout(dev_, &dli, nullptr, &dsl_), "vkCreateDescriptorSetLayout");
        VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_constant_bytes};
        auto pli = make<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
        pli.setLayoutCount = 1;
        pli.pSetLayouts = &dsl_;
        pli.pushConstantRangeCount = 1;
        pli.pPushConstantRanges = &pr;
        check(f.vkCreatePipelineLayout(dev_, &pli, nullptr, &layout_), "vkCreatePipelineLayout");

        // the transfer context of synchronous I/O
        auto ci = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
        ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        ci.queueFamilyIndex = qfam_;
        check(f.vkCreateCommandPool(dev_, &ci, nullptr, &xfer_pool_), "vkCreateCommandPool");
        xfer_sem_ = new_timeline();
    }
    context(const context&) = delete;
    context& operator=(const context&) = delete;
    // (never destroyed: contexts live until exit)

    const std::string& name() const noexcept { return name_; }
    const std::string& description() const noexcept { return description_; }
    std::size_t index() const noexcept { return index_; }
    const VkPhysicalDeviceProperties& props() const noexcept { return props_; }
    const VkPhysicalDeviceLimits& limits() const noexcept { return props_.limits; }
    VkDevice device() const noexcept { return dev_; }
    std::uint32_t queue_family() const noexcept { return qfam_; }
    VkPipelineLayout pipeline_layout() const noexcept { return layout_; }
    VkDescriptorSetLayout set_layout() const noexcept { return dsl_; }
    bool emulated() const noexcept { return props_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }
    // storageBuffer16BitAccess: shaders read and write f16 and bf16 operands.
    bool storage16() const noexcept { return storage16_; }
    // The storage buffers of the pipeline layout (max_bindings, or fewer when the device's
    // maxPerStageDescriptorStorageBuffers is lower).
    std::uint32_t bindings() const noexcept { return bindings_; }

    // Bytes of the heap behind the device-local memory type.
    std::size_t heap_size() const noexcept { return static_cast<std::size_t>(mem_.memoryHeaps[mem_.memoryTypes[dev_type_].heapIndex].size); }
    // The largest buffer: maxMemoryAllocationSize (Vulkan 1.1), at most the heap.
    std::size_t max_alloc() const noexcept { return std::min(heap_size(), max_allocation_); }
    std::size_t alignment() const noexcept {
        return std::max<std::size_t>(static_cast<std::size_t>(limits().minStorageBufferOffsetAlignment), 32);
    }
    std::size_t max_binding() const noexcept { return limits().maxStorageBufferRange; }

    // Staging path forced, or the device-local memory is not mappable.
    bool staging() const noexcept { return force_staging_.load() || !dev_mappable_; }
    void set_force_staging(bool on) noexcept { force_staging_ = on; }

    // ---- memory ------------------------------------------------------------------------------
    // A buffer of n bytes (n > 0) in device-local (host = false) or host-visible memory,
    // mapped when the memory is mappable.
    memory_block alloc(std::size_t n, bool host) const {
        const api& f = fn();
        memory_block b;
        b.size = n;
        auto bi = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
        bi.size = n;
        bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        check(f.vkCreateBuffer(dev_, &bi, nullptr, &b.buf), "vkCreateBuffer");
        VkMemoryRequirements req{};
        f.vkGetBufferMemoryRequirements(dev_, b.buf, &req);
        const std::uint32_t t = host ? host_type_ : dev_type_;
        if (!(req.memoryTypeBits & (1u << t))) {
            f.vkDestroyBuffer(dev_, b.buf, nullptr);
            fail(errc::unsupported, name_ + ": a buffer cannot use the chosen memory type");
        }
        auto ai = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = t;
        if (const VkResult r = f.vkAllocateMemory(dev_, &ai, nullptr, &b.mem); r != VK_SUCCESS) {
            f.vkDestroyBuffer(dev_, b.buf, nullptr);
            fail(errc::out_of_memory, name_ + ": could not allocate " + std::to_string(n) + " bytes of " +
                                          (host ? "host-visible" : "device") + " memory (" + result_name(r) + ")");
        }
        check(f.vkBindBufferMemory(dev_, b.buf, b.mem, 0), "vkBindBufferMemory");
        if (host || dev_mappable_) check(f.vkMapMemory(dev_, b.mem, 0, VK_WHOLE_SIZE, 0, &b.map), "vkMapMemory");
        return b;
    }
    void free(memory_block& b) const noexcept {
        if (b.buf) fn().vkDestroyBuffer(dev_, b.buf, nullptr);
        if (b.mem) fn().vkFreeMemory(dev_, b.mem, nullptr);  // unmaps
        b = {};
    }

    // ---- queue -------------------------------------------------------------------------------
    VkSemaphore new_timeline() const {
        auto ti = make<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
        ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
        ti.initialValue = 0;
        auto si = make<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &ti);
        VkSemaphore s = VK_NULL_HANDLE;
        check(fn().vkCreateSemaphore(dev_, &si, nullptr, &s), "vkCreateSemaphore");
        return s;
    }
    struct wait_point {
        VkSemaphore sem;
        std::uint64_t value;
    };
    // Submits cb; it waits (on the device) for `waits` and signals sem to value.
    void submit(VkCommandBuffer cb, VkSemaphore sem, std::uint64_t value, const std::vector<wait_point>& waits = {}) {
        std::vector<VkSemaphore> ws;
        std::vector<std::uint64_t> wv;
        std::vector<VkPipelineStageFlags> stages;
        for (const wait_point& w : waits) {
            ws.push_back(w.sem);
            wv.push_back(w.value);
            stages.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
        }
        auto ti = make<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
        ti.waitSemaphoreValueCount = static_cast<std::uint32_t>(wv.size());
        ti.pWaitSemaphoreValues = wv.data();
        ti.signalSemaphoreValueCount = 1;
        ti.pSignalSemaphoreValues = &value;
        auto si = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO, &ti);
        si.waitSemaphoreCount = static_cast<std::uint32_t>(ws.size());
        si.pWaitSemaphores = ws.data();
        si.pWaitDstStageMask = stages.data();
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        si.signalSemaphoreCount = 1;
        si.pSignalSemaphores = &sem;
        std::lock_guard<std::mutex> lk(queue_mu_);
        check(fn().vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
    }
    void wait(VkSemaphore sem, std::uint64_t value) const {
        auto wi = make<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
        wi.semaphoreCount = 1;
        wi.pSemaphores = &sem;
        wi.pValues = &value;
        check(fn().vkWaitSemaphores(dev_, &wi, UINT64_MAX), "vkWaitSemaphores");
    }
    std::uint64_t value(VkSemaphore sem) const {
        std::uint64_t v = 0;
        check(fn().vkGetSemaphoreCounterValue(dev_, sem, &v), "vkGetSemaphoreCounterValue");
        return v;
    }
    void wait_idle() {
        std::lock_guard<std::mutex> lk(queue_mu_);
        check(fn().vkQueueWaitIdle(queue_), "vkQueueWaitIdle");
    }
    VkCommandBuffer new_command_buffer(VkCommandPool pool) const {
        auto ai = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
        ai.commandPool = pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        check(fn().vkAllocateCommandBuffers(dev_, &ai, &cb), "vkAllocateCommandBuffers");
        auto bi = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(fn().vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
        full_barrier(cb);  // after everything queued before
        return cb;
    }
    static void end_command_buffer(VkCommandBuffer cb) {
        full_barrier(cb, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
        check(fn().vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    }

    // ---- pipelines ---------------------------------------------------------------------------
    VkPipeline pipeline(shader_id s) {
        std::lock_guard<std::mutex> lk(pipe_mu_);
        VkPipeline& p = pipes_[static_cast<std::size_t>(s)];
        if (p) return p;
        const std::uint32_t* code = nullptr;
        std::size_t bytes = 0;
        const bool w = storage16_;
#define TESSERA_VK_SHADER_(n)                                                  \
    case shader_id::n:                                                         \
        code = w ? spirv::n : spirv::n##_f32only;                              \
        bytes = w ? sizeof spirv::n : sizeof spirv::n##_f32only;               \
        break;
        switch (s) {
            TESSERA_VK_SHADER_(eltwise)
            TESSERA_VK_SHADER_(get_rows)
            TESSERA_VK_SHADER_(set_rows)
            TESSERA_VK_SHADER_(reduce)
            TESSERA_VK_SHADER_(soft_max)
            TESSERA_VK_SHADER_(rope)
            TESSERA_VK_SHADER_(mul_mat_vec)
            TESSERA_VK_SHADER_(mul_mat_tiled)
            TESSERA_VK_SHADER_(mul_mat_id)
            TESSERA_VK_SHADER_(flash_attn)
            TESSERA_VK_SHADER_(quantize)
            default: fail(errc::invalid_argument, name_ + ": no such shader");
        }
#undef TESSERA_VK_SHADER_
        const api& f = fn();
        auto si = make<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
        si.codeSize = bytes;
        si.pCode = code;
        VkShaderModule mod = VK_NULL_HANDLE;
        check(f.vkCreateShaderModule(dev_, &si, nullptr, &mod), "vkCreateShaderModule");
        auto ci = make<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
        ci.stage = make<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
        ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        ci.stage.module = mod;
        ci.stage.pName = "main";
        ci.layout = layout_;
        const VkResult r = f.vkCreateComputePipelines(dev_, VK_NULL_HANDLE, 1, &ci, nullptr, &p);
        f.vkDestroyShaderModule(dev_, mod, nullptr);
        check(r, "vkCreateComputePipelines");
        return p;
    }

    // ---- synchronous transfers (buffers' set/get/memset/copy) --------------------------------
    // Each runs after all work queued before it on the device's queue, and returns when done.
    void write(const memory_block& dst, std::size_t off, const void* p, std::size_t n) {
        if (!n) return;
        if (!staging()) {
            wait_idle();
            std::memcpy(static_cast<std::byte*>(dst.map) + off, p, n);
            return;
        }
        std::lock_guard<std::mutex> lk(xfer_mu_);
        const memory_block& st = staging_block(n);
        std::memcpy(st.map, p, n);
        transfer([&](VkCommandBuffer cb) {
            const VkBufferCopy c{0, off, n};
            fn().vkCmdCopyBuffer(cb, st.buf, dst.buf, 1, &c);
        });
    }
    void read(const memory_block& src, std::size_t off, void* q, std::size_t n) {
        if (!n) return;
        if (!staging()) {
            wait_idle();
            std::memcpy(q, static_cast<const std::byte*>(src.map) + off, n);
            return;
        }
        std::lock_guard<std::mutex> lk(xfer_mu_);
        const memory_block& st = staging_block(n);
        transfer([&](VkCommandBuffer cb) {
            const VkBufferCopy c{off, 0, n};
            fn().vkCmdCopyBuffer(cb, src.buf, st.buf, 1, &c);
        });
        std::memcpy(q, st.map, n);
    }
    void fill(const memory_block& dst, std::size_t off, std::size_t n, std::uint8_t v) {
        if (!n) return;
        if (off % 4 || n % 4) {  // vkCmdFillBuffer writes whole words at word offsets
            const std::vector<std::uint8_t> bytes(n, v);
            write(dst, off, bytes.data(), n);
            return;
        }
        const std::uint32_t word = 0x01010101u * v;
        std::lock_guard<std::mutex> lk(xfer_mu_);
        transfer([&](VkCommandBuffer cb) { fn().vkCmdFillBuffer(cb, dst.buf, off, n, word); });
    }
    void copy(const memory_block& src, std::size_t soff, const memory_block& dst, std::size_t doff, std::size_t n) {
        if (!n) return;
        std::lock_guard<std::mutex> lk(xfer_mu_);
        transfer([&](VkCommandBuffer cb) {
            const VkBufferCopy c{soff, doff, n};
            fn().vkCmdCopyBuffer(cb, src.buf, dst.buf, 1, &c);
        });
    }

private:
    std::uint32_t pick_type(VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const noexcept {
        for (std::uint32_t i = 0; i < mem_.memoryTypeCount; ++i) {
            const VkMemoryPropertyFlags fl = mem_.memoryTypes[i].propertyFlags;
            if ((fl & want) == want && !(fl & avoid)) return i;
        }
        return UINT32_MAX;
    }
    // (xfer_mu_ held) the staging buffer, grown to at least n bytes
    const memory_block& staging_block(std::size_t n) {
        if (xfer_staging_.size < n) {
            wait(xfer_sem_, xfer_value_);
            free(xfer_staging_);
            xfer_staging_ = alloc(std::max<std::size_t>(n, std::size_t{1} << 20), true);
        }
        return xfer_staging_;
    }
    // (xfer_mu_ held) records, submits and waits for one command buffer
    template <class Rec>
    void transfer(Rec&& rec) {
        VkCommandBuffer cb = new_command_buffer(xfer_pool_);
        rec(cb);
        end_command_buffer(cb);
        try {
            submit(cb, xfer_sem_, xfer_value_ + 1);
            ++xfer_value_;
            wait(xfer_sem_, xfer_value_);
        } catch (...) {
            fn().vkFreeCommandBuffers(dev_, xfer_pool_, 1, &cb);
            throw;
        }
        fn().vkFreeCommandBuffers(dev_, xfer_pool_, 1, &cb);
    }

    std::size_t index_;
    std::size_t max_allocation_ = 0;
    VkPhysicalDeviceProperties props_{};
    VkPhysicalDeviceMemoryProperties mem_{};
    std::string name_, description_;
    std::uint32_t qfam_ = 0;
    VkDevice dev_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    std::mutex queue_mu_;
    std::uint32_t dev_type_ = 0, host_type_ = 0;
    bool dev_mappable_ = false;
    bool storage16_ = false;
    std::uint32_t bindings_ = max_bindings;
    std::atomic<bool> force_staging_{false};
    VkDescriptorSetLayout dsl_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    std::mutex pipe_mu_;
    std::array<VkPipeline, static_cast<std::size_t>(shader_id::count)> pipes_{};
    std::mutex xfer_mu_;
    VkCommandPool xfer_pool_ = VK_NULL_HANDLE;
    VkSemaphore xfer_sem_ = VK_NULL_HANDLE;
    std::uint64_t xfer_value_ = 0;
    memory_block xfer_staging_;
};

// The contexts of the usable devices, created on first use; empty without Vulkan. A
// device whose context cannot be created (vkCreateDevice fails) is left out, and the
// reason is appended to status().
struct contexts_state {
    std::vector<context*> list;
    std::string status;
};
inline const contexts_state& contexts() {
    static const contexts_state* s = [] {
        auto* r = new contexts_state;  // never destroyed
        const instance_state& in = instance();
        r->status = in.status;
        for (VkPhysicalDevice p : in.devices) {
            try {
                r->list.push_back(new context(r->list.size(), p));
            } catch (const tessera::error& e) {
                r->status += std::string("; a device was left out: ") + e.what();
            }
        }
        return r;
    }();
    return *s;
}

}  // namespace backend::vulkan
TESSERA_END_NAMESPACE

#endif  // TESSERA_VULKAN
