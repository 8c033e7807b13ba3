#!/bin/sh
# Runs the GGUF reader fuzzer for a bounded time on a fresh seed corpus.
#   usage: tests/gguf/run_fuzz.sh <build-dir> [seconds=60] [corpus-dir]
# The build dir must be configured with clang and -Dfuzz=true:
#   CXX=clang++ meson setup build-fuzz -Dfuzz=true
#   ninja -C build-fuzz tests/gguf/fuzz_gguf tests/gguf/gguf_fuzz_seeds
# The corpus is made of the seeds gguf_fuzz_seeds writes plus, when the shared test
# data is present (TESSERA_SHARED_DATA, else ../shared/data), its small GGUF files and
# 4 KiB prefixes of the larger ones, copied into a temporary folder (never the repo).
# A single allocation over 64 MiB counts as a crash (inputs are at most 64 KiB, so
# that would be an allocation driven by a hostile count).
# Exit status (tests/fuzz/libfuzzer.sh): 0 when no crash was found; libFuzzer's status otherwise, with the crash
# input left in the work folder it prints.
set -eu
build=${1:?usage: run_fuzz.sh <build-dir> [seconds] [corpus-dir]}
secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$build/tests/gguf/fuzz_gguf
seeds=$build/tests/gguf/gguf_fuzz_seeds
if [ ! -x "$fuzzer" ] || [ ! -x "$seeds" ]; then
    echo "run_fuzz.sh: $fuzzer or $seeds missing; configure with CXX=clang++ meson setup <dir> -Dfuzz=true and build them" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-gguf-fuzz.XXXXXX")
corpus=${3:-$work/corpus}
mkdir -p "$corpus"
"$seeds" "$corpus" >/dev/null
data=${TESSERA_SHARED_DATA:-$here/../../../shared/data}
if [ -d "$data" ]; then
    for f in "$data"/gguf/* "$data"/gguf-bad/*.bin; do
        [ -f "$f" ] && cp "$f" "$corpus/shared-$(basename "$f")"
    done
    for f in "$data"/vocab/*.gguf "$data"/models/*.gguf "$data"/models-quantized/*.gguf "$data"/gguf-bad/corrupt-*.gguf; do
        [ -f "$f" ] && head -c 4096 "$f" > "$corpus/prefix-$(basename "$f")"
    done
else
    echo "run_fuzz.sh: no shared data at $data; fuzzing from the generated seeds only" >&2
fi
"$here/../fuzz/libfuzzer.sh" run_fuzz.sh "$fuzzer" "$secs" "$corpus" "$work"
[ -n "${3:-}" ] || rm -rf "$work"
