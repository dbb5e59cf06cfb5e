"""torch.nn modules whose forward runs dnngraph.torch's operators: subclasses of torch's own
(Linear, Conv2d, LayerNorm, RMSNorm, BatchNorm1d/2d/3d), with the same constructor arguments,
parameters, buffers and state_dict keys, so a checkpoint of either loads into the other; Linear
and Conv2d take one more argument, `activation` (None, "relu", "gelu", "gelu_tanh", "silu"),
fused into their cuDNN graph. `swap(model)` turns a model's torch modules of these kinds into
these, in place, sharing their parameters and buffers.

    import dnngraph.torch.nn as dnn
    mlp = torch.nn.Sequential(dnn.Linear(1024, 4096, activation="gelu_tanh"),
                              dnn.Linear(4096, 1024)).cuda().bfloat16()
    resnet = dnn.swap(torchvision.models.resnet50()).cuda().to(memory_format=torch.channels_last)

The operators' conditions hold (docs/torch.md): CUDA tensors; linear and conv2d in bfloat16 or
float16 (or under torch.autocast), the norms also in float32.

(`# type: ignore[misc]` on the classes: the package's type check reads torch as untyped.)"""

from typing import Any, Optional

import torch
from torch import Tensor

from ._batch_norm import batch_norm
from ._conv import OP as CONV_OP
from ._conv import conv2d
from ._linear import ACTIVATIONS, linear
from ._norms import layer_norm, rms_norm


def _check_activation(owner: str, activation: Optional[str]) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"dnngraph.torch.nn.{owner}: activation {activation!r} is not one of "
                         + ", ".join(repr(a) for a in ACTIVATIONS))


class Linear(torch.nn.Linear):  # type: ignore[misc]
    """torch.nn.Linear, forward by dnngraph.torch.linear with the activation fused."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None,
                 activation: Optional[str] = None) -> None:
        _check_activation("Linear", activation)
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.activation = activation

    def forward(self, input: Tensor) -> Tensor:
        return linear(input, self.weight, self.bias, activation=self.activation)

    def extra_repr(self) -> str:
        return str(super().extra_repr()) + f", activation={self.activation!r}"


class Conv2d(torch.nn.Conv2d):  # type: ignore[misc]
    """torch.nn.Conv2d (padding_mode 'zeros'), forward by dnngraph.torch.conv2d with the
    activation fused."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 activation: Optional[str] = None) -> None:
        _check_activation("Conv2d", activation)
        if padding_mode != "zeros":
            raise ValueError(f"{CONV_OP}: padding_mode {padding_mode!r}: cuDNN's convolution "
                             "pads with zeros; use torch.nn.Conv2d for other modes")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device=device, dtype=dtype)
        self.activation = activation

    def forward(self, input: Tensor) -> Tensor:
        return conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                      self.groups, activation=self.activation)

    def extra_repr(self) -> str:
        return str(super().extra_repr()) + f", activation={self.activation!r}"


class LayerNorm(torch.nn.LayerNorm):  # type: ignore[misc]
    """torch.nn.LayerNorm, forward by dnngraph.torch.layer_norm."""

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(torch.nn.RMSNorm):  # type: ignore[misc]
    """torch.nn.RMSNorm, forward by dnngraph.torch.rms_norm."""

    def forward(self, input: Tensor) -> Tensor:
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)


class _BatchNormForward:
    """The forward of torch's _BatchNorm (momentum None: the cumulative average;
    num_batches_tracked counted; batch statistics in evaluation without running statistics)
    through dnngraph.torch.batch_norm."""

    def forward(self: Any, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if tracked else None,
                          self.running_var if tracked else None, self.weight, self.bias,
                          use_batch, factor, self.eps)


class BatchNorm1d(_BatchNormForward, torch.nn.BatchNorm1d):  # type: ignore[misc]
    """torch.nn.BatchNorm1d, forward by dnngraph.torch.batch_norm."""


class BatchNorm2d(_BatchNormForward, torch.nn.BatchNorm2d):  # type: ignore[misc]
    """torch.nn.BatchNorm2d, forward by dnngraph.torch.batch_norm."""


class BatchNorm3d(_BatchNormForward, torch.nn.BatchNorm3d):  # type: ignore[misc]
    """torch.nn.BatchNorm3d, forward by dnngraph.torch.batch_norm."""


# torch's kind -> ours; exact types only (a subclass of torch's may change its forward).
_SWAPS = {torch.nn.Linear: Linear, torch.nn.Conv2d: Conv2d, torch.nn.LayerNorm: LayerNorm,
          torch.nn.RMSNorm: RMSNorm, torch.nn.BatchNorm1d: BatchNorm1d,
          torch.nn.BatchNorm2d: BatchNorm2d, torch.nn.BatchNorm3d: BatchNorm3d}


def swap(module: torch.nn.Module) -> torch.nn.Module:
    """Turns every module of module (itself included) whose type is exactly torch.nn.Linear,
    Conv2d (padding_mode 'zeros'), LayerNorm, RMSNorm or BatchNorm1d/2d/3d into the dnngraph
    module of that kind, in place: the same object, its class changed, so parameters, buffers,
    hooks and references held elsewhere stay. Returns module. Other modules are left as they
    are (a Conv2d with another padding mode too)."""
    for child in module.modules():
        ours = _SWAPS.get(type(child))
        if ours is None or (ours is Conv2d and child.padding_mode != "zeros"):
            continue
        child.__class__ = ours
        if ours in (Linear, Conv2d):
            child.activation = None
    return module
