#!/usr/bin/env python3
"""ODR check for the per-arch kernel units.

usage: check_odr.py [--sanitized=KIND] BINARY UNIT_LIB...

1. Each wide unit (libtessera_unit_<arch>.a) may define, with external or weak
   linkage, only functions tagged with its own arch (tessera::simd::<arch> or the
   matching xsimd arch). An untagged inline function compiled there with wide flags
   could be picked by the linker for everyone: that is the leak this test forbids.
2. In the linked BINARY, no function outside the arch-tagged instantiations may
   contain a VEX/EVEX instruction, a YMM/ZMM/mask register, or an SSE4 instruction
   (x86); on AArch64, an SVE register or a dot-product, matrix-multiply or BF16
   instruction. There every level shares xsimd's neon64 arch, so only a tessera tag
   (simd::dotprod, ...) makes such code legitimate, not the xsimd one.
The family comes from the binary's ELF header; a cross build's binutils
(aarch64-linux-gnu-nm / -objdump) are used when they are on PATH.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

def wide_tags():
    """arch -> the strings that tag its symbols, from the arch list in simd/arch.hpp, read by
    the same parser the build uses (meson/archs.py)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    spec = importlib.util.spec_from_file_location("tessera_archs", os.path.join(root, "meson", "archs.py"))
    archs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(archs)
    tags = {}
    for name, _, _, xsimd_arch in archs.archs(os.path.join(root, "include", "tessera", "simd", "arch.hpp")):
        if xsimd_arch:  # xsimd::fma3<xsimd::avx2> -> xsimd::avx2
            tags[name] = ["simd::" + name, re.findall(r"xsimd::\w+", xsimd_arch)[-1]]
    return tags


WIDE_TAGS = wide_tags()
ALL_TAGS = sorted({t for tags in WIDE_TAGS.values() for t in tags} | {"xsimd::avx512", "xsimd::fma3<xsimd::avx"})
SSE4 = {"pshufb", "pblendvb", "blendvps", "blendvpd", "ptest", "pmulld", "pminsd", "pmaxsd", "pminud", "pmaxud",
        "pcmpeqq", "pcmpgtq", "packusdw", "roundps", "roundss", "roundsd", "dpps", "pextrd", "pinsrd", "pextrq",
        "pinsrq", "insertps", "popcnt", "crc32", "lzcnt", "tzcnt", "pmovzxwd", "pmovzxbw", "pmovsxbw", "pmovsxwd",
        "pmovzxbd", "pmovsxbd", "palignr", "pabsd", "pabsw", "pabsb", "phaddd", "pmaddubsw"}


# AArch64 instructions beyond the Advanced SIMD baseline (the SVE ones are found by their
# z / p register operands).
ARM_EXT = {"sdot", "udot", "usdot", "sudot", "smmla", "ummla", "usmmla", "bfdot", "bfmmla", "bfmlalb", "bfmlalt",
           "bfcvt", "bfcvtn", "bfcvtn2"}
# xsimd's neon wrappers of one reinterpret intrinsic each (a register move whatever the
# flags): untagged inline functions that every AArch64 unit emits identically.
ARM_UNTAGGED_OK = ("xsimd::kernel::wrap::",)


def elf_family(path):
    with open(path, "rb") as f:
        head = f.read(20)
    return "arm" if head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183 else "x86"


def tool(name, family):
    cross = "aarch64-linux-gnu-" + name
    return cross if family == "arm" and shutil.which(cross) else name


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def check_units(libs, family):
    bad = []
    for lib in libs:
        m = re.search(r"tessera_unit_([a-z0-9_]+)\.a$", lib)
        if not m:
            continue
        arch = m.group(1)
        if arch == "scalar":
            continue
        tags = WIDE_TAGS[arch]
        n = 0
        for line in run(tool("nm", family), "-C", "--defined-only", lib).splitlines():
            parts = line.split(" ", 2)
            if len(parts) < 3 or parts[1] not in "TWi":
                continue  # local symbols cannot leak; data (V, u, D, R, B: constant tables the
                # scalar bodies index) is the same bytes whatever the flags, only code can
            if parts[2].startswith("DW.ref."):
                continue  # a data pointer to the C++ personality routine, not code
            n += 1
            if family == "arm" and parts[2].startswith(ARM_UNTAGGED_OK):
                continue
            if not any(t in parts[2] for t in tags):
                bad.append(f"{arch} unit defines untagged symbol: {parts[2]}")
        print(f"{arch}: {n} exported symbols, all tagged" if not bad else f"{arch}: checked {n} symbols")
    return bad


def check_binary(binary, family):
    bad = []
    func = None
    wide_ok = False
    funcs = 0
    arm_tags = ["simd::" + a for a in WIDE_TAGS if a != "neon"]
    for line in run(tool("objdump", family), "-d", "-C", "--no-show-raw-insn", binary).splitlines():
        h = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if h:
            func = h.group(1)
            wide_ok = any(t in func for t in (arm_tags if family == "arm" else ALL_TAGS))
            funcs += 1
            continue
        if func is None or wide_ok:
            continue
        ins = re.match(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$", line)
        if not ins:
            continue
        mnem, ops = ins.group(1), ins.group(2)
        if family == "arm":
            if mnem in ARM_EXT or re.search(r"\b[zp]\d+(\.[bhsdq])?\b", ops.split("<")[0]):
                bad.append(f"untagged function {func} uses {mnem} {ops}")
            continue
        wide = ("%ymm" in ops or "%zmm" in ops or re.search(r"%k[0-7]\b", ops)
                or (mnem.startswith("v") and mnem not in ("verr", "verw"))
                or mnem in SSE4)
        if wide:
            bad.append(f"untagged function {func} uses {mnem} {ops}")
    print(f"binary: {funcs} functions scanned")
    return bad


def main():
    args = sys.argv[1:]
    sanitized = [a for a in args if a.startswith("--sanitized=")]
    if sanitized:
        print(f"skipped: built with -fsanitize={sanitized[0].split('=', 1)[1]}; instrumentation changes what is "
              "inlined (xsimd's narrower helpers stay out of line in wide units) and clang's -fsanitize=function "
              "puts data in function prologues. The unsanitized builds run this check.")
        return 77
    binary, libs = args[0], args[1:]
    family = elf_family(binary)
    problems = check_units(libs, family) + check_binary(binary, family)
    for p in problems[:50]:
        print("LEAK:", p)
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    print("no wide code outside arch-tagged instantiations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
