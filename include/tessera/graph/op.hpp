// The op catalogue: every forward op of ggml as an enum, the unary and gated
// (GLU) sub-ops, and each op's parameters as a typed struct (ggml keeps them in an
// untyped int32[16]; here a node holds one of these structs in an op_params).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>  // std::monostate

#include "tessera/config.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/type_id.hpp"

TESSERA_BEGIN_NAMESPACE
namespace graph {

// ggml's op list (GGML_OP_*), in ggml's order. Which of them the CPU runs is
// `backend::cpu::implements(op)` (the op table of backend/cpu/ops.hpp) and docs/ops.md.
#define TESSERA_FOR_EACH_OP(X)                                                                    \
    X(none) X(dup) X(add) X(add_id) X(add1) X(acc) X(sub) X(mul) X(div) X(sqr) X(sqrt) X(log)     \
    X(sin) X(cos) X(sum) X(sum_rows) X(cumsum) X(mean) X(argmax) X(count_equal) X(repeat)          \
    X(repeat_back) X(concat) X(silu_back) X(norm) X(rms_norm) X(rms_norm_back) X(group_norm)       \
    X(l2_norm) X(mul_mat) X(mul_mat_id) X(out_prod) X(scale) X(set) X(cpy) X(cont) X(reshape)      \
    X(view) X(permute) X(transpose) X(get_rows) X(get_rows_back) X(set_rows) X(diag)               \
    X(diag_mask_inf) X(diag_mask_zero) X(soft_max) X(soft_max_back) X(rope) X(rope_back) X(clamp)  \
    X(conv_transpose_1d) X(im2col) X(im2col_back) X(im2col_3d) X(col2im_1d) X(conv_2d) X(conv_3d) \
    X(conv_2d_dw) X(conv_transpose_2d) X(pool_1d) X(pool_2d) X(pool_2d_back) X(upscale) X(pad)     \
    X(pad_reflect_1d) X(roll) X(arange) X(timestep_embedding) X(argsort) X(top_k) X(leaky_relu)    \
    X(tri) X(fill) X(flash_attn_ext) X(flash_attn_back) X(ssm_conv) X(ssm_scan) X(win_part)        \
    X(win_unpart) X(get_rel_pos) X(add_rel_pos) X(rwkv_wkv6) X(gated_linear_attn) X(rwkv_wkv7)     \
    X(solve_tri) X(gated_delta_net) X(lightning_indexer) X(dsv4_hc_comb) X(dsv4_hc_pre)            \
    X(dsv4_hc_post) X(unary) X(map_custom1) X(map_custom2) X(map_custom3) X(custom)                \
    X(cross_entropy_loss) X(cross_entropy_loss_back) X(opt_step_adamw) X(opt_step_sgd) X(glu)

enum class op_kind : std::uint8_t {
#define TESSERA_OP_ENUM_(n) n,
    TESSERA_FOR_EACH_OP(TESSERA_OP_ENUM_)
#undef TESSERA_OP_ENUM_
};

inline constexpr std::array<std::string_view, 0
#define TESSERA_OP_COUNT_(n) +1
    TESSERA_FOR_EACH_OP(TESSERA_OP_COUNT_)
#undef TESSERA_OP_COUNT_
    > op_names = {
#define TESSERA_OP_NAME_(n) #n,
        TESSERA_FOR_EACH_OP(TESSERA_OP_NAME_)
#undef TESSERA_OP_NAME_
};
inline constexpr std::size_t op_count = op_names.size();
static_assert(op_count == 101, "op_kind must list ggml's ops (GGML_OP_COUNT is 101 at the pinned commit)");

constexpr std::string_view op_name(op_kind k) noexcept { return op_names[static_cast<std::size_t>(k)]; }

// ggml's unary ops (GGML_UNARY_OP_*), in ggml's order.
#define TESSERA_FOR_EACH_UNARY(X)                                                                  \
    X(abs) X(sgn) X(neg) X(step) X(tanh) X(elu) X(relu) X(sigmoid) X(gelu) X(gelu_quick) X(silu)   \
    X(hardswish) X(hardsigmoid) X(exp) X(expm1) X(softplus) X(gelu_erf) X(xielu) X(floor) X(ceil)  \
    X(round) X(trunc)

enum class unary_op : std::uint8_t {
#define TESSERA_UNARY_ENUM_(n) n,
    TESSERA_FOR_EACH_UNARY(TESSERA_UNARY_ENUM_)
#undef TESSERA_UNARY_ENUM_
};
inline constexpr std::array<std::string_view, 22> unary_names = {
#define TESSERA_UNARY_NAME_(n) #n,
    TESSERA_FOR_EACH_UNARY(TESSERA_UNARY_NAME_)
#undef TESSERA_UNARY_NAME_
};
constexpr std::string_view unary_name(unary_op u) noexcept { return unary_names[static_cast<std::size_t>(u)]; }

// ggml's gated linear units (GGML_GLU_OP_*), in ggml's order.
enum class glu_op : std::uint8_t { reglu, geglu, swiglu, swiglu_oai, geglu_erf, geglu_quick };
inline constexpr std::array<std::string_view, 6> glu_names = {"reglu",      "geglu",     "swiglu",
                                                              "swiglu_oai", "geglu_erf", "geglu_quick"};
constexpr std::string_view glu_name(glu_op g) noexcept { return glu_names[static_cast<std::size_t>(g)]; }

// ---- op parameters ---------------------------------------------------------------------
// One struct per op that has parameters. Field names follow ggml's documentation.

struct unary_params {
    unary_op op;
    // xielu only, stored as ggml stores them (builder xielu(a, alpha_n, alpha_p, beta, eps)):
    // alpha_n = beta + softplus(alpha_n'), alpha_p = softplus(alpha_p').
    float alpha_n = 0.0f, alpha_p = 0.0f, beta = 0.0f, eps = 0.0f;
};
struct glu_params {
    glu_op op;
    bool swapped = false;  // single-tensor form: activate the second half instead of the first
    float alpha = 1.702f;  // swiglu_oai
    float limit = 7.0f;    // swiglu_oai
};
struct scale_params {
    float s = 1.0f;
    float b = 0.0f;  // x*s + b
};
struct clamp_params {
    float min, max;
};
struct leaky_relu_params {
    float slope;
};
struct fill_params {
    float value;
};
struct norm_params {
    float eps;
};
struct group_norm_params {
    int n_groups;
    float eps;
};
struct view_params {  // view, reshape, permute, transpose: where in the root the view starts
    std::size_t offset = 0;
    std::array<int, 4> axes{0, 1, 2, 3};  // permute only
};
struct concat_params {
    int dim;
};
struct diag_mask_params {
    int n_past;
};
struct soft_max_params {
    float scale = 1.0f;
    float max_bias = 0.0f;  // ALiBi when > 0 (needs a mask)
};
// rope's modes, with ggml's numbers (GGML_ROPE_TYPE_*): normal rotates adjacent pairs
// (2i, 2i+1), neox pairs (i, i + n_dims/2); mrope (bit 8) takes a position stream per
// section, vision and imrope are its variants (see rope() in graph/ops/attention.hpp).
enum class rope_mode : int { normal = 0, neox = 2, mrope = 8, vision = 24, imrope = 40 };
// The same numbers as ints, for code that tests the bits of rope_params::mode.
inline constexpr int rope_mode_normal = static_cast<int>(rope_mode::normal);
inline constexpr int rope_mode_neox = static_cast<int>(rope_mode::neox);
inline constexpr int rope_mode_mrope = static_cast<int>(rope_mode::mrope);
inline constexpr int rope_mode_vision = static_cast<int>(rope_mode::vision);
inline constexpr int rope_mode_imrope = static_cast<int>(rope_mode::imrope);
// rope_params::mode: set from a rope_mode (p.mode = rope_mode::neox), read as ggml's int
// (its bits: p.mode & rope_mode_mrope) or compared with a rope_mode. It is not settable
// from a bare int; rope_mode{n} names a number that is not one of the modes.
struct rope_mode_bits {
    int bits = rope_mode_normal;
    constexpr rope_mode_bits() noexcept = default;
    constexpr rope_mode_bits(rope_mode m) noexcept : bits(static_cast<int>(m)) {}  // NOLINT: implicit by design
    constexpr operator int() const noexcept { return bits; }                        // NOLINT: implicit by design
    constexpr rope_mode get() const noexcept { return static_cast<rope_mode>(bits); }
    friend constexpr bool operator==(rope_mode_bits a, rope_mode b) noexcept { return a.bits == static_cast<int>(b); }
};
struct rope_params {
    int n_dims;
    rope_mode_bits mode = rope_mode::normal;
    int n_ctx_orig = 0;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    std::array<int, 4> sections{};  // mrope / vision
};
// The precision an op asks of a backend (ggml's GGML_PREC_*): default_ lets it accumulate
// in a lower precision where it would (f16 on some GPUs), f32 asks for f32 accumulation.
// The CPU executor accumulates in f32 either way.
enum class precision : std::uint8_t { default_, f32 };
struct flash_attn_params {
    float scale = 1.0f;
    float max_bias = 0.0f;
    float logit_softcap = 0.0f;
    precision prec = precision::default_;  // flash_attn_ext_set_prec
};
struct mul_mat_params {
    precision prec = precision::default_;
};
struct cpy_params {};  // cpy, dup, cont: no parameters
struct set_params {    // set, acc: the view of the destination that receives b
    std::size_t nb1, nb2, nb3, offset;
};
struct arange_params {
    float start, stop, step;
};
struct argsort_params {
    bool descending = false;
};
struct top_k_params {
    int k;
};
// tri: which triangle of a square matrix is kept (ggml_tri_type, in ggml's order); column
// i0 against row i1: upper_diag i0 >= i1, upper i0 > i1, lower_diag i0 <= i1, lower i0 < i1.
enum class tri_type : std::uint8_t { upper_diag, upper, lower_diag, lower };
struct tri_params {
    tri_type type;
};
struct pad_params {  // pad (per dim, zeros or circular), pad_reflect_1d (dim 0 only)
    std::array<int, 4> left{}, right{};
    bool circular = false;  // wrap around instead of zeros (ggml's pad_*_circular)
};
struct roll_params {
    std::array<int, 4> shift{};
};

// ---- convolution, pooling, resampling (graph/ops/conv.hpp, graph/ops/image.hpp) ----
struct conv_params {  // im2col(_back), conv_2d (direct), conv_2d_dw, conv_transpose_1d, col2im_1d: dim 0 then dim 1
    std::array<int, 2> s{1, 1}, p{0, 0}, d{1, 1};
    bool is_2d = true;
};
enum class pool_op : std::uint8_t { max = 0, avg = 1 };  // ggml's GGML_OP_POOL_MAX / _AVG
struct pool_params {  // pool_1d (dim 0 only), pool_2d, pool_2d_back
    pool_op op;
    std::array<int, 2> k{1, 1}, s{1, 1}, p{0, 0};
};
enum class scale_mode : std::uint8_t { nearest = 0, bilinear = 1, bicubic = 2 };  // ggml's GGML_SCALE_MODE_*
struct upscale_params {
    scale_mode mode = scale_mode::nearest;
    bool align_corners = false;  // GGML_SCALE_FLAG_ALIGN_CORNERS
    bool antialias = false;      // GGML_SCALE_FLAG_ANTIALIAS
};
struct timestep_params {
    int dim;
    int max_period = 10000;
};
struct win_params {  // win_part, win_unpart: the window size
    int w;
};

struct conv3d_params {  // im2col_3d, conv_3d: dims 0, 1, 2; ic = input channels (dim 3 folds channels and batch)
    std::array<int, 3> s{1, 1, 1}, p{0, 0, 0}, d{1, 1, 1};
    std::int64_t ic = 1;
};

// ---- linear algebra, recurrent, DeepSeek-V4 (graph/ops/arith.hpp, recurrent.hpp, deepseek.hpp) ----
struct solve_tri_params {  // A X = B (left) or X A = B, A lower or upper triangular, unit diagonal or not
    bool left = true, lower = true, uni = false;
};
struct gated_delta_net_params {
    std::int64_t snapshots = 1;  // K: state snapshots in the result, newest first
};
struct hc_comb_params {
    float eps;
    int n_iter;  // Sinkhorn iterations
};

// ---- custom ops (graph/ops/custom.hpp) ----
struct node;
// A custom op's work: computes thread ith's share (of nth) of dst, whose sources are
// dst.src[]. The builders wrap the user's callable into this.
using custom_fn = std::function<void(node& dst, int ith, int nth)>;
struct custom_params {  // map_custom1/2/3, custom
    custom_fn fn;
    int n_tasks = -1;  // threads that run fn: -1 all, else min(n_tasks, threads); the others skip the node
};

// op_params: the parameters a node holds, one of the structs above (std::monostate: none).
// A small tagged union over a fixed list: the trivially copyable structs are copied as
// bytes; a struct that is not (custom_params, for its std::function) brings a manager
// that copies, moves and destroys it. index() numbers the list from 0 (std::monostate),
// as a std::variant over the same list would; get<P>() on another struct throws.
template <class... Ps>
class param_union {
public:
    static constexpr std::size_t count = sizeof...(Ps);
    // The position of P in the list; count when P is not in it.
    template <class P>
    static constexpr std::size_t index_of = [] {
        constexpr std::array<bool, sizeof...(Ps)> same{std::is_same_v<P, Ps>...};
        for (std::size_t i = 0; i < same.size(); ++i)
            if (same[i]) return i;
        return same.size();
    }();
    template <class P>
    static constexpr bool holdable = index_of<std::remove_cvref_t<P>> < count;

    param_union() noexcept { store(std::monostate{}); }
    template <class P>
        requires holdable<P>
    param_union(P&& p) {  // NOLINT: converts implicitly, as std::variant does
        store(std::forward<P>(p));
    }
    template <class P, class... Args>
        requires holdable<P>
    explicit param_union(std::in_place_type_t<P>, Args&&... args) {
        store(P{std::forward<Args>(args)...});
    }
    param_union(const param_union& o) { copy_from(o); }
    param_union(param_union&& o) noexcept { move_from(o); }
    param_union& operator=(const param_union& o) {
        if (this != &o) {
            param_union tmp(o);
            reset();
            move_from(tmp);
        }
        return *this;
    }
    param_union& operator=(param_union&& o) noexcept {
        if (this != &o) {
            reset();
            move_from(o);
        }
        return *this;
    }
    ~param_union() { reset(); }

    std::size_t index() const noexcept { return index_; }
    template <class P>
    bool holds() const noexcept {
        return index_ == index_of<P>;
    }
    template <class P>
    P* get_if() noexcept {
        return holds<P>() ? std::launder(reinterpret_cast<P*>(bytes_)) : nullptr;
    }
    template <class P>
    const P* get_if() const noexcept {
        return holds<P>() ? std::launder(reinterpret_cast<const P*>(bytes_)) : nullptr;
    }
    template <class P>
    P& get() {
        check_get(index_of<P>);
        return *std::launder(reinterpret_cast<P*>(bytes_));
    }
    template <class P>
    const P& get() const {
        check_get(index_of<P>);
        return *std::launder(reinterpret_cast<const P*>(bytes_));
    }

private:
    enum class action : std::uint8_t { copy, move, destroy };
    using manager_fn = void (*)(action, void* self, void* other);

    template <class P>
    static void manage(action a, void* self, void* other) {
        switch (a) {
            case action::copy: ::new (self) P(*static_cast<const P*>(other)); break;
            case action::move: ::new (self) P(std::move(*static_cast<P*>(other))); break;
            case action::destroy: static_cast<P*>(self)->~P(); break;
        }
    }
    template <class P>
    void store(P&& p) {
        using T = std::remove_cvref_t<P>;
        static_assert(index_of<T> < count, "not a parameter struct of this list");
        ::new (static_cast<void*>(bytes_)) T(std::forward<P>(p));
        index_ = static_cast<std::uint8_t>(index_of<T>);
        if constexpr (!std::is_trivially_copyable_v<T>) manager_ = &manage<T>;
    }
    void copy_from(const param_union& o) {
        if (o.manager_) o.manager_(action::copy, bytes_, const_cast<unsigned char*>(o.bytes_));
        else std::memcpy(bytes_, o.bytes_, sizeof bytes_);
        index_ = o.index_;
        manager_ = o.manager_;
    }
    void move_from(param_union& o) noexcept {
        if (o.manager_) o.manager_(action::move, bytes_, o.bytes_);
        else std::memcpy(bytes_, o.bytes_, sizeof bytes_);
        index_ = o.index_;
        manager_ = o.manager_;
    }
    void reset() noexcept {
        if (manager_) manager_(action::destroy, bytes_, nullptr);
        manager_ = nullptr;
        index_ = 0;
    }
    void check_get(std::size_t want) const {
        if (index_ != want)
            fail(errc::invalid_argument, "op parameters: asked for the struct at index " + std::to_string(want) +
                                             ", the node holds index " + std::to_string(index_));
    }

    alignas(Ps...) unsigned char bytes_[std::max({sizeof(Ps)...})]{};
    std::uint8_t index_ = 0;
    manager_fn manager_ = nullptr;  // null: the held struct is trivially copyable
};

using op_params = param_union<std::monostate, unary_params, glu_params, scale_params, clamp_params,
                               leaky_relu_params, fill_params, norm_params, group_norm_params, view_params,
                               concat_params, diag_mask_params, soft_max_params, rope_params,
                               flash_attn_params, mul_mat_params, cpy_params, set_params, arange_params, argsort_params,
                               top_k_params, pad_params, roll_params, tri_params, conv_params, pool_params, upscale_params,
                               timestep_params, win_params, conv3d_params, solve_tri_params, gated_delta_net_params,
                               hc_comb_params, custom_params>;

}  // namespace graph
TESSERA_END_NAMESPACE
