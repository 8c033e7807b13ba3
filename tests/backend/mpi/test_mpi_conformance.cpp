// The backend conformance suites (tests/backend/conformance.hpp) on the MPI family: MPI1,
// rank 1's CPU seen from rank 0, under mpirun -np >= 2 (test_mpi_main.cpp), and the same
// (but the registry suite, which wants the family's first device) on the last rank's
// device (MPI2 at -np 3).
// (GCC 12's false -Wrestrict in std::string, GCC bug 105651: see test_conformance.cpp.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "../conformance.hpp"

#include "tessera/backend/mpi.hpp"

namespace {

struct mpi_family {
    using buft_model = mpi_buffer_type_model;
    using buffer_model = mpi_buffer;
    using backend_model = mpi_backend;
    using device_model = mpi_device_model;
    using reg_model = mpi_reg_model;
    static any_buffer_type buft() { return mpi_buffer_type(0); }
    static any_device dev() { return mpi_device(0); }
    static any_reg reg() { return mpi_reg(); }
    static any_backend init() { return mpi_init(0, "1"); }
    static constexpr bool host = false;
    static constexpr device_type type = device_type::gpu;
    static constexpr bool reads_host = false, reads_ref = false, own_guid = true;
    static constexpr bool add_op = true, norm_op = true, softmax_op = true;
    static constexpr bool quant_mul_mat = true, repacks = false;  // the remote is a CPU
};
// The last worker's device.
std::size_t last_index() {
    const tessera::backend::mpi::session* s = tessera::backend::mpi::session::current();
    return s && s->size() > 2 ? static_cast<std::size_t>(s->size() - 2) : 0;
}
struct last_buffer_type_model : mpi_buffer_type_model {
    last_buffer_type_model() : mpi_buffer_type_model{last_index()} {}
};
struct mpi_family_last : mpi_family {
    using buft_model = last_buffer_type_model;
    static any_buffer_type buft() { return mpi_buffer_type(last_index()); }
    static any_device dev() { return mpi_device(last_index()); }
    static any_backend init() { return mpi_init(last_index(), "1"); }
};
static_assert(buffer_type<mpi_family::buft_model> && buffer<mpi_family::buffer_model>);
static_assert(tessera::backend::backend<mpi_family::backend_model> && device<mpi_family::device_model>);
static_assert(backend_reg<mpi_family::reg_model> && event<mpi_event>);

}  // namespace

TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_type, mpi_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer, mpi_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_copies_across_buffer_types, mpi_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_backend, mpi_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_quantized_weight, mpi_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_event, mpi_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_device, mpi_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_registry, mpi_family);

TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_type, mpi_family_last);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer, mpi_family_last);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_copies_across_buffer_types, mpi_family_last);
TEST_CASE_TEMPLATE_INVOKE(conformance_backend, mpi_family_last);
TEST_CASE_TEMPLATE_INVOKE(conformance_quantized_weight, mpi_family_last);
TEST_CASE_TEMPLATE_INVOKE(conformance_event, mpi_family_last);
TEST_CASE_TEMPLATE_INVOKE(conformance_device, mpi_family_last);
