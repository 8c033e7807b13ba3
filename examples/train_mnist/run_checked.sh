#!/bin/sh
# Test runner for train_mnist.
#   run_checked.sh --data EXE ARGS...               needs the Fashion-MNIST folder (TESSERA_MNIST_DIR,
#                                                   else Debian's); reports skipped (77) without it; the
#                                                   run must succeed and end with the accuracy line
#   run_checked.sh --expect STATUS TEXT EXE ARGS... the run must exit with STATUS and say TEXT on stderr
set -u
mode=$1; shift
if [ "$mode" = "--data" ]; then
    dir=${TESSERA_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
    for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
        if [ ! -f "$dir/$f" ] && [ ! -f "$dir/$f.gz" ]; then
            echo "SKIP: no $dir/$f[.gz] (install dataset-fashion-mnist or set TESSERA_MNIST_DIR)"
            exit 77
        fi
    done
    exe=$1; shift
    out=$("$exe" --data "$dir" "$@") || { echo "$out"; exit 1; }
    echo "$out"
    echo "$out" | tail -1 | grep -Eq '^test accuracy: [0-9]+\.[0-9]{2}% \(loss [0-9.]+\), [0-9]+ epochs, [0-9.]+ s$' ||
        { echo "FAIL: the last line is not the accuracy line"; exit 1; }
    exit 0
fi
if [ "$mode" = "--expect" ]; then
    want=$1; text=$2; shift 2
    err=$("$@" 2>&1 >/dev/null); status=$?
    echo "$err"
    [ "$status" -eq "$want" ] || { echo "FAIL: exit status $status, expected $want"; exit 1; }
    case "$err" in *"$text"*) exit 0 ;; esac
    echo "FAIL: the message does not say: $text"; exit 1
fi
echo "run_checked.sh: unknown mode $mode" >&2; exit 2
