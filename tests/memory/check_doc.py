#!/usr/bin/env python3
"""docs/memory.md must show the worked example exactly as doc_example.cpp has it."""
import sys

src = open(sys.argv[1]).read()
doc = open(sys.argv[2]).read()
for tag in ("example-graph", "example-run"):
    mark = "// [" + tag + "]"
    a = src.index(mark) + len(mark) + 1
    b = src.index(mark, a)
    lines = src[a:b].rstrip().split("\n")
    indent = min(len(l) - len(l.lstrip()) for l in lines if l.strip())
    block = "\n".join(l[indent:] for l in lines)
    if block not in doc:
        print("docs/memory.md does not contain the", tag, "block of", sys.argv[1])
        sys.exit(1)
print("docs/memory.md shows the example as compiled")
