"""dnngraph: fused cuDNN operation graphs from Python (docs/python.md).

Describe a Graph, build it once with a Handle, execute it many times with torch tensors (or
__cuda_array_interface__ / DLPack objects, or int device pointers). Every error raises
dnngraph.Error, whose .code is an ErrorCode. The API is the C++ one, bound in the extension
dnngraph._C and re-exported here; torch is never imported.
"""

try:
    from . import _C
except ImportError as _error:
    from ._extension import recover

    recover(_error)  # loads the nvidia-cudnn wheel's libcudnn.so.9, or raises why not

from ._C import *  # noqa: E402,F403 (every public name of the extension)
from ._C import __version__ as __version__  # noqa: E402
