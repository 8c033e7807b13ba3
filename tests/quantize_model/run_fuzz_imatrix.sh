#!/bin/sh
# Runs the legacy imatrix (.dat) parser fuzzer (tests/quantize_model/fuzz_imatrix.cpp) for
# a bounded time on a fresh seed corpus.
#   usage: tests/quantize_model/run_fuzz_imatrix.sh <build-dir> [seconds=30] [corpus-dir]
# The build dir must be configured with clang and -Dfuzz=true (CXX=clang++ meson setup
# build-fuzz -Dfuzz=true; ninja -C build-fuzz tests/quantize_model/fuzz_imatrix). The seeds
# (small .dat files with and without the dataset trailer) are written by python3 into a
# temporary folder. Exit status (tests/fuzz/libfuzzer.sh): 0 when no crash was found.
set -eu
build=${1:?usage: run_fuzz_imatrix.sh <build-dir> [seconds] [corpus-dir]}
secs=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$build/tests/quantize_model/fuzz_imatrix
if [ ! -x "$fuzzer" ]; then
    echo "run_fuzz_imatrix.sh: $fuzzer missing; configure with CXX=clang++ meson setup <dir> -Dfuzz=true and build it" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-imatrix-fuzz.XXXXXX")
corpus=${3:-$work/corpus}
mkdir -p "$corpus"
python3 - "$corpus" <<'PY'
import struct, sys, os
def dat(entries, ncall, trailer):
    b = struct.pack("<i", len(entries))
    for name, vals in entries:
        n = name.encode()
        b += struct.pack("<i", len(n)) + n + struct.pack("<ii", ncall, len(vals)) + struct.pack("<%df" % len(vals), *vals)
    if trailer:
        d = b"imatrix-text.txt"
        b += struct.pack("<ii", 11, len(d)) + d
    return b
e1 = [("blk.0.attn_q.weight", [1.0, 2.0, 3.0, 4.0]), ("blk.0.ffn_up.weight", [0.5, 0.25])]
for i, (entries, ncall, trailer) in enumerate([(e1, 4, True), (e1, 0, False), ([("x", [1.0])], 1, True), ([], 0, False)]):
    with open(os.path.join(sys.argv[1], "seed%d.dat" % i), "wb") as f:
        f.write(dat(entries, ncall, trailer))
PY
"$here/../fuzz/libfuzzer.sh" run_fuzz_imatrix.sh "$fuzzer" "$secs" "$corpus" "$work"
[ -n "${3:-}" ] || rm -rf "$work"
