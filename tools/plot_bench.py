#!/usr/bin/env python3
"""Google Benchmark JSON from bench/ as an SVG bar chart: throughput against the machine's limits.

usage: plot_bench.py [-o OUT.svg] [--filter REGEX] [--title TEXT] RESULTS.json...

RESULTS.json is what a bench/ program writes with --benchmark_format=json or
--benchmark_out=FILE (several files are drawn together). Each benchmark becomes one
horizontal bar of its throughput, and, where the bench measured the machine's limit in
the same process, a red mark at that limit and the ratio in the bar's label:

  counters                                bar            limit (mark)
  GFLOP/s + fma_ratio (or fma_peak)       GFLOP/s        f32 FMA peak
  weight_GB/s + dram_ratio (or dram_GB/s) GB/s           DRAM read bandwidth
  GB/s + dram_ratio                       GB/s           DRAM read bandwidth
  bytes_per_second + copy_ratio           GB/s           copy bandwidth at that size
  GB/s, bytes_per_second                  GB/s           (none)
  GFLOP/s                                 GFLOP/s        (none)
  tokens/s, items_per_second, ...         that rate      (none)

(the limit is the bar's value divided by the ratio when the bench gives a ratio; a row
with a limit wins over one without, then the table's order). Bars
are grouped in one panel per unit, each with its own scale starting at 0. With
repetitions, the median aggregate is drawn when there is one, else the median of the
runs. Benchmarks with none of these counters are left out (and listed on stderr).

No plotting library is needed: the SVG is written by hand. Exit status 0; 1 with one line
on stderr for an unreadable file or when no benchmark has a throughput; 2 on bad usage.
"""
import argparse
import json
import math
import re
import statistics
import sys
from xml.sax.saxutils import escape

# (value counter, ratio counter, absolute limit counter, unit, scale, limit name)
# in order of preference; the first whose value counter a benchmark has is drawn.
RULES = [
    ("GFLOP/s", "fma_ratio", "fma_peak", "GFLOP/s", 1.0, "f32 FMA peak"),
    ("weight_GB/s", "dram_ratio", "dram_GB/s", "GB/s", 1.0, "DRAM read"),
    ("bytes_per_second", "copy_ratio", None, "GB/s", 1e-9, "copy bandwidth"),
    ("GB/s", "dram_ratio", None, "GB/s", 1.0, "DRAM read"),
    ("tokens/s", None, None, "tokens/s", 1.0, None),
    ("images/s", None, None, "images/s", 1.0, None),
    ("graphs/s", None, None, "graphs/s", 1.0, None),
    ("nodes/s", None, None, "nodes/s", 1.0, None),
    ("MB/s", None, None, "MB/s", 1.0, None),
    ("items_per_second", None, None, "items/s", 1.0, None),
]


class Bar:
    def __init__(self, name, value, unit, limit=None, limit_name=None):
        self.name, self.value, self.unit, self.limit, self.limit_name = name, value, unit, limit, limit_name


def fail(msg):
    sys.stderr.write("plot_bench: %s\n" % msg)
    sys.exit(1)


def load(paths):
    """The benchmark entries of all files, each with its counters; fails naming the file."""
    out = []
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                doc = json.load(f)
        except OSError as e:
            fail("'%s': %s" % (p, e.strerror or e))
        except ValueError as e:
            fail("'%s': not JSON (%s)" % (p, e))
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            fail("'%s': no \"benchmarks\" list (is it Google Benchmark's JSON output?)" % p)
        for i, b in enumerate(doc["benchmarks"]):
            if not isinstance(b, dict) or not isinstance(b.get("name"), str):
                fail("'%s': benchmark #%d has no name" % (p, i))
            out.append(b)
    return out


def pick(entries):
    """One entry per benchmark: the median aggregate if there is one, else the runs."""
    groups = {}
    for b in entries:
        if b.get("error_occurred"):
            continue
        key = b.get("run_name", b["name"])
        groups.setdefault(key, []).append(b)
    for key, bs in groups.items():
        med = [b for b in bs if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"]
        runs = [b for b in bs if b.get("run_type", "iteration") == "iteration"]
        yield key, (med[:1] if med else runs)


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")


def to_bar(name, runs):
    # a rule whose limit the bench measured wins (matmul at N = 1 reports GFLOP/s too, but
    # its limit is DRAM); else the first rule with a value
    def has(key):
        return key is not None and any(number(r.get(key)) and r[key] > 0 for r in runs)
    rules = [r for r in RULES if has(r[0]) and (has(r[1]) or has(r[2]))] + [r for r in RULES if has(r[0])]
    for value_key, ratio_key, limit_key, unit, scale, limit_name in rules:
        vals = [r[value_key] for r in runs if number(r.get(value_key))]
        value = statistics.median(vals) * scale
        limit = None
        ratios = [r[ratio_key] for r in runs if ratio_key and number(r.get(ratio_key)) and r[ratio_key] > 0]
        limits = [r[limit_key] for r in runs if limit_key and number(r.get(limit_key)) and r[limit_key] > 0]
        if ratios:
            limit = value / statistics.median(ratios)
        elif limits:
            limit = statistics.median(limits)
        return Bar(name, value, unit, limit, limit_name if limit else None)
    return None


def fmt(v):
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.3g" % v


def nice_max(v):
    """A round axis end >= v (1, 2, 2.5, 5 times a power of ten)."""
    if v <= 0:
        return 1.0
    p = 10.0 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * p >= v:
            return m * p
    return 10 * p


def svg(bars, title):
    W, LEFT, RIGHT, ROW, BAR, TOP = 960, 330, 30, 22, 14, 56
    plot_w = W - LEFT - RIGHT
    panels = {}
    for b in bars:
        panels.setdefault(b.unit, []).append(b)
    y = TOP
    body = []
    for unit, bs in panels.items():
        top = max(max(b.value, b.limit or 0) for b in bs)
        axis = nice_max(top * 1.02)
        body.append('<text class="unit" x="%d" y="%d">%s</text>' % (LEFT, y + 4, escape(unit)))
        y += 14
        y0 = y
        for i in range(6):  # grid and tick labels
            x = LEFT + plot_w * i / 5
            body.append('<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>' % (x, y0, x, y0 + ROW * len(bs)))
            body.append('<text class="tick" x="%.1f" y="%d">%s</text>' % (x, y0 + ROW * len(bs) + 12, "%g" % (axis * i / 5)))
        for b in bs:
            w = plot_w * b.value / axis
            label = b.name if len(b.name) <= 52 else b.name[:49] + "..."
            body.append('<text class="name" x="%d" y="%d"><title>%s</title>%s</text>' %
                        (LEFT - 6, y + BAR - 3, escape(b.name), escape(label)))
            body.append('<rect class="bar" x="%d" y="%d" width="%.2f" height="%d" data-name="%s" data-value="%r"/>' %
                        (LEFT, y, w, BAR, escape(b.name, {'"': "&quot;"}), b.value))
            text = "%s %s" % (fmt(b.value), b.unit)
            if b.limit:
                lx = LEFT + plot_w * b.limit / axis
                body.append('<line class="limit" x1="%.2f" y1="%d" x2="%.2f" y2="%d" data-limit="%r"/>' %
                            (lx, y - 3, lx, y + BAR + 3, b.limit))
                text += " (%.0f%% of %s)" % (100 * b.value / b.limit, b.limit_name)
            if LEFT + w + 4 + 6.5 * len(text) <= W:  # (an estimate of the text's width)
                body.append('<text class="value" x="%.1f" y="%d">%s</text>' % (LEFT + w + 4, y + BAR - 3, escape(text)))
            else:  # no room after the bar: inside its end
                body.append('<text class="value inside" x="%.1f" y="%d">%s</text>' % (LEFT + w - 4, y + BAR - 3, escape(text)))
            y += ROW
        y += 34
    H = y
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">'
        % (W, H, W, H),
        "<style>.bar{fill:#4878a8}.limit{stroke:#c03030;stroke-width:2}.grid{stroke:#ddd}"
        ".name{text-anchor:end}.tick{text-anchor:middle;fill:#666;font-size:10px}.unit{font-weight:bold}"
        ".title{font-size:15px;font-weight:bold}.legend{fill:#444}.inside{text-anchor:end;fill:white}</style>",
        '<rect width="100%" height="100%" fill="white"/>',
        '<text class="title" x="%d" y="22">%s</text>' % (12, escape(title)),
        '<line class="limit" x1="14" y1="36" x2="14" y2="48"/>'
        '<text class="legend" x="22" y="46">the machine\'s limit, measured by the bench in the same process</text>',
    ]
    return "\n".join(head + body + ["</svg>", ""])


def main(argv):
    ap = argparse.ArgumentParser(prog="plot_bench.py", description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="Google Benchmark JSON files")
    ap.add_argument("-o", "--output", help="SVG file to write (default: stdout)")
    ap.add_argument("--filter", help="only benchmarks whose name matches this regular expression")
    ap.add_argument("--title", default="tessera benchmarks: throughput and the machine's limits")
    a = ap.parse_args(argv)
    try:
        flt = re.compile(a.filter) if a.filter else None
    except re.error as e:
        ap.error("--filter: %s" % e)
    bars, skipped = [], []
    for name, runs in pick(load(a.results)):
        if flt and not flt.search(name):
            continue
        b = to_bar(name, runs) if runs else None
        (bars.append(b) if b else skipped.append(name))
    if skipped:
        sys.stderr.write("plot_bench: no throughput counter, left out: %s\n" % ", ".join(skipped))
    if not bars:
        fail("no benchmark with a throughput counter in %s" % ", ".join(a.results))
    text = svg(bars, a.title)
    if a.output:
        try:
            with open(a.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            fail("'%s': %s" % (a.output, e.strerror or e))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
