#!/usr/bin/env python3
"""The include graph of src/: prints it and fails (exit 1) on a cycle.

Two graphs, both of which must be acyclic:
  * layers: the directories of src/ (util, storage, mvcc, index, ...). Layer A depends on layer
    B when a file in A includes a file in B.
  * modules: a header together with the .cc and .inc files whose first project include is that
    header (the "related header first" convention), so commit.cc belongs to database_impl.h's
    module. Module A depends on module B when a file of A includes a file of B. A cycle here
    is two parts of the engine that each reach into the other.

Usage: scripts/include-graph.py [--dot] [SRC]   (default SRC: src/ beside this script)
  --dot  print the module graph in Graphviz form instead of the text listing.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def project_includes(path, src):
    """The project files `path` includes (paths relative to src), in order."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if os.path.exists(os.path.join(src, target)):
                out.append(target)
    return out


def components(graph):
    """The strongly connected components of `graph` with more than one node (each a cycle)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    dot = "--dot" in sys.argv
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    src = os.path.normpath(src)
    files = []
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith((".h", ".cc", ".inc")):
                files.append(os.path.relpath(os.path.join(root, name), src))
    files.sort()
    includes = {f: project_includes(os.path.join(src, f), src) for f in files}

    def module_of(f):
        if f.endswith(".h"):
            return f[:-2]
        first = includes[f][0] if includes[f] else None
        # A .cc whose first include is a header of its own directory belongs to that header.
        if first and os.path.dirname(first) == os.path.dirname(f):
            return first[:-2]
        return os.path.splitext(f)[0]

    modules = {}
    for f in files:
        modules.setdefault(module_of(f), []).append(f)
    mgraph = {m: set() for m in modules}
    lgraph = {}
    for f in files:
        m = module_of(f)
        layer = f.split("/")[0]
        lgraph.setdefault(layer, set())
        for t in includes[f]:
            tm = module_of(t)
            if tm != m:
                mgraph[m].add(tm)
            tl = t.split("/")[0]
            lgraph.setdefault(tl, set())
            if tl != layer:
                lgraph[layer].add(tl)

    if dot:
        print("digraph includes {")
        for m in sorted(mgraph):
            for t in sorted(mgraph[m]):
                print(f'  "{m}" -> "{t}";')
        print("}")
    else:
        print("layers (each -> what it includes):")
        for layer in sorted(lgraph):
            print(f"  {layer:8} -> {', '.join(sorted(lgraph[layer])) or '-'}")
        print(f"modules: {len(mgraph)} ({len(files)} files)")
        for m in sorted(mgraph):
            own = ", ".join(os.path.basename(f) for f in modules[m])
            print(f"  {m} [{own}] -> {', '.join(sorted(mgraph[m])) or '-'}")

    bad = False
    for name, graph in (("layer", lgraph), ("module", mgraph)):
        for comp in components(graph):
            print(f"include-graph: {name} cycle among: {', '.join(comp)}", file=sys.stderr)
            bad = True
    if not bad:
        print("include-graph: no cycle among layers or modules", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
