// extents<E...>: the extents of a tensor, each either known at compile time or
// dynamic_extent; only the dynamic ones take storage (the std::extents idea, with
// tessera's signed 64-bit extents and dim 0 as the fastest-varying dim).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tessera/config.hpp"

TESSERA_BEGIN_NAMESPACE

inline constexpr std::int64_t dynamic_extent = -1;

template <std::int64_t... E>
class extents {
public:
    static constexpr std::size_t rank() noexcept { return sizeof...(E); }
    static constexpr std::size_t rank_dynamic() noexcept { return ((E == dynamic_extent ? 1u : 0u) + ... + 0u); }
    static constexpr std::int64_t static_extent(std::size_t r) noexcept { return statics_[r]; }

    constexpr extents() noexcept = default;  // dynamic extents start at 0

    // One value per dynamic extent, in order.
    template <class... I>
        requires(sizeof...(I) == rank_dynamic() && rank_dynamic() > 0 && (std::is_convertible_v<I, std::int64_t> && ...))
    constexpr explicit extents(I... dyn) noexcept : dyn_{static_cast<std::int64_t>(dyn)...} {}

    constexpr explicit extents(const std::array<std::int64_t, rank_dynamic()>& dyn) noexcept
        requires(rank_dynamic() > 0)
        : dyn_(dyn) {}

    constexpr std::int64_t extent(std::size_t r) const noexcept {
        if (statics_[r] != dynamic_extent) return statics_[r];
        return dyn_[dynamic_index(r)];
    }

    constexpr std::int64_t size() const noexcept {
        std::int64_t n = 1;
        for (std::size_t r = 0; r < rank(); ++r) n *= extent(r);
        return n;
    }

    template <std::int64_t... F>
    friend constexpr bool operator==(const extents& a, const extents<F...>& b) noexcept {
        if constexpr (sizeof...(F) != sizeof...(E)) {
            return false;
        } else {
            for (std::size_t r = 0; r < sizeof...(E); ++r)
                if (a.extent(r) != b.extent(r)) return false;
            return true;
        }
    }

private:
    static constexpr std::array<std::int64_t, sizeof...(E)> statics_{E...};
    static constexpr std::size_t dynamic_index(std::size_t r) noexcept {
        std::size_t k = 0;
        for (std::size_t i = 0; i < r; ++i) k += statics_[i] == dynamic_extent ? 1u : 0u;
        return k;
    }
    struct no_storage {
        constexpr std::int64_t operator[](std::size_t) const noexcept { return 0; }
    };
    using storage = std::conditional_t<rank_dynamic() == 0, no_storage, std::array<std::int64_t, rank_dynamic()>>;
    [[no_unique_address]] storage dyn_{};
};

namespace detail {
template <class Seq>
struct dextents_of;
template <std::size_t... I>
struct dextents_of<std::index_sequence<I...>> {
    using type = extents<((void)I, dynamic_extent)...>;
};
}  // namespace detail

// All-dynamic extents of rank R.
template <std::size_t R>
using dextents = typename detail::dextents_of<std::make_index_sequence<R>>::type;

static_assert(std::is_empty_v<extents<4096, 32>>);
static_assert(sizeof(extents<4096, dynamic_extent>) == sizeof(std::int64_t));
static_assert(extents<4096, dynamic_extent>(7).extent(1) == 7);

TESSERA_END_NAMESPACE
