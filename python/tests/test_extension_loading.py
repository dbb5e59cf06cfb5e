"""How the package finds cuDNN: never at import, and at the first call that needs it in the order
of docs/installation.md (each case in a fresh interpreter, as the library is found once per
process)."""

import os
import pathlib
import subprocess
import sys

import dnngraph

PACKAGE_ROOT = str(pathlib.Path(dnngraph.__file__).parent.parent)


def run(code, extra_path=(), **env):
    environment = {k: v for k, v in os.environ.items() if k != "DNNGRAPH_CUDNN_LIB"}
    environment.update(env)
    environment["PYTHONPATH"] = os.pathsep.join([*extra_path, PACKAGE_ROOT])
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_needs_no_cudnn_and_the_first_call_that_does_says_where_it_looked():
    out = run(
        "import dnngraph\n"
        "assert dnngraph.cudnn_runtime_version() == 0\n"
        "assert dnngraph.cudnn_library_path() == ''\n"
        "assert not dnngraph.cudnn_offers(dnngraph.CudnnCapability.ConcatOperation)\n"
        "try:\n"
        "    dnngraph.Handle()\n"
        "except dnngraph.Error as e:\n"
        "    assert e.code == dnngraph.ErrorCode.CudnnNotFound, e\n"
        "    print(e.message)\n",
        DNNGRAPH_CUDNN_LIB="/nonexistent/libcudnn.so.9")
    assert "DNNGRAPH_CUDNN_LIB names /nonexistent/libcudnn.so.9" in out


def test_the_nvidia_cudnn_wheel_of_this_python_is_found(tmp_path):
    # A stand-in for site-packages/nvidia/cudnn whose lib/libcudnn.so.9 is the one loaded here.
    loaded = pathlib.Path(dnngraph.cudnn_library_path())
    wheel = tmp_path / "nvidia" / "cudnn"
    (wheel / "lib").mkdir(parents=True)
    (wheel / "__init__.py").write_text("")
    (wheel / "lib" / "libcudnn.so.9").symlink_to(loaded)
    out = run("import dnngraph\n"
              "print(dnngraph.cudnn_library_source())\n"
              "print(dnngraph.cudnn_library_path())\n",
              extra_path=[str(tmp_path)])
    source, path = out.splitlines()
    assert source.startswith("the nvidia-cudnn wheel of this Python"), out
    assert path == str(wheel / "lib" / "libcudnn.so.9"), out


def test_set_cudnn_library_before_use_chooses_it():
    out = run("import dnngraph\n"
              f"dnngraph.set_cudnn_library({str(pathlib.Path(dnngraph.cudnn_library_path()).parent)!r})\n"
              "print(dnngraph.cudnn_library_source())\n"
              "print(dnngraph.cudnn_runtime_version())\n")
    source, version = out.splitlines()
    assert source == "chosen by set_cudnn_library()"
    assert int(version) == dnngraph.cudnn_runtime_version()


def test_choosing_another_library_after_the_first_load_is_refused():
    assert dnngraph.cudnn_runtime_version() > 0
    try:
        dnngraph.set_cudnn_library("/nonexistent/libcudnn.so.9")
    except dnngraph.Error as e:
        assert e.code == dnngraph.ErrorCode.InvalidState
        assert dnngraph.cudnn_library_path() in e.message
    else:
        raise AssertionError("set_cudnn_library after the first load was accepted")
