"""Every candidate engine config of BF16 attention, timed: does one beat heuristics A's choice?

For (batch, heads, head dim) = (4, 16, 128) and S in --lengths, non-causal and causal, the
forward (training: O and Stats) and backward graphs of python/bench/sdpa_vs_torch.py are built
with heuristics A and then Graph.autotune times every candidate the heuristics list (plan_count;
warm-up runs, then the median of --iterations CUDA-event timings on the same buffers). One JSON
line per candidate ({"case": ..., "plan_index": ..., "ms": ..., "tflops": ...}, or "skipped"
with cuDNN's reason), then per case the first candidate (what build() takes), the fastest, their
ratio, torch's cuDNN attention on the same inputs, and the forward against FlashAttention-3's
published 740 TFLOP/s (BF16 forward on an H100, whose arithmetic the H200 shares). Lines that
start with "#" are for people. Every failure is a line, never a crash.

FLOPs as in sdpa_vs_torch.py: forward 4*b*h*s^2*d (halved when causal), backward 2.5x that.

Usage: python3 python/bench/attention_autotune.py [--lengths 4096,8192,16384] [--iterations 10]
"""

import argparse
import json

import dnngraph
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from sdpa_vs_torch import B, D, H, Backward, Forward, cuda_ms, inputs

FA3_BF16_FORWARD_TFLOPS = 740.0


def emit(**fields):
    print(json.dumps(fields), flush=True)


def tune(handle, case, graph, pack, flops, iterations):
    """Times every candidate of `graph` (built with heuristics A); returns (first ms, best ms,
    chosen row's choice text)."""
    count = graph.g.plan_count()
    report = graph.g.autotune(handle, pack, graph.ws, warmup=3, iterations=iterations,
                              max_candidates=count)
    first = report.rows[0].median_ms if report.rows else None
    for row in report.rows:
        if row.median_ms is None:
            emit(case=case, plan_index=row.plan_index, choice=str(row.choice),
                 skipped=row.skipped)
        else:
            emit(case=case, plan_index=row.plan_index, choice=str(row.choice),
                 workspace=row.workspace_size, ms=row.median_ms,
                 tflops=flops / row.median_ms / 1e9)
    chosen = next(r for r in report.rows if r.plan_index == report.chosen_index)
    return first, chosen.median_ms, str(chosen.choice), count


def one_case(handle, s, causal, iterations):
    label = f"s={s} {'causal' if causal else 'full'}"
    flops_fwd = 4 * B * H * s * s * D / (2 if causal else 1)
    flops_bwd = 2.5 * flops_fwd
    q, k, v, _, d_o, fwd_pack, bwd_pack = inputs(s, s + causal)
    fwd, bwd = Forward(handle, s, causal), Backward(handle, s, causal)
    fwd.g.execute(handle, fwd_pack, fwd.ws)  # O and Stats for the backward's inputs
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        torch_fwd = cuda_ms(lambda: torch.nn.functional.scaled_dot_product_attention(
            qg, kg, vg, is_causal=causal), iterations)
        out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
        torch_bwd = cuda_ms(lambda: out.backward(d_o, retain_graph=True), iterations)
    for name, graph, pack, flops, theirs in (("forward", fwd, fwd_pack, flops_fwd, torch_fwd),
                                             ("backward", bwd, bwd_pack, flops_bwd, torch_bwd)):
        case = f"sdpa_{name} {label}"
        try:
            first, best, choice, count = tune(handle, case, graph, pack, flops, iterations)
        except Exception as e:  # noqa: BLE001 - a probe reports every failure
            emit(case=case, error=str(e).splitlines()[0][:300])
            continue
        if first is None or best is None:
            emit(case=case, error="no candidate timed" if best is None else
                 "heuristics A's first candidate was not timed", best_ms=best)
            continue
        gain = first / best
        row = {"case": case, "candidates": count, "first_ms": first, "best_ms": best,
               "best": choice, "first_over_best": gain, "torch_cudnn_ms": theirs,
               "best_tflops": flops / best / 1e9, "torch_cudnn_tflops": flops / theirs / 1e9}
        if name == "forward":
            row["best_over_fa3_anchor"] = flops / best / 1e9 / FA3_BF16_FORWARD_TFLOPS
        emit(**row)
        print(f"# {case:28s} {count} candidates: first {first:.3f} ms, best {best:.3f} ms "
              f"({choice}; first/best {gain:.3f}), {flops / best / 1e9:6.1f} TFLOP/s; torch "
              f"cuDNN {theirs:.3f} ms ({flops / theirs / 1e9:6.1f})", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="4096,8192,16384")
    parser.add_argument("--causal", default="0,1")
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()
    loaded = dnngraph.cudnn_runtime_version()
    print(f"# cuDNN {dnngraph.cudnn_version_string(loaded)}, {torch.cuda.get_device_name()}, "
          f"b {B} h {H} d {D}, bf16; FA-3's BF16 forward anchor {FA3_BF16_FORWARD_TFLOPS} "
          "TFLOP/s", flush=True)
    handle = dnngraph.Handle()
    handle.set_stream(torch.cuda.current_stream().cuda_stream)
    for s in (int(x) for x in args.lengths.split(",")):
        for causal in (bool(int(c)) for c in args.causal.split(",")):
            try:
                one_case(handle, s, causal, args.iterations)
            except Exception as e:  # noqa: BLE001 - a probe reports every failure
                emit(case=f"s={s} causal={causal}", error=str(e).splitlines()[0][:300])
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
