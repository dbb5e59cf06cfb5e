"""Shared fixtures. GPU tests take the `cuda` fixture: where there is no CUDA device (or no torch)
they are reported skipped with the reason, never passed."""

import pathlib

import pytest

import dnngraph

REPO = pathlib.Path(__file__).resolve().parents[2]
# Kernel cache documents cuDNN 9.19 wrote on the CPU (tests/fuzz/corpus seeds them for the fuzzer).
DOCUMENTS = REPO / "tests" / "fuzz" / "corpus" / "kernel_cache_json"


def _documents_made_now(folder):
    """Kernel cache documents of the loaded cuDNN, made on the CUDA device: dynamic-shape graphs
    built on a cache each and serialized (the names the tests read: matmul.json, conv_relu.json;
    five in all)."""
    from dnngraph import PointwiseMode

    handle = dnngraph.Handle()

    def matmul(g, b, m, n, k, relu):
        a = g.tensor(name="A", uid=1, dim=[b, m, k])
        w = g.tensor(name="B", uid=2, dim=[b, k, n])
        y = g.matmul(a, w, name="mm")
        if relu:
            y = g.pointwise(y, mode=PointwiseMode.ReluFwd, name="relu")
        y.set_output(True).set_uid(3)

    def conv(g, relu):
        dims = [2, 16, 9, 11]
        x = g.tensor(name="X", uid=1, dim=dims, stride=dnngraph.channels_last_strides(dims))
        w = g.tensor(name="W", uid=2, dim=[16, 16, 3, 3],
                     stride=dnngraph.channels_last_strides([16, 16, 3, 3]))
        y = g.conv_fprop(x, w, padding=[1, 1], stride=[1, 1])
        if relu:
            y = g.pointwise(y, mode=PointwiseMode.ReluFwd, name="relu")
        y.set_output(True).set_uid(3)

    graphs = {"matmul": lambda g: matmul(g, 1, 64, 16, 32, False),
              "matmul_relu": lambda g: matmul(g, 1, 64, 16, 32, True),
              "matmul_batched": lambda g: matmul(g, 4, 128, 64, 96, False),
              "conv": lambda g: conv(g, False),
              "conv_relu": lambda g: conv(g, True)}
    for name, describe in graphs.items():
        kc = dnngraph.KernelCache()
        g = dnngraph.Graph(io_data_type=dnngraph.DataType.Half,
                           compute_data_type=dnngraph.DataType.Float, dynamic_shape=True,
                           kernel_cache=kc)
        describe(g)
        g.build(handle, [dnngraph.HeuristicMode.A, dnngraph.HeuristicMode.Fallback])
        (folder / f"{name}.json").write_text(kc.to_json())
    return folder


@pytest.fixture(scope="session")
def cudnn_documents(tmp_path_factory):
    """Kernel cache documents the loaded cuDNN takes (it refuses another version's): with cuDNN
    9.19 the stored ones it wrote on the CPU; with another, documents made now on the CUDA
    device; skipped with neither, saying why."""
    loaded = dnngraph.cudnn_runtime_version()
    if loaded // 100 == 919:
        return DOCUMENTS
    reason = _cuda_reason()
    if reason is not None:
        pytest.skip(f"the stored kernel cache documents are cuDNN 9.19's; cuDNN {loaded} is "
                    f"loaded, and none can be made here ({reason})")
    return _documents_made_now(tmp_path_factory.mktemp("kernel_cache_documents"))


def _cuda_reason():
    try:
        import torch
    except ImportError as e:
        return f"no CUDA device: torch is not installed ({e})"
    if not torch.cuda.is_available():
        return "no CUDA device: torch.cuda.is_available() is False"
    try:
        dnngraph.Handle()
    except dnngraph.Error as e:
        return f"no CUDA device for cuDNN: {e}"
    return None


@pytest.fixture(scope="session")
def cuda():
    """torch, once a CUDA device and a cuDNN handle are available."""
    reason = _cuda_reason()
    if reason:
        pytest.skip(reason)
    import torch

    return torch


@pytest.fixture(scope="session")
def cuda_or_none():
    """torch where a CUDA device is usable, else None (for tests that check both sides)."""
    if _cuda_reason():
        return None
    import torch

    return torch
