"""python/bench/train_gpt.py on the CPU (torch's implementation, the tiny configuration): its
data are the Markov chain it says, the same for every run, packed documents fill each row, and a
short run trains (the loss falls) and reports what issue 30 asks. The GPU runs are the lead's."""

import os
import sys

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the training program and its test need it")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import train_gpt  # noqa: E402


def run_main(monkeypatch, capsys, *args):
    """train_gpt.main() on the CPU's tiny configuration with `args` added; what it printed."""
    monkeypatch.setattr(sys, "argv", ["train_gpt.py", "--config", "tiny", "--device", "cpu",
                                      *args])
    train_gpt.main()
    return capsys.readouterr().out


def test_the_data_follow_the_chain_and_repeat_per_step():
    cfg = dict(train_gpt.CONFIGS["tiny"], seq=256)
    table = train_gpt.markov_table(cfg, 7)
    cpu = torch.device("cpu")
    tokens, targets, positions, cu, longest = train_gpt.batch(cfg, table, 3, 7, cpu, True)
    assert bool((table[tokens.reshape(-1)] == targets.reshape(-1, 1)).any(1).all())
    again = train_gpt.batch(cfg, table, 3, 7, cpu, True)
    assert torch.equal(tokens, again[0]) and torch.equal(cu, again[3])
    assert not torch.equal(tokens, train_gpt.batch(cfg, table, 4, 7, cpu, True)[0])
    lengths = (cu[1:] - cu[:-1]).tolist()
    assert int(cu[-1]) == cfg["batch"] * cfg["seq"] and max(lengths) == longest
    row_ends = set(torch.cumsum(torch.tensor(lengths), 0).tolist())
    assert {cfg["seq"] * (r + 1) for r in range(cfg["batch"])} <= row_ends  # rows are whole
    starts = cu[:-1].long()
    assert bool((positions[starts] == 0).all()) and int(positions.max()) == longest - 1


def test_a_short_cpu_run_trains_and_reports(monkeypatch, capsys):
    out = run_main(monkeypatch, capsys, "--impl", "torch", "--steps", "25", "--warmup", "5",
                   "--warmup-lr", "5")
    import json
    result = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert result["impl"] == "torch" and result["steps"] == 25
    assert result["final_loss"] < 6.1, result  # from ln(512) = 6.24
    for key in ("tokens_per_s", "step_ms", "peak_gib", "build_s_total",
                "background_build_s_total", "build_share_after_warmup", "mean_loss_last_50"):
        assert key in result
    assert result["background_builds"] == [] and result["late_builds"] == []


def test_an_implementation_run_twice_is_named_apart_and_compared_with_itself(monkeypatch, capsys):
    out = run_main(monkeypatch, capsys, "--impl", "torch,torch", "--steps", "6", "--warmup", "2",
                   "--warmup-lr", "2")
    import json
    runs = [json.loads(line)["run"] for line in out.splitlines() if line.startswith("{")]
    assert runs == ["torch", "torch #2"]
    assert "# torch #2 against torch: mean loss of the last 50 steps differs by" in out


@pytest.mark.parametrize("varlen", [False, True], ids=["dense", "packed"])
def test_the_dnngraph_path_passes_every_argument_check(monkeypatch, capsys, varlen):
    """dnngraph.torch's implementation on CPU tensors with the GPU steps stubbed (the outputs are
    not computed, so the loss is not checked): every operator call of a training step, forward
    and backward, passes its shape, dtype and layout checks. CPU autocast stands in for CUDA's."""
    from dnngraph.torch import _checks, _runtime

    monkeypatch.setattr(_checks, "on_cuda", lambda *args: None)
    monkeypatch.setattr(_runtime, "graph", lambda op, *args, **kwargs: op)
    monkeypatch.setattr(_runtime, "execute", lambda *args: None)
    monkeypatch.setattr(_runtime, "handle", lambda device: None)
    monkeypatch.setattr(_runtime, "_device_count", [1])
    enabled, dtype = torch.is_autocast_enabled, torch.get_autocast_dtype
    monkeypatch.setattr(torch, "is_autocast_enabled",
                        lambda *a: enabled("cpu") if a == ("cuda",) else enabled(*a))
    monkeypatch.setattr(torch, "get_autocast_dtype",
                        lambda d: dtype("cpu") if d == "cuda" else dtype(d))
    out = run_main(monkeypatch, capsys, "--impl", "dnngraph", "--steps", "2", "--warmup", "1",
                   *(["--varlen"] if varlen else []))
    assert '"impl": "dnngraph"' in out
