#!/usr/bin/env python3
"""Greedy generation on ../shared/data's stories260K.gguf writes exactly the prompt and
llama.cpp's text for every prompt of goldens/stories260K-greedy.jsonl, with flash
attention and f16 KV (the defaults) and with soft_max attention, f32 KV, one thread.
usage: check_generate_stories.py GENERATE SHARED_DATA
Exit 0 when every case matched, 1 otherwise, 77 (meson: skipped) without the files.
"""
import json
import os
import shlex
import subprocess
import sys

# A cross build runs the program through the emulator meson names (MESON_EXE_WRAPPER).
exe = shlex.split(os.environ.get("MESON_EXE_WRAPPER", "")) + [sys.argv[1]]
data = sys.argv[2]
model = os.path.join(data, "models", "stories260K.gguf")
goldens = os.path.join(data, "goldens", "stories260K-greedy.jsonl")
missing = [p for p in (model, goldens) if not os.path.exists(p)]
if missing:
    print("SKIP: missing " + ", ".join(missing))
    sys.exit(77)
failures = cases = 0
for line in open(goldens, encoding="utf-8"):
    if not line.strip():
        continue
    case = json.loads(line)
    for extra in ([], ["--no-fa", "--kv", "f32", "-t", "1"]):
        p = subprocess.run(exe + ["-m", model, "-p", case["prompt"], "-n", str(len(case["greedy_ids"]))] + extra,
                           capture_output=True, timeout=300)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        want = case["prompt"] + case["text"] + "\n"
        cases += 1
        if p.returncode == 0 and out == want:
            print("ok   stories260K %r %s" % (case["prompt"], " ".join(extra)))
        else:
            failures += 1
            print("FAIL stories260K %r %s\n  got  %r\n  want %r\n%s" % (case["prompt"], " ".join(extra), out, want, err))
print("%d case(s), %d failure(s)" % (cases, failures))
sys.exit(1 if failures or cases == 0 else 0)
