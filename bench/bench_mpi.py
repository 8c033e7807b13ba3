#!/usr/bin/env python3
"""Tokens/s of a model split over 2 MPI ranks against 1 process on the same machine, and
the bytes rank 0 moves per token (docs/distributed.md).

usage: bench/bench_mpi.py [--build DIR] [--runs N] [--tokens N] [--threads T] [MODEL.gguf ...]

For each model (default: ../shared/data's stories260K and models-kquant/random-llama-f32):
`generate --device cpu -t T` in one process and `mpirun -np 2 generate --mpi -t T` (the
layers split evenly between rank 0's CPU and rank 1), N runs each, interleaved, greedy
(the same tokens). Prints the medians of prompt and generation tokens/s, the ratio
2 ranks / 1 process (below 1 on one machine: the pipeline has one boundary and, without
micro-batches, the ranks take turns), the cost of the split per generated token in
microseconds, and rank 0's MPI bytes per token (tensors, graph encodings, control).
Without a quiet machine the figures mean little: it prints the load average before and
after. Google Benchmark cannot time a job of several processes, hence a script.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.path.join(root, "build"))
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--tokens", type=int, default=128)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("models", nargs="*")
a = ap.parse_args()
data = os.environ.get("TESSERA_SHARED_DATA", os.path.join(root, "..", "shared", "data"))
models = a.models or [os.path.join(data, "models", "stories260K.gguf"), os.path.join(data, "models-kquant", "random-llama-f32.gguf")]
models = [m for m in models if os.path.exists(m)]
exe = os.path.join(a.build, "examples", "generate", "generate")
if not os.path.exists(exe) or not models:
    sys.exit("bench_mpi.py: needs %s (configure with -Dexamples=true and Open MPI installed) and a model" % exe)
mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-np", "2"]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_mpi_yield_when_idle="1")
RATE = re.compile(r"generate: (prompt|generation) +\d+ tokens in +[0-9.]+ ms = +([0-9.]+) tokens/s")
MPI = re.compile(r"generate: mpi: per token (\d+) bytes of tensors, (\d+) worker to worker, (\d+) of graph encodings .*, (\d+) of control")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        sys.exit("bench_mpi.py: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    rates = dict((k, float(v)) for k, v in RATE.findall(p.stderr))
    m = MPI.search(p.stderr)
    return p.stdout, rates, [int(x) for x in m.groups()] if m else None


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


print("load average before: " + load())
print("| model | run | prompt tokens/s | generation tokens/s | 2 ranks / 1 | split cost per token | MPI bytes/token (tensors + graphs + control) |")
print("|---|---|---|---|---|---|---|")
for model in models:
    base = ["-m", model, "-p", "Once upon a time", "-n", str(a.tokens), "-t", str(a.threads)]
    one, two, traffic = [], [], None
    for _ in range(a.runs):
        out1, r1, _ = run([exe, "--device", "cpu"] + base)
        out2, r2, traffic = run(mpirun + [exe, "--mpi"] + base)
        if out1 != out2:
            sys.exit("bench_mpi.py: 2 ranks wrote other tokens than 1 process for " + model)
        one.append(r1)
        two.append(r2)
    name = os.path.basename(model)
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    g1, g2 = med(one, "generation"), med(two, "generation")
    print("| %s | 1 process | %.0f | %.1f | | | |" % (name, med(one, "prompt"), g1))
    print("| %s | 2 ranks | %.0f | %.1f | %.2f | %.0f us | %d + %d + %d |" %
          (name, med(two, "prompt"), g2, g2 / g1, (1 / g2 - 1 / g1) * 1e6, traffic[0] + traffic[1], traffic[2], traffic[3]))
print("load average after: " + load())
