#!/usr/bin/env python3
"""Checks the layering that docs/architecture.md states, on the headers as they are.

1. Each layer (a folder under include/tessera/) includes only the layers it may
   (LAYERS below, the same table as docs/architecture.md); in particular graph/
   describes and computes nothing: it reaches no kernel, SIMD or backend header, not
   even through another header.
2. The generic backend parts (the concepts, the handles, the scheduler, the registry's
   interfaces) never include a device's folder (backend/cpu/, backend/vulkan/, ...) or
   backend/cpu.hpp; only the registry, which registers the CPU, and the umbrellas do.
3. No include cycles.
4. Instruction-set headers (<immintrin.h>, <arm_neon.h>, ...) only in the ISA folders of
   the kernels (kernels/x86/, kernels/arm/), each under its family's guard
   (#if defined(TESSERA_X86) / TESSERA_AARCH64).
5. No x86 intrinsic (_mm*_..., __m128/256/512..., __mmask, _MM_...) outside kernels/x86/,
   and no x86 arch tag (simd::sse4_2, simd::avx2, simd::avx512...) outside kernels/x86/
   and simd/: the portable kernel headers hold the scalar and xsimd bodies only, and
   what differs per arch is asked of the arch (its xsimd register size, an overload).
Prints each violation with the file and line; exits 1 when there is any.
`--self-test` runs the checks on a small tree with one violation of each kind and
fails unless each is reported.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..', 'include')
ROOT = os.path.abspath(ROOT)
BASE = os.path.join(ROOT, 'tessera')

# layer -> the layers it may include (itself always)
LAYERS = {
    'core': {'core'},
    'quant': {'core'},
    'simd': {'core'},
    'kernels': {'core', 'quant', 'simd'},
    'memory': {'core'},
    'graph': {'core', 'quant', 'memory'},
    'backend': {'core', 'quant', 'simd', 'kernels', 'memory', 'graph'},
    'gguf': {'core', 'quant'},
    'opt': {'core', 'quant', 'memory', 'graph', 'backend'},
    'text': {'core', 'gguf'},
    'models': {'core', 'quant', 'simd', 'kernels', 'memory', 'graph', 'backend', 'gguf', 'text', 'opt'},
}
UMBRELLAS = {'tessera.hpp', 'backend/all.hpp'}
# headers of the generic backend layer that must not name a device
DEVICE_DIRS = ('backend/cpu/', 'backend/vulkan/', 'backend/mpi/', 'backend/reference/')
DEVICE_HEADERS = ('backend/cpu.hpp', 'backend/vulkan.hpp', 'backend/mpi.hpp')
MAY_NAME_DEVICES = {'backend/registry.hpp', 'backend/all.hpp', 'backend/reference.hpp'}
ISA_HEADERS = re.compile(r'#\s*include\s*<(immintrin|emmintrin|xmmintrin|smmintrin|arm_neon|arm_sve)\.h>')
# ISA folder -> the macro its files are guarded by
ISA_DIRS = {'kernels/x86/': 'TESSERA_X86', 'kernels/arm/': 'TESSERA_AARCH64'}
X86_CODE = re.compile(r'\b(_mm\d*_\w+|__m(?:128|256|512)\w*|__mmask\d+|_MM_\w+)')
X86_TAG = re.compile(r'\bsimd::(sse4_2|avx2|avx512\w*)\b')
INC = re.compile(r'#\s*include\s*"tessera/([^"]+)"')


def layer_of(rel):
    return rel.split('/')[0] if '/' in rel else None


def main():
    headers = {}
    for d, _, files in os.walk(BASE):
        for f in files:
            if f.endswith('.hpp'):
                full = os.path.join(d, f)
                headers[os.path.relpath(full, BASE).replace(os.sep, '/')] = full
    errors = []
    graph = {}
    for rel, full in sorted(headers.items()):
        with open(full, encoding='utf-8') as fh:
            lines = fh.read().split('\n')
        graph[rel] = []
        isa_dir = next((d for d in ISA_DIRS if rel.startswith(d)), None)
        guard_depth = 0  # open #if blocks naming this file's ISA family macro
        stack = []
        for no, line in enumerate(lines, 1):
            s = line.strip()
            if s.startswith('#if'):
                arch = bool(isa_dir) and ISA_DIRS[isa_dir] in s
                stack.append(arch)
                guard_depth += arch
            elif s.startswith('#endif') and stack:
                guard_depth -= stack.pop()
            m = INC.search(line)
            if m:
                tgt = m.group(1)
                graph[rel].append(tgt)
                if tgt not in headers and tgt != 'config.hpp':
                    errors.append(f'{rel}:{no}: includes tessera/{tgt}, which does not exist')
                src_layer, tgt_layer = layer_of(rel), layer_of(tgt)
                if rel not in UMBRELLAS and src_layer and tgt_layer and tgt_layer != src_layer:
                    if tgt_layer not in LAYERS.get(src_layer, set()):
                        errors.append(f'{rel}:{no}: layer {src_layer}/ may not include {tgt_layer}/ (tessera/{tgt})')
                if (rel.startswith('backend/') and not rel.startswith(DEVICE_DIRS) and rel not in MAY_NAME_DEVICES
                        and rel not in DEVICE_HEADERS and (tgt.startswith(DEVICE_DIRS) or tgt in DEVICE_HEADERS)):
                    errors.append(f'{rel}:{no}: generic backend header includes the device header tessera/{tgt}')
            if ISA_HEADERS.search(line):
                if not isa_dir:
                    errors.append(f'{rel}:{no}: instruction-set header outside the ISA folders of kernels/: {s}')
                elif guard_depth <= 0:
                    errors.append(f'{rel}:{no}: instruction-set header not under #if defined({ISA_DIRS[isa_dir]}): {s}')
            code = line.split('//')[0]
            m = X86_CODE.search(code)
            if m and isa_dir != 'kernels/x86/':
                errors.append(f'{rel}:{no}: x86 intrinsic {m.group(1)} outside kernels/x86/')
            m = X86_TAG.search(code)
            if m and isa_dir != 'kernels/x86/' and not rel.startswith('simd/'):
                errors.append(f'{rel}:{no}: x86 arch tag simd::{m.group(1)} outside kernels/x86/ and simd/')
    # transitive: graph/ reaches no kernel, simd or backend header
    def reach(start):
        seen, todo = set(), [start]
        while todo:
            h = todo.pop()
            for t in graph.get(h, []):
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return seen
    for rel in graph:
        if rel.startswith('graph/'):
            bad = sorted(t for t in reach(rel) if t.split('/')[0] in ('kernels', 'simd', 'backend'))
            if bad:
                errors.append(f'{rel}: reaches {", ".join(bad[:3])} (graph/ must include no kernel, SIMD or backend header)')
    # cycles
    state = {}
    def dfs(h, path):
        state[h] = 1
        for t in graph.get(h, []):
            if state.get(t) == 1:
                cyc = path[path.index(t):] + [t] if t in path else [h, t]
                errors.append('include cycle: ' + ' -> '.join(cyc))
            elif t in graph and not state.get(t):
                dfs(t, path + [t])
        state[h] = 2
    for h in sorted(graph):
        if not state.get(h):
            dfs(h, [h])
    for e in errors:
        print(e)
    print(f'{len(headers)} headers checked, {len(errors)} violations')
    return 1 if errors else 0


def self_test():
    """One violation of each kind in a scratch tree; every one must be reported."""
    import contextlib
    import io
    import tempfile
    files = {
        'core/a.hpp': '#pragma once\n',
        'graph/g.hpp': '#include "tessera/quant/q.hpp"\n',
        'quant/q.hpp': '#include "tessera/kernels/k.hpp"\n',  # layer + graph reaches kernels
        'kernels/k.hpp': '#include "tessera/kernels/x86/k.hpp"\nint f() { return _mm_popcnt_u32(1); }\n'
                         'constexpr int w = std::derived_from<A, simd::avx2> ? 8 : 1;\n',
        'kernels/x86/k.hpp': '#include <immintrin.h>\n#include "tessera/kernels/k.hpp"\n',  # unguarded + cycle
        'kernels/x86/ok.hpp': '#if defined(TESSERA_X86)\n#include <immintrin.h>\n__m256 v;\nusing t = simd::avx2;\n#endif\n',
        'backend/scheduler.hpp': '#include "tessera/backend/cpu.hpp"\n',
        'backend/cpu.hpp': '#include <emmintrin.h>\n',
    }
    expect = ['layer quant/ may not include kernels/', 'graph/g.hpp: reaches', 'x86 intrinsic _mm_popcnt_u32 outside',
              'kernels/k.hpp:3: x86 arch tag simd::avx2 outside',
              'kernels/x86/k.hpp:1: instruction-set header not under', 'include cycle',
              'generic backend header includes the device header', 'backend/cpu.hpp:1: instruction-set header outside']
    with tempfile.TemporaryDirectory() as d:
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, 'tessera', rel)), exist_ok=True)
            with open(os.path.join(d, 'tessera', rel), 'w') as fh:
                fh.write(text)
        global BASE
        saved, BASE = BASE, os.path.join(d, 'tessera')
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main()
        BASE = saved
    text = out.getvalue()
    missing = [e for e in expect if e not in text]
    if rc != 1 or missing or 'ok.hpp' in text:
        print(text)
        print('self-test: not reported:', missing, '; exit', rc)
        return 1
    print(f'self-test: all {len(expect)} planted violations reported')
    return 0


if __name__ == '__main__':
    sys.exit(self_test() if '--self-test' in sys.argv else main())
