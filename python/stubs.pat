# nanobind stubgen patterns (nanobind_add_stub PATTERN_FILE): what dnngraph/_C.pyi cannot learn
# by importing the extension.
^dnngraph\._C\.Error$:
    class Error(Exception):
        \doc
        code: ErrorCode
        message: str

^dnngraph\._C\.__prefix__$:
    from collections.abc import Mapping

^dnngraph\._C\.__suffix__$:
    __version__: str
