#!/usr/bin/env python3
"""Checks the generate example end to end.

usage: check_generate.py GENERATE [SHARED_DATA]

- the random-model demo (no -m) runs, writes the prompt then generated text to stdout
  and the speeds to stderr;
- with ../shared/data: greedy generation on stories260K.gguf writes exactly
  prompt + llama.cpp's text for every prompt of goldens/stories260K-greedy.jsonl
  (skipped with a message when the data is absent);
- bad arguments and a missing model fail with exit status 2 / 1 and a clear message.
"""
import json
import os
import shlex
import subprocess
import sys

# A cross build runs the program through the emulator meson names (MESON_EXE_WRAPPER).
exe = shlex.split(os.environ.get("MESON_EXE_WRAPPER", "")) + [sys.argv[1]]
data = sys.argv[2] if len(sys.argv) > 2 else ""
failures = 0


def run(args):
    p = subprocess.run(exe + args, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(cond, what, detail=""):
    global failures
    if cond:
        print("ok  ", what)
    else:
        failures += 1
        print("FAIL", what, detail)


# the random-weight demo
rc, out, err = run(["-p", "Once upon a time", "-n", "12", "-t", "2"])
check(rc == 0, "random demo exits 0", err)
check(out.startswith("Once upon a time") and out.endswith("\n"), "random demo stdout = prompt + text", repr(out))
check("random-weight llama model" in err and "tokens/s" in err, "random demo reports the model and speeds on stderr", err)
rc2, out2, _ = run(["-p", "Once upon a time", "-n", "12", "-t", "1", "--random-type", "q4_0"])
check(rc2 == 0 and out2.startswith("Once upon a time"), "random demo with q4_0 weights")
rc3, out3, _ = run(["-p", "Once upon a time", "-n", "12", "--temp", "0.9", "--seed", "3"])
rc4, out4, _ = run(["-p", "Once upon a time", "-n", "12", "--temp", "0.9", "--seed", "3"])
check(rc3 == 0 and out3 == out4, "sampling with a seed is reproducible")

# stories260K against llama.cpp
model = os.path.join(data, "models", "stories260K.gguf") if data else ""
goldens = os.path.join(data, "goldens", "stories260K-greedy.jsonl") if data else ""
if model and os.path.exists(model) and os.path.exists(goldens):
    for line in open(goldens, encoding="utf-8"):
        if not line.strip():
            continue
        case = json.loads(line)
        for extra in ([], ["--no-fa", "--kv", "f32", "-t", "1"]):
            rc, out, err = run(["-m", model, "-p", case["prompt"], "-n", str(len(case["greedy_ids"]))] + extra)
            want = case["prompt"] + case["text"] + "\n"
            check(rc == 0 and out == want, "stories260K %r %s" % (case["prompt"], " ".join(extra)),
                  "\n  got  %r\n  want %r\n%s" % (out, want, err))
else:
    print("SKIPPED: stories260K goldens (TESSERA_SHARED_DATA / ../shared/data absent)")

# bad input
for args, code, text in (
    (["--bogus"], 2, "error: invalid argument: --bogus"),
    (["-n"], 2, "needs a value"),
    (["-n", "abc"], 2, "wants an integer"),
    (["--kv", "q4_0"], 2, "--kv"),
    (["--top-p", "0"], 2, "--top-p"),
    (["-m", "/nonexistent/model.gguf"], 1, "/nonexistent/model.gguf"),
):
    rc, out, err = run(args)
    check(rc == code and text in err and out == "", "bad arguments %s -> exit %d" % (args, code), "rc=%d err=%r" % (rc, err))

print("%d failure(s)" % failures)
sys.exit(1 if failures else 0)
