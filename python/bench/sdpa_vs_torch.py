"""Attention throughput and build cost, dnngraph next to torch's scaled_dot_product_attention
(cuDNN and flash backends) in one process, same GPU, same BF16 inputs, taking turns per shape.

For (batch, heads, seq, head dim) = (4, 16, S, 128), S in 1024..16384 (--lengths), non-causal and
causal: forward (training, with Stats) and backward TFLOP/s (CUDA events, median of --reps after
warm-up), and the time of the first call at a new length (dnngraph: a static graph's build();
torch: the first call, which builds its cuDNN graph). One JSON line per result
({"case": ...}), human-readable lines start with "#". The max |O - torch cuDNN O| of each case is
printed as a sanity check, not a test (tests/gpu/sdpa_test.cpp and python/tests are the tests).

FLOPs counted as torch and cuDNN's samples do: forward 4*b*h*s_q*s_kv*d (halved when causal),
backward 2.5x the forward.
Then the padded route: one forward graph built at --padded-max with a padding mask, run at 8
lengths by the per-batch length tensors, with no build after the first.
Usage: python3 python/bench/sdpa_vs_torch.py [--lengths 1024,2048,...] [--reps N]
"""

import argparse
import json
import math
import statistics
import time

import dnngraph
import torch
from dnngraph import DataType, HeuristicMode
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, D = 4, 16, 128


def emit(case, impl, **fields):
    print(json.dumps({"case": case, "impl": impl, **fields}), flush=True)


def cuda_ms(call, reps, warmup=3):
    for _ in range(warmup):
        call()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def workspace(size):
    return torch.empty(size, dtype=torch.uint8, device="cuda") if size else None


class Forward:
    """A static dnngraph forward graph (training: O and Stats) at one length."""

    def __init__(self, handle, s, causal):
        self.g = dnngraph.Graph(io_data_type=DataType.BFloat16,
                                intermediate_data_type=DataType.Float,
                                compute_data_type=DataType.Float)
        t = [self.g.tensor(name=n, uid=i + 1, dim=[B, H, s, D]) for i, n in enumerate("QKV")]
        o, stats = self.g.sdpa(*t, attn_scale=1 / math.sqrt(D), generate_stats=True,
                               causal_mask=causal, name="attn")
        o.set_output(True).set_uid(4)
        stats.set_output(True).set_uid(5)
        start = time.perf_counter()
        self.g.build(handle, [HeuristicMode.A])
        self.build_ms = (time.perf_counter() - start) * 1e3
        self.ws = workspace(self.g.get_workspace_size())


class Backward:
    def __init__(self, handle, s, causal):
        self.g = dnngraph.Graph(io_data_type=DataType.BFloat16,
                                intermediate_data_type=DataType.Float,
                                compute_data_type=DataType.Float)
        t = [self.g.tensor(name=n, uid=i + 1, dim=[B, H, s, D])
             for i, n in enumerate(["Q", "K", "V", "O", "dO"])]
        stats = self.g.tensor(name="Stats", uid=6, dim=[B, H, s, 1], data_type=DataType.Float)
        outs = self.g.sdpa_backward(*t, stats, attn_scale=1 / math.sqrt(D), causal_mask=causal,
                                    name="bwd")
        for uid, out in enumerate(outs, start=10):
            out.set_output(True).set_uid(uid)
        start = time.perf_counter()
        self.g.build(handle, [HeuristicMode.A])
        self.build_ms = (time.perf_counter() - start) * 1e3
        self.ws = workspace(self.g.get_workspace_size())


def inputs(s, seed):
    """Q, K, V, O, dO of [B, H, s, D] (bf16, uniform in [-1, 1) from `seed`) and the variant
    packs of Forward and Backward over them (with Stats, dQ, dK, dV and the D sum)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, d_o = ((torch.rand(B, H, s, D, device="cuda", generator=gen) * 2 - 1).bfloat16()
                    for _ in range(4))
    o = torch.empty_like(q)
    stats = torch.empty(B, H, s, 1, dtype=torch.float32, device="cuda")
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    d_sum = torch.empty(B, H, s, 1, dtype=torch.float32, device="cuda")
    fwd_pack = {1: q, 2: k, 3: v, 4: o, 5: stats}
    bwd_pack = {1: q, 2: k, 3: v, 4: o, 5: d_o, 6: stats, 10: dq, 11: dk, 12: dv, 13: d_sum}
    return q, k, v, o, d_o, fwd_pack, bwd_pack


def one_length(handle, s, causal, reps):
    label = f"s={s} {'causal' if causal else 'full'}"
    flops_fwd = 4 * B * H * s * s * D / (2 if causal else 1)
    flops_bwd = 2.5 * flops_fwd
    q, k, v, o, d_o, fwd_pack, bwd_pack = inputs(s, s)

    # dnngraph: the builds a new length costs a static graph, then the runs.
    fwd = Forward(handle, s, causal)
    bwd = Backward(handle, s, causal)
    ours_fwd = cuda_ms(lambda: fwd.g.execute(handle, fwd_pack, fwd.ws), reps)
    ours_bwd = cuda_ms(lambda: bwd.g.execute(handle, bwd_pack, bwd.ws), reps)

    rows = {}
    for backend, name in ((SDPBackend.CUDNN_ATTENTION, "torch cudnn"),
                          (SDPBackend.FLASH_ATTENTION, "torch flash")):
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel([backend]):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - start) * 1e3
            f_ms = cuda_ms(lambda: torch.nn.functional.scaled_dot_product_attention(
                qg, kg, vg, is_causal=causal), reps)
            out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            b_ms = cuda_ms(lambda: out.backward(d_o, retain_graph=True), reps)
        rows[name] = (first_ms, f_ms, b_ms, out.detach())

    torch.cuda.synchronize()
    err = (o.float() - rows["torch cudnn"][3].float()).abs().max().item()
    ratio_f = ours_fwd / rows["torch cudnn"][1]
    ratio_b = ours_bwd / rows["torch cudnn"][2]
    emit("sdpa_forward", "dnngraph", s=s, causal=causal, ms=ours_fwd,
         tflops=flops_fwd / ours_fwd / 1e9, build_ms=fwd.build_ms,
         engine=fwd.g.plan_info().engine_id, max_abs_vs_torch_cudnn=err)
    emit("sdpa_backward", "dnngraph", s=s, causal=causal, ms=ours_bwd,
         tflops=flops_bwd / ours_bwd / 1e9, build_ms=bwd.build_ms,
         engine=bwd.g.plan_info().engine_id)
    for name, (first_ms, f_ms, b_ms, _) in rows.items():
        emit("sdpa_forward", name, s=s, causal=causal, ms=f_ms, tflops=flops_fwd / f_ms / 1e9,
             first_call_ms=first_ms)
        emit("sdpa_backward", name, s=s, causal=causal, ms=b_ms, tflops=flops_bwd / b_ms / 1e9)
    print(f"# {label:18s} forward TFLOP/s dnngraph {flops_fwd / ours_fwd / 1e9:6.1f}, "
          f"torch cudnn {flops_fwd / rows['torch cudnn'][1] / 1e9:6.1f}, "
          f"flash {flops_fwd / rows['torch flash'][1] / 1e9:6.1f} "
          f"(time ratio dnngraph/cudnn {ratio_f:.3f}); backward dnngraph "
          f"{flops_bwd / ours_bwd / 1e9:6.1f}, cudnn {flops_bwd / rows['torch cudnn'][2] / 1e9:6.1f}, "
          f"flash {flops_bwd / rows['torch flash'][2] / 1e9:6.1f} (ratio {ratio_b:.3f}); "
          f"new length: dnngraph build fwd {fwd.build_ms:.1f} + bwd {bwd.build_ms:.1f} ms, "
          f"torch cudnn first call {rows['torch cudnn'][0]:.1f} ms; max |O - torch| {err:.2e}",
          flush=True)


def padded_route(handle, s_max, lengths, reps):
    """One forward graph built at s_max with a padding mask, run at each length L <= s_max by
    setting every batch's seq_len_q / seq_len_kv to L: no build after the first. Its TFLOP/s on
    the L x L work, next to torch's cuDNN SDPA on [B, H, L, D] tensors."""
    g = dnngraph.Graph(io_data_type=DataType.BFloat16, intermediate_data_type=DataType.Float,
                       compute_data_type=DataType.Float)
    t = [g.tensor(name=n, uid=i + 1, dim=[B, H, s_max, D]) for i, n in enumerate("QKV")]
    lq = g.tensor(name="seq_q", uid=6, dim=[B, 1, 1, 1], data_type=DataType.Int32)
    lkv = g.tensor(name="seq_kv", uid=7, dim=[B, 1, 1, 1], data_type=DataType.Int32)
    o_t, stats_t = g.sdpa(*t, attn_scale=1 / math.sqrt(D), generate_stats=True,
                          padding_mask=True, seq_len_q=lq, seq_len_kv=lkv, name="attn")
    o_t.set_output(True).set_uid(4)
    stats_t.set_output(True).set_uid(5)
    start = time.perf_counter()
    g.build(handle, [HeuristicMode.A])
    build_ms = (time.perf_counter() - start) * 1e3
    ws = workspace(g.get_workspace_size())
    gen = torch.Generator(device="cuda").manual_seed(99)
    q, k, v = ((torch.rand(B, H, s_max, D, device="cuda", generator=gen) * 2 - 1).bfloat16()
               for _ in range(3))
    o = torch.empty_like(q)
    stats = torch.empty(B, H, s_max, 1, dtype=torch.float32, device="cuda")
    seq = torch.empty(B, 1, 1, 1, dtype=torch.int32, device="cuda")
    pack = {1: q, 2: k, 3: v, 4: o, 5: stats, 6: seq, 7: seq}
    print(f"# padded route: one build at s_max {s_max} ({build_ms:.1f} ms, "
          f"{g.plan_info().describe()}), then lengths {lengths} with no build", flush=True)
    for length in lengths:
        seq.fill_(length)
        flops = 4 * B * H * length * length * D
        ms = cuda_ms(lambda: g.execute(handle, pack, ws), reps)
        qs, ks, vs = (x[:, :, :length].contiguous() for x in (q, k, v))
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            ref = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs)
            t_ms = cuda_ms(lambda: torch.nn.functional.scaled_dot_product_attention(qs, ks, vs),
                           reps)
        torch.cuda.synchronize()
        err = (o[:, :, :length].float() - ref.float()).abs().max().item()
        emit("sdpa_forward_padded_route", "dnngraph", s_max=s_max, length=length, ms=ms,
             tflops=flops / ms / 1e9, torch_cudnn_ms=t_ms, torch_cudnn_tflops=flops / t_ms / 1e9,
             builds=0, max_abs_vs_torch_cudnn=err)
        print(f"#   L {length:5d}: dnngraph {flops / ms / 1e9:6.1f} TFLOP/s ({ms:.3f} ms), "
              f"torch cudnn at [B,H,L,D] {flops / t_ms / 1e9:6.1f} ({t_ms:.3f} ms); "
              f"max |O - torch| {err:.2e}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="1024,2048,4096,8192,16384")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--causal", default="0,1")
    parser.add_argument("--padded-max", type=int, default=8192,
                        help="the padded route's build length (0: skip the route)")
    parser.add_argument("--padded-lengths", default="512,1024,1536,2048,3000,4096,6000,8192")
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name()}, cuDNN loaded {dnngraph.cudnn_runtime_version()} from {dnngraph.cudnn_library_path()}, torch "
          f"{torch.__version__} (its cuDNN {torch.backends.cudnn.version()}), b {B} h {H} d {D} "
          f"BF16", flush=True)
    handle = dnngraph.Handle()
    for s in (int(x) for x in args.lengths.split(",")):
        for causal in (c == "1" for c in args.causal.split(",")):
            one_length(handle, s, causal, args.reps)
    if args.padded_max:
        padded_route(handle, args.padded_max,
                     [int(x) for x in args.padded_lengths.split(",")], args.reps)


if __name__ == "__main__":
    main()
