"""The setup.py build hook: where it takes the library from, and its message when there is
none. (Building a real wheel needs the network for build isolation: set CONTENTCARDS_TEST_WHEEL=1
to include that check.)"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from types import ModuleType

import pytest

from conftest import BINDING, REPO


def load_setup() -> ModuleType:
    spec = importlib.util.spec_from_file_location("contentcards_setup",
                                                  os.path.join(BINDING, "setup.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() runs only as __main__
    return module


@pytest.fixture
def setup_py(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.delenv("CONTENTCARDS_LIB_BUILD", raising=False)
    monkeypatch.delenv("CONTENTCARDS_REPO", raising=False)
    return load_setup()


def test_env_var_first(setup_py: ModuleType, monkeypatch: pytest.MonkeyPatch,
                       tmp_path: os.PathLike[str]) -> None:
    lib = os.path.join(os.fspath(tmp_path), "libcontentcards.so.1")
    open(lib, "wb").close()
    monkeypatch.setenv("CONTENTCARDS_LIB_BUILD", lib)
    assert setup_py.find_library() == lib
    monkeypatch.setenv("CONTENTCARDS_LIB_BUILD", lib + ".missing")
    with pytest.raises(setup_py.LibraryNotFound, match="make lib"):
        setup_py.find_library()


def test_checkout_builds(setup_py: ModuleType) -> None:
    assert setup_py.repo_roots() == [REPO]
    found = setup_py.find_library(allow_make=False)
    assert found in [os.path.join(REPO, relative) for relative in setup_py.REPO_BUILDS]


def test_make_lib_when_nothing_is_built(setup_py: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: os.PathLike[str]) -> None:
    fake = os.fspath(tmp_path)
    os.makedirs(os.path.join(fake, "include"))
    open(os.path.join(fake, "include", "contentcards.h"), "w").close()
    with open(os.path.join(fake, "Makefile"), "w") as f:
        f.write("lib:\n\tmkdir -p .build/release && echo built > .build/release/libcontentcards.so\n")
    monkeypatch.setattr(setup_py, "HERE", os.path.join(fake, "bindings", "python"))
    assert setup_py.find_library() == os.path.join(fake, ".build", "release",
                                                   "libcontentcards.so")


def test_no_library_anywhere(setup_py: ModuleType, monkeypatch: pytest.MonkeyPatch,
                             tmp_path: os.PathLike[str]) -> None:
    monkeypatch.setattr(setup_py, "HERE", os.fspath(tmp_path))
    with pytest.raises(setup_py.LibraryNotFound, match="`make lib`.*CONTENTCARDS_LIB_BUILD"):
        setup_py.find_library()


@pytest.mark.skipif(not os.environ.get("CONTENTCARDS_TEST_WHEEL"),
                    reason="set CONTENTCARDS_TEST_WHEEL=1 (builds a wheel; needs PyPI)")
def test_wheel(tmp_path: os.PathLike[str]) -> None:
    out = os.fspath(tmp_path)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", out,
                    BINDING], check=True, timeout=300)
    (wheel,) = [name for name in os.listdir(out) if name.endswith(".whl")]
    version = load_setup().header_version()
    assert wheel.startswith(f"contentcards-{version}-py3-none-linux_")
    with zipfile.ZipFile(os.path.join(out, wheel)) as archive:
        names = archive.namelist()
    assert "contentcards/libcontentcards.so.1" in names and "contentcards/py.typed" in names
    metadata = [n for n in names if n.endswith(".dist-info/METADATA")]
    with zipfile.ZipFile(os.path.join(out, wheel)) as archive:
        text = archive.read(metadata[0]).decode("utf-8")
    assert "License-Expression: Apache-2.0" in text
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
