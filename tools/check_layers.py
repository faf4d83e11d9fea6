#!/usr/bin/env python3
"""Checks the include graph of the runtime's folders: no cycles, and only the allowed layer edges.

    python3 tools/check_layers.py [--dot]

Every folder and subfolder that holds sources is one node (`runtime/ir`, `runtime/compiler/passes`,
`ops/core`, ...); an `#include "a/b/c.hpp"` from a file in folder F adds the edge F -> a/b. The
script fails (exit 1) when the graph has a cycle, or when an edge is not in ALLOWED below, which
is the architecture written down (README.md, "How it works"). --dot prints the graph for Graphviz.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("include", "runtime", "ops", "onnx", "tools", "tests", "examples")
EXTENSIONS = (".hpp", ".cpp", ".h")

# Layer -> the layers it may include. A subfolder of a layer is the same layer unless listed.
ALLOWED = {
    "include/ocl_infer": set(),                      # the public API: depends on nothing
    "runtime/ir": {"include/ocl_infer"},              # graph, values, dtypes, host math
    "runtime/backend": {"include/ocl_infer"},         # OpenCL: devices, buffers, programs
    "onnx": {"include/ocl_infer", "runtime/ir"},      # protobuf -> Graph
    "ops/core": {"include/ocl_infer", "runtime/ir"},  # op definitions the compiler sees: no OpenCL
    "runtime/compiler": {"include/ocl_infer", "runtime/ir", "ops/core"},
    "runtime/compiler/passes": {"include/ocl_infer", "runtime/ir", "ops/core", "runtime/compiler"},
    "ops": {"include/ocl_infer", "runtime/ir", "runtime/backend", "ops/core"},
    "runtime/exec": {"include/ocl_infer", "runtime/ir", "runtime/backend", "ops/core", "ops",
                     "runtime/compiler", "onnx"},
    # The CLI and tools use the public API only (tools/ may share its own helpers).
    "tools": {"include/ocl_infer", "tools"},
    "examples": {"include/ocl_infer"},
    # Tests see the public API; a few white-box tests look at the IR, the profiler or the backend.
    "tests": {"include/ocl_infer", "tests", "tools", "runtime/ir", "ops/core", "runtime/compiler", "runtime/backend", "onnx"},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    return os.path.dirname(os.path.relpath(path, ROOT))


def main():
    edges = {}
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith(EXTENSIONS):
                    continue
                src = os.path.join(dirpath, f)
                frm = folder_of(src)
                with open(src, encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue  # a same-folder or generated include ("onnx.pb.h" via onnx/)
                        to = os.path.dirname(m.group(1))
                        if to == "ocl_infer":
                            to = "include/ocl_infer"  # the public header, on the include path
                        if to == "onnx" and m.group(1).endswith(".pb.h"):
                            to = "onnx"  # generated schema, built from Debian's onnx.proto
                        if to != frm:
                            edges.setdefault(frm, set()).add(to)
    problems = []
    for frm, tos in sorted(edges.items()):
        allowed = ALLOWED.get(frm)
        if allowed is None:
            problems.append(f"{frm}: folder has no layer in tools/check_layers.py (add it to ALLOWED)")
            continue
        for to in sorted(tos):
            if to not in allowed:
                problems.append(f"{frm} -> {to}: not an allowed layer edge")
    # Cycle check (depth-first search over the folder graph).
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                problems.append("cycle: " + " -> ".join(stack[stack.index(m):] + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    if "--dot" in sys.argv:
        print("digraph layers {")
        for frm, tos in sorted(edges.items()):
            for to in sorted(tos):
                print(f'  "{frm}" -> "{to}";')
        print("}")
    if problems:
        for p in problems:
            print("check_layers: " + p, file=sys.stderr)
        return 1
    n_edges = sum(len(t) for t in edges.values())
    print(f"check_layers: {len(edges)} folders, {n_edges} edges, no cycles, every edge allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
