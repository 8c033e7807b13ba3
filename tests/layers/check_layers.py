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
4. Instruction-set headers (<immintrin.h>, <arm_neon.h>, ...) only in kernel files and
   the thread pool's pause, each under an arch guard (#if) when outside kernels/.
Prints each violation with the file and line; exits 1 when there is any.
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
        guard_depth = 0  # open #if blocks naming an architecture macro
        stack = []
        for no, line in enumerate(lines, 1):
            s = line.strip()
            if s.startswith('#if'):
                arch = bool(re.search(r'__x86_64__|_M_X64|__i386__|__aarch64__|__ARM_NEON|__AVX|__SSE|__F16C__|__FMA__', s))
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
                if not rel.startswith('kernels/') and not (rel == 'backend/cpu/thread_pool.hpp' and guard_depth > 0):
                    errors.append(f'{rel}:{no}: instruction-set header outside the kernel files: {s}')
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


if __name__ == '__main__':
    sys.exit(main())
