// tensor_view<T, Rank>: a typed, non-owning view over tensor memory with byte
// strides, in ggml's convention (dim 0 fastest). T is float, f16, bf16, an integer
// type, or a quantization block type, in which case dim 0 counts elements and a row
// is a run of blocks. Extents may be static (basic_tensor_view<T, extents<64, dynamic_extent>>)
// or dynamic; views, permute, transpose and reshape return new views and never copy.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/element.hpp"
#include "tessera/core/extents.hpp"
#include "tessera/core/f16.hpp"
#include "tessera/core/layout.hpp"
#include "tessera/core/type_id.hpp"

TESSERA_BEGIN_NAMESPACE

template <tensor_element T, class Extents>
class basic_tensor_view {
public:
    using element_type = T;
    using extents_type = Extents;
    using byte_pointer = std::conditional_t<std::is_const_v<T>, const std::byte*, std::byte*>;
    static constexpr std::size_t rank = Extents::rank();
    static_assert(rank >= 1 && rank <= max_dims, "tensor_view: rank must be 1..4");
    static constexpr type_id type = element_traits<std::remove_const_t<T>>::id;
    static constexpr std::int64_t per_item = element_traits<std::remove_const_t<T>>::per_item;

    constexpr basic_tensor_view() = default;

    // A packed view over data (dim 0 fastest).
    constexpr basic_tensor_view(T* data, Extents ext) : data_(reinterpret_cast<byte_pointer>(data)), ext_(ext) {
        check_blocks();
        std::size_t s = sizeof(T);
        for (std::size_t d = 0; d < rank; ++d) {
            nb_[d] = s;
            s *= static_cast<std::size_t>(d == 0 ? ext_.extent(0) / per_item : ext_.extent(d));
        }
    }

    // A strided view: byte strides per dim (nb[0] must be sizeof(T)).
    constexpr basic_tensor_view(byte_pointer data, Extents ext, std::array<std::size_t, rank> nb)
        : data_(data), ext_(ext), nb_(nb) {
        check_blocks();
        if (nb_[0] != sizeof(T)) fail(errc::shape_mismatch, "tensor_view: dim 0 must be packed (nb[0] == sizeof(T))");
    }

    constexpr T* data() const noexcept { return reinterpret_cast<T*>(data_); }
    constexpr byte_pointer bytes() const noexcept { return data_; }
    constexpr const Extents& extents() const noexcept { return ext_; }
    constexpr std::int64_t extent(std::size_t d) const noexcept { return ext_.extent(d); }
    constexpr std::size_t stride_bytes(std::size_t d) const noexcept { return nb_[d]; }
    constexpr std::int64_t size() const noexcept { return ext_.size(); }

    // Element (i0, i1, ...) of a plain-element view.
    template <class... I>
        requires(sizeof...(I) == rank && per_item == 1)
    constexpr T& operator()(I... idx) const noexcept {
        const std::array<std::int64_t, rank> i{static_cast<std::int64_t>(idx)...};
        std::size_t off = 0;
        for (std::size_t d = 0; d < rank; ++d) off += static_cast<std::size_t>(i[d]) * nb_[d];
        return *reinterpret_cast<T*>(data_ + off);
    }

    // The first item (element or block) of row (i1, i2, i3).
    template <class... I>
        requires(sizeof...(I) == rank - 1)
    constexpr T* row(I... idx) const noexcept {
        const std::array<std::int64_t, rank - 1> i{static_cast<std::int64_t>(idx)...};
        std::size_t off = 0;
        for (std::size_t d = 1; d < rank; ++d) off += static_cast<std::size_t>(i[d - 1]) * nb_[d];
        return reinterpret_cast<T*>(data_ + off);
    }

    constexpr bool is_contiguous() const noexcept {
        std::size_t expect = sizeof(T);
        for (std::size_t d = 0; d < rank; ++d) {
            if (ext_.extent(d) != 1 && nb_[d] != expect) return false;
            expect *= static_cast<std::size_t>(d == 0 ? ext_.extent(0) / per_item : ext_.extent(d));
        }
        return true;
    }

    // The ggml-style ne/nb description of this view.
    constexpr layout to_layout() const noexcept {
        layout l;
        l.type = type;
        for (std::size_t d = 0; d < rank; ++d) l.ne[d] = ext_.extent(d), l.nb[d] = nb_[d];
        for (std::size_t d = rank; d < max_dims; ++d) l.ne[d] = 1, l.nb[d] = nb_[rank - 1] * static_cast<std::size_t>(rank == 1 ? ext_.extent(0) / per_item : ext_.extent(rank - 1));
        return l;
    }

    // Old dim d goes to position axes[d]; dim 0 must stay packed for block types.
    constexpr basic_tensor_view<T, dextents<rank>> permute(std::array<int, rank> axes) const {
        std::array<std::int64_t, rank> ne{};
        std::array<std::size_t, rank> nb{};
        std::array<bool, rank> seen{};
        for (std::size_t d = 0; d < rank; ++d) {
            const int a = axes[d];
            if (a < 0 || static_cast<std::size_t>(a) >= rank || seen[static_cast<std::size_t>(a)])
                fail(errc::invalid_argument, "permute: axes must be a permutation of 0.." + std::to_string(rank - 1));
            seen[static_cast<std::size_t>(a)] = true;
            ne[static_cast<std::size_t>(a)] = ext_.extent(d);
            nb[static_cast<std::size_t>(a)] = nb_[d];
        }
        basic_tensor_view<T, dextents<rank>> r;
        r.unchecked_init(data_, dextents<rank>(ne), nb);
        return r;
    }

    // Swaps dims 0 and 1. The result's dim 0 is strided: use it through to_layout()
    // or element access, as ggml does with transposed views.
    constexpr basic_tensor_view<T, dextents<rank>> transpose() const
        requires(rank >= 2 && per_item == 1)
    {
        std::array<int, rank> axes{};
        for (std::size_t d = 0; d < rank; ++d) axes[d] = static_cast<int>(d);
        axes[0] = 1, axes[1] = 0;
        return permute(axes);
    }

    // Same memory, new extents; the view must be contiguous and keep the element count.
    template <class E2>
    constexpr basic_tensor_view<T, E2> reshape(E2 ext) const {
        if (!is_contiguous()) fail(errc::shape_mismatch, "reshape: the view is not contiguous");
        if (ext.size() != size())
            fail(errc::shape_mismatch, "reshape: " + std::to_string(size()) + " elements into a shape of " +
                                           std::to_string(ext.size()));
        return basic_tensor_view<T, E2>(data(), ext);
    }

    // The sub-range [begin, end) of dim d, same strides.
    constexpr basic_tensor_view<T, dextents<rank>> slice(std::size_t d, std::int64_t begin, std::int64_t end) const {
        if (d >= rank || begin < 0 || end < begin || end > ext_.extent(d))
            fail(errc::shape_mismatch, "slice: [" + std::to_string(begin) + ", " + std::to_string(end) +
                                           ") is outside dim " + std::to_string(d));
        if (d == 0 && (begin % per_item || end % per_item))
            fail(errc::shape_mismatch, "slice: dim 0 of a block type must be cut at block boundaries");
        std::array<std::int64_t, rank> ne{};
        for (std::size_t k = 0; k < rank; ++k) ne[k] = ext_.extent(k);
        ne[d] = end - begin;
        basic_tensor_view<T, dextents<rank>> r;
        r.unchecked_init(data_ + static_cast<std::size_t>(d == 0 ? begin / per_item : begin) * nb_[d],
                         dextents<rank>(ne), nb_);
        return r;
    }

    // (internal) set fields without the packed-dim-0 check; used by permute/slice.
    constexpr void unchecked_init(byte_pointer p, Extents e, std::array<std::size_t, rank> nb) noexcept {
        data_ = p, ext_ = e, nb_ = nb;
    }

private:
    constexpr void check_blocks() const {
        for (std::size_t d = 0; d < rank; ++d)
            if (ext_.extent(d) < 0) fail(errc::shape_mismatch, "tensor_view: negative extent in dim " + std::to_string(d));
        if (ext_.extent(0) % per_item != 0)
            fail(errc::shape_mismatch, "tensor_view: dim 0 (" + std::to_string(ext_.extent(0)) +
                                           ") is not a multiple of the block size " + std::to_string(per_item));
    }

    byte_pointer data_ = nullptr;
    [[no_unique_address]] Extents ext_{};
    std::array<std::size_t, rank> nb_{};
};

template <tensor_element T, std::size_t Rank>
using tensor_view = basic_tensor_view<T, dextents<Rank>>;

TESSERA_END_NAMESPACE
