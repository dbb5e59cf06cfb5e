"""On a CUDA device: the training operations built from Python and compared with torch on the
same inputs (torch computes in Float): layernorm forward in the Training phase and its backward
against torch's layer_norm and autograd; batchnorm in training with the running statistics'
update against torch's batch_norm; a grouped convolution against torch's conv2d. Each case is
built with each heuristics mode on its own: a mode cuDNN offers no engine for is reported
skipped with cuDNN's answer (a finding), never passed."""

import dnngraph
import pytest
from dnngraph import DataType, HeuristicMode, NormFwdPhase

MODES = [HeuristicMode.A, HeuristicMode.B, HeuristicMode.Fallback]
EPSILON = 1e-5


def torch_type(torch, t):
    return {DataType.Half: torch.float16, DataType.BFloat16: torch.bfloat16,
            DataType.Float: torch.float32}[t]


def build_or_skip(g, mode):
    """Builds with the one mode; NoEngine skips the case as a finding."""
    try:
        g.build(dnngraph.Handle(), [mode])
    except dnngraph.Error as e:
        if e.code is dnngraph.ErrorCode.NoEngine:
            pytest.skip(f"finding: cuDNN {dnngraph.cudnn_runtime_version()} offers no engine "
                        f"with heuristics {mode}: {e.message.splitlines()[0]}")
        raise
    return g


def run(torch, g, pack):
    handle = dnngraph.Handle()
    size = g.get_workspace_size()
    ws = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
    g.execute(handle, pack, ws)
    torch.cuda.synchronize()


def uniform(torch, shape, seed, dtype, memory_format=None):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = (torch.rand(*shape, device="cuda", generator=gen) * 2 - 1).to(dtype)
    return t.contiguous(memory_format=memory_format) if memory_format else t


def nan_like(torch, shape, dtype, memory_format=None):
    t = torch.full(shape, float("nan"), dtype=dtype, device="cuda")
    return t.contiguous(memory_format=memory_format) if memory_format else t


def assert_close(torch, got, want, atol, rtol, what):
    got, want = got.float(), want.float()
    assert not torch.isnan(got).any(), f"{what}: NaN (left unwritten?)"
    err = (got - want).abs().max().item()
    torch.testing.assert_close(got, want, atol=atol, rtol=rtol, msg=lambda m: f"{what}: {m}")
    return err


# Half/BFloat16 bounds as tests/gpu/norm_test.cpp and norm_backward_test.cpp argue them (one
# rounding of Y or dX to the I/O type, plus the Float statistics); Float ones for the sums.
Y_TOLERANCE = {DataType.Half: (4e-3, 2e-3), DataType.BFloat16: (3e-2, 1e-2)}
DX_TOLERANCE = {DataType.Half: (8e-3, 4e-3), DataType.BFloat16: (6e-2, 2e-2)}


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("io", [DataType.Half, DataType.BFloat16], ids=str)
def test_layernorm_training_and_backward_match_torch_autograd(cuda, io, mode):
    torch = cuda
    rows, features = 37, 1024  # an odd row count; X [rows, features, 1, 1] as cuDNN's samples
    tt = torch_type(torch, io)
    x = uniform(torch, (rows, features, 1, 1), 11, tt)
    scale = uniform(torch, (1, features, 1, 1), 12, torch.float32) + 1.5
    bias = uniform(torch, (1, features, 1, 1), 13, torch.float32)
    dy = uniform(torch, (rows, features, 1, 1), 14, tt)

    fwd = dnngraph.Graph(io_data_type=io, compute_data_type=DataType.Float)
    tx = fwd.tensor(name="X", uid=1, dim=[rows, features, 1, 1])
    ts = fwd.tensor(name="scale", uid=2, dim=[1, features, 1, 1], data_type=DataType.Float)
    tb = fwd.tensor(name="bias", uid=3, dim=[1, features, 1, 1], data_type=DataType.Float)
    y_t, mean_t, inv_t = fwd.layernorm(tx, ts, tb, phase=NormFwdPhase.Training, epsilon=EPSILON)
    y_t.set_output(True).set_uid(4)
    mean_t.set_output(True).set_uid(5).set_data_type(DataType.Float)
    inv_t.set_output(True).set_uid(6).set_data_type(DataType.Float)
    build_or_skip(fwd, mode)
    y = nan_like(torch, (rows, features, 1, 1), tt)
    mean = nan_like(torch, (rows, 1, 1, 1), torch.float32)
    inv = nan_like(torch, (rows, 1, 1, 1), torch.float32)
    run(torch, fwd, {1: x, 2: scale, 3: bias, 4: y, 5: mean, 6: inv})

    xf = x.float().view(rows, features).requires_grad_(True)
    w = scale.view(features).clone().requires_grad_(True)
    b = bias.view(features).clone().requires_grad_(True)
    want_y = torch.nn.functional.layer_norm(xf, (features,), w, b, EPSILON)
    atol, rtol = Y_TOLERANCE[io]
    assert_close(torch, y.view(rows, features), want_y.detach(), atol, rtol, "Y")
    var = xf.detach().var(dim=1, unbiased=False)
    assert_close(torch, mean.view(rows), xf.detach().mean(dim=1), 1e-5, 1e-5, "mean")
    assert_close(torch, inv.view(rows), (var + EPSILON).rsqrt(), 1e-4, 1e-4, "inv_variance")

    # The backward reads the forward's saved statistics, as a training step does.
    bwd = dnngraph.Graph(io_data_type=io, compute_data_type=DataType.Float)
    tdy = bwd.tensor(name="dY", uid=1, dim=[rows, features, 1, 1])
    tx = bwd.tensor(name="X", uid=2, dim=[rows, features, 1, 1])
    ts = bwd.tensor(name="scale", uid=3, dim=[1, features, 1, 1], data_type=DataType.Float)
    tm = bwd.tensor(name="mean", uid=4, dim=[rows, 1, 1, 1], data_type=DataType.Float)
    ti = bwd.tensor(name="inv_variance", uid=5, dim=[rows, 1, 1, 1], data_type=DataType.Float)
    dx_t, dscale_t, dbias_t = bwd.layernorm_backward(tdy, tx, ts, tm, ti)
    dx_t.set_output(True).set_uid(10)
    dscale_t.set_output(True).set_uid(11)
    dbias_t.set_output(True).set_uid(12)
    build_or_skip(bwd, mode)
    dx = nan_like(torch, (rows, features, 1, 1), tt)
    dscale = nan_like(torch, (1, features, 1, 1), torch.float32)
    dbias = nan_like(torch, (1, features, 1, 1), torch.float32)
    run(torch, bwd, {1: dy, 2: x, 3: scale, 4: mean, 5: inv, 10: dx, 11: dscale, 12: dbias})

    want_y.backward(dy.float().view(rows, features))
    atol, rtol = DX_TOLERANCE[io]
    assert_close(torch, dx.view(rows, features), xf.grad, atol, rtol, "dX")
    # Sums of 37 products of inputs exact in the I/O type: Float sums, far inside 1e-4.
    assert_close(torch, dscale.view(features), w.grad, 1e-4, 1e-4, "dScale")
    assert_close(torch, dbias.view(features), b.grad, 1e-4, 1e-4, "dBias")


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_batchnorm_training_updates_the_running_statistics_as_torch(cuda, mode):
    torch = cuda
    n, c, h, w = 4, 32, 9, 7  # odd spatial sizes, channels-last
    momentum = 0.125
    cl = torch.channels_last
    x = uniform(torch, (n, c, h, w), 21, torch.float16, cl)
    scale = uniform(torch, (1, c, 1, 1), 22, torch.float32) + 1.5
    bias = uniform(torch, (1, c, 1, 1), 23, torch.float32)
    prev_mean = uniform(torch, (1, c, 1, 1), 24, torch.float32)
    prev_var = uniform(torch, (1, c, 1, 1), 25, torch.float32) + 2.0

    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)
    tx = g.tensor(name="X", uid=1, dim=[n, c, h, w],
                  stride=dnngraph.channels_last_strides([n, c, h, w]))
    stat = dict(dim=[1, c, 1, 1], data_type=DataType.Float)
    ts = g.tensor(name="scale", uid=2, **stat)
    tb = g.tensor(name="bias", uid=3, **stat)
    tpm = g.tensor(name="prev_running_mean", uid=4, **stat)
    tpv = g.tensor(name="prev_running_var", uid=5, **stat)
    y_t, mean_t, inv_t, next_mean_t, next_var_t = g.batchnorm(
        tx, ts, tb, epsilon=EPSILON, prev_running_mean=tpm, prev_running_var=tpv,
        momentum=momentum)
    y_t.set_output(True).set_uid(10)
    for t, uid in ((mean_t, 11), (inv_t, 12), (next_mean_t, 13), (next_var_t, 14)):
        t.set_output(True).set_uid(uid).set_data_type(DataType.Float)
    build_or_skip(g, mode)
    y = nan_like(torch, (n, c, h, w), torch.float16, cl)
    outs = {uid: nan_like(torch, (1, c, 1, 1), torch.float32) for uid in (11, 12, 13, 14)}
    run(torch, g, {1: x, 2: scale, 3: bias, 4: prev_mean, 5: prev_var, 10: y, **outs})

    running_mean = prev_mean.view(c).clone()
    running_var = prev_var.view(c).clone()
    # torch's native kernel, not its cuDNN path: the reference must not be the library under
    # test (and a cuDNN without its legacy sub-libraries cannot run torch's batch_norm).
    with torch.backends.cudnn.flags(enabled=False):
        want_y = torch.nn.functional.batch_norm(
            x.float(), running_mean, running_var, scale.view(c), bias.view(c), training=True,
            momentum=momentum, eps=EPSILON)
    assert_close(torch, y, want_y, 4e-3, 4e-3, "Y")
    xf = x.float()
    assert_close(torch, outs[11].view(c), xf.mean(dim=(0, 2, 3)), 1e-5, 1e-5, "mean")
    var = xf.var(dim=(0, 2, 3), unbiased=False)
    assert_close(torch, outs[12].view(c), (var + EPSILON).rsqrt(), 1e-4, 1e-4, "inv_variance")
    # torch's running variance takes the unbiased batch variance, as cuDNN's does.
    assert_close(torch, outs[13].view(c), running_mean, 1e-5, 1e-5, "next_running_mean")
    assert_close(torch, outs[14].view(c), running_var, 1e-5, 1e-5, "next_running_var")


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("groups", [4, 16], ids=["grouped", "depthwise"])
def test_grouped_conv_fprop_matches_torch(cuda, groups, mode):
    torch = cuda
    n, c, h, w, k = 2, 16, 9, 11, 16
    cl = torch.channels_last
    x = uniform(torch, (n, c, h, w), 31, torch.float16, cl)
    wt = uniform(torch, (k, c // groups, 3, 3), 32, torch.float16, cl)

    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float)
    tx = g.tensor(name="X", uid=1, dim=[n, c, h, w],
                  stride=dnngraph.channels_last_strides([n, c, h, w]))
    tw = g.tensor(name="W", uid=2, dim=[k, c // groups, 3, 3],
                  stride=dnngraph.channels_last_strides([k, c // groups, 3, 3]))
    y_t = g.conv_fprop(tx, tw, padding=[1, 1], stride=[1, 1], group_count=groups)
    y_t.set_output(True).set_uid(3)
    build_or_skip(g, mode)
    assert list(y_t.stride) == dnngraph.channels_last_strides([n, k, h, w])
    y = nan_like(torch, (n, k, h, w), torch.float16, cl)
    run(torch, g, {1: x, 2: wt, 3: y})

    with torch.backends.cudnn.flags(enabled=False):  # the reference is not cuDNN's own
        want = torch.nn.functional.conv2d(x.float(), wt.float(), padding=1, groups=groups)
    # At most 36 products per output, each rounded to Half once at the end: tests/gpu/conv_test's
    # bound for Half.
    assert_close(torch, y, want, 1e-2, 1e-2, "Y")
