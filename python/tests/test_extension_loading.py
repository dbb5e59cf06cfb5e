"""What `import dnngraph` does when the extension does not load (dnngraph/_extension.py): the
nvidia-cudnn wheel's libcudnn.so.9 where the loader finds none, a clear ImportError otherwise."""

import pathlib
import sys

import pytest

import dnngraph
from dnngraph import _extension

MISSING_CUDNN = ImportError(
    "libcudnn.so.9: cannot open shared object file: No such file or directory")


@pytest.fixture
def no_cudnn_wheel(monkeypatch):
    monkeypatch.setattr(_extension, "cudnn_wheel_library", lambda: None)


def test_without_cudnn_anywhere_the_error_says_what_to_install(no_cudnn_wheel):
    with pytest.raises(ImportError) as caught:
        _extension.recover(MISSING_CUDNN)
    assert "pip install dnngraph[cudnn]" in str(caught.value)
    assert caught.value.__cause__ is MISSING_CUDNN


def test_another_import_error_is_raised_unchanged(no_cudnn_wheel):
    other = ImportError("undefined symbol: _ZN8dnngraph5Graph")
    with pytest.raises(ImportError) as caught:
        _extension.recover(other)
    assert caught.value is other


def test_the_cudnn_wheel_is_found_and_loaded(tmp_path, monkeypatch):
    # A stand-in for site-packages/nvidia/cudnn whose lib/libcudnn.so.9 is the one loaded here.
    loaded = pathlib.Path(dnngraph.cudnn_library_path())
    wheel = tmp_path / "nvidia" / "cudnn"
    (wheel / "lib").mkdir(parents=True)
    (wheel / "__init__.py").write_text("")
    (wheel / "lib" / "libcudnn.so.9").symlink_to(loaded)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("nvidia", "nvidia.cudnn"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert _extension.cudnn_wheel_library() == wheel / "lib" / "libcudnn.so.9"
    _extension.recover(MISSING_CUDNN)  # loads it; nothing raised
