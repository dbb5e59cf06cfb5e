"""docs/examples/python_example.py runs: its CPU part everywhere, the rest on a CUDA device."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples" / "python_example.py"


def test_the_docs_example_runs(cuda_or_none):
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                          timeout=300)
    print(done.stdout)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "lowered: [\"matmul 'matmul_0'\", \"pointwise 'pointwise_1'\"]" in done.stdout
    if cuda_or_none is None:
        assert "running needs a CUDA device: CudnnFailure" in done.stdout
    else:
        assert "matmul + ReLU matches torch" in done.stdout
        assert done.stdout.count("matches torch") == 3
