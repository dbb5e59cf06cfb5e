"""On a CUDA device: Graph.autotune times the ranked candidates of the bf16 matmul + ReLU graph on
torch buffers, keeps the fastest (the plan it reports) and computes the right numbers."""

import dnngraph
import pytest
from dnngraph import ErrorCode, HeuristicMode

from gpu_support import exact_bf16, matmul_graph, reference, run_and_check, BF16_RTOL

SHAPE = (2, 256, 128, 64)


def test_autotune_keeps_the_fastest_and_stays_right(cuda):
    torch = cuda
    b, m, n, k = SHAPE
    handle = dnngraph.Handle()
    g = matmul_graph(*SHAPE)
    g.build(handle, [HeuristicMode.A, HeuristicMode.Fallback])
    count = g.plan_count()
    a, bm = exact_bf16(torch, (b, m, k), 1), exact_bf16(torch, (b, k, n), 2)
    y = torch.full((b, m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    report = g.autotune(handle, {1: a, 2: bm, 3: y}, ws, warmup=2, iterations=10,
                        max_candidates=6)
    print(f"\nautotune of {count} candidate(s):\n{report.describe()}")
    assert len(report.rows) == min(count, 6)
    timed = [r for r in report.rows if r.median_ms is not None]
    assert timed and all(r.skipped == "" for r in timed)
    chosen = next(r for r in report.rows if r.plan_index == report.chosen_index)
    assert chosen.median_ms == min(r.median_ms for r in timed)
    assert g.plan_info().plan_index == report.chosen_index
    assert g.plan_info().choice() == chosen.choice
    torch.cuda.synchronize()
    torch.testing.assert_close(y, reference(torch, a, bm), rtol=BF16_RTOL, atol=0)
    run_and_check(torch, g, handle, SHAPE, seed=5)


def test_autotune_without_workspace_times_only_plans_needing_none(cuda):
    torch = cuda
    b, m, n, k = SHAPE
    handle = dnngraph.Handle()
    g = matmul_graph(*SHAPE)
    g.build(handle, [HeuristicMode.A, HeuristicMode.Fallback])
    before = g.plan_info().choice()
    pack = {1: exact_bf16(torch, (b, m, k), 3), 2: exact_bf16(torch, (b, k, n), 4),
            3: torch.empty((b, m, n), dtype=torch.bfloat16, device="cuda")}
    try:
        report = g.autotune(handle, pack, None, warmup=1, iterations=3)
    except dnngraph.Error as e:  # every candidate needs a workspace: the plan is kept
        assert e.code is ErrorCode.NoEngine and "0 B given" in e.message
        assert g.plan_info().choice() == before
        return
    for row in report.rows:
        if row.median_ms is not None:
            assert row.workspace_size == 0
    assert g.plan_info().workspace_size == 0
    run_and_check(torch, g, handle, SHAPE, seed=6)


# A child process: builds the graph pinned to the engine choice given as text (no heuristics
# query), checks its numbers against torch and prints the plan's choice as text.
PINNED_CHILD = r"""
import sys
import dnngraph, torch
sys.path.insert(0, sys.argv[1])
from gpu_support import matmul_graph, run_and_check
shape = (2, 256, 128, 64)
choice = dnngraph.parse_engine_choice(sys.argv[2])
handle = dnngraph.Handle()
g = matmul_graph(*shape)
policy = dnngraph.PlanPolicy()
policy.engine = choice
g.build(handle, [dnngraph.HeuristicMode.A], policy)
run_and_check(torch, g, handle, shape, seed=7)
print(g.plan_info().plan_count)
print(str(g.plan_info().choice()))
print(g.plan_info().describe())
"""


def test_an_autotuned_choice_pins_the_same_plan_in_a_new_process(cuda):
    import os
    import subprocess
    import sys

    torch = cuda
    b, m, n, k = SHAPE
    handle = dnngraph.Handle()
    g = matmul_graph(*SHAPE)
    g.build(handle, [HeuristicMode.A, HeuristicMode.Fallback])
    pack = {1: exact_bf16(torch, (b, m, k), 8), 2: exact_bf16(torch, (b, k, n), 9),
            3: torch.empty((b, m, n), dtype=torch.bfloat16, device="cuda")}
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    report = g.autotune(handle, pack, ws, warmup=2, iterations=10, max_candidates=6)
    text = str(g.plan_info().choice())
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", PINNED_CHILD, here, text], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ranked, child_choice, child_plan = done.stdout.strip().splitlines()[-3:]
    print(f"\nautotuned #{report.chosen_index}: {text}; a new process pinned it: {child_plan}")
    assert child_choice == text
    assert ranked == "-1"  # built as pinned: no heuristics list was ranked
