"""On a CUDA device: an FP8 matmul (E4M3 x E4M3, B column-major as cuDNN's own FP8 sample) with a
by-value descale, written as bf16, built from Python and compared with torch. Inputs lie on
E4M3's exact grid (k/8, |v| <= 2), so products and their Float sums are exact and only the bf16
output rounding remains. A GPU or cuDNN with no engine for it skips with the Error as reason."""

import dnngraph
import pytest
from dnngraph import DataType, ErrorCode, HeuristicMode, PointwiseMode

from gpu_support import BF16_RTOL

M, N, K = 64, 64, 128
DESCALE = 0.5


def test_fp8_matmul_with_a_descale_matches_torch(cuda):
    torch = cuda
    handle = dnngraph.Handle()
    g = dnngraph.Graph(io_data_type=DataType.BFloat16, intermediate_data_type=DataType.Float,
                       compute_data_type=DataType.Float)
    a = g.tensor(name="A", uid=1, dim=[1, M, K], stride=[M * K, K, 1],
                 data_type=DataType.Fp8E4M3)
    b = g.tensor(name="B", uid=2, dim=[1, K, N], stride=[K * N, 1, K],
                 data_type=DataType.Fp8E4M3)
    y = g.pointwise(g.matmul(a, b, name="mm"), DESCALE, mode=PointwiseMode.Mul, name="descale")
    y.set_output(True).set_uid(3)
    try:
        g.build(handle, [HeuristicMode.A, HeuristicMode.Fallback])
    except dnngraph.Error as e:
        if e.code is ErrorCode.NoEngine:
            pytest.skip(f"no engine for FP8 matmul here: {e}")
        raise
    gen = torch.Generator(device="cuda").manual_seed(401)
    a_values = torch.randint(-16, 17, (1, M, K), device="cuda", generator=gen) / 8
    bt_values = torch.randint(-16, 17, (1, N, K), device="cuda", generator=gen) / 8
    a_fp8 = a_values.to(torch.float8_e4m3fn)
    b_fp8 = bt_values.to(torch.float8_e4m3fn).transpose(1, 2)  # [1, K, N], K contiguous
    out = torch.full((1, M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    size = g.get_workspace_size()
    ws = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
    g.execute(handle, {1: a_fp8, 2: b_fp8, 3: out}, ws)
    torch.cuda.synchronize()
    expected = (torch.matmul(a_fp8.float(), b_fp8.float()) * DESCALE).to(torch.bfloat16)
    torch.testing.assert_close(out, expected, rtol=BF16_RTOL, atol=0)
    print(f"\nfp8 matmul: {g.plan_info().describe()}")
