#!/usr/bin/env python3
"""quantize writes llama-quantize's files byte for byte: models-kquant's source model
(../shared/data) to each file type whose types tessera can all write, with the imatrix
where llama.cpp used one (named as llama.cpp was given it, so quantize.imatrix.file is
the same), compared whole with llama.cpp's file; a --override-kv key lands in the
metadata; bad --override-kv / --include-weights uses are usage errors.

usage: check_quantize_llama.py QUANTIZE SHARED_DATA
Exit 0 when every case passed, 1 otherwise, 77 (meson: skipped) without the data.
"""
import filecmp
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

exe, data = os.path.abspath(sys.argv[1]), sys.argv[2]
WRAPPER = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
src_dir = os.path.join(data, "models-kquant")
if not os.path.exists(os.path.join(src_dir, "random-llama-f32.gguf")):
    print("SKIP: missing " + os.path.join(src_dir, "random-llama-f32.gguf"))
    sys.exit(77)
failures = []


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + ("" if cond or not detail else "\n     " + detail))
    if not cond:
        failures.append(what)


def run(args):
    p = subprocess.run(WRAPPER + [exe] + args, cwd=src_dir, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stderr


# file, TYPE, extra options
CASES = [("Q4_K_M", "Q4_K_M", []), ("Q4_K_M-imat", "q4_k_m", ["--imatrix", "random-llama.imatrix.gguf"]),
         ("Q4_K_S", "Q4_K_S", []), ("Q5_K_M", "Q5_K", []), ("Q6_K", "Q6_K", []), ("Q3_K_M", "Q3_K_M", []),
         ("Q2_K", "Q2_K", []), ("IQ4_XS", "IQ4_XS", ["--imatrix", "random-llama.imatrix.gguf"]),
         ("IQ4_NL", "IQ4_NL", ["--imatrix", "random-llama.imatrix.gguf"]), ("TQ1_0", "TQ1_0", []),
         ("TQ2_0", "TQ2_0", []), ("MXFP4", "MXFP4_MOE", ["--pure"])] + [
         (n, n, ["--imatrix", "random-llama.imatrix.gguf"])
         for n in ("IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M")]
tmp = tempfile.mkdtemp(prefix="tessera-quantize-llama.")
try:
    for name, ftype, extra in CASES:
        ref = os.path.join(src_dir, "random-llama-%s.gguf" % name)
        if not os.path.exists(ref):
            print("skip: no " + ref)
            continue
        out = os.path.join(tmp, name + ".gguf")
        rc, err = run(["-q", "-t", "2"] + extra + ["random-llama-f32.gguf", out, ftype])
        check(rc == 0 and filecmp.cmp(out, ref, shallow=False),
              "quantize %s %s = llama.cpp's random-llama-%s.gguf, byte for byte" % (" ".join(extra), ftype, name), err)
    # --override-kv: the key is in the file, everything else as before
    out = os.path.join(tmp, "kv.gguf")
    rc, err = run(["-q", "--override-kv", "tessera.test=str:hello", "--override-kv", "tessera.n=int:-7",
                   "random-llama-f32.gguf", out, "Q6_K"])
    blob = open(out, "rb").read() if rc == 0 else b""
    check(rc == 0 and b"tessera.test" in blob and b"hello" in blob and b"tessera.n" in blob, "--override-kv keys written", err)
    for args, msg in ((["--override-kv", "x=int:1.5"], "--override-kv: 'x=int:1.5'"),
                      (["--override-kv", "novalue"], "is not KEY=TYPE:VALUE"),
                      (["--imatrix", "random-llama.imatrix.gguf", "--include-weights", "a", "--exclude-weights", "b"],
                       "cannot be used together"),
                      (["--include-weights", "attn"], "need --imatrix"),
                      (["--tensor-type", "attn_q=q9_9"], "--tensor-type: unknown type 'q9_9'")):
        rc, err = run(args + ["random-llama-f32.gguf", os.path.join(tmp, "bad.gguf"), "Q4_K_M"])
        check(rc == 2 and msg in err and not os.path.exists(os.path.join(tmp, "bad.gguf")), "usage error: " + " ".join(args), err)
    # an i-quant file type: --dry-run plans it; without an imatrix it says one is needed
    rc, err = run(["--dry-run", "--imatrix", "random-llama.imatrix.gguf", "random-llama-f32.gguf", "IQ2_XXS"])
    check(rc == 0 and "-> iq2_xxs" in err and "dry run (IQ2_XXS)" in err, "--dry-run IQ2_XXS plans it", err[-400:])
    rc, err = run(["--dry-run", "random-llama-f32.gguf", "IQ2_XXS"])
    check(rc == 0 and "needs an importance matrix" in err, "--dry-run IQ2_XXS without an imatrix says it needs one", err[-400:])
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
