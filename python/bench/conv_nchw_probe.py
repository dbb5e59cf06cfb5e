"""Which engine configs compute channels-first (NCHW) convolutions wrong on the loaded cuDNN.

For each case, each of conv_fprop, conv_dgrad and conv_wgrad is built as a graph of that node
alone (bf16 I/O, float32 compute) in NCHW and in NHWC, under heuristics A and Fallback; every
candidate plan the heuristics give is built in turn (Graph.build_plan_at), run, and compared
with torch's float64 convolution on the CPU. One JSON line per candidate: engine id, knobs,
workspace, the max error against the tolerance, and whether it is wrong. A summary at the end
names the wrong ones: what a known-issues entry (detail/cudnn/known_issues.cpp) needs.

Found through dnngraph.torch.conv2d on cuDNN 9.28.1's runtime-compiled libraries (session 15):
NCHW conv_dgrad and conv_wgrad of x [1, 16, 9, 9], w [24, 16, 3, 3], padding 1 returned wrong
numbers (docs/known-issues.md, engine4-channels-first-conv).

Usage: python3 python/bench/conv_nchw_probe.py [--max-candidates N]
"""

import argparse
import json

import torch
import torch.nn.functional as F

import dnngraph
from dnngraph import DataType, HeuristicMode, channels_last_strides, packed_strides

CASES = [  # (x dims, w dims, padding, stride)
    ((1, 16, 9, 9), (24, 16, 3, 3), 1, 1),
    ((2, 16, 9, 9), (24, 16, 3, 3), 1, 1),
    ((4, 32, 17, 13), (48, 32, 3, 3), 1, 2),
    ((3, 5, 13, 11), (7, 5, 3, 5), 0, 1),
    ((8, 64, 28, 28), (64, 64, 3, 3), 1, 1),
]


def strides(dims, nhwc):
    return channels_last_strides(list(dims)) if nhwc else packed_strides(list(dims))


def layout(t, nhwc):
    return t.contiguous(memory_format=torch.channels_last) if nhwc else t.contiguous()


def describe(g, kind, x_dims, w_dims, y_dims, nhwc, padding, stride):
    options = {"padding": [padding] * 2, "stride": [stride] * 2}
    if kind == "fprop":
        x = g.tensor(name="x", uid=1, dim=list(x_dims), stride=strides(x_dims, nhwc))
        w = g.tensor(name="w", uid=2, dim=list(w_dims), stride=strides(w_dims, nhwc))
        g.conv_fprop(x, w, **options).set_output(True).set_uid(3).set_stride(
            strides(y_dims, nhwc))
    elif kind == "dgrad":
        dy = g.tensor(name="dy", uid=1, dim=list(y_dims), stride=strides(y_dims, nhwc))
        w = g.tensor(name="w", uid=2, dim=list(w_dims), stride=strides(w_dims, nhwc))
        g.conv_dgrad(dy, w, **options).set_output(True).set_uid(3).set_dim(
            list(x_dims)).set_stride(strides(x_dims, nhwc))
    else:
        x = g.tensor(name="x", uid=1, dim=list(x_dims), stride=strides(x_dims, nhwc))
        dy = g.tensor(name="dy", uid=2, dim=list(y_dims), stride=strides(y_dims, nhwc))
        g.conv_wgrad(x, dy, **options).set_output(True).set_uid(3).set_dim(
            list(w_dims)).set_stride(strides(w_dims, nhwc))


def references(x, w, dy, padding, stride):
    """float64 CPU results: y, dx, dw."""
    xd = x.double().cpu().requires_grad_(True)
    wd = w.double().cpu().requires_grad_(True)
    y = F.conv2d(xd, wd, padding=padding, stride=stride)
    y.backward(dy.double().cpu())
    return y.detach(), xd.grad, wd.grad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-candidates", type=int, default=16)
    args = parser.parse_args()
    loaded = dnngraph.cudnn_version_string(dnngraph.cudnn_runtime_version())
    print(f"# cuDNN {loaded}, {torch.cuda.get_device_name()}")
    handle = dnngraph.Handle()
    handle.set_stream(torch.cuda.current_stream().cuda_stream)
    wrong = []
    for x_dims, w_dims, padding, stride in CASES:
        gen = torch.Generator().manual_seed(sum(x_dims))
        x = torch.randn(*x_dims, generator=gen).bfloat16().cuda()
        w = (torch.randn(*w_dims, generator=gen) * 0.2).bfloat16().cuda()
        y_dims = F.conv2d(x.to("meta"), w.to("meta"), padding=padding, stride=stride).shape
        dy = torch.randn(*y_dims, generator=gen).bfloat16().cuda()
        want = dict(zip(("fprop", "dgrad", "wgrad"), references(x, w, dy, padding, stride)))
        for kind in ("fprop", "dgrad", "wgrad"):
            for nhwc in (False, True):
                inputs = {"fprop": (x, w), "dgrad": (dy, w), "wgrad": (x, dy)}[kind]
                out_like = {"fprop": dy, "dgrad": x, "wgrad": w}[kind]
                for mode in (HeuristicMode.A, HeuristicMode.Fallback):
                    g = dnngraph.Graph(io_data_type=DataType.BFloat16,
                                       compute_data_type=DataType.Float)
                    describe(g, kind, x_dims, w_dims, y_dims, nhwc, padding, stride)
                    case = {"x": list(x_dims), "w": list(w_dims), "padding": padding,
                            "stride": stride, "node": kind, "layout": "NHWC" if nhwc else "NCHW",
                            "mode": mode.name}
                    try:
                        g.build(handle, [mode])
                    except dnngraph.Error as e:
                        print(json.dumps({**case, "build": str(e).splitlines()[0][:160]}))
                        continue
                    reference = want[kind]
                    scale = reference.abs().max().item()
                    tolerance = 4 * 2.0**-8 * scale  # a few bf16 roundings of the largest value
                    for index in range(min(g.plan_count(), args.max_candidates)):
                        try:
                            g.build_plan_at(handle, index)
                        except dnngraph.Error as e:
                            print(json.dumps({**case, "candidate": index,
                                              "build": str(e).splitlines()[0][:160]}))
                            continue
                        info = g.plan_info()
                        out = layout(torch.full_like(out_like, float("nan")), nhwc)
                        ws = g.get_workspace_size()
                        pack = {1: layout(inputs[0], nhwc), 2: layout(inputs[1], nhwc), 3: out}
                        g.execute(handle, pack, torch.empty(ws, dtype=torch.uint8, device="cuda")
                                  if ws else None)
                        torch.cuda.synchronize()
                        got = out.double().cpu()
                        error = (got - reference).abs().nan_to_num(float("inf")).max().item()
                        row = {**case, "candidate": index, "engine": info.engine_id,
                               "knobs": info.knobs, "workspace": ws, "max_error": error,
                               "tolerance": tolerance, "wrong": error > tolerance}
                        print(json.dumps(row), flush=True)
                        if row["wrong"]:
                            wrong.append(row)
    print(f"# {len(wrong)} wrong candidate runs on cuDNN {loaded}")
    for row in wrong:
        print(f"#   {row['node']} {row['layout']} x {row['x']} w {row['w']} pad {row['padding']} "
              f"stride {row['stride']} {row['mode']}: engine {row['engine']} knobs {row['knobs']} "
              f"workspace {row['workspace']}: max error {row['max_error']:.3g} "
              f"(tolerance {row['tolerance']:.3g})")


if __name__ == "__main__":
    main()
