"""On a CUDA device: a dynamic bf16 matmul + ReLU built from Python over five shapes on one
kernel cache; the revision/size sequence printed and checked against the contract, every
result compared with torch, and to_json() as cuDNN's version allows."""

import json
import time

import dnngraph
import pytest
from dnngraph import ErrorCode, HeuristicMode

from gpu_support import matmul_graph, run_and_check

SHAPES = [(1, 1024, 1024, 1024), (2, 512, 768, 1024), (1, 4096, 256, 2048), (5, 128, 128, 128),
          (3, 1000, 777, 512)]


def entries(document):
    return len(json.loads(document)["kernel_cache"])


def test_revision_and_size_follow_the_builds(cuda):
    handle = dnngraph.Handle()
    kc = dnngraph.KernelCache()
    native = dnngraph.KernelCache.introspection_path() == "native"
    # cuDNN 9.19 serializes a cache once; from 9.27 every read is fresh, also when dnngraph was
    # compiled against older headers and counts on the library path (measured on the H200).
    fresh_json = dnngraph.cudnn_runtime_version() >= 92700
    print(f"\ncuDNN {dnngraph.cudnn_version_string(dnngraph.cudnn_runtime_version())}, "
          f"introspection path {dnngraph.KernelCache.introspection_path()}")
    revision = size = None
    first_json = None  # (revision then, document)
    for i, shape in enumerate(SHAPES):
        g = matmul_graph(*shape, dynamic_shape=True, kernel_cache=kc)
        start = time.perf_counter()
        g.build(handle, [HeuristicMode.A])
        ms = (time.perf_counter() - start) * 1e3
        new_revision, new_size = kc.revision(), kc.size()
        info = g.plan_info()
        print(f"  {'x'.join(map(str, shape))}: {ms:8.2f} ms  revision {new_revision}, size "
              f"{new_size}, cache hit {info.kernel_cache_hit}, {info.describe()}")
        run_and_check(cuda, g, handle, shape, seed=i)
        if revision is None:
            assert new_size >= 1, "the first build compiles a kernel into the cache"
            assert new_revision >= new_size if native else new_revision == new_size
        else:
            assert new_size >= size, "entries are never dropped in this sequence"
            grew = new_revision - revision
            # Library path: one revision per insertion. Native: replacements count too.
            assert grew >= new_size - size if native else grew == new_size - size
            if info.kernel_cache_hit:
                assert (new_revision, new_size) == (revision, size), "a hit changes nothing"
        revision, size = new_revision, new_size

        if first_json is None:
            document = kc.to_json()
            assert entries(document) == size
            first_json = (revision, document)
        elif fresh_json:
            assert entries(kc.to_json()) == size
        elif revision == first_json[0]:
            assert kc.to_json() == first_json[1]
        else:  # cuDNN < 9.27 serializes a cache once: a later read would be stale
            with pytest.raises(dnngraph.Error) as caught:
                kc.to_json()
            assert caught.value.code is ErrorCode.VersionTooOld
            print(f"  to_json(): VersionTooOld ({caught.value.message[:100]}...)")
    assert kc.descriptors_created() == 1
