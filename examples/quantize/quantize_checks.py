"""What the quantize command-line checks share: the ok / FAIL lines and their count, running
the program (under MESON_EXE_WRAPPER when cross-testing), GGUF strings, and a scratch folder
removed afterwards. Imported by check_quantize_progress.py and check_quantize_split.py."""
import os
import shlex
import struct
import subprocess
import tempfile

WRAPPER = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
failures = []


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + ("" if cond or not detail else "\n     " + detail))
    if not cond:
        failures.append(what)


def run(exe, args, cwd=None):
    """(status, stdout bytes, stderr text) of exe args."""
    p = subprocess.run(WRAPPER + [exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, cwd=cwd)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def scratch(prefix, body):
    """body(folder) in a new temporary folder, removed afterwards (its files too); then the
    count of failures printed, and the exit status: 1 when a check failed, else 0."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        body(tmp)
    finally:
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        os.rmdir(tmp)
    print("%d failed" % len(failures))
    return 1 if failures else 0
