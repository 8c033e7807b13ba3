// The registry of backends (ggml_backend_reg_* / ggml_backend_dev_* / init_by_*):
// the registered backend families and their devices, found by index, name (case
// insensitive) or type, and backends initialized from them. The CPU family is always
// registered, and stays last (ggml's order: other backends first, CPU last). The
// process-wide registry also lists the families whose headers add a source of
// themselves (detail::add_family_source): backend/vulkan.hpp does, when tessera is built
// with Vulkan (TESSERA_VULKAN) and the loader finds a device. So a program gets the
// Vulkan family by including backend/vulkan.hpp (or backend/all.hpp) in some unit, and
// units that include only this header do not compile the Vulkan device. A registry()
// made by the user holds only what it is given.
#pragma once

#include <algorithm>
#include <cctype>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend/any.hpp"
#include "tessera/backend/cpu.hpp"
#include "tessera/config.hpp"
#include "tessera/core/error.hpp"

TESSERA_BEGIN_NAMESPACE
namespace backend {

namespace detail {
inline bool iequal(std::string_view a, std::string_view b) noexcept {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}
// Families that join registry::global() when their header is part of the program: each
// source returns its family, or an empty handle when it has no device here.
using family_source = any_reg (*)();
inline std::vector<family_source>& family_sources() {
    static std::vector<family_source> v;
    return v;
}
inline std::mutex& family_sources_mutex() {
    static std::mutex m;
    return m;
}
inline bool add_family_source(family_source f) {
    std::lock_guard<std::mutex> lk(family_sources_mutex());
    family_sources().push_back(f);
    return true;
}
}  // namespace detail

class registry {
public:
    // The process-wide registry.
    static registry& global() {
        static registry r;
        static std::size_t applied = 0;  // family sources asked so far
        std::lock_guard<std::mutex> lk(detail::family_sources_mutex());
        const auto& src = detail::family_sources();
        for (; applied < src.size(); ++applied)  // (Vulkan's first ask opens the loader: 0.1-0.2 s)
            if (const any_reg g = src[applied]()) r.register_backend(g);
        return r;
    }
    registry() { regs_.push_back(cpu_reg()); }

    // Adds a backend family (before CPU); registering one twice is a no-op.
    void register_backend(const any_reg& r) {
        if (!r) fail(errc::invalid_argument, "register_backend: empty registry handle");
        std::lock_guard<std::mutex> lk(mu_);
        if (std::find(regs_.begin(), regs_.end(), r) != regs_.end()) return;
        for (const any_reg& o : regs_)
            if (detail::iequal(o.name(), r.name()))
                fail(errc::invalid_argument, "register_backend: a backend named '" + std::string(r.name()) + "' is already registered");
        regs_.insert(regs_.end() - 1, r);
    }
    // Removes a family (not CPU).
    void unregister_backend(const any_reg& r) {
        std::lock_guard<std::mutex> lk(mu_);
        if (r == cpu_reg()) fail(errc::invalid_argument, "unregister_backend: the CPU backend stays registered");
        regs_.erase(std::remove(regs_.begin(), regs_.end(), r), regs_.end());
    }

    std::size_t reg_count() const {
        std::lock_guard<std::mutex> lk(mu_);
        return regs_.size();
    }
    any_reg reg(std::size_t i) const {
        std::lock_guard<std::mutex> lk(mu_);
        if (i >= regs_.size()) fail(errc::invalid_argument, "registry: backend index " + std::to_string(i) + " out of range");
        return regs_[i];
    }
    any_reg reg_by_name(std::string_view name) const {
        std::lock_guard<std::mutex> lk(mu_);
        for (const any_reg& r : regs_)
            if (detail::iequal(r.name(), name)) return r;
        return {};
    }

    // Devices of every family, in registration order.
    std::vector<any_device> devices() const {
        std::lock_guard<std::mutex> lk(mu_);
        std::vector<any_device> out;
        for (const any_reg& r : regs_)
            for (std::size_t i = 0; i < r.device_count(); ++i) out.push_back(r.device(i));
        return out;
    }
    std::size_t dev_count() const { return devices().size(); }
    any_device dev(std::size_t i) const {
        const auto d = devices();
        if (i >= d.size()) fail(errc::invalid_argument, "registry: device index " + std::to_string(i) + " out of range (" +
                                                            std::to_string(d.size()) + " devices)");
        return d[i];
    }
    any_device dev_by_name(std::string_view name) const {
        for (const any_device& d : devices())
            if (detail::iequal(d.name(), name)) return d;
        return {};
    }
    any_device dev_by_type(device_type t) const {
        for (const any_device& d : devices())
            if (d.type() == t) return d;
        return {};
    }

    any_backend init_by_name(std::string_view name, std::string_view params = {}) const {
        const any_device d = dev_by_name(name);
        if (!d) fail(errc::invalid_argument, "init_by_name: no device named '" + std::string(name) + "' (registered: " + names() + ")");
        return d.init_backend(params);
    }
    any_backend init_by_type(device_type t, std::string_view params = {}) const {
        const any_device d = dev_by_type(t);
        if (!d)
            fail(errc::invalid_argument, "init_by_type: no " + std::string(device_type_name(t)) + " device (registered: " + names() + ")");
        return d.init_backend(params);
    }
    // The device init_best() takes: the first GPU that is not emulated on the CPU (a
    // software driver such as lavapipe is slower than the CPU backend), else the CPU.
    any_device best_device() const {
        for (const any_device& d : devices())
            if (d.type() == device_type::gpu && !d.emulated()) return d;
        const any_device cpu = dev_by_type(device_type::cpu);
        if (!cpu) fail(errc::invalid_argument, "best_device: no CPU device (registered: " + names() + ")");
        return cpu;
    }
    // A stream on best_device().
    any_backend init_best() const { return best_device().init_backend({}); }

    std::string names() const {
        std::string s;
        for (const any_device& d : devices()) s += (s.empty() ? "" : ", ") + std::string(d.name());
        return s;
    }

private:
    mutable std::mutex mu_;
    std::vector<any_reg> regs_;
};

}  // namespace backend
TESSERA_END_NAMESPACE
