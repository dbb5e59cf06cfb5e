"""dnngraph: fused cuDNN operation graphs from Python (docs/python.md).

Describe a Graph, build it once with a Handle, execute it many times with torch tensors (or
__cuda_array_interface__ / DLPack objects, or int device pointers). Every error raises
dnngraph.Error, whose .code is an ErrorCode. The API is the C++ one, bound in the extension
dnngraph._C and re-exported here; torch is never imported.

cuDNN is not needed to import: the first call that needs it opens libcudnn.so.9 (a library the
process loaded already, as torch's, else this Python's nvidia-cudnn wheel, else the system's;
DNNGRAPH_CUDNN_LIB or set_cudnn_library() choose one), and cudnn_library_source() says which.
"""

try:
    from . import _C
except ImportError as _error:
    from ._extension import explain

    explain(_error)

from ._C import *  # noqa: E402,F403 (every public name of the extension)
from ._C import __version__ as __version__  # noqa: E402
