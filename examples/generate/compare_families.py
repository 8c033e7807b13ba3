#!/usr/bin/env python3
"""Greedy generation gives the same text on two builds of the generate example.

usage: compare_families.py GENERATE_A GENERATE_B SHARED_DATA [QEMU_CPU ...]

CI runs it with the x86 build as A and the AArch64 cross build as B, B started through
$B_EXE_WRAPPER (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu") once per QEMU_CPU given
(default: max). For stories260K in f32 and every file of models-quantized/ (llama.cpp's
f16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K_M, q6_K), and every prompt of
goldens/stories260K-greedy.jsonl, the prompt is processed as one batch (the packed
quantized GEMM) and 48 tokens are generated one at a time (gemv), greedily; stdout must be
byte-identical between the builds. A prompt whose text already differs between A's best
arch and A's scalar path (TESSERA_ARCH=scalar) is a near tie, decided by the order of
the f32 sums, which no two SIMD widths share: it is reported, not compared. Prints one
line per model, prompt and CPU, then the near ties and "N passed, N failed"; exit status
1 on any difference, 77 (skipped) without the data.
"""
import json
import os
import shlex
import subprocess
import sys

if len(sys.argv) < 4:
    print(__doc__)
    sys.exit(2)
gen_a, gen_b, data = sys.argv[1], sys.argv[2], sys.argv[3]
cpus = sys.argv[4:] or ["max"]
wrap_b = shlex.split(os.environ.get("B_EXE_WRAPPER", ""))

goldens = os.path.join(data, "goldens", "stories260K-greedy.jsonl")
models = [os.path.join(data, "models", "stories260K.gguf")] + [
    os.path.join(data, "models-quantized", f"stories260K-{t}.gguf")
    for t in ("f16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_K_M", "q6_K")
]
missing = [p for p in [goldens] + models if not os.path.exists(p)]
if missing:
    print("SKIP: shared data lacks", ", ".join(missing))
    sys.exit(77)
prompts = [json.loads(line)["prompt"] for line in open(goldens, encoding="utf-8") if line.strip()]


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, timeout=600, env=env)
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace")[-400:]
    return p.stdout.decode("utf-8", "replace"), ""


passed = failed = ties = 0
for model in models:
    name = os.path.basename(model)
    for prompt in prompts:
        args = ["-m", model, "-p", prompt, "-n", "48", "-t", "2"]
        want, err = run([gen_a] + args)
        ref, err2 = run([gen_a] + args, dict(os.environ, TESSERA_ARCH="scalar"))
        if want is None or ref is None:
            print(f"FAIL {name} {prompt!r}: A failed: {err or err2}")
            failed += 1
            continue
        if want != ref:  # A's own arches disagree: a near tie decided by the f32 summation order
            ties += 1
            print(f"tie  {name} {prompt!r}: A's best arch and its scalar path already differ; not compared")
            continue
        for cpu in cpus:
            got, err = run(wrap_b + [gen_b] + args, dict(os.environ, QEMU_CPU=cpu))
            if got is None:
                failed += 1
                print(f"FAIL {name} {prompt!r} (QEMU_CPU={cpu}): B failed: {err}")
            elif got != want:
                failed += 1
                n = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
                print(f"FAIL {name} {prompt!r} (QEMU_CPU={cpu}): texts differ from character {n}: "
                      f"A {want[n:n + 40]!r}, B {got[n:n + 40]!r}")
            else:
                passed += 1
                print(f"ok   {name} {prompt!r} (QEMU_CPU={cpu}): the same 48 greedy tokens")
print(f"{ties} near ties not compared")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
