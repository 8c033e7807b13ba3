// op_traits<op_kind>: what every op is, at compile time, in one table.
//
//   param_type  the one parameter struct a node of this op holds (std::monostate: none);
//               context::new_op / new_view refuse any other (checked_params), and
//               make_params<K>(...) builds it with a static_assert
//   inplace     the op may write its result over a source it reads (same size and layout)
//               when that source dies at this node: the graph planner's can_inplace
//               (ggml's ggml_op_can_inplace list)
//   view        the result is a view of its first source's bytes (no bytes of its own)
//
// op_info(op) gives the same facts at run time, for code that holds an op_kind value.
// Backends describe what they compute in their own tables (backend/cpu/ops.hpp); this
// one is the op catalogue every backend shares.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/graph/op.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// X(op, parameter struct, in place, view)
#define TESSERA_OP_TRAITS(X)                                                        \
    X(none, std::monostate, false, false)                                           \
    X(dup, cpy_params, false, false)                                                \
    X(add, std::monostate, true, false)                                             \
    X(add_id, std::monostate, true, false)                                          \
    X(add1, std::monostate, true, false)                                            \
    X(acc, set_params, false, false)                                                \
    X(sub, std::monostate, true, false)                                             \
    X(mul, std::monostate, true, false)                                             \
    X(div, std::monostate, true, false)                                             \
    X(sqr, std::monostate, true, false)                                             \
    X(sqrt, std::monostate, true, false)                                            \
    X(log, std::monostate, true, false)                                             \
    X(sin, std::monostate, false, false)                                            \
    X(cos, std::monostate, false, false)                                            \
    X(sum, std::monostate, false, false)                                            \
    X(sum_rows, std::monostate, false, false)                                       \
    X(cumsum, std::monostate, false, false)                                         \
    X(mean, std::monostate, false, false)                                           \
    X(argmax, std::monostate, false, false)                                         \
    X(count_equal, std::monostate, false, false)                                    \
    X(repeat, std::monostate, false, false)                                         \
    X(repeat_back, std::monostate, false, false)                                    \
    X(concat, concat_params, false, false)                                          \
    X(silu_back, std::monostate, true, false)                                       \
    X(norm, norm_params, false, false)                                              \
    X(rms_norm, norm_params, true, false)                                           \
    X(rms_norm_back, norm_params, true, false)                                      \
    X(group_norm, group_norm_params, false, false)                                  \
    X(l2_norm, norm_params, false, false)                                           \
    X(mul_mat, mul_mat_params, false, false)                                        \
    X(mul_mat_id, std::monostate, false, false)                                     \
    X(out_prod, std::monostate, false, false)                                       \
    X(scale, scale_params, true, false)                                             \
    X(set, set_params, false, false)                                                \
    X(cpy, cpy_params, false, false)                                                \
    X(cont, cpy_params, false, false)                                               \
    X(reshape, view_params, false, true)                                            \
    X(view, view_params, false, true)                                               \
    X(permute, view_params, false, true)                                            \
    X(transpose, view_params, false, true)                                          \
    X(get_rows, std::monostate, false, false)                                       \
    X(get_rows_back, std::monostate, false, false)                                  \
    X(set_rows, std::monostate, false, false)                                       \
    X(diag, std::monostate, false, false)                                           \
    X(diag_mask_inf, diag_mask_params, true, false)                                 \
    X(diag_mask_zero, diag_mask_params, true, false)                                \
    X(soft_max, soft_max_params, true, false)                                       \
    X(soft_max_back, soft_max_params, true, false)                                  \
    X(rope, rope_params, true, false)                                               \
    X(rope_back, rope_params, true, false)                                          \
    X(clamp, clamp_params, false, false)                                            \
    X(conv_transpose_1d, conv_params, false, false)                                 \
    X(im2col, conv_params, false, false)                                            \
    X(im2col_back, conv_params, false, false)                                       \
    X(im2col_3d, conv3d_params, false, false)                                       \
    X(col2im_1d, conv_params, false, false)                                         \
    X(conv_2d, conv_params, false, false)                                           \
    X(conv_3d, conv3d_params, false, false)                                         \
    X(conv_2d_dw, conv_params, false, false)                                        \
    X(conv_transpose_2d, conv_params, false, false)                                 \
    X(pool_1d, pool_params, false, false)                                           \
    X(pool_2d, pool_params, false, false)                                           \
    X(pool_2d_back, pool_params, false, false)                                      \
    X(upscale, upscale_params, false, false)                                        \
    X(pad, pad_params, false, false)                                                \
    X(pad_reflect_1d, pad_params, false, false)                                     \
    X(roll, roll_params, false, false)                                              \
    X(arange, arange_params, false, false)                                          \
    X(timestep_embedding, timestep_params, false, false)                            \
    X(argsort, argsort_params, false, false)                                        \
    X(top_k, top_k_params, false, false)                                            \
    X(leaky_relu, leaky_relu_params, false, false)                                  \
    X(tri, tri_params, false, false)                                                \
    X(fill, fill_params, false, false)                                              \
    X(flash_attn_ext, flash_attn_params, false, false)                              \
    X(flash_attn_back, flash_attn_params, false, false)                             \
    X(ssm_conv, std::monostate, false, false)                                       \
    X(ssm_scan, std::monostate, false, false)                                       \
    X(win_part, win_params, false, false)                                           \
    X(win_unpart, win_params, false, false)                                         \
    X(get_rel_pos, std::monostate, false, false)                                    \
    X(add_rel_pos, std::monostate, false, false)                                    \
    X(rwkv_wkv6, std::monostate, false, false)                                      \
    X(gated_linear_attn, scale_params, false, false)                                \
    X(rwkv_wkv7, std::monostate, false, false)                                      \
    X(solve_tri, solve_tri_params, false, false)                                    \
    X(gated_delta_net, gated_delta_net_params, false, false)                        \
    X(lightning_indexer, std::monostate, false, false)                              \
    X(dsv4_hc_comb, hc_comb_params, false, false)                                   \
    X(dsv4_hc_pre, std::monostate, false, false)                                    \
    X(dsv4_hc_post, std::monostate, false, false)                                   \
    X(unary, unary_params, true, false)                                             \
    X(map_custom1, custom_params, false, false)                                     \
    X(map_custom2, custom_params, false, false)                                     \
    X(map_custom3, custom_params, false, false)                                     \
    X(custom, custom_params, false, false)                                          \
    X(cross_entropy_loss, std::monostate, false, false)                             \
    X(cross_entropy_loss_back, std::monostate, false, false)                        \
    X(opt_step_adamw, std::monostate, false, false)                                 \
    X(opt_step_sgd, std::monostate, false, false)                                   \
    X(glu, glu_params, false, false)

template <op_kind K>
struct op_traits;

#define TESSERA_OP_TRAIT_(name, P, in_place, is_view)      \
    template <>                                           \
    struct op_traits<op_kind::name> {                     \
        using param_type = P;                             \
        static constexpr bool inplace = in_place;         \
        static constexpr bool view = is_view;             \
    };
TESSERA_OP_TRAITS(TESSERA_OP_TRAIT_)
#undef TESSERA_OP_TRAIT_

template <op_kind K>
using op_param_t = typename op_traits<K>::param_type;

// The run-time face of op_traits.
struct op_info_t {
    std::size_t param_index;  // index of param_type in op_params
    bool inplace;
    bool view;
};

inline constexpr std::array<op_info_t, op_count> op_infos = {{
#define TESSERA_OP_INFO_(name, P, in_place, is_view) \
    {op_params::index_of<P>, in_place, is_view},
    TESSERA_OP_TRAITS(TESSERA_OP_INFO_)
#undef TESSERA_OP_INFO_
}};

// The table lists every op of op_kind, in op_kind's order, each with a parameter type
// op_params can hold.
constexpr bool op_table_complete() {
    std::size_t i = 0;
#define TESSERA_OP_ORDER_(name, P, in_place, is_view) \
    if (static_cast<std::size_t>(op_kind::name) != i++) return false;
    TESSERA_OP_TRAITS(TESSERA_OP_ORDER_)
#undef TESSERA_OP_ORDER_
    if (i != op_count) return false;
    for (const op_info_t& o : op_infos)
        if (o.param_index >= op_params::count) return false;
    return true;
}
static_assert(op_table_complete(), "TESSERA_OP_TRAITS must list every op_kind in order with an op_params type");

constexpr const op_info_t& op_info(op_kind k) noexcept { return op_infos[static_cast<std::size_t>(k)]; }
constexpr bool op_can_inplace(op_kind k) noexcept { return op_info(k).inplace; }
constexpr bool op_is_view(op_kind k) noexcept { return op_info(k).view; }

// The parameters of an op of kind K, built in place: the one type the op takes.
template <op_kind K, class... Args>
op_params make_params(Args&&... args) {
    using P = op_param_t<K>;
    static_assert(std::is_constructible_v<P, Args...> || std::is_aggregate_v<P>, "these are not op K's parameters");
    return op_params(std::in_place_type<P>, P{std::forward<Args>(args)...});
}

// Refuses parameters of another op's type (every node is made through this check).
inline void check_params(op_kind k, const op_params& p) {
    if (p.index() != op_info(k).param_index)
        fail(errc::invalid_argument, "op " + std::string(op_name(k)) + ": parameters of the wrong type (index " +
                                         std::to_string(p.index()) + ", the op takes index " +
                                         std::to_string(op_info(k).param_index) + ")");
}

}  // namespace graph
TESSERA_END_NAMESPACE
