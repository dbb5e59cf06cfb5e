"""Host time of Graph.execute() from Python, median of many calls: the same four cases as the C++
bench (bench/execute_overhead_bench.cpp, `bench_execute_overhead`), with torch tensors in the
variant pack, plus the same calls with int device pointers (no per-call data_ptr(), and none of
the per-tensor dims/strides/dtype checks torch tensors get).

fp16 matmul built on b=1, M=N=K=1024; overrides run M=N=K=512 / 256. Not a test: prints a table.
Usage: python3 python/bench/execute_overhead.py [calls]
"""

import statistics
import sys
import time

import dnngraph
import torch
from dnngraph import DataType, HeuristicMode


def make_graph(handle, overrides):
    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float,
                       override_shape=overrides)
    a = g.tensor(name="A", uid=1, dim=[1, 1024, 1024])
    b = g.tensor(name="B", uid=2, dim=[1, 1024, 1024])
    g.matmul(a, b).set_output(True).set_uid(3)
    g.build(handle, [HeuristicMode.A])
    return g


def override_set(n):
    shapes = [[1, n, n]] * 3
    return dict(override_uids=[1, 2, 3], override_shapes=shapes,
                override_strides=[dnngraph.packed_strides(s) for s in shapes])


def median_us(calls, call):
    times = []
    clock = time.perf_counter_ns
    for i in range(calls):
        start = clock()
        call()
        times.append(clock() - start)
        if i % 256 == 255:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return statistics.median(times) / 1e3


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    handle = dnngraph.Handle(stream=torch.cuda.current_stream().cuda_stream)
    tensors = [torch.zeros(1024 * 1024, dtype=torch.half, device="cuda") for _ in range(3)]
    # The same memory as each call's shapes (execute() checks a torch tensor's dims and strides
    # against the graph's, or the override's): [1, n, n] views of the buffers' start.
    packs = {n: {uid + 1: t[:n * n].view(1, n, n) for uid, t in enumerate(tensors)}
             for n in (1024, 512, 256)}
    ints = {uid: t.data_ptr() for uid, t in packs[1024].items()}
    plain, over = make_graph(handle, False), make_graph(handle, True)
    plain_ws_size = plain.get_workspace_size()
    plain_ws = torch.empty(plain_ws_size, dtype=torch.uint8, device="cuda") if plain_ws_size else None
    s512, s256 = override_set(512), override_set(256)
    for s in (s512, s256):
        assert over.get_workspace_size(handle, **s) == 0, "the bench assumes no workspace"

    turn = [0]

    def alternating(p):  # p: the int pack, or None for the torch views of each call's shapes
        turn[0] += 1
        n = 512 if turn[0] % 2 == 0 else 256
        over.execute(handle, p or packs[n], None, **(s512 if n == 512 else s256))

    cases = [
        ("static graph, no overrides", lambda p: plain.execute(handle, p or packs[1024], plain_ws)),
        ("override-enabled graph, no overrides",
         lambda p: over.execute(handle, p or packs[1024], None)),
        ("with overrides, same shapes every call",
         lambda p: over.execute(handle, p or packs[512], None, **s512)),
        ("with overrides, two shape sets taking turns", alternating),
    ]
    version = dnngraph.cudnn_version_string(dnngraph.cudnn_runtime_version())
    print(f"execute() host time from Python, median of {calls} calls (cuDNN {version}, "
          f"Python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"{over.plan_info().override_path})")
    print(f"  {'':46} {'torch tensors':>14} {'int pointers':>14}")
    for name, call in cases:
        t_torch = median_us(calls, lambda: call(None))
        t_int = median_us(calls, lambda: call(ints))
        print(f"  {name:46} {t_torch:11.2f} us {t_int:11.2f} us")
    print(f"  (static plan: {plain.plan_info().describe()})")


if __name__ == "__main__":
    main()
