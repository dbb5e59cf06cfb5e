"""What `import dnngraph` does when its extension dnngraph._C does not load.

Where the loader finds no libcudnn.so.9 (not loaded by the process already, as torch's is, not on
LD_LIBRARY_PATH, not in the system's folders), the one of an nvidia-cudnn-cu13 (or -cu12) wheel
installed in this environment (`dnngraph[cudnn]`) is loaded, so that the extension binds to it.
Needed while the extension links libcudnn; once the library opens cuDNN itself at run time the
import no longer fails for want of it. Any other failure is re-raised, with a hint where the
extension was never built (the source folder python/dnngraph on sys.path)."""

import ctypes
import importlib.util
import pathlib
from typing import Optional

_SONAME = "libcudnn.so.9"


def cudnn_wheel_library() -> Optional[pathlib.Path]:
    """The libcudnn.so.9 of an installed nvidia-cudnn wheel, or None."""
    try:
        spec = importlib.util.find_spec("nvidia.cudnn")
    except ImportError:  # no `nvidia` package at all
        return None
    folders = spec.submodule_search_locations if spec is not None else None
    for folder in folders or []:
        library = pathlib.Path(folder) / "lib" / _SONAME
        if library.is_file():
            return library
    return None


def recover(error: ImportError) -> None:
    """Loads the wheel's cuDNN when `error` is the extension missing libcudnn.so.9 (the caller
    imports the extension again); raises an ImportError that says what to do otherwise."""
    if importlib.util.find_spec(f"{__package__}._C") is None:
        raise ImportError(
            f"{error}: the extension is not built next to {pathlib.Path(__file__).parent}. "
            "Install the package (pip install dist/dnngraph-*.whl, or pip install ./python from "
            "a checkout), or put a build's package folder first on PYTHONPATH (build/ci/python)"
        ) from error
    if _SONAME not in str(error):
        raise error
    library = cudnn_wheel_library()
    if library is None:
        raise ImportError(
            f"dnngraph needs cuDNN 9 ({error}): install it with `pip install dnngraph[cudnn]` "
            "(the nvidia-cudnn-cu13 wheel), or put the folder of a libcudnn.so.9 on "
            "LD_LIBRARY_PATH"
        ) from error
    ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
