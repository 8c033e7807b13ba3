#!/usr/bin/env bash
# Builds tests/consumer (which pulls tessera in as a Meson subproject) in a scratch
# folder and runs it. usage: run.sh <tessera source root>
set -euo pipefail
src="$1/tests/consumer"
build=$(mktemp -d /tmp/tessera-consumer.XXXXXX)
trap 'rm -rf "$build"' EXIT
meson setup "$build" "$src" >"$build.log" 2>&1 || { cat "$build.log"; rm -f "$build.log"; exit 1; }
rm -f "$build.log"
ninja -C "$build" consumer
"$build/consumer"
