#!/usr/bin/env python3
"""Tokens/s of a model split over 2 MPI ranks against 1 process on the same machine, the
bytes rank 0 moves per token, and what they cost at the MPI bandwidth measured in the
same run (docs/distributed.md).

usage: bench/bench_mpi.py [--build DIR] [--runs N] [--tokens N] [--threads T] [--ubatch U]
                          [--no-110m] [MODEL.gguf ...]

First `mpirun -np 2 bench_mpi_transfer` measures MPI between the two ranks: SET
bandwidth at 64 KiB and 1 MiB (to a one-core memcpy of the same size) and the round trip
of one command. Then for each model (default: ../shared/data's stories260K and
models-kquant/random-llama-f32, and generate's 110M q8_0 demo model written to a
temporary file) `generate -t T -ub U` in one process and `mpirun -np 2 generate --mpi
-t T -ub U --n-copies 2` (layers split evenly between rank 0's CPU and rank 1), N runs
each, interleaved, greedy on the same prompt of a few hundred tokens (the same tokens
are checked). Prints the medians of prompt and generation tokens/s and the ratios 2 ranks
/ 1 process: generation takes turns (one token crosses both ranks in order), so on one
machine it stays below 1; the prompt's micro-batches overlap (rank 0 computes micro-batch
i+1 while rank 1 computes i), so with a core per rank it can pass 1. Also the split's cost
per generated token, rank 0's MPI bytes and commands per generated token, and their transfer time at
the measured bandwidth and round trip. Without a quiet machine the figures mean little:
it prints the load average before and after. Google Benchmark cannot time a job of several
processes, hence a script.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.path.join(root, "build"))
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--tokens", type=int, default=128)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--ubatch", type=int, default=32)
ap.add_argument("--no-110m", action="store_true")
ap.add_argument("models", nargs="*")
a = ap.parse_args()
data = os.environ.get("TESSERA_SHARED_DATA", os.path.join(root, "..", "shared", "data"))
models = a.models or [os.path.join(data, "models", "stories260K.gguf"), os.path.join(data, "models-kquant", "random-llama-f32.gguf")]
models = [m for m in models if os.path.exists(m)]
exe = os.path.join(a.build, "examples", "generate", "generate")
xfer = os.path.join(a.build, "bench", "bench_mpi_transfer")
if not os.path.exists(exe) or not os.path.exists(xfer):
    sys.exit("bench_mpi.py: needs %s and %s (configure with -Dexamples=true and Open MPI installed)" % (exe, xfer))
mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml", "ob1",
          "--mca", "btl_vader_single_copy_mechanism", "none", "-np", "2"]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_mpi_yield_when_idle="1")
RATE = re.compile(r"generate: (prompt|generation) +\d+ tokens in +[0-9.]+ ms = +([0-9.]+) tokens/s")
MPI = re.compile(r"generate: mpi: generation: per token (\d+) bytes of tensors, (\d+) worker to worker, (\d+) of graph encodings .*, "
                 r"(\d+) of control \(([0-9.]+) commands\)")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode != 0:
        sys.exit("bench_mpi.py: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


print("load average before: " + load())
tmp = tempfile.mkdtemp(prefix="tessera-bench-mpi-")
try:
    # MPI between the two ranks, through the MPI device
    p = run(mpirun + [xfer, "--benchmark_format=json", "--benchmark_min_time=0.2",
                      "--benchmark_filter=mpi/set/(65536|1048576)|mpi/round_trip"])
    bm = dict((b["name"], b) for b in json.loads(p.stdout[p.stdout.index("{"):])["benchmarks"])
    set64, set1m = bm["mpi/set/65536"], bm["mpi/set/1048576"]
    bw = set64["GB/s"] * 1e9
    rt_us = bm["mpi/round_trip"]["real_time"]
    print("MPI between 2 ranks: SET %.2f GB/s at 64 KiB (%.2f of memcpy), %.2f GB/s at 1 MiB (%.2f of memcpy); round trip %.1f us"
          % (set64["GB/s"], set64["memcpy_ratio"], set1m["GB/s"], set1m["memcpy_ratio"], rt_us))
    if not a.no_110m and not a.models:
        big = os.path.join(tmp, "random-110M-q8_0.gguf")
        run([exe, "--random-size", "110M", "--random-type", "q8_0", "--random-out", big, "-n", "1", "-t", "1", "-q"])
        models.append(big)
    prompt = os.path.join(tmp, "prompt.txt")
    with open(prompt, "w") as f:
        f.write(" ".join(["Once upon a time a little cat sat on a mat and looked at the sun."] * 6))
    print()
    print("| model | prompt tok/s: 1 process / 2 ranks | 2 ranks / 1 | generation tok/s: 1 process / 2 ranks | 2 ranks / 1 | split cost per token | MPI bytes per token (tensors + graphs + control), commands | their transfer time per token |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        base = ["-m", model, "-f", prompt, "-n", str(a.tokens), "-t", str(a.threads), "-ub", str(a.ubatch)]
        one, two, traffic = [], [], None
        for _ in range(a.runs):
            p1 = run([exe, "--device", "cpu"] + base)
            p2 = run(mpirun + [exe, "--mpi", "--n-copies", "2"] + base)
            if p1.stdout != p2.stdout:
                sys.exit("bench_mpi.py: 2 ranks wrote other tokens than 1 process for " + model)
            one.append(dict((k, float(v)) for k, v in RATE.findall(p1.stderr)))
            two.append(dict((k, float(v)) for k, v in RATE.findall(p2.stderr)))
            traffic = MPI.search(p2.stderr).groups()
        med = lambda rs, k: statistics.median(r[k] for r in rs)
        p1, p2, g1, g2 = med(one, "prompt"), med(two, "prompt"), med(one, "generation"), med(two, "generation")
        tensors, w2w, graphs, control, commands = int(traffic[0]), int(traffic[1]), int(traffic[2]), int(traffic[3]), float(traffic[4])
        total = tensors + w2w + graphs + control
        transfer_us = total / bw * 1e6 + commands * rt_us / 2
        print("| %s | %.0f / %.0f | %.2f | %.1f / %.1f | %.2f | %.0f us | %d + %d + %d, %.1f | %.1f us |" %
              (os.path.basename(model), p1, p2, p2 / p1, g1, g2, g2 / g1, (1 / g2 - 1 / g1) * 1e6, tensors + w2w, graphs,
               control, commands, transfer_us))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print()
print("transfer time = bytes / SET bandwidth at 64 KiB + commands x half a round trip")
print("load average after: " + load())
