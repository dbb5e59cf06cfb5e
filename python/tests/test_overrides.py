"""Override lists checked after validate(), as execute() and get_workspace_size() check them."""

import dnngraph
import pytest
from dnngraph import DataType, ErrorCode


def matmul(override_shape=True):
    """A matmul built on the cache shape [1, 1024, 1024] x [1, 1024, 1024], uids 1, 2, 3."""
    g = dnngraph.Graph(io_data_type=DataType.Half, compute_data_type=DataType.Float,
                       override_shape=override_shape)
    a = g.tensor(name="A", uid=1, dim=[1, 1024, 1024])
    b = g.tensor(name="B", uid=2, dim=[1, 1024, 1024])
    g.matmul(a, b).set_output(True).set_uid(3).set_name("C")
    g.validate()
    return g


SHAPES = [[4, 300, 512], [4, 512, 264], [4, 300, 264]]
STRIDES = [dnngraph.packed_strides(s) for s in SHAPES]


def error_of(call):
    with pytest.raises(dnngraph.Error) as caught:
        call()
    return caught.value


def test_consistent_overrides_pass():
    matmul().check_overrides([1, 2, 3], SHAPES, STRIDES)


def test_tuples_and_other_sequences_are_taken():
    matmul().check_overrides((1, 2, 3), tuple(map(tuple, SHAPES)), [tuple(s) for s in STRIDES])


def test_lists_of_unequal_length_are_refused():
    e = error_of(lambda: matmul().check_overrides([1, 2], SHAPES[:1], STRIDES[:2]))
    assert e.code is ErrorCode.InvalidAttribute
    assert "2 uids, 1 shapes, 2 strides" in e.message


def test_an_unknown_uid_is_a_missing_tensor():
    e = error_of(lambda: matmul().check_overrides([1, 2, 9], SHAPES, STRIDES))
    assert e.code is ErrorCode.MissingTensor
    assert "uid 9" in e.message


def test_a_uid_listed_twice_is_refused():
    e = error_of(lambda: matmul().check_overrides([1, 1, 3], SHAPES, STRIDES))
    assert e.code is ErrorCode.InvalidAttribute
    assert "listed twice" in e.message


def test_a_shape_of_another_rank_is_a_shape_mismatch():
    shapes = [[300, 512], SHAPES[1], SHAPES[2]]
    strides = [[512, 1], STRIDES[1], STRIDES[2]]
    assert error_of(lambda: matmul().check_overrides([1, 2, 3], shapes, strides)).code is \
        ErrorCode.ShapeMismatch


def test_a_zero_dim_is_refused():
    shapes = [[4, 0, 512], SHAPES[1], SHAPES[2]]
    e = error_of(lambda: matmul().check_overrides([1, 2, 3], shapes, STRIDES))
    assert e.code is ErrorCode.InvalidAttribute


def test_inconsistent_inner_dims_are_a_shape_mismatch():
    shapes = [[4, 300, 512], [4, 256, 264], [4, 300, 264]]
    strides = [dnngraph.packed_strides(s) for s in shapes]
    e = error_of(lambda: matmul().check_overrides([1, 2, 3], shapes, strides))
    assert e.code is ErrorCode.ShapeMismatch


def test_overrides_without_the_flag_are_invalid_state():
    e = error_of(lambda: matmul(override_shape=False).check_overrides([1, 2, 3], SHAPES, STRIDES))
    assert e.code is ErrorCode.InvalidState


def test_overrides_before_validate_are_not_built():
    g = dnngraph.Graph(io_data_type=DataType.Half, override_shape=True)
    a = g.tensor(name="A", uid=1, dim=[1, 8, 8])
    g.matmul(a, a).set_output(True).set_uid(3)
    e = error_of(lambda: g.check_overrides([1], [[1, 8, 8]], [[64, 8, 1]]))
    assert e.code is ErrorCode.NotBuilt
    assert "call validate() or build() first" in e.message


@pytest.mark.parametrize("uids,shapes,strides,where", [
    (["1", 2, 3], SHAPES, STRIDES, "override_uids"),
    ([1, 2, 3], [[4, 300.0, 512], SHAPES[1], SHAPES[2]], STRIDES, "override_shapes[0]"),
    ([1, 2, 3], SHAPES, [STRIDES[0], 7, STRIDES[2]], "override_strides[1]"),
    ([1, 2, 3], SHAPES, "strides", "override_strides[0]"),
    (5, SHAPES, STRIDES, "override_uids"),
    ([1, 2, 2**63], SHAPES, STRIDES, "override_uids"),
])
def test_lists_of_other_things_than_ints_are_refused_with_the_argument_named(uids, shapes,
                                                                             strides, where):
    e = error_of(lambda: matmul().check_overrides(uids, shapes, strides))
    assert e.code is ErrorCode.InvalidAttribute
    assert e.message.startswith(where)


def test_workspace_with_overrides_needs_a_built_graph():
    e = error_of(lambda: matmul().get_workspace_size(dnngraph.Handle.empty(), [1, 2, 3], SHAPES,
                                                     STRIDES))
    assert e.code is ErrorCode.NotBuilt
