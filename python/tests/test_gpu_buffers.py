"""On a CUDA device: every kind of buffer execute() takes, a handle on a torch stream, and the
errors a wrong pack gives."""

import dnngraph
import pytest
from dnngraph import ErrorCode, HeuristicMode

from gpu_support import exact_bf16, matmul_graph, reference, BF16_RTOL

SHAPE = (2, 256, 128, 64)


class CudaArrayInterface:
    def __init__(self, tensor):
        self._tensor = tensor  # keeps the memory alive
        self.__cuda_array_interface__ = tensor.__cuda_array_interface__


class DLPack:
    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack__(self, *args, **kwargs):
        return self._tensor.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


@pytest.fixture
def built(cuda):
    handle = dnngraph.Handle()
    g = matmul_graph(*SHAPE)
    g.build(handle, [HeuristicMode.A])
    return g, handle


@pytest.mark.parametrize("wrap", [
    lambda t: t,
    lambda t: t.data_ptr(),
    CudaArrayInterface,
    DLPack,
], ids=["torch tensor", "int", "__cuda_array_interface__", "__dlpack__"])
def test_every_buffer_kind_runs(cuda, built, wrap):
    torch = cuda
    g, handle = built
    b, m, n, k = SHAPE
    a, bm = exact_bf16(torch, (b, m, k), 1), exact_bf16(torch, (b, k, n), 2)
    y = torch.full((b, m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    size = g.get_workspace_size()
    ws = torch.empty(max(size, 1), dtype=torch.uint8, device="cuda")
    g.execute(handle, {1: wrap(a), 2: wrap(bm), 3: wrap(y)}, wrap(ws))
    torch.cuda.synchronize()
    torch.testing.assert_close(y, reference(torch, a, bm), rtol=BF16_RTOL, atol=0)


@pytest.mark.parametrize("as_object", [True, False], ids=["torch.cuda.Stream", "int"])
def test_a_handle_on_a_torch_stream_runs_there(cuda, as_object):
    torch = cuda
    stream = torch.cuda.Stream()
    handle = dnngraph.Handle(stream=stream if as_object else stream.cuda_stream)
    g = matmul_graph(*SHAPE)
    g.build(handle, [HeuristicMode.A])
    b, m, n, k = SHAPE
    a, bm = exact_bf16(torch, (b, m, k), 3), exact_bf16(torch, (b, k, n), 4)
    y = torch.full((b, m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    size = g.get_workspace_size()
    ws = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
    torch.cuda.synchronize()
    g.execute(handle, {1: a, 2: bm, 3: y}, ws)
    stream.synchronize()
    torch.testing.assert_close(y, reference(torch, a, bm), rtol=BF16_RTOL, atol=0)


def test_a_cpu_tensor_is_refused(cuda, built):
    g, handle = built
    cpu = cuda.zeros(4, dtype=cuda.bfloat16)
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, {1: cpu, 2: cpu, 3: cpu}, None)
    assert caught.value.code is ErrorCode.InvalidAttribute
    assert "a torch tensor on cpu" in caught.value.message


def test_a_missing_uid_is_a_missing_tensor(cuda, built):
    g, handle = built
    t = cuda.zeros(SHAPE[0] * 256 * 256, dtype=cuda.bfloat16, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, {1: t, 2: t}, None)
    assert caught.value.code is ErrorCode.MissingTensor
