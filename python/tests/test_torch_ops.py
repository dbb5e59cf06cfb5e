"""dnngraph.torch without a GPU: the operators are registered in the dnngraph namespace, their
fake implementations give torch's shapes and dtypes under FakeTensorMode (forward and, through
autograd, backward), and wrong arguments raise ValueError naming the argument, the values and
the fix before cuDNN is called. Skipped as a whole where torch is not installed (the CUDA side
is test_gpu_torch_ops.py)."""

import collections
import contextlib
import threading
import types

import pytest

import dnngraph

torch = pytest.importorskip(
    "torch", reason="torch is not installed: dnngraph.torch and its tests need it")

import dnngraph.torch as dt  # noqa: E402
from dnngraph.torch import _attention, _batch_norm, _checks, _conv, _linear, _norms  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32


@pytest.fixture
def fake():
    """Tensors made inside are fake: CUDA tensors without a GPU, and the ops run their fake
    implementations."""
    with FakeTensorMode():
        yield


def cuda(*shape, dtype=BF16, device="cuda", grad=False):
    return torch.empty(*shape, dtype=dtype, device=device, requires_grad=grad)


def test_every_operator_is_in_the_dnngraph_namespace():
    for name in ("linear", "linear_backward", "layer_norm", "layer_norm_backward", "rms_norm",
                 "rms_norm_backward", "sdpa", "sdpa_backward", "varlen_attn",
                 "varlen_attn_backward", "conv2d", "conv2d_backward", "batch_norm",
                 "batch_norm_backward", "batch_norm_inference"):
        assert hasattr(torch.ops.dnngraph, name), name
        # torch.compile hands each call the strides the fake implementation saw.
        assert torch.Tag.needs_exact_strides in getattr(torch.ops.dnngraph, name).default.tags
    schema = str(torch.ops.dnngraph.linear.default._schema)
    assert schema.startswith("dnngraph::linear(Tensor x, Tensor weight, Tensor? bias, str? "
                             "activation, bool save_preactivation) -> (Tensor, Tensor)"), schema


@pytest.mark.parametrize("activation", dt.ACTIVATIONS)
@pytest.mark.parametrize("dtype", [BF16, FP16], ids=str)
def test_linear_fake_gives_torch_shapes(fake, activation, dtype):
    x, w, b = cuda(4, 7, 32, dtype=dtype), cuda(48, 32, dtype=dtype), cuda(48, dtype=dtype)
    y = dt.linear(x, w, b, activation)
    assert (y.shape, y.dtype, y.device.type) == ((4, 7, 48), dtype, "cuda")
    assert dt.linear(x[0, 0], w).shape == (48,)


class Ctx:
    """What torch's autograd gives setup_context and the backward: the autograd engine itself
    needs a CUDA device to run on fake CUDA tensors, so these tests call both directly."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors


def autograd(module, op, inputs, needs_input_grad):
    """The operator's forward, its setup_context and its registered backward, as autograd runs
    them; returns (outputs, ctx, gradients)."""
    outputs = op(*inputs)
    ctx = Ctx(needs_input_grad)
    module["setup"](ctx, inputs, outputs)
    each = outputs if isinstance(outputs, tuple) else (outputs,)
    grads = module["backward"](ctx, *[torch.ones_like(o) for o in each])
    assert len(grads) == len(inputs)
    return outputs, ctx, grads


LINEAR = {"setup": _linear._setup_context, "backward": _linear._autograd_backward}
LAYER_NORM = {"setup": _norms._layer_norm_setup, "backward": _norms._layer_norm_autograd}
RMS_NORM = {"setup": _norms._rms_norm_setup, "backward": _norms._rms_norm_autograd}


@pytest.mark.parametrize("activation", dt.ACTIVATIONS)
def test_linear_backward_gives_gradients_of_the_inputs_shapes(fake, activation):
    x, w, b = cuda(3, 5, 32), cuda(16, 32), cuda(16)
    save = activation in ("gelu", "gelu_tanh", "silu")
    (y, z), ctx, grads = autograd(LINEAR, torch.ops.dnngraph.linear,
                                  (x, w, b, activation, save), (True, True, True, False, False))
    assert ctx.non_differentiable == (z,)
    saved = ctx.saved_tensors[2]
    assert saved is (y if activation == "relu" else z if save else None)
    for grad, t in zip(grads[:3], (x, w, b)):
        assert (grad.shape, grad.dtype) == (t.shape, t.dtype)
    assert grads[3:] == (None, None)


def test_linear_backward_returns_only_the_gradients_asked_for(fake):
    x, w = cuda(8, 32), cuda(16, 32)
    _, _, grads = autograd(LINEAR, torch.ops.dnngraph.linear, (x, w, None, "relu", False),
                           (False, True, False, False, False))
    assert grads[0] is None and grads[1].shape == w.shape and grads[2] is None


def test_linear_saves_the_preactivation_only_where_the_backward_reads_it(fake):
    x, w = cuda(8, 32, grad=True), cuda(16, 32)
    for activation, saved in (("gelu", (8, 16)), ("silu", (8, 16)), ("relu", (0,)), (None, (0,))):
        _, z = torch.ops.dnngraph.linear(x, w, None, activation, True)
        assert z.shape == saved, activation
    _, z = torch.ops.dnngraph.linear(x, w, None, "gelu", False)
    assert z.shape == (0,)


def test_a_backward_without_the_saved_preactivation_says_how_to_save_it(fake):
    x, w = cuda(8, 32), cuda(16, 32)
    with pytest.raises(ValueError, match="needs the forward's pre-activation, which was not "
                                         "saved.*save_preactivation=True"):
        autograd(LINEAR, torch.ops.dnngraph.linear, (x, w, None, "gelu_tanh", False),
                 (True, True, False, False, False))


@pytest.mark.parametrize("dtype", [BF16, FP16, FP32], ids=str)
def test_norms_fake_give_torch_shapes_and_float32_statistics(fake, dtype):
    x = cuda(2, 3, 4, 64, dtype=dtype)
    w, b = cuda(4, 64, dtype=FP32), cuda(4, 64, dtype=dtype)
    y, mean, rstd = torch.ops.dnngraph.layer_norm(x, [4, 64], w, b, 1e-5)
    assert (y.shape, y.dtype) == (x.shape, dtype)
    assert (mean.shape, mean.dtype, rstd.shape, rstd.dtype) == ((6,), FP32, (6,), FP32)
    y, rstd = torch.ops.dnngraph.rms_norm(x, [64], None, 1e-6)
    assert (y.shape, y.dtype, rstd.shape) == (x.shape, dtype, (24,))
    assert dt.layer_norm(x, 64).shape == x.shape
    assert dt.rms_norm(x, (4, 64), w).shape == x.shape


def test_norm_backward_gives_gradients_in_the_parameters_dtypes(fake):
    x, w, b = cuda(2, 3, 128), cuda(128, dtype=FP32), cuda(128, dtype=BF16)
    (_, mean, rstd), ctx, grads = autograd(LAYER_NORM, torch.ops.dnngraph.layer_norm,
                                           (x, [128], w, b, 1e-5), (True, False, True, True, False))
    assert ctx.non_differentiable == (mean, rstd)
    assert [(g.shape, g.dtype) for g in grads[:1] + grads[2:4]] == [
        ((2, 3, 128), BF16), ((128,), FP32), ((128,), BF16)]
    assert grads[1] is None and grads[4] is None
    _, ctx, grads = autograd(RMS_NORM, torch.ops.dnngraph.rms_norm, (x, [128], w, 1e-6),
                             (True, False, True, False))
    assert [(g.shape, g.dtype) for g in grads[:1] + grads[2:3]] == [
        ((2, 3, 128), BF16), ((128,), FP32)]


def test_norms_without_parameters_differentiate_the_input_alone(fake):
    x = cuda(6, 128)
    _, _, grads = autograd(LAYER_NORM, torch.ops.dnngraph.layer_norm, (x, [128], None, None, 0.1),
                           (True, False, False, False, False))
    assert grads[0].shape == x.shape and grads[1:] == (None, None, None, None)
    _, _, grads = autograd(RMS_NORM, torch.ops.dnngraph.rms_norm, (x, [128], None, 0.1),
                           (True, False, False, False))
    assert grads[0].shape == x.shape and grads[1:] == (None, None, None)


def test_the_ops_trace_into_one_node_each(fake):
    from torch.fx.experimental.proxy_tensor import make_fx

    def block(x, w, b, nw):
        return dt.linear(dt.rms_norm(x, (32,), nw), w, b, "silu")

    graph = make_fx(block)(cuda(4, 32), cuda(16, 32), cuda(16), cuda(32, dtype=FP32)).graph
    calls = [str(n.target) for n in graph.nodes
             if n.op == "call_function" and "getitem" not in str(n.target)]
    assert calls == ["dnngraph.rms_norm.default", "dnngraph.linear.default"], calls


# Argument checks: the message names the argument, what it is, and the fix.

def refused(call, *fragments):
    with pytest.raises(ValueError) as caught:
        call()
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    return str(caught.value)


def test_cpu_tensors_are_refused_before_cudnn():
    x, w = torch.zeros(4, 32, dtype=BF16), torch.zeros(16, 32, dtype=BF16)
    refused(lambda: dt.linear(x, w), "dnngraph.torch.linear: x is a tensor on cpu", "x.cuda()")
    refused(lambda: dt.layer_norm(x, (32,)), "dnngraph.torch.layer_norm: input is a tensor on cpu")
    refused(lambda: dt.rms_norm(x, (32,)), "rms_norm: input is a tensor on cpu")


def test_linear_refuses_wrong_dtypes(fake):
    refused(lambda: dt.linear(cuda(4, 32, dtype=FP32), cuda(16, 32, dtype=FP32)),
            "x has dtype torch.float32; it takes torch.bfloat16 or torch.float16",
            "torch.autocast('cuda')")
    refused(lambda: dt.linear(cuda(4, 32), cuda(16, 32, dtype=FP16)),
            "weight has dtype torch.float16 but x has torch.bfloat16", "weight.to(x.dtype)")
    refused(lambda: dt.linear(cuda(4, 32), cuda(16, 32), cuda(16, dtype=FP32)),
            "bias has dtype torch.float32 but x has torch.bfloat16")


def test_linear_refuses_wrong_shapes(fake):
    refused(lambda: dt.linear(cuda(4, 32), cuda(16, 48)),
            "weight has shape (16, 48); expected (out_features, 32)", "x has shape (4, 32)")
    refused(lambda: dt.linear(cuda(4, 32), cuda(32)), "weight has shape (32,)")
    refused(lambda: dt.linear(cuda(4, 32), cuda(16, 32), cuda(15)),
            "bias has shape (15,); expected (16,) (out_features of weight)")
    refused(lambda: dt.linear(cuda(4, 0), cuda(16, 0)), "in_features is 0")
    refused(lambda: dt.linear(cuda(()), cuda(16, 1)), "0-dim")


def test_linear_refuses_what_it_cannot_read_in_place(fake):
    refused(lambda: dt.linear(cuda(32, 4).t(), cuda(16, 32)),
            "x of shape (4, 32) has strides (1, 4), not contiguous", "x.contiguous()")
    refused(lambda: dt.linear(cuda(4, 32), cuda(32, 16).t()),
            "weight of shape (16, 32) has strides (1, 16)")


def test_linear_refuses_an_unknown_activation(fake):
    refused(lambda: dt.linear(cuda(4, 32), cuda(16, 32), activation="tanh"),
            "activation 'tanh' is not one of None, 'relu', 'gelu', 'gelu_tanh', 'silu'")


def test_tensors_on_two_devices_are_refused(fake):
    try:
        cuda(1, device="cuda:1")
    except (RuntimeError, AssertionError) as e:  # a machine with one CUDA device may refuse it
        pytest.skip(f"no fake tensor on cuda:1 here: {e}")
    refused(lambda: dt.linear(cuda(4, 32), cuda(16, 32, device="cuda:1")),
            "weight is on cuda:1 but x is on cuda:0", "one device")
    refused(lambda: dt.layer_norm(cuda(4, 32), (32,), cuda(32, device="cuda:1")),
            "weight is on cuda:1 but input is on cuda:0")


def test_norms_refuse_a_normalized_shape_that_does_not_end_the_input(fake):
    for norm in (dt.layer_norm, dt.rms_norm):
        refused(lambda: norm(cuda(4, 32), (16,)),
                "normalized_shape [16] does not end input's shape (4, 32)", "(*, 16)")
        refused(lambda: norm(cuda(4, 32), (2, 4, 32)), "normalized_shape [2, 4, 32]")
        refused(lambda: norm(cuda(4, 32), ()), "at least one")


def test_norms_refuse_wrong_parameters(fake):
    refused(lambda: dt.layer_norm(cuda(4, 32), (32,), cuda(16)),
            "layer_norm: weight has shape (16,); expected (32,) (normalized_shape)")
    refused(lambda: dt.layer_norm(cuda(4, 32), (32,), None, cuda(32, dtype=torch.int32)),
            "bias has dtype torch.int32")
    refused(lambda: dt.rms_norm(cuda(4, 32), (32,), cuda(32, 2).t()[0]), "not contiguous")
    refused(lambda: dt.rms_norm(cuda(4, 32), (32,), None, -1.0), "eps is -1.0")
    refused(lambda: dt.layer_norm(cuda(4, 32, dtype=torch.float64), (32,)),
            "input has dtype torch.float64")
    refused(lambda: dt.layer_norm(cuda(32, 4).t(), (32,)), "input of shape (4, 32)",
            "input.contiguous()")


def test_the_operators_are_registered_once_per_process():
    # A second import is the same module (no second registration, which torch would refuse).
    import importlib

    assert importlib.import_module("dnngraph.torch") is dt
    assert dt.linear.__module__ == "dnngraph.torch._linear"


# The CUDA implementations on fake tensors, with the three GPU steps replaced: each graph an
# operator describes is validated and lowered (cuDNN's backend descriptors need no GPU), and each
# execute() checks its buffers against the graph's tensors as the binding does on the GPU (dims,
# strides but those of size-1 dims, dtype, every non-virtual tensor given). A variant can be
# refused with NoEngine, as cuDNN would, to walk the fallbacks.

class Recorder:
    """A Graph that remembers every tensor its calls returned."""

    def __init__(self, graph, op):
        self.graph, self.op, self.tensors = graph, op, []

    def __getattr__(self, name):
        method = getattr(self.graph, name)

        def call(*args, **kwargs):
            out = method(*args, **kwargs)
            for t in out if isinstance(out, tuple) else (out,):
                if isinstance(t, dnngraph.TensorAttributes):
                    self.tensors.append(t)
            return out

        return call


def no_engine(what):
    e = dnngraph.Error(f"NoEngine: {what} refused by the test")
    e.code, e.message = dnngraph.ErrorCode.NoEngine, f"{what} refused by the test"
    return e


@pytest.fixture
def builds(monkeypatch):
    """_runtime.graph() on fresh tables, with a Graph that records how it was made and builds
    nothing (state["refuse_static"] makes static builds raise NoEngine)."""
    from dnngraph.torch import _runtime

    state = {"made": [], "refuse_static": False}

    class Graph:
        def __init__(self, **options):
            self.dynamic = bool(options.get("dynamic_shape"))
            state["made"].append(self)

        def build(self, handle, modes):
            if not self.dynamic and state.get("hold_static") is not None:
                assert state["hold_static"].wait(timeout=30), "the test never released a build"
            if state["refuse_static"] and not self.dynamic:
                raise no_engine("static plan")

    for name, fresh in (("_graphs", collections.OrderedDict()), ("_kernel_caches", {}),
                        ("_builds", collections.Counter()),
                        ("_static_plans", collections.Counter()),
                        ("_build_seconds", collections.defaultdict(float)),
                        ("_background_seconds", collections.defaultdict(float)),
                        ("_static_after", [_runtime.STATIC_AFTER]), ("_background", [False]),
                        ("_builder_pool", [])):
        monkeypatch.setattr(_runtime, name, fresh)
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(_runtime.dnngraph, "Graph", Graph)
    monkeypatch.setattr(_runtime.dnngraph, "KernelCache",
                        lambda: types.SimpleNamespace(is_built=lambda: False))
    monkeypatch.setattr(_runtime, "handle", lambda device: None)
    monkeypatch.setattr(_runtime, "_capability", lambda device: (9, 0))
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: state.get("capturing"))

    def run(kind, shapes=(64, 32, 16), op="linear.forward"):
        return _runtime.graph(op, kind, ("topology",), shapes, torch.device("cuda", 0),
                              dnngraph.DataType.BFloat16, lambda g: None)

    state["run"] = run
    return state


def test_a_dynamic_graph_gets_a_static_plan_after_its_runs(builds):
    run = builds["run"]
    dynamic = run("matmul")
    assert dynamic.dynamic
    for _ in range(dt._runtime.STATIC_AFTER - 1):  # the runs after the first build
        assert run("matmul") is dynamic
    static = run("matmul")
    assert not static.dynamic and run("matmul") is static and run("matmul") is static
    assert len(builds["made"]) == 2
    assert dt.cache_info()["static_plans"] == {"linear.forward": 1}
    assert dt.cache_info()["builds"] == {"linear.forward": 2}
    assert run("matmul", shapes=(7, 32, 16)).dynamic  # a new shape: its dynamic plan first


def test_static_plans_follow_set_static_after(builds):
    run = builds["run"]
    dt.set_static_after(2)
    dynamic = run("matmul")
    assert run("matmul") is dynamic and not run("matmul").dynamic
    dt.set_static_after(None)
    other = run("matmul", shapes=(3, 32, 16))
    assert all(run("matmul", shapes=(3, 32, 16)) is other for _ in range(40))
    static_kind = run("norm")  # a static kind is never built twice
    assert all(run("norm") is static_kind for _ in range(40))
    assert len(builds["made"]) == 4
    for wrong in (-1, True, 2.5, "16"):
        with pytest.raises(ValueError, match="set_static_after: runs is"):
            dt.set_static_after(wrong)


def test_static_after_zero_builds_the_static_plan_alone_at_the_first_run(builds):
    """set_static_after(0), for CUDA graphs: a shape's first run builds its static plan and no
    dynamic one; inside a capture, or where cuDNN refuses the static plan, the dynamic plan."""
    run = builds["run"]
    dt.set_static_after(0)
    static = run("matmul")
    assert not static.dynamic and all(run("matmul") is static for _ in range(5))
    assert len(builds["made"]) == 1 and dt.cache_info()["static_plans"] == {"linear.forward": 1}
    builds["capturing"] = True
    captured = run("matmul", shapes=(5, 32, 16))
    assert captured.dynamic and run("matmul", shapes=(5, 32, 16)) is captured
    builds["capturing"] = False
    promoted = run("matmul", shapes=(5, 32, 16))  # the first run outside the capture
    assert not promoted.dynamic and run("matmul", shapes=(5, 32, 16)) is promoted
    builds["refuse_static"] = True
    refused = run("matmul", shapes=(6, 32, 16))
    assert refused.dynamic and [g.dynamic for g in builds["made"][-2:]] == [False, True]
    assert run("matmul", shapes=(6, 32, 16)) is refused  # tried once, then kept
    assert dt.cache_info()["static_plans"] == {"linear.forward": 2}


def test_background_static_plans_build_beside_the_calls_and_take_over_once_built(builds):
    from dnngraph.torch import _runtime

    run = builds["run"]
    builds["hold_static"] = hold = threading.Event()
    dt.set_static_after(2, background=True)
    dynamic = run("matmul")
    assert run("matmul") is dynamic
    assert run("matmul") is dynamic  # the third run asks for the static plan and does not wait
    assert run("matmul") is dynamic  # still building
    calls_seconds = dt.cache_info()["build_seconds"]  # the dynamic build's
    hold.set()
    dt.wait_for_static_plans()
    static = run("matmul")
    assert not static.dynamic and run("matmul") is static and len(builds["made"]) == 2
    assert dt.cache_info()["static_plans"] == {"linear.forward": 1}
    # the static build's seconds are the builder thread's, not the calls'
    assert dt.cache_info()["build_seconds"] == calls_seconds
    assert dt.cache_info()["background_build_seconds"] > 0
    # cuDNN refuses one: the dynamic plan runs on, asked for once
    builds["refuse_static"] = True
    refused = [run("matmul", shapes=(3, 32, 16)) for _ in range(3)]
    dt.wait_for_static_plans()
    assert all(run("matmul", shapes=(3, 32, 16)) is refused[0] for _ in range(5))
    assert len(builds["made"]) == 4 and dt.cache_info()["static_plans"] == {"linear.forward": 1}
    # the tables cleared while one builds: it is not put back
    builds["refuse_static"], builds["hold_static"] = False, threading.Event()
    for _ in range(3):
        run("matmul", shapes=(5, 32, 16))
    dt.clear_caches()
    builds["hold_static"].set()
    dt.wait_for_static_plans()
    assert len(_runtime._graphs) == 0
    with pytest.raises(ValueError, match="background is 1"):
        dt.set_static_after(2, background=1)


def test_threads_promoting_shapes_in_the_background_build_each_plan_once(builds):
    from dnngraph.torch import _runtime

    run = builds["run"]
    dt.set_static_after(3, background=True)
    shapes = [(rows, 32, 16) for rows in range(1, 11)]
    failures = []

    def calls(seed):
        try:
            for i in range(300):
                g = run("matmul", shapes=shapes[(seed * 7 + i) % len(shapes)])
                assert g is not None
        except Exception as e:  # reported below: a thread's assertion never reaches pytest
            failures.append(e)

    threads = [threading.Thread(target=calls, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt.wait_for_static_plans()
    assert failures == []
    assert all(not run("matmul", shapes=shape).dynamic for shape in shapes)
    info = dt.cache_info()
    assert info["static_plans"] == {"linear.forward": len(shapes)}
    # one static plan each; a dynamic plan each at least (two threads meeting a new shape at
    # once may both build it, and the first kept wins)
    assert info["builds"]["linear.forward"] >= 2 * len(shapes)
    assert len(_runtime._graphs) == len(shapes)


def test_a_refused_or_captured_static_plan_leaves_the_dynamic_one(builds):
    run = builds["run"]
    dt.set_static_after(1)
    builds["capturing"] = True
    dynamic = run("matmul")
    assert run("matmul") is dynamic and run("matmul") is dynamic  # no build inside a capture
    assert len(builds["made"]) == 1
    builds["capturing"], builds["refuse_static"] = False, True
    assert run("matmul") is dynamic  # cuDNN refused the static plan: tried once, then kept
    assert all(run("matmul") is dynamic for _ in range(5))
    assert len(builds["made"]) == 2 and dt.cache_info()["static_plans"] == {}


REAL_KERNEL_CACHE = dnngraph.KernelCache


@pytest.fixture
def store(builds, tmp_path):
    """The builds fixture with a cache store in a fresh folder (detached after the test)."""
    if dnngraph.cudnn_runtime_version() == 0:
        pytest.skip(f"no cuDNN to name a store's files: {dnngraph.cudnn_library_source()}")
    from dnngraph.torch import _store

    builds["folder"] = tmp_path / "store"
    yield builds
    _store.set_cache_store(None)


def test_kernel_caches_come_from_the_store_and_go_back(store, monkeypatch):
    from dnngraph.torch import _runtime

    monkeypatch.setattr(dnngraph, "KernelCache", REAL_KERNEL_CACHE)
    run = store["run"]
    run("matmul", op="before")  # a cache made before the store: not the store's
    assert dt.set_cache_store(store["folder"]) == store["folder"]
    run("matmul")
    run("matmul", shapes=(7, 32, 16))  # another shape: the same kernel cache
    loaded = [c for k, c in _runtime._kernel_caches.items() if k[0] == "linear.forward"]
    assert len(loaded) == 1 and isinstance(loaded[0], REAL_KERNEL_CACHE)
    # No build used it (the Graph here builds nothing): nothing to write yet.
    report = dt.save_caches()
    assert report == {"folder": str(store["folder"]), "saved": 0, "unchanged": 1,
                      "not_from_store": 1, "errors": []}
    dt.set_cache_store(None)
    assert dt.save_caches()["folder"] is None


def test_a_stored_cache_is_loaded_at_its_topology_s_first_use(store, cudnn_documents):
    from dnngraph.torch import _runtime, _store

    dt.set_cache_store(store["folder"])
    key = ("linear.forward", ("topology",), (9, 0))
    path = dnngraph.KernelCacheStore(store["folder"]).load_or_create(
        _store.topology_name(key), "sm_90").path
    document = cudnn_documents / "matmul.json"
    path.write_text(document.read_text())
    assert dt.cache_info()["kernel_caches_loaded"] == 0  # loaded when first used, not before
    store["run"]("matmul")
    assert dt.cache_info()["kernel_caches_loaded"] == 1
    assert isinstance(_runtime._kernel_caches[key], REAL_KERNEL_CACHE)
    dt.clear_caches()
    assert dt.cache_info()["kernel_caches_loaded"] == 0


def test_a_stored_cache_that_cannot_serve_warns_and_starts_empty(store):
    from dnngraph.torch import _runtime, _store

    dt.set_cache_store(store["folder"])
    key = ("linear.forward", ("topology",), (9, 0))
    path = dnngraph.KernelCacheStore(store["folder"]).load_or_create(
        _store.topology_name(key), "sm_90").path
    path.write_text("{ not a kernel cache")
    with pytest.warns(RuntimeWarning, match="stored kernel cache of linear.forward could not"):
        store["run"]("matmul")
    assert len(_runtime._kernel_caches) == 1 and dt.cache_info()["kernel_caches_loaded"] == 0
    assert list(store["folder"].glob("*.damaged")), "the damaged file was not set aside"


def test_store_names_are_file_names_and_the_same_in_every_process():
    from dnngraph.torch import _store

    keys = [("linear.forward", (BF16, "gelu_tanh", "bias", ""), (9, 0)),
            ("linear.forward", (BF16, "relu", "bias", ""), (9, 0)),
            ("conv2d.forward", (torch.float16, (1, 1), "relu"), (9, 0))]
    names = [_store.topology_name(k) for k in keys]
    assert len(set(names)) == 3
    assert names[0] == "linear.forward_" + __import__("hashlib").sha256(
        repr(keys[0][1]).encode()).hexdigest()[:16]
    for name in names:
        assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789._") and "--" not in name
    assert _store.architecture(keys[0]) == "sm_90"


def test_the_default_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DNNGRAPH_CACHE_DIR", str(tmp_path / "mine"))
    assert dt.default_cache_folder() == tmp_path / "mine"
    monkeypatch.delenv("DNNGRAPH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dt.default_cache_folder() == tmp_path / "xdg" / "dnngraph"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert dt.default_cache_folder() == tmp_path / ".cache" / "dnngraph"


# The operators' I/O types, and the int32 lengths and offsets of packed attention.
TYPES = {**dt._runtime.DATA_TYPES, torch.int32: dnngraph.DataType.Int32}


def same_elements(dims, strides, graph_dims, graph_strides):
    """Whether a buffer of dims and strides holds the elements a graph tensor of graph_dims and
    graph_strides reads, at the same offsets: the same (extent, stride) pairs of the dims that
    move (extent > 1), in any order (a transposed read, added unit dims), dims that lie one
    after the other in memory merged (x [b, s, k] is the graph's [1, b * s, k]). cuDNN gets the
    address alone, so this is what must hold; which logical element is which (a transposed
    weight) the GPU tests check against torch."""
    def canonical(d, st):
        pairs = sorted((int(x), int(e)) for e, x in zip(d, st) if e != 1)
        merged: "list[list[int]]" = []
        for stride, extent in pairs:
            if merged and merged[-1][0] * merged[-1][1] == stride:
                merged[-1][1] *= extent
            else:
                merged.append([stride, extent])
        return merged
    return canonical(dims, strides) == canonical(graph_dims, graph_strides)


def test_same_elements_tells_layouts_apart():
    assert same_elements((6, 4), (4, 1), (1, 6, 4), (24, 4, 1))  # a unit dim added
    assert same_elements((4, 6), (6, 1), (1, 6, 4), (24, 1, 6))  # read transposed in place
    assert not same_elements((6, 4), (8, 1), (1, 6, 4), (24, 4, 1))  # rows with gaps
    assert not same_elements((6, 4), (4, 1), (1, 6, 8), (48, 8, 1))  # fewer elements
    assert not same_elements((6, 4), (0, 1), (1, 6, 4), (24, 4, 1))  # a broadcast row
    assert same_elements((3, 5, 48), (240, 48, 1), (1, 15, 48), (720, 48, 1))  # rows merged
    assert not same_elements((3, 5, 48), (480, 48, 1), (1, 15, 48), (720, 48, 1))  # a gap


@pytest.fixture
def lowering(monkeypatch):
    if dnngraph.cudnn_runtime_version() == 0:
        pytest.skip(f"no cuDNN to lower with: {dnngraph.cudnn_library_source()}")
    from dnngraph.torch import _runtime

    state = {"refuse": (), "runs": [], "shapes": []}

    def graph(op, kind, topology, shapes, device, io, describe, variant=False):
        if any(r in str(topology) for r in state["refuse"]):
            assert variant, f"{op} has no variant to fall back to"
            raise no_engine(f"{op} {topology}")
        state["shapes"].append(shapes)
        key = (op, topology, shapes, _runtime.DYNAMIC[kind], device)
        if key in _runtime._graphs:
            return _runtime._graphs[key].graph
        options = ({"dynamic_shape": True, "kernel_cache": dnngraph.KernelCache()}
                   if _runtime.DYNAMIC[kind] else {})
        g = dnngraph.Graph(io_data_type=io, compute_data_type=dnngraph.DataType.Float, **options)
        recorder = Recorder(g, op)
        describe(recorder)
        g.lower()
        _runtime._graphs[key] = _runtime._Entry(recorder, None)  # built, for serving_shapes
        return recorder

    def execute(recorder, handle, device, pack):
        given = {t.uid: t for t in recorder.tensors if not t.is_virtual and t.value is None}
        assert set(pack) == set(given), (recorder.op, sorted(pack), sorted(given))
        for uid, buffer in pack.items():
            t = given[uid]
            where = f"{recorder.op}: uid {uid} '{t.name}'"
            if t.ragged_offset is not None:  # packed: the binding checks its type only
                assert TYPES[buffer.dtype] == t.data_type, (where, buffer.dtype)
                continue
            # cuDNN gets the buffer's address alone (runtime.execute): its elements must lie
            # where the graph's dims and strides put them, whatever torch shape it has.
            assert same_elements(buffer.shape, buffer.stride(), t.dim, t.stride), (
                where, buffer.shape, buffer.stride(), t.dim, t.stride)
            assert TYPES[buffer.dtype] == t.data_type, (where, buffer.dtype)
        state["runs"].append(recorder.op)

    monkeypatch.setattr(_runtime, "graph", graph)
    monkeypatch.setattr(_runtime, "execute", execute)
    monkeypatch.setattr(_runtime, "handle", lambda device: None)
    monkeypatch.setattr(_runtime, "_variants", {})
    monkeypatch.setattr(_runtime, "_graphs", collections.OrderedDict())
    monkeypatch.setattr(_runtime, "_served", {})
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    with FakeTensorMode():
        yield state


@pytest.mark.parametrize("refuse", [(), ("fused",)], ids=["fused", "split"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("activation", dt.ACTIVATIONS)
def test_linear_forward_graphs_lower_and_take_their_buffers(lowering, activation, bias, refuse):
    lowering["refuse"] = refuse
    x, w, b = cuda(3, 5, 48), cuda(40, 48), cuda(40) if bias else None
    save = activation in _linear.NEEDS_PREACTIVATION
    if refuse and not save:
        with pytest.raises(RuntimeError, match="has no engine for linear.forward"):
            _linear._forward(x, w, b, activation, True)
        return
    y, z = _linear._forward(x, w, b, activation, True)
    assert y.shape == (3, 5, 40) and z.shape == ((3, 5, 40) if save else (0,))
    expected = ["linear.forward", "linear.activation"] if refuse else ["linear.forward"]
    assert lowering["runs"] == expected


@pytest.mark.parametrize("variant", ["fused", "split", "torch sum"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias grad", "no bias grad"])
@pytest.mark.parametrize("activation", dt.ACTIVATIONS)
def test_linear_backward_graphs_lower_and_take_their_buffers(lowering, activation, bias,
                                                             variant):
    # Refusing the fused graph takes "split"; refusing the bias gradient's graph too, "torch sum".
    lowering["refuse"] = {"fused": (), "split": ("'dz and bias grad'",),
                          "torch sum": ("'dz and bias grad'", "'bias grad'")}[variant]
    x, w, grad = cuda(3, 5, 48), cuda(40, 48), cuda(3, 5, 40)
    saved = cuda(3, 5, 40) if activation is not None else None
    dx, dw, db = _linear._backward(grad, x, w, saved, activation, bias, True, True)
    assert (dx.shape, dw.shape, db.shape) == (x.shape, w.shape, (40,) if bias else (0,))
    graphs = {  # (activation, bias grad) -> epilogue graphs run per variant
        (False, False): {"fused": 0, "split": 0, "torch sum": 0},
        (False, True): {"fused": 1, "split": 1, "torch sum": 0},
        (True, False): {"fused": 1, "split": 1, "torch sum": 1},
        (True, True): {"fused": 1, "split": 2, "torch sum": 1}}[(activation is not None, bias)]
    assert lowering["runs"] == ["linear.backward_epilogue"] * graphs[variant] + [
        "linear.dgrad", "linear.wgrad"]


def test_linear_backward_runs_only_the_gradients_asked_for(lowering):
    x, w, grad = cuda(6, 32), cuda(16, 32), cuda(6, 16)
    _linear._backward(grad, x, w, None, None, False, False, True)
    assert lowering["runs"] == ["linear.wgrad"]


@pytest.mark.parametrize("with_parameters", [True, False], ids=["parameters", "none"])
@pytest.mark.parametrize("dtype", [BF16, FP16, FP32], ids=str)
def test_norm_graphs_lower_and_take_their_buffers(lowering, dtype, with_parameters):
    x, grad = cuda(2, 3, 4, 32, dtype=dtype), cuda(2, 3, 4, 32, dtype=dtype)
    w = cuda(4, 32, dtype=BF16) if with_parameters else None
    b = cuda(4, 32, dtype=FP32) if with_parameters else None
    y, mean, rstd = _norms._layer_norm(x, [4, 32], w, b, 1e-5)
    _norms._layer_norm_backward(grad, x, [4, 32], mean, rstd, w)
    y, rstd = _norms._rms_norm(x, [32], w[0] if with_parameters else None, 1e-6)
    _norms._rms_norm_backward(grad, x, [32], rstd, w[0] if with_parameters else None)
    assert lowering["runs"] == ["layer_norm.forward", "layer_norm.backward", "rms_norm.forward",
                                "rms_norm.backward"]


# Attention: scaled_dot_product_attention (dense) and varlen_attn (packed sequences).

def bshd(b, h, s, d, dtype=BF16, grad=False):
    """[b, h, s, d] read from [b, s, h, d] memory: what a projection followed by .view() and
    .transpose(1, 2) gives, the layout a transformer's attention sees."""
    t = torch.empty(b, s, h, d, dtype=dtype, device="cuda").transpose(1, 2)
    return t.requires_grad_(grad)


def test_sdpa_fake_gives_torch_shapes_in_the_query_layout(fake):
    q, k, v = cuda(2, 8, 33, 64), cuda(2, 2, 40, 64), cuda(2, 2, 40, 32)
    out = dt.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert (out.shape, out.dtype, out.is_contiguous()) == ((2, 8, 33, 32), BF16, True)
    q, k, v = bshd(2, 4, 17, 64), bshd(2, 4, 21, 64), bshd(2, 4, 21, 64)
    out = dt.scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 4, 17, 64) and out.stride() == q.stride()
    out, lse = torch.ops.dnngraph.sdpa(q, k, v, False, 0.125, True)
    assert (lse.shape, lse.dtype) == ((2, 4, 17), FP32)
    assert torch.ops.dnngraph.sdpa(q, k, v, False, 0.125, False)[1].shape == (0,)


SDPA = {"setup": _attention._sdpa_setup, "backward": _attention._sdpa_autograd}
VARLEN = {"setup": _attention._varlen_setup, "backward": _attention._varlen_autograd}


def test_sdpa_backward_gives_each_input_its_gradient_in_its_layout(fake):
    q, k, v = bshd(2, 8, 33, 64), cuda(2, 2, 40, 64), bshd(2, 2, 40, 64)
    (out, lse), ctx, grads = autograd(SDPA, torch.ops.dnngraph.sdpa, (q, k, v, True, 0.125, True),
                                      (True, True, True, False, False, False))
    assert ctx.non_differentiable == (lse,)
    for grad, t in zip(grads[:3], (q, k, v)):
        assert (grad.shape, grad.dtype, grad.stride()) == (t.shape, t.dtype, t.stride())
    assert grads[3:] == (None, None, None)
    _, _, grads = autograd(SDPA, torch.ops.dnngraph.sdpa, (q, k, v, True, 0.125, True),
                           (False, True, False, False, False, False))
    assert grads[0] is None and grads[1].shape == k.shape and grads[2] is None


def test_a_forward_without_the_log_sum_exp_runs_again_for_its_backward(fake):
    q = cuda(1, 2, 16, 64)
    (_, lse), _, grads = autograd(SDPA, torch.ops.dnngraph.sdpa, (q, q, q, False, 1.0, False),
                                  (True, False, False, False, False, False))
    assert lse.shape == (0,) and grads[0].shape == q.shape
    p = cuda(40, 2, 64)
    cu = torch.empty(3, dtype=torch.int32, device="cuda")
    (_, stats), _, grads = autograd(
        VARLEN, torch.ops.dnngraph.varlen_attn, (p, p, p, cu, cu, 30, 30, True, 1.0, False),
        (True, True, True) + (False,) * 7)
    assert stats.shape == (0,) and [g.shape for g in grads[:3]] == [p.shape] * 3


def test_sdpa_asks_for_the_log_sum_exp_only_when_a_gradient_is_needed(fake, monkeypatch):
    calls = []
    real = dt._runtime.ops.sdpa
    monkeypatch.setattr(dt._runtime.ops, "sdpa",
                        lambda *args: calls.append(args[-1]) or real(*args))
    q = cuda(1, 2, 16, 64)
    dt.scaled_dot_product_attention(q, q, q)
    dt.scaled_dot_product_attention(q, q, cuda(1, 2, 16, 64, grad=True))
    with torch.no_grad():
        dt.scaled_dot_product_attention(q, q, cuda(1, 2, 16, 64, grad=True))
    assert calls == [False, True, False]


def test_sdpa_scale_defaults_to_one_over_the_root_of_the_head_dim(fake, monkeypatch):
    seen = []
    real = dt._runtime.ops.sdpa
    monkeypatch.setattr(dt._runtime.ops, "sdpa",
                        lambda q, k, v, causal, scale, lse: seen.append((causal, scale))
                        or real(q, k, v, causal, scale, lse))
    q = cuda(1, 2, 16, 64)
    dt.scaled_dot_product_attention(q, q, q, is_causal=True)
    dt.scaled_dot_product_attention(q, q, q, scale=0.5)
    assert seen == [(True, 0.125), (False, 0.5)]


def test_varlen_fake_gives_torch_shapes(fake):
    q, k, v = cuda(100, 8, 64), cuda(120, 2, 64), cuda(120, 2, 32)
    cu_q = torch.empty(4, dtype=torch.int32, device="cuda")
    cu_k = torch.empty(4, dtype=torch.int32, device="cuda")
    out = dt.varlen_attn(q, k, v, cu_q, cu_k, 50, 70, window_size=(-1, 0))
    assert (out.shape, out.dtype) == ((100, 8, 32), BF16)
    out, stats = torch.ops.dnngraph.varlen_attn(q, k, v, cu_q, cu_k, 50, 70, True, 0.125, True)
    # 3 sequences -> the bucket of 4, 50 tokens -> the 64 bucket
    assert (stats.shape, stats.dtype) == ((4, 8, 64), FP32)


def test_varlen_buckets_are_powers_of_two_from_64():
    assert [_attention.bucket(n) for n in (1, 63, 64, 65, 128, 129, 1000, 4096, 4097)] == [
        64, 64, 64, 128, 128, 256, 1024, 4096, 8192]


def test_varlen_pads_the_count_of_sequences_to_a_power_of_two(monkeypatch):
    counts = (1, 2, 3, 4, 5, 17, 33)
    for version in (91900, 92500):
        monkeypatch.setattr(dnngraph, "cudnn_runtime_version", lambda: version)
        assert [_attention.sequences(n) for n in counts] == [1, 2, 4, 4, 8, 32, 64]
    monkeypatch.setattr(dnngraph, "cudnn_runtime_version", lambda: 92400)
    assert _attention.one_token_spares()
    monkeypatch.setattr(dnngraph, "cudnn_runtime_version", lambda: 92500)
    assert not _attention.one_token_spares()


def test_varlen_spares_are_empty_from_cudnn_9_25_and_one_token_below(monkeypatch):
    """Three sequences of 5, 2 and 3 tokens (10) padded to 4: from 9.25 a zero-length spare at
    the end; below, a one-token spare reading token 9 and writing row 10, past the end."""
    cu = torch.tensor([0, 5, 7, 10], dtype=torch.int32)
    monkeypatch.setattr(dnngraph, "cudnn_runtime_version", lambda: 92800)
    lengths, read, write = _attention._starts(cu, 4, 10)
    assert (lengths.tolist(), read.tolist()) == ([5, 2, 3, 0], [0, 5, 7, 10, 10]) and read is write
    monkeypatch.setattr(dnngraph, "cudnn_runtime_version", lambda: 91900)
    lengths, read, write = _attention._starts(cu, 4, 10)
    assert lengths.tolist() == [5, 2, 3, 1]
    assert (read.tolist(), write.tolist()) == ([0, 5, 7, 9, 10], [0, 5, 7, 10, 11])
    lengths, read, write = _attention._starts(cu, 8, 10)
    assert lengths.tolist() == [5, 2, 3, 1, 1, 1, 1, 1]
    assert write.tolist() == [0, 5, 7, 10, 10, 10, 10, 10, 11]
    two = cu[:3]  # a power of two: no spare
    lengths, read, write = _attention._starts(two, 2, 7)
    assert lengths.tolist() == [5, 2] and read is write is two


def test_varlen_backward_gives_gradients_of_the_packed_inputs(fake):
    q, k, v = cuda(100, 8, 64), cuda(120, 2, 64), cuda(120, 2, 64)
    cu = torch.empty(4, dtype=torch.int32, device="cuda")
    (out, stats), ctx, grads = autograd(
        VARLEN, torch.ops.dnngraph.varlen_attn, (q, k, v, cu, cu, 50, 70, True, 0.125, True),
        (True, True, True) + (False,) * 7)
    assert ctx.non_differentiable == (stats,) and ctx.max_q == 50 and ctx.is_causal
    assert [g.shape for g in grads[:3]] == [q.shape, k.shape, v.shape]
    assert grads[3:] == (None,) * 7


def test_attention_ops_trace_into_one_node_each(fake):
    from torch.fx.experimental.proxy_tensor import make_fx

    cu = torch.empty(3, dtype=torch.int32, device="cuda")

    def block(q, k, v, packed):
        o = dt.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return o, dt.varlen_attn(packed, packed, packed, cu, cu, 64, 64, window_size=(-1, 0))

    graph = make_fx(block)(cuda(2, 4, 16, 64), cuda(2, 2, 16, 64), cuda(2, 2, 16, 64),
                           cuda(40, 4, 64)).graph
    calls = [str(n.target) for n in graph.nodes
             if n.op == "call_function" and "getitem" not in str(n.target)]
    assert calls == ["dnngraph.sdpa.default", "dnngraph.varlen_attn.default"], calls


def test_sdpa_refuses_what_it_does_not_serve(fake):
    q = cuda(1, 4, 16, 64)
    refused(lambda: dt.scaled_dot_product_attention(q, q, q, attn_mask=cuda(16, 16)),
            "attn_mask is not served yet", "is_causal=True")
    refused(lambda: dt.scaled_dot_product_attention(q, q, q, dropout_p=0.1),
            "dropout_p is 0.1", "dropout_p=0.0")
    f = cuda(1, 4, 16, 64, dtype=FP32)
    refused(lambda: dt.scaled_dot_product_attention(f, f, f),
            "query has dtype torch.float32", "torch.autocast('cuda')")


def test_sdpa_refuses_wrong_shapes_with_torchs_words(fake):
    q, kv = cuda(2, 8, 16, 64), cuda(2, 2, 16, 64)
    refused(lambda: dt.scaled_dot_product_attention(q, kv, kv),
            "query has 8 heads and key 2", "enable_gqa=True")
    refused(lambda: dt.scaled_dot_product_attention(q, cuda(2, 3, 16, 64), cuda(2, 3, 16, 64),
                                                    enable_gqa=True),
            "multiple of the key's")
    refused(lambda: dt.scaled_dot_product_attention(q, cuda(3, 8, 16, 64), cuda(3, 8, 16, 64)),
            "batches 2, 3 and 3")
    refused(lambda: dt.scaled_dot_product_attention(q, cuda(2, 8, 16, 32), cuda(2, 8, 16, 64)),
            "key's head dim is 32 but query's is 64")
    refused(lambda: dt.scaled_dot_product_attention(q, cuda(2, 8, 16, 64), cuda(2, 8, 15, 64)),
            "value has 15 positions but key has 16")
    refused(lambda: dt.scaled_dot_product_attention(cuda(8, 16, 64), cuda(8, 16, 64),
                                                    cuda(8, 16, 64)),
            "query has shape (8, 16, 64)", "(batch, heads, length, head_dim)")
    odd = cuda(2, 8, 16, 60)
    refused(lambda: dt.scaled_dot_product_attention(odd, odd, odd), "head dim is 60",
            "multiples of 8")
    strided = cuda(2, 8, 16, 128)[..., ::2]
    refused(lambda: dt.scaled_dot_product_attention(strided, strided, strided),
            "strides (16384, 2048, 128, 2)", "query.contiguous()")


def test_varlen_refuses_what_it_does_not_serve(fake):
    q = cuda(40, 4, 64)
    cu = torch.empty(3, dtype=torch.int32, device="cuda")
    refused(lambda: dt.varlen_attn(q, q, q, cu, cu, 32, 32, window_size=(128, 0)),
            "window_size (128, 0) is a sliding window", "(-1, 0) (causal)")
    refused(lambda: dt.varlen_attn(q, q, q, cu.long(), cu, 32, 32), "cu_seq_q has dtype "
            "torch.int64", "torch.int32")
    refused(lambda: dt.varlen_attn(q, q, q, cu, torch.empty(4, dtype=torch.int32,
                                                            device="cuda"), 32, 32),
            "cu_seq_k has 4 entries but cu_seq_q has 3")
    refused(lambda: dt.varlen_attn(q, q, q, cu, cu, 0, 32), "max_q is 0")
    refused(lambda: dt.varlen_attn(q, cuda(0, 4, 64), cuda(0, 4, 64), cu, cu, 32, 32),
            "key has no token")
    refused(lambda: dt.varlen_attn(cuda(1, 40, 4, 64), q, q, cu, cu, 32, 32),
            "query has shape (1, 40, 4, 64)", "(total tokens, heads, head_dim)")
    refused(lambda: dt.varlen_attn(cuda(40, 64, 4).transpose(1, 2), q, q, cu, cu, 32, 32),
            "query of shape (40, 4, 64)", "not contiguous")


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_sdpa_graphs_lower_and_take_their_buffers(lowering, causal):
    q, k, v = bshd(2, 8, 33, 64), cuda(2, 2, 40, 64), bshd(2, 2, 40, 64)
    out, lse = _attention._sdpa(q, k, v, causal, 0.125, True)
    dq, dk, dv = _attention._sdpa_backward(out, q, k, v, out, lse, causal, 0.125)
    assert (dq.stride(), dk.stride(), dv.stride()) == (q.stride(), k.stride(), v.stride())
    _attention._sdpa(q, k, v, causal, 0.125, False)
    assert lowering["runs"] == ["sdpa.forward", "sdpa.backward", "sdpa.forward"]


@pytest.mark.parametrize("version", [91900, 92800], ids=["one-token spares", "empty spares"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_varlen_graphs_lower_and_take_their_buffers(lowering, monkeypatch, causal, version):
    monkeypatch.setattr(dnngraph, "cudnn_runtime_version", lambda: version)
    q, k, v = cuda(100, 8, 64), cuda(120, 2, 64), cuda(120, 2, 64)
    cu_q = torch.empty(4, dtype=torch.int32, device="cuda")
    cu_k = torch.empty(4, dtype=torch.int32, device="cuda")
    out, stats = _attention._varlen(q, k, v, cu_q, cu_k, 50, 70, causal, 0.125, True)
    dq, dk, dv = _attention._varlen_backward(out, q, k, v, out, stats, cu_q, cu_k, 50, 70, causal,
                                             0.125)
    _attention._varlen(q, k, v, cu_q, cu_k, 50, 70, causal, 0.125, False)
    assert lowering["runs"] == ["varlen_attn.forward", "varlen_attn.backward",
                                "varlen_attn.forward"]
    # 3 sequences padded to 4: a one-token spare writes one row past the end of each output
    spare = int(version < 92500)
    for t, rows in ((out, 100), (dq, 100), (dk, 120), (dv, 120)):
        assert t.shape[0] == rows and t.is_contiguous()
        assert t.untyped_storage().nbytes() == (rows + spare) * t[0].numel() * t.element_size()


@pytest.mark.parametrize("version", [91900, 92800], ids=["one-token spares", "empty spares"])
def test_varlen_runs_a_new_smaller_batch_through_a_built_graph_that_holds_it(lowering, monkeypatch,
                                                                           version):
    monkeypatch.setattr(dnngraph, "cudnn_runtime_version", lambda: version)
    q, k, v = cuda(100, 8, 64), cuda(120, 2, 64), cuda(120, 2, 64)

    def step(count, max_q, max_k):
        cu = torch.empty(count + 1, dtype=torch.int32, device="cuda")
        out, stats = _attention._varlen(q, k, v, cu, cu, max_q, max_k, True, 0.125, True)
        assert stats.shape == (_attention.sequences(count), 8, _attention.bucket(max_q))
        assert stats.is_contiguous()
        grads = _attention._varlen_backward(out, q, k, v, out, stats, cu, cu, max_q, max_k, True,
                                            0.125)
        assert [g.shape for g in grads] == [q.shape, k.shape, v.shape]

    heads = (8, 2, 64, 64)
    step(3, 50, 70)  # built: 4 sequences, lengths 64 and 128
    step(2, 40, 60)  # buckets 2, 64, 64: 4 times smaller
    step(4, 200, 70)  # buckets 4, 256, 128: larger, built
    step(1, 10, 10)  # buckets 1, 64, 64: 8 times smaller than the first, 32 than the third
    step(16, 64, 64)  # buckets 16, 64, 64: more sequences than any graph holds, built
    first, third = (4, 64, 128, heads), (4, 256, 128, heads)
    if version >= 92500:  # more (empty) spares: the smallest built graph that holds the batch
        served = [first, first, third, first, (16, 64, 64, heads)]
    else:  # one-token spares: only a graph of the batch's own count of sequences serves it
        served = [first, (2, 64, 64, heads), third, (1, 64, 64, heads), (16, 64, 64, heads)]
    # forward, then backward, per step
    assert lowering["shapes"] == [shapes for shapes in served for _ in range(2)]


# conv2d and batch_norm

def nhwc(*shape, dtype=BF16, grad=False):
    t = cuda(*shape, dtype=dtype).contiguous(memory_format=torch.channels_last)
    return t.requires_grad_(grad)


def layout(t):
    if t.is_contiguous():
        return "contiguous"
    return "channels_last" if t.is_contiguous(memory_format=torch.channels_last) else "other"


CONV_CASES = [  # (x, weight, keyword arguments) made by the test
    ("nchw", "nchw", {}),
    ("nhwc", "nhwc", {"stride": 2, "padding": 1}),
    ("nchw", "nhwc", {"padding": "same", "dilation": 2}),
    ("nhwc", "nchw", {"padding": (1, 0), "stride": (1, 2)}),
    ("nchw", "nchw", {"groups": 4, "padding": "valid"}),
]


@pytest.mark.parametrize("x_layout,w_layout,kwargs", CONV_CASES, ids=str)
def test_conv2d_fake_gives_torchs_shape_and_layout(fake, x_layout, w_layout, kwargs):
    """Shapes as torch's fake convolution gives them; the layout by the rule of torch's cuDNN
    convolution (channels_last when input or weight is), which its fake implementation follows
    only where cuDNN is available (test_gpu_torch_ops.py compares with torch on the GPU)."""
    groups = kwargs.get("groups", 1)
    make = {"nchw": cuda, "nhwc": nhwc}
    x, w, b = make[x_layout](2, 16, 11, 9), make[w_layout](24, 16 // groups, 3, 4), cuda(24)
    want = torch.nn.functional.conv2d(x, w, b, **kwargs)
    want_layout = "channels_last" if "nhwc" in (x_layout, w_layout) else "contiguous"
    for activation in dt.ACTIVATIONS:
        got = dt.conv2d(x, w, b, activation=activation, **kwargs)
        assert (got.shape, got.dtype) == (want.shape, want.dtype), activation
        assert layout(got) == want_layout, (activation, got.stride())
    assert dt.conv2d(x[0], w, **kwargs).shape == want.shape[1:]  # unbatched, as torch


def test_conv2d_same_padding_of_an_even_kernel_pads_one_more_after(fake):
    assert _conv.paddings("same", [4, 3], [1, 1], [1, 1]) == ([1, 1], [2, 1])
    assert _conv.paddings("same", [4, 2], [1, 1], [2, 1]) == ([3, 0], [3, 1])
    assert _conv.paddings(2, [3, 3], [1, 1], [1, 1]) == ([2, 2], [2, 2])
    assert _conv.paddings((1, 0), [3, 3], [1, 1], [1, 1]) == ([1, 0], [1, 0])


CONV = {"setup": _conv._setup_context, "backward": _conv._autograd_backward}
GEOMETRY = ([1, 1], [1, 1], [1, 1], [1, 1], 1)


@pytest.mark.parametrize("activation", dt.ACTIVATIONS)
def test_conv2d_backward_gives_gradients_of_the_inputs_shapes(fake, activation):
    x, w, b = nhwc(2, 8, 6, 5), nhwc(16, 8, 3, 3), cuda(16)
    save = activation in _linear.NEEDS_PREACTIVATION
    (y, z), ctx, grads = autograd(CONV, torch.ops.dnngraph.conv2d,
                                  (x, w, b, *GEOMETRY, activation, save),
                                  (True, True, True) + (False,) * 7)
    assert ctx.non_differentiable == (z,)
    assert ctx.saved_tensors[2] is (y if activation == "relu" else z if save else None)
    for grad, t in zip(grads[:3], (x, w, b)):
        assert (grad.shape, grad.dtype) == (t.shape, t.dtype)
    assert layout(grads[0]) == layout(grads[1]) == "channels_last"
    assert grads[3:] == (None,) * 7


def test_conv2d_backward_returns_only_the_gradients_asked_for(fake):
    x, w = cuda(2, 8, 6, 5), cuda(16, 8, 3, 3)
    _, _, grads = autograd(CONV, torch.ops.dnngraph.conv2d, (x, w, None, *GEOMETRY, None, False),
                           (False, True) + (False,) * 8)
    assert grads[0] is None and grads[1].shape == w.shape and grads[2] is None


def test_conv2d_refuses_what_torch_refuses_with_its_words(fake):
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5), cuda(16, 4, 3, 3)),
            "weight of shape (16, 4, 3, 3) with groups=1 expects input to have 4 channels, but "
            "input of shape (2, 8, 6, 5) has 8")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5), cuda(16, 8, 3, 3), groups=3),
            "groups 3 must divide in_channels 8")
    refused(lambda: dt.conv2d(cuda(2, 8, 2, 5), cuda(16, 8, 3, 3)),
            "smaller than the dilated kernel's 3")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5), cuda(16, 8, 3, 3), padding="full"),
            "padding 'full' is not 'valid', 'same'")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5), cuda(16, 8, 3, 3), padding="same", stride=2),
            "padding='same' takes stride 1")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5), cuda(16, 8, 3, 3), stride=0),
            "stride [0, 0] must be two numbers of at least 1")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5, dtype=FP32), cuda(16, 8, 3, 3, dtype=FP32)),
            "input has dtype torch.float32; it takes torch.bfloat16 or torch.float16")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5), cuda(16, 8, 3, 3), cuda(15)),
            "bias has shape (15,); expected (16,)")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 10)[..., ::2], cuda(16, 8, 3, 3)),
            "in neither contiguous nor channels_last memory")
    refused(lambda: dt.conv2d(cuda(8, 6, 5, 2, 2), cuda(16, 8, 3, 3)), "(N, C, H, W) or (C, H, W)")
    refused(lambda: dt.conv2d(cuda(2, 8, 6, 5), cuda(16, 8, 3, 3), activation="tanh"),
            "dnngraph.torch.conv2d: activation 'tanh' is not one of")
    refused(lambda: dt.conv2d(torch.zeros(1, 8, 6, 5, dtype=BF16),
                              torch.zeros(16, 8, 3, 3, dtype=BF16)), "input is a tensor on cpu")


BN_SHAPES = [(6, 12), (4, 12, 9), (2, 12, 5, 7), (2, 12, 3, 5, 4)]


@pytest.mark.parametrize("shape,channels_last",
                         [(s, False) for s in BN_SHAPES] + [(s, True) for s in BN_SHAPES[2:]],
                         ids=str)
@pytest.mark.parametrize("dtype", [BF16, FP16, FP32], ids=str)
def test_batch_norm_fake_gives_torchs_shape_and_layout(fake, shape, channels_last, dtype):
    x = cuda(*shape, dtype=dtype)
    if channels_last:  # 4-D and 5-D only: torch has no channels_last of fewer dims
        fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
        x = x.contiguous(memory_format=fmt)
    rm, rv, w, b = cuda(12, dtype=FP32), cuda(12, dtype=FP32), cuda(12, dtype=FP32), cuda(12)
    for training in (True, False):
        want = torch.nn.functional.batch_norm(x, rm, rv, w, b, training=training)
        got = dt.batch_norm(x, rm, rv, w, b, training=training)
        assert (got.shape, got.dtype, got.stride()) == (want.shape, want.dtype, want.stride())
    y, mean, invstd, next_mean, next_var = torch.ops.dnngraph.batch_norm(x, w, b, rm, rv, 0.1,
                                                                         1e-5)
    assert [(t.shape, t.dtype) for t in (mean, invstd, next_mean, next_var)] == [((12,), FP32)] * 4
    _, _, _, next_mean, next_var = torch.ops.dnngraph.batch_norm(x, None, None, None, None, 0.1,
                                                                 1e-5)
    assert next_mean.shape == next_var.shape == (0,)


BATCH_NORM = {"setup": _batch_norm._training_setup, "backward": _batch_norm._training_autograd}
BATCH_NORM_EVAL = {"setup": _batch_norm._inference_setup,
                   "backward": _batch_norm._inference_autograd}


def test_batch_norm_gradients_come_in_the_parameters_dtypes(fake):
    x, w, b = nhwc(4, 12, 5, 5), cuda(12, dtype=FP32), cuda(12, dtype=BF16)
    rm, rv = cuda(12, dtype=FP32), cuda(12, dtype=FP32)
    outputs, ctx, grads = autograd(BATCH_NORM, torch.ops.dnngraph.batch_norm,
                                   (x, w, b, rm, rv, 0.1, 1e-5), (True, True, True) + (False,) * 4)
    assert ctx.non_differentiable == outputs[1:]
    assert [(g.shape, g.dtype) for g in grads[:3]] == [(x.shape, BF16), ((12,), FP32),
                                                       ((12,), BF16)]
    assert layout(grads[0]) == "channels_last" and grads[3:] == (None,) * 4
    _, _, grads = autograd(BATCH_NORM_EVAL, torch.ops.dnngraph.batch_norm_inference,
                           (x, w, b, rm, rv, 1e-5), (True, True, True, False, False, False))
    assert [(g.shape, g.dtype) for g in grads[:3]] == [(x.shape, BF16), ((12,), FP32),
                                                       ((12,), BF16)]
    _, _, grads = autograd(BATCH_NORM_EVAL, torch.ops.dnngraph.batch_norm_inference,
                           (x, None, None, rm, rv, 1e-5), (True,) + (False,) * 5)
    assert grads[0].shape == x.shape and grads[1:] == (None,) * 5


def test_batch_norm_refuses_what_torch_refuses_with_its_words(fake):
    x, c = cuda(4, 12, 5, 5), cuda(12, dtype=FP32)
    refused(lambda: dt.batch_norm(cuda(1, 12), None, None, training=True),
            "expected more than 1 value per channel when training, got input of shape (1, 12)")
    refused(lambda: dt.batch_norm(x, None, None), "must be given in evaluation mode")
    refused(lambda: dt.batch_norm(x, c, None, training=True),
            "give running_mean and running_var both, or neither")
    refused(lambda: dt.batch_norm(x, cuda(6, dtype=FP32), c, training=True),
            "running_mean has shape (6,); expected (12,) (one per channel, input's dim 1)")
    refused(lambda: dt.batch_norm(x, c, c, cuda(12, dtype=torch.int32)),
            "weight has dtype torch.int32")
    refused(lambda: dt.batch_norm(x, c, c, training=True, momentum=1.5), "momentum is 1.5")
    refused(lambda: dt.batch_norm(x, c, c, eps=-1.0), "eps is -1.0")
    refused(lambda: dt.batch_norm(cuda(12), c, c), "it takes (N, C), (N, C, L)")
    refused(lambda: dt.batch_norm(cuda(4, 12, 5, 10)[..., ::2], c, c),
            "neither contiguous nor channels_last")
    refused(lambda: dt.batch_norm(cuda(4, 12, dtype=torch.float64), c, c),
            "input has dtype torch.float64")


def test_conv_and_batch_norm_trace_into_their_operators(fake):
    from torch.fx.experimental.proxy_tensor import make_fx

    def block(x, w, rm, rv, bw, bb):
        return dt.batch_norm(dt.conv2d(x, w, padding=1, activation="relu"), rm, rv, bw, bb,
                             training=True)

    args = (nhwc(2, 8, 6, 6), nhwc(16, 8, 3, 3)) + tuple(cuda(16, dtype=FP32) for _ in range(4))
    graph = make_fx(block)(*args).graph
    calls = [str(n.target) for n in graph.nodes
             if n.op == "call_function" and "getitem" not in str(n.target)]
    # The running statistics' update: two copies into the buffers, as torch's batch_norm makes.
    assert calls == ["dnngraph.conv2d.default", "dnngraph.batch_norm.default",
                     "aten.copy_.default", "aten.copy_.default"], calls


# conv2d and batch_norm graphs, lowered

@pytest.mark.parametrize("refuse", [(), ("fused",)], ids=["fused", "split"])
@pytest.mark.parametrize("activation", dt.ACTIVATIONS)
@pytest.mark.parametrize("x_layout", ["nchw", "nhwc"])
def test_conv2d_forward_graphs_lower_and_take_their_buffers(lowering, x_layout, activation,
                                                             refuse):
    lowering["refuse"] = refuse
    make = {"nchw": cuda, "nhwc": nhwc}[x_layout]
    x, w, b = make(2, 16, 9, 7), make(24, 8, 3, 3), cuda(24)
    geometry = ([2, 1], [1, 0], [1, 2], [1, 2], 2)
    if refuse and activation is None:
        with pytest.raises(RuntimeError, match="has no engine for conv2d.forward"):
            _conv._forward(x, w, b, *geometry, activation, True)
        return
    y, z = _conv._forward(x, w, b, *geometry, activation, True)
    want = torch.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=0, dilation=(1, 2),
                                      groups=2)
    assert y.shape[:2] == want.shape[:2] and layout(y) == layout(x)
    assert lowering["runs"] == (["conv2d.forward", "conv2d.activation"] if refuse
                                else ["conv2d.forward"])


@pytest.mark.parametrize("variant", ["fused", "split", "torch sum"])
@pytest.mark.parametrize("activation", dt.ACTIVATIONS)
@pytest.mark.parametrize("x_layout", ["nchw", "nhwc"])
def test_conv2d_backward_graphs_lower_and_take_their_buffers(lowering, x_layout, activation,
                                                              variant):
    lowering["refuse"] = {"fused": (), "split": ("'dz and bias grad'",),
                          "torch sum": ("'dz and bias grad'", "'bias grad'")}[variant]
    make = {"nchw": cuda, "nhwc": nhwc}[x_layout]
    x, w = make(2, 16, 9, 7), make(24, 16, 3, 3)
    grad = make(2, 24, 9, 7)
    saved = make(2, 24, 9, 7) if activation is not None else None
    dx, dw, db = _conv._backward(grad, x, w, saved, *GEOMETRY, activation, True, True, True)
    assert (dx.shape, dw.shape, db.shape) == (x.shape, w.shape, (24,))
    # NHWC sums the bias gradient in the epilogue (as linear); NCHW in torch, with dZ alone there.
    if x_layout == "nhwc":
        epilogues = {(False, "fused"): 1, (False, "split"): 1, (False, "torch sum"): 0,
                     (True, "fused"): 1, (True, "split"): 2, (True, "torch sum"): 1}
        count = epilogues[(activation is not None, variant)]
    else:
        count = 1 if activation is not None else 0
    assert lowering["runs"] == ["conv2d.backward_epilogue"] * count + ["conv2d.dgrad",
                                                                       "conv2d.wgrad"]


@pytest.mark.parametrize("shape", BN_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [BF16, FP32], ids=str)
def test_batch_norm_graphs_lower_and_take_their_buffers(lowering, shape, dtype):
    x, grad = cuda(*shape, dtype=dtype), cuda(*shape, dtype=dtype)
    rm, rv, w = cuda(12, dtype=FP32), cuda(12, dtype=FP32), cuda(12, dtype=BF16)
    _, mean, invstd, _, _ = _batch_norm._training(x, w, None, rm, rv, 0.1, 1e-5)
    _batch_norm._training(x, None, None, None, None, 0.1, 1e-5)
    _batch_norm._backward(grad, x, w, mean, invstd)
    _batch_norm._inference(x, w, None, rm, rv, 1e-5)
    if len(shape) >= 4:
        fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
        x = x.contiguous(memory_format=fmt)
        _batch_norm._training(x, w, None, rm, rv, 0.1, 1e-5)
        _batch_norm._backward(grad.contiguous(memory_format=fmt), x, w, mean, invstd)
        _batch_norm._inference(x, w, None, rm, rv, 1e-5)
    per_layout = ["batch_norm.forward", "batch_norm.forward", "batch_norm.backward",
                  "batch_norm.inference"]
    assert lowering["runs"] == per_layout + (per_layout[:1] + per_layout[2:]
                                             if len(shape) >= 4 else [])


@pytest.mark.parametrize("activation", [None, "relu", "silu"])
def test_nchw_conv2d_without_nchw_engines_runs_on_channels_last_copies(lowering, activation):
    # cuDNN 9.28.1's runtime-compiled libraries alone have no NCHW convolution engine.
    lowering["refuse"] = ("'fused'", "'split'", "'own layout'")
    x, w, b = cuda(2, 16, 9, 7), cuda(24, 16, 3, 3), cuda(24)
    y, z = _conv._forward(x, w, b, *GEOMETRY, activation, True)
    assert layout(y) == "contiguous" and y.shape == (2, 24, 9, 7)
    assert lowering["runs"] == ["conv2d.forward"]
    grad = cuda(2, 24, 9, 7)
    saved = y if activation == "relu" else z if activation else None
    dx, dw, db = _conv._backward(grad, x, w, saved, *GEOMETRY, activation, True, True, True)
    assert layout(dx) == layout(dw) == "contiguous"
    assert lowering["runs"][1:] == ["conv2d.backward_epilogue"] * (activation is not None) + [
        "conv2d.dgrad", "conv2d.wgrad"]
    assert {v for k, v in dt.chosen_variants().items() if "conv2d" in k} >= {
        "channels_last fused", "channels_last"}


def test_nchw_conv2d_runs_on_channels_last_copies_where_not_measured_exact(lowering, monkeypatch):
    # cuDNN 9.28.1's NCHW conv_dgrad and conv_wgrad returned wrong numbers: from 9.27 on, NCHW
    # goes through channels_last copies without trying its own layout.
    monkeypatch.setattr(_conv, "NCHW_EXACT_BELOW", 0)
    x, w, b = cuda(2, 16, 9, 7), cuda(24, 16, 3, 3), cuda(24)
    y, z = _conv._forward(x, w, b, *GEOMETRY, "gelu", True)
    _conv._backward(cuda(2, 24, 9, 7), x, w, z, *GEOMETRY, "gelu", True, True, True)
    chosen = {k.split(" (")[0]: v for k, v in dt.chosen_variants().items() if "NCHW" in k}
    assert chosen == {"conv2d.forward": "channels_last fused", "conv2d.dgrad": "channels_last",
                      "conv2d.wgrad": "channels_last"}, chosen
    monkeypatch.setattr(_conv, "NCHW_EXACT_BELOW", 10**9)
    assert _conv.nchw_in_place()


# Eager calls skip torch's custom-operator dispatch (runtime.Operator): plain CPU tensors here,
# with the device check and the GPU steps stubbed, so the implementations run as on the GPU.

@pytest.fixture
def eager(monkeypatch):
    from dnngraph.torch import _runtime

    built = []
    monkeypatch.setattr(_checks, "on_cuda", lambda *args: None)
    monkeypatch.setattr(_runtime, "graph", lambda op, *args, **kwargs: built.append(op) or op)
    monkeypatch.setattr(_runtime, "execute", lambda *args: None)
    monkeypatch.setattr(_runtime, "handle", lambda device: None)
    monkeypatch.setattr(_runtime, "_variants", {})
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    return built


def test_an_eager_call_records_its_backward_without_the_dispatcher(eager):
    x = torch.zeros(6, 32, dtype=BF16, requires_grad=True)
    w = torch.nn.Parameter(torch.zeros(16, 32, dtype=BF16))
    b = torch.zeros(16, dtype=BF16, requires_grad=True)
    y = dt.linear(x, w, b, activation="gelu")
    assert type(y.grad_fn).__name__ == "dnngraph_linearBackward"  # an autograd.Function
    assert eager == ["linear.forward"]
    y.backward(torch.ones_like(y))
    assert (x.grad.shape, w.grad.shape, b.grad.shape) == (x.shape, w.shape, b.shape)
    assert eager[1:] == ["linear.backward_epilogue", "linear.dgrad", "linear.wgrad"]
    with torch.no_grad():
        assert dt.linear(x, w, b).grad_fn is None
    assert type(dt.rms_norm(x.float(), (32,), torch.ones(32)).grad_fn).__name__ == (
        "dnngraph_rms_normBackward")
    with torch.no_grad():
        assert dt.rms_norm(x.float(), (32,), torch.ones(32)).grad_fn is None


def test_traced_and_fake_calls_still_go_through_the_registered_operators(fake):
    from torch.fx.experimental.proxy_tensor import make_fx

    x, w = cuda(6, 32, grad=True), cuda(16, 32)
    assert type(dt.linear(x, w).grad_fn).__name__.startswith("GeneratedBackwardFor_dnngraph_linear")
    graph = make_fx(lambda x, w: dt.linear(x, w, None, "relu"))(cuda(6, 32), cuda(16, 32)).graph
    assert "dnngraph.linear.default" in [str(n.target) for n in graph.nodes]


def test_torch_compile_fullgraph_traces_the_operators_not_the_eager_path(eager):
    """Dynamo sees torch.compiler.is_compiling() and takes the registered operators: one opaque
    node each in the captured graph, no graph break (fullgraph), and the compiled forward and
    backward run the implementations (here with the GPU steps stubbed)."""
    captured = []

    def backend(gm, example_inputs):
        captured.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        from torch._dynamo.backends.common import aot_autograd
        from functorch.compile import make_boxed_func
        return aot_autograd(fw_compiler=lambda g, _: make_boxed_func(g),
                            bw_compiler=lambda g, _: make_boxed_func(g))(gm, example_inputs)

    def block(x, w, nw):
        return dt.linear(dt.rms_norm(x, (32,), nw), w, None, "silu")

    torch._dynamo.reset()
    compiled = torch.compile(block, fullgraph=True, backend=backend)
    x = torch.zeros(6, 32, dtype=BF16, requires_grad=True)
    w = torch.zeros(16, 32, dtype=BF16, requires_grad=True)
    nw = torch.ones(32, requires_grad=True)
    y = compiled(x, w, nw)
    y.backward(torch.ones_like(y))
    assert [t for t in captured[0] if "dnngraph" in t] == ["dnngraph.rms_norm",
                                                          "dnngraph.linear"], captured
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and nw.grad.shape == nw.shape
    assert eager[:2] == ["rms_norm.forward", "linear.forward"]
    assert {"linear.dgrad", "linear.wgrad", "rms_norm.backward"} <= set(eager[2:])

    def conv_block(x, w, running_mean, running_var, g, b):
        h = dt.conv2d(x, w, padding=1, activation="relu")
        return dt.batch_norm(h, running_mean, running_var, g, b, training=True)

    captured.clear()
    compiled = torch.compile(conv_block, fullgraph=True, backend=backend)
    x = torch.zeros(2, 8, 6, 6, dtype=BF16).contiguous(memory_format=torch.channels_last)
    w = torch.zeros(16, 8, 3, 3, dtype=BF16, requires_grad=True)
    stats = [torch.zeros(16), torch.ones(16)]
    g, b = torch.ones(16, requires_grad=True), torch.zeros(16, requires_grad=True)
    y = compiled(x.requires_grad_(True), w, *stats, g, b)
    y.backward(torch.ones_like(y))
    assert [t for t in captured[0] if "dnngraph" in t] == ["dnngraph.conv2d",
                                                          "dnngraph.batch_norm"], captured
    assert w.grad.shape == w.shape and g.grad.shape == (16,)


# dnngraph.torch.nn: torch's modules with dnngraph's forward.

def test_the_modules_keep_torchs_parameters_and_state_dict():
    import dnngraph.torch.nn as dnn

    pairs = [(dnn.Linear(8, 4, activation="silu"), torch.nn.Linear(8, 4)),
             (dnn.Conv2d(3, 6, 3, padding=1, activation="relu"),
              torch.nn.Conv2d(3, 6, 3, padding=1)),
             (dnn.LayerNorm(8), torch.nn.LayerNorm(8)), (dnn.RMSNorm(8), torch.nn.RMSNorm(8)),
             (dnn.BatchNorm2d(6), torch.nn.BatchNorm2d(6))]
    for ours, theirs in pairs:
        assert isinstance(ours, type(theirs))
        assert ours.state_dict().keys() == theirs.state_dict().keys()
        theirs.load_state_dict(ours.state_dict())  # a checkpoint of either loads into the other
    assert "activation='silu'" in repr(pairs[0][0])
    with pytest.raises(ValueError, match="activation 'tanh' is not one of"):
        dnn.Linear(8, 4, activation="tanh")
    with pytest.raises(ValueError, match="padding_mode 'reflect'"):
        dnn.Conv2d(3, 6, 3, padding_mode="reflect")


def test_swap_turns_torchs_modules_into_dnngraphs_in_place():
    import dnngraph.torch.nn as dnn

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8),
                                torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding_mode="reflect"),
                                torch.nn.Flatten(), torch.nn.LayerNorm(8 * 4 * 4),
                                torch.nn.Linear(8 * 4 * 4, 10), torch.nn.RMSNorm(10))
    weights = [p for p in model.parameters()]
    children = list(model)
    assert dnn.swap(model) is model
    kinds = [type(m).__module__.split(".")[-1] + "." + type(m).__name__ for m in model]
    assert kinds == ["nn.Conv2d", "nn.BatchNorm2d", "activation.ReLU", "conv.Conv2d",
                     "flatten.Flatten", "nn.LayerNorm", "nn.Linear", "nn.RMSNorm"], kinds
    assert list(model) == children and list(model.parameters()) == weights  # the same objects
    assert model[0].activation is None and model[6].activation is None


def test_the_modules_forward_through_the_operators(eager):
    import dnngraph.torch.nn as dnn

    x = torch.zeros(2, 3, 9, 9, dtype=BF16).contiguous(memory_format=torch.channels_last)
    conv = dnn.Conv2d(3, 8, 3, padding="same", activation="relu").to(BF16)
    bn = dnn.BatchNorm2d(8, momentum=None)
    h = bn(conv(x))
    assert h.shape == (2, 8, 9, 9) and int(bn.num_batches_tracked) == 1
    bn.eval()
    bn(h)
    assert int(bn.num_batches_tracked) == 1
    pooled = dnn.LayerNorm(8)(h.float().mean((2, 3))).to(BF16)
    y = dnn.Linear(8, 4, activation="gelu").to(BF16)(pooled)
    y = dnn.RMSNorm(4)(y)
    assert y.shape == (2, 4)
    assert eager == ["conv2d.forward", "batch_norm.forward", "batch_norm.inference",
                     "layer_norm.forward", "linear.forward", "rms_norm.forward"], eager


def test_the_modules_give_torchs_shapes_and_layouts_on_fake_tensors(fake):
    import dnngraph.torch.nn as dnn

    x = cuda(2, 3, 9, 9).contiguous(memory_format=torch.channels_last)
    ours = dnn.Conv2d(3, 8, 3, stride=2, padding=1, device="cuda", dtype=BF16)
    theirs = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, device="cuda", dtype=BF16)
    assert ours(x).shape == theirs(x).shape
    bn = dnn.BatchNorm2d(3, device="cuda")
    assert bn(x).stride() == torch.nn.BatchNorm2d(3, device="cuda")(x).stride()


class RecordingGraph:
    """Stands in for a built dnngraph.Graph: keeps the pointers execute() is given."""

    def __init__(self):
        self.pointers = None

    def get_workspace_size(self):
        return 0

    def execute(self, handle, pointers, workspace):
        self.pointers = dict(pointers)


# cuDNN computes wrong values with a pointer off 16 bytes, and dnngraph's execute() refuses one
# (docs/operations.md); the operators hand such an input over through an aligned copy of its
# memory span, its strides and values kept, and pass every other tensor as it is.
@pytest.mark.parametrize("make", [
    lambda: torch.arange(3 * 33, dtype=BF16)[1:].view(7, 14),
    lambda: torch.arange(2 * 64, dtype=BF16).view(2, 64)[:, 3:].transpose(0, 1),
    lambda: torch.arange(40, dtype=FP32)[1:9].view(8, 1).expand(8, 5),
], ids=["rows of a flat buffer", "a transposed slice", "a broadcast (stride 0)"])
def test_an_input_off_a_16_byte_boundary_runs_through_an_aligned_copy(make):
    from dnngraph.torch import _runtime
    view = make()
    assert view.data_ptr() % 16 != 0
    aligned = torch.zeros(4, 4, dtype=BF16)
    g = RecordingGraph()
    _runtime.execute(g, None, view.device, {1: view, 2: aligned})
    assert g.pointers[2] == aligned.data_ptr()
    assert g.pointers[1] != view.data_ptr() and g.pointers[1] % 16 == 0
    copy = _runtime._aligned_copy(view)
    assert copy.data_ptr() % 16 == 0
    assert copy.shape == view.shape and copy.stride() == view.stride()
    assert torch.equal(copy, view)
