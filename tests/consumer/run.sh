#!/usr/bin/env bash
# Builds tests/consumer (which pulls tessera in as a Meson subproject) in a scratch
# folder and runs it: main.cpp's q4_0 mul_mat must pass, in run-time dispatch mode.
# usage: run.sh <tessera source root>
set -euo pipefail
src="$1/tests/consumer"
build=$(mktemp -d /tmp/tessera-consumer.XXXXXX)
trap 'rm -rf "$build"' EXIT
meson setup "$build" "$src" >"$build.log" 2>&1 || { cat "$build.log"; rm -f "$build.log"; exit 1; }
rm -f "$build.log"
ninja -C "$build" consumer
out=$("$build/consumer") || { echo "$out"; exit 1; }
echo "$out"
# the Meson dependency links the per-arch units: the program must dispatch at run time
echo "$out" | grep -qx 'mode: run-time dispatch' || { echo "FAIL: the subproject consumer is not in run-time dispatch mode"; exit 1; }
