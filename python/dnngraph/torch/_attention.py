"""dnngraph.torch.scaled_dot_product_attention and varlen_attn: torch's
torch.nn.functional.scaled_dot_product_attention and torch.nn.attention.varlen.varlen_attn (same
arguments, defaults and semantics where they are served) as the custom operators dnngraph::sdpa,
dnngraph::varlen_attn and their _backward, each one cuDNN attention node (docs/attention.md).

scaled_dot_product_attention: query [b, h_q, s_q, d], key [b, h_k, s_kv, d], value [b, h_k, s_kv,
d_v], bfloat16 or float16 on one CUDA device, any strides with the head dim innermost (so the
[b, s, h, d] memory of a transposed projection is read in place); h_q a multiple of h_k with
enable_gqa=True; is_causal is torch's top-left diagonal; scale None is 1 / sqrt(d). The output,
and the gradients, take the layout of the tensor they belong to, as torch's cuDNN attention gives
them. attn_mask and dropout_p > 0 are refused with a ValueError (not served yet).

varlen_attn: sequences packed token after token, query [T_q, h_q, d], key [T_k, h_k, d], value
[T_k, h_k, d_v] (contiguous), cu_seq_q / cu_seq_k the int32 (N + 1,) prefix sums of the lengths,
max_q / max_k at least the longest length (as torch's, not checked on the device: a longer
sequence is cut). window_size (-1, -1) is full attention, (-1, 0) causal with the diagonal at the
bottom right of each sequence's block (flash-attention's convention, which torch's varlen_attn
follows); sliding windows are refused. cuDNN reads the packed tensors in place (ragged offsets,
THD) with a padding mask from the lengths. Graphs are built per (bucket of N, bucket of max_q,
bucket of max_k): the length buckets are powers of two from 64, N's bucket the next power of two,
the batch padded with spare sequences: from cuDNN 9.25 on zero-length ones (cudnn-frontend's
tests gate zero-length sequences there, and 9.22 returned NaN rows for them); below it one-token
ones that read the last token of each input and write one row past the end of each output
(outputs are allocated one row longer and returned without it; in the backward pass the spares
read a zero row of the incoming gradient, so their gradient is exactly zero whatever cuDNN
accumulates). So a training run over random lengths builds a few graphs, not one per step; and a
batch whose buckets' graph was never built runs through a built graph that holds it, up to
MAX_SERVING times larger (more, empty, spares; longer lengths), instead of building one: on
cuDNN 9.28.1 a packed-attention build costs hundreds of ms, and a count of sequences first seen
at step 53 of a training run cost 5.8% of its step time after the warm-up (session 18).

Attention graphs are static per shape (runtime.DYNAMIC["attention"]): cuDNN's attention returned
NaN rows through a dynamic-shape graph on 9.19 (docs/known-issues.md, sdpa-dynamic-shape).
"""

import math
from typing import Any, Optional, Sequence

import torch
from torch import Tensor

import dnngraph
from dnngraph import DataType, Graph

from . import _checks as checks
from . import _runtime as runtime

SDPA = "dnngraph.torch.scaled_dot_product_attention"
VARLEN = "dnngraph.torch.varlen_attn"

# uids
Q, K, V, O, STATS, DO, DQ, DK, DV, DSUM = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
SEQ_Q, SEQ_K, OFFSET_Q, OFFSET_K, OFFSET_V, OFFSET_O = 11, 12, 13, 14, 15, 16
OFFSET_DQ, OFFSET_DK, OFFSET_DV, OFFSET_DO = 17, 18, 19, 20

HALF_HINT = ("cuDNN's attention takes half precision: cast with q.to(torch.bfloat16), or call "
             "it under torch.autocast('cuda')")

# The smallest bucket of a packed batch's maximum length (varlen_attn).
MIN_BUCKET = 64

# The first cuDNN whose attention takes zero-length sequences: the spares that pad a packed
# batch's count of sequences to its bucket are empty from this version on, one token long below
# it (varlen_attn).
ZERO_LENGTH_FROM = 92500

# How much larger (count of sequences x length_q x length_k) a built graph may be and still run a
# packed batch whose own graph was never built (_serving).
MAX_SERVING = 8


def _layout_like(t: Tensor, shape: Sequence[Any], dtype: Optional[torch.dtype] = None) -> Tensor:
    """An empty tensor of `shape` (t's rank) whose dims lie in memory in the order of t's: the
    dims by decreasing stride, ties in index order (torch's cuDNN attention lays O and the
    gradients out like the input they belong to)."""
    order = sorted(range(t.dim()), key=lambda i: (-t.stride(i), i))
    out = t.new_empty([shape[i] for i in order], dtype=dtype if dtype is not None else t.dtype)
    return out.permute([order.index(i) for i in range(t.dim())])


def _strides(t: Tensor) -> "list[int]":
    return [int(s) for s in t.stride()]


def _innermost(op: str, name: str, t: Tensor) -> None:
    if t.dim() > 0 and t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(
            f"{op}: {name} of shape {checks.shape(t)} has strides {tuple(t.stride())}; cuDNN reads "
            f"the head dim (the last) with stride 1: pass {name}.contiguous()")


def _head_dim(op: str, name: str, size: Any) -> None:
    if size % 8 != 0:
        raise ValueError(
            f"{op}: {name}'s head dim is {size}; cuDNN's attention takes head dims that are "
            "multiples of 8 (pad the head dim with zeros)")


def _check_scale(op: str, scale: float) -> None:
    if not math.isfinite(scale):
        raise ValueError(f"{op}: scale is {scale}; it must be finite")


def _check_qkv(op: str, q: Tensor, k: Tensor, v: Tensor, rank: int, dims: str) -> None:
    checks.on_cuda(op, "query", q)
    checks.same_device(op, "key", k, "query", q)
    checks.same_device(op, "value", v, "query", q)
    checks.dtype_in(op, "query", q, checks.HALF_TYPES, HALF_HINT)
    checks.same_dtype(op, "key", k, "query", q)
    checks.same_dtype(op, "value", v, "query", q)
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t.dim() != rank:
            raise ValueError(f"{op}: {name} has shape {checks.shape(t)}; it takes {dims}")


def _check_heads(op: str, q: Tensor, k: Tensor, v: Tensor, head_axis: int, length_axis: int,
                 enable_gqa: bool) -> None:
    h_q, h_k, h_v = q.shape[head_axis], k.shape[head_axis], v.shape[head_axis]
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"{op}: key's head dim is {k.shape[-1]} but query's is {q.shape[-1]}; Q K^T needs one "
            f"head dim (query {checks.shape(q)}, key {checks.shape(k)})")
    if v.shape[length_axis] != k.shape[length_axis]:
        raise ValueError(
            f"{op}: value has {v.shape[length_axis]} positions but key has "
            f"{k.shape[length_axis]}; each key needs its value (key {checks.shape(k)}, value "
            f"{checks.shape(v)})")
    if h_v != h_k:
        raise ValueError(f"{op}: value has {h_v} heads but key has {h_k}; give them one count")
    if h_k == 0 or h_q % h_k != 0:
        raise ValueError(
            f"{op}: query has {h_q} heads and key {h_k}; grouped-query attention needs the "
            "query's head count to be a multiple of the key's")
    if h_q != h_k and not enable_gqa:
        raise ValueError(
            f"{op}: query has {h_q} heads and key {h_k}; pass enable_gqa=True for grouped-query "
            "attention (as torch asks), or repeat key and value's heads")
    _head_dim(op, "query", q.shape[-1])
    _head_dim(op, "value", v.shape[-1])


# scaled_dot_product_attention

def _check_sdpa(q: Tensor, k: Tensor, v: Tensor, scale: float) -> None:
    _check_qkv(SDPA, q, k, v, 4, "(batch, heads, length, head_dim)")
    if k.shape[0] != q.shape[0] or v.shape[0] != q.shape[0]:
        raise ValueError(
            f"{SDPA}: query, key and value have batches {q.shape[0]}, {k.shape[0]} and "
            f"{v.shape[0]}; give them one batch")
    _check_heads(SDPA, q, k, v, 1, 2, enable_gqa=True)
    if k.shape[2] == 0:
        raise ValueError(f"{SDPA}: key has length 0: a softmax over no key is undefined")
    for name, t in (("query", q), ("key", k), ("value", v)):
        _innermost(SDPA, name, t)
    _check_scale(SDPA, scale)


def _tensor(g: Graph, uid: int, name: str, t: Tensor) -> Any:
    return g.tensor(name=name, uid=uid, dim=[int(d) for d in t.shape], stride=_strides(t))


def _stats(g_out: Any, uid: int) -> None:
    g_out.set_output(True).set_uid(uid).set_data_type(DataType.Float)


def _describe_sdpa(g: Graph, q: Tensor, k: Tensor, v: Tensor, out: Tensor, is_causal: bool,
                   scale: float, compute_lse: bool) -> None:
    o, stats = g.sdpa(_tensor(g, Q, "query", q), _tensor(g, K, "key", k),
                      _tensor(g, V, "value", v), attn_scale=scale, generate_stats=compute_lse,
                      causal_mask=is_causal, name="attention")
    o.set_output(True).set_uid(O).set_name("out").set_stride(_strides(out))
    if compute_lse:
        _stats(stats, STATS)


def _describe_sdpa_backward(g: Graph, grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor,
                            dq: Tensor, dk: Tensor, dv: Tensor, is_causal: bool,
                            scale: float) -> None:
    b, h_q, s_q = (int(d) for d in q.shape[:3])
    stats = g.tensor(name="lse", uid=STATS, dim=[b, h_q, s_q, 1], data_type=DataType.Float)
    gq, gk, gv, d = g.sdpa_backward(
        _tensor(g, Q, "query", q), _tensor(g, K, "key", k), _tensor(g, V, "value", v),
        _tensor(g, O, "out", out), _tensor(g, DO, "grad", grad), stats, attn_scale=scale,
        causal_mask=is_causal, name="attention_backward")
    gq.set_output(True).set_uid(DQ).set_stride(_strides(dq))
    gk.set_output(True).set_uid(DK).set_stride(_strides(dk))
    gv.set_output(True).set_uid(DV).set_stride(_strides(dv))
    _stats(d, DSUM)


def _shapes(*tensors: Tensor) -> "tuple[Any, ...]":
    return tuple((tuple(int(d) for d in t.shape), tuple(_strides(t))) for t in tensors)


def _sdpa_outputs(q: Tensor, v: Tensor, compute_lse: bool) -> "tuple[Tensor, Tensor]":
    b, h_q, s_q = q.shape[0], q.shape[1], q.shape[2]
    out = _layout_like(q, (b, h_q, s_q, v.shape[-1]))
    lse = q.new_empty((b, h_q, s_q) if compute_lse else (0,), dtype=torch.float32)
    return out, lse


def _sdpa(q: Tensor, k: Tensor, v: Tensor, is_causal: bool, scale: float,
          compute_lse: bool) -> "tuple[Tensor, Tensor]":
    """(out, lse): lse the natural-log log-sum-exp of each row of scaled, masked scores (float32
    [b, h_q, s_q]) when compute_lse, else empty."""
    _check_sdpa(q, k, v, scale)
    out, lse = _sdpa_outputs(q, v, compute_lse)
    if out.numel() == 0:
        return out, lse
    pack = {Q: q, K: k, V: v, O: out}
    if compute_lse:
        pack[STATS] = lse.unsqueeze(-1)
    runtime.run("sdpa.forward", "attention", q, (q.dtype, is_causal, scale, compute_lse),
                _shapes(q, k, v, out),
                lambda g: _describe_sdpa(g, q, k, v, out, is_causal, scale, compute_lse), pack)
    return out, lse


def _sdpa_fake(q: Tensor, k: Tensor, v: Tensor, is_causal: bool, scale: float,
               compute_lse: bool) -> "tuple[Tensor, Tensor]":
    _check_sdpa(q, k, v, scale)
    return _sdpa_outputs(q, v, compute_lse)


def _check_sdpa_backward(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor,
                         lse: Tensor, scale: float) -> None:
    _check_sdpa(q, k, v, scale)
    expected = (q.shape[0], q.shape[1], q.shape[2], v.shape[-1])
    for name, t in (("out", out), ("grad", grad)):
        checks.same_device(SDPA, name, t, "query", q)
        checks.same_dtype(SDPA, name, t, "query", q)
        checks.shape_is(SDPA, name, t, expected, "(batch, query heads, query length, value dim)")
        _innermost(SDPA, name, t)
    checks.same_device(SDPA, "lse", lse, "query", q)
    checks.dtype_in(SDPA, "lse", lse, (torch.float32,), "the forward's log-sum-exp")
    checks.shape_is(SDPA, "lse", lse, expected[:3], "the forward's log-sum-exp per query row")
    checks.contiguous(SDPA, "lse", lse)


def _sdpa_gradients(q: Tensor, k: Tensor, v: Tensor) -> "tuple[Tensor, Tensor, Tensor]":
    return _layout_like(q, q.shape), _layout_like(k, k.shape), _layout_like(v, v.shape)


def _sdpa_backward(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                   is_causal: bool, scale: float) -> "tuple[Tensor, Tensor, Tensor]":
    """(dq, dk, dv) of _sdpa, each in its input's layout; with grouped-query attention dk and dv
    sum over the query heads that share a key head."""
    _check_sdpa_backward(grad, q, k, v, out, lse, scale)
    dq, dk, dv = _sdpa_gradients(q, k, v)
    if q.numel() == 0 or out.numel() == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    b, h_q, s_q = q.shape[0], q.shape[1], q.shape[2]
    dsum = q.new_empty((b, h_q, s_q, 1), dtype=torch.float32)
    runtime.run("sdpa.backward", "attention", q, (q.dtype, is_causal, scale),
                _shapes(grad, q, k, v, out, dq, dk, dv),
                lambda g: _describe_sdpa_backward(g, grad, q, k, v, out, dq, dk, dv, is_causal,
                                                  scale),
                {Q: q, K: k, V: v, O: out, DO: grad, STATS: lse.unsqueeze(-1), DQ: dq, DK: dk,
                 DV: dv, DSUM: dsum})
    return dq, dk, dv


def _sdpa_backward_fake(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                        is_causal: bool, scale: float) -> "tuple[Tensor, Tensor, Tensor]":
    _check_sdpa_backward(grad, q, k, v, out, lse, scale)
    return _sdpa_gradients(q, k, v)


def _sdpa_setup(ctx: Any, inputs: "tuple[Any, ...]", output: "tuple[Tensor, Tensor]") -> None:
    q, k, v, is_causal, scale, compute_lse = inputs
    out, lse = output
    ctx.is_causal, ctx.scale, ctx.compute_lse = is_causal, scale, compute_lse
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.mark_non_differentiable(lse)


def _in_layout_of(grad: Tensor, like: Tensor) -> Tensor:
    """grad in like's strides (an autograd gradient may be expanded, strided 0, or laid out
    otherwise): cuDNN reads dO as it reads O."""
    if grad.stride() == like.stride():
        return grad
    return _layout_like(like, like.shape).copy_(grad)


def _sdpa_autograd(ctx: Any, grad_out: Tensor, _grad_lse: Tensor) -> "tuple[Any, ...]":
    q, k, v, out, lse = ctx.saved_tensors
    if not ctx.compute_lse:  # called with compute_lse=False: the forward again, saving it
        out, lse = runtime.ops.sdpa(q, k, v, ctx.is_causal, ctx.scale, True)
    dq, dk, dv = runtime.ops.sdpa_backward(_in_layout_of(grad_out, out), q, k, v, out,
                                                  lse, ctx.is_causal, ctx.scale)
    needs = ctx.needs_input_grad
    return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None,
            None, None, None)


# varlen_attn

def bucket(length: int) -> int:
    """The sequence length a packed batch's graph is built for: the next power of two, at least
    MIN_BUCKET."""
    return max(MIN_BUCKET, 1 << max(0, int(length) - 1).bit_length())


def sequences(count: int) -> int:
    """The count of sequences a packed batch's graph is built for: the next power of two (the
    rest spare sequences, see one_token_spares)."""
    return 1 << max(0, int(count) - 1).bit_length()


def one_token_spares() -> bool:
    """Whether the spare sequences are one token long (the loaded cuDNN is older than 9.25 and
    takes no zero-length sequence): each output is then allocated one row longer, the row the
    spares write."""
    return dnngraph.cudnn_runtime_version() < ZERO_LENGTH_FROM


def _serving(op: str, topology: Any, q: Tensor, heads: Any, batch: int, length_q: int,
             length_k: int) -> "tuple[int, int, int]":
    """(count of sequences, length_q, length_k) of the graph that runs a packed batch of the
    given buckets: its own, or a built graph that holds it, at most MAX_SERVING times larger
    (runtime.serving_shapes): a count of sequences or lengths first seen late in a training run
    then costs no build. A larger count of sequences pads with more spares, so it serves only
    where they are empty (not one_token_spares); longer lengths only widen the padding mask."""
    wanted = batch * length_q * length_k

    def cost(shapes: Any) -> Optional[int]:
        b, lq, lk, h = shapes
        if h != heads or b < batch or lq < length_q or lk < length_k:
            return None
        if b != batch and one_token_spares():
            return None
        size = int(b * lq * lk)
        return size if size <= MAX_SERVING * wanted else None

    served: Any = runtime.serving_shapes(op, "attention", topology,
                                         (batch, length_q, length_k, heads), q.device, cost)
    return int(served[0]), int(served[1]), int(served[2])


def _spare_rows(count: int) -> int:
    """The rows past the end each output needs for a batch of `count` sequences: 1 when one-token
    spares pad it, else 0."""
    return int(sequences(count) != count and one_token_spares())


def _rows(like: Tensor, shape: Sequence[Any], spare: int) -> Tensor:
    """An empty contiguous tensor of `shape` ([rows, heads, dim]) in like's dtype and device,
    with `spare` rows more in memory (returned without them)."""
    rows = int(shape[0])
    full = like.new_empty((rows + spare, *shape[1:]))
    return full[:rows] if spare else full


def _check_lengths(name: str, cu_seq: Tensor, q: Tensor, batch: Any) -> None:
    checks.same_device(VARLEN, name, cu_seq, "query", q)
    checks.dtype_in(VARLEN, name, cu_seq, (torch.int32,),
                    "the prefix sums of the lengths, as torch's varlen_attn takes them")
    if cu_seq.dim() != 1 or cu_seq.shape[0] < 2:
        raise ValueError(
            f"{VARLEN}: {name} has shape {checks.shape(cu_seq)}; it takes (N + 1,): 0, then the "
            "running total of the N sequences' lengths")
    if batch is not None and cu_seq.shape[0] != batch:
        raise ValueError(
            f"{VARLEN}: {name} has {cu_seq.shape[0]} entries but cu_seq_q has {batch}; query and "
            "key need one count of sequences")
    checks.contiguous(VARLEN, name, cu_seq)


def _check_varlen(q: Tensor, k: Tensor, v: Tensor, cu_seq_q: Tensor, cu_seq_k: Tensor, max_q: int,
                  max_k: int, scale: float) -> None:
    _check_qkv(VARLEN, q, k, v, 3, "(total tokens, heads, head_dim), sequences packed")
    _check_heads(VARLEN, q, k, v, 1, 0, enable_gqa=True)
    for name, t in (("query", q), ("key", k), ("value", v)):
        checks.contiguous(VARLEN, name, t)
        if t.numel() >= 2**31:
            raise ValueError(
                f"{VARLEN}: {name} has {t.numel()} elements; cuDNN's packed offsets are int32 "
                "(fewer than 2**31 elements per tensor): split the batch")
    if k.shape[0] == 0 and q.shape[0] > 0:
        raise ValueError(f"{VARLEN}: key has no token: a softmax over no key is undefined")
    _check_lengths("cu_seq_q", cu_seq_q, q, None)
    _check_lengths("cu_seq_k", cu_seq_k, q, cu_seq_q.shape[0])
    for name, value in (("max_q", max_q), ("max_k", max_k)):
        if value < 1:
            raise ValueError(f"{VARLEN}: {name} is {value}; it is the longest sequence's length, "
                             "at least 1")
    _check_scale(VARLEN, scale)


def _varlen_dims(t: Tensor, batch: int, length: int) -> "tuple[list[int], list[int]]":
    """A packed [T, h, d] tensor as cuDNN's ragged [N, h, length, d] with token-major strides."""
    h, d = int(t.shape[1]), int(t.shape[2])
    return [batch, h, length, d], [length * h * d, d, h * d, 1]


def _ragged(g: Graph, uid: int, name: str, t: Tensor, batch: int, length: int,
            offsets: Any) -> Any:
    dims, strides = _varlen_dims(t, batch, length)
    return g.tensor(name=name, uid=uid, dim=dims, stride=strides).set_ragged_offset(offsets)


def _mark_ragged(out: Any, uid: int, t: Tensor, batch: int, length: int, offsets: Any) -> None:
    dims, strides = _varlen_dims(t, batch, length)
    out.set_output(True).set_uid(uid).set_dim(dims).set_stride(strides).set_ragged_offset(offsets)


class _VarlenGraph:
    """The inputs every packed-attention graph (forward or backward) declares: the lengths
    (padding mask) and the offsets of each packed tensor: Q, K, V and O read (O written in the
    forward pass), and in the backward pass dO, dQ, dK and dV (where the spares read or write
    the row past the end)."""

    def __init__(self, g: Graph, batch: int, length_q: int, length_k: int, backward: bool):
        self.g, self.batch, self.length_q, self.length_k = g, batch, length_q, length_k

        def declare(uid: int, name: str, rows: int) -> Any:
            return g.tensor(name=name, uid=uid, dim=[rows, 1, 1, 1], data_type=DataType.Int32)

        self.seq_q = declare(SEQ_Q, "seq_len_q", batch)
        self.seq_k = declare(SEQ_K, "seq_len_kv", batch)
        names = [(OFFSET_Q, "offsets_q"), (OFFSET_K, "offsets_k"), (OFFSET_V, "offsets_v"),
                 (OFFSET_O, "offsets_o")]
        if backward:
            names += [(OFFSET_DO, "offsets_do"), (OFFSET_DQ, "offsets_dq"),
                      (OFFSET_DK, "offsets_dk"), (OFFSET_DV, "offsets_dv")]
        self.offsets = {uid: declare(uid, name, batch + 1) for uid, name in names}

    def q_side(self, uid: int, name: str, t: Tensor, offsets: int) -> Any:
        return _ragged(self.g, uid, name, t, self.batch, self.length_q, self.offsets[offsets])

    def k_side(self, uid: int, name: str, t: Tensor, offsets: int) -> Any:
        return _ragged(self.g, uid, name, t, self.batch, self.length_k, self.offsets[offsets])

    def attention(self, is_causal: bool, scale: float) -> "dict[str, Any]":
        return {"attn_scale": scale, "causal_mask_bottom_right": is_causal, "padding_mask": True,
                "seq_len_q": self.seq_q, "seq_len_kv": self.seq_k}


def _describe_varlen(g: Graph, q: Tensor, k: Tensor, v: Tensor, out: Tensor, batch: int,
                     length_q: int, length_k: int, is_causal: bool, scale: float,
                     compute_lse: bool) -> None:
    vg = _VarlenGraph(g, batch, length_q, length_k, backward=False)
    o, stats = g.sdpa(vg.q_side(Q, "query", q, OFFSET_Q), vg.k_side(K, "key", k, OFFSET_K),
                      vg.k_side(V, "value", v, OFFSET_V), generate_stats=compute_lse,
                      name="attention", **vg.attention(is_causal, scale))
    _mark_ragged(o.set_name("out"), O, out, batch, length_q, vg.offsets[OFFSET_O])
    if compute_lse:
        _stats(stats, STATS)


def _describe_varlen_backward(g: Graph, q: Tensor, k: Tensor, v: Tensor, out: Tensor, batch: int,
                              length_q: int, length_k: int, is_causal: bool,
                              scale: float) -> None:
    vg = _VarlenGraph(g, batch, length_q, length_k, backward=True)
    h_q = int(q.shape[1])
    stats = g.tensor(name="lse", uid=STATS, dim=[batch, h_q, length_q, 1],
                     data_type=DataType.Float)
    gq, gk, gv, d = g.sdpa_backward(
        vg.q_side(Q, "query", q, OFFSET_Q), vg.k_side(K, "key", k, OFFSET_K),
        vg.k_side(V, "value", v, OFFSET_V), vg.q_side(O, "out", out, OFFSET_O),
        vg.q_side(DO, "grad", out, OFFSET_DO), stats, name="attention_backward",
        **vg.attention(is_causal, scale))
    _mark_ragged(gq, DQ, q, batch, length_q, vg.offsets[OFFSET_DQ])
    _mark_ragged(gk, DK, k, batch, length_k, vg.offsets[OFFSET_DK])
    _mark_ragged(gv, DV, v, batch, length_k, vg.offsets[OFFSET_DV])
    _stats(d, DSUM)


def _starts(cu_seq: Tensor, batch: int, total: int) -> "tuple[Tensor, Tensor, Tensor]":
    """(lengths, read, write) of a padded batch in tokens: the batch's lengths, and where each of
    its sequences starts (then the end) when read from an input and when written to an output
    (or read from the backward pass's padded gradient). The spares past the N sequences are
    empty and start at the end, or one token long, reading token total - 1 and writing row
    total (one_token_spares). Made on the device from the prefix sums (no synchronization:
    capturable)."""
    count = int(cu_seq.shape[0]) - 1
    spares = batch - count
    if spares == 0:
        return cu_seq[1:] - cu_seq[:-1], cu_seq, cu_seq
    if not one_token_spares():
        padded = torch.cat((cu_seq, cu_seq[-1:].expand(spares)))
        return padded[1:] - padded[:-1], padded, padded
    lengths = torch.cat((cu_seq[1:] - cu_seq[:-1], cu_seq.new_ones(spares)))
    read = torch.cat((cu_seq[:-1], cu_seq.new_full((spares,), total - 1), cu_seq[-1:]))
    write = torch.cat((cu_seq[:-1], cu_seq.new_full((spares,), total),
                       cu_seq.new_full((1,), total + 1)))
    return lengths, read, write


def _varlen_pack(q: Tensor, k: Tensor, v: Tensor, cu_seq_q: Tensor, cu_seq_k: Tensor,
                 batch: int, backward: bool) -> "dict[int, Tensor]":
    """The lengths and the element offsets of each packed tensor for a graph of `batch`
    sequences (_starts)."""
    lengths_q, read_q, write_q = _starts(cu_seq_q, batch, int(q.shape[0]))
    lengths_k, read_k, write_k = _starts(cu_seq_k, batch, int(k.shape[0]))
    h_q, h_k, d, d_v = int(q.shape[1]), int(k.shape[1]), int(q.shape[2]), int(v.shape[2])

    def offsets(starts: Tensor, row: int) -> Tensor:
        """Where each sequence starts in a packed tensor of `row` elements per token."""
        return (starts * row).view(batch + 1, 1, 1, 1)

    pack = {SEQ_Q: lengths_q.view(batch, 1, 1, 1), SEQ_K: lengths_k.view(batch, 1, 1, 1),
            OFFSET_Q: offsets(read_q, h_q * d), OFFSET_K: offsets(read_k, h_k * d),
            OFFSET_V: offsets(read_k, h_k * d_v)}
    if not backward:
        pack[OFFSET_O] = offsets(write_q, h_q * d_v)
        return pack
    pack[OFFSET_O] = offsets(read_q, h_q * d_v)
    same_q, same_k = read_q is write_q, read_k is write_k
    pack[OFFSET_DO] = pack[OFFSET_O] if same_q else offsets(write_q, h_q * d_v)
    pack[OFFSET_DQ] = pack[OFFSET_Q] if same_q else offsets(write_q, h_q * d)
    pack[OFFSET_DK] = pack[OFFSET_K] if same_k else offsets(write_k, h_k * d)
    pack[OFFSET_DV] = pack[OFFSET_V] if same_k else offsets(write_k, h_k * d_v)
    return pack


def _varlen_outputs(q: Tensor, v: Tensor, cu_seq_q: Tensor, max_q: int,
                    compute_lse: bool) -> "tuple[Tensor, Tensor]":
    out = _rows(q, (q.shape[0], q.shape[1], v.shape[2]), _spare_rows(int(cu_seq_q.shape[0]) - 1))
    shape = ((sequences(cu_seq_q.shape[0] - 1), q.shape[1], bucket(max_q)) if compute_lse
             else (0,))
    return out, q.new_empty(shape, dtype=torch.float32)


def _varlen(q: Tensor, k: Tensor, v: Tensor, cu_seq_q: Tensor, cu_seq_k: Tensor, max_q: int,
            max_k: int, is_causal: bool, scale: float,
            compute_lse: bool) -> "tuple[Tensor, Tensor]":
    """(out, stats): out packed like query; stats the log-sum-exp per (sequence, head, position)
    float32 [sequences(N), h_q, bucket(max_q)] (positions past a sequence's length, and
    sequences past N, undefined) when compute_lse, else empty."""
    _check_varlen(q, k, v, cu_seq_q, cu_seq_k, max_q, max_k, scale)
    out, stats = _varlen_outputs(q, v, cu_seq_q, max_q, compute_lse)
    if out.numel() == 0:
        return out, stats
    heads = (int(q.shape[1]), int(k.shape[1]), int(q.shape[2]), int(v.shape[2]))
    topology = (q.dtype, is_causal, scale, compute_lse)
    batch, length_q, length_k = _serving("varlen_attn.forward", topology, q, heads,
                                         sequences(int(cu_seq_q.shape[0]) - 1), bucket(max_q),
                                         bucket(max_k))
    pack = {Q: q, K: k, V: v, O: out, **_varlen_pack(q, k, v, cu_seq_q, cu_seq_k, batch, False)}
    served = stats
    if compute_lse:  # a larger graph's log-sum-exp, copied into the batch's own after
        if (batch, length_q) != (stats.shape[0], stats.shape[2]):
            served = stats.new_empty((batch, stats.shape[1], length_q))
        pack[STATS] = served.unsqueeze(-1)
    runtime.run("varlen_attn.forward", "attention", q, topology,
                (batch, length_q, length_k, heads),
                lambda g: _describe_varlen(g, q, k, v, out, batch, length_q, length_k, is_causal,
                                           scale, compute_lse), pack)
    if served is not stats:
        stats.copy_(served[:stats.shape[0], :, :stats.shape[2]])
    return out, stats


def _varlen_fake(q: Tensor, k: Tensor, v: Tensor, cu_seq_q: Tensor, cu_seq_k: Tensor, max_q: int,
                 max_k: int, is_causal: bool, scale: float,
                 compute_lse: bool) -> "tuple[Tensor, Tensor]":
    _check_varlen(q, k, v, cu_seq_q, cu_seq_k, max_q, max_k, scale)
    return _varlen_outputs(q, v, cu_seq_q, max_q, compute_lse)


def _check_varlen_backward(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor,
                           stats: Tensor, cu_seq_q: Tensor, cu_seq_k: Tensor, max_q: int,
                           max_k: int, scale: float) -> None:
    _check_varlen(q, k, v, cu_seq_q, cu_seq_k, max_q, max_k, scale)
    expected = (q.shape[0], q.shape[1], v.shape[2])
    for name, t in (("out", out), ("grad", grad)):
        checks.same_device(VARLEN, name, t, "query", q)
        checks.same_dtype(VARLEN, name, t, "query", q)
        checks.shape_is(VARLEN, name, t, expected, "(query tokens, query heads, value dim)")
        checks.contiguous(VARLEN, name, t)
    checks.same_device(VARLEN, "stats", stats, "query", q)
    checks.dtype_in(VARLEN, "stats", stats, (torch.float32,), "the forward's log-sum-exp")
    checks.shape_is(VARLEN, "stats", stats,
                    (sequences(cu_seq_q.shape[0] - 1), q.shape[1], bucket(max_q)),
                    "the forward's log-sum-exp: bucket of the count of sequences, query heads, "
                    "bucket of max_q")
    checks.contiguous(VARLEN, "stats", stats)


def _varlen_backward(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, stats: Tensor,
                     cu_seq_q: Tensor, cu_seq_k: Tensor, max_q: int, max_k: int,
                     is_causal: bool, scale: float) -> "tuple[Tensor, Tensor, Tensor]":
    _check_varlen_backward(grad, q, k, v, out, stats, cu_seq_q, cu_seq_k, max_q, max_k, scale)
    count = int(cu_seq_q.shape[0]) - 1
    spare = _spare_rows(count)
    dq, dk, dv = (_rows(t, t.shape, spare) for t in (q, k, v))
    if q.numel() == 0 or out.numel() == 0:
        return dq.zero_(), dk.zero_(), dv.zero_()
    if spare:  # the spares read the zero row past the end of the incoming gradient
        grad = torch.cat((grad, grad.new_zeros((1, *grad.shape[1:]))))
    heads = (int(q.shape[1]), int(k.shape[1]), int(q.shape[2]), int(v.shape[2]))
    topology = (q.dtype, is_causal, scale)
    batch, length_q, length_k = _serving("varlen_attn.backward", topology, q, heads,
                                         sequences(count), bucket(max_q), bucket(max_k))
    if (batch, length_q) != (stats.shape[0], stats.shape[2]):  # in a larger graph's layout
        served = stats.new_empty((batch, stats.shape[1], length_q))
        served[:stats.shape[0], :, :stats.shape[2]].copy_(stats)
        stats = served
    dsum = q.new_empty((batch, q.shape[1], length_q, 1), dtype=torch.float32)
    runtime.run("varlen_attn.backward", "attention", q, topology,
                (batch, length_q, length_k, heads),
                lambda g: _describe_varlen_backward(g, q, k, v, out, batch, length_q, length_k,
                                                    is_causal, scale),
                {Q: q, K: k, V: v, O: out, DO: grad, STATS: stats.unsqueeze(-1), DQ: dq, DK: dk,
                 DV: dv, DSUM: dsum, **_varlen_pack(q, k, v, cu_seq_q, cu_seq_k, batch, True)})
    return dq, dk, dv


def _varlen_backward_fake(grad: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor,
                          stats: Tensor, cu_seq_q: Tensor, cu_seq_k: Tensor, max_q: int,
                          max_k: int, is_causal: bool,
                          scale: float) -> "tuple[Tensor, Tensor, Tensor]":
    _check_varlen_backward(grad, q, k, v, out, stats, cu_seq_q, cu_seq_k, max_q, max_k, scale)
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _varlen_setup(ctx: Any, inputs: "tuple[Any, ...]", output: "tuple[Tensor, Tensor]") -> None:
    q, k, v, cu_seq_q, cu_seq_k, max_q, max_k, is_causal, scale, compute_lse = inputs
    out, stats = output
    ctx.max_q, ctx.max_k, ctx.is_causal, ctx.scale = max_q, max_k, is_causal, scale
    ctx.compute_lse = compute_lse
    ctx.save_for_backward(q, k, v, cu_seq_q, cu_seq_k, out, stats)
    ctx.mark_non_differentiable(stats)


def _varlen_autograd(ctx: Any, grad_out: Tensor, _grad_stats: Tensor) -> "tuple[Any, ...]":
    q, k, v, cu_seq_q, cu_seq_k, out, stats = ctx.saved_tensors
    if not ctx.compute_lse:  # called with compute_lse=False: the forward again, saving it
        out, stats = runtime.ops.varlen_attn(q, k, v, cu_seq_q, cu_seq_k, ctx.max_q,
                                                    ctx.max_k, ctx.is_causal, ctx.scale, True)
    dq, dk, dv = runtime.ops.varlen_attn_backward(
        grad_out.contiguous(), q, k, v, out, stats, cu_seq_q, cu_seq_k, ctx.max_q, ctx.max_k,
        ctx.is_causal, ctx.scale)
    needs = ctx.needs_input_grad
    return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None,
            None, None, None, None, None, None, None)


runtime.operator("sdpa", _sdpa, _sdpa_fake, _sdpa_autograd, _sdpa_setup)
runtime.operator("sdpa_backward", _sdpa_backward, _sdpa_backward_fake)
runtime.operator("varlen_attn", _varlen, _varlen_fake, _varlen_autograd, _varlen_setup)
runtime.operator("varlen_attn_backward", _varlen_backward, _varlen_backward_fake)


def _half(*tensors: Tensor) -> "tuple[Tensor, ...]":
    """Under torch.autocast('cuda'), the tensors in autocast's dtype (torch's attention is on
    autocast's lower-precision list)."""
    if torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        return tuple(t.to(dtype) for t in tensors)
    return tensors


def _needs_grad(*tensors: Tensor) -> bool:
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _default_scale(op: str, q: Tensor, scale: Optional[float]) -> float:
    if scale is not None:
        return float(scale)
    if q.dim() < 1 or q.shape[-1] == 0:
        raise ValueError(f"{op}: query has shape {checks.shape(q)}: no head dim for the scale")
    return 1.0 / math.sqrt(q.shape[-1])


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Optional[Tensor] = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """torch.nn.functional.scaled_dot_product_attention on CUDA through cuDNN: query [b, h_q,
    s_q, d], key [b, h_k, s_kv, d], value [b, h_k, s_kv, d_v], bfloat16 or float16, the head dim
    innermost (any other strides are read in place); is_causal masks key j > query i (top-left);
    scale None is 1 / sqrt(d); enable_gqa=True lets h_q be a multiple of h_k. Differentiable in
    query, key and value. attn_mask and dropout_p > 0 raise ValueError (not served yet)."""
    if attn_mask is not None:
        raise ValueError(
            f"{SDPA}: attn_mask is not served yet (an additive or boolean mask needs cuDNN's "
            "attention bias, not wired in dnngraph.torch); pass is_causal=True for a causal "
            "mask, or varlen_attn for batches of sequences of other lengths")
    if dropout_p != 0.0:
        raise ValueError(
            f"{SDPA}: dropout_p is {dropout_p}; attention dropout is not served by "
            "dnngraph.torch yet: pass dropout_p=0.0")
    query, key, value = _half(query, key, value)
    if query.dim() == 4 and key.dim() == 4 and query.shape[1] != key.shape[1] and not enable_gqa:
        _check_heads(SDPA, query, key, value, 1, 2, enable_gqa=False)
    resolved = _default_scale(SDPA, query, scale)
    out, _ = runtime.ops.sdpa(query, key, value, bool(is_causal), resolved,
                                     _needs_grad(query, key, value))
    return out


def _token_lse(stats: Tensor, cu_seq_q: Tensor, total: int) -> Tensor:
    """The padded [sequences(N), h, L] log-sum-exp as torch's varlen_attn returns it, (h, T_q):
    token t of sequence n at position p reads stats[n, :, p]."""
    tokens = torch.arange(total, device=stats.device)
    starts = cu_seq_q.long()
    sequence = torch.searchsorted(starts[1:], tokens, right=True)
    return stats[sequence, :, tokens - starts[sequence]].t()


def varlen_attn(query: Tensor, key: Tensor, value: Tensor, cu_seq_q: Tensor, cu_seq_k: Tensor,
                max_q: int, max_k: int, *, return_aux: Any = None, scale: Optional[float] = None,
                window_size: "tuple[int, int]" = (-1, -1)) -> Any:
    """torch.nn.attention.varlen.varlen_attn on CUDA through cuDNN: packed query [T_q, h_q, d],
    key [T_k, h_k, d], value [T_k, h_k, d_v] (h_q a multiple of h_k), cu_seq_q / cu_seq_k int32
    (N + 1,) prefix sums of the lengths, max_q / max_k the longest lengths. window_size (-1, -1)
    is full attention, (-1, 0) causal (bottom-right diagonal per sequence). With return_aux
    having lse=True (torch.nn.attention.varlen.AuxRequest(lse=True)) returns (out, lse), lse
    float32 (h_q, T_q). Differentiable in query, key and value."""
    window = tuple(window_size)
    if window not in ((-1, -1), (-1, 0)):
        raise ValueError(
            f"{VARLEN}: window_size {window} is a sliding window, not served yet: it takes "
            "(-1, -1) (full attention) or (-1, 0) (causal)")
    query, key, value = _half(query, key, value)
    resolved = _default_scale(VARLEN, query, scale)
    want_lse = bool(getattr(return_aux, "lse", False)) if return_aux is not None else False
    compute = _needs_grad(query, key, value) or want_lse
    out, stats = runtime.ops.varlen_attn(query, key, value, cu_seq_q, cu_seq_k,
                                                int(max_q), int(max_k), window == (-1, 0),
                                                resolved, compute)
    if want_lse:
        return out, _token_lse(stats, cu_seq_q, query.shape[0])
    return out
