"""dnngraph.torch.conv2d: y = activation(conv2d(x, weight) + bias), torch.nn.functional.conv2d's
arguments plus the fused activation of linear, as the custom operators dnngraph::conv2d and
dnngraph::conv2d_backward.

Layout. x and weight are read in place when both are in one memory format, contiguous (NCHW) or
channels_last (NHWC); the output takes that format. As in torch, the format is channels_last
when x or weight is in it (and not also contiguous), and a tensor in the other format is copied
into it first. cuDNN's fused and dynamic-shape engines are NHWC's (measured on the H200, cuDNN
9.19: NCHW conv + bias + ReLU runs as one static graph, NCHW with a saved pre-activation and
every NCHW dynamic-shape graph have no engine), so NHWC is the fast layout, as for torch.

Forward: one cuDNN graph, the convolution with bias and activation fused behind it ("fused"); it
writes the pre-activation Z too when the backward needs it (GELU, SiLU). Where cuDNN has no
engine for that, convolution + bias write Z and a pointwise graph applies the activation
("split"). NHWC forward graphs are built with dynamic shapes on the process's kernel cache, so a
new batch or image size binds the compiled kernel (about 0.5 ms on the H200, docs/kernel-cache.md)
instead of building a plan; NCHW and backward graphs are static per shape (cuDNN 9.19 has no
dynamic-shape engine for them).

Backward, from Z (or Y for ReLU) and dY:
  dZ = activation'(Z) * dY and the bias gradient in linear's epilogue graphs (NHWC: the rows
       [N*H*W, K] sum to the bias gradient in the same graph; NCHW: dZ in cuDNN, the bias
       gradient by torch's sum over N, H, W in float32);
  dX = conv_dgrad(dZ, weight) and dW = conv_wgrad(x, dZ), one graph each.

x is [N, C, H, W] (a 3-D [C, H, W] is taken as a batch of one, as torch does); weight is
[K, C / groups, R, S]; bias [K] or None; all bfloat16, or all float16 (under torch.autocast the
wrapper casts them to autocast's dtype, as torch's conv2d does). padding: an int, a pair, "valid"
or "same" (stride 1; an even filter pads one more after than before, as torch).
"""

from typing import Any, Callable, Optional, Sequence, Union

import torch
from torch import Tensor

import dnngraph
from dnngraph import Graph, PointwiseMode, channels_last_strides, packed_strides

from . import _checks as checks
from . import _linear as linear
from . import _runtime as runtime

OP = "dnngraph.torch.conv2d"

# uids
X, W, BIAS, Y, Z = 1, 2, 3, 4, 5
DZ, DX, DW = 6, 7, 8  # dgrad: dZ, W -> dX; wgrad: X, dZ -> dW


def prefers_channels_last(t: Tensor) -> bool:
    return checks.is_dense(t, True) and not checks.is_dense(t, False)


def memory_format(x: Tensor, weight: Tensor) -> torch.memory_format:
    """torch's rule for its cuDNN convolution: channels_last when x or weight is."""
    channels_last = prefers_channels_last(x) or prefers_channels_last(weight)
    return torch.channels_last if channels_last else torch.contiguous_format


# NCHW convolution graphs run in their own layout only on cuDNN measured exact that way (9.19:
# every NCHW case of test_gpu_torch_ops.py). On 9.28.1's runtime-compiled libraries alone, NCHW
# conv_dgrad and conv_wgrad graphs built and returned wrong numbers (H200: bf16 x [1, 16, 9, 9],
# weight [24, 16, 3, 3], padding 1: dX max error 6.0 and 1.4e38, dW 31.5; the channels_last twins
# 0.007 and 0.056), and 9.27 has a channels-first conv_fprop defect (docs/known-issues.md,
# engine7-channels-first-conv-fprop). From 9.27 on, NCHW convolutions run on channels_last copies.
NCHW_EXACT_BELOW = 92700


def nchw_in_place() -> bool:
    return bool(dnngraph.cudnn_runtime_version() < NCHW_EXACT_BELOW)


def _nhwc(fmt: torch.memory_format) -> bool:
    return bool(fmt == torch.channels_last)


def _strides(fmt: torch.memory_format, dims: Sequence[int]) -> "list[int]":
    return channels_last_strides(list(dims)) if _nhwc(fmt) else packed_strides(list(dims))


def _in_format(t: Tensor, fmt: torch.memory_format) -> Tensor:
    """t in fmt, copied only when it is not (with H = W = 1 or C = 1 a tensor is in both)."""
    return t if checks.is_dense(t, _nhwc(fmt)) else t.contiguous(memory_format=fmt)


def _pair(op: str, name: str, value: Union[int, Sequence[int]]) -> "list[int]":
    pair = [value, value] if isinstance(value, int) else list(value)
    if len(pair) == 1:
        pair = pair * 2
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ValueError(f"{op}: {name} is {value!r}; it takes an int or two ints (height, width)")
    return pair


def paddings(padding: Union[str, int, Sequence[int]], weight_hw: Sequence[int],
             stride: Sequence[int], dilation: Sequence[int]) -> "tuple[list[int], list[int]]":
    """(pre, post) padding of torch's padding argument."""
    if isinstance(padding, str):
        if padding == "valid":
            return [0, 0], [0, 0]
        if padding != "same":
            raise ValueError(f"{OP}: padding {padding!r} is not 'valid', 'same', an int or two "
                             "ints")
        if any(s != 1 for s in stride):
            raise ValueError(f"{OP}: padding='same' takes stride 1 (stride is {list(stride)}), "
                             "as torch's conv2d; give the padding as numbers")
        total = [d * (k - 1) for d, k in zip(dilation, weight_hw)]
        pre = [t // 2 for t in total]
        return pre, [t - p for t, p in zip(total, pre)]
    pad = _pair(OP, "padding", padding)
    if any(p < 0 for p in pad):
        raise ValueError(f"{OP}: padding {pad} is negative; it must be 0 or more")
    return pad, list(pad)


def _check(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: Sequence[int],
           pre: Sequence[int], post: Sequence[int], dilation: Sequence[int], groups: int,
           activation: Optional[str]) -> "list[int]":
    """Checks the arguments as torch's conv2d would; returns the output's shape."""
    linear.check_activation(OP, activation)
    checks.on_cuda(OP, "input", x)
    checks.same_device(OP, "weight", weight, "input", x)
    checks.dtype_in(OP, "input", x, checks.HALF_TYPES,
                    "cast with input.to(torch.bfloat16), or call it under torch.autocast('cuda')")
    checks.same_dtype(OP, "weight", weight, "input", x)
    if x.dim() != 4:
        raise ValueError(f"{OP}: input has shape {checks.shape(x)}; it takes (N, C, H, W) or "
                         "(C, H, W)")
    if weight.dim() != 4:
        raise ValueError(f"{OP}: weight has shape {checks.shape(weight)}; it takes (out_channels,"
                         " in_channels / groups, kH, kW)")
    for name, values in (("stride", stride), ("dilation", dilation)):
        if len(values) != 2 or any(v < 1 for v in values):
            raise ValueError(f"{OP}: {name} {list(values)} must be two numbers of at least 1")
    if groups < 1:
        raise ValueError(f"{OP}: groups is {groups}; it must be at least 1")
    c, k = x.shape[1], weight.shape[0]
    if c % groups != 0 or k % groups != 0:
        raise ValueError(f"{OP}: groups {groups} must divide in_channels {c} (input's dim 1) and "
                         f"out_channels {k} (weight's dim 0)")
    if weight.shape[1] * groups != c:
        raise ValueError(
            f"{OP}: weight of shape {checks.shape(weight)} with groups={groups} expects input to "
            f"have {weight.shape[1] * groups} channels, but input of shape {checks.shape(x)} has "
            f"{c}")
    out = [x.shape[0], k]
    for i in range(2):
        size = x.shape[2 + i] + pre[i] + post[i]
        span = dilation[i] * (weight.shape[2 + i] - 1) + 1
        if size < span:
            raise ValueError(
                f"{OP}: input of shape {checks.shape(x)} padded ({pre[i]} + {post[i]}) is "
                f"{size} in dim {2 + i}, smaller than the dilated kernel's {span} (weight "
                f"{checks.shape(weight)}, dilation {list(dilation)})")
        out.append((size - span) // stride[i] + 1)
    for name, t in (("input", x), ("weight", weight)):
        if not (checks.is_dense(t, False) or checks.is_dense(t, True)):
            raise ValueError(
                f"{OP}: {name} of shape {checks.shape(t)} has strides {tuple(t.stride())}, in "
                f"neither contiguous nor channels_last memory; pass {name}.contiguous() or "
                f"{name}.contiguous(memory_format=torch.channels_last)")
    if x.numel() == 0 and x.shape[0] != 0:
        raise ValueError(f"{OP}: input of shape {checks.shape(x)} is empty in a dim other than "
                         "the batch")
    if bias is not None:
        checks.same_device(OP, "bias", bias, "input", x)
        checks.same_dtype(OP, "bias", bias, "input", x)
        checks.shape_is(OP, "bias", bias, (k,), "out_channels of weight")
        checks.contiguous(OP, "bias", bias)
    return out


def _rows(t: Tensor, fmt: torch.memory_format) -> Tensor:
    """A dense [N, C, H, W] tensor as the row-major rows of its memory: [N*H*W, C] for NHWC (a
    row per pixel, so summing rows sums per channel), [N*C*H, W] for NCHW (for elementwise work
    only)."""
    if _nhwc(fmt):
        return t.permute(0, 2, 3, 1).reshape(-1, t.shape[1])
    return t.view(-1, t.shape[3])


def _conv_options(stride: Sequence[int], pre: Sequence[int], post: Sequence[int],
                  dilation: Sequence[int], groups: int) -> "dict[str, Any]":
    return {"stride": list(stride), "pre_padding": list(pre), "post_padding": list(post),
            "dilation": list(dilation), "group_count": groups}


def _tensor(g: Graph, uid: int, name: str, dims: Sequence[int],
            fmt: torch.memory_format) -> Any:
    return g.tensor(name=name, uid=uid, dim=list(dims), stride=_strides(fmt, dims))


def _describe_forward(g: Graph, x_dims: Sequence[int], w_dims: Sequence[int],
                      y_dims: Sequence[int], fmt: torch.memory_format, options: "dict[str, Any]",
                      bias: bool, activation: Optional[str], epilogue: bool,
                      save_z: bool) -> None:
    z = g.conv_fprop(_tensor(g, X, "input", x_dims, fmt), _tensor(g, W, "weight", w_dims, fmt),
                     name="conv", **options)
    k = y_dims[1]
    if bias:
        z = g.pointwise(z, _tensor(g, BIAS, "bias", [1, k, 1, 1], fmt), mode=PointwiseMode.Add,
                        name="bias")
    y_strides = _strides(fmt, y_dims)
    if activation is None or not epilogue:
        z.set_output(True).set_uid(Y if activation is None else Z).set_stride(y_strides)
        z.set_name("y" if activation is None else "preactivation")
        return
    if save_z:
        z.set_output(True).set_uid(Z).set_name("preactivation").set_stride(y_strides)
    y = g.pointwise(z, mode=linear.FORWARD[activation], name=activation,
                    swish_beta=linear.swish_beta(activation))
    y.set_output(True).set_uid(Y).set_name("y").set_stride(y_strides)


def _describe_gradient(g: Graph, node: str, x_dims: Sequence[int], w_dims: Sequence[int],
                       dz_dims: Sequence[int], fmt: torch.memory_format,
                       options: "dict[str, Any]") -> None:
    """node "dgrad": dX from dZ and the weight (conv_dgrad); "wgrad": dWeight from X and dZ
    (conv_wgrad). The result's dims are set: stride and padding do not determine them."""
    dz = _tensor(g, DZ, "dz", dz_dims, fmt)
    if node == "dgrad":
        out = g.conv_dgrad(dz, _tensor(g, W, "weight", w_dims, fmt), name=node, **options)
        uid, name, dims = DX, "dx", x_dims
    else:
        out = g.conv_wgrad(_tensor(g, X, "input", x_dims, fmt), dz, name=node, **options)
        uid, name, dims = DW, "dweight", w_dims
    out.set_output(True).set_uid(uid).set_name(name).set_dim(list(dims))
    out.set_stride(_strides(fmt, dims))


def _empty(shape: Sequence[Any], like: Tensor, fmt: torch.memory_format) -> Tensor:
    return torch.empty(list(shape), dtype=like.dtype, device=like.device, memory_format=fmt)


def _batched(x: Tensor) -> Tensor:
    return x.unsqueeze(0) if x.dim() == 3 else x


def _outputs(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: Sequence[int],
             pre: Sequence[int], post: Sequence[int], dilation: Sequence[int], groups: int,
             activation: Optional[str], save_preactivation: bool) -> "tuple[Any, ...]":
    """After the checks: (output shape, memory format, Y, Z), Z empty unless the backward reads
    the pre-activation."""
    out = _check(x, weight, bias, stride, pre, post, dilation, groups, activation)
    fmt = memory_format(x, weight)
    save_z = save_preactivation and activation in linear.NEEDS_PREACTIVATION
    return out, fmt, _empty(out, x, fmt), (_empty(out, x, fmt) if save_z else x.new_empty((0,)))


def _run(g: Graph, h: Any, device: torch.device, pack: "dict[int, Any]") -> "Callable[[], Any]":
    return lambda: runtime.execute(g, h, device, pack)


def _forward(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: "list[int]",
             pre_padding: "list[int]", post_padding: "list[int]", dilation: "list[int]",
             groups: int, activation: Optional[str],
             save_preactivation: bool) -> "tuple[Tensor, Tensor]":
    out, fmt, y, z = _outputs(x, weight, bias, stride, pre_padding, post_padding, dilation,
                              groups, activation, save_preactivation)
    save_z = save_preactivation and activation in linear.NEEDS_PREACTIVATION
    if y.numel() == 0:
        return y, z
    x, weight = _in_format(x, fmt), _in_format(weight, fmt)
    device = x.device
    io = runtime.DATA_TYPES[x.dtype]
    options = _conv_options(stride, pre_padding, post_padding, dilation, groups)
    w_dims = list(weight.shape)
    topology = (x.dtype, "NHWC" if _nhwc(fmt) else "NCHW", activation,
                "bias" if bias is not None else "no bias",
                "saves preactivation" if save_z else "", tuple(w_dims), tuple(stride),
                tuple(pre_padding), tuple(post_padding), tuple(dilation), groups)
    bias_view = bias.view(1, -1, 1, 1) if bias is not None else None

    def attempt(variant: str) -> "list[Callable[[], Any]]":
        """The steps of a variant, every graph built before any runs: "fused" or "split" in
        the tensors' own layout, or (NCHW) either on channels_last copies, copied back."""
        copied = variant.startswith("channels_last")
        run_fmt = torch.channels_last if copied else fmt
        xs, ws = _in_format(x, run_fmt), _in_format(weight, run_fmt)
        ys = _empty(out, x, run_fmt) if copied else y
        zs = (_empty(out, x, run_fmt) if copied else z) if save_z else None
        pack = {X: xs, W: ws, Y: ys}
        if bias_view is not None:
            pack[BIAS] = bias_view
        x_dims = list(xs.shape)
        kind = "conv" if _nhwc(run_fmt) else "conv_nchw"
        fused = variant.endswith("fused")
        main = runtime.graph(
            "conv2d.forward", kind, (*topology, variant), tuple(x_dims), device, io,
            lambda g: _describe_forward(g, x_dims, w_dims, out, run_fmt, options,
                                        bias is not None, activation, fused, save_z),
            variant=True)
        steps: "list[Callable[[], Any]]"
        if fused:
            steps = [_run(main, h, device, {**pack, Z: zs} if zs is not None else pack)]
        else:
            assert activation is not None
            zz = zs if zs is not None else torch.empty_like(ys)
            z_rows, y_rows = _rows(zz, run_fmt), _rows(ys, run_fmt)
            m, n = int(z_rows.shape[0]), int(z_rows.shape[1])
            act = runtime.graph("conv2d.activation", "pointwise", (x.dtype, activation), (m, n),
                                device, io,
                                lambda g: linear.describe_activation(g, m, n, activation),
                                variant=True)
            main_pack = {u: t for u, t in pack.items() if u != Y}
            main_pack[Z] = zz
            steps = [_run(main, h, device, main_pack),
                     _run(act, h, device, {linear.Z: z_rows.view(m, n, 1, 1),
                                           linear.Y: y_rows.view(m, n, 1, 1)})]
        if copied:
            steps.append(lambda: y.copy_(ys))
            if zs is not None:
                steps.append(lambda: z.copy_(zs))
        return steps

    variants = ["fused", "split"] if activation is not None else ["fused"]
    if not _nhwc(fmt):  # cuDNN without NCHW engines, or not measured exact in NCHW
        variants = ((variants if nchw_in_place() else [])
                    + ["channels_last " + v for v in variants])
    with runtime.on_device(device):
        h = runtime.handle(device)
        for step in runtime.first_variant("conv2d.forward", topology, variants, attempt):
            step()
    return y, z


def _forward_fake(x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: "list[int]",
                  pre_padding: "list[int]", post_padding: "list[int]", dilation: "list[int]",
                  groups: int, activation: Optional[str],
                  save_preactivation: bool) -> "tuple[Tensor, Tensor]":
    _, _, y, z = _outputs(x, weight, bias, stride, pre_padding, post_padding, dilation, groups,
                          activation, save_preactivation)
    return y, z


def _check_backward(grad: Tensor, x: Tensor, weight: Tensor, saved: Optional[Tensor],
                    stride: Sequence[int], pre: Sequence[int], post: Sequence[int],
                    dilation: Sequence[int], groups: int, activation: Optional[str]) -> "list[int]":
    out = _check(x, weight, None, stride, pre, post, dilation, groups, activation)
    checks.same_device(OP, "grad", grad, "input", x)
    checks.same_dtype(OP, "grad", grad, "input", x)
    checks.shape_is(OP, "grad", grad, out, "the shape of conv2d's output")
    linear.check_saved(OP, "conv2d", saved, activation, "input", x, out)
    return out


def _backward(grad: Tensor, x: Tensor, weight: Tensor, saved: Optional[Tensor],
              stride: "list[int]", pre_padding: "list[int]", post_padding: "list[int]",
              dilation: "list[int]", groups: int, activation: Optional[str], bias_grad: bool,
              input_grad: bool, weight_grad: bool) -> "tuple[Tensor, Tensor, Tensor]":
    out = _check_backward(grad, x, weight, saved, stride, pre_padding, post_padding, dilation,
                          groups, activation)
    fmt = memory_format(x, weight)
    k = int(weight.shape[0])
    dx = torch.empty_like(x, memory_format=fmt) if input_grad else x.new_empty((0,))
    dw = (torch.empty_like(weight, memory_format=fmt) if weight_grad
          else x.new_empty((0,)))
    db = weight.new_empty((k,)) if bias_grad else x.new_empty((0,))
    if grad.numel() == 0:
        return dx.zero_(), dw.zero_(), db.zero_()
    x, weight = _in_format(x, fmt), _in_format(weight, fmt)
    grad = _in_format(grad, fmt)
    saved = _in_format(saved, fmt) if activation is not None and saved is not None else None
    device = x.device
    io = runtime.DATA_TYPES[x.dtype]
    nhwc = _nhwc(fmt)
    options = _conv_options(stride, pre_padding, post_padding, dilation, groups)
    x_dims, w_dims = list(x.shape), list(weight.shape)
    topology = (x.dtype, "NHWC" if nhwc else "NCHW", tuple(w_dims), tuple(stride),
                tuple(pre_padding), tuple(post_padding), tuple(dilation), groups)
    with runtime.on_device(device):
        h = runtime.handle(device)
        dz = grad if activation is None else torch.empty_like(grad)
        db_float = x.new_empty((k,), dtype=torch.float32)
        # NHWC rows [N*H*W, K] sum to the bias gradient; NCHW rows do not, so there the sum is
        # torch's.
        epilogue_bias = bias_grad and nhwc
        if activation is not None or epilogue_bias:
            rows = _rows(grad, fmt)
            linear.dz_and_bias_grad(
                "conv2d", h, device, io, (int(rows.shape[0]), int(rows.shape[1])), rows,
                _rows(saved, fmt) if saved is not None else None, _rows(dz, fmt), db_float,
                activation, epilogue_bias)
        if bias_grad and not nhwc:
            torch.sum(dz, dim=(0, 2, 3), dtype=torch.float32, out=db_float)
        if input_grad:
            _data_or_weight_grad("dgrad", topology, x_dims, w_dims, out, options, fmt, h, device,
                                 io, dx, {DZ: dz, W: weight})
        if weight_grad:
            _data_or_weight_grad("wgrad", topology, x_dims, w_dims, out, options, fmt, h, device,
                                 io, dw, {X: x, DZ: dz})
        if bias_grad:
            db.copy_(db_float)
    return dx, dw, db


def _data_or_weight_grad(node: str, topology: Any, x_dims: "list[int]", w_dims: "list[int]",
                         dz_dims: "list[int]", options: "dict[str, Any]",
                         fmt: torch.memory_format, h: Any, device: torch.device, io: Any,
                         result: Tensor, inputs: "dict[int, Tensor]") -> None:
    """One conv_dgrad or conv_wgrad graph (node "dgrad" or "wgrad") into result: in the tensors'
    layout, or, for NCHW where cuDNN has no engine for it or is not measured exact in it
    (nchw_in_place()), on channels_last copies with the result copied back."""
    op, uid = f"conv2d.{node}", DX if node == "dgrad" else DW

    def attempt(variant: str) -> "Callable[[], Any]":
        copied = variant == "channels_last"
        run_fmt = torch.channels_last if copied else fmt
        tensors = {u: _in_format(t, run_fmt) for u, t in inputs.items()}
        out = torch.empty_like(result, memory_format=run_fmt) if copied else result
        g = runtime.graph(op, "conv_backward", (*topology, variant), tuple(x_dims), device, io,
                          lambda g: _describe_gradient(g, node, x_dims, w_dims, dz_dims,
                                                       run_fmt, options), variant=True)
        run = _run(g, h, device, {**tensors, uid: out})
        if not copied:
            return run
        return lambda: (run(), result.copy_(out))

    if _nhwc(fmt):
        variants = ["own layout"]
    else:
        variants = (["own layout"] if nchw_in_place() else []) + ["channels_last"]
    runtime.first_variant(op, topology, variants, attempt)()


def _backward_fake(grad: Tensor, x: Tensor, weight: Tensor, saved: Optional[Tensor],
                   stride: "list[int]", pre_padding: "list[int]", post_padding: "list[int]",
                   dilation: "list[int]", groups: int, activation: Optional[str],
                   bias_grad: bool, input_grad: bool,
                   weight_grad: bool) -> "tuple[Tensor, Tensor, Tensor]":
    _check_backward(grad, x, weight, saved, stride, pre_padding, post_padding, dilation, groups,
                    activation)
    fmt = memory_format(x, weight)
    return (torch.empty_like(x, memory_format=fmt) if input_grad
            else x.new_empty((0,)),
            torch.empty_like(weight, memory_format=fmt) if weight_grad
            else x.new_empty((0,)),
            weight.new_empty((weight.shape[0],)) if bias_grad else x.new_empty((0,)))


def _setup_context(ctx: Any, inputs: "tuple[Any, ...]", output: "tuple[Tensor, Tensor]") -> None:
    x, weight, bias, stride, pre, post, dilation, groups, activation, _ = inputs
    y, z = output
    ctx.geometry = (list(stride), list(pre), list(post), list(dilation), groups)
    ctx.activation = activation
    ctx.has_bias = bias is not None
    saved = (y if activation == "relu" else z if activation in linear.NEEDS_PREACTIVATION
             else None)
    ctx.save_for_backward(x, weight, saved)
    ctx.mark_non_differentiable(z)


def _autograd_backward(ctx: Any, grad_y: Tensor, _grad_z: Tensor) -> "tuple[Any, ...]":
    x, weight, saved = ctx.saved_tensors
    input_grad, weight_grad = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    bias_grad = ctx.has_bias and ctx.needs_input_grad[2]
    dx, dw, db = runtime.ops.conv2d_backward(
        grad_y.contiguous(memory_format=memory_format(x, weight)), x, weight, saved,
        *ctx.geometry, ctx.activation, bias_grad, input_grad, weight_grad)
    return (dx if input_grad else None, dw if weight_grad else None,
            db if bias_grad else None) + (None,) * 7


runtime.operator("conv2d", _forward, _forward_fake, _autograd_backward, _setup_context)
runtime.operator("conv2d_backward", _backward, _backward_fake)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: Union[int, Sequence[int]] = 1,
           padding: Union[str, int, Sequence[int]] = 0,
           dilation: Union[int, Sequence[int]] = 1, groups: int = 1,
           activation: Optional[str] = None) -> Tensor:
    """activation(conv2d(input, weight) + bias) on CUDA, fused by cuDNN, with
    torch.nn.functional.conv2d's arguments: input (N, C, H, W) or (C, H, W); weight
    (out_channels, in_channels / groups, kH, kW); bias (out_channels,) or None; bfloat16 or
    float16; stride, padding (int, pair, "valid" or "same"), dilation, groups as torch's.
    activation: None, "relu", "gelu", "gelu_tanh" or "silu". Channels_last tensors are read in
    place and give a channels_last output (the fast layout). Differentiable in input, weight and
    bias; under torch.autocast('cuda') the tensors are cast to autocast's dtype first."""
    if torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        input, weight = input.to(dtype), weight.to(dtype)
        bias = bias.to(dtype) if bias is not None else None
    unbatched = input.dim() == 3
    x = _batched(input)
    if weight.dim() != 4:
        raise ValueError(f"{OP}: weight has shape {checks.shape(weight)}; it takes (out_channels,"
                         " in_channels / groups, kH, kW)")
    stride_pair = _pair(OP, "stride", stride)
    dilation_pair = _pair(OP, "dilation", dilation)
    pre, post = paddings(padding, list(weight.shape[2:]), stride_pair, dilation_pair)
    needs_grad = torch.is_grad_enabled() and (
        x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad))
    y, _ = runtime.ops.conv2d(x, weight, bias, stride_pair, pre, post, dilation_pair,
                                     int(groups), activation,
                                     needs_grad and activation in linear.NEEDS_PREACTIVATION)
    return y.squeeze(0) if unbatched else y
