"""Whether the loaded cuDNN's packed attention takes the spare sequences that
dnngraph.torch.varlen_attn adds to pad a batch's count of sequences to its bucket: zero-length
ones (from cuDNN 9.25 on: _attention.ZERO_LENGTH_FROM, the version cudnn-frontend's tests gate
them at) and one-token ones (below it: _attention.one_token_spares).

For each case, varlen_attn forward and backward (bf16, causal and not, GQA) run on a graph of
exactly N sequences, then on one padded to the next power of two with each kind of spare (forced,
whatever the loaded version). One JSON line per case and kind: the largest difference of out,
lse, dq, dk and dv from the unpadded run, and whether any is NaN. A cuDNN that takes them gives
0 (the same kernel on the same rows) or rounding-level differences.

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


def run(lengths, h_q, h_k, d, causal, spares):
    _attention.sequences = (lambda count: count) if spares is None else PADDED
    _attention.one_token_spares = lambda: spares == "one-token"
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


PADDED, ONE_TOKEN = _attention.sequences, _attention.one_token_spares


def main():
    loaded = dnngraph.cudnn_runtime_version()
    print(f"# cuDNN {dnngraph.cudnn_version_string(loaded)}, {torch.cuda.get_device_name()}; "
          f"dnngraph's spares: {'one-token' if ONE_TOKEN() else 'zero-length'}")
    for lengths, h_q, h_k, d, causal in CASES:
        try:
            exact = run(lengths, h_q, h_k, d, causal, None)
        except Exception as e:  # noqa: BLE001 - a probe reports every failure
            print(json.dumps({"lengths": lengths, "error": str(e).splitlines()[0][:200]}))
            continue
        for spares in ("zero-length", "one-token"):
            row = {"lengths": lengths, "heads": [h_q, h_k], "d": d, "causal": causal,
                   "spares": spares, "padded_to": PADDED(len(lengths))}
            try:
                padded = run(lengths, h_q, h_k, d, causal, spares)
            except Exception as e:  # noqa: BLE001 - a probe reports every failure
                row["error"] = str(e).splitlines()[0][:200]
                print(json.dumps(row), flush=True)
                continue
            for name in exact:
                a, b = exact[name].float(), padded[name].float()
                row[name] = {"max_diff": (a - b).abs().nan_to_num(float("inf")).max().item(),
                             "nan": bool(b.isnan().any().item())}
            print(json.dumps(row), flush=True)
    _attention.sequences, _attention.one_token_spares = PADDED, ONE_TOKEN


if __name__ == "__main__":
    main()
