// The registry: enumeration, lookups by name and type, init_by_*, registration order.
#include <doctest/doctest.h>

#include "tessera/backend/all.hpp"

using namespace tessera;
using namespace tessera::backend;

TEST_CASE("registry: CPU is always there, last") {
    registry r;  // a fresh one
    REQUIRE(r.reg_count() == 1);
    CHECK(r.reg(0) == cpu_reg());
    CHECK(r.dev_count() == 2);  // CPU and its ACCEL device CPU_REPACK
    CHECK(r.dev(0) == cpu_device());
    CHECK(r.dev(1) == repack_device());
    CHECK(r.dev_by_type(device_type::accel) == repack_device());
    CHECK(r.init_by_type(device_type::accel).device() == repack_device());
    CHECK(cpu_device().extra_buffer_types() == std::vector<any_buffer_type>{repack_buffer_type()});
    CHECK(r.dev_by_name("cpu") == cpu_device());  // case insensitive
    CHECK(r.dev_by_type(device_type::cpu) == cpu_device());
    CHECK_FALSE(r.dev_by_type(device_type::gpu));
    CHECK(is_cpu(r.init_best()));
    CHECK(is_cpu(r.init_by_name("CPU", "n_threads=2")));
    CHECK_THROWS_WITH_AS(r.init_by_name("CUDA"), doctest::Contains("no device named 'CUDA' (registered: CPU, CPU_REPACK)"), tessera::error);
    CHECK_THROWS_WITH_AS(r.init_by_type(device_type::gpu), doctest::Contains("no GPU device"), tessera::error);
    CHECK_THROWS_AS(r.reg(5), tessera::error);
    CHECK_THROWS_AS(r.dev(5), tessera::error);
    CHECK_THROWS_AS(r.unregister_backend(cpu_reg()), tessera::error);
}

TEST_CASE("registry: registering another backend") {
    registry r;
    r.register_backend(reference_reg());
    r.register_backend(reference_reg());  // twice: no-op
    REQUIRE(r.reg_count() == 2);
    CHECK(r.reg(0) == reference_reg());
    CHECK(r.reg(1) == cpu_reg());  // CPU stays last
    CHECK(r.reg_by_name("ref") == reference_reg());
    CHECK(r.dev_count() == 3);
    CHECK(r.dev_by_name("REF") == reference_device());
    // init_best prefers a GPU-type device
    CHECK_FALSE(reference_device().emulated());
    CHECK(r.best_device() == reference_device());
    CHECK(r.init_best().name() == "REF");
    CHECK(r.init_by_type(device_type::cpu).name() == "CPU");
    CHECK(r.names() == "REF, CPU, CPU_REPACK");
    r.unregister_backend(reference_reg());
    CHECK(r.reg_count() == 1);
    // the global registry is one object
    CHECK(&registry::global() == &registry::global());
    CHECK(registry::global().reg_by_name("CPU") == cpu_reg());
}
