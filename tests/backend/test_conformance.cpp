// The conformance suites (conformance.hpp), instantiated for the CPU backend, the
// reference backend and CPU_REPACK, and (through the handles) their type-erased forms.
// GCC 12 reports a false -Wrestrict inside std::string's _M_replace (GCC bug 105651) for
// the quantized-weight case's std::string temporaries at -O3; no string here overlaps.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "conformance.hpp"

namespace {

// One family of models: the model types themselves and their handles.
struct cpu_family {
    using buft_model = cpu_buffer_type_model;
    using buffer_model = cpu_buffer;
    using backend_model = cpu_backend;
    using device_model = cpu_device_model;
    using reg_model = cpu_reg_model;
    static any_buffer_type buft() { return cpu_buffer_type(); }
    static any_device dev() { return cpu_device(); }
    static any_reg reg() { return cpu_reg(); }
    static any_backend init() { return cpu_init(2); }
    static constexpr bool host = true;
    static constexpr device_type type = device_type::cpu;
    static constexpr bool reads_host = true, reads_ref = false, own_guid = true;
    static constexpr bool add_op = true, norm_op = true, softmax_op = true;
    static constexpr bool quant_mul_mat = true, repacks = false;
};
// CPU_REPACK: its own buffer type and ACCEL device; its stream is a CPU stream, it reads
// host buffers, and it takes only mul_mat with repacked weights (test_repack.cpp).
struct repack_family {
    using buft_model = repack_buffer_type_model;
    using buffer_model = repack_buffer;
    using backend_model = cpu_backend;
    using device_model = repack_device_model;
    static any_buffer_type buft() { return repack_buffer_type(); }
    static any_device dev() { return repack_device(); }
    static any_backend init() { return repack_device().init_backend("2"); }
    static constexpr bool host = false;
    static constexpr device_type type = device_type::accel;
    static constexpr bool reads_host = true, reads_ref = false, own_guid = false;
    static constexpr bool add_op = false, norm_op = false, softmax_op = false;
    static constexpr bool quant_mul_mat = true, repacks = true;
};
struct ref_family {
    using buft_model = reference_buffer_type_model;
    using buffer_model = reference_buffer;
    using backend_model = reference_backend;
    using device_model = reference_device_model;
    using reg_model = reference_reg_model;
    static any_buffer_type buft() { return reference_buffer_type(); }
    static any_device dev() { return reference_device(); }
    static any_reg reg() { return reference_reg(); }
    static any_backend init() { return reference_init(); }
    static constexpr bool host = false;
    static constexpr device_type type = device_type::gpu;
    static constexpr bool reads_host = false, reads_ref = true, own_guid = true;
    static constexpr bool add_op = true, norm_op = true, softmax_op = true;
    static constexpr bool quant_mul_mat = false, repacks = false;  // mul_mat takes float weights only
};

static_assert(buffer_type<cpu_family::buft_model> && buffer_type<ref_family::buft_model>);
static_assert(buffer<cpu_family::buffer_model> && buffer<ref_family::buffer_model>);
static_assert(tessera::backend::backend<cpu_family::backend_model> && tessera::backend::backend<ref_family::backend_model>);
static_assert(device<cpu_family::device_model> && device<ref_family::device_model>);
static_assert(backend_reg<cpu_family::reg_model> && backend_reg<ref_family::reg_model>);
// things that are not models
static_assert(!buffer_type<int> && !buffer<cpu_buffer_type_model> && !device<cpu_backend> && !tessera::backend::backend<cpu_device_model>);

// A buffer type with only the required entries: the customization points give the defaults.
struct minimal_buft {
    std::string_view name() const { return "MIN"; }
    any_buffer alloc_buffer(std::size_t n) const { return any_buffer(cpu_buffer(n)); }
    std::size_t alignment() const { return 16; }
};
static_assert(buffer_type<minimal_buft>);

}  // namespace

TEST_CASE("customization points: defaults for the optional entries") {
    minimal_buft m;
    graph::context ctx({true});
    graph::node* t = ctx.new_tensor(type_id::f16, {10, 3, 1, 1}, "t");
    CHECK(get_max_size(m) == SIZE_MAX);
    CHECK_FALSE(is_host(m));
    CHECK(get_alloc_size(m, *t) == 60);
    any_buffer_type h(m);
    CHECK_FALSE(h.device());  // no device() entry
    any_buffer b = h.alloc_buffer(100);
    CHECK(b.type() == h);  // filled in by the handle
    // models with the entries
    CHECK(is_host(cpu_buffer_type_model{}));
    CHECK_FALSE(is_host(reference_buffer_type_model{}));
    CHECK(get_max_size(reference_buffer_type_model{}) == (std::size_t{1} << 40));
    CHECK(get_caps(cpu_device_model{}).buffer_from_host_ptr);
    CHECK(get_caps(reference_device_model{}).events);  // derived from event_new()
    CHECK_FALSE(get_caps(reference_device_model{}).buffer_from_host_ptr);
}


TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_type, cpu_family, ref_family, repack_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer, cpu_family, ref_family, repack_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_buffer_copies_across_buffer_types, cpu_family, ref_family, repack_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_backend, cpu_family, ref_family, repack_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_quantized_weight, cpu_family, ref_family, repack_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_event, cpu_family, ref_family, repack_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_device, cpu_family, ref_family, repack_family);
TEST_CASE_TEMPLATE_INVOKE(conformance_registry, cpu_family, ref_family);
