"""PlanPolicy, EngineChoice and the note enums without a GPU (docs/plan-control.md)."""

import dnngraph
import pytest
from dnngraph import BehaviorNote, EngineChoice, ErrorCode, NumericalNote, PlanPolicy


def error_of(call):
    with pytest.raises(dnngraph.Error) as caught:
        call()
    return caught.value


def test_notes_are_cudnns_in_order():
    assert NumericalNote.Nondeterministic.value == 4
    assert BehaviorNote.RuntimeCompilation.value == 0
    assert "TensorCore" in NumericalNote.__members__


def test_a_policy_defaults_to_no_filter():
    p = PlanPolicy()
    assert p.excluded_numerical_notes == []
    assert p.max_workspace is None
    assert p.plan_index is None
    assert p.engine is None
    assert not p.deterministic


def test_a_policy_holds_what_it_is_given():
    p = PlanPolicy()
    p.excluded_numerical_notes = [NumericalNote.TensorCore]
    p.excluded_behavior_notes = [BehaviorNote.RuntimeCompilation]
    p.excluded_engines = [7]
    p.max_workspace = 1 << 20
    p.deterministic = True
    p.engine = EngineChoice(7, [(24, 22)])
    assert p.excluded_numerical_notes == [NumericalNote.TensorCore]
    assert p.excluded_engines == [7]
    assert p.max_workspace == 1 << 20
    assert p.engine == EngineChoice(7, [(24, 22)])


def test_an_engine_choice_reads_back_from_its_text():
    c = EngineChoice(42, [(24, 22), (0, 1)])
    assert str(c) == "engine 42, knobs {KERNEL_CFG=22, SPLIT_K=1}"
    assert dnngraph.parse_engine_choice(str(c)) == c


def test_malformed_engine_choice_text_is_invalid_attribute():
    e = error_of(lambda: dnngraph.parse_engine_choice("engine 7, knobs {FOO=1}"))
    assert e.code is ErrorCode.InvalidAttribute
    assert "at character" in e.message


def test_plan_count_before_build_is_not_built():
    assert error_of(dnngraph.Graph().plan_count).code is ErrorCode.NotBuilt

