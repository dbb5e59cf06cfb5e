"""dnngraph.torch.batch_norm: torch.nn.functional.batch_norm (same arguments and semantics) as the
custom operators dnngraph::batch_norm (training), dnngraph::batch_norm_backward and
dnngraph::batch_norm_inference (evaluation).

Training: one cuDNN batch normalization node computes Y, the per-channel statistics it saves
(mean and inverse standard deviation, float32) and, given running statistics, their update with
momentum (the variance's batch statistic unbiased, as torch's; measured exact on the H200,
cuDNN 9.19: 1.2e-7 against torch's running variance). The operator returns the updated running
statistics and the wrapper copies them into running_mean and running_var, as torch updates its
buffers in place. Backward: one node gives dX and the weight and bias gradients together.

Evaluation: Y = (X - running_mean) * rsqrt(running_var + eps) * weight + bias, one graph of
pointwise nodes (cuDNN has no engine for a batch norm inference node on its own,
docs/known-issues.md). Its backward is torch's arithmetic on the same formula.

input is [N, C], [N, C, L], [N, C, H, W] or [N, C, D, H, W], bfloat16, float16 or float32, either
contiguous or (4-D, 5-D) channels_last; the output keeps the input's layout. cuDNN runs training
and backward in both layouts; the evaluation graph only channels-last (NHWC), so a contiguous
4-D or 5-D input there goes through a channels_last copy (measured on the H200, cuDNN 9.19). weight,
bias and the running statistics: [C], any floating dtype (read as float32), or None. Graphs are
static per shape (cuDNN 9.19 has no dynamic-shape engine for batch norm).
"""

import math
from typing import Any, Optional

import torch
from torch import Tensor

from dnngraph import DataType, Graph, channels_last_strides, packed_strides

from . import _checks as checks
from . import _runtime as runtime

OP = "dnngraph.torch.batch_norm"

# uids
X, SCALE, BIAS, PREV_MEAN, PREV_VAR, Y, MEAN, INV, NEXT_MEAN, NEXT_VAR = range(1, 11)
DY, DX, DSCALE, DBIAS = 11, 12, 13, 14


def _cudnn_view(x: Tensor) -> Tensor:
    """x as the 4-D or 5-D [N, C, spatial...] tensor cuDNN's norm nodes take: [N, C] is
    [N, C, 1, 1] and [N, C, L] is [N, C, L, 1]."""
    if x.dim() == 2:
        return x.view(*x.shape, 1, 1)
    if x.dim() == 3:
        return x.unsqueeze(3)
    return x


def _channels_last(x: Tensor) -> bool:
    """Whether the 4-D/5-D view is channels-last (its C moves fastest)."""
    return checks.is_dense(x, True) and not checks.is_dense(x, False)


def _layout_format(x: Tensor) -> torch.memory_format:
    if x.dim() == 4:
        return torch.channels_last
    return torch.channels_last_3d


def _strides(view: Tensor, channels_last: bool) -> "list[int]":
    dims = list(view.shape)
    return channels_last_strides(dims) if channels_last else packed_strides(dims)


def _check(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
           running_mean: Optional[Tensor], running_var: Optional[Tensor], eps: float,
           training: bool, momentum: float = 0.0) -> int:
    """Checks as torch's batch_norm does; returns C."""
    checks.on_cuda(OP, "input", x)
    checks.dtype_in(OP, "input", x, checks.FLOAT_TYPES)
    if x.dim() < 2 or x.dim() > 5:
        raise ValueError(f"{OP}: input has shape {checks.shape(x)}; it takes (N, C), (N, C, L), "
                         "(N, C, H, W) or (N, C, D, H, W)")
    c = x.shape[1]
    if not (checks.is_dense(x, False) or (x.dim() >= 4 and checks.is_dense(x, True))):
        raise ValueError(
            f"{OP}: input of shape {checks.shape(x)} has strides {tuple(x.stride())}, neither "
            f"contiguous nor channels_last; pass input.contiguous()")
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None:
            checks.float_tensor(OP, name, t, "input", x)
            checks.shape_is(OP, name, t, (c,), "one per channel, input's dim 1")
            checks.contiguous(OP, name, t)
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"{OP}: give running_mean and running_var both, or neither")
    if not training and running_mean is None:
        raise ValueError(f"{OP}: running_mean and running_var must be given in evaluation mode "
                         "(training=False)")
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"{OP}: eps is {eps}; it must be finite and not negative")
    if training:
        if not math.isfinite(momentum) or momentum < 0 or momentum > 1:
            raise ValueError(f"{OP}: momentum is {momentum}; it must be in [0, 1]")
        per_channel = x.numel() // c if c else 0
        if per_channel <= 1 and x.numel() > 0:
            raise ValueError(f"{OP}: expected more than 1 value per channel when training, got "
                             f"input of shape {checks.shape(x)}")
    return int(c)


def _per_channel(g: Graph, uid: int, name: str, c: int, rank: int) -> Any:
    dims = [1, c] + [1] * (rank - 2)
    return g.tensor(name=name, uid=uid, dim=dims, stride=channels_last_strides(dims),
                    data_type=DataType.Float)


def _float(t: Optional[Tensor], c: int, x: Tensor, value: float, rank: int) -> Tensor:
    """A per-channel parameter as float32 [1, C, 1, ...]; ones or zeros for None."""
    shape = [1, c] + [1] * (rank - 2)
    if t is None:
        return torch.full(shape, value, dtype=torch.float32, device=x.device)
    return t.to(torch.float32).view(shape)


def _x(g: Graph, uid: int, name: str, view: Tensor, channels_last: bool) -> Any:
    return g.tensor(name=name, uid=uid, dim=list(view.shape), stride=_strides(view, channels_last))


def _describe_training(g: Graph, view: Tensor, channels_last: bool, c: int, eps: float,
                       momentum: Optional[float]) -> None:
    rank = view.dim()
    running = {}
    if momentum is not None:
        running = {"prev_running_mean": _per_channel(g, PREV_MEAN, "running_mean", c, rank),
                   "prev_running_var": _per_channel(g, PREV_VAR, "running_var", c, rank),
                   "momentum": momentum}
    y, mean, inv, next_mean, next_var = g.batchnorm(
        _x(g, X, "input", view, channels_last), _per_channel(g, SCALE, "weight", c, rank),
        _per_channel(g, BIAS, "bias", c, rank), epsilon=eps, name="batch_norm", **running)
    y.set_output(True).set_uid(Y).set_name("y").set_stride(_strides(view, channels_last))
    for t, uid in ((mean, MEAN), (inv, INV), (next_mean, NEXT_MEAN), (next_var, NEXT_VAR)):
        if t is not None:
            t.set_output(True).set_uid(uid).set_data_type(DataType.Float)


def _describe_backward(g: Graph, view: Tensor, channels_last: bool, c: int) -> None:
    rank = view.dim()
    dx, dscale, dbias = g.batchnorm_backward(
        _x(g, DY, "grad", view, channels_last), _x(g, X, "input", view, channels_last),
        _per_channel(g, SCALE, "weight", c, rank), _per_channel(g, MEAN, "mean", c, rank),
        _per_channel(g, INV, "invstd", c, rank), name="batch_norm_backward")
    dx.set_output(True).set_uid(DX).set_name("dx").set_stride(_strides(view, channels_last))
    dscale.set_output(True).set_uid(DSCALE).set_data_type(DataType.Float)
    dbias.set_output(True).set_uid(DBIAS).set_data_type(DataType.Float)


def _describe_inference(g: Graph, view: Tensor, c: int) -> None:
    rank = view.dim()
    y = g.batchnorm_inference(
        _x(g, X, "input", view, True), _per_channel(g, MEAN, "running_mean", c, rank),
        _per_channel(g, INV, "invstd", c, rank), _per_channel(g, SCALE, "weight", c, rank),
        _per_channel(g, BIAS, "bias", c, rank), name="batch_norm_inference")
    y.set_output(True).set_uid(Y).set_name("y").set_stride(_strides(view, True))


def _layout_name(channels_last: bool) -> str:
    return "channels-last" if channels_last else "channels-first"


# training

def _training(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
              running_mean: Optional[Tensor], running_var: Optional[Tensor], momentum: float,
              eps: float) -> "tuple[Tensor, Tensor, Tensor, Tensor, Tensor]":
    c = _check(x, weight, bias, running_mean, running_var, eps, True, momentum)
    y = torch.empty_like(x)
    mean = x.new_empty((c,), dtype=torch.float32)
    invstd = x.new_empty((c,), dtype=torch.float32)
    running = running_mean is not None
    next_mean = x.new_empty((c,) if running else (0,), dtype=torch.float32)
    next_var = x.new_empty((c,) if running else (0,), dtype=torch.float32)
    if x.numel() == 0:
        return y, mean.fill_(math.nan), invstd.fill_(math.nan), next_mean, next_var
    view = _cudnn_view(x)
    rank = view.dim()
    channels_last = _channels_last(view)
    pack = {X: view, SCALE: _float(weight, c, x, 1.0, rank), BIAS: _float(bias, c, x, 0.0, rank),
            Y: _cudnn_view(y), MEAN: _shaped(mean, rank), INV: _shaped(invstd, rank)}
    if running:
        assert running_mean is not None and running_var is not None
        pack.update({PREV_MEAN: _float(running_mean, c, x, 0.0, rank),
                     PREV_VAR: _float(running_var, c, x, 1.0, rank),
                     NEXT_MEAN: _shaped(next_mean, rank), NEXT_VAR: _shaped(next_var, rank)})
    momentum_in_graph = float(momentum) if running else None
    runtime.run("batch_norm.forward", "norm", x,
                (x.dtype, _layout_name(channels_last), eps, momentum_in_graph),
                tuple(view.shape),
                lambda g: _describe_training(g, view, channels_last, c, eps, momentum_in_graph),
                pack)
    return y, mean, invstd, next_mean, next_var


def _shaped(t: Tensor, rank: int) -> Tensor:
    return t.view([1, t.shape[0]] + [1] * (rank - 2))


def _training_fake(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                   running_mean: Optional[Tensor], running_var: Optional[Tensor],
                   momentum: float,
                   eps: float) -> "tuple[Tensor, Tensor, Tensor, Tensor, Tensor]":
    c = _check(x, weight, bias, running_mean, running_var, eps, True, momentum)
    stats = (c,) if running_mean is not None else (0,)
    return (torch.empty_like(x), x.new_empty((c,), dtype=torch.float32),
            x.new_empty((c,), dtype=torch.float32), x.new_empty(stats, dtype=torch.float32),
            x.new_empty(stats, dtype=torch.float32))


def _check_backward(grad: Tensor, x: Tensor, weight: Optional[Tensor], mean: Tensor,
                    invstd: Tensor) -> int:
    c = _check(x, weight, None, None, None, 0.0, True)
    checks.same_device(OP, "grad", grad, "input", x)
    checks.same_dtype(OP, "grad", grad, "input", x)
    checks.shape_is(OP, "grad", grad, tuple(x.shape), "input's shape")
    if grad.stride() != x.stride() and grad.numel() > 1:
        raise ValueError(f"{OP}: grad has strides {tuple(grad.stride())} but input "
                         f"{tuple(x.stride())}; give grad input's layout")
    for name, t in (("mean", mean), ("invstd", invstd)):
        checks.same_device(OP, name, t, "input", x)
        checks.dtype_in(OP, name, t, (torch.float32,), "the forward's saved statistics")
        checks.shape_is(OP, name, t, (c,), "one per channel")
    return c


def _backward(grad: Tensor, x: Tensor, weight: Optional[Tensor], mean: Tensor,
              invstd: Tensor) -> "tuple[Tensor, Tensor, Tensor]":
    """(dX, dWeight, dBias), the parameter gradients float32 [C]."""
    c = _check_backward(grad, x, weight, mean, invstd)
    dx = torch.empty_like(x)
    dw = x.new_empty((c,), dtype=torch.float32)
    db = x.new_empty((c,), dtype=torch.float32)
    if x.numel() == 0:
        return dx, dw.zero_(), db.zero_()
    view = _cudnn_view(x)
    rank = view.dim()
    channels_last = _channels_last(view)
    runtime.run("batch_norm.backward", "norm", x, (x.dtype, _layout_name(channels_last)),
                tuple(view.shape), lambda g: _describe_backward(g, view, channels_last, c),
                {DY: _cudnn_view(grad), X: view, SCALE: _float(weight, c, x, 1.0, rank),
                 MEAN: _shaped(mean, rank), INV: _shaped(invstd, rank), DX: _cudnn_view(dx),
                 DSCALE: _shaped(dw, rank), DBIAS: _shaped(db, rank)})
    return dx, dw, db


def _backward_fake(grad: Tensor, x: Tensor, weight: Optional[Tensor], mean: Tensor,
                   invstd: Tensor) -> "tuple[Tensor, Tensor, Tensor]":
    c = _check_backward(grad, x, weight, mean, invstd)
    return (torch.empty_like(x), x.new_empty((c,), dtype=torch.float32),
            x.new_empty((c,), dtype=torch.float32))


def _training_setup(ctx: Any, inputs: "tuple[Any, ...]", output: "tuple[Tensor, ...]") -> None:
    x, weight, bias = inputs[0], inputs[1], inputs[2]
    _, mean, invstd, next_mean, next_var = output
    ctx.weight_dtype = weight.dtype if weight is not None else None
    ctx.bias_dtype = bias.dtype if bias is not None else None
    ctx.save_for_backward(x, weight, mean, invstd)
    ctx.mark_non_differentiable(mean, invstd, next_mean, next_var)


def _training_autograd(ctx: Any, grad_y: Tensor, *_unused: Tensor) -> "tuple[Any, ...]":
    x, weight, mean, invstd = ctx.saved_tensors
    grad = grad_y if grad_y.stride() == x.stride() else _like(grad_y, x)
    dx, dw, db = runtime.ops.batch_norm_backward(grad, x, weight, mean, invstd)
    needs = ctx.needs_input_grad
    return (dx if needs[0] else None,
            dw.to(ctx.weight_dtype) if needs[1] and ctx.weight_dtype is not None else None,
            db.to(ctx.bias_dtype) if needs[2] and ctx.bias_dtype is not None else None,
            None, None, None, None)


def _like(t: Tensor, reference: Tensor) -> Tensor:
    """t's values in reference's layout (contiguous or channels_last)."""
    out = torch.empty_like(reference)
    out.copy_(t)
    return out


# evaluation

def _inference(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
               running_mean: Tensor, running_var: Tensor, eps: float) -> Tensor:
    c = _check(x, weight, bias, running_mean, running_var, eps, False)
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    view = _cudnn_view(x)
    rank = view.dim()
    # The graph is channels-last only: other layouts run on a channels_last copy.
    copied = not _channels_last(view) and view.shape[1] > 1 and math.prod(view.shape[2:]) > 1
    source = view.contiguous(memory_format=_layout_format(view)) if copied else view
    out = torch.empty_like(source) if copied else _cudnn_view(y)
    invstd = (running_var.to(torch.float32) + eps).rsqrt()
    runtime.run("batch_norm.inference", "pointwise", x, (x.dtype, "copied" if copied else ""),
                tuple(view.shape), lambda g: _describe_inference(g, source, c),
                {X: source, MEAN: _float(running_mean, c, x, 0.0, rank),
                 INV: _shaped(invstd, rank), SCALE: _float(weight, c, x, 1.0, rank),
                 BIAS: _float(bias, c, x, 0.0, rank), Y: out})
    if copied:
        _cudnn_view(y).copy_(out)
    return y


def _inference_fake(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor],
                    running_mean: Tensor, running_var: Tensor, eps: float) -> Tensor:
    _check(x, weight, bias, running_mean, running_var, eps, False)
    return torch.empty_like(x)


def _inference_setup(ctx: Any, inputs: "tuple[Any, ...]", output: Tensor) -> None:
    x, weight, bias, running_mean, running_var, eps = inputs
    ctx.eps = eps
    ctx.weight_dtype = weight.dtype if weight is not None else None
    ctx.bias_dtype = bias.dtype if bias is not None else None
    ctx.save_for_backward(x, weight, running_mean, running_var)


def _inference_autograd(ctx: Any, grad_y: Tensor) -> "tuple[Any, ...]":
    """Y = (X - mean) * invstd * weight + bias with constant statistics, differentiated in
    float32 by torch."""
    x, weight, running_mean, running_var = ctx.saved_tensors
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    dims = [0] + list(range(2, x.dim()))
    invstd = (running_var.to(torch.float32) + ctx.eps).rsqrt().view(shape)
    grad = grad_y.to(torch.float32)
    needs = ctx.needs_input_grad
    dx = dw = db = None
    if needs[0]:
        scale = invstd if weight is None else invstd * weight.to(torch.float32).view(shape)
        dx = (grad * scale).to(x.dtype)
    if needs[1] and ctx.weight_dtype is not None:
        xhat = (x.to(torch.float32) - running_mean.to(torch.float32).view(shape)) * invstd
        dw = (grad * xhat).sum(dims).to(ctx.weight_dtype)
    if needs[2] and ctx.bias_dtype is not None:
        db = grad.sum(dims).to(ctx.bias_dtype)
    return dx, dw, db, None, None, None


runtime.operator("batch_norm", _training, _training_fake, _training_autograd, _training_setup)
runtime.operator("batch_norm_backward", _backward, _backward_fake)
runtime.operator("batch_norm_inference", _inference, _inference_fake, _inference_autograd,
                 _inference_setup)


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """torch.nn.functional.batch_norm on CUDA through cuDNN. training=True normalizes with the
    batch's statistics per channel (over N and the spatial dims) and, given running_mean and
    running_var, updates them in place: (1 - momentum) * running + momentum * batch statistic,
    the variance unbiased. training=False normalizes with the running statistics.
    Differentiable in input, weight and bias. Returns input's dtype and layout."""
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError(f"{OP}: running_mean and running_var must be given in evaluation "
                             "mode (training=False)")
        return runtime.ops.batch_norm_inference(input, weight, bias, running_mean,
                                                       running_var, float(eps))
    y, _, _, next_mean, next_var = runtime.ops.batch_norm(
        input, weight, bias, running_mean, running_var, float(momentum), float(eps))
    if running_mean is not None and running_var is not None:
        with torch.no_grad():
            running_mean.copy_(next_mean)
            running_var.copy_(next_var)
    return y
