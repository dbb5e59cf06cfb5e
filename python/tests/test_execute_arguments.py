"""What execute() takes from Python, checked on the CPU: every buffer is converted (and refused
with dnngraph.Error naming it) before the C++ call, which then reports the unbuilt graph."""

import types

import dnngraph
import pytest
from dnngraph import DataType, ErrorCode


class CudaArray:
    """The CUDA array interface (numba, CuPy) without a library behind it."""

    def __init__(self, address):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f2", "data": (address, False),
                                         "version": 3}


def unbuilt():
    g = dnngraph.Graph(io_data_type=DataType.Half)
    a = g.tensor(name="A", uid=1, dim=[1, 8, 8])
    b = g.tensor(name="B", uid=2, dim=[1, 8, 8])
    g.matmul(a, b).set_output(True).set_uid(3)
    return g


def error_of(call):
    with pytest.raises(dnngraph.Error) as caught:
        call()
    return caught.value


HANDLE = dnngraph.Handle.empty()


@pytest.mark.parametrize("pack", [
    {1: 0x1000, 2: 0x2000, 3: 0x3000},
    {1: CudaArray(0x1000), 2: CudaArray(0x2000), 3: 0x3000},
    types.MappingProxyType({1: 0x1000, 2: 0x2000, 3: 0x3000}),
], ids=["ints", "cuda array interface", "a mapping that is not a dict"])
def test_accepted_buffers_reach_the_graph(pack):
    e = error_of(lambda: unbuilt().execute(HANDLE, pack, None))
    assert e.code is ErrorCode.NotBuilt


def test_the_same_uids_again_reuse_the_pack_and_still_check_every_value():
    g = unbuilt()
    for _ in range(3):
        assert error_of(lambda: g.execute(HANDLE, {1: 1, 2: 2, 3: 3})).code is ErrorCode.NotBuilt
    e = error_of(lambda: g.execute(HANDLE, {1: 1, 2: "two", 3: 3}))
    assert e.code is ErrorCode.InvalidAttribute
    assert e.message.startswith("variant_pack[2]")


@pytest.mark.parametrize("pack,where", [
    ({1: "0x1000"}, "variant_pack[1]"),
    ({1: -1}, "variant_pack[1]"),
    ({1: 2**64}, "variant_pack[1]"),
    ({1: True}, "variant_pack[1]"),
    ({1: 1.5}, "variant_pack[1]"),
    ({"A": 0x1000}, "variant_pack"),
    ({1: CudaArray("not an address")}, "variant_pack[1]"),
    ([0x1000, 0x2000], "variant_pack"),
], ids=["str", "negative", "too large", "bool", "float", "str key", "bad interface", "list"])
def test_refused_buffers_name_the_entry(pack, where):
    e = error_of(lambda: unbuilt().execute(HANDLE, pack, None))
    assert e.code is ErrorCode.InvalidAttribute
    assert e.message.startswith(where + ":")


def test_a_workspace_of_the_wrong_type_is_refused():
    e = error_of(lambda: unbuilt().execute(HANDLE, {1: 1, 2: 2, 3: 3}, "workspace"))
    assert e.code is ErrorCode.InvalidAttribute
    assert e.message.startswith("workspace:")


def test_an_int_workspace_and_override_lists_reach_the_graph():
    e = error_of(lambda: unbuilt().execute(HANDLE, {1: 1, 2: 2, 3: 3}, 0x4000,
                                           override_uids=[1], override_shapes=[[1, 4, 8]],
                                           override_strides=[[32, 8, 1]]))
    assert e.code is ErrorCode.NotBuilt


def test_overrides_are_keyword_only():
    with pytest.raises(TypeError):
        unbuilt().execute(HANDLE, {1: 1}, None, [1], [[1, 4, 8]], [[32, 8, 1]])


def test_a_dlpack_array_on_the_host_is_refused():
    numpy = pytest.importorskip("numpy", reason="numpy (python/requirements-dev.txt) is missing")
    host = numpy.zeros(4, dtype=numpy.float16)
    e = error_of(lambda: unbuilt().execute(HANDLE, {1: host, 2: 2, 3: 3}, None))
    assert e.code is ErrorCode.InvalidAttribute
    assert e.message == ("variant_pack[1]: a DLPack tensor on device type 1; execute() needs "
                         "CUDA device memory")
