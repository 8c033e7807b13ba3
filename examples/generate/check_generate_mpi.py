#!/usr/bin/env python3
"""generate --mpi under mpirun writes exactly what one process writes: greedy tokens of
../shared/data's stories260K (f32, and q8_0 when present), one thread per rank, at
-np 2 (layers split evenly between rank 0's CPU and rank 1, n_copies 2) and at -np 3
(--split-layers 2,2,1); a prompt of about a hundred tokens in micro-batches of 8 (-ub 8,
the ranks overlapping, n_copies 2) against one process with the same micro-batches;
stderr names the pipeline and rank 0's traffic. Also the usage errors of --mpi.
usage: check_generate_mpi.py GENERATE SHARED_DATA MPIRUN [MPIRUN ARGS...]
Exit 0 when every case matched, 1 otherwise, 77 (meson: skipped) without the model.
"""
import os
import subprocess
import sys
import tempfile
import time

exe, data, mpirun = sys.argv[1], sys.argv[2], sys.argv[3:]
models = [os.path.join(data, "models", "stories260K.gguf"), os.path.join(data, "models-quantized", "stories260K-q8_0.gguf")]
if not os.path.exists(models[0]):
    print("SKIP: missing " + models[0])
    sys.exit(77)
models = [m for m in models if os.path.exists(m)]
failures = cases = 0


def run(cmd):
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), time.time() - t


def check(name, ok, detail=""):
    global failures, cases
    cases += 1
    if ok:
        print("ok   " + name)
    else:
        failures += 1
        print("FAIL " + name + ("\n" + detail if detail else ""))


base = ["-p", "Once upon a time", "-n", "32", "-t", "1"]
for model in models:
    rc, want, err, _ = run([exe, "-m", model, "--device", "cpu"] + base)
    check("%s: one process" % os.path.basename(model), rc == 0 and want.startswith("Once upon a time") and len(want) > 40, err)
    for np, extra, pipe in ((2, ["--n-copies", "2"], "CPU[0-2] MPI1[3-4]+out"),
                            (3, ["--split-layers", "2,2,1"], "CPU[0-1] MPI1[2-3] MPI2[4-4]+out")):
        rc, out, err, secs = run(mpirun + ["-np", str(np), exe, "-m", model, "--mpi"] + base + extra)
        check("%s: mpirun -np %d --mpi %s = one process (%.1f s)" % (os.path.basename(model), np, " ".join(extra), secs),
              rc == 0 and out == want and ("device " + pipe) in err and "generate: mpi: prompt: per token " in err
              and "generate: mpi: generation: per token " in err,
              "  rc %d\n  got  %r\n  want %r\n%s" % (rc, out, want, err))

# micro-batches: rank 0 queues micro-batch i+1 while rank 1 computes i
with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
    f.write("Once upon a time there was a little girl named Lily. She liked to play outside in the sun. " * 4)
    f.flush()
    ub = ["-m", models[0], "-f", f.name, "-n", "16", "-t", "1", "-ub", "8"]
    rc, want, err1, _ = run([exe, "--device", "cpu"] + ub)
    rc2, out, err, secs = run(mpirun + ["-np", "2", exe, "--mpi", "--n-copies", "2"] + ub)
    check("micro-batches: mpirun -np 2 --mpi -ub 8 --n-copies 2 = one process -ub 8 (%.1f s)" % secs,
          rc == 0 and rc2 == 0 and out == want and len(want) > 200, "  rc %d %d\n  got  %r\n  want %r\n%s%s" % (rc, rc2, out, want, err1, err))

# usage errors
rc, out, err, _ = run([exe, "-m", models[0], "--mpi", "-n", "1"])
check("--mpi without mpirun is a usage error", rc == 2 and "--mpi needs mpirun -np N with N >= 2" in err, err)
rc, out, err, _ = run([exe, "-m", models[0], "--split-layers", "1,2", "-n", "1"])
check("--split-layers without --mpi is a usage error", rc == 2 and "--split-layers needs --mpi" in err, err)
rc, out, err, _ = run(mpirun + ["-np", "2", exe, "-m", models[0], "--mpi", "--split-layers", "2,2", "-n", "1"])
check("--split-layers that do not sum to the layers", rc == 1 and "layer_split sums to 4 layers, the model has 5" in err, err)
print("%d case(s), %d failure(s)" % (cases, failures))
sys.exit(1 if failures or cases == 0 else 0)
