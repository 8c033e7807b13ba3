#!/usr/bin/env python3
"""quantize's progress lines and --quiet, on a GGUF file this script writes.

usage: check_quantize_progress.py QUANTIZE

The file has four f32 tensors: two weights that q8_0 fits, a weight whose rows (48) are
not a multiple of q8_0's block (32: kept) and a norm (1-D: kept), in llama-quantize's
order (quantize writes that order whatever the input's). A run must print
one line per tensor on stderr, in the file's order, "[i/4]" with the right name, shape,
types and byte counts (worked out here from q8_0's 34-byte blocks) and a positive MB/s,
then the totals line, every line complete (ending in a newline); --quiet (and -q) must
print nothing at all and write the same output file. Exit status 0 when all pass.
"""
import os
import re
import struct
import sys

from quantize_checks import check, gguf_string, run, scratch

# name, ne, expected output type, bytes in, bytes out
# (in llama-quantize's order, which quantize writes: layer, then name)
TENSORS = [
    ("a.weight", [64, 4], "q8_0", 64 * 4 * 4, 4 * 2 * 34),
    ("b.weight", [32, 3], "q8_0", 32 * 3 * 4, 3 * 34),
    ("c.weight", [48, 2], "f32", 48 * 2 * 4, 48 * 2 * 4),
    ("norm.weight", [64], "f32", 64 * 4, 64 * 4),
]


def write_model(path):
    kv = [("general.architecture", 8, gguf_string("llama"))]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(TENSORS), len(kv))
    for k, t, payload in kv:
        head += gguf_string(k) + struct.pack("<I", t) + payload
    data = b""
    for name, ne, _, _, _ in TENSORS:
        data += b"\0" * (-len(data) % 32)
        head += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        head += struct.pack("<IQ", 0, len(data))
        n = 1
        for x in ne:
            n *= x
        data += struct.pack("<%df" % n, *[((i * 7) % 13 - 6) / 4 for i in range(n)])
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head + data)


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    exe = argv[0]
    def body(tmp):
        model = os.path.join(tmp, "in.gguf")
        write_model(model)
        out1, out2 = os.path.join(tmp, "out1.gguf"), os.path.join(tmp, "out2.gguf")
        rc, out, err = run(exe, [model, out1, "q8_0"])
        check(rc == 0 and out == b"", "a run: status 0, nothing on stdout", err)
        check(err.endswith("\n"), "a run: stderr ends with a complete line", repr(err[-80:]))
        lines = err.split("\n")[:-1]
        check(len(lines) == len(TENSORS) + 1, "a run: %d progress lines and the totals" % len(TENSORS), err)
        for i, (name, ne, to, b_in, b_out) in enumerate(TENSORS):
            line = lines[i] if i < len(lines) else ""
            m = re.fullmatch(r"quantize: \[(\d+)/(\d+)\] (\S+) +\[([0-9, ]+)\] +f32 -> (\S+) +(\d+) -> +(\d+) bytes, "
                             r"(\d+\.\d) MB/s( \(kept\))?", line)
            ok = (m is not None and int(m[1]) == i + 1 and int(m[2]) == len(TENSORS) and m[3] == name and
                  m[4] == ", ".join(map(str, ne)) and m[5] == to and int(m[6]) == b_in and int(m[7]) == b_out and
                  float(m[8]) > 0 and (m[9] is not None) == (to == "f32"))
            check(ok, "progress line %d: [%d/%d] %s %s -> %s, %d -> %d bytes, MB/s" %
                  (i + 1, i + 1, len(TENSORS), name, ne, to, b_in, b_out), repr(line))
        total_in = sum(t[3] for t in TENSORS) / 1e6
        total_out = sum(t[4] for t in TENSORS) / 1e6
        want = "quantize: 2 tensors quantized (0 with a fallback type), 2 kept; %.3f MB -> %.3f MB" % (total_in, total_out)
        check(lines[-1:] == [want], "the totals line", repr(lines[-1:]))

        for q in ("--quiet", "-q"):
            rc, out, err = run(exe, [q, model, out2, "q8_0"])
            check(rc == 0 and out == b"" and err == "", "%s: status 0, nothing on stdout or stderr" % q, err)
            with open(out1, "rb") as a, open(out2, "rb") as b:
                check(a.read() == b.read(), "%s: the same output file" % q)
            os.remove(out2)
        # --quiet does not silence errors
        rc, out, err = run(exe, ["--quiet", os.path.join(tmp, "missing.gguf"), out2, "q8_0"])
        check(rc == 1 and "missing.gguf" in err, "--quiet: an error is still reported", err)

    return scratch("tessera-quantize-progress.", body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
