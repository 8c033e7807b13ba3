#!/bin/sh
# Test for gguf_info: a valid file prints its header, keys and tensor table; a broken
# file exits 1 with the reader's error on stderr; bad usage exits 2.
#   check_gguf_info.sh <gguf_info> <gguf_fuzz_seeds>
set -eu
info=$1
seeds=$2
# A cross build runs its programs through the emulator meson names (e.g. qemu-aarch64).
wrap=${MESON_EXE_WRAPPER:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/tessera-gguf-info.XXXXXX")
trap 'rm -rf "$dir"' EXIT
$wrap "$seeds" "$dir" >/dev/null
fail() { echo "check_gguf_info: $*" >&2; exit 1; }

out=$($wrap "$info" "$dir/tensors-align64.gguf")
echo "$out" | grep -q '^\* GGUF version 3, little-endian, alignment 64' || fail "header line missing"
echo "$out" | grep -q "general.architecture = 'llama'" || fail "string key missing"
echo "$out" | grep -q '^\* Dumping 5 tensor(s)' || fail "tensor count missing"
echo "$out" | grep -Eq '^ +3: +64 \| +32, +2, +1, +1 \| Q4_0 +\| t2$' || fail "q4_0 tensor row wrong"

out=$($wrap "$info" --max-array 2 "$dir/kv-all-types.gguf")
echo "$out" | grep -q 'a.u32 = \[1, 2, ...\]' || fail "array not abbreviated"
echo "$out" | grep -Eq '\[\[INT16\]\] +\| +2 \| a.nested = \[\[5, 6\], \[5, 6\]\]$' || fail "nested array wrong"
echo "$out" | grep -q "a.str = \['a', 'bc', ...\]" || fail "string array wrong"

set +e
$wrap "$info" "$dir/bad-offset.gguf" >"$dir/out" 2>"$dir/err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "bad file: exit $rc, expected 1"
[ ! -s "$dir/out" ] || fail "bad file: something printed on stdout"
grep -q "^gguf_info: gguf file '.*bad-offset.gguf': offset [0-9]*: tensor 'b' has data offset 8, not a multiple of the alignment 32" "$dir/err" \
    || fail "bad file: unexpected error: $(cat "$dir/err")"

set +e
$wrap "$info" "$dir/does-not-exist.gguf" 2>"$dir/err"; rc=$?
$wrap "$info" 2>/dev/null; rc2=$?
set -e
[ "$rc" -eq 1 ] || fail "missing file: exit $rc"
grep -q "cannot open: No such file or directory" "$dir/err" || fail "missing file: $(cat "$dir/err")"
[ "$rc2" -eq 2 ] || fail "no argument: exit $rc2, expected 2"
echo "check_gguf_info: ok"
