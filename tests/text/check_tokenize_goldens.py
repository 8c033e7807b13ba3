#!/usr/bin/env python3
"""Runs the built `tokenize` example on every case of the llama.cpp goldens
(tokenize-prompts.jsonl, tokenize-inp46-file.jsonl) and compares stdout byte for byte.

usage: check_tokenize_goldens.py TOKENIZE_EXE SHARED_DATA_DIR
Exit 77 (meson: skipped) when the shared data folder is absent.
"""
import base64
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile


def main():
    exe, data = sys.argv[1], sys.argv[2]
    goldens = os.path.join(data, "goldens")
    if not os.path.isdir(goldens):
        print("SKIPPED: shared data folder %s is absent" % data)
        return 77
    exe = os.path.abspath(exe)
    stats = collections.defaultdict(lambda: [0, 0])
    failures = []
    cases = []
    for name in ("tokenize-prompts.jsonl", "tokenize-inp46-file.jsonl"):
        with open(os.path.join(goldens, name), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                cases.append((name, lineno, json.loads(line)))

    with tempfile.TemporaryDirectory() as tmp:
        def run(item):
            idx, (name, lineno, case) = item
            if "argv" in case:
                argv = [exe] + case["argv"][1:]
            else:
                prompt_file = os.path.join(tmp, "prompt-%d.txt" % idx)
                with open(prompt_file, "wb") as pf:
                    pf.write(case["prompt"].encode("utf-8"))
                flags = [prompt_file if a == "<prompt file>" else a for a in case["flags"]]
                argv = [exe, "-m", case["model_file"], "--log-disable"] + flags
            r = subprocess.run(argv, cwd=goldens, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            return name, lineno, case, r

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for name, lineno, case, r in pool.map(run, enumerate(cases)):
                want = base64.b64decode(case["stdout_b64"])
                key = (name, case["model"])
                stats[key][1] += 1
                if r.stdout == want and r.returncode == case["rc"]:
                    stats[key][0] += 1
                else:
                    failures.append((name, lineno, case, r, want))
    for (name, model), (ok, total) in sorted(stats.items()):
        print("%-28s %-12s %3d/%3d byte-exact" % (name, model, ok, total))
    for name, lineno, case, r, want in failures[:20]:
        print("FAIL %s:%d %s flags=%s rc=%d (want %d)" % (name, lineno, case["model"], case["flags"], r.returncode, case["rc"]))
        print("  prompt: %r" % case["prompt"])
        print("  want:   %r" % want[:300])
        print("  got:    %r" % r.stdout[:300])
        if r.stderr:
            print("  stderr: %r" % r.stderr[:300])
    print("total: %d/%d" % (sum(s[0] for s in stats.values()), sum(s[1] for s in stats.values())))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
