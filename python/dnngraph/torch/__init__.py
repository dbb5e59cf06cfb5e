"""dnngraph inside torch (docs/torch.md): fused cuDNN graphs as torch custom operators.

    import dnngraph.torch as dt
    y = dt.linear(x, weight, bias, activation="gelu")     # matmul + bias + GELU, one cuDNN graph
    h = dt.rms_norm(y, (y.shape[-1],), norm_weight)
    h = dt.layer_norm(h, (h.shape[-1],), ln_weight, ln_bias)
    o = dt.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    o = dt.varlen_attn(q_packed, k_packed, v_packed, cu_seq, cu_seq, max_len, max_len,
                       window_size=(-1, 0))                # packed sequences, causal
    f = dt.conv2d(img, conv_weight, conv_bias, padding=1, activation="relu")
    f = dt.batch_norm(f, running_mean, running_var, bn_weight, bn_bias, training=True)

Each function calls operators of the `dnngraph` namespace (torch.ops.dnngraph.linear, ...) made
with torch.library.custom_op: a fake implementation for FakeTensor and torch.compile, a
registered backward built from dnngraph graphs, and argument checks that name the tensor, the
values and the fix before cuDNN is called. Graphs are built once per signature and run on
torch's current stream with workspaces from torch's caching allocator.

Kernel caches persist across processes with set_cache_store(folder) (default
$DNNGRAPH_CACHE_DIR, else ~/.cache/dnngraph) and save_caches().

dnngraph.torch.nn has torch's modules (Linear, Conv2d, LayerNorm, RMSNorm, BatchNorm*d) with these
operators in their forward, and swap(model) to put them into a model in place.

torch is needed here and only here: `import dnngraph` never imports it.
"""

try:
    import torch as _torch  # noqa: F401 (fails here, with the reason below, where torch is absent)
except ImportError as _error:
    raise ImportError(
        f"dnngraph.torch needs torch ({_error}); install torch, or use dnngraph's Graph API, "
        "which takes any CUDA buffer"
    ) from _error

from ._attention import scaled_dot_product_attention, varlen_attn
from ._batch_norm import batch_norm
from ._conv import conv2d
from ._linear import ACTIVATIONS, linear
from ._norms import layer_norm, rms_norm
from ._runtime import (cache_info, chosen_variants, clear_caches, save_caches, set_static_after,
                       wait_for_static_plans)
from ._store import default_cache_folder, set_cache_store

__all__ = [
    "ACTIVATIONS",
    "batch_norm",
    "cache_info",
    "chosen_variants",
    "clear_caches",
    "conv2d",
    "default_cache_folder",
    "layer_norm",
    "linear",
    "rms_norm",
    "save_caches",
    "scaled_dot_product_attention",
    "set_cache_store",
    "set_static_after",
    "varlen_attn",
    "wait_for_static_plans",
]
