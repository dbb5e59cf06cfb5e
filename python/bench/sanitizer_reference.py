"""Reference programs for the GPU sanitizer sweep (issue 33): what torch's own cuDNN paths, which
torch builds on cudnn-frontend, do under compute-sanitizer with the cases where dnngraph's GPU tests
reported errors inside cuDNN's kernels (docs/development.md, "The first sweep"):

  sdpa       torch's cuDNN attention (SDPBackend.CUDNN_ATTENTION only, so nothing else can run),
             forward and backward, BFloat16 and Half, head dims 64 and 128, causal and not, at the
             sizes of tests/gpu/sdpa_test.cpp and sdpa_backward_test.cpp; racecheck reported
             hazards inside cudnn_generated_fort_native_sdpa_sm90_flash_*_wgmma_* kernels there,
             and synccheck could not track their cuda::barriers
  conv_nchw  torch's cuDNN convolution, BFloat16 and Half NCHW 3x3 at tests/gpu/conv_test.cpp's
             sizes (forward, and the grouped wgrad of 4 groups); initcheck reported reads of
             uninitialized memory in cudnn::engines_precompiled::nhwcToNchwKernel there

Run it under the tool whose finding it checks, e.g.

    compute-sanitizer --tool racecheck python3 python/bench/sanitizer_reference.py sdpa
    compute-sanitizer --tool initcheck python3 python/bench/sanitizer_reference.py conv_nchw

and compare the kernels the tool names with those it named in dnngraph's program: the same
kernel with the same finding from torch is a finding of cuDNN's (its known-issues row cites
both). Each case's result is checked against a float32 computation by torch on the GPU, and the
program prints the cuDNN version and one line per case; it exits 1 when a result is wrong (so a
sanitizer that broke a kernel shows), 77 without a CUDA device or cuDNN attention.
"""

import argparse
import sys

import torch
import torch.nn.functional as F


def close(got, want, what, atol, rtol):
    err = (got.float() - want).abs()
    bound = atol + rtol * want.abs()
    bad = int((err > bound).sum())
    print(f"  {what}: max abs error {float(err.max()):.3g}, {bad} of {err.numel()} outside "
          f"(abs {atol} + rel {rtol})", flush=True)
    return bad == 0


def sdpa_cases():
    # (dtype, b, h, s_q, s_kv, d, causal): sizes of dnngraph's SDPA GPU tests
    return [(torch.bfloat16, 2, 4, 33, 33, 64, False), (torch.float16, 2, 4, 33, 17, 128, False),
            (torch.float16, 2, 4, 33, 33, 64, True), (torch.bfloat16, 1, 4, 17, 33, 128, True),
            (torch.bfloat16, 2, 4, 257, 257, 64, True)]


def run_sdpa():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    ok = True
    gen = torch.Generator(device="cuda").manual_seed(7)
    for dtype, b, h, s_q, s_kv, d, causal in sdpa_cases():
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype, generator=gen)
                   for s in (s_q, s_kv, s_kv))
        q.requires_grad_(), k.requires_grad_(), v.requires_grad_()
        d_o = torch.randn(b, h, s_q, d, device="cuda", dtype=dtype, generator=gen)
        name = f"sdpa {str(dtype)[6:]} b {b} h {h} s_q {s_q} s_kv {s_kv} d {d} causal {causal}"
        print(name, flush=True)
        try:
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                o.backward(d_o)
        except RuntimeError as e:  # torch refuses what its cuDNN path does not take
            print(f"  not run by torch's cuDNN attention: {str(e).splitlines()[0]}", flush=True)
            continue
        torch.cuda.synchronize()
        qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
        of = F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal)
        of.backward(d_o.float())
        tol = (0.02, 0.02) if dtype == torch.bfloat16 else (0.005, 0.005)
        ok &= close(o, of.detach(), "O", *tol)
        for got, want, what in ((q.grad, qf.grad, "dQ"), (k.grad, kf.grad, "dK"),
                                (v.grad, vf.grad, "dV")):
            ok &= close(got, want, what, tol[0] * 4, tol[1] * 4)
    return ok


def run_conv_nchw():
    ok = True
    torch.backends.cudnn.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(11)
    for dtype in (torch.bfloat16, torch.float16):
        # forward: X [2, 32, 16, 16], W [64, 32, 3, 3], padding 1, NCHW (conv_test's first cases)
        x = torch.randn(2, 32, 16, 16, device="cuda", dtype=dtype, generator=gen)
        w = torch.randn(64, 32, 3, 3, device="cuda", dtype=dtype, generator=gen)
        print(f"conv_fprop {str(dtype)[6:]} NCHW {list(x.shape)} x {list(w.shape)}", flush=True)
        y = F.conv2d(x, w, padding=1)
        torch.cuda.synchronize()
        tol = 0.04 if dtype == torch.bfloat16 else 0.01
        ok &= close(y, F.conv2d(x.float(), w.float(), padding=1), "Y", tol * 4, tol)
        # grouped wgrad, 4 groups: X [2, 32, 14, 14], dY [2, 64, 14, 14] -> dW [64, 8, 3, 3]
        x = torch.randn(2, 32, 14, 14, device="cuda", dtype=dtype, generator=gen)
        d_y = torch.randn(2, 64, 14, 14, device="cuda", dtype=dtype, generator=gen)
        print(f"conv_wgrad {str(dtype)[6:]} NCHW, 4 groups", flush=True)
        d_w = torch.ops.aten.convolution_backward(
            d_y, x, torch.empty(64, 8, 3, 3, device="cuda", dtype=dtype), None, [1, 1], [1, 1],
            [1, 1], False, [0, 0], 4, [False, True, False])[1]
        torch.cuda.synchronize()
        want = torch.ops.aten.convolution_backward(
            d_y.float(), x.float(), torch.empty(64, 8, 3, 3, device="cuda"), None, [1, 1],
            [1, 1], [1, 1], False, [0, 0], 4, [False, True, False])[1]
        ok &= close(d_w, want, "dW", tol * 8, tol)
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=("sdpa", "conv_nchw"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    ok = run_sdpa() if args.case == "sdpa" else run_conv_nchw()
    print("result: " + ("every result within its tolerance" if ok else "WRONG RESULTS"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
