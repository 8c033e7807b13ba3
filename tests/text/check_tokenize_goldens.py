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
import shlex
import subprocess
import sys
import tempfile


def check_cli(exe, goldens):
    """Usage, error messages and exit codes, as llama.cpp's tokenize.cpp prints them."""
    model = "../vocab/ggml-vocab-llama-spm.gguf"
    def run(args, stdin=None):
        return subprocess.run(exe + args, cwd=goldens, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    fails = []
    def expect(args, rc, stdout=None, stderr=None, stdout_prefix=None, stderr_prefix=None, stdin=None):
        r = run(args, stdin)
        ok = r.returncode == rc
        ok = ok and (stdout is None or r.stdout == stdout) and (stderr is None or r.stderr == stderr)
        ok = ok and (stdout_prefix is None or r.stdout.startswith(stdout_prefix))
        ok = ok and (stderr_prefix is None or r.stderr.startswith(stderr_prefix))
        if not ok:
            fails.append("cli %r: rc=%d stdout=%r stderr=%r" % (args, r.returncode, r.stdout[:120], r.stderr[:200]))
    usage = run(["-h"]).stdout
    expect([], 1, stdout=usage, stdout_prefix=b"usage: ")
    expect(["--help"], 0, stdout=usage)
    expect(["-h", "--bogus"], 0, stdout=usage)
    if b"--no-parse-special                   do not parse control tokens.\n" not in usage:
        fails.append("usage text lacks --no-parse-special")
    expect(["--bogus"], 1, stdout=b"", stderr=b"Error: unknown option '--bogus'\n")
    expect(["-p", "x"], 1, stderr=b"Error: must specify --model.\n")
    expect(["-m", model], 1, stderr=b"Error: must specify one of: --stdin, --file or --prompt.\n")
    expect(["-m", model, "-p", "x", "--stdin"], 1, stderr=b"Error: --stdin, --file and --prompt are mutually exclusive.\n")
    expect(["-m", model, "-m", model], 1, stderr=b"Error: -m or --model specified multiple times.\n")
    expect(["-m", model, "-p", "a", "-p", "b"], 1, stderr=b"Error: -p or --prompt specified multiple times.\n")
    expect(["-m", model, "-f", "a", "-f", "b"], 1, stderr=b"Error: -f or --file specified multiple times.\n")
    expect(["-p", "x", "-m"], 1, stderr=b"Error: --model requires an argument.\n")
    expect(["-m", model, "-p"], 1, stderr=b"Error: --prompt requires an argument.\n")
    expect(["-m", "/nonexistent.gguf", "-p", "x", "--log-disable"], 1,
           stdout=b"", stderr=b"Error: could not load model from file '/nonexistent.gguf'.\n")
    expect(["-m", "../gguf-bad/gguf-unsupported-version.bin", "-p", "x", "--log-disable"], 1,
           stderr=b"Error: could not load model from file '../gguf-bad/gguf-unsupported-version.bin'.\n")
    expect(["-m", model, "-f", "/nonexistent.txt"], 1,
           stderr=b"read_prompt_from_file: could not open file '/nonexistent.txt' for reading: No such file or directory\n")
    hello = run(["-m", model, "--log-disable", "-p", "Hello world"]).stdout
    expect(["-m", model, "--log-disable", "--stdin"], 0, stdout=hello, stdin=b"Hello world")
    expect(["-m", model, "--log-disable", "--stdin", "--ids"], 0, stdout=b"[1, 15043, 3186]\n", stdin=b"Hello world")
    # escapes: \x41 at the very end converts; a lone \x4 stays; unknown escapes stay
    expect(["-m", model, "--log-disable", "--ids", "--no-bos", "-p", "\\x41"], 0, stdout=b"[319]\n")
    expect(["-m", model, "--log-disable", "--ids", "--no-bos", "-p", "\\x4"], 0, stdout=b"[320, 29916, 29946]\n")
    expect(["-m", model, "--log-disable", "--ids", "--no-bos", "--no-escape", "-p", "\\x41"], 0,
           stdout=b"[320, 29916, 29946, 29896]\n")
    return fails


def main():
    exe, data = sys.argv[1], sys.argv[2]
    sample = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    goldens = os.path.join(data, "goldens")
    if not os.path.isdir(goldens):
        print("SKIPPED: shared data folder %s is absent" % data)
        return 77
    # A cross build runs the program through the emulator meson names (MESON_EXE_WRAPPER).
    exe = shlex.split(os.environ.get("MESON_EXE_WRAPPER", "")) + [os.path.abspath(exe)]
    stats = collections.defaultdict(lambda: [0, 0])
    failures = []
    cases = []
    for name in ("tokenize-prompts.jsonl", "tokenize-inp46-file.jsonl"):
        with open(os.path.join(goldens, name), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if (lineno - 1) % sample == 0:
                    cases.append((name, lineno, json.loads(line)))

    with tempfile.TemporaryDirectory() as tmp:
        def run(item):
            idx, (name, lineno, case) = item
            if "argv" in case:
                argv = exe + case["argv"][1:]
            else:
                prompt_file = os.path.join(tmp, "prompt-%d.txt" % idx)
                with open(prompt_file, "wb") as pf:
                    pf.write(case["prompt"].encode("utf-8"))
                flags = [prompt_file if a == "<prompt file>" else a for a in case["flags"]]
                argv = exe + ["-m", case["model_file"], "--log-disable"] + flags
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
    print("total: %d/%d byte-exact%s" % (sum(s[0] for s in stats.values()), sum(s[1] for s in stats.values()),
                                         "" if sample == 1 else " (every %d-th case)" % sample))
    cli_fails = check_cli(exe, goldens)
    for f in cli_fails:
        print("FAIL " + f)
    print("command-line checks: %s" % ("all pass" if not cli_fails else "%d failed" % len(cli_fails)))
    return 1 if failures or cli_fails else 0


if __name__ == "__main__":
    sys.exit(main())
