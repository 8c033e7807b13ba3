#!/usr/bin/env python3
"""Prints every public header under the include folder, relative to it, one a line."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
for p in sorted(root.rglob("*.hpp")):
    print(p.relative_to(root).as_posix())
