#!/usr/bin/env python3
"""Prints the arch list of include/tessera/simd/arch.hpp for Meson.

usage: archs.py ARCH_HPP [FAMILY]

arch.hpp writes one list per ISA family (TESSERA_ARCH_LIST_x86, TESSERA_ARCH_LIST_arm)
and compiles the one of its target. With FAMILY (the host's: x86, arm or none) this
prints that family's arches; without it, every family's. One line per arch, scalar
first, in arch_id order: `index|name|family|flag,flag,...`.
"""
import re
import sys


def archs(path, family=None):
    """[(name, family, flags, xsimd arch)], scalar first (its xsimd arch is None): the
    arches of FAMILY, or of every family when it is None."""
    text = open(path, encoding='utf-8').read()
    lists = re.findall(r'#define TESSERA_ARCH_LIST_(\w+)\(X, C\)(.*?)\n\n', text, re.S)
    if not lists:
        sys.exit(f'{path}: no TESSERA_ARCH_LIST_<family>')
    out = [('scalar', 'any', [], None)]
    for fam, body in lists:
        if family is not None and fam != family:
            continue
        for e in re.finditer(r'X\(C,\s*(\w+),\s*\w+,\s*([^,]+),\s*(\w+),\s*"([^"]*)"\)', body):
            if e.group(3) != fam:
                sys.exit(f'{path}: arch {e.group(1)} says family {e.group(3)} in TESSERA_ARCH_LIST_{fam}')
            out.append((e.group(1), e.group(3), e.group(4).split(), e.group(2).strip()))
    return out


def main():
    family = sys.argv[2] if len(sys.argv) > 2 else None
    for i, (name, fam, flags, _) in enumerate(archs(sys.argv[1], family)):
        print(f'{i}|{name}|{fam}|{",".join(flags)}')


if __name__ == '__main__':
    main()
