#!/usr/bin/env python3
"""Must-not-compile tests for the typed op builders.

usage: compile_fail.py INCLUDE_DIR COMPILER [ARGS...]

Each snippet below is compiled with -fsyntax-only. The first must compile (so a
failure of the others is not an unrelated setup problem); every other one must fail
with the readable message of the builder's static_assert (or the named concept).
The headers of the prelude are compiled once into a precompiled header that every
snippet includes (0.5 s a snippet instead of 1.8 s); where the compiler cannot make
one, each snippet parses the headers itself.
"""
import os
import subprocess
import sys
import tempfile

HEADERS = """
#include "tessera/graph/ops.hpp"
#include "tessera/graph/autodiff.hpp"
"""

PRELUDE = HEADERS + """
using namespace tessera;
using namespace tessera::graph;
void f(context& ctx) {
    auto x = new_tensor<float, 2>(ctx, {8, 4});
    auto v = new_tensor<float, 1>(ctx, {8});
    auto h = new_tensor<f16, 2>(ctx, {8, 4});
    auto q = new_tensor<quant::block_q4_0, 2>(ctx, {64, 4});
    auto i = new_tensor<std::int32_t, 1>(ctx, {4});
    auto t3 = new_tensor<float, 3>(ctx, {8, 4, 2});
    (void)x; (void)v; (void)h; (void)q; (void)i; (void)t3;
"""

OK = """
    auto a = add(x, v);            // b broadcast over a
    auto m = mul_mat(q, x);        // block weights, f32 activations
    auto r = get_rows(x, i);
    auto s = silu(h);
    auto p = rope(t3, new_tensor<std::int32_t, 1>(ctx, {2}), 8, rope_mode::normal);
    auto pd = pad(x, 1, 2);
    auto cv = conv_2d(new_tensor<f16, 4>(ctx, {3, 3, 2, 4}), t3);
    static_assert(std::is_same_v<decltype(pd), tensor<float, 2>>);
    static_assert(std::is_same_v<decltype(cv), tensor<float, 4>>);
    static_assert(std::is_same_v<decltype(m), tensor<float, 2>>);
    static_assert(std::is_same_v<decltype(r), tensor<float, 2>>);
    auto o = argsort(x, sort_order::desc);
    auto d = diag(v);
    auto e = mul_mat_id(new_tensor<quant::block_q4_0, 3>(ctx, {64, 4, 3}), new_tensor<float, 3>(ctx, {64, 1, 2}),
                        new_tensor<std::int32_t, 2>(ctx, {2, 2}));
    static_assert(std::is_same_v<decltype(o), tensor<std::int32_t, 2>>);
    static_assert(std::is_same_v<decltype(d), tensor<float, 2>>);
    static_assert(std::is_same_v<decltype(e), tensor<float, 3>>);
    (void)a; (void)s; (void)p;
    auto xi = xielu(x, 0.8f, 0.8f, 0.5f, -1e-6f);
    auto sb = silu_back(x, h);
    auto st = solve_tri(x, x);
    auto ai = add_id(t3, x, new_tensor<std::int32_t, 2>(ctx, {4, 2}));
    auto mc = map_custom1(x, [](tensor<float, 2>, tensor<float, 2>, int, int) {});
    auto hp = dsv4_hc_pre(t3, x);
    static_assert(std::is_same_v<decltype(xi), tensor<float, 2>> && std::is_same_v<decltype(sb), tensor<float, 2>>);
    static_assert(std::is_same_v<decltype(st), tensor<float, 2>> && std::is_same_v<decltype(ai), tensor<float, 3>>);
    static_assert(std::is_same_v<decltype(mc), tensor<float, 2>> && std::is_same_v<decltype(hp), tensor<float, 2>>);
    // the option types of the builders (docs/graph.md, "Builder options")
    auto mp = mul_mat(q, x, precision::f32);
    auto su = solve_tri(x, x, {.part = tri_part::upper, .diag = tri_diag::unit});
    auto gs = glu(x, glu_op::swiglu, glu_order::swapped);
    auto li = leaky_relu_inplace(x, 0.1f);
    auto dm = diag_mask_inf_inplace(x, 0);
    auto pl = pool_2d(x, {pool_op::max, {2, 2}, {2, 2}});
    rope_params rp{8};
    rp.mode = rope_mode::neox;
    auto re = rope_ext_inplace(t3, new_tensor<std::int32_t, 1>(ctx, {2}), std::nullopt, rp);
    (void)mp; (void)su; (void)gs; (void)li; (void)dm; (void)pl; (void)re;
    gradients gr;
    static_assert(std::is_same_v<decltype(gr[h]), tensor<float, 2>>);  // f16 parameter: f32 gradient
    new_tensor<float, 1>(ctx, {1}).set_loss();
"""

CASES = [
    ("add of a block-typed tensor", "add(q, x);", "both operands must be tensors of f32, f16 or bf16"),
    ("add with b of higher rank than a", "add(v, x);", "must not have a higher rank than a"),
    ("add of an index tensor", "add(x, i);", "both operands must be tensors of f32, f16 or bf16"),
    ("silu of a block-typed tensor", "silu(q);", "the operand must be a tensor of f32, f16 or bf16"),
    ("rms_norm of an index tensor", "rms_norm(i, 1e-6f);", "the operand must be a tensor of f32, f16 or bf16"),
    ("mul_mat with block-typed activations", "mul_mat(x, q);", "b must hold f32, f16 or bf16"),
    ("mul_mat with index weights", "mul_mat(i, x);", r"a \(the weights\) must hold"),
    ("get_rows with float indices", "get_rows(x, v);", "the indices must be a tensor<int32_t, R>"),
    ("argmax of a vector", "argmax(v);", "argmax: the operand must be a tensor<float, 2>"),
    ("add1 of a block-typed tensor", "add1(q, v);", "add1: both operands must be tensors of f32, f16 or bf16"),
    ("set of an index tensor into a float one", "set(x, i, 0, 0, 0, 0);", "set: a and b must both hold f32, f16 or bf16"),
    ("argsort of an index tensor", "argsort(i);", "argsort: the operand must be a tensor of f32, f16 or bf16"),
    ("top_k of a block-typed tensor", "top_k(q, 2);", "top_k: the operand must be a tensor of f32, f16 or bf16"),
    ("group_norm of an index tensor", "group_norm(i, 2, 1e-6f);", "group_norm: the operand must be a tensor of f32, f16 or bf16"),
    ("mul_mat_id with rank-2 weights", "mul_mat_id(x, t3, new_tensor<std::int32_t, 2>(ctx, {2, 4}));",
     "mul_mat_id: as must be a rank-3 tensor"),
    ("transpose of a rank-1 tensor", "transpose(v);", "a rank-1 tensor has no second dim"),
    ("rope of a matrix", "rope(x, i, 8, rope_mode::normal);", "a must be a float tensor of rank >= 3"),
    ("pad of an index tensor", "pad(i, 1);", "pad: the operand must be a tensor of f32, f16 or bf16"),
    ("conv_2d with a block-typed kernel", "conv_2d(q, t3);", "conv_2d: kernel and input must be tensors of f32, f16 or bf16"),
    ("add_id of a block-typed tensor", "add_id(q, x, new_tensor<std::int32_t, 2>(ctx, {4, 1}));", "add_id: a \\(rank <= 3\\) and b"),
    ("xielu of an index tensor", "xielu(i, 0.8f, 0.8f, 0.5f, -1e-6f);", "xielu: the operand must be a tensor of f32, f16 or bf16"),
    ("silu_back of a block-typed tensor", "silu_back(q, x);", "silu_back: both operands must be tensors of f32, f16 or bf16"),
    ("solve_tri of f16 matrices", "solve_tri(h, h);", "solve_tri: A and B must be tensor<float, R>"),
    ("opt_step_sgd of an f16 parameter", "opt_step_sgd(h, h, v);", "opt_step_sgd: the parameter, grad and params must all be tensor<float, R>"),
    ("map_custom1 with a callable of the wrong shape", "map_custom1(x, [](int) {});", "map_custom1: fn must be callable as fn\\(dst, a, ith, nth\\)"),
    ("dsv4_hc_pre of f16", "dsv4_hc_pre(h, h);", "dsv4_hc_pre: x and the weights must be tensor<float, R>"),
    ("gated_delta_net with an f16 state", "gated_delta_net(x, x, x, x, x, h);", "gated_delta_net: every operand must be a tensor<float, R>"),
    # the bool / int parameter lists the option types replaced
    ("mul_mat with a bool precision", "mul_mat(q, x, true);", "no matching function for call to .mul_mat\\b"),
    ("solve_tri with bools", "solve_tri(x, x, true, false, false);", "no matching function for call to .solve_tri\\b"),
    ("rope with an int mode", "rope(t3, i, 8, 2);", "no matching function for call to .rope\\b"),
    ("rope_params::mode from an int", "rope_params rp{8}; rp.mode = 2;", "no match for .operator=|no viable overloaded '='"),
    ("glu with a bool swapped", "glu(x, glu_op::swiglu, true);", "no matching function for call to .glu\\b"),
    ("leaky_relu with a bool inplace", "leaky_relu(x, 0.1f, true);", "no matching function for call to .leaky_relu\\b"),
    ("diag_mask_inf with a bool inplace", "diag_mask_inf(x, 0, true);", "no matching function for call to .diag_mask_inf\\b"),
    ("pool_2d with an int list", "pool_2d(x, pool_op::max, 2, 2, 2, 2);", "no matching function for call to .pool_2d\\b"),
    ("tensor of rank 5", "tensor<float, 5> bad;", "constraints not satisfied|constraint|not satisfied"),
    # autodiff: gradients exist for float tensors; a loss is an f32 tensor
    ("the gradient of an index tensor", "gradients gr; gr[i];", "only tensors of f32, f16 or bf16 have gradients"),
    ("set_loss on an f16 tensor", "h.set_loss();", "set_loss"),
]


def compile_snippet(cxx, body, pch):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(PRELUDE + body + "\n}\n")
        path = f.name
    try:
        r = subprocess.run(cxx + pch + ["-fsyntax-only", path], capture_output=True, text=True)
        return r.returncode, r.stderr
    finally:
        os.unlink(path)


def make_pch(cxx, folder):
    """The -include arguments of a precompiled HEADERS (gcc finds NAME.gch, clang
    NAME.pch next to the header it is told to include), or [] when none is made."""
    header = os.path.join(folder, "prelude.hpp")
    with open(header, "w") as f:
        f.write(HEADERS)
    version = subprocess.run(cxx[:1] + ["--version"], capture_output=True, text=True).stdout
    out = header + (".pch" if "clang" in version else ".gch")
    r = subprocess.run(cxx + ["-x", "c++-header", header, "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        print("(no precompiled header: " + (r.stderr.strip().splitlines() or ["?"])[-1] + ")")
        return []
    return ["-include", header, "-Winvalid-pch"]


def main():
    inc = sys.argv[1]
    cxx = sys.argv[2:] + ["-std=c++20", "-I" + inc]
    with tempfile.TemporaryDirectory() as folder:
        return check(cxx, make_pch(cxx, folder))


def check(cxx, pch):
    rc, err = compile_snippet(cxx, OK, pch)
    if rc != 0:
        print("the valid snippet does not compile:\n" + err[:4000])
        return 1
    print("ok: valid builders compile")
    bad = 0
    import re
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda c: compile_snippet(cxx, c[1], pch), CASES))
    for (name, body, expect), (rc, err) in zip(CASES, results):
        if rc == 0:
            print(f"FAIL: '{name}' compiled")
            bad += 1
        elif not re.search(expect, err):
            print(f"FAIL: '{name}' failed without the expected message /{expect}/:\n{err[:2000]}")
            bad += 1
        else:
            print(f"ok: '{name}' rejected with /{expect}/")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
