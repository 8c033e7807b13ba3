#!/usr/bin/env python3
"""tools/plot_bench.py on hand-made Google Benchmark JSON (bench_example.json here).

usage: test_plot_bench.py PLOT_BENCH_PY BENCH_EXAMPLE_JSON

The SVG must be well-formed XML with one bar per benchmark that has a throughput, bar
lengths in proportion to the values in the JSON, the limit mark where value / ratio puts
it, the ratio in the label, the median aggregate for repeated runs, names with XML
specials intact; benchmarks without a throughput are left out and named on stderr; bad
inputs fail with status 1 and one line naming the file. Exit status 0 when all pass.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
failures = []


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + ("" if cond or not detail else "\n     " + str(detail)))
    if not cond:
        failures.append(what)


def run(script, args):
    p = subprocess.run([sys.executable, script] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def close(a, b, tol=0.02):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-9) + 0.02


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    script, example = argv
    rc, out, err = run(script, [example])
    check(rc == 0, "status 0", err)
    try:
        root = ET.fromstring(out.encode("utf-8"))
    except ET.ParseError as e:
        check(False, "the SVG is well-formed XML", e)
        return 1
    check(root.tag == NS + "svg", "the root is an <svg> element", root.tag)

    bars = {r.get("data-name"): r for r in root.iter(NS + "rect") if r.get("class") == "bar"}
    names = ["matmul/q4_0/K:4096/M:4096/N:1/threads:2", "matmul/q8_0/K:4096/M:4096/N:1/threads:2",
             "matmul/f32/K:4096/M:4096/N:64/threads:2", "ops/add/4096x512/threads:2", "kernels/dot_f32/4096",
             "models/tg/stories260K/threads:2", 'ops/<soft_max>&"co"/threads:2']
    check(sorted(bars) == sorted(names), "one bar per benchmark with a throughput (7)", sorted(bars))
    check("memory/planner/llama_graph" in err and "memory/planner/llama_graph" not in bars,
          "a benchmark without a throughput is left out and named on stderr", err)
    texts = ["".join(t.itertext()) for t in root.iter(NS + "text")]
    for n in names:
        check(any(n in t for t in texts), "the label %r is in the SVG's text" % n)
    if sorted(bars) != sorted(names):
        return 1

    def width(n):
        return float(bars[n].get("width"))

    def x0(n):
        return float(bars[n].get("x"))

    q4, q8, add = names[0], names[1], names[3]
    # weight_GB/s 10 and 15 (the dram_ratio rule wins over GFLOP/s at N = 1): lengths 1 : 1.5
    check(close(width(q8) / width(q4), 1.5), "bar lengths in proportion to the values (15 / 10)", (width(q8), width(q4)))
    # dot_f32's 40 GB/s is in the same GB/s panel: 4 times q4_0's bar
    check(close(width(names[4]) / width(q4), 4.0), "one scale per unit (40 / 10 GB/s)", (width(names[4]), width(q4)))
    check(bars[names[5]].get("data-value") == "1000.0", "repeated runs: the median aggregate (1000, not the mean 1050)",
          bars[names[5]].get("data-value"))

    limits = [ln for ln in root.iter(NS + "line") if ln.get("class") == "limit" and ln.get("data-limit")]
    check(len(limits) == 4, "a limit mark for each of the 4 benchmarks with a ratio", len(limits))

    def limit_for(n):
        y = float(bars[n].get("y"))
        return [ln for ln in limits if float(ln.get("y1")) < y + 1 and float(ln.get("y2")) > y]

    for n, value, ratio, what in ((q4, 10.0, 0.5, "DRAM read"), (q8, 15.0, 0.75, "DRAM read"),
                                  (add, 8.0, 0.8, "copy bandwidth"), (names[2], 80.0, 0.5, "f32 FMA peak")):
        ls = limit_for(n)
        ok = len(ls) == 1 and close(float(ls[0].get("x1")) - x0(n), width(n) / ratio)
        check(ok, "%s: the limit mark at value / ratio = %g" % (n.split("/threads")[0], value / ratio),
              [(ln.get("x1"), x0(n), width(n)) for ln in ls])
        label = "%.0f%% of %s" % (100 * ratio, what)
        check(any(label in t for t in texts), "%s: the label says %r" % (n.split("/threads")[0], label))
    check(not limit_for(names[4]) and not limit_for(names[5]), "no limit mark where the bench measured none")

    # -o writes the same document; --filter keeps the matching benchmarks
    with tempfile.TemporaryDirectory(prefix="tessera-plot-bench.") as tmp:
        svg = os.path.join(tmp, "b.svg")
        rc, o2, e2 = run(script, [example, "-o", svg])
        with open(svg, encoding="utf-8") as f:
            check(rc == 0 and o2 == "" and f.read() == out, "-o FILE: the same SVG, nothing on stdout", e2)
        rc, o3, e3 = run(script, [example, "--filter", "^matmul/"])
        r3 = ET.fromstring(o3.encode("utf-8")) if rc == 0 else None
        n3 = sorted(r.get("data-name") for r in r3.iter(NS + "rect") if r.get("class") == "bar") if r3 is not None else []
        check(n3 == sorted(names[:3]), "--filter ^matmul/: the three matmul bars", n3)

        missing = os.path.join(tmp, "missing.json")
        rc, o4, e4 = run(script, [missing])
        check(rc == 1 and o4 == "" and e4.count("\n") == 1 and missing in e4, "a missing file: status 1, one line naming it", e4)
        notjson = os.path.join(tmp, "bad.json")
        with open(notjson, "w") as f:
            f.write("{not json")
        rc, o5, e5 = run(script, [notjson])
        check(rc == 1 and e5.count("\n") == 1 and notjson in e5 and "not JSON" in e5, "not JSON: status 1, one line", e5)
        nobench = os.path.join(tmp, "nobench.json")
        with open(nobench, "w") as f:
            json.dump({"context": {}}, f)
        rc, o6, e6 = run(script, [nobench])
        check(rc == 1 and "benchmarks" in e6 and nobench in e6, "no \"benchmarks\" list: status 1, says so", e6)
        none = os.path.join(tmp, "none.json")
        with open(none, "w") as f:
            json.dump({"benchmarks": [{"name": "x", "run_type": "iteration", "fragmentation": 0.1}]}, f)
        rc, o7, e7 = run(script, [none])
        check(rc == 1 and "no benchmark with a throughput" in e7, "nothing to draw: status 1, says so", e7)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
