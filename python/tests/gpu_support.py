"""Helpers of the GPU tests (torch on a CUDA device): the issue's bf16 matmul (+ ReLU) graph,
inputs exact in bf16, and one run of a built graph checked against torch."""

import dnngraph
from dnngraph import DataType, PointwiseMode

# bf16 has 8 significant bits: multiples of 1/8 in [-1, 1] are exact, their products multiples
# of 1/64, and sums of up to 4096 of them stay below 2**12 in magnitude with 6 fraction bits: exact
# in the Float accumulator. So cuDNN's and torch's results are the same exact value rounded once
# to bf16 (both round to nearest); the tolerance of one bf16 ulp only absorbs a tie rounded
# another way.
BF16_RTOL = 2.0**-8


def exact_bf16(torch, shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randint(-8, 9, shape, device="cuda", generator=g) / 8).to(torch.bfloat16)


def matmul_graph(b, m, n, k, relu=True, **options):
    """Y = ReLU(A x B) (or A x B), bf16 in and out, Float math; uids A 1, B 2, Y 3."""
    g = dnngraph.Graph(io_data_type=DataType.BFloat16, compute_data_type=DataType.Float, **options)
    a = g.tensor(name="A", uid=1, dim=[b, m, k])
    bm = g.tensor(name="B", uid=2, dim=[b, k, n])
    y = g.matmul(a, bm, name="mm")
    if relu:
        y = g.pointwise(y, mode=PointwiseMode.ReluFwd, name="relu")
    y.set_output(True).set_uid(3).set_name("Y")
    return g


def reference(torch, a, b, relu=True):
    y = torch.matmul(a.float(), b.float())
    return (torch.relu(y) if relu else y).to(torch.bfloat16)


def workspace(torch, size):
    return torch.empty(size, dtype=torch.uint8, device="cuda") if size > 0 else None


def run_and_check(torch, g, handle, shape, seed=0, relu=True, overrides=False):
    """Executes the built graph on (b, m, n, k) (with override lists when asked) and compares
    with torch. Returns the output."""
    b, m, n, k = shape
    a = exact_bf16(torch, (b, m, k), seed)
    bm = exact_bf16(torch, (b, k, n), seed + 1)
    y = torch.full((b, m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    if overrides:
        lists = dict(override_uids=[1, 2, 3],
                     override_shapes=[[b, m, k], [b, k, n], [b, m, n]],
                     override_strides=[dnngraph.packed_strides(s)
                                       for s in ([b, m, k], [b, k, n], [b, m, n])])
        ws = workspace(torch, g.get_workspace_size(handle, **lists))
        g.execute(handle, {1: a, 2: bm, 3: y}, ws, **lists)
    else:
        g.execute(handle, {1: a, 2: bm, 3: y}, workspace(torch, g.get_workspace_size()))
    torch.cuda.synchronize()
    torch.testing.assert_close(y, reference(torch, a, bm, relu), rtol=BF16_RTOL, atol=0)
    return y
