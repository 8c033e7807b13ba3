#!/usr/bin/env python3
"""A worker rank that dies or hangs mid-compute ends the whole job with a clear message,
within a bounded time, never a hang. Runs test_backend_mpi's long pipeline case at
mpirun -np 3 three ways:
  1. rank 1 is killed (SIGKILL) at its 3rd graph, default launcher policy: the job ends
     in < 30 s, mpirun's exit status is not 0, and the output names rank 1 (rank 0's
     "MPI1 (rank 1, pid P): the process is gone while waiting for ..." or mpirun's
     "process rank 1 ... exited on signal 9");
  2. the same under mpirun --enable-recovery (the launcher lets the others go on): rank 0's
     liveness probe says "MPI1 (rank 1, pid P): the process is gone while waiting for ...;
     the job cannot go on" and ends the job with MPI_Abort, in < 30 s (Open MPI 4.1.4 then
     exits 0 all the same, so the status is not checked there);
  3. rank 2 hangs at its 2nd graph: with TESSERA_MPI_TIMEOUT=4 rank 0 says "MPI2 (rank 2,
     pid P): no answer within 4 s (TESSERA_MPI_TIMEOUT) while waiting for ..." (or passes on
     rank 1's "rank 2 (pid P): no answer ..." when rank 1 waited for rank 2's bytes first)
     and aborts the job, between 4 and 24 s after the start.
(In 1 and 2 likewise: rank 0's own message, or another worker's about rank 1.)
usage: check_mpi_death.py TEST_BINARY MPIRUN [MPIRUN ARGS...]
"""
import os
import re
import subprocess
import sys
import time

binary, mpirun = sys.argv[1], sys.argv[2:]
case = ["--test-case=mpi: a long pipeline*"]
failures = 0


def run(extra_mpirun, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    t = time.time()
    try:
        p = subprocess.run(mpirun + extra_mpirun + ["-np", "3", binary] + case, capture_output=True, timeout=60, env=env)
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        rc = p.returncode
    except subprocess.TimeoutExpired as e:
        out = ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace")
        rc = None
    return rc, re.sub(r"\x1b\[[0-9;]*m", "", out), time.time() - t


# rank 0 ended the job with MPI_Abort(3): mpirun's banner, or (Open MPI 4.1.4 sometimes
# fails to print it: "ORTE_ERROR_LOG: Data unpack had inadequate space ... show_help.c")
# the abort's exit status 3, the other ranks' SIGTERM lines, or a worker that saw rank 0 gone
def aborted(rc, out):
    return ("MPI_ABORT was invoked on rank 0" in out or rc == 3 or "stopped by the MPI launcher" in out or
            re.search(r"MPI worker rank \d: rank 0 \(pid \d+\) is gone; exiting", out) is not None)


def check(name, ok, rc, out, secs):
    global failures
    if ok:
        print("ok   %s (%.1f s, exit %s)" % (name, secs, rc))
    else:
        failures += 1
        print("FAIL %s (%.1f s, exit %s)\n%s" % (name, secs, rc, out))


# rank 0 may learn it itself ("MPI1 (rank 1, pid P): ...") or from another worker that
# waited for rank 1's bytes ("MPI2: peer_recv command ...: rank 1 (pid P): ..."): both name rank 1
gone = re.compile(r"(MPI1 \(rank 1, pid \d+\)|rank 1 \(pid \d+\)): the process is gone while waiting for [^\n]*; the job cannot go on")
rc, out, secs = run([], {"TESSERA_MPI_TEST_DIE": "1:3", "TESSERA_MPI_TIMEOUT": "20"})
check("rank 1 killed mid-compute: the job ends, rank 1 named", rc not in (None, 0) and secs < 30 and
      (gone.search(out) is not None or re.search(r"process rank 1 with PID \d+ on node \S+ exited on signal 9", out) is not None),
      rc, out, secs)

rc, out, secs = run(["--enable-recovery"], {"TESSERA_MPI_TEST_DIE": "1:3", "TESSERA_MPI_TIMEOUT": "20"})
check("rank 1 killed, mpirun --enable-recovery: rank 0's liveness probe names it and aborts the job",
      rc is not None and secs < 30 and gone.search(out) is not None and aborted(rc, out), rc, out, secs)

rc, out, secs = run([], {"TESSERA_MPI_TEST_STALL": "2:2", "TESSERA_MPI_TIMEOUT": "4"})
check("rank 2 hangs mid-compute: rank 0's deadline fires and aborts the job",
      rc not in (None, 0) and 4 <= secs < 24 and aborted(rc, out) and
      re.search(r"(MPI2 \(rank 2, pid \d+\)|rank 2 \(pid \d+\)): no answer within 4 s \(TESSERA_MPI_TIMEOUT\) while waiting for ", out)
      is not None,
      rc, out, secs)
sys.exit(1 if failures else 0)
