"""dnngraph.torch.layer_norm and rms_norm: torch.nn.functional's layer_norm and rms_norm (same
arguments, normalized_shape semantics and defaults) as the custom operators dnngraph::layer_norm,
dnngraph::rms_norm and their _backward, each one cuDNN normalization node.

The forward runs cuDNN's training phase and returns the statistics it saves (mean and inverse
standard deviation per row, float32) for the backward, one graph that gives dX and the weight and
bias gradients together. The normalized dims are flattened into F features and the rest into R
rows: X is a channels-last [R, F, 1, 1], as cuDNN's norm engines take it. input: bfloat16, float16
or float32, contiguous, on a CUDA device; weight and bias: any of those dtypes (read as float32),
or None (then ones / zeros are passed: cuDNN's norm nodes need both). eps is a constant of the
graph, so each eps builds its own.
"""

import math
from typing import Any, Optional, Sequence

import torch
from torch import Tensor

from dnngraph import DataType, Graph, NormFwdPhase, channels_last_strides

from . import _checks as checks
from . import _runtime as runtime

LAYER_NORM = "dnngraph.torch.layer_norm"
RMS_NORM = "dnngraph.torch.rms_norm"

# rms_norm's eps=None: float32's epsilon, what torch 2.11 takes for bfloat16, float16 and float32
# inputs alike (its computation type's; measured on the CPU: not torch.finfo(input.dtype).eps as
# its docs say). A constant here, so torch.compile traces nothing for it.
FLOAT32_EPS = float(torch.finfo(torch.float32).eps)

# uids
X, SCALE, BIAS, Y, MEAN, INV = 1, 2, 3, 4, 5, 6
DY, DX, DSCALE, DBIAS = 7, 10, 11, 12


def _rows_features(op: str, x: Tensor, normalized_shape: Sequence[int]) -> "tuple[Any, Any]":
    """Checks input against normalized_shape as torch does; returns (rows, features)."""
    if (len(normalized_shape) == 1 and x.is_cuda and x.dtype in checks.FLOAT_TYPES
            and x.dim() >= 1 and x.shape[-1] == normalized_shape[0] and x.is_contiguous()):
        features = normalized_shape[0]  # the usual case in one expression; any other below
        return x.numel() // features if features else 0, features
    checks.on_cuda(op, "input", x)
    checks.dtype_in(op, "input", x, checks.FLOAT_TYPES)
    count = len(normalized_shape)
    if count == 0 or count > x.dim() or any(
            a != b for a, b in zip(x.shape[x.dim() - count:], normalized_shape)):
        raise ValueError(
            f"{op}: normalized_shape {list(normalized_shape)} does not end input's shape "
            f"{checks.shape(x)}; it takes input of shape "
            f"(*, {', '.join(map(str, normalized_shape))}) (normalized_shape: the last dims of "
            "input, at least one)")
    checks.contiguous(op, "input", x)
    features = math.prod(normalized_shape)
    return x.numel() // features if features else 0, features


def _check_parameter(op: str, name: str, t: Optional[Tensor], x: Tensor,
                     normalized_shape: Sequence[int]) -> None:
    if t is None or (t.dtype in checks.FLOAT_TYPES and t.get_device() == x.get_device()
                     and t.dim() == len(normalized_shape)
                     and all(a == b for a, b in zip(t.shape, normalized_shape))
                     and t.is_contiguous()):
        return
    checks.float_tensor(op, name, t, "input", x)
    checks.shape_is(op, name, t, list(normalized_shape), "normalized_shape")
    checks.contiguous(op, name, t)


def _check_eps(op: str, eps: float) -> None:
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"{op}: eps is {eps}; it must be finite and not negative")


def _parameter(t: Optional[Tensor], features: int, x: Tensor, value: float) -> Tensor:
    """A weight or bias in float32, as cuDNN reads it ([1, F, 1, 1]: the same elements); ones or
    zeros for None (made per call, so that a CUDA graph capture records their fill like any
    other kernel)."""
    if t is None:
        return torch.full((1, features, 1, 1), value, dtype=torch.float32, device=x.device)
    return t.to(torch.float32)


def _x(g: Graph, uid: int, name: str, rows: int, features: int) -> Any:
    dims = [rows, features, 1, 1]
    return g.tensor(name=name, uid=uid, dim=dims, stride=channels_last_strides(dims))


def _per_feature(g: Graph, uid: int, name: str, features: int) -> Any:
    return g.tensor(name=name, uid=uid, dim=[1, features, 1, 1], data_type=DataType.Float)


def _per_row(g: Graph, uid: int, name: str, rows: int) -> Any:
    return g.tensor(name=name, uid=uid, dim=[rows, 1, 1, 1], data_type=DataType.Float)


def _statistic(t: Any, uid: int) -> None:
    t.set_output(True).set_uid(uid).set_data_type(DataType.Float)


def _describe_layer_norm(g: Graph, rows: int, features: int, eps: float) -> None:
    y, mean, inv = g.layernorm(_x(g, X, "input", rows, features),
                               _per_feature(g, SCALE, "weight", features),
                               _per_feature(g, BIAS, "bias", features),
                               phase=NormFwdPhase.Training, epsilon=eps, name="layer_norm")
    y.set_output(True).set_uid(Y).set_name("y")
    _statistic(mean, MEAN)
    _statistic(inv, INV)


def _describe_layer_norm_backward(g: Graph, rows: int, features: int) -> None:
    dx, dscale, dbias = g.layernorm_backward(
        _x(g, DY, "grad", rows, features), _x(g, X, "input", rows, features),
        _per_feature(g, SCALE, "weight", features), _per_row(g, MEAN, "mean", rows),
        _per_row(g, INV, "rstd", rows), name="layer_norm_backward")
    dx.set_output(True).set_uid(DX)
    _statistic(dscale, DSCALE)
    _statistic(dbias, DBIAS)


def _describe_rms_norm(g: Graph, rows: int, features: int, eps: float) -> None:
    y, inv = g.rmsnorm(_x(g, X, "input", rows, features),
                       _per_feature(g, SCALE, "weight", features), phase=NormFwdPhase.Training,
                       epsilon=eps, name="rms_norm")
    y.set_output(True).set_uid(Y).set_name("y")
    _statistic(inv, INV)


def _describe_rms_norm_backward(g: Graph, rows: int, features: int) -> None:
    dx, dscale = g.rmsnorm_backward(
        _x(g, DY, "grad", rows, features), _x(g, X, "input", rows, features),
        _per_feature(g, SCALE, "weight", features), _per_row(g, INV, "rstd", rows),
        name="rms_norm_backward")
    dx.set_output(True).set_uid(DX)
    _statistic(dscale, DSCALE)


# layer_norm

def _check_layer_norm(x: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor],
                      bias: Optional[Tensor], eps: float) -> "tuple[Any, Any]":
    rows, features = _rows_features(LAYER_NORM, x, normalized_shape)
    _check_parameter(LAYER_NORM, "weight", weight, x, normalized_shape)
    _check_parameter(LAYER_NORM, "bias", bias, x, normalized_shape)
    _check_eps(LAYER_NORM, eps)
    return rows, features


def _layer_norm(x: Tensor, normalized_shape: "list[int]", weight: Optional[Tensor],
                bias: Optional[Tensor], eps: float) -> "tuple[Tensor, Tensor, Tensor]":
    rows, features = _check_layer_norm(x, normalized_shape, weight, bias, eps)
    y = torch.empty_like(x)
    mean = x.new_empty((rows,), dtype=torch.float32)
    rstd = x.new_empty((rows,), dtype=torch.float32)
    if rows == 0 or features == 0:
        return y, mean, rstd
    runtime.run("layer_norm.forward", "norm", x, (x.dtype, eps), (rows, features),
                lambda g: _describe_layer_norm(g, rows, features, eps),
                {X: x, SCALE: _parameter(weight, features, x, 1.0),
                 BIAS: _parameter(bias, features, x, 0.0), Y: y,
                 MEAN: mean, INV: rstd})
    return y, mean, rstd


def _layer_norm_fake(x: Tensor, normalized_shape: "list[int]", weight: Optional[Tensor],
                     bias: Optional[Tensor], eps: float) -> "tuple[Tensor, Tensor, Tensor]":
    rows, _ = _check_layer_norm(x, normalized_shape, weight, bias, eps)
    return (torch.empty_like(x), x.new_empty((rows,), dtype=torch.float32),
            x.new_empty((rows,), dtype=torch.float32))


def _check_statistics(op: str, x: Tensor, rows: Any, named: "dict[str, Tensor]") -> None:
    for name, t in named.items():
        checks.same_device(op, name, t, "input", x)
        checks.dtype_in(op, name, t, (torch.float32,), "the forward's saved statistics")
        checks.shape_is(op, name, t, (rows,), "one per row of input")


def _check_grad(op: str, grad: Tensor, x: Tensor) -> None:
    if (grad.dtype == x.dtype and grad.get_device() == x.get_device() and grad.shape == x.shape
            and grad.is_contiguous()):
        return
    checks.same_device(op, "grad", grad, "input", x)
    checks.same_dtype(op, "grad", grad, "input", x)
    checks.shape_is(op, "grad", grad, tuple(x.shape), "input's shape")
    checks.contiguous(op, "grad", grad)


def _check_layer_norm_backward(grad: Tensor, x: Tensor, normalized_shape: Sequence[int],
                               mean: Tensor, rstd: Tensor,
                               weight: Optional[Tensor]) -> "tuple[Any, Any]":
    rows, features = _rows_features(LAYER_NORM, x, normalized_shape)
    _check_parameter(LAYER_NORM, "weight", weight, x, normalized_shape)
    _check_grad(LAYER_NORM, grad, x)
    _check_statistics(LAYER_NORM, x, rows, {"mean": mean, "rstd": rstd})
    return rows, features


def _layer_norm_backward(grad: Tensor, x: Tensor, normalized_shape: "list[int]", mean: Tensor,
                         rstd: Tensor,
                         weight: Optional[Tensor]) -> "tuple[Tensor, Tensor, Tensor]":
    """(dX, dWeight, dBias), the parameter gradients float32 of normalized_shape."""
    rows, features = _check_layer_norm_backward(grad, x, normalized_shape, mean, rstd, weight)
    dx = torch.empty_like(x)
    dw = x.new_empty(list(normalized_shape), dtype=torch.float32)
    db = x.new_empty(list(normalized_shape), dtype=torch.float32)
    if rows == 0 or features == 0:
        return dx, dw.zero_(), db.zero_()
    runtime.run("layer_norm.backward", "norm", x, (x.dtype,), (rows, features),
                lambda g: _describe_layer_norm_backward(g, rows, features),
                {DY: grad, X: x,
                 SCALE: _parameter(weight, features, x, 1.0), MEAN: mean,
                 INV: rstd, DX: dx,
                 DSCALE: dw, DBIAS: db})
    return dx, dw, db


def _layer_norm_backward_fake(grad: Tensor, x: Tensor, normalized_shape: "list[int]",
                              mean: Tensor, rstd: Tensor,
                              weight: Optional[Tensor]) -> "tuple[Tensor, Tensor, Tensor]":
    _check_layer_norm_backward(grad, x, normalized_shape, mean, rstd, weight)
    return (torch.empty_like(x), x.new_empty(list(normalized_shape), dtype=torch.float32),
            x.new_empty(list(normalized_shape), dtype=torch.float32))


def _layer_norm_setup(ctx: Any, inputs: "tuple[Any, ...]",
                      output: "tuple[Tensor, Tensor, Tensor]") -> None:
    x, normalized_shape, weight, bias, _ = inputs
    _, mean, rstd = output
    ctx.normalized_shape = list(normalized_shape)
    ctx.weight_dtype = weight.dtype if weight is not None else None
    ctx.bias_dtype = bias.dtype if bias is not None else None
    ctx.save_for_backward(x, mean, rstd, weight)
    ctx.mark_non_differentiable(mean, rstd)


def _layer_norm_autograd(ctx: Any, grad_y: Tensor, _grad_mean: Tensor,
                         _grad_rstd: Tensor) -> "tuple[Any, ...]":
    x, mean, rstd, weight = ctx.saved_tensors
    dx, dw, db = runtime.ops.layer_norm_backward(
        grad_y.contiguous(), x, ctx.normalized_shape, mean, rstd, weight)
    needs = ctx.needs_input_grad
    return (dx if needs[0] else None, None,
            dw.to(ctx.weight_dtype) if needs[2] and ctx.weight_dtype is not None else None,
            db.to(ctx.bias_dtype) if needs[3] and ctx.bias_dtype is not None else None, None)


# rms_norm

def _check_rms_norm(x: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor],
                    eps: float) -> "tuple[Any, Any]":
    rows, features = _rows_features(RMS_NORM, x, normalized_shape)
    _check_parameter(RMS_NORM, "weight", weight, x, normalized_shape)
    _check_eps(RMS_NORM, eps)
    return rows, features


def _rms_norm(x: Tensor, normalized_shape: "list[int]", weight: Optional[Tensor],
              eps: float) -> "tuple[Tensor, Tensor]":
    rows, features = _check_rms_norm(x, normalized_shape, weight, eps)
    y = torch.empty_like(x)
    rstd = x.new_empty((rows,), dtype=torch.float32)
    if rows == 0 or features == 0:
        return y, rstd
    runtime.run("rms_norm.forward", "norm", x, (x.dtype, eps), (rows, features),
                lambda g: _describe_rms_norm(g, rows, features, eps),
                {X: x, SCALE: _parameter(weight, features, x, 1.0),
                 Y: y, INV: rstd})
    return y, rstd


def _rms_norm_fake(x: Tensor, normalized_shape: "list[int]", weight: Optional[Tensor],
                   eps: float) -> "tuple[Tensor, Tensor]":
    rows, _ = _check_rms_norm(x, normalized_shape, weight, eps)
    return torch.empty_like(x), x.new_empty((rows,), dtype=torch.float32)


def _check_rms_norm_backward(grad: Tensor, x: Tensor, normalized_shape: Sequence[int],
                             rstd: Tensor, weight: Optional[Tensor]) -> "tuple[Any, Any]":
    rows, features = _rows_features(RMS_NORM, x, normalized_shape)
    _check_parameter(RMS_NORM, "weight", weight, x, normalized_shape)
    _check_grad(RMS_NORM, grad, x)
    _check_statistics(RMS_NORM, x, rows, {"rstd": rstd})
    return rows, features


def _rms_norm_backward(grad: Tensor, x: Tensor, normalized_shape: "list[int]", rstd: Tensor,
                       weight: Optional[Tensor]) -> "tuple[Tensor, Tensor]":
    """(dX, dWeight), dWeight float32 of normalized_shape."""
    rows, features = _check_rms_norm_backward(grad, x, normalized_shape, rstd, weight)
    dx = torch.empty_like(x)
    dw = x.new_empty(list(normalized_shape), dtype=torch.float32)
    if rows == 0 or features == 0:
        return dx, dw.zero_()
    runtime.run("rms_norm.backward", "norm", x, (x.dtype,), (rows, features),
                lambda g: _describe_rms_norm_backward(g, rows, features),
                {DY: grad, X: x,
                 SCALE: _parameter(weight, features, x, 1.0), INV: rstd,
                 DX: dx, DSCALE: dw})
    return dx, dw


def _rms_norm_backward_fake(grad: Tensor, x: Tensor, normalized_shape: "list[int]",
                            rstd: Tensor, weight: Optional[Tensor]) -> "tuple[Tensor, Tensor]":
    _check_rms_norm_backward(grad, x, normalized_shape, rstd, weight)
    return torch.empty_like(x), x.new_empty(list(normalized_shape), dtype=torch.float32)


def _rms_norm_setup(ctx: Any, inputs: "tuple[Any, ...]", output: "tuple[Tensor, Tensor]") -> None:
    x, normalized_shape, weight, _ = inputs
    ctx.normalized_shape = list(normalized_shape)
    ctx.weight_dtype = weight.dtype if weight is not None else None
    ctx.save_for_backward(x, output[1], weight)
    ctx.mark_non_differentiable(output[1])


def _rms_norm_autograd(ctx: Any, grad_y: Tensor, _grad_rstd: Tensor) -> "tuple[Any, ...]":
    x, rstd, weight = ctx.saved_tensors
    dx, dw = runtime.ops.rms_norm_backward(grad_y.contiguous(), x, ctx.normalized_shape,
                                                  rstd, weight)
    needs = ctx.needs_input_grad
    return (dx if needs[0] else None, None,
            dw.to(ctx.weight_dtype) if needs[2] and ctx.weight_dtype is not None else None, None)


runtime.operator("layer_norm", _layer_norm, _layer_norm_fake, _layer_norm_autograd,
                 _layer_norm_setup)
runtime.operator("layer_norm_backward", _layer_norm_backward, _layer_norm_backward_fake)
runtime.operator("rms_norm", _rms_norm, _rms_norm_fake, _rms_norm_autograd, _rms_norm_setup)
runtime.operator("rms_norm_backward", _rms_norm_backward, _rms_norm_backward_fake)


def _shape(normalized_shape: Any) -> "list[int]":
    return [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """torch.nn.functional.layer_norm on CUDA through cuDNN: normalizes over the last
    len(normalized_shape) dims of input; weight and bias of normalized_shape, or None.
    Differentiable in input, weight and bias. Returns input's dtype (under autocast too)."""
    y, _, _ = runtime.ops.layer_norm(input, _shape(normalized_shape), weight, bias,
                                            float(eps))
    return y


def rms_norm(input: Tensor, normalized_shape: Any, weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """torch.nn.functional.rms_norm on CUDA through cuDNN: input * rsqrt(mean(input^2) + eps) *
    weight over the last len(normalized_shape) dims; eps=None is float32's epsilon, as in
    torch 2.11. Differentiable in input and weight. Returns input's dtype."""
    resolved = FLOAT32_EPS if eps is None else float(eps)
    y, _ = runtime.ops.rms_norm(input, _shape(normalized_shape), weight, resolved)
    return y
