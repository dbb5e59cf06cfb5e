"""Whether the loaded cuDNN's packed attention takes zero-length sequences, which
dnngraph.torch.varlen_attn adds to pad a batch's count of sequences to its bucket (from cuDNN
9.25 on: _attention.ZERO_LENGTH_FROM, the version cudnn-frontend's tests gate them at).

For each case, varlen_attn forward and backward (bf16, causal and not, GQA) run twice: on a
graph of exactly N sequences, and on one padded with zero-length sequences to the next power of
two (the gate forced open). One JSON line per case: the largest difference of out, lse, dq, dk
and dv between the two, and whether any is NaN. A cuDNN that takes them gives 0 (the same
kernel on the same rows) or rounding-level differences.

Usage: python3 python/bench/varlen_zero_length_probe.py
"""

import json

import torch
from torch.nn.attention.varlen import AuxRequest

import dnngraph
import dnngraph.torch as dt
from dnngraph.torch import _attention

CASES = [  # lengths, h_q, h_k, d, causal
    ([37, 5, 100], 8, 8, 64, True),
    ([130, 17, 64, 9, 200], 8, 2, 128, True),
    ([20, 50, 3], 4, 4, 64, False),
    ([1024, 300, 700], 12, 12, 64, True),
]


def run(lengths, h_q, h_k, d, causal, padded):
    _attention.ZERO_LENGTH_FROM = 0 if padded else 10**9
    gen = torch.Generator().manual_seed(sum(lengths))
    total = sum(lengths)
    q, k, v, dout = (torch.randn(total, h, d, generator=gen).bfloat16().cuda()
                     for h in (h_q, h_k, h_k, h_q))
    for t in (q, k, v):
        t.requires_grad_(True)
    cu = torch.tensor([0] + lengths).cumsum(0).to(torch.int32).cuda()
    window = (-1, 0) if causal else (-1, -1)
    out, lse = dt.varlen_attn(q, k, v, cu, cu, max(lengths), max(lengths),
                              return_aux=AuxRequest(lse=True), window_size=window)
    out.backward(dout)
    torch.cuda.synchronize()
    return {"out": out.detach(), "lse": lse.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad}


def main():
    loaded = dnngraph.cudnn_runtime_version()
    gate = _attention.ZERO_LENGTH_FROM
    print(f"# cuDNN {dnngraph.cudnn_version_string(loaded)}, {torch.cuda.get_device_name()}; "
          f"dnngraph pads from {gate}")
    for lengths, h_q, h_k, d, causal in CASES:
        row = {"lengths": lengths, "heads": [h_q, h_k], "d": d, "causal": causal,
               "padded_to": 1 << (len(lengths) - 1).bit_length()}
        try:
            exact = run(lengths, h_q, h_k, d, causal, padded=False)
            padded = run(lengths, h_q, h_k, d, causal, padded=True)
        except Exception as e:  # noqa: BLE001 - a probe reports every failure
            row["error"] = str(e).splitlines()[0][:200]
            print(json.dumps(row), flush=True)
            continue
        for name in exact:
            a, b = exact[name].float(), padded[name].float()
            row[name] = {"max_diff": (a - b).abs().nan_to_num(float("inf")).max().item(),
                         "nan": bool(b.isnan().any().item())}
        print(json.dumps(row), flush=True)
    _attention.ZERO_LENGTH_FROM = gate


if __name__ == "__main__":
    main()
