"""On a CUDA device: Graph.sdpa built from Python and compared with torch's
scaled_dot_product_attention (computed in Float from the same Half/BFloat16 inputs) and with the
log-sum-exp of the masked, scaled scores for Stats. Cases: Half causal training; BFloat16
grouped-query attention with a padding mask and a bottom-right causal mask (valid rows only: O's
rows past seq_len_q are undefined). Odd sequence lengths. A cuDNN with no engine for a case
fails the test (the forward is measured exact on cuDNN 9.19 and 9.27)."""

import math

import dnngraph
import pytest
from dnngraph import DataType, HeuristicMode

# Max |O - reference| measured by tests/gpu/sdpa_test.cpp on the H200 was 3.6e-4 (Half) and
# 3.0e-3 (BFloat16); these bounds leave room for other shapes.
TOLERANCE = {DataType.Half: 2e-3, DataType.BFloat16: 1.6e-2}


def torch_type(torch, t):
    return torch.float16 if t is DataType.Half else torch.bfloat16


def keep_mask(torch, s_q, s_kv, b, causal, seq_q=None, seq_kv=None):
    """[b, 1, s_q, s_kv] booleans: True where a key is kept."""
    rows = torch.arange(s_q, device="cuda").view(1, 1, s_q, 1)
    cols = torch.arange(s_kv, device="cuda").view(1, 1, 1, s_kv)
    keep = torch.ones(b, 1, s_q, s_kv, dtype=torch.bool, device="cuda")
    lq = (seq_q if seq_q is not None else torch.full((b,), s_q, device="cuda")).view(b, 1, 1, 1)
    lkv = (seq_kv if seq_kv is not None else torch.full((b,), s_kv, device="cuda")).view(b, 1, 1, 1)
    if seq_q is not None:
        keep &= (rows < lq) & (cols < lkv)
    if causal == "top_left":
        keep &= cols <= rows
    elif causal == "bottom_right":
        keep &= cols <= rows + lkv - lq
    return keep


def run_case(torch, io, b, h_q, h_k, s_q, s_kv, d, causal, padding, seed):
    tt = torch_type(torch, io)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q = (torch.rand(b, h_q, s_q, d, device="cuda", generator=gen) * 2 - 1).to(tt)
    k = (torch.rand(b, h_k, s_kv, d, device="cuda", generator=gen) * 2 - 1).to(tt)
    v = (torch.rand(b, h_k, s_kv, d, device="cuda", generator=gen) * 2 - 1).to(tt)
    scale = 1.0 / math.sqrt(d)

    g = dnngraph.Graph(io_data_type=io)
    tq = g.tensor(name="Q", uid=1, dim=list(q.shape))
    tk = g.tensor(name="K", uid=2, dim=list(k.shape))
    tv = g.tensor(name="V", uid=3, dim=list(v.shape))
    options = dict(attn_scale=scale, generate_stats=True,
                   causal_mask=causal == "top_left",
                   causal_mask_bottom_right=causal == "bottom_right")
    pack = {1: q, 2: k, 3: v}
    seq_q = seq_kv = None
    if padding:
        seq_q = torch.tensor([s_q - 3 * i for i in range(b)], dtype=torch.int32, device="cuda")
        seq_kv = torch.tensor([s_kv - 5 * i for i in range(b)], dtype=torch.int32, device="cuda")
        lq = g.tensor(name="seq_q", uid=6, dim=[b, 1, 1, 1], data_type=DataType.Int32)
        lkv = g.tensor(name="seq_kv", uid=7, dim=[b, 1, 1, 1], data_type=DataType.Int32)
        options.update(padding_mask=True, seq_len_q=lq, seq_len_kv=lkv)
        pack.update({6: seq_q.view(b, 1, 1, 1), 7: seq_kv.view(b, 1, 1, 1)})
    o_t, stats_t = g.sdpa(tq, tk, tv, name="attn", **options)
    o_t.set_output(True).set_uid(4)
    stats_t.set_output(True).set_uid(5)
    handle = dnngraph.Handle()
    g.build(handle, [HeuristicMode.A, HeuristicMode.Fallback])

    o = torch.full((b, h_q, s_q, d), float("nan"), dtype=tt, device="cuda")
    stats = torch.full((b, h_q, s_q, 1), float("nan"), dtype=torch.float32, device="cuda")
    pack.update({4: o, 5: stats})
    size = g.get_workspace_size()
    ws = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
    g.execute(handle, pack, ws)
    torch.cuda.synchronize()

    keep = keep_mask(torch, s_q, s_kv, b, causal, seq_q, seq_kv)
    group = h_q // h_k
    kf = k.float().repeat_interleave(group, dim=1)
    vf = v.float().repeat_interleave(group, dim=1)
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float(), kf, vf, attn_mask=keep, scale=scale)
    scores = torch.matmul(q.float(), kf.transpose(2, 3)) * scale
    expected_stats = torch.logsumexp(scores.masked_fill(~keep, float("-inf")), dim=-1,
                                     keepdim=True)
    valid = keep.any(dim=-1, keepdim=True).expand(b, h_q, s_q, 1)  # rows with a kept key
    o_err = (o.float() - expected).abs()[valid.expand(-1, -1, -1, d)].max().item()
    stats_err = (stats - expected_stats).abs()[valid].max().item()
    print(f"\nsdpa {io} causal={causal} padding={padding}: max |O - torch| {o_err:.2e}, "
          f"max |Stats - torch| {stats_err:.2e}; {g.plan_info().describe()}")
    assert o_err <= TOLERANCE[io]
    assert stats_err <= 1e-4


def test_half_causal_training_matches_torch(cuda):
    run_case(cuda, DataType.Half, b=2, h_q=4, h_k=4, s_q=37, s_kv=37, d=64,
             causal="top_left", padding=False, seed=11)


def test_bfloat16_gqa_padding_bottom_right_matches_torch(cuda):
    run_case(cuda, DataType.BFloat16, b=3, h_q=8, h_k=2, s_q=29, s_kv=45, d=128,
             causal="bottom_right", padding=True, seed=12)


def test_half_no_mask_matches_torch(cuda):
    run_case(cuda, DataType.Half, b=1, h_q=2, h_k=1, s_q=19, s_kv=70, d=64,
             causal=None, padding=False, seed=13)


def test_packed_variable_length_batch_matches_torch_per_sequence(cuda):
    """THD: three sequences of 37, 5 and 64 tokens packed token after token ([T, h, d] torch
    tensors, no padding in memory), ragged offsets and a padding mask; each sequence's O against
    torch's SDPA of that sequence alone (causal, Half, d 64)."""
    torch = cuda
    lengths, h, d, s_max = [37, 5, 64], 4, 64, 64
    b, total = len(lengths), sum(lengths)
    gen = torch.Generator(device="cuda").manual_seed(21)
    q, k, v = ((torch.rand(total, h, d, device="cuda", generator=gen) * 2 - 1).half()
               for _ in range(3))
    starts = [0]
    for n in lengths:
        starts.append(starts[-1] + n)
    g = dnngraph.Graph(io_data_type=DataType.Half)
    offsets = g.tensor(name="offsets", uid=8, dim=[b + 1, 1, 1, 1], data_type=DataType.Int32)
    token_major = [s_max * h * d, d, h * d, 1]
    tq, tk, tv = (g.tensor(name=n, uid=i + 1, dim=[b, h, s_max, d], stride=token_major)
                  .set_ragged_offset(offsets) for i, n in enumerate("QKV"))
    lq = g.tensor(name="seq_q", uid=6, dim=[b, 1, 1, 1], data_type=DataType.Int32)
    lkv = g.tensor(name="seq_kv", uid=7, dim=[b, 1, 1, 1], data_type=DataType.Int32)
    o_t, _ = g.sdpa(tq, tk, tv, name="attn", attn_scale=1 / math.sqrt(d), causal_mask=True,
                    padding_mask=True, seq_len_q=lq, seq_len_kv=lkv)
    o_t.set_output(True).set_uid(4).set_stride(token_major).set_ragged_offset(offsets)
    handle = dnngraph.Handle()
    g.build(handle, [HeuristicMode.A, HeuristicMode.Fallback])
    o = torch.full((total, h, d), float("nan"), dtype=torch.float16, device="cuda")
    seq = torch.tensor(lengths, dtype=torch.int32, device="cuda").view(b, 1, 1, 1)
    offset_values = torch.tensor([x * h * d for x in starts], dtype=torch.int32,
                                 device="cuda").view(b + 1, 1, 1, 1)
    size = g.get_workspace_size()
    ws = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
    g.execute(handle, {1: q, 2: k, 3: v, 4: o, 6: seq, 7: seq, 8: offset_values}, ws)
    torch.cuda.synchronize()
    worst = 0.0
    for i, n in enumerate(lengths):
        part = slice(starts[i], starts[i + 1])
        one = [x[part].float().transpose(0, 1).unsqueeze(0) for x in (q, k, v)]  # [1, h, n, d]
        expected = torch.nn.functional.scaled_dot_product_attention(
            *one, is_causal=True, scale=1 / math.sqrt(d))
        got = o[part].float().transpose(0, 1).unsqueeze(0)
        worst = max(worst, (got - expected).abs().max().item())
    print(f"\nsdpa THD packed {lengths}: max |O - torch per sequence| {worst:.2e}; "
          f"{g.plan_info().describe()}")
    assert worst <= TOLERANCE[DataType.Half]


# Session 5 found dQ and dK far from torch autograd here (dV right) while the C++ test of the same
# shape passed: torch's SDPA output `o` is a transposed view, and it went to execute() as if
# packed, so D = rowsum(dO * O) read O in the wrong order. execute() now refuses such a buffer
# (test_gpu_buffers.py); O goes over contiguous.
def test_half_causal_gqa_backward_matches_torch_autograd(cuda):
    """sdpa_backward from torch's own O and log-sum-exp (in Float, O rounded to Half), against
    torch autograd through scaled_dot_product_attention in Float."""
    torch = cuda
    b, h_q, h_k, s, d = 2, 4, 2, 33, 64
    scale = 1.0 / math.sqrt(d)
    gen = torch.Generator(device="cuda").manual_seed(21)
    q, k, v, d_o = ((torch.rand(*shape, device="cuda", generator=gen) * 2 - 1).half()
                    for shape in ([b, h_q, s, d], [b, h_k, s, d], [b, h_k, s, d], [b, h_q, s, d]))
    group = h_q // h_k
    qf = q.float().requires_grad_()
    kf = k.float().requires_grad_()
    vf = v.float().requires_grad_()
    o = torch.nn.functional.scaled_dot_product_attention(
        qf, kf.repeat_interleave(group, dim=1), vf.repeat_interleave(group, dim=1),
        is_causal=True, scale=scale)
    o.backward(d_o.float())
    keep = keep_mask(torch, s, s, b, "top_left")
    scores = torch.matmul(q.float(), k.float().repeat_interleave(group, dim=1).transpose(2, 3))
    lse = torch.logsumexp((scores * scale).masked_fill(~keep, float("-inf")), dim=-1,
                          keepdim=True).contiguous()

    g = dnngraph.Graph(io_data_type=DataType.Half)
    tensors = [g.tensor(name=n, uid=i + 1, dim=list(t.shape))
               for i, (n, t) in enumerate(zip(["Q", "K", "V", "O", "dO"], [q, k, v, q, d_o]))]
    stats = g.tensor(name="Stats", uid=6, dim=[b, h_q, s, 1], data_type=DataType.Float)
    outputs = g.sdpa_backward(*tensors, stats, attn_scale=scale, causal_mask=True, name="bwd")
    for uid, t in enumerate(outputs, start=10):
        t.set_output(True).set_uid(uid)
    handle = dnngraph.Handle()
    g.build(handle, [HeuristicMode.A, HeuristicMode.Fallback])
    dq, dk, dv = (torch.full_like(t, float("nan")) for t in (q, k, v))
    d_sum = torch.full((b, h_q, s, 1), float("nan"), device="cuda")
    size = g.get_workspace_size()
    ws = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
    if not o.is_contiguous():  # the view as torch gives it is refused, not misread
        with pytest.raises(dnngraph.Error) as caught:
            g.execute(handle, {1: q, 2: k, 3: v, 4: o.detach().half(), 5: d_o, 6: lse,
                               10: dq, 11: dk, 12: dv, 13: d_sum}, ws)
        assert caught.value.code is dnngraph.ErrorCode.ShapeMismatch
        print(f"\nO as torch gives it: {caught.value.message[:160]}")
    g.execute(handle, {1: q, 2: k, 3: v, 4: o.detach().half().contiguous(), 5: d_o, 6: lse,
                       10: dq, 11: dk, 12: dv, 13: d_sum}, ws)
    torch.cuda.synchronize()
    errors = {}
    for name, got, want in (("dQ", dq, qf.grad), ("dK", dk, kf.grad), ("dV", dv, vf.grad)):
        errors[name] = (got.float() - want).abs().max().item() / want.abs().max().item()
    print(f"\nsdpa_backward Half causal GQA: max error / max |grad| {errors}; "
          f"{g.plan_info().describe()}")
    # Half roundings of O, P^T, dS^T, the per-head gradients and the results: a few 2^-11.
    assert all(e <= 8 / 2048 for e in errors.values()), errors
