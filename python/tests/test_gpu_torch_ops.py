"""On a CUDA device: dnngraph.torch's operators against torch. torch.library.opcheck for each
operator; forward and gradients against torch's functions computed in float32 from the same
inputs; several shapes of one signature (the dynamic-shape path of linear); torch.autocast;
attention (dense in two layouts, GQA, causal; packed sequences) against the softmax written out
in float32; conv2d and batch_norm (both layouts, training and eval, the running statistics)
against torch in float64; torch.compile(fullgraph=True) of a small MLP block, of a stack of
decoder blocks (rms_norm, linear + SiLU, causal GQA attention) and of a ResNet basic block (conv2d,
batch_norm in training); CUDA graph captures; two streams.

Tolerances. u is the unit roundoff of the I/O dtype (bfloat16 2**-8, float16 2**-11). Our graphs
compute in float32 and round each result once to the I/O dtype, as torch's own kernels in that
dtype do (cuBLAS with float32 accumulation; GELU, SiLU and their backward in float32 math, one
rounding). So our error against the float32 reference is allowed twice torch's own error in the
I/O dtype (its result from the same inputs in that dtype, measured in the same test) plus two
roundings of the largest reference value: tolerance = 2 * err(torch in io dtype) + 2 * u * max|ref|.
The second term covers one rounding torch does not do (the saved pre-activation Z, when the
forward takes the split variant) and ties rounded another way. float32 inputs (the norms) get
1e-5 * max|ref| instead of 2u: sums of at most 4,096 float32 terms in another order differ by
about sqrt(4096) * 2**-24 = 3.8e-6 relative.

When the lead runs this with OUT set (scripts/gpu-wheel does), the variants each signature took
and the graph counts are written to $OUT/torch-ops-report.json (they are printed too, with -s).
"""

import json
import os
import subprocess
import sys

import pytest

import dnngraph

ACTIVATIONS = [None, "relu", "gelu", "gelu_tanh", "silu"]


@pytest.fixture(scope="module")
def dt(cuda):
    import dnngraph.torch as dt

    return dt


def unit_roundoff(torch, dtype):
    return {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}[dtype]


def uniform(torch, shape, seed, dtype=None, scale=1.0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = (torch.rand(*shape, device="cuda", generator=gen) * 2 - 1) * scale
    return t.to(dtype) if dtype is not None else t


def check(torch, what, got, want, torch_io, io_dtype):
    """got (ours) and torch_io (torch in the I/O dtype) against want (float32 reference)."""
    got, want = got.float(), want.float()
    assert not torch.isnan(got).any(), f"{what}: NaN (an output left unwritten?)"
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    torch_err = (torch_io.float() - want).abs().max().item()
    floor = 1e-5 if io_dtype == torch.float32 else 2 * unit_roundoff(torch, io_dtype)
    tolerance = 2 * torch_err + floor * scale
    print(f"\n  {what}: max |ours - ref| {err:.3e}, torch {io_dtype} {torch_err:.3e}, "
          f"tolerance {tolerance:.3e} (max |ref| {scale:.3e})", end="")
    assert err <= tolerance, (f"{what}: max error {err:.3e} > {tolerance:.3e} "
                              f"(torch's {torch_err:.3e})")


def torch_activation(torch, z, activation):
    f = torch.nn.functional
    return {None: lambda t: t, "relu": f.relu, "gelu": f.gelu,
            "gelu_tanh": lambda t: f.gelu(t, approximate="tanh"), "silu": f.silu}[activation](z)


def linear_inputs(torch, dtype, m_shape, k, n, seed, bias=True):
    x = uniform(torch, (*m_shape, k), seed, dtype)
    w = uniform(torch, (n, k), seed + 1, dtype, scale=k**-0.5 * 2)  # outputs of order 1
    b = uniform(torch, (n,), seed + 2, dtype) if bias else None
    dy = uniform(torch, (*m_shape, n), seed + 3, dtype)
    return x, w, b, dy


def torch_linear(torch, x, w, b, dy, activation):
    """Forward and gradients by torch's own functions and autograd, in x's dtype."""
    leaves = [t.detach().clone().requires_grad_(True) if t is not None else None for t in (x, w, b)]
    y = torch_activation(torch, torch.nn.functional.linear(*leaves), activation)
    y.backward(dy)
    return y.detach(), [t.grad if t is not None else None for t in leaves]


def run_linear(torch, dt, x, w, b, dy, activation):
    leaves = [t.detach().clone().requires_grad_(True) if t is not None else None for t in (x, w, b)]
    y = dt.linear(*leaves, activation=activation)
    y.backward(dy)
    return y.detach(), [t.grad if t is not None else None for t in leaves]


def compare_linear(torch, dt, dtype, activation, bias, m_shape, k, n, seed):
    x, w, b, dy = linear_inputs(torch, dtype, m_shape, k, n, seed, bias)
    y, grads = run_linear(torch, dt, x, w, b, dy, activation)
    torch.cuda.synchronize()
    ref_y, ref_grads = torch_linear(torch, x.float(), w.float(), b.float() if bias else None,
                                    dy.float(), activation)
    io_y, io_grads = torch_linear(torch, x, w, b, dy, activation)
    assert y.dtype == dtype and y.shape == (*m_shape, n)
    label = f"linear {dtype} {activation} {'bias' if bias else 'no bias'} {m_shape}x{k}->{n}"
    check(torch, f"{label} y", y, ref_y, io_y, dtype)
    for name, got, want, io in zip(("dx", "dweight", "dbias"), grads, ref_grads, io_grads):
        if want is None:
            assert got is None
            continue
        assert got.dtype == dtype and got.shape == want.shape, name
        check(torch, f"{label} {name}", got, want, io, dtype)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_linear_forward_and_gradients_match_torch(cuda, dt, dtype, activation, bias):
    torch = cuda
    compare_linear(torch, dt, getattr(torch, dtype), activation, bias, (3, 37), 256, 192, 11)


def off_boundary(torch, t, elements=1):
    """t's values in a view that starts `elements` in (2 bytes per bfloat16: off 16 bytes)."""
    base = torch.empty(t.numel() + elements, dtype=t.dtype, device=t.device)
    view = base[elements:].view(t.shape)
    view.copy_(t)
    return view


# cuDNN computes wrong values or faults with a pointer off 16 bytes (bench_alignment_probe), and
# dnngraph refuses one; torch's operators take such views, so dnngraph.torch runs them through
# an aligned copy: the results and the gradients (written into the op's own aligned outputs)
# are torch's.
def test_linear_takes_inputs_off_a_16_byte_boundary_and_matches_torch(cuda, dt):
    torch = cuda
    x, w, b, dy = linear_inputs(torch, torch.bfloat16, (5, 33), 256, 192, 41)
    moved = [off_boundary(torch, t) for t in (x, w, b, dy)]
    assert all(t.data_ptr() % 16 == 2 for t in moved)
    leaves = [t.detach().requires_grad_(True) for t in moved[:3]]
    assert all(t.data_ptr() % 16 == 2 for t in leaves)
    y = dt.linear(*leaves, activation="gelu")
    y.backward(moved[3])
    torch.cuda.synchronize()
    ref_y, ref_grads = torch_linear(torch, x.float(), w.float(), b.float(), dy.float(), "gelu")
    io_y, io_grads = torch_linear(torch, x, w, b, dy, "gelu")
    check(torch, "off-boundary linear y", y.detach(), ref_y, io_y, torch.bfloat16)
    for name, leaf, want, io in zip(("dx", "dweight", "dbias"), leaves, ref_grads, io_grads):
        check(torch, f"off-boundary linear {name}", leaf.grad, want, io, torch.bfloat16)
    # The inputs were read, never written: still the values they were given.
    for t, original in zip(moved, (x, w, b, dy)):
        assert torch.equal(t, original)


def test_linear_takes_new_batch_sizes_through_the_kernel_cache(cuda, dt):
    torch = cuda
    before = dt.cache_info()
    shapes = [(64,), (7,), (1,), (5, 67), (1024,)]
    for i, m_shape in enumerate(shapes):
        compare_linear(torch, dt, torch.bfloat16, "gelu", True, m_shape, 128, 320, 100 + i)
    after = dt.cache_info()
    print("\n  cache_info before", before, "after", after, end="")
    # Each shape built its own graphs, on one kernel cache per dynamic topology (this
    # signature's forward, dgrad and wgrad): new shapes add graphs, never caches.
    assert after["builds"]["linear.forward"] - before["builds"].get("linear.forward", 0) >= 5
    assert after["kernel_caches"] - before["kernel_caches"] <= 3
    # The builds' wall time is counted; the kernel caches hold the compiled kernels.
    assert after["build_seconds"] > before["build_seconds"]
    assert after["kernel_cache_entries"] >= 1 and after["kernel_cache_revisions"] >= 1


def test_linear_runs_a_static_plan_after_its_runs_and_stays_exact(cuda, dt):
    """set_static_after(2): the third run of a shape builds static plans in place of the
    dynamic ones (forward, dgrad, wgrad); every run matches torch, before and after."""
    torch = cuda
    before = dt.cache_info()["static_plans"]
    dt.set_static_after(2)
    try:
        for i in range(4):
            compare_linear(torch, dt, torch.bfloat16, "silu", True, (4, 96), 192, 320, 120 + i)
    finally:
        dt.set_static_after(dt._runtime.STATIC_AFTER)
    after = dt.cache_info()["static_plans"]
    print("\n  static plans before", before, "after", after, end="")
    for op in ("linear.forward", "linear.dgrad", "linear.wgrad"):
        assert after.get(op, 0) - before.get(op, 0) == 1, op


def test_linear_static_plans_built_in_the_background_take_over_and_stay_exact(cuda, dt):
    """set_static_after(2, background=True): the third run asks for static plans and runs the
    dynamic ones; once wait_for_static_plans() returns the static plans run; every run matches
    torch, before, during and after."""
    torch = cuda
    before = dt.cache_info()["static_plans"]
    dt.set_static_after(2, background=True)
    try:
        for i in range(4):
            compare_linear(torch, dt, torch.bfloat16, "gelu", True, (4, 80), 160, 288, 170 + i)
        dt.wait_for_static_plans()
        after = dt.cache_info()["static_plans"]
        for i in range(2):
            compare_linear(torch, dt, torch.bfloat16, "gelu", True, (4, 80), 160, 288, 180 + i)
    finally:
        dt.set_static_after(dt._runtime.STATIC_AFTER)
    print("\n  static plans before", before, "after", after, end="")
    for op in ("linear.forward", "linear.dgrad", "linear.wgrad"):
        assert after.get(op, 0) - before.get(op, 0) == 1, op
    assert dt.cache_info()["static_plans"] == after  # nothing built twice


# One process of the store test: linear + SiLU forward and backward at `rows` rows with the cache
# store of $DNNGRAPH_CACHE_DIR; prints its errors against float32 (ours and torch's bf16), the
# kernel caches it loaded, and with "save" what save_caches() wrote.
STORE_CHILD = r"""
import json, sys, torch
import dnngraph.torch as dt
rows, save = int(sys.argv[1]), sys.argv[2] == "save"
dt.set_cache_store()
gen = torch.Generator(device="cuda").manual_seed(rows)
x = (torch.rand(rows, 64, device="cuda", generator=gen) * 2 - 1).bfloat16().requires_grad_()
w = (torch.rand(96, 64, device="cuda", generator=gen) * 0.25 - 0.125).bfloat16().requires_grad_()
b = (torch.rand(96, device="cuda", generator=gen) * 2 - 1).bfloat16().requires_grad_()
y = dt.linear(x, w, b, activation="silu")
y.float().sum().backward()
ref = torch.nn.functional.silu(torch.nn.functional.linear(x.float(), w.float(), b.float()))
theirs = torch.nn.functional.silu(torch.nn.functional.linear(x, w, b))
info = dt.cache_info()
print(json.dumps({"error": (y.float() - ref).abs().max().item(),
                  "torch_error": (theirs.float() - ref).abs().max().item(),
                  "scale": ref.abs().max().item(), "grad_nan": bool(x.grad.isnan().any()),
                  "loaded": info["kernel_caches_loaded"], "caches": info["kernel_caches"],
                  "saved": dt.save_caches() if save else None}))
"""


def test_kernel_caches_persist_across_processes_through_the_store(cuda, tmp_path):
    """A process saves its kernel caches to $DNNGRAPH_CACHE_DIR; a new process at another shape
    loads every one it saved when their topologies are first used, and computes right."""
    env = {**os.environ, "DNNGRAPH_CACHE_DIR": str(tmp_path)}

    def child(rows, save):
        done = subprocess.run([sys.executable, "-c", STORE_CHILD, str(rows), save], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        tolerance = 2 * result["torch_error"] + 2 * 2.0**-8 * result["scale"]
        assert result["error"] <= tolerance and not result["grad_nan"], result
        return result

    first = child(40, "save")
    print(f"\n  first process: {first}", end="")
    assert first["loaded"] == 0 and first["saved"]["errors"] == [], first
    assert first["saved"]["saved"] >= 1 and first["saved"]["not_from_store"] == 0, first
    assert len(list(tmp_path.glob("*.json"))) == first["saved"]["saved"]
    second = child(56, "no")
    print(f"\n  second process: {second}", end="")
    assert second["loaded"] == first["saved"]["saved"], (first, second)


def test_linear_under_autocast_casts_like_torch(cuda, dt):
    torch = cuda
    x = uniform(torch, (4, 33, 64), 41).requires_grad_(True)
    w = uniform(torch, (96, 64), 42, scale=0.25).requires_grad_(True)
    b = uniform(torch, (96,), 43).requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = dt.linear(x, w, b, activation="silu")
        want = torch.nn.functional.silu(torch.nn.functional.linear(x, w, b))
    assert y.dtype == want.dtype == torch.bfloat16
    y.float().sum().backward()
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == torch.float32
    ref = torch.nn.functional.silu(torch.nn.functional.linear(
        x.detach().bfloat16().float(), w.detach().bfloat16().float(),
        b.detach().bfloat16().float()))
    check(torch, "autocast linear y", y, ref, want.detach(), torch.bfloat16)


NORM_CASES = [("bfloat16", (3, 37), 1024), ("float16", (64,), 768), ("float32", (2, 5, 7), 512)]


def norm_inputs(torch, dtype, rows, features, seed):
    x = uniform(torch, (*rows, features), seed, dtype) * 2 + 0.25  # a mean away from 0
    w = uniform(torch, (features,), seed + 1, torch.float32) + 1.5
    b = uniform(torch, (features,), seed + 2, torch.float32)
    dy = uniform(torch, (*rows, features), seed + 3, dtype)
    return x, w, b, dy


def run_norm(torch, fn, x, params, dy):
    x = x.detach().clone().requires_grad_(True)
    params = [p.detach().clone().requires_grad_(True) if p is not None else None for p in params]
    y = fn(x, *params)
    y.backward(dy)
    return y.detach(), [x.grad] + [p.grad if p is not None else None for p in params]


def compare_norm(torch, label, ours, theirs, x, params, dy):
    """ours(x, *params) against theirs (torch's function) in float32 and in x's dtype: the
    output, dx and the gradient of each parameter given (float32, like the parameters)."""
    dtype = x.dtype
    y, grads = run_norm(torch, ours, x, params, dy)
    torch.cuda.synchronize()
    ref_y, ref_grads = run_norm(torch, theirs, x.float(), params, dy.float())
    # torch in the I/O dtype: its norms take float32 parameters with a low-precision input only
    # under autocast; a plain call needs them in the input's dtype.
    io_params = [p.to(dtype) if p is not None else None for p in params]
    io_y, io_grads = run_norm(torch, theirs, x, io_params, dy)
    assert y.dtype == dtype
    check(torch, f"{label} y", y, ref_y, io_y, dtype)
    check(torch, f"{label} dx", grads[0], ref_grads[0], io_grads[0], dtype)
    for i, (got, want, io) in enumerate(zip(grads[1:], ref_grads[1:], io_grads[1:])):
        if params[i] is None:
            assert got is None
            continue
        assert got.dtype == torch.float32
        check(torch, f"{label} d(parameter {i})", got, want, io, dtype)


@pytest.mark.parametrize("with_parameters", [True, False], ids=["weight and bias", "none"])
@pytest.mark.parametrize("dtype,rows,features", NORM_CASES, ids=str)
def test_layer_norm_forward_and_gradients_match_torch(cuda, dt, dtype, rows, features,
                                                      with_parameters):
    torch = cuda
    x, w, b, dy = norm_inputs(torch, getattr(torch, dtype), rows, features, 21)
    compare_norm(torch, f"layer_norm {dtype} {rows}x{features}",
                 lambda x, w, b: dt.layer_norm(x, (features,), w, b, 1e-5),
                 lambda x, w, b: torch.nn.functional.layer_norm(x, (features,), w, b, 1e-5),
                 x, [w, b] if with_parameters else [None, None], dy)


@pytest.mark.parametrize("with_weight", [True, False], ids=["weight", "none"])
@pytest.mark.parametrize("dtype,rows,features", NORM_CASES, ids=str)
def test_rms_norm_forward_and_gradients_match_torch(cuda, dt, dtype, rows, features,
                                                    with_weight):
    torch = cuda
    x, w, _, dy = norm_inputs(torch, getattr(torch, dtype), rows, features, 31)
    compare_norm(torch, f"rms_norm {dtype} {rows}x{features}",
                 lambda x, w: dt.rms_norm(x, [features], w),
                 lambda x, w: torch.nn.functional.rms_norm(x, [features], w),
                 x, [w if with_weight else None], dy)


def test_norms_take_new_row_counts(cuda, dt):
    torch = cuda
    for i, rows in enumerate([(1,), (9,), (4, 33), (300,)]):
        x, w, b, _ = norm_inputs(torch, torch.bfloat16, rows, 256, 50 + i)
        got = dt.layer_norm(x, (256,), w, b)
        want = torch.nn.functional.layer_norm(x.float(), (256,), w, b)
        io = torch.nn.functional.layer_norm(x, (256,), w.bfloat16(), b.bfloat16())
        check(torch, f"layer_norm rows {rows}", got, want, io, torch.bfloat16)


def test_a_dynamic_shape_norm_graph_probe(cuda, dt):
    """Norm graphs are static per shape (dnngraph.torch._runtime.DYNAMIC): whether cuDNN runs
    them exactly as dynamic-shape graphs on a kernel cache is unmeasured. This probe builds them
    that way at four row counts and checks them as the static ones are checked; no engine or a
    wrong result is reported as a skipped finding (the default path does not take them)."""
    torch = cuda
    from dnngraph.torch import _runtime

    _runtime.DYNAMIC["norm"] = True
    try:
        for i, rows in enumerate([64, 17, 333, 1]):
            x, w, b, dy = norm_inputs(torch, torch.bfloat16, (rows,), 512, 60 + i)
            try:
                compare_norm(torch, f"dynamic rms_norm {rows} rows",
                             lambda x, w: dt.rms_norm(x, (512,), w),
                             lambda x, w: torch.nn.functional.rms_norm(x, (512,), w),
                             x, [w], dy)
                compare_norm(torch, f"dynamic layer_norm {rows} rows",
                             lambda x, w, b: dt.layer_norm(x, (512,), w, b),
                             lambda x, w, b: torch.nn.functional.layer_norm(x, (512,), w, b),
                             x, [w, b], dy)
            except (RuntimeError, dnngraph.Error) as e:
                pytest.skip(f"finding: a dynamic-shape norm graph at {rows} rows: {e}")
            except AssertionError as e:
                pytest.skip(f"finding: dynamic-shape norm graphs are wrong at {rows} rows ({e}); "
                            "they stay static")
    finally:
        _runtime.DYNAMIC["norm"] = False


# Attention. The reference is the softmax written out in float32 from the same inputs (GQA by
# repeating K and V heads); torch in the I/O dtype is F.scaled_dot_product_attention (its cuDNN or
# flash kernel: one rounding of O, float32 accumulation, as ours), per sequence for packed batches.

def attention_reference(torch, q, k, v, scale, keep=None):
    """softmax(scale q k^T, keep) v in q's dtype's autograd; k and v heads repeated for GQA."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-1, -2)) * scale
    if keep is not None:
        scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def causal_keep(torch, s_q, s_kv, bottom_right=False):
    rows = torch.arange(s_q, device="cuda").view(s_q, 1)
    cols = torch.arange(s_kv, device="cuda").view(1, s_kv)
    return cols <= rows + (s_kv - s_q if bottom_right else 0)


def leaves(*tensors):
    return [t.detach().clone().requires_grad_(True) for t in tensors]


def run_attention(fn, q, k, v, dout):
    q, k, v = leaves(q, k, v)
    out = fn(q, k, v)
    out.backward(dout)
    return out.detach(), [q.grad, k.grad, v.grad]


def compare_attention(torch, label, ours, reference, theirs, q, k, v, dout):
    """ours and theirs (torch in the I/O dtype) against reference run in float32."""
    out, grads = run_attention(ours, q, k, v, dout)
    torch.cuda.synchronize()
    ref, ref_grads = run_attention(reference, q.float(), k.float(), v.float(), dout.float())
    io, io_grads = run_attention(theirs, q, k, v, dout)
    assert out.dtype == q.dtype and out.shape == ref.shape
    check(torch, f"{label} out", out, ref, io, q.dtype)
    for name, got, want, io_grad, t in zip(("dq", "dk", "dv"), grads, ref_grads, io_grads,
                                           (q, k, v)):
        assert got.shape == t.shape and got.dtype == t.dtype, name
        check(torch, f"{label} {name}", got, want, io_grad, q.dtype)


def attention_inputs(torch, dtype, b, h_q, h_k, s_q, s_kv, d, seed, layout):
    """q, k, v, dout; layout "bhsd" (contiguous) or "bshd" (the transposed projection)."""
    def make(h, s, i):
        if layout == "bshd":
            return uniform(torch, (b, s, h, d), seed + i, dtype).transpose(1, 2)
        return uniform(torch, (b, h, s, d), seed + i, dtype)
    return make(h_q, s_q, 0), make(h_k, s_kv, 1), make(h_k, s_kv, 2), make(h_q, s_q, 3)


SDPA_CASES = [  # b, h_q, h_k, s_q, s_kv, d, causal, layout
    (2, 8, 8, 129, 129, 64, True, "bhsd"),
    (2, 8, 2, 77, 77, 128, True, "bshd"),
    (3, 4, 4, 40, 100, 64, False, "bshd"),
    (1, 4, 1, 100, 40, 128, True, "bhsd"),
]


@pytest.mark.parametrize("case", SDPA_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_sdpa_forward_and_gradients_match_torch(cuda, dt, dtype, case):
    torch = cuda
    b, h_q, h_k, s_q, s_kv, d, causal, layout = case
    q, k, v, dout = attention_inputs(torch, getattr(torch, dtype), b, h_q, h_k, s_q, s_kv, d,
                                     130, layout)
    scale = d**-0.5
    keep = causal_keep(torch, s_q, s_kv) if causal else None
    gqa = h_q != h_k
    compare_attention(
        torch, f"sdpa {dtype} {case}",
        lambda q, k, v: dt.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                        enable_gqa=gqa),
        lambda q, k, v: attention_reference(torch, q, k, v, scale, keep),
        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, enable_gqa=gqa), q, k, v, dout)
    out = dt.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    assert out.stride() == (dt._attention._layout_like(q, out.shape).stride())


def packed_inputs(torch, dtype, lengths_q, lengths_k, h_q, h_k, d, seed):
    cu = [torch.tensor([0] + lengths, device="cuda").cumsum(0).to(torch.int32)
          for lengths in (lengths_q, lengths_k)]
    q = uniform(torch, (sum(lengths_q), h_q, d), seed, dtype)
    k = uniform(torch, (sum(lengths_k), h_k, d), seed + 1, dtype)
    v = uniform(torch, (sum(lengths_k), h_k, d), seed + 2, dtype)
    dout = uniform(torch, (sum(lengths_q), h_q, d), seed + 3, dtype)
    return q, k, v, dout, cu[0], cu[1]


def per_sequence(torch, fn, lengths_q, lengths_k):
    """A packed attention from one on [1, h, s, d] per sequence."""
    def packed(q, k, v):
        outs, start_q, start_k = [], 0, 0
        for lq, lk in zip(lengths_q, lengths_k):
            one = [t[a:a + n].transpose(0, 1).unsqueeze(0)
                   for t, a, n in ((q, start_q, lq), (k, start_k, lk), (v, start_k, lk))]
            outs.append(fn(*one, lq, lk)[0].transpose(0, 1))
            start_q, start_k = start_q + lq, start_k + lk
        return torch.cat(outs)
    return packed


VARLEN_CASES = [  # lengths_q, lengths_k, h_q, h_k, d, causal
    ([37, 5, 64, 1, 100], None, 8, 8, 64, True),
    ([130, 17, 64], None, 8, 2, 128, True),
    ([20, 50, 3], [60, 50, 9], 4, 4, 64, False),
    ([20, 50, 3], [60, 50, 9], 4, 2, 64, True),
]


@pytest.mark.parametrize("case", VARLEN_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_varlen_attn_forward_and_gradients_match_torch(cuda, dt, dtype, case):
    torch = cuda
    lengths_q, lengths_k, h_q, h_k, d, causal = case
    lengths_k = lengths_k or lengths_q
    q, k, v, dout, cu_q, cu_k = packed_inputs(torch, getattr(torch, dtype), lengths_q,
                                              lengths_k, h_q, h_k, d, 140)
    scale = d**-0.5

    def reference(q, k, v, lq, lk):
        keep = causal_keep(torch, lq, lk, bottom_right=True) if causal else None
        return attention_reference(torch, q, k, v, scale, keep)

    def theirs(q, k, v, lq, lk):
        keep = causal_keep(torch, lq, lk, bottom_right=True) if causal else None
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=keep, enable_gqa=h_q != h_k)

    window = (-1, 0) if causal else (-1, -1)
    compare_attention(
        torch, f"varlen_attn {dtype} {case}",
        lambda q, k, v: dt.varlen_attn(q, k, v, cu_q, cu_k, max(lengths_q), max(lengths_k),
                                       window_size=window),
        per_sequence(torch, reference, lengths_q, lengths_k),
        per_sequence(torch, theirs, lengths_q, lengths_k), q, k, v, dout)


def test_varlen_attn_returns_the_log_sum_exp_as_torch_does(cuda, dt):
    torch = cuda
    from torch.nn.attention.varlen import AuxRequest

    lengths = [33, 70, 2]
    q, k, v, _, cu, _ = packed_inputs(torch, torch.bfloat16, lengths, lengths, 4, 4, 64, 150)
    _, lse = dt.varlen_attn(q, k, v, cu, cu, 70, 70, return_aux=AuxRequest(lse=True),
                            window_size=(-1, 0))
    assert (lse.shape, lse.dtype) == ((4, sum(lengths)), torch.float32)
    want, start = [], 0
    for n in lengths:
        one = [t[start:start + n].transpose(0, 1).float() for t in (q, k, v)]
        scores = (one[0] @ one[1].transpose(-1, -2)) * 64**-0.5
        scores = scores.masked_fill(~causal_keep(torch, n, n), float("-inf"))
        want.append(torch.logsumexp(scores, dim=-1))
        start += n
    torch.testing.assert_close(lse, torch.cat(want, dim=1), rtol=0, atol=1e-4)


def test_varlen_attn_builds_per_bucket_not_per_length(cuda, dt):
    torch = cuda
    before = dt.cache_info()["builds"].get("varlen_attn.forward", 0)
    for i, lengths in enumerate([[100, 30], [120, 7], [65, 128], [90, 90]]):  # one 128 bucket
        q, k, v, _, cu, _ = packed_inputs(torch, torch.bfloat16, lengths, lengths, 4, 4, 64,
                                          160 + i)
        with torch.no_grad():
            got = dt.varlen_attn(q, k, v, cu, cu, max(lengths), max(lengths), window_size=(-1, 0))
        want = per_sequence(torch, lambda q, k, v, lq, lk: torch.nn.functional
                            .scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                          is_causal=True),
                            lengths, lengths)(q, k, v)
        io = per_sequence(torch, lambda q, k, v, lq, lk: torch.nn.functional
                          .scaled_dot_product_attention(q, k, v, is_causal=True),
                          lengths, lengths)(q, k, v)
        check(torch, f"varlen_attn lengths {lengths}", got, want, io, torch.bfloat16)
    assert dt.cache_info()["builds"]["varlen_attn.forward"] - before == 1


def compare_causal_varlen(torch, dt, lengths, q, k, v, dout, cu):
    """Causal (grouped-query) varlen_attn of one packed batch, forward and gradients, against
    the float reference and torch per sequence."""
    scale = q.shape[-1]**-0.5

    def reference(q, k, v, lq, lk):
        return attention_reference(torch, q, k, v, scale, causal_keep(torch, lq, lk))

    def theirs(q, k, v, lq, lk):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                enable_gqa=True)

    compare_attention(
        torch, f"varlen_attn lengths {lengths}",
        lambda q, k, v: dt.varlen_attn(q, k, v, cu, cu, max(lengths), max(lengths),
                                       window_size=(-1, 0)),
        per_sequence(torch, reference, lengths, lengths),
        per_sequence(torch, theirs, lengths, lengths), q, k, v, dout)


@pytest.mark.parametrize("spares, batches", [
    ("loaded", [[100, 30, 77], [120, 7, 64, 1], [5, 128, 9]]),
    ("one-token", [[100, 30, 77, 5, 9], [120, 7, 64, 1, 3, 3, 3, 3], [5, 128, 9, 40, 1, 2]])])
def test_varlen_attn_pads_the_count_of_sequences_to_a_power_of_two(cuda, dt, monkeypatch,
                                                                    spares, batches):
    """Counts of one bucket share a graph (3 and 4; 5, 6 and 8): spare sequences pad the count,
    empty where the loaded cuDNN takes zero-length sequences, else one token long writing past
    the outputs' end (the library says which through one_token_spares(); "one-token" forces
    them, which every cuDNN runs); forward and gradients exact either way."""
    if spares == "one-token":
        monkeypatch.setattr(dt._attention, "one_token_spares", lambda: True)
    torch = cuda
    before = dt.cache_info()["builds"].get("varlen_attn.backward", 0)
    for i, lengths in enumerate(batches):
        q, k, v, dout, cu, _ = packed_inputs(torch, torch.bfloat16, lengths, lengths, 4, 2, 64,
                                             190 + i)
        compare_causal_varlen(torch, dt, lengths, q, k, v, dout, cu)
    assert dt.cache_info()["builds"]["varlen_attn.backward"] - before == 1


def test_varlen_attn_runs_a_new_smaller_batch_through_a_built_graph(cuda, dt):
    """A batch whose buckets' graph was never built runs through a built one that holds it (at
    most 8 times larger): longer lengths on every cuDNN, more (empty) spares where the loaded
    cuDNN takes zero-length sequences; forward, log-sum-exp and gradients exact, no build."""
    torch = cuda
    from torch.nn.attention.varlen import AuxRequest

    h_q, h_k, d = 6, 3, 64  # heads no other test uses: its graphs are this test's own
    batches = [([200, 20], 1), ([100, 60], 0)]  # buckets 2 x 256 x 256, then 2 x 128 x 128
    if not dt._attention.one_token_spares():  # 8 x 64 x 64, then 4 x 64 x 64
        batches += [([30, 40, 50, 20, 10], 1), ([50, 60, 7], 0)]
    for i, (lengths, builds) in enumerate(batches):
        before = dict(dt.cache_info()["builds"])
        q, k, v, dout, cu, _ = packed_inputs(torch, torch.bfloat16, lengths, lengths, h_q, h_k,
                                             d, 230 + i)
        scale = d**-0.5
        compare_causal_varlen(torch, dt, lengths, q, k, v, dout, cu)
        _, lse = dt.varlen_attn(q, k, v, cu, cu, max(lengths), max(lengths),
                                return_aux=AuxRequest(lse=True), window_size=(-1, 0))
        want, start = [], 0
        for n in lengths:
            one = [t[start:start + n].transpose(0, 1).float() for t in (q, k, v)]
            one[1] = one[1].repeat_interleave(h_q // h_k, dim=0)
            scores = (one[0] @ one[1].transpose(-1, -2)) * scale
            scores = scores.masked_fill(~causal_keep(torch, n, n), float("-inf"))
            want.append(torch.logsumexp(scores, dim=-1))
            start += n
        torch.testing.assert_close(lse, torch.cat(want, dim=1), rtol=0, atol=1e-4)
        after = dt.cache_info()["builds"]
        for op in ("varlen_attn.forward", "varlen_attn.backward"):
            assert after.get(op, 0) - before.get(op, 0) == builds, (lengths, op)


# conv2d and batch_norm. The reference is torch's own function in float64 from the same inputs
# (float32 convolutions on cuDNN would take TF32 by default); torch in the I/O dtype is its cuDNN
# convolution / batch norm.

def to_layout(torch, t, layout):
    if layout == "nchw":
        return t.contiguous()
    fmt = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
    return t.contiguous(memory_format=fmt)


def layout_of(torch, t):
    if t.is_contiguous():
        return "contiguous"
    fmt = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
    return "channels_last" if t.is_contiguous(memory_format=fmt) else "other"


def run_leaves(fn, tensors, dy):
    leaves = [t.detach().clone().requires_grad_(True) if t is not None else None for t in tensors]
    y = fn(*leaves)
    y.backward(dy)
    return y.detach(), [t.grad if t is not None else None for t in leaves]


def on(device, tensors):
    return [t.detach().to(device) if t is not None else None for t in tensors]


def compare_leaves(torch, label, ours, theirs, tensors, dy, io_dtype):
    """ours(*tensors) and its gradients against theirs in float64 on the CPU (no TF32, no
    cuDNN) and in the inputs' dtypes on the GPU. Where torch's own GPU function fails on the
    loaded cuDNN (a cuDNN without the sublibrary torch calls), torch's error in those dtypes is
    measured on the CPU instead, and said."""
    y, grads = run_leaves(ours, tensors, dy)
    torch.cuda.synchronize()
    double = [t.double() if t is not None else None for t in on("cpu", tensors)]
    ref_y, ref_grads = run_leaves(theirs, double, dy.double().cpu())
    try:
        io_y, io_grads = run_leaves(theirs, tensors, dy)
        assert layout_of(torch, y) == layout_of(torch, io_y), (label, y.stride(), io_y.stride())
    except RuntimeError as e:
        print(f"\n  torch's own function failed on this cuDNN ({str(e).splitlines()[0]}): its "
              "error is measured on the CPU", end="")
        io_y, io_grads = run_leaves(theirs, on("cpu", tensors), dy.cpu())
    assert y.dtype == io_dtype and y.shape == ref_y.shape
    check(torch, f"{label} y", y.cpu(), ref_y, io_y.cpu(), io_dtype)
    for i, (got, want, io) in enumerate(zip(grads, ref_grads, io_grads)):
        if want is None:
            assert got is None
            continue
        assert got.dtype == tensors[i].dtype and got.shape == want.shape
        check(torch, f"{label} grad {i}", got.cpu(), want, io.cpu(), io_dtype)


def conv_inputs(torch, dtype, layout, n, c, hw, k, kernel, groups, seed):
    x = to_layout(torch, uniform(torch, (n, c, *hw), seed, dtype), layout)
    fan_in = (c // groups) * kernel[0] * kernel[1]
    w = to_layout(torch, uniform(torch, (k, c // groups, *kernel), seed + 1, dtype,
                                 2 * fan_in**-0.5), layout)
    b = uniform(torch, (k,), seed + 2, dtype)
    return x, w, b


CONV_GPU_CASES = [  # (layout, C, (H, W), K, kernel, keyword arguments)
    ("nhwc", 32, (17, 13), 48, (3, 3), {"padding": 1}),
    ("nchw", 32, (17, 13), 48, (3, 3), {"stride": 2, "padding": 1}),
    ("nhwc", 64, (15, 16), 64, (3, 3), {"padding": "same", "dilation": 2, "groups": 4}),
    ("nchw", 16, (9, 20), 32, (1, 1), {}),
    ("nhwc", 24, (12, 12), 40, (4, 2), {"padding": "same"}),
]


def compare_conv(torch, dt, dtype, case, activation, bias, n, seed):
    layout, c, hw, k, kernel, kwargs = case
    x, w, b = conv_inputs(torch, dtype, layout, n, c, hw, k, kernel, kwargs.get("groups", 1),
                          seed)
    y_shape = torch.nn.functional.conv2d(x.to("meta"), w.to("meta"), **kwargs).shape
    dy = to_layout(torch, uniform(torch, y_shape, seed + 3, dtype), layout)
    compare_leaves(
        torch, f"conv2d {dtype} {layout} {n}x{c}x{hw}->{k} {kernel} {kwargs} {activation}",
        lambda x, w, b: dt.conv2d(x, w, b, activation=activation, **kwargs),
        lambda x, w, b: torch_activation(torch, torch.nn.functional.conv2d(x, w, b, **kwargs),
                                         activation),
        [x, w, b if bias else None], dy, dtype)


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
@pytest.mark.parametrize("case", CONV_GPU_CASES[:2], ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_conv2d_forward_and_gradients_match_torch(cuda, dt, dtype, case, activation):
    torch = cuda
    compare_conv(torch, dt, getattr(torch, dtype), case, activation, True, 4, 300)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("case", CONV_GPU_CASES[2:], ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_conv2d_geometries_match_torch(cuda, dt, dtype, case, bias):
    torch = cuda
    compare_conv(torch, dt, getattr(torch, dtype), case, "relu" if bias else None, bias, 3, 310)


def test_conv2d_takes_layouts_as_torch_does(cuda, dt):
    """Mixed layouts: the output is channels_last when input or weight is, as torch's."""
    torch = cuda
    for x_layout, w_layout in (("nchw", "nhwc"), ("nhwc", "nchw")):
        x, _, b = conv_inputs(torch, torch.bfloat16, x_layout, 2, 16, (9, 9), 24, (3, 3), 1, 320)
        _, w, _ = conv_inputs(torch, torch.bfloat16, w_layout, 2, 16, (9, 9), 24, (3, 3), 1, 320)
        got = dt.conv2d(x, w, b, padding=1)
        assert layout_of(torch, got) == "channels_last"
        compare_leaves(torch, f"conv2d x {x_layout} weight {w_layout}",
                       lambda x, w, b: dt.conv2d(x, w, b, padding=1),
                       lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=1),
                       [x, w, b], torch.ones_like(got), torch.bfloat16)
    x, w, b = conv_inputs(torch, torch.bfloat16, "nchw", 1, 16, (9, 9), 24, (3, 3), 1, 321)
    compare_leaves(torch, "conv2d unbatched", lambda x, w, b: dt.conv2d(x, w, b, padding=1),
                   lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=1),
                   [x[0], w, b], torch.ones(24, 9, 9, dtype=torch.bfloat16, device="cuda"),
                   torch.bfloat16)


def test_conv2d_takes_new_batch_and_image_sizes_through_the_kernel_cache(cuda, dt):
    torch = cuda
    before = dt.cache_info()
    case = ("nhwc", 32, None, 64, (3, 3), {"padding": 1})
    for i, (n, hw) in enumerate([(8, (16, 16)), (3, (16, 16)), (8, (31, 17)), (1, (7, 40)),
                                 (16, (32, 32))]):
        compare_conv(torch, dt, torch.bfloat16, case[:2] + (hw,) + case[3:], "gelu", True, n,
                     330 + i)
    after = dt.cache_info()
    print("\n  cache_info before", before, "after", after, end="")
    assert after["builds"]["conv2d.forward"] - before["builds"].get("conv2d.forward", 0) >= 5
    # One kernel cache for the forward's topology (the backward graphs are static).
    assert after["kernel_caches"] - before["kernel_caches"] <= 1


BN_GPU_CASES = [  # (shape, layout)
    ((64, 96), "nchw"), ((16, 96, 50), "nchw"), ((8, 96, 14, 14), "nchw"),
    ((8, 96, 14, 14), "nhwc"), ((2, 32, 4, 6, 6), "nhwc"),
]


def batch_norm_inputs(torch, dtype, shape, layout, seed):
    x = to_layout(torch, uniform(torch, shape, seed, dtype) * 2 + 0.5, layout)
    c = shape[1]
    w = uniform(torch, (c,), seed + 1, torch.float32) + 1.5
    b = uniform(torch, (c,), seed + 2, torch.float32)
    running = (uniform(torch, (c,), seed + 3, torch.float32),
               uniform(torch, (c,), seed + 4, torch.float32) + 1.5)
    dy = to_layout(torch, uniform(torch, shape, seed + 5, dtype), layout)
    return x, w, b, running, dy


@pytest.mark.parametrize("training", [True, False], ids=["training", "eval"])
@pytest.mark.parametrize("case", BN_GPU_CASES, ids=str)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_batch_norm_forward_gradients_and_running_statistics_match_torch(cuda, dt, dtype, case,
                                                                         training):
    torch = cuda
    dtype = getattr(torch, dtype)
    shape, layout = case
    x, w, b, (rm, rv), dy = batch_norm_inputs(torch, dtype, shape, layout, 400)
    ours_stats = [rm.clone(), rv.clone()]
    ref_stats = [rm.double().cpu(), rv.double().cpu()]
    f = torch.nn.functional

    def theirs(x, w, b):
        # torch in the I/O dtype takes float32 parameters with a half input (its cuDNN batch
        # norm); the float64 reference takes its own statistics.
        stats = (ref_stats if x.dtype == torch.float64
                 else [rm.to(x.device).clone(), rv.to(x.device).clone()])
        return f.batch_norm(x, *stats, w, b, training=training, momentum=0.2)

    compare_leaves(
        torch, f"batch_norm {dtype} {shape} {layout} {'training' if training else 'eval'}",
        lambda x, w, b: dt.batch_norm(x, *ours_stats, w, b, training=training, momentum=0.2),
        theirs, [x, w, b], dy, dtype)
    for name, got, want in zip(("running_mean", "running_var"), ours_stats, ref_stats):
        err = (got.double().cpu() - want).abs().max().item()
        print(f"\n  {name}: max |ours - ref| {err:.3e}", end="")
        assert err <= 1e-5 * want.abs().max().item(), (name, err)
        if not training:
            assert torch.equal(got, (rm, rv)[name == "running_var"]), f"{name} changed in eval"


def test_batch_norm_without_parameters_or_running_statistics(cuda, dt):
    torch = cuda
    x, _, _, _, dy = batch_norm_inputs(torch, torch.bfloat16, (4, 32, 9, 9), "nhwc", 410)
    compare_leaves(torch, "batch_norm no parameters, no running statistics",
                   lambda x: dt.batch_norm(x, None, None, training=True),
                   lambda x: torch.nn.functional.batch_norm(x, None, None, training=True),
                   [x], dy, torch.bfloat16)


# torch.library.opcheck: schema, autograd registration, fake tensor, AOT dispatch (dynamic).

def opcheck(torch, op, args):
    result = torch.library.opcheck(op, args)
    assert all(v == "SUCCESS" for v in result.values()), result


@pytest.mark.parametrize("activation,bias,dtype", [
    (None, True, "bfloat16"), ("relu", False, "float16"), ("gelu", True, "bfloat16"),
    ("gelu_tanh", True, "float16"), ("silu", False, "bfloat16")], ids=str)
def test_opcheck_linear(cuda, dt, activation, bias, dtype):
    torch = cuda
    x, w, b, dy = linear_inputs(torch, getattr(torch, dtype), (2, 19), 64, 48, 71, bias)
    x.requires_grad_(True)
    w.requires_grad_(True)
    save = activation in ("gelu", "gelu_tanh", "silu")
    opcheck(torch, torch.ops.dnngraph.linear.default, (x, w, b, activation, save))
    y, z = torch.ops.dnngraph.linear(x.detach(), w.detach(), b, activation, save)
    saved = y if activation == "relu" else z if save else None
    opcheck(torch, torch.ops.dnngraph.linear_backward.default,
            (dy, x.detach(), w.detach(), saved, activation, bias, True, True))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_opcheck_norms(cuda, dt, dtype):
    torch = cuda
    x, w, b, dy = norm_inputs(torch, getattr(torch, dtype), (3, 11), 256, 81)
    x.requires_grad_(True)
    w.requires_grad_(True)
    opcheck(torch, torch.ops.dnngraph.layer_norm.default, (x, [256], w, b, 1e-5))
    opcheck(torch, torch.ops.dnngraph.rms_norm.default, (x, [256], w, 1e-6))
    _, mean, rstd = torch.ops.dnngraph.layer_norm(x.detach(), [256], w, b, 1e-5)
    opcheck(torch, torch.ops.dnngraph.layer_norm_backward.default,
            (dy, x.detach(), [256], mean, rstd, w.detach()))
    _, rstd = torch.ops.dnngraph.rms_norm(x.detach(), [256], w, 1e-6)
    opcheck(torch, torch.ops.dnngraph.rms_norm_backward.default,
            (dy, x.detach(), [256], rstd, None))


def test_opcheck_attention(cuda, dt):
    torch = cuda
    q, k, v, dout = attention_inputs(torch, torch.bfloat16, 2, 4, 2, 48, 48, 64, 170, "bshd")
    for t in (q, k, v):
        t.requires_grad_(True)
    opcheck(torch, torch.ops.dnngraph.sdpa.default, (q, k, v, True, 0.125, True))
    opcheck(torch, torch.ops.dnngraph.sdpa.default, (q, k, v, False, 0.2, False))
    out, lse = torch.ops.dnngraph.sdpa(q.detach(), k.detach(), v.detach(), True, 0.125, True)
    opcheck(torch, torch.ops.dnngraph.sdpa_backward.default,
            (dout, q.detach(), k.detach(), v.detach(), out, lse, True, 0.125))
    q, k, v, dout, cu, _ = packed_inputs(torch, torch.float16, [30, 9, 64], [30, 9, 64], 4, 2,
                                         64, 171)
    for t in (q, k, v):
        t.requires_grad_(True)
    opcheck(torch, torch.ops.dnngraph.varlen_attn.default,
            (q, k, v, cu, cu, 64, 64, True, 0.125, True))
    out, stats = torch.ops.dnngraph.varlen_attn(q.detach(), k.detach(), v.detach(), cu, cu, 64,
                                                64, True, 0.125, True)
    opcheck(torch, torch.ops.dnngraph.varlen_attn_backward.default,
            (dout, q.detach(), k.detach(), v.detach(), out, stats, cu, cu, 64, 64, True, 0.125))


def test_opcheck_conv2d_and_batch_norm(cuda, dt):
    torch = cuda
    for layout, activation in (("nhwc", "silu"), ("nchw", "relu")):
        x, w, b = conv_inputs(torch, torch.bfloat16, layout, 2, 16, (9, 7), 24, (3, 3), 1, 180)
        geometry = ([1, 2], [1, 1], [1, 1], [1, 1], 1)
        opcheck(torch, torch.ops.dnngraph.conv2d.default,
                (x.requires_grad_(True), w.requires_grad_(True), b, *geometry, activation, True))
        y, z = torch.ops.dnngraph.conv2d(x.detach(), w.detach(), b, *geometry, activation, True)
        dy = torch.randn_like(y)
        opcheck(torch, torch.ops.dnngraph.conv2d_backward.default,
                (dy, x.detach(), w.detach(), y if activation == "relu" else z, *geometry,
                 activation, True, True, True))
    for dtype, layout in ((torch.bfloat16, "nhwc"), (torch.float32, "nchw")):
        x, w, b, (rm, rv), dy = batch_norm_inputs(torch, dtype, (4, 16, 6, 5), layout, 181)
        opcheck(torch, torch.ops.dnngraph.batch_norm.default,
                (x.requires_grad_(True), w.requires_grad_(True), b, rm, rv, 0.1, 1e-5))
        opcheck(torch, torch.ops.dnngraph.batch_norm_inference.default,
                (x, w, b, rm, rv, 1e-5))
        _, mean, invstd, _, _ = torch.ops.dnngraph.batch_norm(x.detach(), w, b, None, None, 0.1,
                                                              1e-5)
        opcheck(torch, torch.ops.dnngraph.batch_norm_backward.default,
                (dy, x.detach(), w.detach(), mean, invstd))


# torch's machinery: torch.compile, CUDA graphs, streams.

def mlp_block(dt, x, p):
    h = dt.rms_norm(x, (x.shape[-1],), p["norm"])
    h = dt.linear(h, p["w1"], p["b1"], activation="gelu_tanh")
    return x + dt.linear(h, p["w2"], p["b2"])


def mlp_parameters(torch, d, hidden, seed):
    return {"norm": uniform(torch, (d,), seed, torch.float32) + 1.0,
            "w1": uniform(torch, (hidden, d), seed + 1, torch.bfloat16, d**-0.5),
            "b1": uniform(torch, (hidden,), seed + 2, torch.bfloat16, 0.1),
            "w2": uniform(torch, (d, hidden), seed + 3, torch.bfloat16, hidden**-0.5),
            "b2": uniform(torch, (d,), seed + 4, torch.bfloat16, 0.1)}


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph_runs_an_mlp_block_as_eager(cuda, dt, backend):
    torch = cuda

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for name, value in mlp_parameters(torch, 128, 512, 90).items():
                setattr(self, name, torch.nn.Parameter(value))

        def forward(self, x):
            return mlp_block(dt, x, {k: getattr(self, k) for k in ("norm", "w1", "b1", "w2",
                                                                    "b2")})

    torch._dynamo.reset()
    block = Block()
    compiled = torch.compile(block, fullgraph=True, backend=backend)
    for i, batch in enumerate([(4, 16), (3, 40)]):  # the second recompiles with dynamic shapes
        x = uniform(torch, (*batch, 128), 95 + i, torch.bfloat16)
        got = compiled(x)
        got.float().square().sum().backward()
        got_grads = {k: p.grad for k, p in block.named_parameters()}
        block.zero_grad(set_to_none=True)
        want = block(x)
        want.float().square().sum().backward()
        # The same cuDNN plans run in both; torch's own ops (the residual add, the loss's
        # gradient) may be fused by the compiler: a bf16 rounding apart at most.
        torch.testing.assert_close(got, want, rtol=2 * 2.0**-8, atol=1e-3)
        for k, p in block.named_parameters():
            torch.testing.assert_close(got_grads[k], p.grad, rtol=2 * 2.0**-7, atol=1e-2,
                                       msg=lambda m: f"grad of {k}: {m}")
        block.zero_grad(set_to_none=True)


class DecoderBlock:
    """A pre-norm decoder block made of dnngraph.torch's operators alone: rms_norm, one fused
    QKV projection read by the attention in place ([b, s, h, d] memory), causal grouped-query
    attention, the output projection, and an MLP of linear + SiLU."""

    def __init__(self, torch, d_model=256, h_q=8, h_k=2, hidden=512, seed=180):
        self.h_q, self.h_k, self.d = h_q, h_k, d_model // h_q
        width = (h_q + 2 * h_k) * self.d
        self.parameters = {
            "norm1": uniform(torch, (d_model,), seed, torch.float32) + 1.0,
            "qkv": uniform(torch, (width, d_model), seed + 1, torch.bfloat16, d_model**-0.5),
            "proj": uniform(torch, (d_model, d_model), seed + 2, torch.bfloat16, d_model**-0.5),
            "norm2": uniform(torch, (d_model,), seed + 3, torch.float32) + 1.0,
            "up": uniform(torch, (hidden, d_model), seed + 4, torch.bfloat16, d_model**-0.5),
            "up_bias": uniform(torch, (hidden,), seed + 5, torch.bfloat16, 0.1),
            "down": uniform(torch, (d_model, hidden), seed + 6, torch.bfloat16, hidden**-0.5)}

    def __call__(self, dt, x, p):
        b, s, width = x.shape
        d, h_q, h_k = self.d, self.h_q, self.h_k
        qkv = dt.linear(dt.rms_norm(x, (width,), p["norm1"]), p["qkv"])
        q = qkv[..., :h_q * d].view(b, s, h_q, d).transpose(1, 2)
        k = qkv[..., h_q * d:(h_q + h_k) * d].view(b, s, h_k, d).transpose(1, 2)
        v = qkv[..., (h_q + h_k) * d:].view(b, s, h_k, d).transpose(1, 2)
        o = dt.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + dt.linear(o.transpose(1, 2).reshape(b, s, width), p["proj"])
        h = dt.linear(dt.rms_norm(x, (width,), p["norm2"]), p["up"], p["up_bias"],
                      activation="silu")
        return x + dt.linear(h, p["down"])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph_runs_a_decoder_block_stack_as_eager(cuda, dt, backend):
    torch = cuda
    blocks = [DecoderBlock(torch, seed=180 + 10 * i) for i in range(2)]
    params = [{k: torch.nn.Parameter(v) for k, v in b.parameters.items()} for b in blocks]

    def model(x):
        for block, p in zip(blocks, params):
            x = block(dt, x, p)
        return x

    def grads():
        out = {f"{i}.{k}": p.grad for i, ps in enumerate(params) for k, p in ps.items()}
        for ps in params:
            for p in ps.values():
                p.grad = None
        return out

    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    for i, (b, s) in enumerate([(2, 64), (3, 96)]):
        x = uniform(torch, (b, s, 256), 190 + i, torch.bfloat16)
        got = compiled(x)
        got.float().square().sum().backward()
        got_grads = grads()
        want = model(x)
        want.float().square().sum().backward()
        torch.testing.assert_close(got, want, rtol=2 * 2.0**-8, atol=1e-3)
        for name, g in grads().items():
            torch.testing.assert_close(got_grads[name], g, rtol=2 * 2.0**-7, atol=2e-2,
                                       msg=lambda m: f"grad of {name}: {m}")


def replay_a_captured_block(torch, dt, block, shape, seeds, layout=None):
    """Captures block's forward on static_x (after two warm-up calls on a side stream, as torch
    asks) and replays it on new values of static_x, each against an eager call."""
    static_x = uniform(torch, shape, seeds[0], torch.bfloat16).contiguous(
        memory_format=layout or torch.contiguous_format)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            block(dt, static_x, block.parameters)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = block(dt, static_x, block.parameters)
    for seed in seeds[1:]:
        static_x.copy_(uniform(torch, shape, seed, torch.bfloat16))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(static_out, block(dt, static_x, block.parameters),
                                   rtol=2.0**-7, atol=1e-6)


def test_a_cuda_graph_capture_replays_a_decoder_block(cuda, dt):
    replay_a_captured_block(cuda, dt, DecoderBlock(cuda, seed=200), (2, 64, 256), (201, 202, 203))


class ConvBlock:
    """A ResNet basic block in channels_last: conv 3x3 + batch norm + ReLU, conv 3x3 + batch
    norm, the residual added, ReLU (the convolutions without bias, as ResNet's)."""

    def __init__(self, torch, c, seed):
        self.parameters = {
            "w1": uniform(torch, (c, c, 3, 3), seed, torch.bfloat16, (9 * c)**-0.5 * 2),
            "w2": uniform(torch, (c, c, 3, 3), seed + 1, torch.bfloat16, (9 * c)**-0.5 * 2),
            "g1": uniform(torch, (c,), seed + 2, torch.float32) + 1.5,
            "b1": uniform(torch, (c,), seed + 3, torch.float32),
            "g2": uniform(torch, (c,), seed + 4, torch.float32) + 1.5,
            "b2": uniform(torch, (c,), seed + 5, torch.float32)}
        self.parameters = {k: v.contiguous(memory_format=torch.channels_last) if v.dim() == 4
                           else v for k, v in self.parameters.items()}
        self.running = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"),
                        torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")]

    def __call__(self, dt, x, p, running=None):
        rm1, rv1, rm2, rv2 = running if running is not None else self.running
        h = dt.conv2d(x, p["w1"], padding=1)
        h = dt.batch_norm(h, rm1, rv1, p["g1"], p["b1"], training=True).relu()
        h = dt.conv2d(h, p["w2"], padding=1)
        h = dt.batch_norm(h, rm2, rv2, p["g2"], p["b2"], training=True)
        return (x + h).relu()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph_runs_a_conv_block_as_eager(cuda, dt, backend):
    torch = cuda
    block = ConvBlock(torch, 32, 220)
    params = {k: torch.nn.Parameter(v) for k, v in block.parameters.items()}
    compiled_running = [t.clone() for t in block.running]
    eager_running = [t.clone() for t in block.running]
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: block(dt, x, params, compiled_running), fullgraph=True,
                             backend=backend)
    for i, (n, hw) in enumerate([(4, 16), (2, 12)]):
        x = uniform(torch, (n, 32, hw, hw), 230 + i, torch.bfloat16).contiguous(
            memory_format=torch.channels_last)
        got = compiled(x)
        got.float().square().sum().backward()
        got_grads = {k: p.grad for k, p in params.items()}
        for p in params.values():
            p.grad = None
        want = block(dt, x, params, eager_running)
        want.float().square().sum().backward()
        assert got.is_contiguous(memory_format=torch.channels_last)
        torch.testing.assert_close(got, want, rtol=2 * 2.0**-8, atol=1e-3)
        for k, p in params.items():
            torch.testing.assert_close(got_grads[k], p.grad, rtol=2 * 2.0**-7, atol=2e-2,
                                       msg=lambda m: f"grad of {k}: {m}")
            p.grad = None
        # The running statistics were updated in place under compile as in eager.
        for a, b in zip(compiled_running, eager_running):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert not torch.equal(compiled_running[1], block.running[1])


def test_a_cuda_graph_capture_replays_a_conv_block(cuda, dt):
    replay_a_captured_block(cuda, dt, ConvBlock(cuda, 32, 240), (4, 32, 16, 16), (241, 242, 243),
                            cuda.channels_last)


def test_a_cuda_graph_capture_replays_the_operators(cuda, dt):
    torch = cuda
    p = mlp_parameters(torch, 64, 256, 110)
    w = uniform(torch, (256, 64), 115, torch.bfloat16, 0.125)
    static_x = uniform(torch, (8, 64), 111, torch.bfloat16)
    dy = uniform(torch, (8, 256), 112, torch.bfloat16)

    def step():
        """The MLP block forward, and one linear's forward and backward by the operators."""
        y = mlp_block(dt, static_x, p)
        _, z = torch.ops.dnngraph.linear(static_x, w, None, "gelu", True)
        dx, dw, _ = torch.ops.dnngraph.linear_backward(dy, static_x, w, z, "gelu", False, True,
                                                       True)
        return y, dx, dw

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch asks: builds every graph before capture
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_outputs = step()
    for seed in (113, 114):
        static_x.copy_(uniform(torch, (8, 64), seed, torch.bfloat16))
        graph.replay()
        torch.cuda.synchronize()
        # The same plans on the same inputs: the replay gives what eager calls give, to one
        # bf16 ulp (a plan that splits a sum over blocks may add them in another order). A
        # replay that read stale inputs would be off by the inputs' whole change.
        for got, want in zip(static_outputs, step()):
            torch.testing.assert_close(got, want, rtol=2.0**-7, atol=1e-6)


def test_each_call_runs_on_torchs_current_stream(cuda, dt):
    """Two streams, one thread: on each, a long sleep, then new values into x, then the op. Run
    anywhere but on that stream, the op would read x before the copy and give the old result."""
    torch = cuda
    w = uniform(torch, (64, 128), 120, torch.bfloat16, 0.1)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    xs = [torch.zeros(32, 128, dtype=torch.bfloat16, device="cuda") for _ in streams]
    new = [uniform(torch, (32, 128), 121 + i, torch.bfloat16) for i in range(2)]
    dt.linear(xs[0], w, activation="relu")  # built before the timed part
    torch.cuda.synchronize()
    outs = []
    for s, x, v in zip(streams, xs, new):
        with torch.cuda.stream(s):
            torch.cuda._sleep(50_000_000)  # about 25 ms at 2 GHz
            x.copy_(v)
            outs.append(dt.linear(x, w, activation="relu"))
    torch.cuda.synchronize()
    for out, v in zip(outs, new):
        want = torch.relu(v.float() @ w.float().t())
        io = torch.relu(v @ w.t())
        check(torch, "linear on a side stream", out, want, io, torch.bfloat16)


def test_a_tensor_on_another_device_is_refused(cuda, dt):
    torch = cuda
    if torch.cuda.device_count() < 2:
        pytest.skip("one CUDA device: the refusal is tested with fake tensors on the CPU")
    x = torch.zeros(4, 32, dtype=torch.bfloat16, device="cuda:0")
    w = torch.zeros(16, 32, dtype=torch.bfloat16, device="cuda:1")
    with pytest.raises(ValueError, match="weight is on cuda:1 but x is on cuda:0"):
        dt.linear(x, w)


def test_report_the_variants_taken(cuda, dt):
    """Not a check: what each signature took (fused or split) and the graphs built, for the
    docs; written to $OUT/torch-ops-report.json when OUT is set."""
    report = {"cudnn": dnngraph.cudnn_version_string(dnngraph.cudnn_runtime_version()),
              "torch": cuda.__version__, "device": cuda.cuda.get_device_name(),
              "variants": dt.chosen_variants(), "cache_info": dt.cache_info()}
    print("\n" + json.dumps(report, indent=1))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "torch-ops-report.json"), "w") as f:
            json.dump(report, f, indent=1)


def test_swapped_modules_train_like_torchs(cuda, dt):
    """A small CNN of torch's modules and its copy through dnngraph.torch.nn.swap: the same
    outputs, gradients and running statistics, to bf16's precision, in training and in
    evaluation."""
    torch = cuda
    import copy

    import dnngraph.torch.nn as dnn

    torch.manual_seed(500)
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(16, 32, 3, padding=1, bias=False), torch.nn.BatchNorm2d(32),
        torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 3, stride=2, padding=1),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.LayerNorm(32),
        torch.nn.Linear(32, 10)).cuda()
    ours = dnn.swap(copy.deepcopy(theirs))
    assert isinstance(ours[0], dnn.Conv2d) and isinstance(ours[1], dnn.BatchNorm2d)
    x = uniform(torch, (8, 16, 12, 12), 501).contiguous(memory_format=torch.channels_last)
    for training in (True, False):
        ours.train(training)
        theirs.train(training)
        results = []
        for model in (ours, theirs):
            model.zero_grad()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = model(x)
            y.float().square().sum().backward()
            results.append((y.float(), [p.grad.float() for p in model.parameters()]))
        (y_ours, g_ours), (y_theirs, g_theirs) = results
        torch.testing.assert_close(y_ours, y_theirs, rtol=2 * 2.0**-7, atol=2e-2)
        for i, (a, b) in enumerate(zip(g_ours, g_theirs)):
            torch.testing.assert_close(a, b, rtol=4 * 2.0**-7, atol=5e-2,
                                       msg=lambda m: f"parameter {i}: {m}")
    torch.testing.assert_close(ours[1].running_mean, theirs[1].running_mean, rtol=1e-2,
                               atol=1e-3)
    torch.testing.assert_close(ours[1].running_var, theirs[1].running_var, rtol=1e-2, atol=1e-3)
    assert int(ours[1].num_batches_tracked) == int(theirs[1].num_batches_tracked) == 1
