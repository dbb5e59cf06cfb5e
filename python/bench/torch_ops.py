"""dnngraph.torch's operators next to torch's own, on the same shapes and inputs, in one process:
per operator, the time of dnngraph's op, torch's eager op and torch.compile of torch's op
(inductor), forward alone and forward + backward; then what a new shape costs the first call
(dnngraph: building graphs; with the kernel cache where the op's graphs are dynamic, without it
where they are static).

Shapes are a GPT-2-small layer (batch 8, sequence 1024, d_model 768, 12 heads of 64) and a
larger GQA layer (batch 2, sequence 4096, d_model 2048, 16 query heads of 128, 4 KV heads), all
bfloat16. Times are CUDA-event medians of --reps measurements after warm-up, each of one call,
and again of --streak calls issued back to back (per call: what the GPU takes once the host runs
ahead, as in a training step); ratios are torch's time over dnngraph's (above 1: dnngraph
faster). One JSON line per result ({"case": ...}); lines starting with "#" are the tables.

The first-call times are taken with the driver's JIT cache in a fresh, empty folder
(CUDA_CACHE_PATH, set before CUDA starts; --keep-jit-cache leaves the user's), so "cold" is cold.
Usage: python3 python/bench/torch_ops.py [--reps N] [--only NAME,...]
"""

import argparse
import json
import os
import sys
import tempfile
import time

if "--keep-jit-cache" not in sys.argv:
    os.environ["CUDA_CACHE_PATH"] = tempfile.mkdtemp(prefix="dnngraph-bench-jit-")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import dnngraph  # noqa: E402
import dnngraph.torch as dt  # noqa: E402
import sdpa_vs_torch  # noqa: E402 (beside this file: its cuda_ms)
from dnngraph.torch import _runtime  # noqa: E402

BF16 = torch.bfloat16


def emit(**fields):
    print(json.dumps(fields), flush=True)


def cuda_ms(call, reps):
    torch.cuda.synchronize()
    return sdpa_vs_torch.cuda_ms(call, reps)  # median of CUDA-event times after warm-up


def first_ms(call):
    torch.cuda.synchronize()
    start = time.perf_counter()
    call()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def uniform(shape, scale=1.0, dtype=BF16):
    return ((torch.rand(*shape, device="cuda") * 2 - 1) * scale).to(dtype)


# Each case: make() -> (inputs, grad of the output), ours(*inputs), theirs(*inputs).

def linear_case(m, k, n, activation):
    act = {None: lambda t: t, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
           "silu": F.silu}[activation]

    def make():
        return [uniform((m, k)), uniform((n, k), k**-0.5), uniform((n,), 0.1)], uniform((m, n))

    return (make, lambda x, w, b: dt.linear(x, w, b, activation=activation),
            lambda x, w, b: act(F.linear(x, w, b)))


def norm_case(kind, rows, features):
    def make():
        params = [uniform((features,), 0.5, torch.float32) + 1]
        if kind == "layer_norm":
            params.append(uniform((features,), 0.1, torch.float32))
        return [uniform((rows, features))] + params, uniform((rows, features))

    if kind == "layer_norm":
        return (make, lambda x, w, b: dt.layer_norm(x, (features,), w, b),
                lambda x, w, b: F.layer_norm(x, (features,), w.to(x.dtype), b.to(x.dtype)))
    return (make, lambda x, w: dt.rms_norm(x, (features,), w),
            lambda x, w: F.rms_norm(x, (features,), w.to(x.dtype)))


def sdpa_case(b, h_q, h_k, s, d):
    def make():
        q = uniform((b, s, h_q, d)).transpose(1, 2)  # the layout a projection gives
        k, v = (uniform((b, s, h_k, d)).transpose(1, 2) for _ in range(2))
        return [q, k, v], uniform((b, s, h_q, d)).transpose(1, 2)

    gqa = h_q != h_k
    return (make,
            lambda q, k, v: dt.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                            enable_gqa=gqa),
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                           enable_gqa=gqa))


def varlen_case(total, max_len, h, d, seed=0):
    gen = torch.Generator().manual_seed(seed)
    lengths = []
    while sum(lengths) < total:
        lengths.append(int(torch.randint(16, max_len + 1, (1,), generator=gen)))
    lengths[-1] -= sum(lengths) - total
    cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32).cuda()
    longest = max(lengths)

    def make():
        return [uniform((total, h, d)) for _ in range(3)], uniform((total, h, d))

    def theirs(q, k, v):
        from torch.nn.attention.varlen import varlen_attn
        return varlen_attn(q, k, v, cu, cu, longest, longest, window_size=(-1, 0))

    return (make, lambda q, k, v: dt.varlen_attn(q, k, v, cu, cu, longest, longest,
                                                 window_size=(-1, 0)), theirs)


def channels_last(t):
    return t.contiguous(memory_format=torch.channels_last)


def conv_case(n, c, hw, k, activation):
    act = {None: lambda t: t, "relu": F.relu}[activation]

    def make():
        return ([channels_last(uniform((n, c, hw, hw))),
                 channels_last(uniform((k, c, 3, 3), (9 * c)**-0.5)), uniform((k,), 0.1)],
                channels_last(uniform((n, k, hw, hw))))

    return (make, lambda x, w, b: dt.conv2d(x, w, b, padding=1, activation=activation),
            lambda x, w, b: act(F.conv2d(x, w, b, padding=1)))


def batch_norm_case(n, c, hw):
    running = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")]

    def make():
        return ([channels_last(uniform((n, c, hw, hw))), uniform((c,), 0.5, torch.float32) + 1,
                 uniform((c,), 0.1, torch.float32)], channels_last(uniform((n, c, hw, hw))))

    return (make, lambda x, w, b: dt.batch_norm(x, *running, w, b, training=True),
            lambda x, w, b: F.batch_norm(x, *running, w, b, training=True))


CASES = {
    "linear+gelu 8192x768->3072": lambda: linear_case(8192, 768, 3072, "gelu_tanh"),
    "linear 8192x3072->768": lambda: linear_case(8192, 3072, 768, None),
    "linear+silu 8192x2048->5632": lambda: linear_case(8192, 2048, 5632, "silu"),
    "layer_norm 8192x768": lambda: norm_case("layer_norm", 8192, 768),
    "rms_norm 8192x2048": lambda: norm_case("rms_norm", 8192, 2048),
    "sdpa causal b8 h12 s1024 d64": lambda: sdpa_case(8, 12, 12, 1024, 64),
    "sdpa causal GQA b2 h16/4 s4096 d128": lambda: sdpa_case(2, 16, 4, 4096, 128),
    "varlen causal 16384 tok h16 d128": lambda: varlen_case(16384, 4096, 16, 128),
    # ResNet-50's stages in channels_last: a 3x3 conv of stage 1 and of stage 3, a batch norm.
    "conv3x3+relu NHWC 32x64x56x56": lambda: conv_case(32, 64, 56, 64, "relu"),
    "conv3x3 NHWC 64x256x14x14": lambda: conv_case(64, 256, 14, 256, None),
    "batch_norm train NHWC 32x256x56x56": lambda: batch_norm_case(32, 256, 56),
}


def timed(fn, inputs, grad, backward, reps, streak=1):
    """Median ms per call: of one call between two CUDA events (streak 1: the host's time to
    issue it shows whenever the GPU would wait for it), or of `streak` calls issued back to back
    (the host runs ahead while the kernels are longer than its time per call: the GPU's time)."""
    if not backward:
        def step():
            with torch.no_grad():
                fn(*inputs)
    else:
        leaves = [t.detach().requires_grad_(t.is_floating_point()) for t in inputs]

        def step():
            for t in leaves:
                t.grad = None
            fn(*leaves).backward(grad)

    def calls():
        for _ in range(streak):
            step()

    return cuda_ms(calls, reps) / streak


def run_case(name, reps, streak):
    make, ours, theirs = CASES[name]()
    inputs, grad = make()
    compiled = torch.compile(theirs, fullgraph=True, dynamic=False)
    row = {}
    for backward in (False, True):
        what = "fwd+bwd" if backward else "fwd"
        times = {}
        for impl, fn in (("dnngraph", ours), ("torch", theirs), ("torch.compile", compiled)):
            for n, key in ((1, impl), (streak, f"{impl} x{streak}")):
                try:
                    times[key] = timed(fn, inputs, grad, backward, reps, n)
                except Exception as e:  # a torch path this GPU lacks is reported, not fatal
                    times[key] = None
                    print(f"# {name} {what} {key}: {type(e).__name__}: {str(e)[:200]}")
        emit(case=name, pass_=what, streak=streak, **{f"{k}_ms": v for k, v in times.items()})
        row[what] = times
    return row


def ratio(theirs, ours):
    return f"{theirs / ours:5.2f}x" if theirs and ours else "  n/a"


def new_shape_costs():
    """The first call at a new shape: linear (dynamic graphs on a kernel cache) cold, at a new
    batch with the cache, and at a new batch with dynamic shapes off (static graphs); attention
    (static) at a new length and varlen_attn at a new bucket and within a known one."""
    rows = []

    def linear(m):
        x, w = uniform((m, 1024)), uniform((4096, 1024), 1024**-0.5)
        return lambda: dt.linear(x, w, activation="gelu_tanh")

    dt.clear_caches()
    rows.append(("linear+gelu, first shape (cold)", first_ms(linear(4000))))
    rows.append(("linear+gelu, new batch, kernel cache", first_ms(linear(3000))))
    rows.append(("linear+gelu, another new batch, kernel cache", first_ms(linear(1234))))
    _runtime.DYNAMIC["matmul"] = False
    try:
        rows.append(("linear+gelu, new batch, static (no cache)", first_ms(linear(2000))))
    finally:
        _runtime.DYNAMIC["matmul"] = True

    def sdpa(s):
        q = uniform((4, 16, s, 128))
        return lambda: dt.scaled_dot_product_attention(q, q, q, is_causal=True)

    rows.append(("sdpa forward, first length", first_ms(sdpa(2048))))
    rows.append(("sdpa forward, new length (static build)", first_ms(sdpa(3000))))

    def varlen(lengths):
        cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32).cuda()
        q = uniform((sum(lengths), 16, 128))
        return lambda: dt.varlen_attn(q, q, q, cu, cu, max(lengths), max(lengths),
                                      window_size=(-1, 0))

    def conv(n, hw):
        x = channels_last(uniform((n, 64, hw, hw)))
        w = channels_last(uniform((64, 64, 3, 3), 24**-1))
        return lambda: dt.conv2d(x, w, padding=1, activation="relu")

    rows.append(("conv3x3+relu NHWC, first shape (cold)", first_ms(conv(32, 56))))
    rows.append(("conv3x3+relu NHWC, new batch, kernel cache", first_ms(conv(17, 56))))
    rows.append(("conv3x3+relu NHWC, new image size, kernel cache", first_ms(conv(17, 40))))
    _runtime.DYNAMIC["conv"] = False
    try:
        rows.append(("conv3x3+relu NHWC, new batch, static (no cache)", first_ms(conv(9, 56))))
    finally:
        _runtime.DYNAMIC["conv"] = True
    x = channels_last(uniform((24, 64, 56, 56)))
    rows.append(("batch_norm training, new shape (static build)",
                 first_ms(lambda: dt.batch_norm(x, None, None, training=True))))

    rows.append(("varlen forward, first bucket (1024)", first_ms(varlen([1000, 700, 30]))))
    rows.append(("varlen forward, same bucket, new lengths", first_ms(varlen([900, 1000, 5]))))
    rows.append(("varlen forward, new bucket (2048)", first_ms(varlen([1500, 200, 40]))))
    for what, ms in rows:
        emit(case="first call", what=what, ms=ms)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--only", default="")
    parser.add_argument("--streak", type=int, default=10,
                        help="calls issued back to back for the second set of columns")
    parser.add_argument("--keep-jit-cache", action="store_true")
    args = parser.parse_args()
    names = [n for n in CASES if not args.only or any(o in n for o in args.only.split(","))]
    loaded = dnngraph.cudnn_version_string(dnngraph.cudnn_runtime_version())
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__} (cuDNN "
          f"{torch.backends.cudnn.version()}), dnngraph on cuDNN {loaded}, "
          f"JIT cache {os.environ.get('CUDA_CACHE_PATH', 'default')}")
    costs = new_shape_costs()  # first: nothing of these shapes is built or JIT-cached yet
    table = {name: run_case(name, args.reps, args.streak) for name in names}
    for suffix, title in (("", "one call at a time"),
                          (f" x{args.streak}", f"{args.streak} calls back to back, per call")):
        print(f"#\n# ms (median), {title}")
        print("# op                             pass    | dnngraph | torch    | compile  | "
              "torch/dg | compile/dg")
        for name, row in table.items():
            for what, t in row.items():
                dg, to, co = (t[k + suffix] for k in ("dnngraph", "torch", "torch.compile"))
                cells = [f"{v:8.3f}" if v else "     n/a" for v in (dg, to, co)]
                print(f"# {name[:30]:30s} {what:7s} | " + " | ".join(cells) + " | "
                      f"{ratio(to, dg)}   | {ratio(co, dg)}")
    print("#\n# first call at a new shape (ms, wall, includes building graphs)")
    for what, ms in costs:
        print(f"#   {what:48s} {ms:9.1f}")
    print(f"# graphs built: {dt.cache_info()}")


if __name__ == "__main__":
    main()
