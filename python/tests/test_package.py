"""The package around the extension: dnngraph re-exports dnngraph._C, carries its types and
imports no torch."""

import pathlib
import subprocess
import sys

import dnngraph
import dnngraph._C


def _public(module):
    return {name for name in vars(module) if not name.startswith("_")}


def test_every_public_name_of_the_extension_is_the_packages():
    missing = _public(dnngraph._C) - _public(dnngraph)
    assert not missing
    assert dnngraph.Graph is dnngraph._C.Graph
    assert dnngraph.Error is dnngraph._C.Error
    assert dnngraph.__version__ == dnngraph._C.__version__


def test_the_extension_lies_in_the_package_with_its_types():
    package = pathlib.Path(dnngraph.__file__).parent
    assert pathlib.Path(dnngraph._C.__file__).parent == package
    assert (package / "py.typed").is_file()
    stubs = (package / "_C.pyi").read_text()
    assert "class Graph:" in stubs
    assert "class Error(Exception):" in stubs


def test_import_dnngraph_imports_no_torch():
    done = subprocess.run(
        [sys.executable, "-c", "import sys, dnngraph; print('torch' in sys.modules)"],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
