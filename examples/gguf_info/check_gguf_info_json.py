#!/usr/bin/env python3
"""gguf_info --json against an independent GGUF reader written here.

usage: check_gguf_info_json.py GGUF_INFO [SHARED_DATA_DIR]

1. Writes a GGUF file with every value type, nested arrays, strings that need escaping
   (quotes, backslashes, control bytes, non-ASCII, bytes that are not UTF-8, an empty
   string, a key with a quote in it), floats that are not finite, and tensors of several
   types; gguf_info --json must be valid JSON (Python's json, which rejects NaN/Infinity
   here) that says exactly what the file holds, read by this script's own parser.
2. --max-array / --max-string cut arrays and strings in JSON only when given, and mark
   the entries they cut "truncated"; --no-tensors drops the tensor table.
3. The same comparison on every GGUF in SHARED_DATA_DIR's models*/ and vocab/ folders.
4. A broken file: status 1, nothing on stdout.
Exit status 0 when all checks pass, 1 otherwise; part 3 is skipped (with a line saying
so) when the shared data is absent. A cross build's program runs through
MESON_EXE_WRAPPER.
"""
import glob
import json
import math
import os
import shlex
import struct
import subprocess
import sys
import tempfile

WRAPPER = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
failures = []

# GGUF value types: id -> (gguf-py name, struct format or None)
VTYPES = {0: ("UINT8", "<B"), 1: ("INT8", "<b"), 2: ("UINT16", "<H"), 3: ("INT16", "<h"), 4: ("UINT32", "<I"),
          5: ("INT32", "<i"), 6: ("FLOAT32", "<f"), 7: ("BOOL", "<?"), 8: ("STRING", None), 9: ("ARRAY", None),
          10: ("UINT64", "<Q"), 11: ("INT64", "<q"), 12: ("FLOAT64", "<d")}
# ggml tensor types: id -> (name, block size, block bytes) for the ones the data uses
TTYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
          7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
          12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 16: ("IQ2_XXS", 256, 66),
          17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18),
          21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 29: ("IQ1_M", 256, 56),
          30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17)}


def check(cond, what, detail=""):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what + (("\n     " + detail) if detail else ""))
        failures.append(what)


# --- an independent reader ------------------------------------------------------------

class Reader:
    def __init__(self, blob):
        self.b, self.p = blob, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)[0]
        self.p += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.b[self.p:self.p + n]
        self.p += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(VTYPES[t][1])


def parse_gguf(path):
    with open(path, "rb") as f:
        blob = f.read()
    r = Reader(blob)
    assert blob[:4] == b"GGUF"
    r.p = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    kv = []
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        kv.append((key, t, r.value(t)))
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<Q") for _ in range(nd)]
        tensors.append((name, ne, r.take("<I"), r.take("<Q")))
    align = 32
    for key, t, v in kv:
        if key == b"general.alignment" and t == 4:
            align = v
    data_offset = (r.p + align - 1) // align * align
    return {"size": len(blob), "version": version, "alignment": align, "data_offset": data_offset, "kv": kv,
            "tensors": tensors}


# --- what the JSON should say ----------------------------------------------------------

def text(b):
    """A GGUF string as gguf_info --json promises it: UTF-8, bad bytes as U+FFFD."""
    return b.decode("utf-8", "replace")


def same_scalar(t, want, got):
    name = VTYPES[t][0]
    if name in ("FLOAT32", "FLOAT64"):
        if math.isnan(want):
            return got == "nan"
        if math.isinf(want):
            return got == ("inf" if want > 0 else "-inf")
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return False
        if name == "FLOAT32":  # the shortest decimal that reads back as the same f32
            return struct.pack("<f", float(got)) == struct.pack("<f", want)
        return float(got) == want
    if name == "BOOL":
        return got is want
    if name == "STRING":
        return got == text(want)
    return type(got) is int and got == want


def same_value(t, want, got):
    if t != 9:
        return same_scalar(t, want, got)
    et, xs = want
    return isinstance(got, list) and len(got) == len(xs) and all(same_value(et, w, g) for w, g in zip(xs, got))


def compare(path, doc, ref, tensors=True):
    """Every field of doc against the reference parse; returns a list of differences."""
    bad = []
    for k, v in (("file_size", ref["size"]), ("version", ref["version"]), ("alignment", ref["alignment"]),
                 ("data_offset", ref["data_offset"]), ("tensor_count", len(ref["tensors"])), ("kv_count", len(ref["kv"]))):
        if doc.get(k) != v:
            bad.append("%s: %r, expected %r" % (k, doc.get(k), v))
    if doc.get("file") != path:
        bad.append("file: %r" % doc.get("file"))
    meta = doc.get("metadata", {})
    if list(meta.keys()) != [text(k) for k, _, _ in ref["kv"]]:
        bad.append("metadata keys or their order differ")
    for key, t, v in ref["kv"]:
        e = meta.get(text(key))
        if e is None:
            continue
        if e.get("type") != VTYPES[t][0]:
            bad.append("%r: type %r, expected %r" % (key, e.get("type"), VTYPES[t][0]))
        if t == 9 and (e.get("element_type") != VTYPES[v[0]][0] or e.get("count") != len(v[1])):
            bad.append("%r: element_type/count %r/%r" % (key, e.get("element_type"), e.get("count")))
        if not same_value(t, v, e.get("value")) or "truncated" in e:
            bad.append("%r: value %.200r differs" % (key, e.get("value")))
    if not tensors:
        if "tensors" in doc or "tensor_data_bytes" in doc:
            bad.append("--no-tensors: a tensor table is there")
        return bad
    got = doc.get("tensors", [])
    if len(got) != len(ref["tensors"]):
        bad.append("%d tensors, expected %d" % (len(got), len(ref["tensors"])))
    total = 0
    for g, (name, ne, t, off) in zip(got, ref["tensors"]):
        n = math.prod(ne)
        want = {"name": text(name), "shape": ne, "n_elements": n, "offset": off}
        if t in TTYPES:
            tn, bs, bb = TTYPES[t]
            want["type"] = tn
            want["size"] = n // bs * bb
        for k, v in want.items():
            if g.get(k) != v:
                bad.append("tensor %r: %s %r, expected %r" % (name, k, g.get(k), v))
        total += g.get("size", 0)
    if doc.get("tensor_data_bytes") != total:
        bad.append("tensor_data_bytes %r, expected %r" % (doc.get("tensor_data_bytes"), total))
    return bad


def run_json(info, args):
    p = subprocess.run(WRAPPER + [info] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    doc, err = None, ""
    try:
        # strict: NaN / Infinity literals are not JSON
        doc = json.loads(p.stdout.decode("utf-8"), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (ValueError, UnicodeDecodeError) as e:
        err = str(e)
    return p.returncode, doc, err + p.stderr.decode("utf-8", "replace")


# --- a file with everything ------------------------------------------------------------

def gguf_string(b):
    return struct.pack("<Q", len(b)) + b


def encode_value(t, v):
    if t == 8:
        return gguf_string(v)
    if t == 9:
        et, xs = v
        return struct.pack("<IQ", et, len(xs)) + b"".join(encode_value(et, x) for x in xs)
    return struct.pack(VTYPES[t][1], v)


def write_gguf(path, kv, tensors, align=32):
    """kv: [(key bytes, type, value)]; tensors: [(name bytes, ne, type id, data bytes)]."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, t, v in kv:
        head += gguf_string(k) + struct.pack("<I", t) + encode_value(t, v)
    data, offs = b"", []
    for _, _, _, d in tensors:
        data += b"\0" * (-len(data) % align)
        offs.append(len(data))
        data += d
    for (name, ne, t, _), off in zip(tensors, offs):
        head += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        head += struct.pack("<IQ", t, off)
    head += b"\0" * (-len(head) % align)
    with open(path, "wb") as f:
        f.write(head + data)


TRICKY = [b"plain", b"", b'say "hi"\\ back\\slash', b"tab\tnew\nline\rcr\x01\x1f\x7f", "caf\u00e9 \u2603 \U0001f600".encode(),
          b"bad \xff byte", b"cut \xe2\x82", b"surrogate \xed\xa0\x80 end", b"overlong \xc0\xaf", b"\xf4\x90\x80\x80 too big"]


def everything_kv():
    return [
        (b"general.architecture", 8, b"llama"),
        (b"t.u8", 0, 255), (b"t.i8", 1, -128), (b"t.u16", 2, 65535), (b"t.i16", 3, -32768),
        (b"t.u32", 4, 4294967295), (b"t.i32", 5, -2147483648), (b"t.u64", 10, 2**64 - 1), (b"t.i64", 11, -2**63),
        (b"t.f32", 6, struct.unpack("<f", struct.pack("<f", 0.1))[0]), (b"t.f32.tiny", 6, 1e-45),
        (b"t.f64", 12, 0.1), (b"t.f64.big", 12, -1.7976931348623157e308), (b"t.f64.negzero", 12, -0.0),
        (b"t.nan", 6, float("nan")), (b"t.inf", 12, float("inf")), (b"t.ninf", 6, float("-inf")),
        (b"t.true", 7, True), (b"t.false", 7, False),
        (b'key "with" \\ quote', 8, b"x"),
    ] + [(b"t.str.%d" % i, 8, s) for i, s in enumerate(TRICKY)] + [
        (b"a.str", 9, (8, TRICKY)),
        (b"a.u32", 9, (4, list(range(10)))),
        (b"a.f32", 9, (6, [1.5, float("nan"), float("-inf"), -2.25])),
        (b"a.bool", 9, (7, [True, False, True])),
        (b"a.i64", 9, (11, [-(2**63), 2**63 - 1])),
        (b"a.empty", 9, (5, [])),
        (b"a.nested", 9, (9, [(3, [5, 6, 7]), (3, []), (3, [-1])])),
        (b"a.nested.str", 9, (9, [(8, [b"a", b"b\"c"]), (8, [])])),
    ]


def everything_tensors():
    return [(b"a.f32", [4, 3], 0, struct.pack("<12f", *range(12))),
            (b"b.q8_0", [64, 2], 8, bytes(range(2 * 2 * 34 % 256)) + bytes(4 * 34 - 2 * 2 * 34 % 256)),
            (b"c \"odd\" name", [8], 1, bytes(16)),
            (b"d.4d", [2, 1, 3, 2], 0, bytes(4 * 12))]


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    info = argv[0]
    data = argv[1] if len(argv) > 1 else None
    tmp = tempfile.mkdtemp(prefix="tessera-gguf-json.")
    try:
        path = os.path.join(tmp, "everything.gguf")
        write_gguf(path, everything_kv(), everything_tensors())
        ref = parse_gguf(path)
        rc, doc, err = run_json(info, ["--json", path])
        check(rc == 0 and doc is not None, "everything.gguf: status 0, valid JSON", err)
        if doc is not None:
            bad = compare(path, doc, ref)
            check(not bad, "everything.gguf: every key, value and tensor as the file says", "; ".join(bad))
            m = doc["metadata"]
            # a few hand-written expectations, in case the reference and the program agree on a mistake
            check(m["t.nan"]["value"] == "nan" and m["t.inf"]["value"] == "inf" and m["t.ninf"]["value"] == "-inf",
                  "everything.gguf: non-finite floats as the strings nan, inf, -inf")
            check(m["t.str.6"]["value"] == "cut \ufffd" and m["t.str.5"]["value"] == "bad \ufffd byte" and
                  m["t.str.7"]["value"] == "surrogate \ufffd\ufffd\ufffd end" and m["t.str.8"]["value"] == "overlong \ufffd\ufffd",
                  "everything.gguf: bytes that are not UTF-8 become U+FFFD per maximal subpart",
                  repr([m["t.str.%d" % i]["value"] for i in (5, 6, 7, 8)]))
            check(m["t.f64.negzero"]["value"] == 0 and math.copysign(1, m["t.f64.negzero"]["value"]) < 0,
                  "everything.gguf: -0.0 keeps its sign", repr(m["t.f64.negzero"]))
            check(m["t.u64"]["value"] == 18446744073709551615 and m["a.i64"]["value"] == [-2**63, 2**63 - 1],
                  "everything.gguf: 64-bit integers exact")
            check(m["a.nested"] == {"type": "ARRAY", "element_type": "ARRAY", "count": 3, "value": [[5, 6, 7], [], [-1]]},
                  "everything.gguf: nested arrays", repr(m["a.nested"]))
            check(doc["tensors"][1] == {"name": "b.q8_0", "type": "Q8_0", "shape": [64, 2], "n_elements": 128,
                                        "offset": 64, "size": 136}, "everything.gguf: a q8_0 tensor row",
                  repr(doc["tensors"][1]))
        # the raw text: control bytes are escaped, so each entry is one line
        p = subprocess.run(WRAPPER + [info, "--json", path], stdout=subprocess.PIPE)
        check(all(c >= 0x20 or c == 0x0A for c in p.stdout), "everything.gguf: no raw control bytes in the output")

        rc, doc, err = run_json(info, ["--json", "--max-array", "2", "--max-string", "5", "--no-tensors", path])
        check(rc == 0 and doc is not None, "--max-array 2 --max-string 5 --no-tensors: valid JSON", err)
        if doc is not None:
            m = doc["metadata"]
            check("tensors" not in doc and "tensor_data_bytes" not in doc and doc["tensor_count"] == 4,
                  "--no-tensors: no tensor table, the count stays")
            check(m["a.u32"] == {"type": "ARRAY", "element_type": "UINT32", "count": 10, "value": [0, 1],
                                 "truncated": True}, "--max-array 2: two elements, count 10, truncated", repr(m["a.u32"]))
            check(m["a.bool"]["value"] == [True, False] and m["a.nested"]["value"] == [[5, 6], []],
                  "--max-array 2: every level cut", repr(m["a.nested"]))
            check(m["t.str.4"] == {"type": "STRING", "value": "caf\u00e9", "truncated": True},
                  "--max-string 5: whole characters within 5 bytes, truncated", repr(m["t.str.4"]))
            check(m["t.str.0"] == {"type": "STRING", "value": "plain"} and m["t.u8"] == {"type": "UINT8", "value": 255},
                  "--max-string 5: a 5-byte string is whole, not truncated")
            check(m["a.str"]["value"] == ["plain", ""] and m["a.str"].get("truncated") is True,
                  "--max-array 2 on a string array", repr(m["a.str"]))

        # a broken file
        broken = os.path.join(tmp, "broken.gguf")
        with open(path, "rb") as f:
            blob = f.read()
        with open(broken, "wb") as f:
            f.write(blob[:200])
        p = subprocess.run(WRAPPER + [info, "--json", broken], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(p.returncode == 1 and p.stdout == b"" and broken.encode() in p.stderr,
              "a truncated file: status 1, nothing on stdout, the error names it", p.stderr.decode("utf-8", "replace"))

        files = []
        if data and os.path.isdir(data):
            for sub in ("models", "models-quantized", "models-kquant", "vocab"):
                files += sorted(glob.glob(os.path.join(data, sub, "*.gguf")))
        if not files:
            print("skip (no %s): the shared data's GGUF files" % (data or "SHARED_DATA_DIR"))
        for f in files:
            rc, doc, err = run_json(info, ["--json", f])
            bad = ["status %s: %s" % (rc, err)] if rc != 0 or doc is None else compare(f, doc, parse_gguf(f))
            check(not bad, "%s: as the file says" % os.path.relpath(f, data), "; ".join(bad[:5]))
    finally:
        for root, dirs, fs in os.walk(tmp, topdown=False):
            for f in fs:
                os.remove(os.path.join(root, f))
            os.rmdir(root)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
