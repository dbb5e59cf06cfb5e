# nanobind stubgen patterns (nanobind_add_stub PATTERN_FILE): what dnngraph.pyi cannot learn by
# importing the module.
^dnngraph\.Error$:
    class Error(Exception):
        \doc
        code: ErrorCode
        message: str

^dnngraph\.__prefix__$:
    from collections.abc import Mapping
