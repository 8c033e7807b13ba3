#!/bin/sh
# Runs the MPI graph decoder fuzzer (tests/backend/mpi/fuzz_graph_decode.cpp: decode,
# then compute what is accepted; or feed a worker_core commands) for a bounded time on a
# fresh seed corpus.
#   usage: tests/backend/mpi/run_fuzz_graph.sh <build-dir> [seconds=30] [corpus-dir]
# The build dir must be configured with clang and -Dfuzz=true:
#   CXX=clang++ meson setup build-fuzz -Dfuzz=true
#   ninja -C build-fuzz tests/backend/fuzz_graph_decode tests/backend/graph_fuzz_seeds
# Seeds (in a temporary folder, never the repo): what graph_fuzz_seeds writes and the
# inputs of tests/backend/mpi/fuzz-regressions/. An allocation over 64 MiB counts as a crash.
# Exit status (tests/fuzz/libfuzzer.sh): 0 when no crash was found.
set -eu
build=${1:?usage: run_fuzz_graph.sh <build-dir> [seconds] [corpus-dir]}
secs=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$build/tests/backend/fuzz_graph_decode
seeds=$build/tests/backend/graph_fuzz_seeds
if [ ! -x "$fuzzer" ] || [ ! -x "$seeds" ]; then
    echo "run_fuzz_graph.sh: $fuzzer or $seeds missing; configure with CXX=clang++ meson setup <dir> -Dfuzz=true and build them" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-graph-fuzz.XXXXXX")
corpus=${3:-$work/corpus}
mkdir -p "$corpus"
"$seeds" "$corpus"
for f in "$here"/fuzz-regressions/*; do
    [ -f "$f" ] && cp "$f" "$corpus/regression-$(basename "$f")"
done
"$here/../../fuzz/libfuzzer.sh" run_fuzz_graph.sh "$fuzzer" "$secs" "$corpus" "$work" 262144
[ -n "${3:-}" ] || rm -rf "$work"
