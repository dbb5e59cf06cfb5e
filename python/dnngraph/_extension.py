"""What `import dnngraph` says when its extension dnngraph._C does not load. cuDNN is never the
reason (the extension opens libcudnn.so.9 at run time, not at import): the usual one is a source
folder python/dnngraph on sys.path, where the extension was never built."""

import importlib.util
import pathlib
from typing import NoReturn


def explain(error: ImportError) -> NoReturn:
    """Re-raises `error`, with what to do where the extension is not built next to the package."""
    if importlib.util.find_spec(f"{__package__}._C") is None:
        raise ImportError(
            f"{error}: the extension is not built next to {pathlib.Path(__file__).parent}. "
            "Install the package (pip install dist/dnngraph-*.whl, or pip install ./python from "
            "a checkout), or put a build's package folder first on PYTHONPATH (build/ci/python)"
        ) from error
    raise error
