#!/usr/bin/env bash
# Builds tests/consumer_cmake three ways and runs each: every one must dispatch to the
# arch the in-tree build picks (ARCH_PROBE's report) and pass main.cpp's q4_0 mul_mat
# check.
#   1. FetchContent (builds libtessera-kernels with CMake, from CMakeLists.txt), then
#      `cmake --install` of that build with TESSERA_INSTALL=ON. From git (GIT_REPOSITORY
#      the source tree, GIT_TAG its HEAD commit) when the tree is a git checkout without
#      changes to tracked files, as CI's clone is; otherwise from the folder (SOURCE_DIR),
#      so that what is tested is what the Meson build compiled;
#   2. find_package(tessera) against that CMake install (the exported tesseraTargets);
#   3. find_package(tessera) against the Meson build's install (its tesseraConfig.cmake),
#      put in a scratch DESTDIR.
# usage: run.sh <meson build dir> <tessera source root> <arch_probe>
set -euo pipefail
build=$1 src=$2 probe=$3
work=$(mktemp -d /tmp/tessera-cmake.XXXXXX)
trap 'rm -rf "$work"' EXIT
consumer="$src/tests/consumer_cmake"
unset TESSERA_ARCH
case $probe in /*) ;; *) [ -x "$probe" ] || probe="$build/$probe" ;; esac  # meson may pass it relative to the build

fail() { echo "FAIL: $*"; exit 1; }
quiet() {  # <log> <command...>: runs the command, shows its log only when it fails
    local log=$1; shift
    "$@" >"$log" 2>&1 || { tail -40 "$log"; return 1; }
}

expected=$("$probe" | sed -n 's/^arch in use: //p')
[ -n "$expected" ] || fail "$probe printed no 'arch in use'"
echo "the in-tree build uses: $expected"

check() {  # <binary> <what>
    local out
    out=$("$1" 2>&1) || { echo "$out"; fail "$2: the consumer exited with an error"; }
    echo "  ${out//$'\n'/$'\n'  }"
    echo "$out" | grep -qx "mode: run-time dispatch" || fail "$2: not in run-time dispatch mode"
    echo "$out" | grep -qx "arch in use: $expected" || fail "$2: arch in use is not $expected"
    [ "$(echo "$out" | grep -c ': ok (largest error')" -eq 2 ] || fail "$2: the mul_mat checks did not both pass"
    echo "ok: $2"
}

build_consumer() {  # <build dir> <what> <cmake -D args...>
    local dir=$1 what=$2; shift 2
    quiet "$work/$what.configure.log" cmake -S "$consumer" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" ||
        fail "$what: cmake configure"
    # serial unless CMAKE_BUILD_PARALLEL_LEVEL says otherwise
    quiet "$work/$what.build.log" cmake --build "$dir" || fail "$what: cmake --build"
    check "$dir/consumer" "$what"
}

if head=$(git -C "$src" rev-parse --verify HEAD 2>/dev/null) &&
   [ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    echo "--- 1. FetchContent (GIT_REPOSITORY $src, GIT_TAG $head)"
    build_consumer "$work/fetch" fetchcontent_git -DTESSERA_GIT_REPOSITORY="$src" -DTESSERA_GIT_TAG="$head" -DTESSERA_INSTALL=ON
    [ "$(git -C "$work/fetch/_deps/tessera-src" rev-parse HEAD 2>/dev/null)" = "$head" ] ||
        fail "fetchcontent_git: the fetched tree ($work/fetch/_deps/tessera-src) is not at $head"
else
    echo "--- 1. FetchContent (SOURCE_DIR $src: not a git checkout, or tracked files changed)"
    build_consumer "$work/fetch" fetchcontent -DTESSERA_SOURCE_DIR="$src" -DTESSERA_INSTALL=ON
fi
quiet "$work/cmake-install.log" cmake --install "$work/fetch" --prefix "$work/cmake-prefix" || fail "cmake --install"

echo "--- 2. find_package, CMake-installed tessera"
build_consumer "$work/fp-cmake" find_package_cmake -DCMAKE_PREFIX_PATH="$work/cmake-prefix"

echo "--- 3. find_package, Meson-installed tessera"
quiet "$work/meson-install.log" env DESTDIR="$work/dest" meson install -C "$build" --no-rebuild --quiet ||
    fail "meson install into $work/dest"
config=$(find "$work/dest" -name tesseraConfig.cmake | head -1)
[ -n "$config" ] || fail "meson install wrote no tesseraConfig.cmake"
build_consumer "$work/fp-meson" find_package_meson -Dtessera_DIR="$(dirname "$config")"
grep -q 'libtessera-kernels\.so' "$work/fp-meson/CMakeFiles/consumer.dir/link.txt" ||
    fail "find_package_meson: the consumer is not linked to libtessera-kernels.so"
echo "ok: CMake consumers (FetchContent, find_package of the CMake and of the Meson install) dispatch to $expected"
