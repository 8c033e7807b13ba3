#!/usr/bin/env bash
# The installed tessera, used as a program outside the tree would: installs the build
# into a scratch DESTDIR, builds main.cpp with plain `-O2 $(pkg-config --cflags --libs
# tessera)` against it (linked to the shared and to the static libtessera-kernels) and
# runs it: it must dispatch to the arch the in-tree build picks (ARCH_PROBE's report) and
# pass its q4_0 mul_mat check. Then main.cpp built by a plain include (-I only, no
# library) must say it runs in single-arch mode and pass the same check.
# usage: run.sh <meson build dir> <tessera source root> <arch_probe> [compiler...]
set -euo pipefail
build=$1 src=$2 probe=$3; shift 3
if [ $# -gt 0 ]; then cxx=("$@"); else cxx=("${CXX:-c++}"); fi
main="$src/tests/consumer/main.cpp"
work=$(mktemp -d /tmp/tessera-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
dest="$work/dest"
unset TESSERA_ARCH
case $probe in /*) ;; *) [ -x "$probe" ] || probe="$build/$probe" ;; esac  # meson may pass it relative to the build

fail() { echo "FAIL: $*"; exit 1; }

DESTDIR="$dest" meson install -C "$build" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "meson install into $dest"; }
pc=$(find "$dest" -name tessera.pc | head -1)
[ -n "$pc" ] || fail "meson install wrote no tessera.pc"
grep -q -- '-ltessera-kernels' "$pc" || fail "$pc has no -ltessera-kernels (a -Dmultiarch=false build?): $(cat "$pc")"
libdir=$(dirname "$(dirname "$pc")")
for f in libtessera-kernels.so libtessera-kernels.a cmake/tessera/tesseraConfig.cmake cmake/tessera/tesseraConfigVersion.cmake; do
    [ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
done

# The installed .pc names the real prefix; the sysroot puts its -I and -L under DESTDIR.
PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR="$dest"
cflags=$(pkg-config --cflags tessera) || fail "pkg-config --cflags tessera"
libs=$(pkg-config --libs tessera) || fail "pkg-config --libs tessera"
echo "pkg-config --cflags --libs tessera: $cflags $libs"

expected=$("$probe" | sed -n 's/^arch in use: //p')
[ -n "$expected" ] || fail "$probe printed no 'arch in use'"
echo "the in-tree build uses: $expected"

check() {  # <binary> <mode> <arch>: runs it, checks the mode, the arch in use and the mul_mat
    local bin=$1 mode=$2 arch=$3 out
    out=$("$bin" 2>&1) || { echo "$out"; fail "$bin exited with an error"; }
    echo "  ${out//$'\n'/$'\n'  }"
    echo "$out" | grep -qx "mode: $mode" || fail "$bin: not in mode '$mode'"
    echo "$out" | grep -qx "arch in use: $arch" || fail "$bin: arch in use is not $arch"
    [ "$(echo "$out" | grep -c ': ok (largest error')" -eq 2 ] || fail "$bin: the mul_mat checks did not both pass"
}

# $cflags / $libs are pkg-config's words, split as a shell command line would split them.
# shellcheck disable=SC2086
"${cxx[@]}" -O2 -c "$main" -o "$work/main.o" $cflags || fail "compiling main.cpp with pkg-config's flags"
# shellcheck disable=SC2086
"${cxx[@]}" -O2 "$work/main.o" -o "$work/consumer_shared" $libs || fail "linking with pkg-config's libs"
ldd "$work/consumer_shared" | grep -q 'libtessera-kernels\.so' || fail "consumer_shared does not load libtessera-kernels.so"
echo "--- pkg-config, libtessera-kernels.so"
LD_LIBRARY_PATH="$libdir" check "$work/consumer_shared" "run-time dispatch" "$expected"

# The static library: the same flags, -ltessera-kernels resolved to the .a.
# shellcheck disable=SC2086
"${cxx[@]}" -O2 "$work/main.o" -o "$work/consumer_static" ${libs/-ltessera-kernels/-Wl,-Bstatic -ltessera-kernels -Wl,-Bdynamic} ||
    fail "linking libtessera-kernels.a"
ldd "$work/consumer_static" | grep -q 'libtessera-kernels' && fail "consumer_static loads the shared library"
echo "--- pkg-config, libtessera-kernels.a"
check "$work/consumer_static" "run-time dispatch" "$expected"

# Plain include: the installed headers and nothing else, baseline flags.
incdir=$(dirname "$(find "$dest" -type d -path '*/include/tessera' | head -1)")
"${cxx[@]}" -O2 -std=c++20 -pthread -I"$incdir" "$main" -o "$work/consumer_plain" 2>&1 ||
    fail "compiling main.cpp by plain include"
plain_arch=$("$work/consumer_plain" | sed -n 's/^arch in use: //p')
echo "--- plain include (-I only, -O2)"
check "$work/consumer_plain" "single-arch" "$plain_arch"
"$work/consumer_plain" | grep -q '(single-arch mode: plain include without libtessera-kernels' ||
    fail "report() of the plain-include build does not say single-arch mode"
echo "ok: installed tessera dispatches to $expected through pkg-config (shared and static); plain include is single-arch ($plain_arch)"
