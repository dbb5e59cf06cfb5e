"""The module itself: what it exports, the enums, dnngraph.Error and the helper functions."""

import dnngraph
import pytest


def test_version_and_cudnn_versions_are_reported():
    assert dnngraph.__version__ != "unknown"
    compiled = dnngraph.cudnn_compiled_version()
    assert compiled >= 90000
    assert dnngraph.cudnn_runtime_version() >= 90000
    assert dnngraph.cudnn_version_string(91900) == "9.19.0"
    assert "libcudnn.so" in dnngraph.cudnn_library_path()


def test_enums_carry_the_cpp_enumerators_in_order():
    assert dnngraph.DataType.BFloat16.value == 1
    assert dnngraph.DataType.Fp8E4M3.name == "Fp8E4M3"
    assert [m.name for m in dnngraph.HeuristicMode] == ["A", "B", "Fallback"]
    assert dnngraph.PointwiseMode.ReluFwd.value == 6
    assert dnngraph.PointwiseMode.BinarySelect in list(dnngraph.PointwiseMode)
    assert dnngraph.ReductionMode.MulNoZeros.name == "MulNoZeros"
    assert [p.name for p in dnngraph.NormFwdPhase] == ["Inference", "Training"]
    assert [c.name for c in dnngraph.ConvolutionMode] == ["CrossCorrelation", "Convolution"]


def test_error_codes_are_the_cpp_ones():
    names = [c.name for c in dnngraph.ErrorCode]
    assert names[0] == "InvalidAttribute"
    for expected in ("NotBuilt", "MissingTensor", "VersionTooOld", "InvalidState", "InvalidJson"):
        assert expected in names


def test_error_is_one_exception_type_with_code_and_message():
    assert issubclass(dnngraph.Error, Exception)
    with pytest.raises(dnngraph.Error) as caught:
        dnngraph.KernelCache().size()
    e = caught.value
    assert e.code is dnngraph.ErrorCode.InvalidState
    assert "size()" in e.message
    assert str(e) == f"InvalidState: {e.message}"


def test_arity_and_size_of_follow_the_cpp_tables():
    assert dnngraph.arity(dnngraph.PointwiseMode.ReluFwd) == 1
    assert dnngraph.arity(dnngraph.PointwiseMode.Add) == 2
    assert dnngraph.arity(dnngraph.PointwiseMode.BinarySelect) == 3
    assert dnngraph.size_of(dnngraph.DataType.BFloat16) == 2
    assert dnngraph.size_of(dnngraph.DataType.Fp8E5M2) == 1


def test_stride_helpers():
    assert dnngraph.packed_strides([2, 3, 4]) == [12, 4, 1]
    assert dnngraph.channels_last_strides([2, 3, 4, 5]) == [60, 1, 15, 3]
    with pytest.raises(dnngraph.Error) as caught:
        dnngraph.packed_strides([2, 0, 4])
    assert caught.value.code is dnngraph.ErrorCode.InvalidAttribute
    with pytest.raises(dnngraph.Error):
        dnngraph.packed_strides([2**40, 2**40])  # the element count overflows int64


def test_a_handle_without_a_device_raises_cudnn_failure_or_works(cuda_or_none):
    # Where there is a device this is a real handle; where not, cudnnCreate fails as an Error.
    if cuda_or_none is None:
        with pytest.raises(dnngraph.Error) as caught:
            dnngraph.Handle()
        assert caught.value.code is dnngraph.ErrorCode.CudnnFailure
    else:
        assert not dnngraph.Handle().is_empty()


def test_an_empty_handle_is_empty():
    h = dnngraph.Handle.empty()
    assert h.is_empty()
    assert h.native == 0
    with pytest.raises(dnngraph.Error) as caught:
        h.set_stream(0)
    assert caught.value.code is dnngraph.ErrorCode.InvalidHandle


def test_a_stream_of_the_wrong_type_is_refused():
    with pytest.raises(dnngraph.Error) as caught:
        dnngraph.Handle.empty().set_stream("stream 0")
    assert caught.value.code is dnngraph.ErrorCode.InvalidAttribute
