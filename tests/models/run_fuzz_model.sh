#!/bin/sh
# Runs the model fuzzer (tests/models/fuzz_model.cpp: GGUF -> llama model -> one forward
# step with a tiny context) for a bounded time on a fresh seed corpus.
#   usage: tests/models/run_fuzz_model.sh <build-dir> [seconds=60] [corpus-dir]
# The build dir must be configured with clang and -Dfuzz=true:
#   CXX=clang++ meson setup build-fuzz -Dfuzz=true
#   ninja -C build-fuzz tests/models/fuzz_model tests/models/model_fuzz_seeds
# Seeds (in a temporary folder, never the repo): the tiny models model_fuzz_seeds
# writes, the regression inputs of tests/models/fuzz-regressions/, and, when the shared
# test data is present (TESSERA_SHARED_DATA, else ../shared/data), stories260K's
# 4 KiB prefix. Inputs up to 128 KiB; an allocation over 64 MiB counts as a crash.
# Exit status (tests/fuzz/libfuzzer.sh): 0 when no crash was found.
set -eu
build=${1:?usage: run_fuzz_model.sh <build-dir> [seconds] [corpus-dir]}
secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$build/tests/models/fuzz_model
seeds=$build/tests/models/model_fuzz_seeds
if [ ! -x "$fuzzer" ] || [ ! -x "$seeds" ]; then
    echo "run_fuzz_model.sh: $fuzzer or $seeds missing; configure with CXX=clang++ meson setup <dir> -Dfuzz=true and build them" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-model-fuzz.XXXXXX")
corpus=${3:-$work/corpus}
mkdir -p "$corpus"
"$seeds" "$corpus"
for f in "$here"/fuzz-regressions/*; do
    [ -f "$f" ] && cp "$f" "$corpus/regression-$(basename "$f")"
done
data=${TESSERA_SHARED_DATA:-$here/../../../shared/data}
[ -f "$data/models/stories260K.gguf" ] && head -c 4096 "$data/models/stories260K.gguf" >"$corpus/prefix-stories260K.gguf"
"$here/../fuzz/libfuzzer.sh" run_fuzz_model.sh "$fuzzer" "$secs" "$corpus" "$work" 131072
[ -n "${3:-}" ] || rm -rf "$work"
