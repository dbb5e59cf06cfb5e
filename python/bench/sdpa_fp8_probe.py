"""FP8 attention forward (Graph.sdpa_fp8) on a Hopper GPU through the Python API, next to torch's
BF16 scaled_dot_product_attention (cuDNN backend) on the same values.

1. Correctness: b 2, h 4 (and h_k 2), s 512, d 128, causal and not: Q, K, V quantized to
   torch.float8_e4m3fn with per-tensor scales, run through sdpa_fp8, O dequantized and compared
   with a float32 reference computed from the dequantized FP8 inputs (torch's math SDPA); the two
   amax outputs next to the reference's max |P| and max |O|.
2. Throughput: b 4, h 16, d 128, s 4096 and 8192 (--lengths), causal and not: dnngraph FP8
   forward (inference) and torch BF16 SDPA (cuDNN backend) forward, CUDA events around --reps
   calls, the median of 5 such loops after a warm-up loop; TFLOP/s as torch counts them
   (4 b h s^2 d, halved when causal).

Every result is one JSON line ({"case": ...}); a failure is a line with "error" (the probe never
stops on one); lines starting with "#" are for people. Run on the GPU machine with the dnngraph
wheel installed in torch's environment: python3 python/bench/sdpa_fp8_probe.py [--reps N]
"""

import argparse
import json
import math
import statistics
import time
import traceback

E4M3_MAX = 448.0
# sdpa_fp8's six factors in its order, and their uids.
FACTOR_UIDS = {"descale_q": 11, "descale_k": 12, "descale_v": 13, "descale_s": 14, "scale_s": 15,
               "scale_o": 16}
SCALE_S = 256.0  # a power of two: P <= 1 stays below E4M3's 448 after scale_s


def emit(case, **fields):
    print(json.dumps({"case": case, **fields}), flush=True)


def guarded(case, call, **context):
    """Runs call(); a failure becomes a JSON line, never an exception."""
    try:
        return call()
    except Exception as e:  # noqa: BLE001 - the probe reports every failure as a line
        emit(case, **context, error=f"{type(e).__name__}: {e}",
             where=traceback.format_exc(limit=3).splitlines()[-3:])
        return None


def power_of_two_scale(amax):
    """The largest power of two s with amax * s <= 448 (exact to apply and to undo)."""
    if not amax or not math.isfinite(amax):
        return 1.0
    return 2.0 ** math.floor(math.log2(E4M3_MAX / amax))


def cuda_ms(torch, call, reps, rounds=5):
    """Milliseconds per call: CUDA events around `reps` calls back to back, the median of
    `rounds` such loops after one warm-up loop (launch gaps amortized, as in training)."""
    per_call = []
    for round_index in range(rounds + 1):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            call()
        end.record()
        end.synchronize()
        if round_index > 0:
            per_call.append(start.elapsed_time(end) / reps)
    return statistics.median(per_call)


class Fp8Attention:
    """One static sdpa_fp8 graph: Q [b, h, s, d], K and V [b, h_k, s, d], Fp8E4M3, BHSD."""

    def __init__(self, dnngraph, handle, b, h, h_k, s, d, causal):
        from dnngraph import DataType, HeuristicMode
        g = dnngraph.Graph(io_data_type=DataType.Fp8E4M3, intermediate_data_type=DataType.Float,
                           compute_data_type=DataType.Float)
        q = g.tensor(name="Q", uid=1, dim=[b, h, s, d])
        k = g.tensor(name="K", uid=2, dim=[b, h_k, s, d])
        v = g.tensor(name="V", uid=3, dim=[b, h_k, s, d])
        factors = [g.tensor(name=name, uid=uid, dim=[1, 1, 1, 1], data_type=DataType.Float)
                   for name, uid in FACTOR_UIDS.items()]
        o, _, amax_s, amax_o = g.sdpa_fp8(q, k, v, *factors, attn_scale=1 / math.sqrt(d),
                                          causal_mask=causal, name="attn")
        o.set_output(True).set_uid(4)
        amax_s.set_output(True).set_uid(6)
        amax_o.set_output(True).set_uid(7)
        start = time.perf_counter()
        g.build(handle, [HeuristicMode.A])
        self.build_ms = (time.perf_counter() - start) * 1e3
        self.g = g
        self.workspace_size = g.get_workspace_size()
        self.plan = g.plan_info().describe()


def quantized_inputs(torch, b, h, h_k, s, d, seed):
    """Q, K, V: normal values quantized to E4M3 with power-of-two per-tensor scales; returns the
    FP8 tensors, their descales and the dequantized float32 values the reference reads."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    out = []
    for heads in (h, h_k, h_k):
        x = torch.randn(b, heads, s, d, device="cuda", generator=gen)
        scale = power_of_two_scale(x.abs().max().item())
        x8 = (x * scale).to(torch.float8_e4m3fn)
        out.append((x8, 1.0 / scale, x8.float() / scale))
    return out


def run_fp8(torch, handle, attention, inputs, scale_o):
    """Runs the graph once; returns O dequantized (float32), Amax_S, Amax_O."""
    (q8, dq, _), (k8, dk, _), (v8, dv, _) = inputs
    b, h, s, d = q8.shape

    def factor(x):
        return torch.tensor([x], dtype=torch.float32, device="cuda").reshape(1, 1, 1, 1)

    o = torch.empty(b, h, s, d, dtype=torch.float8_e4m3fn, device="cuda")
    amax_s = torch.full((1, 1, 1, 1), float("nan"), dtype=torch.float32, device="cuda")
    amax_o = torch.full((1, 1, 1, 1), float("nan"), dtype=torch.float32, device="cuda")
    values = {"descale_q": dq, "descale_k": dk, "descale_v": dv, "descale_s": 1 / SCALE_S,
              "scale_s": SCALE_S, "scale_o": scale_o}
    pack = {1: q8, 2: k8, 3: v8, 4: o, 6: amax_s, 7: amax_o}
    pack.update({uid: factor(values[name]) for name, uid in FACTOR_UIDS.items()})
    ws = (torch.empty(attention.workspace_size, dtype=torch.uint8, device="cuda")
          if attention.workspace_size else None)
    attention.g.execute(handle, pack, ws)
    torch.cuda.synchronize()
    return o.float() / scale_o, amax_s.item(), amax_o.item(), pack, ws


def reference(torch, inputs, causal):
    """float32 attention of the dequantized inputs (math backend), and max |P|."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    (_, _, q), (_, _, k), (_, _, v) = inputs
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    with sdpa_kernel([SDPBackend.MATH]):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        s = q.shape[2]
        mask = torch.ones(s, s, dtype=torch.bool, device="cuda").triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    p_max = torch.softmax(scores, dim=-1).max().item()
    return o, p_max


def correctness(dnngraph, torch, handle, h_k, causal):
    b, h, s, d = 2, 4, 512, 128
    context = dict(b=b, h=h, h_k=h_k, s=s, d=d, causal=causal)
    inputs = quantized_inputs(torch, b, h, h_k, s, d, seed=7 + h_k + int(causal))
    attention = Fp8Attention(dnngraph, handle, b, h, h_k, s, d, causal)
    ref, p_max = reference(torch, inputs, causal)
    scale_o = power_of_two_scale(ref.abs().max().item())
    o, amax_s, amax_o, _, _ = run_fp8(torch, handle, attention, inputs, scale_o)
    err = (o - ref).abs()
    emit("sdpa_fp8_correctness", **context, build_ms=attention.build_ms, plan=attention.plan,
         max_abs_error=err.max().item(), mean_abs_error=err.mean().item(),
         max_abs_reference=ref.abs().max().item(), nan_count=int(o.isnan().sum().item()),
         amax_s=amax_s, reference_max_p=p_max, amax_o=amax_o,
         reference_max_abs_o=ref.abs().max().item(), scale_o=scale_o)


def throughput(dnngraph, torch, handle, s, causal, reps):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, d = 4, 16, 128
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    context = dict(b=b, h=h, s=s, d=d, causal=causal)
    inputs = quantized_inputs(torch, b, h, h, s, d, seed=s + int(causal))
    attention = Fp8Attention(dnngraph, handle, b, h, h, s, d, causal)
    # Delayed scaling: a first run measures Amax_O, the timed runs use the scale it gives.
    _, _, amax_o, _, _ = run_fp8(torch, handle, attention, inputs, 1.0)
    o, amax_s, amax_o, pack, ws = run_fp8(torch, handle, attention, inputs,
                                          power_of_two_scale(amax_o))
    fp8_ms = cuda_ms(torch, lambda: attention.g.execute(handle, pack, ws), reps)
    q, k, v = (x[2].bfloat16() for x in inputs)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        bf16 = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        bf16_ms = cuda_ms(torch, lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal), reps)
    torch.cuda.synchronize()
    diff = (o - bf16.float()).abs().max().item()
    emit("sdpa_fp8_throughput", impl="dnngraph fp8", **context, ms=fp8_ms,
         tflops=flops / fp8_ms / 1e9, build_ms=attention.build_ms, plan=attention.plan,
         amax_s=amax_s, amax_o=amax_o, max_abs_vs_torch_bf16=diff)
    emit("sdpa_fp8_throughput", impl="torch bf16 cudnn", **context, ms=bf16_ms,
         tflops=flops / bf16_ms / 1e9)
    print(f"# s {s:5d} {'causal' if causal else 'full  '}: dnngraph FP8 "
          f"{flops / fp8_ms / 1e9:7.1f} TFLOP/s ({fp8_ms:.3f} ms), torch BF16 cuDNN "
          f"{flops / bf16_ms / 1e9:7.1f} ({bf16_ms:.3f} ms), speed-up {bf16_ms / fp8_ms:.2f}x; "
          f"max |O_fp8 - O_bf16| {diff:.3g}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="4096,8192")
    parser.add_argument("--causal", default="0,1")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    modules = guarded("setup", lambda: (__import__("dnngraph"), __import__("torch")))
    if modules is None:
        return
    dnngraph, torch = modules
    if not torch.cuda.is_available():
        emit("setup", error="no CUDA device")
        return
    emit("setup", device=torch.cuda.get_device_name(),
         capability=list(torch.cuda.get_device_capability()),
         cudnn_loaded=dnngraph.cudnn_runtime_version(), cudnn_path=dnngraph.cudnn_library_path(),
         torch=torch.__version__, torch_cudnn=torch.backends.cudnn.version(),
         fp8_attention_offered=dnngraph.cudnn_offers(dnngraph.CudnnCapability.Fp8Attention))
    handle = guarded("setup", dnngraph.Handle)
    if handle is None:
        return
    for h_k in (4, 2):
        for causal in (False, True):
            guarded("sdpa_fp8_correctness",
                    lambda: correctness(dnngraph, torch, handle, h_k, causal),
                    h_k=h_k, causal=causal)
    for s in (int(x) for x in args.lengths.split(",")):
        for causal in (c == "1" for c in args.causal.split(",")):
            guarded("sdpa_fp8_throughput",
                    lambda: throughput(dnngraph, torch, handle, s, causal, args.reps),
                    s=s, causal=causal)


if __name__ == "__main__":
    main()
