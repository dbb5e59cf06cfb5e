"""Probe (H200): may the kernel-cache store merge the documents of one dynamic topology whose
first builds had different shapes?

A dynamic-shape cache's document carries the operation graph of its first build, dims and strides
included, and so does each entry's key. KernelCacheStore merges two documents only when their
operationGraph members are equal, so two processes whose caches started at different shapes
replace each other's file instead of adding to it. Merging across shapes is only right if cuDNN
takes such a union and serves its entries; this asks it, each step in a new process:

  1. process A builds (1, 1024, 1024, 1024) and saves its document; process B builds
     (2, 512, 768, 1024) and saves its own: do the two operationGraph members differ, and in what?
  2. the union (A's document with B's entries appended): does from_json take it?
  3. a new process loads A alone, B alone, or the union, and builds shape A, shape B and a third
     shape C: revision, size, kernel_cache_hit and build ms of each, and the results checked
     against torch.

    python3 python/bench/kernel_cache_merge_probe.py [--out results.json]

Prints one JSON line per measurement and a summary; nothing here is a test (no assertion on what
cuDNN answers).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

SHAPES = {"A": (1, 1024, 1024, 1024), "B": (2, 512, 768, 1024), "C": (4, 384, 640, 1024)}

# One child: loads LOAD (if any) into a new cache, builds SHAPE on it (dynamic, heuristics A),
# checks the result against torch, saves to SAVE (if any), prints one JSON line.
CHILD = r"""
import json, sys, time
import dnngraph, torch
sys.path.insert(0, sys.argv[1])
from gpu_support import matmul_graph, run_and_check
shape = tuple(int(v) for v in sys.argv[2].split("x"))
load, save = sys.argv[3], sys.argv[4]
kc = dnngraph.KernelCache()
loaded = None
if load:
    try:
        kc.from_json(open(load).read())
        loaded = "taken"
    except dnngraph.Error as e:
        print(json.dumps(dict(loaded="refused", error=str(e))))
        sys.exit(0)
handle = dnngraph.Handle()
g = matmul_graph(*shape, dynamic_shape=True, kernel_cache=kc)
start = time.perf_counter()
try:
    g.build(handle, [dnngraph.HeuristicMode.A])
except dnngraph.Error as e:
    print(json.dumps(dict(loaded=loaded, built=False, error=str(e))))
    sys.exit(0)
ms = (time.perf_counter() - start) * 1e3
run_and_check(torch, g, handle, shape)
if save:
    open(save, "w").write(kc.to_json())
print(json.dumps(dict(loaded=loaded, built=True, checked=True, ms=ms, revision=kc.revision(),
                      size=kc.size(), hit=g.plan_info().kernel_cache_hit,
                      plan=g.plan_info().describe())))
"""


def child(shape, load="", save=""):
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", CHILD, tests, "x".join(map(str, shape)), load,
                           save], capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        return {"failed": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def differences(a, b, path="operationGraph"):
    """The JSON paths where a and b differ (the first 20)."""
    found = []
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found += differences(a.get(key), b.get(key), f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            found += differences(x, y, f"{path}[{i}]")
    elif a != b:
        found.append(f"{path}: {json.dumps(a)} vs {json.dumps(b)}")
    return found[:20]


def emit(results, case, **fields):
    row = {"case": case, **fields}
    results.append(row)
    print(json.dumps(row), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="a JSON file for every row")
    args = parser.parse_args()
    import dnngraph

    results = []
    emit(results, "setup", cudnn=dnngraph.cudnn_runtime_version(),
         introspection=dnngraph.KernelCache.introspection_path())
    with tempfile.TemporaryDirectory() as folder:
        files = {name: os.path.join(folder, f"{name}.json") for name in ("A", "B", "union")}
        for name in ("A", "B"):
            emit(results, "save", first=name, **child(SHAPES[name], save=files[name]))
        docs = {name: json.load(open(files[name])) for name in ("A", "B")}
        emit(results, "documents", entries_a=len(docs["A"]["kernel_cache"]),
             entries_b=len(docs["B"]["kernel_cache"]),
             operation_graphs_equal=docs["A"]["operationGraph"] == docs["B"]["operationGraph"],
             differences=differences(docs["A"]["operationGraph"], docs["B"]["operationGraph"]))
        union = dict(docs["A"])
        union["kernel_cache"] = docs["A"]["kernel_cache"] + docs["B"]["kernel_cache"]
        with open(files["union"], "w") as f:
            json.dump(union, f)
        for load in ("A", "B", "union"):
            for shape in ("A", "B", "C"):
                emit(results, "load_and_build", load=load, shape=shape,
                     **child(SHAPES[shape], load=files[load]))
        for shape in ("A", "B", "C"):
            emit(results, "cold", shape=shape, **child(SHAPES[shape]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
