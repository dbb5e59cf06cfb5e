"""On a CUDA device: a plan serialized in one process and deserialized in a new one runs its
first call with no heuristics query, with the build's engine and the same output bytes; a
document of another graph or a changed document is refused with a clear exception."""

import json
import os
import subprocess
import sys

import pytest

# One child process: the graph of (b, m, n, k); with SAVE it builds, runs and writes the plan
# document and the output bytes; with LOAD it deserializes the document, runs, and compares.
CHILD = r"""
import json, sys, time
import dnngraph, torch
sys.path.insert(0, sys.argv[1])
from gpu_support import matmul_graph, run_and_check
shape = tuple(int(v) for v in sys.argv[2].split("x"))
mode, path = sys.argv[3], sys.argv[4]
handle = dnngraph.Handle()
g = matmul_graph(*shape)
start = time.perf_counter()
if mode == "save":
    g.build(handle, [dnngraph.HeuristicMode.A])
else:
    g.deserialize(handle, open(path).read())
ms = (time.perf_counter() - start) * 1e3
y = run_and_check(torch, g, handle, shape)
if mode == "save":
    open(path, "w").write(g.serialize())
    torch.save(y.cpu(), path + ".y")
    equal = True
else:
    equal = bool(torch.equal(torch.load(path + ".y"), y.cpu()))
info = g.plan_info()
print(json.dumps(dict(ms=ms, queries=info.heuristics_queries, deserialized=info.deserialized,
                      document=info.plan_from_document, engine=info.engine_id, equal=equal)))
"""


def child(shape, mode, path):
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", CHILD, here, "x".join(map(str, shape)), mode,
                           str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_serialized_plan_runs_in_a_new_process_without_heuristics(cuda, tmp_path):
    path = tmp_path / "plan.json"
    shape = (2, 512, 768, 1024)
    saved = child(shape, "save", path)
    loaded = child(shape, "load", path)
    print(f"\nbuild {saved['ms']:.1f} ms ({saved['queries']} heuristics queries) vs deserialize "
          f"{loaded['ms']:.1f} ms ({loaded['queries']}), engine {loaded['engine']}, "
          f"{'cuDNN plan document' if loaded['document'] else 'engine config'}")
    assert saved["queries"] == 1 and not saved["deserialized"]
    assert loaded["queries"] == 0 and loaded["deserialized"]
    assert loaded["engine"] == saved["engine"]
    assert loaded["equal"], "the deserialized plan's output differs from the build's"


def test_documents_of_another_graph_or_changed_are_refused(cuda):
    import dnngraph
    from gpu_support import matmul_graph

    handle = dnngraph.Handle()
    g = matmul_graph(1, 256, 256, 256)
    g.build(handle, [dnngraph.HeuristicMode.A])
    document = g.serialize()
    other = matmul_graph(1, 256, 256, 512)
    with pytest.raises(dnngraph.Error) as refused:
        other.deserialize(handle, document)
    assert refused.value.code is dnngraph.ErrorCode.InvalidAttribute
    assert g.key() in refused.value.message and other.key() in refused.value.message
    assert not other.is_built()
    changed = json.loads(document)
    changed["cudnn_version"] = 91100
    with pytest.raises(dnngraph.Error) as refused:
        matmul_graph(1, 256, 256, 256).deserialize(handle, json.dumps(changed))
    assert refused.value.code is dnngraph.ErrorCode.InvalidState
    assert "9.11.0" in refused.value.message


def test_serialize_before_build_raises():
    import dnngraph
    from gpu_support import matmul_graph

    with pytest.raises(dnngraph.Error) as refused:
        matmul_graph(1, 64, 64, 64).serialize()
    assert refused.value.code is dnngraph.ErrorCode.NotBuilt
