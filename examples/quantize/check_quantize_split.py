#!/usr/bin/env python3
"""quantize on a model in parts, COPY, --keep-split and --prune-layers, on GGUF files this
script writes (a 3-layer model whole, and the same in two parts as gguf-split writes it).

usage: check_quantize_split.py QUANTIZE

Checks: the parts (named by the first) merge into the file the whole model gives; with
--keep-split the output is OUT-00001-of-00002.gguf and OUT-00002-of-00002.gguf, each with the
tensor names of its input part and split.no / split.count / split.tensors.count, and no
temporary left; COPY keeps every tensor's bytes; --prune-layers 1 drops blk.1, renames blk.2
to blk.1 and sets llama.block_count to 2; and the usage errors (a bad layer list, COPY with a
type option, a later part given first). Exit status 0 when all pass.
"""
import os
import struct
import sys

from quantize_checks import check, gguf_string, run, scratch

TENSORS = [("token_embd.weight", [64, 8])]
for _l in range(3):
    TENSORS += [("blk.%d.attn_norm.weight" % _l, [64]), ("blk.%d.attn_q.weight" % _l, [64, 4]),
                ("blk.%d.ffn_down.weight" % _l, [64, 4])]
TENSORS += [("output_norm.weight", [64]), ("output.weight", [64, 8])]


def tensor_data(i, ne):
    n = 1
    for x in ne:
        n *= x
    return struct.pack("<%df" % n, *[(((i * 31 + j) * 7) % 13 - 6) / 4 for j in range(n)])


def write_gguf(path, kv, tensors):
    """kv: (key, gguf type, payload bytes); tensors: (index into TENSORS)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, t, payload in kv:
        head += gguf_string(k) + struct.pack("<I", t) + payload
    data = b""
    for i in tensors:
        name, ne = TENSORS[i]
        data += b"\0" * (-len(data) % 32)
        head += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        head += struct.pack("<IQ", 0, len(data))
        data += tensor_data(i, ne)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head + data)


MODEL_KV = [("general.architecture", 8, gguf_string("llama")), ("llama.block_count", 4, struct.pack("<I", 3))]


def split_kv(no, count):
    return [("split.no", 2, struct.pack("<H", no)), ("split.count", 2, struct.pack("<H", count)),
            ("split.tensors.count", 5, struct.pack("<i", len(TENSORS)))]


def read_gguf(path):
    """(keys -> (type, raw value bytes) in order, [(name, data bytes)])."""
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF"
    _, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    off = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(o):
        n, = struct.unpack_from("<Q", b, o)
        return b[o + 8:o + 8 + n].decode(), o + 8 + n
    kv = {}
    for _ in range(n_kv):
        k, off = string(off)
        t, = struct.unpack_from("<I", b, off)
        off += 4
        start = off
        if t == 8:
            _, off = string(off)
        elif t == 9:
            et, n = struct.unpack_from("<IQ", b, off)
            off += 12
            for _ in range(n):
                if et == 8:
                    _, off = string(off)
                else:
                    off += sizes[et]
        else:
            off += sizes[t]
        kv[k] = (t, b[start:off])
    infos = []
    for _ in range(n_t):
        name, off = string(off)
        nd, = struct.unpack_from("<I", b, off)
        ne = struct.unpack_from("<%dQ" % nd, b, off + 4)
        t, o = struct.unpack_from("<IQ", b, off + 4 + 8 * nd)
        off += 4 + 8 * nd + 12
        infos.append((name, t, ne, o))
    align = 32
    if "general.alignment" in kv:
        align, = struct.unpack("<I", kv["general.alignment"][1])
    base = off + (-off % align)
    tensors = []
    for name, t, ne, o in infos:
        n = 1
        for x in ne:
            n *= x
        size = n * 4 if t == 0 else None
        tensors.append((name, b[base + o:base + o + size] if size else None))
    return kv, tensors


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    exe = os.path.abspath(argv[0])
    def body(tmp):
        n = len(TENSORS)
        write_gguf(os.path.join(tmp, "whole.gguf"), MODEL_KV, range(n))
        write_gguf(os.path.join(tmp, "m-00001-of-00002.gguf"), MODEL_KV + split_kv(0, 2), range(0, 5))
        write_gguf(os.path.join(tmp, "m-00002-of-00002.gguf"), split_kv(1, 2), range(5, n))

        rc, _, err = run(exe, ["-q", "whole.gguf", "a.gguf", "Q8_0"], tmp)
        check(rc == 0, "Q8_0 of the whole model", err)
        rc, _, err = run(exe, ["-q", "m-00001-of-00002.gguf", "b.gguf", "Q8_0"], tmp)
        check(rc == 0 and open(os.path.join(tmp, "a.gguf"), "rb").read() == open(os.path.join(tmp, "b.gguf"), "rb").read(),
              "Q8_0 of the two parts = Q8_0 of the whole model, byte for byte", err)

        rc, _, err = run(exe, ["--keep-split", "m-00001-of-00002.gguf", "c.gguf", "Q8_0"], tmp)
        parts = [os.path.join(tmp, "c-0000%d-of-00002.gguf" % i) for i in (1, 2)]
        check(rc == 0 and all(os.path.exists(p) for p in parts) and "quantize: wrote c-00002-of-00002.gguf\n" in err,
              "--keep-split writes c-00001-of-00002.gguf and c-00002-of-00002.gguf", err[-300:])
        check(sorted(os.listdir(tmp)) == sorted(["whole.gguf", "m-00001-of-00002.gguf", "m-00002-of-00002.gguf", "a.gguf",
                                                 "b.gguf"] + [os.path.basename(p) for p in parts]),
              "--keep-split: no temporary file left", str(os.listdir(tmp)))
        if all(os.path.exists(p) for p in parts):
            for i, p in enumerate(parts):
                kv, ts = read_gguf(p)
                want = [t[0] for t in TENSORS[0:5]] if i == 0 else [t[0] for t in TENSORS[5:]]
                check([t[0] for t in ts] == want, "part %d holds its input part's tensors, in order" % (i + 1), str([t[0] for t in ts]))
                check(kv.get("split.no") == (2, struct.pack("<H", i)) and kv.get("split.count") == (2, struct.pack("<H", 2)) and
                      kv.get("split.tensors.count") == (5, struct.pack("<i", n)),
                      "part %d: split.no = %d, split.count = 2, split.tensors.count = %d" % (i + 1, i, n))
                check((i == 0) == ("general.architecture" in kv), "part %d: the model's keys only in the first" % (i + 1))

        rc, _, err = run(exe, ["-q", "whole.gguf", "copy.gguf", "COPY"], tmp)
        if rc == 0:
            kv, ts = read_gguf(os.path.join(tmp, "copy.gguf"))
            orig = {name: tensor_data(i, ne) for i, (name, ne) in enumerate(TENSORS)}
            check(all(d == orig[name] for name, d in ts) and len(ts) == n, "COPY: every tensor's bytes as they were")
            check(kv.get("general.file_type") == (4, struct.pack("<I", 1024)),
                  "COPY: general.file_type = ALL_F32 (0) + 1024, llama.cpp's guess", str(kv.get("general.file_type")))
        else:
            check(False, "COPY runs", err)

        rc, _, err = run(exe, ["--prune-layers", "1", "whole.gguf", "pruned.gguf", "copy"], tmp)
        if rc == 0:
            kv, ts = read_gguf(os.path.join(tmp, "pruned.gguf"))
            d = dict(ts)
            orig = {name: tensor_data(i, ne) for i, (name, ne) in enumerate(TENSORS)}
            check(len(ts) == n - 3 and "blk.2.attn_q.weight" not in d and d.get("blk.1.attn_q.weight") == orig["blk.2.attn_q.weight"]
                  and d.get("blk.0.ffn_down.weight") == orig["blk.0.ffn_down.weight"],
                  "--prune-layers 1: blk.1 left out, blk.2 is now blk.1")
            check(kv.get("llama.block_count") == (4, struct.pack("<I", 2)), "--prune-layers 1: llama.block_count = 2")
            check("3 pruned" in err, "--prune-layers 1: the totals say 3 tensors were pruned", err[-200:])
        else:
            check(False, "--prune-layers 1 COPY runs", err)

        for args, status, msg in (
                (["--prune-layers", "1,x", "whole.gguf", "bad.gguf", "Q8_0"], 2, "--prune-layers"),
                (["--prune-layers", "-1", "whole.gguf", "bad.gguf", "Q8_0"], 2, "--prune-layers"),
                (["--prune-layers", "3", "whole.gguf", "bad.gguf", "Q8_0"], 1, "layer 3 is not a layer of the model (llama.block_count = 3)"),
                (["--pure", "whole.gguf", "bad.gguf", "COPY"], 2, "COPY writes every tensor as it is"),
                (["m-00002-of-00002.gguf", "bad.gguf", "Q8_0"], 1, "is part 2 of 2: open the first part")):
            rc, _, err = run(exe, args, tmp)
            check(rc == status and msg in err and not os.path.exists(os.path.join(tmp, "bad.gguf")),
                  "refused (%d): %s" % (status, " ".join(args)), err)

    return scratch("tessera-quantize-split.", body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
