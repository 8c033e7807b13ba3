#!/usr/bin/env python3
"""How the example programs fail: exit status, stderr, files left behind.

usage: check_cli_errors.py [--data SHARED_DATA_DIR [--require-data]] [--version-expected X.Y.Z] PROGRAM...

Each PROGRAM is a built example (generate, gguf_info, tokenize, quantize, simple,
quickstart, custom_backend, train_mnist), known by its file name; unknown names are
an error. For each it checks, where the program has such a thing:
  (a) a missing input file: status 1, one line on stderr naming the file
  (b) an unknown option: status 2, llama.cpp's "error: invalid argument: <option>" and
      the hint "try '<program> --help'" (tokenize keeps llama-tokenize's status 1 and
      "Error: unknown option" line)
  (c) a bad or missing numeric value: status 2, the line names the option and value
  (d) broken GGUF files (garbage after 'GGUF', empty, absurd counts, a real model
      truncated in the middle): status 1, one line naming the file
  (e) quantize: a failing run (bad input, a write that fails half-way under a file
      size limit) leaves an existing output byte-identical and no temporary files;
      an output equal to the input is refused; a good run replaces the output
      generate --random-out: the same for its file (missing folder, failed write, good run)
      generate: out of memory (a 40 GB KV cache under a 2 GB address-space limit; not in
      sanitizer builds): status 1, one line with the hint to try a smaller context
  (f) every run: no "terminate called", "Aborted", "Segmentation fault" or stack
      trace in the output, and no death by a signal (status >= 128)
  --help / -h: status 0 and "usage:" on stdout, which lists --version.
  --version: status 0, "<program> (tessera <version>)" (the version given with
      --version-expected, else any x.y.z), the compiler and the SIMD arch on stdout,
      nothing on stderr.
The parts that need the shared data (a real model) are skipped, with a line saying so,
when it is absent; with --require-data the whole run reports skipped (exit 77) then, so
meson runs it twice: examples_cli_errors without --data, examples_cli_errors_data
(suite 'data') with --data --require-data. Exit status 0 when every check passed, 1 otherwise, 77 when nothing
could be checked. A cross build's programs run through MESON_EXE_WRAPPER.
"""
import os
import re
import resource
import shlex
import signal
import struct
import subprocess
import sys
import tempfile

FORBIDDEN = ("terminate called", "Aborted", "Segmentation fault", "core dumped", "what():", "AddressSanitizer",
             "runtime error:", "Traceback")

failures = []
n_checks = 0
wrapper = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))


def run(exe, args, cwd=None, limit_file_size=None, limit_memory=None, timeout=180, env=None):
    def limit():
        if limit_file_size is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))
        if limit_memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_memory, limit_memory))

    try:
        p = subprocess.run(wrapper + [exe] + args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, env=env, preexec_fn=limit if (limit_file_size or limit_memory) else None)
    except subprocess.TimeoutExpired:
        return None, "", "(timed out after %d s)" % timeout
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(cond, what, rc=None, out="", err=""):
    global n_checks
    n_checks += 1
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        print("     status %s\n     stdout %r\n     stderr %r" % (rc, out[-400:], err[-600:]))
        failures.append(what)


def sane(name, args, rc, out, err):
    """(f): no signal, no abort text."""
    bad = [s for s in FORBIDDEN if s in out or s in err]
    check(rc is not None and 0 <= rc < 128 and not bad,
          "%s %s: no signal, abort or stack trace%s" % (name, shlex.join(args), (" (found %s)" % bad) if bad else ""),
          rc, out, err)


def expect(name, exe, args, status, contains=(), one_line=True, what="", **kw):
    rc, out, err = run(exe, args, **kw)
    sane(name, args, rc, out, err)
    lines = err.strip("\n").split("\n") if err.strip() else []
    ok = rc == status and all(c in err for c in contains)
    if status != 0 and one_line:
        ok = ok and len(lines) == 1 and lines[0].startswith(name + ": ") or (ok and name == "tokenize" and len(lines) == 1)
    check(ok, "%s %s: %sstatus %d%s%s" % (name, shlex.join(args), (what + ": ") if what else "", status,
                                          ", one line" if status != 0 and one_line else "",
                                          (", says " + " / ".join(repr(c) for c in contains)) if contains else ""),
          rc, out, err)
    return rc, out, err


expected_version = None


def expect_help(name, exe):
    for opt in ("--help", "-h"):
        rc, out, err = run(exe, [opt])
        sane(name, [opt], rc, out, err)
        check(rc == 0 and out.startswith("usage:") and "--version" in out,
              "%s %s: status 0, usage on stdout, lists --version" % (name, opt), rc, out, err)
    # --version wins over the other arguments (as --help does) and prints three lines.
    for args in (["--version"], ["--version", "--bogus-after-version"]):
        rc, out, err = run(exe, args)
        sane(name, args, rc, out, err)
        lines = out.split("\n")
        version = re.escape(expected_version) if expected_version else r"\d+\.\d+\.\d+"
        ok = (rc == 0 and err == "" and len(lines) == 4 and lines[3] == "" and
              re.fullmatch(r"%s \(tessera %s\)" % (re.escape(name), version), lines[0]) is not None and
              re.fullmatch(r"built with (g\+\+|clang\+\+) \S.*, C\+\+ \d{6}", lines[1]) is not None and
              re.fullmatch(r"simd: \w+ \((multiarch build|plain include)\)", lines[2]) is not None)
        check(ok, "%s %s: status 0, name and version, compiler, simd arch on stdout" % (name, shlex.join(args)),
              rc, out, err)
    # TESSERA_ARCH picks the arch the kernels use; --version reports it.
    rc, out, err = run(exe, ["--version"], env=dict(os.environ, TESSERA_ARCH="scalar"))
    check(rc == 0 and "\nsimd: scalar (" in out, "%s --version: reports TESSERA_ARCH=scalar" % name, rc, out, err)


def invalid_argument(opt):
    """llama.cpp's wording for an unknown option (common/arg.cpp)."""
    return "error: invalid argument: " + opt


def sanitized(exe):
    """True for a sanitizer build (its shadow memory does not fit under an address-space limit)."""
    try:
        with open(exe, "rb") as f:
            blob = f.read()
    except OSError:
        return True
    return b"__asan_init" in blob or b"__tsan_init" in blob or b"__msan_init" in blob


def usage_hint(name):
    return "try '%s --help'" % name


def gguf_header(n_tensors, n_kv, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def main(argv):
    global expected_version
    data = None
    require_data = False
    while argv and argv[0] in ("--data", "--version-expected", "--require-data"):
        if argv[0] == "--require-data":
            require_data = True
            argv = argv[1:]
            continue
        if len(argv) < 2:
            break
        if argv[0] == "--data":
            data = argv[1]
        else:
            expected_version = argv[1]
        argv = argv[2:]
    if require_data and not (data and os.path.exists(os.path.join(data, "models", "stories260K.gguf"))):
        print("SKIP: --require-data and no %s" % os.path.join(data or "<no --data>", "models", "stories260K.gguf"))
        return 77
    if not argv:
        print(__doc__)
        return 2
    tmp = tempfile.mkdtemp(prefix="tessera-cli-errors.")
    try:
        return check_all(argv, data, tmp)
    finally:
        for root, dirs, files in os.walk(tmp, topdown=False):
            for f in files:
                os.remove(os.path.join(root, f))
            for d in dirs:
                os.rmdir(os.path.join(root, d))
        os.rmdir(tmp)


def check_all(exes, data, tmp):
    missing = os.path.join(tmp, "no-such-file.gguf")
    missing_dir = os.path.join(tmp, "no-such-dir")
    bad = {}  # broken GGUF files: what -> path
    def write(fname, content):
        path = os.path.join(tmp, fname)
        with open(path, "wb") as f:
            f.write(content)
        return path
    bad["garbage"] = write("garbage.gguf", b"GGUF" + bytes(range(7, 250, 3)) * 3)
    bad["empty"] = write("empty.gguf", b"")
    bad["not gguf"] = write("text.gguf", b"this is not a model\n" * 10)
    bad["absurd tensor count"] = write("huge-count.gguf", gguf_header(1 << 62, 0))
    bad["absurd kv count"] = write("huge-kv.gguf", gguf_header(0, (1 << 63) - 1))
    model = os.path.join(data, "models", "stories260K.gguf") if data else None
    if model and os.path.isfile(model):
        with open(model, "rb") as f:
            blob = f.read()
        bad["truncated in the tensor data"] = write("truncated-data.gguf", blob[: len(blob) // 2])
        bad["truncated in the metadata"] = write("truncated-meta.gguf", blob[:3000])
        good_copy = write("model.gguf", blob)
    else:
        print("skip (no %s): the checks that need a real model" % (model or "--data"))
        model = good_copy = None

    for exe in exes:
        name = os.path.basename(exe)
        if name.endswith(".exe"):
            name = name[:-4]
        print("--- %s (%s)" % (name, exe))
        if name == "generate":
            expect_help(name, exe)
            expect(name, exe, ["-m", missing, "-n", "1"], 1, [missing], what="missing model")
            expect(name, exe, ["--bogus"], 2, [invalid_argument("--bogus"), usage_hint(name)])
            expect(name, exe, ["-m"], 2, ["-m", "needs a value", usage_hint(name)])
            expect(name, exe, ["stray"], 2, ["stray", usage_hint(name)])
            expect(name, exe, ["-m", ""], 2, ["-m", usage_hint(name)], what="empty model name")
            for opt, val in (("-n", "abc"), ("-t", "-3"), ("-t", "0"), ("-c", "12x"), ("-b", ""), ("--temp", "nan"),
                             ("--top-p", "2"), ("--seed", "-1"), ("--n-copies", "99999999999999999999"), ("-ub", "0"),
                             ("--random-size", "7B")):
                expect(name, exe, ["-m", missing, opt, val], 2, [opt, "'%s'" % val if not val else val, usage_hint(name)])
            for what, path in bad.items():
                expect(name, exe, ["-m", path, "-n", "1"], 1, [path], what=what)
            # --random-out: written under a temporary name, renamed on success
            rnd = os.path.join(tmp, "random.gguf")
            expect(name, exe, ["--random-out", os.path.join(missing_dir, "r.gguf"), "-n", "1"], 1, [missing_dir],
                   what="--random-out into a missing folder")
            with open(rnd, "wb") as f:
                f.write(b"old random model\n")
            expect(name, exe, ["--random-out", rnd, "-n", "1", "-t", "1"], 1, [rnd], limit_file_size=100000,
                   what="--random-out write fails half-way (RLIMIT_FSIZE)")
            with open(rnd, "rb") as f:
                same = f.read() == b"old random model\n"
            left = sorted(f for f in os.listdir(tmp) if ".tmp" in f)
            check(same and not left, "generate: a failed --random-out leaves the old file, no temporaries")
            rc, out, err = run(exe, ["--random-out", rnd, "-n", "1", "-t", "1"])
            sane(name, ["--random-out", rnd], rc, out, err)
            with open(rnd, "rb") as f:
                head = f.read(4)
            left = sorted(f for f in os.listdir(tmp) if ".tmp" in f)
            check(rc == 0 and head == b"GGUF" and not left, "generate: --random-out replaces the file, no temporaries",
                  rc, out, err)
            if model:
                expect(name, exe, ["-m", model, "-n", "2", "-t", "1", "--device", "no-such-device"], 1,
                       ["no-such-device"], what="unknown device")
                if sanitized(exe) or wrapper:
                    print("skip: generate out of memory (a sanitizer build or an emulator)")
                else:  # a 16M-token f32 KV cache (about 40 GB) under a 2 GB address-space limit
                    expect(name, exe, ["-m", model, "-n", "2", "-t", "1", "-c", "16777216", "--kv", "f32"], 1,
                           ["-c", "smaller context"], limit_memory=2 << 30, what="out of memory")
        elif name == "gguf_info":
            expect_help(name, exe)
            expect(name, exe, [missing], 1, [missing], what="missing file")
            expect(name, exe, ["--bogus", missing], 2, [invalid_argument("--bogus"), usage_hint(name)])
            expect(name, exe, [], 2, [usage_hint(name)], what="no file")
            expect(name, exe, ["--max-array"], 2, ["--max-array", "needs a value"])
            for opt, val in (("--max-array", "-3"), ("--max-string", "ten"), ("--max-array", "1e3")):
                expect(name, exe, [opt, val, missing], 2, [opt, val, usage_hint(name)])
            for what, path in bad.items():
                expect(name, exe, [path], 1, [path], what=what)
        elif name == "tokenize":
            # llama-tokenize's messages and status 1 for usage errors (tests/text checks them byte for byte).
            expect_help(name, exe)
            expect(name, exe, ["-m", missing, "-p", "x", "--log-disable"], 1, [missing], what="missing model")
            expect(name, exe, ["--bogus"], 1, ["Error: unknown option '--bogus'"], what="llama.cpp's status")
            expect(name, exe, ["-m", model or missing, "-f", missing], 1, [missing], what="missing prompt file")
            for what, path in bad.items():
                expect(name, exe, ["-m", path, "-p", "x", "--log-disable"], 1, [path], what=what)
        elif name == "quantize":
            expect_help(name, exe)
            out = os.path.join(tmp, "q-out.gguf")
            expect(name, exe, [missing, out, "q8_0"], 1, [missing], what="missing input")
            expect(name, exe, ["--bogus", missing, out, "q8_0"], 2, [invalid_argument("--bogus"), usage_hint(name)])
            expect(name, exe, [missing], 2, [usage_hint(name)], what="missing arguments")
            expect(name, exe, [missing, out, "q9_9"], 2, ["q9_9", usage_hint(name)], what="unknown type")
            expect(name, exe, ["-t"], 2, ["-t", "needs a value"])
            for val in ("abc", "-3", "0", "2x"):
                expect(name, exe, ["-t", val, missing, out, "q8_0"], 2, ["-t", val, usage_hint(name)])
            expect(name, exe, ["--imatrix", missing, model or bad["garbage"], out, "q4_0"], 1, [missing],
                   what="missing imatrix")
            for what, path in bad.items():
                expect(name, exe, [path, out, "q8_0"], 1, [path], what=what)
            check(not os.path.exists(out), "quantize: no output file after the failures")
            # (e) an existing output survives failures byte for byte; no temporaries remain
            existing = os.path.join(tmp, "existing.gguf")
            before = b"precious contents\n" * 1000
            with open(existing, "wb") as f:
                f.write(before)
            def unchanged(what):
                with open(existing, "rb") as f:
                    same = f.read() == before
                left = sorted(f for f in os.listdir(tmp) if ".tmp" in f)
                check(same and not left, "quantize: %s: existing output unchanged, no temporary files%s" %
                      (what, (" (left: %s)" % left) if left else ""))
            expect(name, exe, [bad["garbage"], existing, "q8_0"], 1, [bad["garbage"]], what="garbage over an existing output")
            unchanged("garbage input")
            if model:
                # (--quiet: the progress lines that come before the failure are not part of it)
                expect(name, exe, ["-q", "-t", "1", good_copy, existing, "q8_0"], 1, [existing], limit_file_size=100000,
                       what="a write that fails half-way (RLIMIT_FSIZE)")
                unchanged("failed write")
                rc, o, e = run(exe, ["-t", "1", good_copy, existing, "q8_0"], limit_file_size=100000)
                lines = e.strip("\n").split("\n")
                check(rc == 1 and existing in lines[-1] and lines[-1].startswith(name + ": ") and
                      all(re.match(r"quantize: \[ *\d+/\d+\] ", x) for x in lines[:-1]),
                      "quantize: a failed write without --quiet: the progress lines, then the error as the last line",
                      rc, o, e)
                unchanged("failed write without --quiet")
                expect(name, exe, [good_copy, good_copy, "q8_0"], 2, [good_copy, "input"], what="output = input")
                link = os.path.join(tmp, "link.gguf")
                os.symlink(good_copy, link)
                expect(name, exe, [good_copy, link, "q8_0"], 2, [link, "input"], what="output = input via a symlink")
                with open(good_copy, "rb") as f:
                    check(f.read() == blob, "quantize: the input is unchanged after output = input")
                rc, o, e = run(exe, ["-t", "1", good_copy, existing, "q8_0"])
                sane(name, ["good run"], rc, o, e)
                with open(existing, "rb") as f:
                    head = f.read(4)
                left = sorted(f for f in os.listdir(tmp) if ".tmp" in f)
                check(rc == 0 and head == b"GGUF" and not left, "quantize: a good run replaces the existing output, no temporaries",
                      rc, o, e)
            else:
                print("skip: quantize's write-failure, same-file and good-run checks (no model)")
        elif name == "train_mnist":
            expect_help(name, exe)
            expect(name, exe, ["--eval", missing], 1, [missing], what="missing model")
            expect(name, exe, ["--model", "fc", "--data", missing_dir], 1, [missing_dir], what="missing data folder")
            expect(name, exe, ["--model", "fc", "-o", os.path.join(missing_dir, "x.gguf")], 1, [missing_dir],
                   what="output folder missing")
            expect(name, exe, ["--bogus"], 2, [invalid_argument("--bogus"), usage_hint(name)])
            expect(name, exe, [], 2, [usage_hint(name)], what="no --model or --eval")
            expect(name, exe, ["--model", "rnn"], 2, ["rnn", usage_hint(name)])
            expect(name, exe, ["--model", "fc", "--epochs"], 2, ["--epochs", "needs a value"])
            for opt, val in (("--epochs", "abc"), ("-t", "-3"), ("--batch", "0"), ("--lr", "fast"), ("--val-split", "2"),
                             ("--seed", "1.5")):
                expect(name, exe, ["--model", "fc", opt, val], 2, [opt, val, usage_hint(name)])
            for what, path in bad.items():
                expect(name, exe, ["--eval", path], 1, [path], what=what)
            if model:
                expect(name, exe, ["--eval", model], 1, [model], what="a GGUF that is not an MNIST model")
        elif name in ("simple", "quickstart", "custom_backend"):
            expect_help(name, exe)
            expect(name, exe, ["--bogus"], 2, [invalid_argument("--bogus"), usage_hint(name)])
            expect(name, exe, ["stray"], 2, ["stray", usage_hint(name)])
            rc, out, err = run(exe, [])
            sane(name, [], rc, out, err)
            check(rc == 0, "%s: runs (status 0)" % name, rc, out, err)
        else:
            check(False, "%s: a program this script does not know" % exe)

    print("%d checks, %d failed" % (n_checks, len(failures)))
    if n_checks == 0:
        return 77
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
