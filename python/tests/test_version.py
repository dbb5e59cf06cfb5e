"""One version number: the root CMakeLists.txt's project(dnngraph VERSION ...) is the source; the
package's metadata reads it (python/pyproject.toml, a regex), the extension is compiled with it
(dnngraph.__version__), and CHANGELOG.md has a section for it."""

import pathlib
import re

import pytest

import dnngraph

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

REPO = pathlib.Path(__file__).resolve().parents[2]


def _project_version():
    cmake = (REPO / "CMakeLists.txt").read_text()
    found = re.search(r"^project\(dnngraph VERSION ([0-9]+\.[0-9]+\.[0-9]+)", cmake, re.M)
    assert found, "the root CMakeLists.txt names no project(dnngraph VERSION x.y.z)"
    return found.group(1)


def test_the_package_version_is_the_cmake_project_version():
    assert dnngraph.__version__ == _project_version()


@pytest.mark.skipif(tomllib is None, reason="reading pyproject.toml needs tomllib (Python >= 3.11)")
def test_the_wheel_metadata_reads_its_version_from_the_cmake_project():
    pyproject = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"], "a second version number in pyproject.toml"
    assert "version" in pyproject["project"]["dynamic"]
    provider = pyproject["tool"]["scikit-build"]["metadata"]["version"]
    assert provider["provider"] == "scikit_build_core.metadata.regex"
    source = (REPO / "python" / provider["input"]).resolve()
    assert source == (REPO / "CMakeLists.txt").resolve()
    found = re.search(provider["regex"], source.read_text())
    assert found and found.group("value") == _project_version()


def test_the_changelog_has_a_section_for_the_version():
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert f"## [{_project_version()}]" in changelog
