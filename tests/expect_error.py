#!/usr/bin/env python3
"""Runs a command that must fail, and checks that it fails the way it exists to fail.

usage: expect_error.py [--status N] [--stderr TEXT]... [--stdout TEXT]... [--absent PATH]...
                       [--needs PATH]... -- COMMAND [ARG]...

A cross build's program runs through MESON_EXE_WRAPPER. Passes (exit 0) when the command exits with status N (any non-zero status without
--status) by itself (not by a signal, not by a sanitizer report), every --stderr /
--stdout TEXT occurs in that stream, and no --absent PATH exists afterwards. Exits 77
(meson: skipped) when a --needs PATH (an input the failure depends on, e.g. a file of
../shared/data) is missing, so a missing input never passes as "refused". Otherwise 1,
saying what differed.
"""
import argparse
import os
import shlex
import subprocess
import sys


def main() -> int:
    if "--" not in sys.argv:
        print("expect_error.py: the command goes after --", file=sys.stderr)
        return 2
    cut = sys.argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("--status", type=int)
    ap.add_argument("--stderr", action="append", default=[])
    ap.add_argument("--stdout", action="append", default=[])
    ap.add_argument("--absent", action="append", default=[])
    ap.add_argument("--needs", action="append", default=[])
    a = ap.parse_args(sys.argv[1:cut])
    cmd = sys.argv[cut + 1:]
    if not cmd:
        print("expect_error.py: no command", file=sys.stderr)
        return 2
    # A cross build runs its programs through the emulator meson names.
    cmd = shlex.split(os.environ.get("MESON_EXE_WRAPPER", "")) + cmd
    for p in a.needs:
        if not os.path.exists(p):
            print("SKIP: %s is missing (the failure checked here needs it)" % p)
            return 77
    for p in a.absent:  # a leftover of an earlier run must not make the check pass or fail
        if os.path.isfile(p):
            os.remove(p)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600)
    except subprocess.TimeoutExpired:
        print("FAIL: %s did not end within 600 s" % " ".join(cmd))
        return 1
    problems = []
    if r.returncode < 0:
        problems.append("killed by signal %d" % -r.returncode)
    elif a.status is not None and r.returncode != a.status:
        problems.append("exit status %d, expected %d" % (r.returncode, a.status))
    elif r.returncode == 0:
        problems.append("exit status 0: the command succeeded")
    for marker in ("Sanitizer", "terminate called", "runtime error:"):
        if marker in r.stderr:
            problems.append("stderr has %r" % marker)
    for t in a.stderr:
        if t not in r.stderr:
            problems.append("stderr lacks %r" % t)
    for t in a.stdout:
        if t not in r.stdout:
            problems.append("stdout lacks %r" % t)
    for p in a.absent:
        if os.path.exists(p):
            problems.append("%s exists after the failure" % p)
    print("$ " + " ".join(cmd))
    print("exit status %d; stderr: %s" % (r.returncode, r.stderr.strip()[:2000]))
    if problems:
        for p in problems:
            print("FAIL: " + p)
        return 1
    print("ok: failed as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
