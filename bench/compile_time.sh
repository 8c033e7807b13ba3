#!/bin/sh
# Compile time of a unit that includes only the graph builders (bench/graph_only_unit.cpp),
# g++ -O2, at this tree and at a base revision, runs interleaved so both see the same load.
# Prints each run, the medians and their ratio (base / now), and the machine load.
#   bench/compile_time.sh [base-rev] [runs]     (default: c6b995d, the tree before the split; 5)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
base_rev=${1:-c6b995d}
runs=${2:-5}
cxx=${CXX:-g++}
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/base" "$base_rev" >/dev/null 2>&1
unit="$root/bench/graph_only_unit.cpp"
time_one() {  # include dir -> seconds
    s=$(date +%s%N)
    $cxx -std=c++20 -O2 -I"$1" -c "$unit" -o "$work/unit.o"
    e=$(date +%s%N)
    awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }'
}
: >"$work/base.txt"
: >"$work/now.txt"
i=0
while [ "$i" -lt "$runs" ]; do
    b=$(time_one "$work/base/include")
    n=$(time_one "$root/include")
    echo "run $i: base $b s, now $n s"
    echo "$b" >>"$work/base.txt"
    echo "$n" >>"$work/now.txt"
    i=$((i + 1))
done
median() { sort -n "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mb=$(median "$work/base.txt")
mn=$(median "$work/now.txt")
echo "median: base ($base_rev) $mb s, now $mn s, base/now $(awk -v a="$mb" -v b="$mn" 'BEGIN { printf "%.2f", a / b }')x"
echo "preprocessed lines: base $($cxx -std=c++20 -O2 -I"$work/base/include" -E "$unit" | wc -l), now $($cxx -std=c++20 -O2 -I"$root/include" -E "$unit" | wc -l)"
echo "load: $(cat /proc/loadavg)"
