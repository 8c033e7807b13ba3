#!/usr/bin/env python3
"""Runs the CLIs on the hostile models (make_hostile_models writes them): each must be
refused with exit status 1 and one line on stderr holding the words the library's
refusal holds (the manifest), never a signal, 'terminate called' or a stack trace. The
unedited base model must run. Then generate under an address-space limit (RLIMIT_AS)
with a context whose KV cache does not fit: exit 1, a message naming the KV cache, its
size and what to try (skipped in sanitizer builds, which reserve terabytes of address
space).

The hostile vocabularies (vocab_manifest.tsv) go through tokenize (the vocabulary
alone) and generate (the base model carrying it): both exit 1 with the library's words.

usage: check_hostile_cli.py <make_hostile_models> <generate> <tokenize> <sanitize: none|...>
"""
import os
import resource
import subprocess
import sys
import tempfile

make, generate, tokenize, sanitize = sys.argv[1:5]
failures = 0
checked = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def run(cmd, preexec=None, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120, preexec_fn=preexec,
                          env=env)


def bad_output(r):
    text = r.stdout + r.stderr
    return r.returncode < 0 or r.returncode >= 128 or "terminate called" in text or "Aborted" in text


with tempfile.TemporaryDirectory(prefix="tessera-hostile-") as d:
    r = run([make, d])
    if r.returncode != 0:
        print(r.stderr)
        sys.exit(1)
    base = run([generate, "-m", os.path.join(d, "base.gguf"), "-n", "2", "-p", "the", "-t", "1"])
    if base.returncode != 0:
        fail("generate on the base model: status %d: %s" % (base.returncode, base.stderr.strip()))
    for line in open(os.path.join(d, "manifest.tsv")):
        name, *expect = line.rstrip("\n").split("\t")
        r = run([generate, "-m", os.path.join(d, name + ".gguf"), "-n", "2", "-p", "the", "-t", "1"])
        checked += 1
        err = r.stderr.strip()
        if bad_output(r):
            fail("%s: generate crashed or aborted (status %d): %s" % (name, r.returncode, err[-400:]))
        elif r.returncode != 1:
            fail("%s: generate exited %d, expected 1: %s" % (name, r.returncode, err[-400:]))
        elif len(err.splitlines()) != 1:
            fail("%s: expected one line on stderr, got %d: %s" % (name, len(err.splitlines()), err[-400:]))
        elif name + ".gguf" not in err:
            fail("%s: the message does not name the file: %s" % (name, err))
        elif not all(e in err for e in expect):
            fail("%s: the message lacks %s: %s" % (name, [e for e in expect if e not in err], err))
        else:
            print("ok: %-32s %s" % (name, err))

    for line in open(os.path.join(d, "vocab_manifest.tsv")):
        name, *expect = line.rstrip("\n").split("\t")
        for prog, cmd, one_line in (
                ("generate", [generate, "-m", os.path.join(d, name + ".gguf"), "-n", "2", "-p", "the", "-t", "1"], True),
                ("tokenize", [tokenize, "-m", os.path.join(d, name + ".vocab.gguf"), "-p", "hello"], False)):
            r = run(cmd)
            checked += 1
            err = r.stderr.strip()
            if bad_output(r):
                fail("%s: %s crashed or aborted (status %d): %s" % (name, prog, r.returncode, err[-400:]))
            elif r.returncode != 1:
                fail("%s: %s exited %d, expected 1: %s" % (name, prog, r.returncode, err[-400:]))
            elif one_line and len(err.splitlines()) != 1:
                fail("%s: %s: expected one line on stderr, got %d: %s" % (name, prog, len(err.splitlines()), err[-400:]))
            elif not all(e in err for e in expect):
                fail("%s: %s: the message lacks %s: %s" % (name, prog, [e for e in expect if e not in err], err))
            else:
                print("ok: %-32s %s: %s" % (name, prog, err.splitlines()[-1]))

    if sanitize == "none":
        def limit():
            # what generate needs to load the tiny model, far below its 1 GiB KV cache
            resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
        # No Vulkan driver in this run: listing the devices creates a VkDevice, and Mesa's
        # lavapipe crashes (SIGSEGV in vkCreateDevice, about 1 run in 15) when its JIT
        # cannot map memory under the limit; a driver's bug, not what this checks.
        no_vulkan = dict(os.environ, VK_ICD_FILENAMES="/nonexistent/icd.json", VK_DRIVER_FILES="/nonexistent/icd.json")
        r = run([generate, "-m", os.path.join(d, "base.gguf"), "-n", "2", "-p", "the", "-t", "1", "-c", str(1 << 22)], limit,
                no_vulkan)
        checked += 1
        err = r.stderr.strip()
        want = ["KV cache (4194304 tokens x 2 layers, f16", "1.00 GiB", "could not allocate", "try a smaller context"]
        if bad_output(r) or r.returncode != 1 or not all(w in err for w in want):
            fail("generate under RLIMIT_AS 512 MiB with -c 4194304: status %d, stderr: %s" % (r.returncode, err[-600:]))
        else:
            print("ok: %-32s %s" % ("out of memory (RLIMIT_AS)", err))
    else:
        print("skipped: generate under RLIMIT_AS (a %s build reserves more address space than the limit)" % sanitize)

print("%d hostile inputs checked, %d failures" % (checked, failures))
sys.exit(1 if failures else 0)
