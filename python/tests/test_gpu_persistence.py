"""On a CUDA device: a kernel cache saved with to_json() in one process and loaded with
from_json() in a new one (a warm start), against a cold build of the same shape."""

import json
import os
import subprocess
import sys

import pytest

# One child process: builds (b, m, n, k) on a cache (loaded from LOAD if given), checks the
# result, prints one JSON line, and saves the cache to SAVE if given.
CHILD = r"""
import json, sys, time
import dnngraph, torch
sys.path.insert(0, sys.argv[1])
from gpu_support import matmul_graph, run_and_check
shape = tuple(int(v) for v in sys.argv[2].split("x"))
load, save = sys.argv[3], sys.argv[4]
kc = dnngraph.KernelCache()
if load:
    kc.from_json(open(load).read())
handle = dnngraph.Handle()
g = matmul_graph(*shape, dynamic_shape=True, kernel_cache=kc)
start = time.perf_counter()
g.build(handle, [dnngraph.HeuristicMode.A])
ms = (time.perf_counter() - start) * 1e3
run_and_check(torch, g, handle, shape)
if save:
    open(save, "w").write(kc.to_json())
print(json.dumps(dict(ms=ms, revision=kc.revision(), size=kc.size(),
                      hit=g.plan_info().kernel_cache_hit, plan=g.plan_info().describe())))
"""


def child(shape, load="", save=""):
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", CHILD, here, "x".join(map(str, shape)), load,
                           save], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_saved_cache_warm_starts_a_new_process(cuda, tmp_path):
    import dnngraph

    saved = tmp_path / "cache.json"
    first = child((1, 1024, 1024, 1024), save=str(saved))
    document = saved.read_text()
    held = len(json.loads(document)["kernel_cache"])
    assert held == first["size"] >= 1
    new_shape = (2, 512, 768, 1024)
    warm = child(new_shape, load=str(saved))
    cold = child(new_shape)
    print(f"\nsaved {len(document)} bytes, {held} entries (first build {first['ms']:.1f} ms)"
          f"\nnew process, new shape {new_shape}: warm {warm['ms']:.1f} ms (hit {warm['hit']}, "
          f"revision {warm['revision']}, size {warm['size']}) vs cold {cold['ms']:.1f} ms "
          f"(hit {cold['hit']})")
    assert warm["size"] >= held, "a loaded cache holds the document's entries"
    if dnngraph.KernelCache.introspection_path() == "native":
        # cuDNN >= 9.27 serves the loaded entry: no compilation, revision still 0.
        assert warm["hit"] and warm["revision"] == 0
