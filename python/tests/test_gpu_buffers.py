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
    b, m, n, k = SHAPE
    a = cuda.zeros((b, m, k), dtype=cuda.bfloat16, device="cuda")
    bm = cuda.zeros((b, k, n), dtype=cuda.bfloat16, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, {1: a, 2: bm}, None)
    assert caught.value.code is ErrorCode.MissingTensor


def buffers(torch):
    b, m, n, k = SHAPE
    return {1: exact_bf16(torch, (b, m, k), 5), 2: exact_bf16(torch, (b, k, n), 6),
            3: torch.zeros((b, m, n), dtype=torch.bfloat16, device="cuda")}


# The session-5 finding: torch's SDPA output is a transposed view (strides of [b, s, h, d]
# memory); handed over as if packed, cuDNN read it in the wrong order and the result was wrong
# without a word. Buffers that say what they hold are now checked against the built tensors.
@pytest.mark.parametrize("wrap", [lambda t: t, CudaArrayInterface, DLPack],
                         ids=["torch tensor", "__cuda_array_interface__", "__dlpack__"])
def test_a_buffer_of_other_strides_is_refused_before_cudnn(cuda, built, wrap):
    torch = cuda
    g, handle = built
    b, m, n, k = SHAPE
    pack = buffers(torch)
    pack[1] = torch.zeros((b, k, m), dtype=torch.bfloat16, device="cuda").transpose(1, 2)
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, {uid: wrap(t) for uid, t in pack.items()}, ws)
    assert caught.value.code is ErrorCode.ShapeMismatch
    message = caught.value.message
    assert "variant_pack[1]" in message and "'A' (uid 1)" in message
    assert f"strides [{m * k}, 1, {m}]" in message and f"strides [{m * k}, {k}, 1]" in message
    # The same memory as an int pointer is taken as given (the caller's responsibility).
    g.execute(handle, {1: pack[1].data_ptr(), 2: pack[2], 3: pack[3]}, ws)
    torch.cuda.synchronize()


# cuDNN 9.19 and 9.28.1 returned success on a pointer 2, 4 or 8 bytes off a 16-byte boundary,
# then computed wrong values or faulted (bench_alignment_probe): execute() refuses one, as a
# torch view, a __cuda_array_interface__ object or a bare int, naming the tensor.
@pytest.mark.parametrize("wrap", [lambda t: t, CudaArrayInterface, lambda t: t.data_ptr()],
                         ids=["torch tensor", "__cuda_array_interface__", "int"])
@pytest.mark.parametrize("uid", [1, 3], ids=["input A", "output Y"])
def test_a_buffer_off_a_16_byte_boundary_is_refused(cuda, built, wrap, uid):
    torch = cuda
    g, handle = built
    pack = buffers(torch)
    shape = pack[uid].shape
    base = torch.zeros(pack[uid].numel() + 4, dtype=torch.bfloat16, device="cuda")
    pack[uid] = base[4:].view(shape)  # 8 bytes in
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, {u: wrap(t) for u, t in pack.items()}, ws)
    assert caught.value.code is ErrorCode.InvalidAttribute
    name = "'A' (uid 1)" if uid == 1 else "'Y' (uid 3)"
    assert name in caught.value.message
    assert "8 byte(s) past a 16-byte boundary" in caught.value.message
    assert torch.count_nonzero(base) == 0  # nothing ran


def test_a_buffer_of_other_dims_or_type_is_refused(cuda, built):
    torch = cuda
    g, handle = built
    b, m, n, k = SHAPE
    pack = buffers(torch)
    pack[3] = torch.zeros((b, m, n - 1), dtype=torch.bfloat16, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, pack, None)
    assert caught.value.code is ErrorCode.ShapeMismatch
    assert f"dims [{b}, {m}, {n - 1}]" in caught.value.message
    pack = buffers(torch)
    pack[2] = pack[2].half()
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, pack, None)
    assert caught.value.code is ErrorCode.InvalidAttribute
    assert "torch.float16" in caught.value.message and "BFloat16" in caught.value.message


def test_a_workspace_too_small_is_refused(cuda, built):
    torch = cuda
    g, handle = built
    size = g.get_workspace_size()
    if size == 0:
        pytest.skip("the plan needs no workspace")
    ws = torch.empty(size - 1, dtype=torch.uint8, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, buffers(torch), ws)
    assert caught.value.code is ErrorCode.InvalidAttribute
    assert f"{size - 1} bytes" in caught.value.message


class ByteStrides:
    """A __cuda_array_interface__ of a torch tensor's memory with strides (bytes) as given."""

    def __init__(self, tensor, strides):
        self._tensor = tensor
        self.__cuda_array_interface__ = dict(tensor.__cuda_array_interface__, strides=strides)


def test_cuda_array_interface_strides_of_part_elements_are_refused(cuda, built):
    # 3 bytes between bf16 values is no layout of whole elements; it used to truncate to 1.
    torch = cuda
    g, handle = built
    b, m, n, k = SHAPE
    pack = buffers(torch)
    pack[1] = ByteStrides(pack[1], (m * k * 2, k * 2, 3))
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, pack, None)
    assert caught.value.code is ErrorCode.InvalidAttribute
    assert "stride 2 is 3 bytes, not a multiple of the item size 2" in caught.value.message


class RebuildsWhenRead:
    """A buffer whose __cuda_array_interface__ builds the graph again when execute() reads it:
    what another thread's build could do between execute's buffer checks and its run."""

    def __init__(self, tensor, graph, handle):
        self._tensor, self._graph, self._handle = tensor, graph, handle

    @property
    def __cuda_array_interface__(self):
        self._graph.build_plan_at(self._handle, 0)
        return self._tensor.__cuda_array_interface__


def test_a_build_while_execute_checks_its_buffers_is_refused(cuda, built):
    # The buffers were checked against the plan that was replaced: refused, never run against
    # the new one (nor read from layouts that no longer exist).
    torch = cuda
    g, handle = built
    pack = buffers(torch)
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    with pytest.raises(dnngraph.Error) as caught:
        g.execute(handle, {1: RebuildsWhenRead(pack[1], g, handle), 2: pack[2], 3: pack[3]}, ws)
    assert caught.value.code is ErrorCode.InvalidState
    assert "built again" in caught.value.message
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")
    g.execute(handle, pack, ws)  # checked against the new build, it runs
    torch.cuda.synchronize()
    torch.testing.assert_close(pack[3], reference(torch, pack[1], pack[2]), rtol=BF16_RTOL, atol=0)
