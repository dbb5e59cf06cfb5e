"""On a CUDA device: eight Python threads, each with its own handle, build graphs of several
shapes on one kernel cache nobody built yet (the GIL is released in build and execute), and
every result is checked."""

import threading
import time

import dnngraph
from dnngraph import HeuristicMode

from gpu_support import matmul_graph, run_and_check

THREADS = 8
SHAPES = [(1, 512, 512, 512), (2, 256, 512, 1024), (1, 1024, 256, 512), (4, 128, 128, 256)]


def test_eight_threads_build_on_one_cache_without_failures(cuda):
    kc = dnngraph.KernelCache()
    start = threading.Barrier(THREADS)
    failures, builds, lock = [], [], threading.Lock()

    def work(index):
        try:
            start.wait(timeout=120)
            handle = dnngraph.Handle()
            for j in range(len(SHAPES)):
                shape = SHAPES[(index + j) % len(SHAPES)]
                g = matmul_graph(*shape, dynamic_shape=True, kernel_cache=kc)
                began = time.perf_counter()
                g.build(handle, [HeuristicMode.A])
                with lock:
                    builds.append((time.perf_counter() - began) * 1e3)
                run_and_check(cuda, g, handle, shape, seed=index * 10 + j)
        except Exception as e:  # every failure is collected and reported below
            with lock:
                failures.append(f"thread {index}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    builds.sort()
    print(f"\n{THREADS} threads, {len(builds)} builds in {wall:.2f} s: median "
          f"{builds[len(builds) // 2]:.2f} ms, max {builds[-1]:.1f} ms; revision "
          f"{kc.revision()}, size {kc.size()}, descriptors {kc.descriptors_created()}")
    assert failures == []
    assert len(builds) == THREADS * len(SHAPES)
    assert kc.descriptors_created() == 1
