"""The package around the extension: dnngraph re-exports dnngraph._C, carries its types and every
Python file of python/dnngraph, imports no torch (dnngraph.torch says it needs it), and runs the
cache command as `python -m dnngraph.cache`."""

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


def test_dnngraph_torch_without_torch_says_that_it_needs_torch():
    # sys.modules["torch"] = None makes `import torch` fail, as where torch is not installed.
    code = ("import sys; sys.modules['torch'] = None; import dnngraph\n"
            "try:\n    import dnngraph.torch\nexcept ImportError as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("dnngraph.torch needs torch"), done.stdout


def test_the_package_holds_every_python_file_of_the_sources():
    sources = pathlib.Path(__file__).resolve().parents[1] / "dnngraph"
    package = pathlib.Path(dnngraph.__file__).parent
    missing = [str(f.relative_to(sources)) for f in sources.rglob("*.py")
               if not (package / f.relative_to(sources)).is_file()]
    assert not missing, f"not in {package} (python/CMakeLists.txt's DNNGRAPH_PACKAGE_FILES?)"


def test_the_cache_command_says_how_it_is_used():
    done = subprocess.run([sys.executable, "-m", "dnngraph.cache", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for command in ("list", "inspect", "verify", "prune"):
        assert command in done.stdout


def test_the_cache_command_refuses_an_unknown_command_with_status_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "dnngraph.cache", "frobnicate", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2


def test_the_store_lists_its_files_with_their_keys(tmp_path):
    store = dnngraph.KernelCacheStore(tmp_path)
    path = store.load_or_create("mlp", "sm_90").path
    path.write_text("{}")
    (tmp_path / (path.name + dnngraph.KernelCacheStore.damaged_suffix)).write_text("{")
    files = store.list()
    assert [f.path.name for f in files] == [path.name]
    key = files[0].key
    assert (key.topology, key.gpu_architecture) == ("mlp", "sm_90")
    assert key.cudnn_version == dnngraph.cudnn_runtime_version()
    assert files[0].bytes == 2
    assert dnngraph.KernelCacheStore.key_of("not a store file") is None
