#!/bin/sh
# Runs the vocabulary/tokenizer fuzzer for a bounded time on a fresh seed corpus.
#   usage: tests/text/run_fuzz_vocab.sh <build-dir> [seconds=60] [corpus-dir]
# The build dir must be configured with clang and -Dfuzz=true:
#   CXX=clang++ meson setup build-fuzz -Dfuzz=true
#   ninja -C build-fuzz tests/text/fuzz_vocab tests/text/make_vocab_fuzz_seeds
# The corpus is made of the seeds make_vocab_fuzz_seeds writes (small vocabularies of
# each type, hostile variants, and slices of the vocabularies of the shared test data
# when it is present: TESSERA_SHARED_DATA, else ../shared/data) plus the regression
# inputs of tests/text/fuzz-regressions, copied into a temporary folder (never the repo).
# Exit status (tests/fuzz/libfuzzer.sh): 0 when no crash was found; libFuzzer's status otherwise, with the crash
# input left in the work folder it prints.
set -eu
build=${1:?usage: run_fuzz_vocab.sh <build-dir> [seconds] [corpus-dir]}
secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$build/tests/text/fuzz_vocab
seeds=$build/tests/text/make_vocab_fuzz_seeds
if [ ! -x "$fuzzer" ] || [ ! -x "$seeds" ]; then
    echo "run_fuzz_vocab.sh: $fuzzer or $seeds missing; configure with CXX=clang++ meson setup <dir> -Dfuzz=true and build them" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-vocab-fuzz.XXXXXX")
corpus=${3:-$work/corpus}
mkdir -p "$corpus"
data=${TESSERA_SHARED_DATA:-$here/../../../shared/data}
set --
if [ -d "$data" ]; then
    for f in "$data"/vocab/*.gguf "$data"/vocab-extra/*.gguf; do
        [ -f "$f" ] && set -- "$@" "$f"
    done
else
    echo "run_fuzz_vocab.sh: no shared data at $data; fuzzing from the generated seeds only" >&2
fi
"$seeds" "$corpus" "$@" >/dev/null
for f in "$here"/fuzz-regressions/*; do
    [ -f "$f" ] && cp "$f" "$corpus/regression-$(basename "$f")"
done
"$here/../fuzz/libfuzzer.sh" run_fuzz_vocab.sh "$fuzzer" "$secs" "$corpus" "$work" 65536 256
[ -n "${3:-}" ] || rm -rf "$work"
