"""Argument checks of dnngraph.torch, shared by each operator's CUDA implementation and its fake
implementation, so eager calls, FakeTensor and torch.compile refuse the same arguments with the
same message before cuDNN is called. Each message names the operator, the argument, what it is
and what to do."""

from typing import Any, Sequence

import torch
from torch import Tensor


HALF_TYPES = (torch.bfloat16, torch.float16)
FLOAT_TYPES = (torch.bfloat16, torch.float16, torch.float32)


def _names(dtypes: Sequence[Any]) -> str:
    names = [str(t) for t in dtypes]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def shape(t: Tensor) -> str:
    return "(" + ", ".join(str(d) for d in t.shape) + ("," if t.dim() == 1 else "") + ")"


def on_cuda(op: str, name: str, t: Tensor) -> None:
    if t.device.type != "cuda":
        raise ValueError(
            f"{op}: {name} is a tensor on {t.device}; dnngraph runs cuDNN on CUDA tensors: "
            f"move it with {name}.cuda() (or .to('cuda'))")


def same_device(op: str, name: str, t: Tensor, reference_name: str, reference: Tensor) -> None:
    if t.device != reference.device:
        raise ValueError(
            f"{op}: {name} is on {t.device} but {reference_name} is on {reference.device}; "
            f"put every tensor of one call on one device")


def dtype_in(op: str, name: str, t: Tensor, allowed: Sequence[Any], hint: str = "") -> None:
    if t.dtype not in allowed:
        raise ValueError(
            f"{op}: {name} has dtype {t.dtype}; it takes {_names(allowed)}"
            + (f" ({hint})" if hint else ""))


def same_dtype(op: str, name: str, t: Tensor, reference_name: str, reference: Tensor) -> None:
    if t.dtype != reference.dtype:
        raise ValueError(
            f"{op}: {name} has dtype {t.dtype} but {reference_name} has {reference.dtype}; give "
            f"both one dtype ({name}.to({reference_name}.dtype))")


def contiguous(op: str, name: str, t: Tensor) -> None:
    if not t.is_contiguous():
        strides = "(" + ", ".join(str(s) for s in t.stride()) + ")"
        raise ValueError(
            f"{op}: {name} of shape {shape(t)} has strides {strides}, not contiguous; pass "
            f"{name}.contiguous()")


def shape_is(op: str, name: str, t: Tensor, expected: Sequence[Any], meaning: str) -> None:
    if t.dim() != len(expected) or any(a != b for a, b in zip(t.shape, expected)):
        wanted = ("(" + ", ".join(str(d) for d in expected)
                  + ("," if len(expected) == 1 else "") + ")")
        raise ValueError(f"{op}: {name} has shape {shape(t)}; expected {wanted} ({meaning})")


def float_tensor(op: str, name: str, t: Tensor, reference_name: str, reference: Tensor) -> None:
    """A parameter (a norm's weight or bias): on the reference's device, a floating dtype."""
    same_device(op, name, t, reference_name, reference)
    dtype_in(op, name, t, FLOAT_TYPES)


def is_dense(t: Tensor, channels_last: bool) -> bool:
    """Whether t's strides are those of a dense tensor of its shape, row-major (contiguous) or
    with its dim 1 moving fastest (channels_last, channels_last_3d), size-1 dims aside. Read
    from the strides, not with is_contiguous(memory_format=...): torch.compile's symbolic
    shapes answer that with False for channels-last strides it cannot prove."""
    sizes, strides = list(t.shape), list(t.stride())
    order = ([0] + list(range(2, t.dim())) + [1]) if channels_last and t.dim() > 2 else \
        list(range(t.dim()))
    expected: Any = 1
    for dim in reversed(order):
        if sizes[dim] != 1 and strides[dim] != expected:
            return False
        expected = expected * sizes[dim]
    return True
