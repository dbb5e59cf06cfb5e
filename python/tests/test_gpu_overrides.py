"""On a CUDA device: one build, many shapes through override lists, compared with torch; a
fused graph with overrides below cuDNN 9.21 is refused at build (VersionTooOld)."""

import dnngraph
import pytest
from dnngraph import ErrorCode, HeuristicMode

from gpu_support import matmul_graph, run_and_check

CACHE_SHAPE = (1, 1024, 1024, 1024)
# Rows stay 16-byte aligned (N and K multiples of 8 bf16 values), as the build shape's were.
RUN_SHAPES = [(4, 300, 264, 512), (2, 128, 512, 256), (1, 1024, 1024, 1024), (8, 256, 128, 64),
              (3, 1000, 776, 512)]


def native_overrides():
    return dnngraph.cudnn_offers(dnngraph.CudnnCapability.OverrideShapeFlag)


def test_a_matmul_built_once_runs_every_shape_with_overrides(cuda):
    handle = dnngraph.Handle()
    g = matmul_graph(*CACHE_SHAPE, relu=False, override_shape=True)
    g.build(handle, [HeuristicMode.A])
    print(f"\n{g.plan_info().describe()}; overrides via {g.plan_info().override_path}")
    for i, shape in enumerate(RUN_SHAPES * 2):  # twice: the second round takes the memo
        run_and_check(cuda, g, handle, shape, seed=i, relu=False, overrides=True)
    # Without overrides the build shape runs as before.
    run_and_check(cuda, g, handle, CACHE_SHAPE, seed=99, relu=False)


def test_a_fused_graph_with_overrides_needs_cudnn_9_21(cuda):
    handle = dnngraph.Handle()
    g = matmul_graph(*CACHE_SHAPE, relu=True, override_shape=True)
    if not native_overrides():
        with pytest.raises(dnngraph.Error) as caught:
            g.build(handle, [HeuristicMode.A])
        assert caught.value.code is ErrorCode.VersionTooOld
        assert "9.21" in caught.value.message
        print(f"\nrefused as expected: {caught.value.message[:120]}...")
        return
    g.build(handle, [HeuristicMode.A])
    for i, shape in enumerate(RUN_SHAPES):
        run_and_check(cuda, g, handle, shape, seed=i, relu=True, overrides=True)


def test_override_lists_are_checked_before_cudnn_sees_them(cuda):
    handle = dnngraph.Handle()
    g = matmul_graph(*CACHE_SHAPE, relu=False, override_shape=True)
    g.build(handle, [HeuristicMode.A])
    a = cuda.zeros((1, 300, 512), dtype=cuda.bfloat16, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, {1: a, 2: a, 3: a}, None, override_uids=[1, 2, 3],
                  override_shapes=[[1, 300, 512], [1, 256, 264], [1, 300, 264]],
                  override_strides=[[153600, 512, 1], [67584, 264, 1], [79200, 264, 1]])
    assert caught.value.code is ErrorCode.ShapeMismatch


def test_shapes_without_uids_are_refused_not_ignored(cuda):
    # Without override_uids the lists differ in length: refused, never a run at the build shape.
    # The buffers are the build shape's, so the pack passes its own checks and the lists decide.
    torch = cuda
    handle = dnngraph.Handle()
    g = matmul_graph(*CACHE_SHAPE, relu=False, override_shape=True)
    g.build(handle, [HeuristicMode.A])
    b, m, n, k = CACHE_SHAPE
    pack = {1: torch.zeros((b, m, k), dtype=torch.bfloat16, device="cuda"),
            2: torch.zeros((b, k, n), dtype=torch.bfloat16, device="cuda"),
            3: torch.zeros((b, m, n), dtype=torch.bfloat16, device="cuda")}
    shapes = [[b, 512, k], [b, k, n], [b, 512, n]]
    strides = [[512 * k, k, 1], [k * n, n, 1], [512 * n, n, 1]]
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    for call in (lambda: g.get_workspace_size(handle, override_shapes=shapes,
                                              override_strides=strides),
                 lambda: g.execute(handle, pack, ws, override_shapes=shapes,
                                   override_strides=strides),
                 lambda: g.execute(handle, pack, ws, override_shapes=shapes)):
        with pytest.raises(dnngraph.Error) as caught:
            call()
        assert caught.value.code is ErrorCode.InvalidAttribute
        assert "the lists differ in length: 0 uids" in caught.value.message


def test_a_torch_workspace_too_small_for_the_overrides_is_refused(cuda):
    torch = cuda
    handle = dnngraph.Handle()
    g = matmul_graph(*CACHE_SHAPE, relu=False, override_shape=True)
    g.build(handle, [HeuristicMode.A])
    needs = {}
    for shape in RUN_SHAPES:
        b, m, n, k = shape
        lists = ([1, 2, 3], [[b, m, k], [b, k, n], [b, m, n]],
                 [[m * k, k, 1], [k * n, n, 1], [m * n, n, 1]])
        needs[shape] = (g.get_workspace_size(handle, *lists), lists)
    shape, (needed, lists) = max(needs.items(), key=lambda item: item[1][0])
    if needed == 0:
        pytest.skip(f"no run shape's plan needs a workspace here ({needs and 'all 0 bytes'})")
    b, m, n, k = shape
    pack = {1: torch.zeros((b, m, k), dtype=torch.bfloat16, device="cuda"),
            2: torch.zeros((b, k, n), dtype=torch.bfloat16, device="cuda"),
            3: torch.zeros((b, m, n), dtype=torch.bfloat16, device="cuda")}
    small = torch.empty(needed - 1, dtype=torch.uint8, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, pack, small, override_uids=lists[0], override_shapes=lists[1],
                  override_strides=lists[2])
    assert caught.value.code is ErrorCode.InvalidAttribute
    assert f"a torch tensor of {needed - 1} bytes" in caught.value.message
    assert f"needs {needed} for these overrides" in caught.value.message
    # The size it asked for runs.
    g.execute(handle, pack, torch.empty(needed, dtype=torch.uint8, device="cuda"),
              override_uids=lists[0], override_shapes=lists[1], override_strides=lists[2])
    torch.cuda.synchronize()
