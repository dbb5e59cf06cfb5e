"""Shared fixtures. GPU tests take the `cuda` fixture: where there is no CUDA device (or no torch)
they are reported skipped with the reason, never passed."""

import pathlib

import pytest

import dnngraph

REPO = pathlib.Path(__file__).resolve().parents[2]
# Kernel cache documents cuDNN 9.19 wrote on the CPU (tests/fuzz/corpus seeds them for the fuzzer).
DOCUMENTS = REPO / "tests" / "fuzz" / "corpus" / "kernel_cache_json"


@pytest.fixture
def cudnn_9_19_documents():
    """The stored kernel cache documents; cuDNN refuses another version's, so skip elsewhere."""
    loaded = dnngraph.cudnn_runtime_version()
    if loaded // 100 != 919:
        pytest.skip(f"the stored kernel cache documents are cuDNN 9.19's; cuDNN {loaded} is loaded")
    return DOCUMENTS


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
