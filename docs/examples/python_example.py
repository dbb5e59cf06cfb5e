"""docs/python.md's example: a dynamic bf16 matmul + ReLU with a kernel cache, built from Python,
run with torch tensors and checked against torch; then a matmul built once and run on other
shapes through override lists. Without a CUDA device it validates and lowers the graph (no GPU
needed for that) and says so. Runs as a test: python/tests/test_docs_example.py."""

import dnngraph
from dnngraph import DataType, HeuristicMode, PointwiseMode

b, m, n, k = 2, 512, 768, 1024
kc = dnngraph.KernelCache()
g = dnngraph.Graph(io_data_type=DataType.BFloat16, compute_data_type=DataType.Float,
                   dynamic_shape=True, kernel_cache=kc)
a = g.tensor(name="A", uid=1, dim=[b, m, k])
bm = g.tensor(name="B", uid=2, dim=[b, k, n])
y = g.pointwise(g.matmul(a, bm), mode=PointwiseMode.ReluFwd)
y.set_output(True).set_uid(3)
print("lowered:", g.lower().operations)  # validate + backend descriptors, no GPU needed

try:
    handle = dnngraph.Handle()  # cudnnCreate: raises dnngraph.Error without a CUDA device
except dnngraph.Error as e:
    print(f"running needs a CUDA device: {e.code.name}")
    raise SystemExit(0)

import torch  # noqa: E402 (only the GPU part needs torch)

g.build(handle, [HeuristicMode.A])
revision, size = kc.revision(), kc.size()
print(f"built: {g.plan_info().describe()}; kernel cache revision {revision}, size {size}")

A = torch.randn(b, m, k, device="cuda", dtype=torch.bfloat16)
B = torch.randn(b, k, n, device="cuda", dtype=torch.bfloat16)
Y = torch.empty(b, m, n, device="cuda", dtype=torch.bfloat16)
ws_size = g.get_workspace_size()
workspace = torch.empty(ws_size, device="cuda", dtype=torch.uint8) if ws_size else None
g.execute(handle, {1: A, 2: B, 3: Y}, workspace)
torch.testing.assert_close(Y, torch.relu(A.float() @ B.float()).bfloat16(), rtol=2e-2, atol=2e-2)
print("matmul + ReLU matches torch")

# Build once on a "cache shape", run other shapes by passing them to execute(). Below cuDNN 9.21
# only a matmul alone takes overrides (a fused graph is refused at build with VersionTooOld).
o = dnngraph.Graph(io_data_type=DataType.BFloat16, compute_data_type=DataType.Float,
                   override_shape=True)
oa = o.tensor(name="A", uid=1, dim=[1, 1024, 1024])
ob = o.tensor(name="B", uid=2, dim=[1, 1024, 1024])
o.matmul(oa, ob).set_output(True).set_uid(3)
o.build(handle, [HeuristicMode.A])
for shape in ([4, 300, 264, 512], [2, 128, 512, 256]):
    rb, rm, rn, rk = shape
    A = torch.randn(rb, rm, rk, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(rb, rk, rn, device="cuda", dtype=torch.bfloat16)
    C = torch.empty(rb, rm, rn, device="cuda", dtype=torch.bfloat16)
    lists = dict(override_uids=[1, 2, 3], override_shapes=[list(A.shape), list(B.shape), list(C.shape)],
                 override_strides=[list(A.stride()), list(B.stride()), list(C.stride())])
    ws_size = o.get_workspace_size(handle, **lists)  # ask right before allocating
    workspace = torch.empty(ws_size, device="cuda", dtype=torch.uint8) if ws_size else None
    o.execute(handle, {1: A, 2: B, 3: C}, workspace, **lists)
    torch.testing.assert_close(C, (A.float() @ B.float()).bfloat16(), rtol=2e-2, atol=2e-2)
    print(f"override shape {shape} matches torch ({o.plan_info().override_path})")
