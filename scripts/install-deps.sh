#!/usr/bin/env bash
# Installs what tessera needs to build, test and benchmark on Debian (bookworm or
# later): meson, ninja, both compilers, xsimd, doctest, Google Benchmark, and the
# Unicode data the tokenizer tables are generated from. Uses sudo when not root.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    meson ninja-build g++ clang libclang-rt-dev pkg-config python3 binutils \
    libxsimd-dev doctest-dev libbenchmark-dev unicode-data ca-certificates git >/dev/null
echo "tessera: build dependencies installed"
