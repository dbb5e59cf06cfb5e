"""What cuDNN's engines make of a transformer's matmuls, next to torch's (cuBLAS) on the same
shapes: for each GPT-2-small shape (batch 8 x sequence 1024 tokens, d_model 768), the matmul
graph dnngraph.torch.linear builds (bf16 I/O, float32 compute, the weight read transposed in
place) is built under heuristics A, B and Fallback, and each mode's first max-candidates
candidates are timed (Graph.autotune: CUDA events, median). One JSON line per candidate, then a
table per shape: torch.mm's time, the heuristic's first choice (what dnngraph.torch runs) and
the fastest candidate of any mode, with engine ids.

Found in python/bench/train_gpt.py's profile (session 16): cuDNN 9.19's first choices were
runtime-compiled sm80 matmul kernels, about half the speed of cuBLAS's sm90 kernels on the H200.

Usage: python3 python/bench/matmul_engines_probe.py [--max-candidates N]
"""

import argparse
import json

import torch

import dnngraph
from dnngraph import DataType, HeuristicMode

import sdpa_vs_torch  # noqa: E402 (beside this file: its cuda_ms)

TOKENS = 8 * 1024
SHAPES = [  # (name, m, k, n, weight transposed in place)
    ("qkv", TOKENS, 768, 2304, True),
    ("proj", TOKENS, 768, 768, True),
    ("fc1", TOKENS, 768, 3072, True),
    ("fc2", TOKENS, 3072, 768, True),
    ("lm_head", TOKENS, 768, 32768, True),
    ("fc1 dgrad", TOKENS, 3072, 768, False),
    ("fc1 wgrad", 3072, TOKENS, 768, False),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-candidates", type=int, default=12)
    args = parser.parse_args()
    print(f"# cuDNN {dnngraph.cudnn_version_string(dnngraph.cudnn_runtime_version())}, "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    handle = dnngraph.Handle()
    handle.set_stream(torch.cuda.current_stream().cuda_stream)
    workspace = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    table = []
    for name, m, k, n, transposed in SHAPES:
        a = torch.randn(m, k, device="cuda").bfloat16()
        w = torch.randn(n, k, device="cuda").bfloat16() if transposed else None
        b = w.t() if transposed else torch.randn(k, n, device="cuda").bfloat16()
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        torch_ms = sdpa_vs_torch.cuda_ms(lambda: torch.mm(a, b, out=c), 30)
        first, best = None, None
        for mode in (HeuristicMode.A, HeuristicMode.B, HeuristicMode.Fallback):
            g = dnngraph.Graph(io_data_type=DataType.BFloat16, compute_data_type=DataType.Float)
            x = g.tensor(name="a", uid=1, dim=[1, m, k])
            y = g.tensor(name="b", uid=2, dim=[1, k, n],
                         stride=[k * n, 1, k] if transposed else [k * n, n, 1])
            g.matmul(x, y, name="matmul").set_output(True).set_uid(3)
            try:
                g.build(handle, [mode])
                report = g.autotune(handle, {1: a[None], 2: b[None], 3: c[None]}, workspace,
                                    max_candidates=args.max_candidates, iterations=20)
            except dnngraph.Error as e:
                print(json.dumps({"shape": name, "mode": mode.name,
                                  "error": str(e).splitlines()[0][:160]}), flush=True)
                continue
            for row in report.rows:
                line = {"shape": name, "mode": mode.name, "index": row.plan_index,
                        "engine": row.choice.engine_id, "knobs": row.choice.knobs,
                        "workspace": row.workspace_size, "ms": row.median_ms,
                        "skipped": row.skipped, "torch_ms": torch_ms}
                print(json.dumps(line), flush=True)
                if row.median_ms is None:
                    continue
                if mode == HeuristicMode.A and row.plan_index == 0:
                    first = line
                if best is None or row.median_ms < best["ms"]:
                    best = line
        table.append((name, m, k, n, torch_ms, first, best))
    print("# shape      |    m x k x n          | torch.mm ms | cuDNN A first ms (engine) | "
          "fastest ms (mode, engine) | torch / fastest")
    for name, m, k, n, torch_ms, first, best in table:
        f = f"{first['ms']:.3f} ({first['engine']})" if first else "-"
        b = f"{best['ms']:.3f} ({best['mode']}, {best['engine']})" if best else "-"
        ratio = f"{torch_ms / best['ms']:.2f}x" if best else "-"
        print(f"# {name:10s} | {m:6d} x {k:5d} x {n:5d} | {torch_ms:11.3f} | {f:25s} | "
              f"{b:25s} | {ratio}")


if __name__ == "__main__":
    main()
