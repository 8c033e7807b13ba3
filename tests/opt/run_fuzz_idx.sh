#!/bin/sh
# Runs the IDX parser + gunzip fuzzer (tests/opt/fuzz_idx.cpp) for a bounded time on a
# fresh seed corpus.
#   usage: tests/opt/run_fuzz_idx.sh <build-dir> [seconds=60] [corpus-dir]
# The build dir must be configured with clang and -Dfuzz=true:
#   CXX=clang++ meson setup build-fuzz -Dfuzz=true
#   ninja -C build-fuzz tests/opt/fuzz_idx
# The seeds are written here into a temporary folder (never the repo): a small valid IDX
# file of each type code, one 1x28x28 image file, gzips of some of them, and, when
# Debian's dataset-fashion-mnist is installed, the Fashion-MNIST test labels (gzipped
# and not) and a 4 KiB prefix of the test images' .gz.
# A single allocation over 64 MiB counts as a crash (inputs are at most 64 KiB and the
# fuzzer inflates to at most 8 MiB, so that would be an allocation driven by a hostile
# count).
# Exit status (tests/fuzz/libfuzzer.sh): 0 when no crash was found; libFuzzer's status otherwise, with the crash
# input left in the work folder it prints.
set -eu
build=${1:?usage: run_fuzz_idx.sh <build-dir> [seconds] [corpus-dir]}
secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$build/tests/opt/fuzz_idx
if [ ! -x "$fuzzer" ]; then
    echo "run_fuzz_idx.sh: $fuzzer missing; configure with CXX=clang++ meson setup <dir> -Dfuzz=true and build it" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-idx-fuzz.XXXXXX")
corpus=${3:-$work/corpus}
mkdir -p "$corpus"

# Valid IDX files (octal escapes: POSIX printf): magic 0 0 <type> <n dims>, big-endian
# u32 dims, big-endian elements.
printf '\000\000\010\002\000\000\000\002\000\000\000\003\000\001\177\200\376\377' >"$corpus/u8-2x3"
printf '\000\000\011\001\000\000\000\004\000\177\200\377' >"$corpus/i8-4"
printf '\000\000\013\001\000\000\000\002\000\001\200\000' >"$corpus/i16-2"
printf '\000\000\014\002\000\000\000\001\000\000\000\002\000\000\000\001\377\377\377\377' >"$corpus/i32-1x2"
printf '\000\000\015\001\000\000\000\002\077\200\000\000\177\300\000\000' >"$corpus/f32-2"
printf '\000\000\016\001\000\000\000\001\077\360\000\000\000\000\000\000' >"$corpus/f64-1"
printf '\000\000\010\001\000\000\000\003\000\011\005' >"$corpus/labels-3"
{ printf '\000\000\010\003\000\000\000\001\000\000\000\034\000\000\000\034'; head -c 784 /dev/zero | tr '\000' '\200'; } >"$corpus/image-1x28x28"
for f in u8-2x3 f64-1 labels-3 image-1x28x28; do
    gzip -9 -n -c "$corpus/$f" >"$corpus/$f.gz"
done
data=/usr/share/datasets/fashion-mnist
if [ -f "$data/t10k-labels-idx1-ubyte.gz" ]; then
    cp "$data/t10k-labels-idx1-ubyte.gz" "$corpus/fashion-t10k-labels.gz"
    gzip -d -c "$data/t10k-labels-idx1-ubyte.gz" >"$corpus/fashion-t10k-labels"
fi
if [ -f "$data/t10k-images-idx3-ubyte.gz" ]; then
    head -c 4096 "$data/t10k-images-idx3-ubyte.gz" >"$corpus/fashion-t10k-images-prefix.gz"
fi
"$here/../fuzz/libfuzzer.sh" run_fuzz_idx.sh "$fuzzer" "$secs" "$corpus" "$work"
[ -n "${3:-}" ] || rm -rf "$work"
