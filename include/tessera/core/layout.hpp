// layout: the shape and byte strides of a tensor of up to 4 dims, as ggml keeps them
// (ne = elements per dim, nb = bytes per step, dim 0 fastest), with the predicates
// and view transforms (permute, transpose, reshape, sub-views) ggml offers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"

TESSERA_BEGIN_NAMESPACE

inline constexpr int max_dims = 4;

struct layout {
    type_id type = type_id::f32;
    std::array<std::int64_t, max_dims> ne{1, 1, 1, 1};
    std::array<std::size_t, max_dims> nb{};

    // A packed layout of a type; ne0 must be a whole number of blocks.
    static constexpr layout contiguous(type_id t, std::array<std::int64_t, max_dims> ne) {
        layout l;
        l.type = t;
        l.ne = ne;
        for (int d = 0; d < max_dims; ++d)
            if (ne[d] < 0) fail_cat(errc::shape_mismatch, "negative extent ", ne[d], " in dim ", d);
        l.nb[0] = static_cast<std::size_t>(type_size(t));
        l.nb[1] = static_cast<std::size_t>(row_size(t, ne[0]));
        for (int d = 2; d < max_dims; ++d) l.nb[d] = l.nb[d - 1] * static_cast<std::size_t>(ne[d - 1]);
        return l;
    }

    constexpr std::int64_t nelements() const noexcept { return ne[0] * ne[1] * ne[2] * ne[3]; }
    constexpr std::int64_t nrows() const noexcept { return ne[1] * ne[2] * ne[3]; }
    constexpr std::size_t row_bytes() const { return static_cast<std::size_t>(row_size(type, ne[0])); }

    // Bytes spanned from the first to one past the last element (ggml_nbytes).
    constexpr std::size_t nbytes() const {
        if (nelements() == 0) return 0;
        const auto blck = block_size(type);
        std::size_t n = 0;
        if (blck == 1) {
            n = static_cast<std::size_t>(type_size(type));
            for (int d = 0; d < max_dims; ++d) n += static_cast<std::size_t>(ne[d] - 1) * nb[d];
        } else {
            n = static_cast<std::size_t>(ne[0] / blck) * nb[0];
            for (int d = 1; d < max_dims; ++d) n += static_cast<std::size_t>(ne[d] - 1) * nb[d];
        }
        return n;
    }

    // Number of dims up to the last one with extent > 1 (at least 1).
    constexpr int n_dims() const noexcept {
        for (int d = max_dims - 1; d >= 1; --d)
            if (ne[d] > 1) return d + 1;
        return 1;
    }

    // Packed from dim 0 up (ggml_is_contiguous).
    constexpr bool is_contiguous() const { return is_contiguous_from(0); }
    // Dims 0..k-1 packed, the rest arbitrary (ggml_is_contiguous_n semantics for rows).
    constexpr bool is_contiguous_rows() const noexcept { return nb[0] == static_cast<std::size_t>(type_size(type)); }
    constexpr bool is_transposed() const noexcept { return nb[0] > nb[1]; }
    constexpr bool is_permuted() const noexcept { return nb[0] > nb[1] || nb[1] > nb[2] || nb[2] > nb[3]; }

    constexpr bool same_shape(const layout& o) const noexcept { return ne == o.ne; }
    // Whether `b` can be broadcast over this layout (every extent divisible; ggml_can_repeat).
    constexpr bool can_repeat(const layout& b) const noexcept {
        if (b.nelements() == 0) return nelements() == 0;
        for (int d = 0; d < max_dims; ++d)
            if (b.ne[d] == 0 || ne[d] % b.ne[d] != 0) return false;
        return true;
    }

    // Old dim d moves to position axes[d] (ggml_permute).
    constexpr layout permute(std::array<int, max_dims> axes) const {
        std::array<bool, max_dims> seen{};
        for (int d = 0; d < max_dims; ++d) {
            if (axes[d] < 0 || axes[d] >= max_dims || seen[static_cast<std::size_t>(axes[d])])
                fail(errc::invalid_argument, "permute: axes must be a permutation of 0..3");
            seen[static_cast<std::size_t>(axes[d])] = true;
        }
        layout r = *this;
        for (int d = 0; d < max_dims; ++d) {
            r.ne[static_cast<std::size_t>(axes[d])] = ne[d];
            r.nb[static_cast<std::size_t>(axes[d])] = nb[d];
        }
        return r;
    }
    constexpr layout transpose() const { return permute({1, 0, 2, 3}); }

    // Same elements, new extents; needs a contiguous layout (ggml_reshape).
    constexpr layout reshape(std::array<std::int64_t, max_dims> new_ne) const {
        if (!is_contiguous()) fail(errc::shape_mismatch, "reshape: the tensor is not contiguous (call cont first)");
        const layout r = contiguous(type, new_ne);
        if (r.nelements() != nelements())
            fail_cat(errc::shape_mismatch, "reshape: ", to_string(), " has ", nelements(), " elements, the new shape ",
                     r.to_string(), " has ", r.nelements());
        return r;
    }

    // A sub-view with its own extents and strides at a byte offset (ggml_view_4d);
    // checks that it stays inside the bytes of this layout.
    constexpr layout view(std::array<std::int64_t, max_dims> new_ne, std::array<std::size_t, 3> strides,
                          std::size_t offset) const {
        layout r;
        r.type = type;
        r.ne = new_ne;
        r.nb = {static_cast<std::size_t>(type_size(type)), strides[0], strides[1], strides[2]};
        if (offset + r.nbytes() > nbytes())
            fail_cat(errc::shape_mismatch, "view: ", r.to_string(), " at offset ", offset, " runs past the ", nbytes(),
                     " bytes of ", to_string());
        return r;
    }

    // Byte offset of element (i0, i1, i2, i3); i0 in elements (a multiple of the block size).
    constexpr std::size_t offset_of(std::int64_t i0, std::int64_t i1 = 0, std::int64_t i2 = 0, std::int64_t i3 = 0) const {
        return static_cast<std::size_t>(i0 / block_size(type)) * nb[0] + static_cast<std::size_t>(i1) * nb[1] +
               static_cast<std::size_t>(i2) * nb[2] + static_cast<std::size_t>(i3) * nb[3];
    }

    // "f32 [4096, 32, 1, 1]"
    std::string to_string() const {
        std::string s(is_valid_type_id(static_cast<std::int32_t>(type)) ? type_name(type) : "?");
        s += " [";
        for (int d = 0; d < max_dims; ++d) s += std::to_string(ne[d]) + (d + 1 < max_dims ? ", " : "]");
        return s;
    }

private:
    constexpr bool is_contiguous_from(int) const {
        std::size_t expect = static_cast<std::size_t>(type_size(type));
        if (nb[0] != expect) return false;
        expect = static_cast<std::size_t>(ne[0] / block_size(type)) * expect;
        for (int d = 1; d < max_dims; ++d) {
            if (ne[d] != 1 && nb[d] != expect) return false;
            expect *= static_cast<std::size_t>(ne[d]);
        }
        return true;
    }
};

static_assert(layout::contiguous(type_id::f32, {4, 3, 2, 1}).nb[2] == 48);
static_assert(layout::contiguous(type_id::q4_0, {64, 2, 1, 1}).nbytes() == 72);
static_assert(layout::contiguous(type_id::f32, {4, 3, 1, 1}).transpose().is_transposed());

TESSERA_END_NAMESPACE
