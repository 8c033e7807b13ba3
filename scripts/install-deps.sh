#!/usr/bin/env bash
# Installs what tessera needs to build, test and benchmark on Debian (bookworm or
# later): meson, ninja, cmake (the CMake consumer test), both compilers, xsimd, doctest, Google Benchmark, the Unicode
# data the tokenizer tables are generated from, and for the Vulkan device its headers
# (libvulkan-dev, which brings the loader), Mesa's drivers (lavapipe, a Vulkan device on
# the CPU, which CI tests on), glslc (regenerates the committed SPIR-V) and the Khronos
# validation layer (one test run under it), and for the MNIST training example zlib's
# headers (zlib1g-dev: mnist_io.hpp gunzips the data) and Fashion-MNIST
# (dataset-fashion-mnist, in /usr/share/datasets/fashion-mnist; the mnist_data test skips
# without it), and for the MPI devices Open MPI (libopenmpi-dev: headers and mpicxx;
# openmpi-bin: mpirun, which runs the mpi test suite). Uses sudo when not root.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    meson ninja-build cmake g++ clang libclang-rt-dev pkg-config python3 binutils \
    libxsimd-dev doctest-dev libbenchmark-dev unicode-data ca-certificates git \
    libvulkan-dev mesa-vulkan-drivers glslc vulkan-validationlayers \
    zlib1g-dev dataset-fashion-mnist libopenmpi-dev openmpi-bin >/dev/null
echo "tessera: build dependencies installed"
