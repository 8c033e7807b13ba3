#!/bin/sh
# Runs one libFuzzer target for a bounded time on a prepared corpus; the per-target
# scripts (tests/gguf/run_fuzz.sh, tests/opt/run_fuzz_idx.sh, tests/models/run_fuzz_model.sh,
# tests/text/run_fuzz_vocab.sh) write their seeds and call this.
#   usage: tests/fuzz/libfuzzer.sh <label> <fuzzer> <seconds> <corpus-dir> <work-dir> [max_len=65536] [malloc_limit_mb=64]
# A single allocation over malloc_limit_mb counts as a crash (an allocation driven by a
# hostile count), as does a run over 10 s on one input. libFuzzer's log is in
# <work-dir>/fuzz.log, crash inputs in <work-dir>/artifacts/.
# Exit status: 0 when no crash was found; libFuzzer's status otherwise.
set -eu
label=$1 fuzzer=$2 secs=$3 corpus=$4 work=$5
max_len=${6:-65536} malloc_mb=${7:-64}
mkdir -p "$work/artifacts"
echo "$label: $(ls "$corpus" | wc -l) seeds, ${secs}s, work folder $work"
set +e
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
"$fuzzer" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb="$malloc_mb" \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$corpus" 2>"$work/fuzz.log"
rc=$?
set -e
tail -n 25 "$work/fuzz.log"
if [ "$rc" -ne 0 ]; then
    echo "$label: the fuzzer failed (status $rc); crash inputs in $work/artifacts:" >&2
    ls -l "$work/artifacts" >&2
    exit "$rc"
fi
echo "$label: no crash in ${secs}s"
