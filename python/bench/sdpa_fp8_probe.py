"""FP8 attention (Graph.sdpa_fp8 and Graph.sdpa_fp8_backward) on a Hopper GPU through the Python
API, next to torch's BF16 scaled_dot_product_attention (cuDNN backend) on the same values.

Forward (--parts forward):
1. Correctness: b 2, h 4 (and h_k 2), s 512, d 128, causal and not: Q, K, V quantized to
   torch.float8_e4m3fn with per-tensor scales, run through sdpa_fp8, O dequantized and compared
   with a float32 reference computed from the dequantized FP8 inputs (torch's math SDPA); the two
   amax outputs next to the reference's max |P| and max |O|.
2. Throughput: b 4, h 16, d 128, s 4096 and 8192 (--lengths), causal and not: dnngraph FP8
   forward (inference) and torch BF16 SDPA (cuDNN backend) forward, CUDA events around --reps
   calls, the median of 5 such loops after a warm-up loop; TFLOP/s as torch counts them
   (4 b h s^2 d, halved when causal).

Backward (--parts backward):
3. Correctness: b 2, h 4 (and h_k 2), s 512, d 128, causal and not, dO and the gradients in
   E4M3 (and E5M2): O and Stats from dnngraph's FP8 forward (training), dO quantized with a
   per-tensor scale, the gradients' scales from a first run's amax (delayed scaling), then dQ, dK,
   dV dequantized and compared with a float32 reference from the dequantized FP8 inputs (D from
   the FP8 O, as the engine reads it); the four amax next to the reference's max |dQ|, |dK|, |dV|
   and |dS| (cuDNN's Amax_dP is the amax of dS).
4. Throughput: b 4, h 16, d 128, s 4096 and 8192, causal and not: dnngraph FP8 backward, torch
   BF16 SDPA backward (cuDNN backend) and dnngraph's BF16 sdpa_backward in the same run, timed as
   above; TFLOP/s with the backward's FLOPs 2.5 times the forward's (4 b h s^2 d, halved when
   causal).

Every result is one JSON line ({"case": ...}); a failure is a line with "error" (the probe never
stops on one); lines starting with "#" are for people. Run on the GPU machine with the dnngraph
wheel installed in torch's environment:
python3 python/bench/sdpa_fp8_probe.py [--parts forward,backward] [--reps N]
"""

import argparse
import json
import math
import statistics
import time
import traceback

E4M3_MAX = 448.0
E5M2_MAX = 57344.0
# sdpa_fp8's six factors in its order, and their uids.
FACTOR_UIDS = {"descale_q": 11, "descale_k": 12, "descale_v": 13, "descale_s": 14, "scale_s": 15,
               "scale_o": 16}
SCALE_S = 256.0  # a power of two: P <= 1 stays below E4M3's 448 after scale_s
# sdpa_fp8_backward's twelve factors in its order, and their uids; Q, K, V, O, dO, Stats are 1-6,
# the seven outputs (dQ, dK, dV, Amax_dQ, Amax_dK, Amax_dV, Amax_dP) 30-36.
BACKWARD_FACTORS = ["descale_q", "descale_k", "descale_v", "descale_o", "descale_do", "descale_s",
                    "descale_dp", "scale_s", "scale_dq", "scale_dk", "scale_dv", "scale_dp"]
BACKWARD_FACTOR_UIDS = {name: 11 + i for i, name in enumerate(BACKWARD_FACTORS)}
BACKWARD_OUTPUTS = ["dQ", "dK", "dV", "Amax_dQ", "Amax_dK", "Amax_dV", "Amax_dP"]


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


def power_of_two_scale(amax, largest=E4M3_MAX):
    """The largest power of two s with amax * s <= largest (448 for E4M3: exact to apply and to
    undo)."""
    if not amax or not math.isfinite(amax):
        return 1.0
    return 2.0 ** math.floor(math.log2(largest / amax))


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
    """One static sdpa_fp8 graph: Q [b, h, s, d], K and V [b, h_k, s, d], Fp8E4M3, BHSD; with
    stats=True (training) Stats too (uid 5)."""

    def __init__(self, dnngraph, handle, b, h, h_k, s, d, causal, stats=False):
        from dnngraph import DataType
        g = dnngraph.Graph(io_data_type=DataType.Fp8E4M3, intermediate_data_type=DataType.Float,
                           compute_data_type=DataType.Float)
        q = g.tensor(name="Q", uid=1, dim=[b, h, s, d])
        k = g.tensor(name="K", uid=2, dim=[b, h_k, s, d])
        v = g.tensor(name="V", uid=3, dim=[b, h_k, s, d])
        factors = [g.tensor(name=name, uid=uid, dim=[1, 1, 1, 1], data_type=DataType.Float)
                   for name, uid in FACTOR_UIDS.items()]
        o, st, amax_s, amax_o = g.sdpa_fp8(q, k, v, *factors, attn_scale=1 / math.sqrt(d),
                                           causal_mask=causal, generate_stats=stats, name="attn")
        o.set_output(True).set_uid(4)
        if st is not None:
            st.set_output(True).set_uid(5)
        amax_s.set_output(True).set_uid(6)
        amax_o.set_output(True).set_uid(7)
        self.g = g
        self.build_ms, self.workspace_size, self.plan = build(g, handle)


def build(graph, handle):
    """Builds a static graph (heuristics A); returns its build time in ms, workspace size and
    plan."""
    from dnngraph import HeuristicMode
    start = time.perf_counter()
    graph.build(handle, [HeuristicMode.A])
    build_ms = (time.perf_counter() - start) * 1e3
    return build_ms, graph.get_workspace_size(), graph.plan_info().describe()


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


def run_fp8(torch, handle, attention, inputs, scale_o, stats=None):
    """Runs the graph once (writing Stats into `stats` where given); returns O dequantized
    (float32), Amax_S, Amax_O, the variant pack and the workspace."""
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
    if stats is not None:
        pack[5] = stats
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


def autotune(torch, handle, attention, pack, ws, flops, context):
    """Every candidate cuDNN lists for the FP8 forward, timed (Graph.autotune: warm-up runs, the
    median of 10 timings): does one reach what heuristics A's first does not?"""
    g = attention.g
    report = g.autotune(handle, pack, ws, warmup=3, iterations=10, max_candidates=g.plan_count())
    for row in report.rows:
        if row.median_ms is None:
            emit("sdpa_fp8_autotune", **context, plan_index=row.plan_index,
                 choice=str(row.choice), skipped=row.skipped)
        else:
            emit("sdpa_fp8_autotune", **context, plan_index=row.plan_index,
                 choice=str(row.choice), workspace=row.workspace_size, ms=row.median_ms,
                 tflops=flops / row.median_ms / 1e9, chosen=row.plan_index == report.chosen_index)


def throughput(dnngraph, torch, handle, s, causal, reps, tune=False):
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
    if tune:
        guarded("sdpa_fp8_autotune",
                lambda: autotune(torch, handle, attention, pack, ws, flops, context), **context)
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


# --- the backward ---

def float8(torch, grad_type):
    return torch.float8_e5m2 if grad_type == "e5m2" else torch.float8_e4m3fn


class Fp8AttentionBackward:
    """One static sdpa_fp8_backward graph of the shapes of Fp8Attention; dO and the gradients in
    `grad_type` (e4m3 or e5m2)."""

    def __init__(self, dnngraph, handle, b, h, h_k, s, d, causal, grad_type):
        from dnngraph import DataType
        g = dnngraph.Graph(io_data_type=DataType.Fp8E4M3, intermediate_data_type=DataType.Float,
                           compute_data_type=DataType.Float)
        q = g.tensor(name="Q", uid=1, dim=[b, h, s, d])
        k = g.tensor(name="K", uid=2, dim=[b, h_k, s, d])
        v = g.tensor(name="V", uid=3, dim=[b, h_k, s, d])
        o = g.tensor(name="O", uid=4, dim=[b, h, s, d])
        d_o = g.tensor(name="dO", uid=5, dim=[b, h, s, d],
                       data_type=DataType.Fp8E5M2 if grad_type == "e5m2" else DataType.Fp8E4M3)
        stats = g.tensor(name="Stats", uid=6, dim=[b, h, s, 1], data_type=DataType.Float)
        factors = [g.tensor(name=name, uid=uid, dim=[1, 1, 1, 1], data_type=DataType.Float)
                   for name, uid in BACKWARD_FACTOR_UIDS.items()]
        outputs = g.sdpa_fp8_backward(q, k, v, o, d_o, stats, *factors,
                                      attn_scale=1 / math.sqrt(d), causal_mask=causal,
                                      name="attn_backward")
        for i, t in enumerate(outputs):
            t.set_output(True).set_uid(30 + i)
        self.g = g
        self.build_ms, self.workspace_size, self.plan = build(g, handle)
        self.largest = E5M2_MAX if grad_type == "e5m2" else E4M3_MAX


def fp8_forward_for_backward(dnngraph, torch, handle, inputs, causal):
    """O (E4M3) and Stats of the FP8 forward in training, scale_o from a first run's Amax_O (the
    delayed scaling a training loop does); returns O, its descale and Stats."""
    q8 = inputs[0][0]
    b, h, s, d = q8.shape
    h_k = inputs[1][0].shape[1]
    forward = Fp8Attention(dnngraph, handle, b, h, h_k, s, d, causal, stats=True)
    stats = torch.empty(b, h, s, 1, dtype=torch.float32, device="cuda")
    _, _, amax_o, _, _ = run_fp8(torch, handle, forward, inputs, 1.0, stats)
    scale_o = power_of_two_scale(amax_o)
    _, _, _, pack, _ = run_fp8(torch, handle, forward, inputs, scale_o, stats)
    return pack[4], 1.0 / scale_o, stats


def quantized(torch, x, dtype, largest):
    """x quantized to `dtype` with a power-of-two per-tensor scale: (FP8 tensor, descale,
    dequantized float32)."""
    scale = power_of_two_scale(x.abs().max().item(), largest)
    x8 = (x * scale).to(dtype)
    return x8, 1.0 / scale, x8.float() / scale


def run_fp8_backward(torch, handle, backward, tensors, scales):
    """Runs the backward once with the output scales `scales` (scale_dq, scale_dk, scale_dv,
    scale_dp); returns dQ, dK, dV dequantized (float32), the four amax, the pack and the
    workspace. tensors: Q, K, V, O, dO as (FP8 tensor, descale) and Stats."""
    (q8, dq_), (k8, dk_), (v8, dv_), (o8, do_), (d_o8, ddo_), stats = tensors
    scale_dq, scale_dk, scale_dv, scale_dp = scales

    def factor(x):
        return torch.tensor([x], dtype=torch.float32, device="cuda").reshape(1, 1, 1, 1)

    grads = [torch.empty_like(t, dtype=d_o8.dtype) for t in (q8, k8, v8)]
    amax = [torch.full((1, 1, 1, 1), float("nan"), dtype=torch.float32, device="cuda")
            for _ in range(4)]
    values = {"descale_q": dq_, "descale_k": dk_, "descale_v": dv_, "descale_o": do_,
              "descale_do": ddo_, "descale_s": 1 / SCALE_S, "descale_dp": 1 / scale_dp,
              "scale_s": SCALE_S, "scale_dq": scale_dq, "scale_dk": scale_dk,
              "scale_dv": scale_dv, "scale_dp": scale_dp}
    pack = {1: q8, 2: k8, 3: v8, 4: o8, 5: d_o8, 6: stats}
    pack.update({uid: factor(values[name]) for name, uid in BACKWARD_FACTOR_UIDS.items()})
    pack.update({30 + i: t for i, t in enumerate(grads + amax)})
    ws = (torch.empty(backward.workspace_size, dtype=torch.uint8, device="cuda")
          if backward.workspace_size else None)
    backward.g.execute(handle, pack, ws)
    torch.cuda.synchronize()
    dequantized = [t.float() / scale for t, scale in zip(grads, (scale_dq, scale_dk, scale_dv))]
    return dequantized, [a.item() for a in amax], pack, ws


def run_fp8_backward_scaled(torch, handle, backward, tensors):
    """Delayed scaling: a first run with scales 1 measures the four amax, the second uses the
    scales they give; returns run_fp8_backward's result of the second and the scales."""
    _, amax, _, _ = run_fp8_backward(torch, handle, backward, tensors, (1.0, 1.0, 1.0, 1.0))
    scales = tuple(power_of_two_scale(a, backward.largest) for a in amax)
    return run_fp8_backward(torch, handle, backward, tensors, scales), scales


def reference_backward(torch, inputs, o, d_o, causal):
    """float32 gradients of the dequantized inputs: P from the exact scores, D = rowsum(dO * O)
    with the FP8 O the engine reads; grouped-query dK and dV summed over each group. Returns dQ,
    dK, dV and max |dS|."""
    (_, _, q), (_, _, k), (_, _, v) = inputs
    group = q.shape[1] // k.shape[1]
    kx = k.repeat_interleave(group, dim=1)
    vx = v.repeat_interleave(group, dim=1)
    scale = 1 / math.sqrt(q.shape[-1])
    scores = (q @ kx.transpose(-1, -2)) * scale
    if causal:
        s = q.shape[2]
        mask = torch.ones(s, s, dtype=torch.bool, device="cuda").triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    dv = p.transpose(-1, -2) @ d_o
    dp = d_o @ vx.transpose(-1, -2)
    d = (d_o * o).sum(dim=-1, keepdim=True)
    ds = p * (dp - d) * scale
    dq = ds @ kx
    dk = ds.transpose(-1, -2) @ q
    b, h, s, dim = dk.shape
    dk = dk.reshape(b, h // group, group, s, dim).sum(dim=2)
    dv = dv.reshape(b, h // group, group, s, dim).sum(dim=2)
    return dq, dk, dv, ds.abs().max().item()


def backward_inputs(dnngraph, torch, handle, b, h, h_k, s, d, causal, grad_type, seed):
    """Q, K, V quantized (E4M3), the FP8 forward's O and Stats, dO quantized to grad_type."""
    inputs = quantized_inputs(torch, b, h, h_k, s, d, seed=seed)
    o8, descale_o, stats = fp8_forward_for_backward(dnngraph, torch, handle, inputs, causal)
    gen = torch.Generator(device="cuda").manual_seed(seed + 1)
    d_o = torch.randn(b, h, s, d, device="cuda", generator=gen)
    largest = E5M2_MAX if grad_type == "e5m2" else E4M3_MAX
    d_o8, descale_do, d_o_real = quantized(torch, d_o, float8(torch, grad_type), largest)
    tensors = [(x[0], x[1]) for x in inputs] + [(o8, descale_o), (d_o8, descale_do), stats]
    return inputs, tensors, o8.float() * descale_o, d_o_real


def backward_correctness(dnngraph, torch, handle, h_k, causal, grad_type):
    b, h, s, d = 2, 4, 512, 128
    context = dict(b=b, h=h, h_k=h_k, s=s, d=d, causal=causal, grad_type=grad_type)
    inputs, tensors, o_real, d_o_real = backward_inputs(
        dnngraph, torch, handle, b, h, h_k, s, d, causal, grad_type,
        seed=101 + h_k + int(causal) + (10 if grad_type == "e5m2" else 0))
    backward = Fp8AttentionBackward(dnngraph, handle, b, h, h_k, s, d, causal, grad_type)
    (grads, amax, _, _), scales = run_fp8_backward_scaled(torch, handle, backward, tensors)
    *refs, ds_max = reference_backward(torch, inputs, o_real, d_o_real, causal)
    fields = dict(build_ms=backward.build_ms, plan=backward.plan,
                  scales=dict(zip(["scale_dq", "scale_dk", "scale_dv", "scale_dp"], scales)),
                  amax_dp=amax[3], reference_max_abs_ds=ds_max)
    for name, got, ref, a in zip(BACKWARD_OUTPUTS, grads, refs, amax):
        err = (got - ref).abs()
        fields[name] = dict(max_abs_error=err.max().item(), mean_abs_error=err.mean().item(),
                            max_abs_reference=ref.abs().max().item(),
                            nan_count=int(got.isnan().sum().item()), amax=a)
    emit("sdpa_fp8_backward_correctness", **context, **fields)
    print(f"# backward h_k {h_k} {'causal' if causal else 'full  '} {grad_type}: "
          + ", ".join(f"{n} max err {fields[n]['max_abs_error']:.3g} of "
                      f"{fields[n]['max_abs_reference']:.3g}" for n in BACKWARD_OUTPUTS[:3])
          + f"; Amax_dP {amax[3]:.4g} vs max |dS| {ds_max:.4g}", flush=True)


class Bf16Attention:
    """dnngraph's BF16 sdpa (training: O and Stats) and sdpa_backward at one shape, BHSD."""

    def __init__(self, dnngraph, handle, b, h, s, d, causal):
        from dnngraph import DataType

        def graph():
            return dnngraph.Graph(io_data_type=DataType.BFloat16,
                                  intermediate_data_type=DataType.Float,
                                  compute_data_type=DataType.Float)

        self.forward = graph()
        t = [self.forward.tensor(name=n, uid=i + 1, dim=[b, h, s, d]) for i, n in enumerate("QKV")]
        o, stats = self.forward.sdpa(*t, attn_scale=1 / math.sqrt(d), generate_stats=True,
                                     causal_mask=causal, name="attn")
        o.set_output(True).set_uid(4)
        stats.set_output(True).set_uid(5)
        self.backward = graph()
        t = [self.backward.tensor(name=n, uid=i + 1, dim=[b, h, s, d])
             for i, n in enumerate(["Q", "K", "V", "O", "dO"])]
        st = self.backward.tensor(name="Stats", uid=6, dim=[b, h, s, 1], data_type=DataType.Float)
        for uid, out in enumerate(self.backward.sdpa_backward(*t, st, attn_scale=1 / math.sqrt(d),
                                                              causal_mask=causal, name="bwd"),
                                  start=10):
            out.set_output(True).set_uid(uid)
        self.build_ms, _, self.plan = build(self.backward, handle)
        build(self.forward, handle)


def workspace_of(torch, g):
    size = g.get_workspace_size()
    return torch.empty(size, dtype=torch.uint8, device="cuda") if size else None


def backward_throughput(dnngraph, torch, handle, s, causal, reps, grad_type):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, d = 4, 16, 128
    flops = 2.5 * 4 * b * h * s * s * d / (2 if causal else 1)
    context = dict(b=b, h=h, s=s, d=d, causal=causal)

    def emit_time(impl, ms, **fields):
        emit("sdpa_fp8_backward_throughput", impl=impl, **context, ms=ms,
             tflops=flops / ms / 1e9, **fields)
        return ms

    times = {}
    inputs, tensors, _, d_o_real = backward_inputs(dnngraph, torch, handle, b, h, h, s, d,
                                                   causal, grad_type, seed=s + int(causal))

    # dnngraph FP8: O and Stats from the FP8 forward, the gradients' scales from a first run.
    def dnngraph_fp8():
        backward = Fp8AttentionBackward(dnngraph, handle, b, h, h, s, d, causal, grad_type)
        (_, amax, pack, ws), scales = run_fp8_backward_scaled(torch, handle, backward, tensors)
        ms = cuda_ms(torch, lambda: backward.g.execute(handle, pack, ws), reps)
        return emit_time("dnngraph fp8 " + grad_type, ms, build_ms=backward.build_ms,
                         plan=backward.plan, amax=dict(zip(BACKWARD_OUTPUTS[3:], amax)),
                         scales=scales)

    times["dnngraph fp8"] = guarded("sdpa_fp8_backward_throughput", dnngraph_fp8,
                                    impl="dnngraph fp8 " + grad_type, **context)
    q, k, v = (x[2].bfloat16() for x in inputs)
    d_o = d_o_real.bfloat16()
    torch.cuda.empty_cache()

    # torch BF16, cuDNN backend: the backward of one forward, again and again.
    def torch_backward():
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            return cuda_ms(torch, lambda: out.backward(d_o, retain_graph=True), reps)

    times["torch bf16 cudnn"] = guarded("sdpa_fp8_backward_throughput",
                                        lambda: emit_time("torch bf16 cudnn", torch_backward()),
                                        impl="torch bf16 cudnn", **context)
    torch.cuda.empty_cache()

    # dnngraph BF16 sdpa_backward, O and Stats from its own BF16 forward.
    def dnngraph_bf16():
        bf16 = Bf16Attention(dnngraph, handle, b, h, s, d, causal)
        o = torch.empty_like(q)
        stats = torch.empty(b, h, s, 1, dtype=torch.float32, device="cuda")
        bf16.forward.execute(handle, {1: q, 2: k, 3: v, 4: o, 5: stats},
                             workspace_of(torch, bf16.forward))
        grads = [torch.empty_like(q) for _ in range(3)]
        d_sum = torch.empty(b, h, s, 1, dtype=torch.float32, device="cuda")
        bwd_pack = {1: q, 2: k, 3: v, 4: o, 5: d_o, 6: stats, 10: grads[0], 11: grads[1],
                    12: grads[2], 13: d_sum}
        ws = workspace_of(torch, bf16.backward)
        ms = cuda_ms(torch, lambda: bf16.backward.execute(handle, bwd_pack, ws), reps)
        return emit_time("dnngraph bf16", ms, build_ms=bf16.build_ms, plan=bf16.plan)

    times["dnngraph bf16"] = guarded("sdpa_fp8_backward_throughput", dnngraph_bf16,
                                     impl="dnngraph bf16", **context)
    torch.cuda.empty_cache()
    line = ", ".join(f"{impl} {flops / ms / 1e9:7.1f} TFLOP/s ({ms:.3f} ms)"
                     for impl, ms in times.items() if ms)
    print(f"# backward s {s:5d} {'causal' if causal else 'full  '}: {line}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", default="4096,8192")
    parser.add_argument("--causal", default="0,1")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--parts", default="forward,backward",
                        help="forward, backward, and autotune (every candidate of the forward's "
                        "throughput graphs timed)")
    parser.add_argument("--grad-type", default="e4m3", choices=["e4m3", "e5m2"],
                        help="dO and the gradients' type in the backward throughput runs")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
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
         fp8_attention_offered=dnngraph.cudnn_offers(dnngraph.CudnnCapability.Fp8Attention),
         fp8_attention_backward_offered=guarded(
             "setup", lambda: dnngraph.cudnn_offers(
                 dnngraph.CudnnCapability.Fp8AttentionBackward)))
    handle = guarded("setup", dnngraph.Handle)
    if handle is None:
        return
    lengths = [int(x) for x in args.lengths.split(",")]
    masks = [c == "1" for c in args.causal.split(",")]
    if "forward" in parts:
        for h_k in (4, 2):
            for causal in (False, True):
                guarded("sdpa_fp8_correctness",
                        lambda: correctness(dnngraph, torch, handle, h_k, causal),
                        h_k=h_k, causal=causal)
        for s in lengths:
            for causal in masks:
                guarded("sdpa_fp8_throughput",
                        lambda: throughput(dnngraph, torch, handle, s, causal, args.reps,
                                           "autotune" in parts),
                        s=s, causal=causal)
    if "backward" in parts:
        for h_k, causal, grad_type in ((4, False, "e4m3"), (4, True, "e4m3"), (2, True, "e4m3"),
                                       (4, True, "e5m2"), (2, False, "e5m2")):
            guarded("sdpa_fp8_backward_correctness",
                    lambda: backward_correctness(dnngraph, torch, handle, h_k, causal, grad_type),
                    h_k=h_k, causal=causal, grad_type=grad_type)
            torch.cuda.empty_cache()
        for s in lengths:
            for causal in masks:
                guarded("sdpa_fp8_backward_throughput",
                        lambda: backward_throughput(dnngraph, torch, handle, s, causal, args.reps,
                                                    args.grad_type),
                        s=s, causal=causal)
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
