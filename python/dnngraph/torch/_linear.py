"""dnngraph.torch.linear: y = activation(x @ weight.T + bias), torch.nn.functional.linear's
arguments plus a fused activation, as the custom operators dnngraph::linear and
dnngraph::linear_backward.

Forward: one cuDNN graph, the matmul with bias and activation in its epilogue. When the backward
needs the pre-activation Z (GELU, SiLU), the same graph writes Z too (variant "fused"); where
cuDNN has no engine for that, Z comes from matmul + bias and the activation runs as a second,
pointwise graph ("split"). ReLU's backward reads Y instead (Y > 0 exactly where Z > 0).

Backward, from Z (or Y) and dY:
  dZ = activation'(Z) * dY and the bias gradient (the sum of dZ's rows) in one graph of a
       pointwise and a reduction node ("fused"), else two graphs ("split"), else the bias
       gradient by torch's sum ("torch sum", where cuDNN has no engine for the reduction);
  dX = dZ @ weight (a matmul graph; not fused with dZ: dZ also feeds the weight gradient);
  dW = dZ.T @ X (a matmul graph reading dZ transposed in place).
chosen_variants() says which variant each signature took.

x may have any number of leading dims (flattened into M rows: a [1, M, K] matmul); x, weight and
bias must be contiguous, on one CUDA device, and all bfloat16 or all float16 (under
torch.autocast the wrapper casts them to autocast's dtype, as torch's linear does).
"""

from typing import Any, Optional

import torch
from torch import Tensor

from dnngraph import DataType, Graph, PointwiseMode, ReductionMode, channels_last_strides

from . import _checks as checks
from . import _runtime as runtime

OP = "dnngraph.torch.linear"
ACTIVATIONS = (None, "relu", "gelu", "gelu_tanh", "silu")
FORWARD = {"relu": PointwiseMode.ReluFwd, "gelu": PointwiseMode.GeluFwd,
            "gelu_tanh": PointwiseMode.GeluApproxTanhFwd, "silu": PointwiseMode.SwishFwd}
BACKWARD = {"relu": PointwiseMode.ReluBwd, "gelu": PointwiseMode.GeluBwd,
             "gelu_tanh": PointwiseMode.GeluApproxTanhBwd, "silu": PointwiseMode.SwishBwd}
# The activations whose backward reads the pre-activation Z (ReLU's reads Y).
NEEDS_PREACTIVATION = ("gelu", "gelu_tanh", "silu")

# uids of the graphs' tensors
X, W, BIAS, Y, Z = 1, 2, 3, 4, 5
DY, SAVED, DZ, DBIAS = 1, 2, 3, 4
A, B, C = 1, 2, 3


def swish_beta(activation: Optional[str]) -> Optional[float]:
    return 1.0 if activation == "silu" else None  # SiLU is swish with beta 1


def check_activation(op: str, activation: Optional[str]) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"{op}: activation {activation!r} is not one of "
            + ", ".join(repr(a) for a in ACTIVATIONS))


def _usual(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: Optional[str]) -> bool:
    """Whether the arguments pass every check of _check, in one expression: the common case
    costs a few µs less per call; any other goes through the checks, which name what is wrong."""
    return bool(
        activation in ACTIVATIONS and x.is_cuda and x.dtype in checks.HALF_TYPES
        and weight.dtype == x.dtype and weight.get_device() == x.get_device()
        and x.dim() >= 1 and weight.dim() == 2 and weight.shape[1] == x.shape[-1]
        and x.shape[-1] != 0 and x.is_contiguous() and weight.is_contiguous()
        and (bias is None or (bias.dtype == x.dtype and bias.get_device() == x.get_device()
                              and bias.dim() == 1 and bias.shape[0] == weight.shape[0]
                              and bias.is_contiguous())))


def _check(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: Optional[str]) -> None:
    if _usual(x, weight, bias, activation):
        return
    check_activation(OP, activation)
    checks.on_cuda(OP, "x", x)
    checks.same_device(OP, "weight", weight, "x", x)
    checks.dtype_in(OP, "x", x, checks.HALF_TYPES,
                    "cast with x.to(torch.bfloat16), or call it under torch.autocast('cuda')")
    checks.same_dtype(OP, "weight", weight, "x", x)
    if x.dim() < 1:
        raise ValueError(f"{OP}: x is a 0-dim tensor; it takes x of shape (*, in_features)")
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(
            f"{OP}: weight has shape {checks.shape(weight)}; expected (out_features, "
            f"{x.shape[-1]}), x's last dim being in_features (x has shape {checks.shape(x)})")
    if x.shape[-1] == 0:
        raise ValueError(f"{OP}: x has shape {checks.shape(x)}: in_features is 0")
    checks.contiguous(OP, "x", x)
    checks.contiguous(OP, "weight", weight)
    if bias is not None:
        checks.same_device(OP, "bias", bias, "x", x)
        checks.same_dtype(OP, "bias", bias, "x", x)
        checks.shape_is(OP, "bias", bias, (weight.shape[0],), "out_features of weight")
        checks.contiguous(OP, "bias", bias)


def _out_shape(x: Tensor, weight: Tensor) -> "tuple[Any, ...]":
    return (*x.shape[:-1], weight.shape[0])


# The graphs. Each describe_* adds the tensors and nodes to a new graph; runtime.graph() builds
# it once per signature.

def _describe_forward(g: Graph, m: int, n: int, k: int, bias: bool, activation: Optional[str],
                      epilogue: bool, save_z: bool) -> None:
    """Y = act(X W^T + bias) (epilogue=True), or Z = X W^T + bias alone; Z written as well when
    save_z. weight [N, K] is read as W^T [1, K, N] in place (column-major strides)."""
    x = g.tensor(name="x", uid=X, dim=[1, m, k])
    w = g.tensor(name="weight_t", uid=W, dim=[1, k, n], stride=[k * n, 1, k])
    z = g.matmul(x, w, name="matmul")
    if bias:
        z = g.pointwise(z, g.tensor(name="bias", uid=BIAS, dim=[1, 1, n]),
                        mode=PointwiseMode.Add, name="bias")
    if activation is None:
        z.set_output(True).set_uid(Y).set_name("y")
        return
    if not epilogue:
        z.set_output(True).set_uid(Z).set_name("preactivation")
        return
    if save_z:
        z.set_output(True).set_uid(Z).set_name("preactivation")
    y = g.pointwise(z, mode=FORWARD[activation], name=activation,
                    swish_beta=swish_beta(activation))
    y.set_output(True).set_uid(Y).set_name("y")


def _rows(g: Graph, uid: int, name: str, m: int, n: int) -> Any:
    """[M, N] rows as a channels-last [M, N, 1, 1] tensor: cuDNN's engines for graphs of
    pointwise and reduction nodes alone want 4-D channels-last tensors (docs/operations.md), and
    a reduction over M of [M, N, 1, 1] is a per-channel sum [1, N, 1, 1]."""
    dims = [m, n, 1, 1]
    return g.tensor(name=name, uid=uid, dim=dims, stride=channels_last_strides(dims))


def describe_activation(g: Graph, m: int, n: int, activation: str) -> None:
    z = _rows(g, Z, "preactivation", m, n)
    y = g.pointwise(z, mode=FORWARD[activation], name=activation,
                    swish_beta=swish_beta(activation))
    y.set_output(True).set_uid(Y).set_name("y")


def _describe_backward_epilogue(g: Graph, m: int, n: int, activation: Optional[str],
                                bias_grad: bool) -> None:
    """dZ = act'(saved) * dY (with an activation) and/or dbias = sum of dZ's rows (bias_grad)."""
    dz = _rows(g, DY, "dy", m, n)
    if activation is not None:
        saved = _rows(g, SAVED, "y" if activation == "relu" else "preactivation", m, n)
        dz = g.pointwise(dz, saved, mode=BACKWARD[activation], name=f"{activation}_backward",
                         swish_beta=swish_beta(activation))
        dz.set_output(True).set_uid(DZ).set_name("dz")
    if bias_grad:
        db = g.reduction(dz, mode=ReductionMode.Add, name="bias_grad")
        db.set_output(True).set_uid(DBIAS).set_name("dbias").set_dim([1, n, 1, 1])
        db.set_data_type(DataType.Float)


def _describe_matmul(g: Graph, m: int, n: int, k: int, a_stride: "list[int]") -> None:
    """C [1, M, N] = A [1, M, K] (strides a_stride) x B [1, K, N] (packed)."""
    a = g.tensor(name="a", uid=A, dim=[1, m, k], stride=a_stride)
    b = g.tensor(name="b", uid=B, dim=[1, k, n])
    g.matmul(a, b, name="matmul").set_output(True).set_uid(C).set_name("c")


# The operators' implementations on CUDA tensors.

def _forward(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: Optional[str],
             save_preactivation: bool) -> "tuple[Tensor, Tensor]":
    _check(x, weight, bias, activation)
    n, k = int(weight.shape[0]), int(weight.shape[1])
    m = x.numel() // k
    save_z = save_preactivation and activation in NEEDS_PREACTIVATION
    y = x.new_empty(_out_shape(x, weight))
    z = x.new_empty(_out_shape(x, weight) if save_z else (0,))
    if m == 0 or n == 0:
        return y, z
    device = x.device
    io = runtime.DATA_TYPES[x.dtype]
    topology = (x.dtype, activation, "bias" if bias is not None else "no bias",
                "saves preactivation" if save_z else "")
    with runtime.on_device(device):
        h = runtime.handle(device)
        # The tensors as they are: runtime.execute hands cuDNN their addresses, and each lies
        # in memory as its graph tensor declares it (x [1, m, k], the weight read transposed).
        pack = {X: x, W: weight, Y: y}
        if bias is not None:
            pack[BIAS] = bias

        def attempt(variant: str) -> "list[tuple[Graph, dict[int, Any]]]":
            fused = variant == "fused"

            def describe(g: Graph) -> None:
                _describe_forward(g, m, n, k, bias is not None, activation, fused, save_z)

            main = runtime.graph("linear.forward", "matmul", (*topology, variant), (m, n, k),
                                 device, io, describe, variant=True)
            if fused:
                return [(main, {**pack, Z: z} if save_z else pack)]
            assert activation is not None
            act = runtime.graph("linear.activation", "pointwise", (x.dtype, activation), (m, n),
                                device, io, lambda g: describe_activation(g, m, n, activation),
                                variant=True)
            main_pack = {u: t for u, t in pack.items() if u != Y}
            main_pack[Z] = z
            return [(main, main_pack), (act, {Z: z, Y: y})]

        variants = ["fused", "split"] if save_z else ["fused"]
        for g, graph_pack in runtime.first_variant("linear.forward", topology, variants, attempt):
            runtime.execute(g, h, device, graph_pack)
    return y, z


def _backward(grad: Tensor, x: Tensor, weight: Tensor, saved: Optional[Tensor],
              activation: Optional[str], bias_grad: bool, input_grad: bool,
              weight_grad: bool) -> "tuple[Tensor, Tensor, Tensor]":
    _check_backward(grad, x, weight, saved, activation)
    n, k = int(weight.shape[0]), int(weight.shape[1])
    m = x.numel() // k
    dx = torch.empty_like(x) if input_grad else x.new_empty((0,))
    dw = torch.empty_like(weight) if weight_grad else x.new_empty((0,))
    db = weight.new_empty((n,)) if bias_grad else x.new_empty((0,))
    if m == 0 or n == 0:
        return dx.zero_(), dw.zero_(), db.zero_()
    device = x.device
    io = runtime.DATA_TYPES[x.dtype]
    with runtime.on_device(device):
        h = runtime.handle(device)
        dz = grad if activation is None else torch.empty_like(grad)
        db_float = x.new_empty((n,), dtype=torch.float32) if bias_grad else db
        if activation is not None or bias_grad:
            dz_and_bias_grad("linear", h, device, io, (m, n), grad, saved, dz, db_float,
                             activation, bias_grad)
        if input_grad:  # dX [M, K] = dZ [M, N] x W [N, K]
            g = runtime.graph("linear.dgrad", "matmul", (x.dtype,), (m, k, n), device, io,
                              lambda g: _describe_matmul(g, m, k, n, [m * n, n, 1]))
            runtime.execute(g, h, device, {A: dz, B: weight, C: dx})
        if weight_grad:  # dW [N, K] = dZ^T [N, M] x X [M, K], dZ read transposed in place
            g = runtime.graph("linear.wgrad", "matmul", (x.dtype,), (n, k, m), device, io,
                              lambda g: _describe_matmul(g, n, k, m, [m * n, 1, n]))
            runtime.execute(g, h, device, {A: dz, B: x, C: dw})
        if bias_grad:
            db.copy_(db_float)
    return dx, dw, db


def dz_and_bias_grad(op: str, h: Any, device: torch.device, io: DataType,
                     rows: "tuple[int, int]", grad: Tensor, saved: Optional[Tensor], dz: Tensor,
                     db: Tensor, activation: Optional[str], bias_grad: bool) -> None:
    """dZ = act'(saved) * dY into dz (with an activation) and the bias gradient, the sum of dZ's
    rows, into db (Float [N]); grad, saved and dz hold rows = (M, N) row-major (dz may be grad
    itself without an activation). The graphs are <op>.backward_epilogue (conv2d's too)."""
    m, n = rows
    dz_pack: "dict[int, Any]" = {DY: grad}
    if activation is not None:
        assert saved is not None  # _check_backward refused a missing one
        dz_pack.update({SAVED: saved, DZ: dz})

    def epilogue(with_activation: bool, with_bias_grad: bool) -> Graph:
        act = activation if with_activation else None
        what = " and ".join(w for w, on in (("dz", with_activation), ("bias grad", with_bias_grad))
                            if on)
        return runtime.graph(f"{op}.backward_epilogue", "pointwise", (grad.dtype, act, what),
                             (m, n), device, io,
                             lambda g: _describe_backward_epilogue(g, m, n, act, with_bias_grad),
                             variant=True)

    def attempt(variant: str) -> None:
        if variant == "one row":
            # One row: the bias gradient is dZ's row itself. A reduction of one row reduces
            # nothing, which build() refuses, so dZ alone in cuDNN and the copy in torch.
            if activation is not None:
                runtime.execute(epilogue(True, False), h, device, dz_pack)
            db.copy_(dz.view(n))
            return
        if variant == "fused":  # dZ and the bias gradient in one graph (or whichever is asked)
            g = epilogue(activation is not None, bias_grad)
            runtime.execute(g, h, device, {**dz_pack, DBIAS: db} if bias_grad else dz_pack)
            return
        # "split" and "torch sum": dZ alone first. Every graph of the variant is built before
        # any runs, so a variant cuDNN refuses has run nothing.
        dz_graph = epilogue(True, False) if activation is not None else None
        db_graph = epilogue(False, True) if variant == "split" else None
        if dz_graph is not None:
            runtime.execute(dz_graph, h, device, dz_pack)
        if db_graph is not None:
            runtime.execute(db_graph, h, device, {DY: dz, DBIAS: db})
        else:
            # "torch sum": the bias gradient by torch where cuDNN has no engine for the
            # reduction (a sum of M rows in Float, as cuDNN's would be).
            torch.sum(dz.reshape(m, n), dim=0, dtype=torch.float32, out=db)

    if not bias_grad:
        variants = ["fused"]
    elif m == 1:
        variants = ["one row"]
    elif activation is not None:
        variants = ["fused", "split", "torch sum"]
    else:
        variants = ["fused", "torch sum"]
    topology = (grad.dtype, activation, "bias grad" if bias_grad else "no bias grad",
                "one row" if m == 1 else "rows")
    runtime.first_variant(f"{op}.backward_epilogue", topology, variants, attempt)


def _check_backward(grad: Tensor, x: Tensor, weight: Tensor, saved: Optional[Tensor],
                    activation: Optional[str]) -> None:
    if _usual(x, weight, None, activation) and _usual_backward(grad, x, weight, saved,
                                                               activation):
        return
    _check(x, weight, None, activation)
    out = _out_shape(x, weight)
    checks.same_device(OP, "grad", grad, "x", x)
    checks.same_dtype(OP, "grad", grad, "x", x)
    checks.shape_is(OP, "grad", grad, out, "the shape of linear's output")
    checks.contiguous(OP, "grad", grad)
    check_saved(OP, "linear", saved, activation, "x", x, out)
    if saved is not None and activation is not None:
        checks.contiguous(OP, "saved output" if activation == "relu" else "saved pre-activation",
                          saved)


def _usual_backward(grad: Tensor, x: Tensor, weight: Tensor, saved: Optional[Tensor],
                    activation: Optional[str]) -> bool:
    """_usual's twin for what _check_backward adds: grad, and the saved tensor where the
    activation's backward reads one."""
    if not (grad.dtype == x.dtype and grad.get_device() == x.get_device()
            and grad.dim() == x.dim() and grad.shape[-1] == weight.shape[0]
            and grad.shape[:-1] == x.shape[:-1] and grad.is_contiguous()):
        return False
    if activation is None:
        return True
    return bool(saved is not None and saved.dtype == x.dtype
                and saved.get_device() == x.get_device() and saved.shape == grad.shape
                and saved.is_contiguous())


def check_saved(op: str, function: str, saved: Optional[Tensor], activation: Optional[str],
                x_name: str, x: Tensor, out: Any) -> None:
    """The backward's saved tensor: Y for ReLU, Z for GELU and SiLU, of the output's shape."""
    if activation not in NEEDS_PREACTIVATION and activation != "relu":
        return
    what = "output" if activation == "relu" else "pre-activation"
    if saved is None or saved.numel() == 0:
        raise ValueError(
            f"{op}: the backward of activation {activation!r} needs the forward's {what}, "
            f"which was not saved: call dnngraph.torch.{function} (it saves it when a gradient "
            f"is needed), or torch.ops.dnngraph.{function} with save_preactivation=True")
    checks.same_device(op, f"saved {what}", saved, x_name, x)
    checks.same_dtype(op, f"saved {what}", saved, x_name, x)
    checks.shape_is(op, f"saved {what}", saved, out, f"the shape of {function}'s output")


# The fake implementations: shapes and dtypes only, after the same checks.

def _forward_fake(x: Tensor, weight: Tensor, bias: Optional[Tensor], activation: Optional[str],
                  save_preactivation: bool) -> "tuple[Tensor, Tensor]":
    _check(x, weight, bias, activation)
    save_z = save_preactivation and activation in NEEDS_PREACTIVATION
    y = x.new_empty(_out_shape(x, weight))
    return y, x.new_empty(_out_shape(x, weight) if save_z else (0,))


def _backward_fake(grad: Tensor, x: Tensor, weight: Tensor, saved: Optional[Tensor],
                   activation: Optional[str], bias_grad: bool, input_grad: bool,
                   weight_grad: bool) -> "tuple[Tensor, Tensor, Tensor]":
    _check_backward(grad, x, weight, saved, activation)
    return (torch.empty_like(x) if input_grad else x.new_empty((0,)),
            torch.empty_like(weight) if weight_grad else x.new_empty((0,)),
            weight.new_empty((weight.shape[0],)) if bias_grad else x.new_empty((0,)))


# Autograd: what the forward keeps, and the backward through dnngraph::linear_backward.

def _setup_context(ctx: Any, inputs: "tuple[Any, ...]", output: "tuple[Tensor, Tensor]") -> None:
    x, weight, bias, activation, _ = inputs
    y, z = output
    ctx.activation = activation
    ctx.has_bias = bias is not None
    saved = y if activation == "relu" else z if activation in NEEDS_PREACTIVATION else None
    ctx.save_for_backward(x, weight, saved)
    ctx.mark_non_differentiable(z)  # saved for the backward, not a result to differentiate


def _autograd_backward(ctx: Any, grad_y: Tensor, _grad_z: Tensor) -> "tuple[Any, ...]":
    x, weight, saved = ctx.saved_tensors
    input_grad, weight_grad = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    bias_grad = ctx.has_bias and ctx.needs_input_grad[2]
    # The incoming gradient may be any view (an expanded ones from .sum(), a transpose).
    dx, dw, db = runtime.ops.linear_backward(
        grad_y.contiguous(), x, weight, saved, ctx.activation, bias_grad, input_grad, weight_grad)
    return (dx if input_grad else None, dw if weight_grad else None,
            db if bias_grad else None, None, None)


runtime.operator("linear", _forward, _forward_fake, _autograd_backward, _setup_context)
runtime.operator("linear_backward", _backward, _backward_fake)


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           activation: Optional[str] = None) -> Tensor:
    """activation(x @ weight.T + bias) on CUDA, fused by cuDNN: x (*, in_features), weight
    (out_features, in_features), bias (out_features,) or None, all contiguous bfloat16 or
    float16 on one device; activation None, "relu", "gelu" (erf), "gelu_tanh" or "silu".
    Differentiable in x, weight and bias. Under torch.autocast('cuda') the tensors are cast to
    autocast's dtype first, as torch.nn.functional.linear's are."""
    if torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        x, weight = x.to(dtype), weight.to(dtype)
        bias = bias.to(dtype) if bias is not None else None
    needs_grad = torch.is_grad_enabled() and (
        x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad))
    y, _ = runtime.ops.linear(x, weight, bias, activation,
                                     needs_grad and activation in NEEDS_PREACTIVATION)
    return y
