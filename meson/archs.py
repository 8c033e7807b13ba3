#!/usr/bin/env python3
"""Prints the arch list of include/tessera/simd/arch.hpp (TESSERA_ARCH_LIST) for Meson.

usage: archs.py ARCH_HPP [FAMILY]

One line per arch, scalar first, in arch_id order: `index|name|family|flag,flag,...`.
With FAMILY, the arches of other families are still printed (their index counts) but
with family `-`, so the build skips them.
"""
import re
import sys


def archs(path):
    """[(name, family, flags, xsimd arch)], scalar first (its xsimd arch is None)."""
    text = open(path, encoding='utf-8').read()
    m = re.search(r'#define TESSERA_ARCH_LIST\(X, C\)(.*?)\n\n', text, re.S)
    if not m:
        sys.exit(f'{path}: no TESSERA_ARCH_LIST')
    out = [('scalar', 'any', [], None)]
    for e in re.finditer(r'X\(C,\s*(\w+),\s*\w+,\s*([^,]+),\s*(\w+),\s*"([^"]*)"\)', m.group(1)):
        out.append((e.group(1), e.group(3), e.group(4).split(), e.group(2).strip()))
    return out


def main():
    family = sys.argv[2] if len(sys.argv) > 2 else None
    for i, (name, fam, flags, _) in enumerate(archs(sys.argv[1])):
        keep = fam == 'any' or family is None or fam == family
        print(f'{i}|{name}|{fam if keep else "-"}|{",".join(flags)}')


if __name__ == '__main__':
    main()
