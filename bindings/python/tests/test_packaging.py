"""Packaging: the setup.py build hook, the sdist, and (opt-in) the wheel and editable installs.

Always run (a few seconds):

* where the build hook takes the library and the command-line program from, and its messages
  when it cannot build them;
* that it runs the incremental CMake build every time, so a library older than its sources is
  never packaged (on a small C project standing in for the repository: real cmake and ninja);
* the sdist: built for real (``python -m build --sdist --no-isolation``), it holds the tests
  with their conftest.py and the library's sources under native/ (every file of Sources/, the
  header, CMakeLists.txt, Package.swift, cmake/, the program's tools/), and unpacked outside
  the repository its setup.py builds from native/ and CMake configures that tree.

Opt-in, CONTENTCARDS_TEST_PACKAGE=1 (``make package-test``; builds the Swift library twice, a few
minutes, and needs PyPI for build isolation and auditwheel/patchelf on PATH):

* sdist -> wheel built from the sdist alone -> ``auditwheel repair`` (manylinux_2_28_x86_64,
  libsqlite3 bundled) -> installed into a fresh venv -> imported from outside the repository,
  reading cards from the sample feed with the bundled libraries; its ``contentcards`` script
  and ``python -m contentcards`` run the program the wheel carries, on the package's library;
* ``pip install -e`` of a clean copy of the checkout (nothing built) into a fresh venv, then
  ``import contentcards`` and ``python -m contentcards`` from elsewhere.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from types import ModuleType

import pytest

from conftest import BINDING, REPO, SAMPLE_FEED, SAMPLE_ORDER

PACKAGE_TESTS = bool(os.environ.get("CONTENTCARDS_TEST_PACKAGE"))


def load_setup(path: str = os.path.join(BINDING, "setup.py")) -> ModuleType:
    spec = importlib.util.spec_from_file_location("contentcards_setup", path)
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
    with pytest.raises(setup_py.LibraryNotFound, match="does not exist"):
        setup_py.find_library()


def test_the_program_is_beside_the_library(setup_py: ModuleType,
                                           tmp_path: os.PathLike[str]) -> None:
    build = os.fspath(tmp_path)
    lib = os.path.join(build, "lib", "libcontentcards.so.1")
    with pytest.raises(setup_py.LibraryNotFound,
                       match="program for the package is not beside .*contentcards_cli_package"):
        setup_py.find_program(lib)
    program = os.path.join(build, "package", "bin", "contentcards")
    os.makedirs(os.path.dirname(program))
    open(program, "wb").close()
    assert setup_py.find_program(lib) == program


def test_checkout_is_the_root(setup_py: ModuleType) -> None:
    assert setup_py.repo_roots() == [REPO]
    assert setup_py.header_version() == load_header_version()


def load_header_version() -> str:
    with open(os.path.join(REPO, "include", "contentcards.h"), encoding="utf-8") as f:
        match = re.search(r'^#define CC_VERSION_STRING "([^"]+)"', f.read(), re.MULTILINE)
    assert match
    return match.group(1)


FAKE_CMAKE = """cmake_minimum_required(VERSION 3.20)
project(fake C)
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_library(contentcards SHARED lib.c)
set_target_properties(contentcards PROPERTIES VERSION 1.0.0 SOVERSION 1)
add_executable(contentcards_cli main.c)
add_executable(contentcards_cli_package main.c)
set_target_properties(contentcards_cli contentcards_cli_package PROPERTIES OUTPUT_NAME contentcards)
set_target_properties(contentcards_cli_package PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/package/bin)
"""


def fake_repo(root: str, answer: int) -> None:
    """A stand-in for the repository: a C library built by CMake as build/lib/libcontentcards.so.1."""
    os.makedirs(os.path.join(root, "include"), exist_ok=True)
    os.makedirs(os.path.join(root, "bindings", "python"), exist_ok=True)
    with open(os.path.join(root, "include", "contentcards.h"), "w") as f:
        f.write('#define CC_VERSION_STRING "9.9.9"\n')
    with open(os.path.join(root, "CMakeLists.txt"), "w") as f:
        f.write(FAKE_CMAKE)
    with open(os.path.join(root, "lib.c"), "w") as f:
        f.write(f"int cc_fake_answer(void) {{ return {answer}; }}\n")
    with open(os.path.join(root, "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")


def fake_answer(path: str) -> int:
    import ctypes
    lib = ctypes.CDLL(path)
    return int(lib.cc_fake_answer())


def test_builds_every_time_so_a_stale_library_never_ships(
        setup_py: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str],
        capfd: pytest.CaptureFixture[str]) -> None:
    root = os.fspath(tmp_path)
    fake_repo(root, 1)
    monkeypatch.setattr(setup_py, "HERE", os.path.join(root, "bindings", "python"))
    assert setup_py.repo_roots() == [root]
    first = setup_py.find_library()
    assert first == os.path.join(root, "build", "lib", "libcontentcards.so.1")
    assert fake_answer(first) == 1
    assert os.access(setup_py.find_program(first), os.X_OK)  # built with it
    err = capfd.readouterr().err
    assert "contentcards: building libcontentcards with CMake (1–2 minutes)…" in err
    assert "-DCC_BUILD_TESTS=OFF" in err  # the fake has no Tests/c
    # The sources change after the library was built: the next package build rebuilds it.
    fake_repo(root, 2)
    second = setup_py.find_library()
    assert second == first
    shutil.copyfile(second, os.path.join(root, "copy.so"))  # a fresh inode: dlopen reloads
    assert fake_answer(os.path.join(root, "copy.so")) == 2
    assert "bringing libcontentcards up to date" in capfd.readouterr().err


def test_no_build_tools(setup_py: ModuleType, monkeypatch: pytest.MonkeyPatch,
                        tmp_path: os.PathLike[str]) -> None:
    root = os.fspath(tmp_path)
    fake_repo(root, 1)
    monkeypatch.setattr(setup_py, "HERE", os.path.join(root, "bindings", "python"))
    monkeypatch.setattr(setup_py, "SWIFT_FALLBACK", os.path.join(root, "no-swift"))
    monkeypatch.setenv("PATH", os.path.join(root, "empty"))
    with pytest.raises(setup_py.LibraryNotFound,
                       match="not found on PATH: cmake, ninja, swiftc.*CONTENTCARDS_LIB_BUILD"):
        setup_py.find_library()


def test_no_sources_anywhere(setup_py: ModuleType, monkeypatch: pytest.MonkeyPatch,
                             tmp_path: os.PathLike[str]) -> None:
    monkeypatch.setattr(setup_py, "HERE", os.fspath(tmp_path))
    with pytest.raises(setup_py.LibraryNotFound,
                       match="sources of libcontentcards were not found.*CONTENTCARDS_LIB_BUILD"):
        setup_py.find_library()


def build_sdist(out: str) -> str:
    """The sdist of a clean copy of bindings/python (setuptools would otherwise also list what
    an earlier build's contentcards.egg-info/SOURCES.txt names), the repository found through
    CONTENTCARDS_REPO."""
    source = os.path.join(out, "source")
    shutil.copytree(BINDING, source, ignore=shutil.ignore_patterns(
        "*.egg-info", "build", "dist", "__pycache__", ".pytest_cache"))  # LICENSE: its content
    command = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", out, source]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "CONTENTCARDS_REPO": REPO})
    assert result.returncode == 0, (
        "building the sdist failed (needs `build` and setuptools>=77: `make python` installs "
        "them):\n" + result.stdout + result.stderr)
    (sdist,) = glob.glob(os.path.join(out, "contentcards-*.tar.gz"))
    return sdist


def test_sdist_has_the_sources_and_the_tests(tmp_path: os.PathLike[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTENTCARDS_REPO", raising=False)
    out = os.fspath(tmp_path)
    sdist = build_sdist(out)
    version = load_header_version()
    prefix = f"contentcards-{version}/"
    assert os.path.basename(sdist) == f"contentcards-{version}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = {name[len(prefix):] for name in archive.getnames() if name.startswith(prefix)}
        assert {"setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE",
                "contentcards/__init__.py", "contentcards/_library.py", "contentcards/py.typed",
                *(f"tests/{name}" for name in ("conftest.py", "test_packaging.py")),
                "native/CMakeLists.txt",
                "native/Package.swift", "native/LICENSE", "native/include/contentcards.h",
                "native/cmake/contentcards.pc.in", "native/cmake/ContentCardsConfig.cmake.in",
                "native/Sources/ContentCardsC/exports.map",
                "native/Sources/CContentCardsFast/fast.c", "native/tools/contentcards.c",
                "native/tools/unicode_width.h"} <= names
        # Every source file of the library, the Swift core's included.
        sources = []
        for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, "Sources")):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            sources += [os.path.relpath(os.path.join(dirpath, f), REPO) for f in filenames]
        assert len([s for s in sources if s.endswith(".swift")]) > 20
        missing = [s for s in sources if f"native/{s}" not in names]
        assert not missing, missing
        assert not [n for n in names if "__pycache__" in n or "/build/" in n or "/.build" in n]
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12, 3.11.4 and later
            archive.extractall(out, filter="data")
        else:
            archive.extractall(out)
    # Unpacked away from the checkout, its setup.py builds from native/ alone...
    unpacked = os.path.join(out, prefix)
    setup = load_setup(os.path.join(unpacked, "setup.py"))
    assert setup.repo_roots() == [os.path.join(unpacked, "native")]
    assert setup.header_version() == version
    # ... and CMake configures that tree (without the repository's tests, examples and bench).
    env, missing_tools = setup.build_tools()
    assert not missing_tools, missing_tools
    options = [f"-D{o}=OFF" for o in setup.CMAKE_OPTIONAL]
    result = subprocess.run(["cmake", "-S", os.path.join(unpacked, "native"), "-B",
                             os.path.join(out, "configure"), "-G", "Ninja", *options],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


# -- opt-in: the real wheel and the editable install ----------------------------------------

package_test = pytest.mark.skipif(
    not PACKAGE_TESTS, reason="set CONTENTCARDS_TEST_PACKAGE=1 (make package-test): builds the "
                              "Swift library twice, needs PyPI, auditwheel and patchelf")


def fresh_venv(path: str) -> str:
    """A new virtual environment without the system's packages; its python."""
    subprocess.run([sys.executable, "-m", "venv", path], check=True, timeout=120)
    return os.path.join(path, "bin", "python")


def outside_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "CONTENTCARDS_LIBRARY", "CONTENTCARDS_LIB_BUILD",
                         "CONTENTCARDS_REPO", "LD_LIBRARY_PATH")}


READ_CARDS = """
import json, os, sys
import contentcards as cc
print(json.dumps({"path": cc.library_path(), "version": cc.library_version()}))
with cc.ContentCards(user_id="u-1", refresh_tokens=0, source={"file": sys.argv[1]}) as c:
    c.refresh(10)
    print(json.dumps([card.id for card in c.cards()]))
"""


@package_test
def test_wheel_from_sdist_repaired_installs_anywhere(tmp_path: os.PathLike[str]) -> None:
    import json

    out = os.fspath(tmp_path)
    dist = os.path.join(out, "dist")
    # sdist, then the wheel from the sdist (what `python -m build` does), with build isolation.
    result = subprocess.run([sys.executable, "-m", "build", "--outdir", dist, BINDING],
                            capture_output=True, text=True, timeout=1200, env=outside_env())
    assert result.returncode == 0, result.stdout + result.stderr
    log = result.stdout + result.stderr
    assert "contentcards: building libcontentcards with CMake (1–2 minutes)…" in log
    assert re.search(r"native/build/lib/libcontentcards\.so\.1", log), "not built from native/"
    (raw,) = glob.glob(os.path.join(dist, "*.whl"))
    version = load_header_version()
    assert os.path.basename(raw) == f"contentcards-{version}-py3-none-linux_x86_64.whl"

    repaired = os.path.join(out, "repaired")
    # The policy make wheel asks for: auditwheel fails when a symbol version is newer.
    result = subprocess.run([sys.executable, "-m", "auditwheel", "repair", "--plat",
                             "manylinux_2_28_x86_64", "--wheel-dir", repaired, raw],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = glob.glob(os.path.join(repaired, "*.whl"))
    assert os.path.basename(wheel) == \
        f"contentcards-{version}-py3-none-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        wheel_text = archive.read(f"contentcards-{version}.dist-info/WHEEL").decode()
    assert "Tag: py3-none-manylinux_2_28_x86_64" in wheel_text
    assert "contentcards/libcontentcards.so.1" in names
    assert "contentcards/bin/contentcards" in names
    bundled = [n for n in names if n.startswith("contentcards.libs/")]
    # SQLite is linked into the library: nothing for auditwheel to graft.
    assert not any(os.path.basename(n).startswith("libsqlite3") for n in bundled), names
    print(f"\nwheel {os.path.basename(wheel)}: {os.path.getsize(wheel)} bytes; bundled: {bundled}")

    python = fresh_venv(os.path.join(out, "venv"))
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-index", wheel], check=True,
                   timeout=300)
    work = os.path.join(out, "elsewhere")
    os.makedirs(work)
    result = subprocess.run([python, "-I", "-c", READ_CARDS, SAMPLE_FEED], cwd=work,
                            capture_output=True, text=True, timeout=60, env=outside_env())
    assert result.returncode == 0, result.stdout + result.stderr
    loaded, ids = (json.loads(line) for line in result.stdout.splitlines())
    assert loaded["path"].startswith(os.path.join(out, "venv")), loaded
    assert loaded["version"] == version
    assert ids == SAMPLE_ORDER
    # The installed library loads no SQLite of the system's, nor a grafted one: its own is
    # linked in.
    lib = loaded["path"]
    needed = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True,
                            check=True).stdout
    assert "libsqlite3" not in needed, needed
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True, check=True).stdout
    assert "libsqlite3" not in ldd, ldd
    # The command-line program is in the package and runs on the package's library, through
    # the console script and python -m alike.
    program = os.path.join(os.path.dirname(lib), "bin", "contentcards")
    assert os.access(program, os.X_OK)
    dynamic = subprocess.run(["readelf", "-d", program], capture_output=True, text=True,
                             check=True).stdout
    assert "[$ORIGIN/..]" in dynamic, dynamic
    ldd = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
    resolved = [line.split("=>")[1].split("(")[0].strip() for line in ldd.splitlines()
                if "libcontentcards.so.1 =>" in line]
    assert [os.path.realpath(path) for path in resolved] == [os.path.realpath(lib)], ldd
    script = os.path.join(out, "venv", "bin", "contentcards")
    outputs = set()
    for command in ([program], [script], [python, "-I", "-m", "contentcards"]):
        result = subprocess.run([*command, "validate", SAMPLE_FEED], cwd=work,
                                capture_output=True, timeout=60, env=outside_env())
        assert result.returncode == 0, (command, result.stderr)
        outputs.add(result.stdout)
    (validated,) = outputs
    assert validated.startswith(b"accepted 11 cards, left out 3\n")


def clean_copy(destination: str) -> None:
    """The checkout's files as a clean clone has them (git's list, the working tree's content):
    nothing built, no build/, no .build/."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = os.path.join(REPO, name)
        if not os.path.lexists(source):
            continue  # deleted in the working tree
        target = os.path.join(destination, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)


@package_test
def test_editable_install_of_a_clean_checkout(tmp_path: os.PathLike[str]) -> None:
    out = os.fspath(tmp_path)
    clone = os.path.join(out, "clone")
    clean_copy(clone)
    assert not os.path.exists(os.path.join(clone, "build"))
    python = fresh_venv(os.path.join(out, "venv"))
    result = subprocess.run([python, "-m", "pip", "install", "-v", "-e",
                             os.path.join(clone, "bindings", "python")],
                            capture_output=True, text=True, timeout=1200, env=outside_env())
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert "contentcards: building libcontentcards with CMake (1–2 minutes)…" in \
        result.stdout + result.stderr
    work = os.path.join(out, "elsewhere")
    os.makedirs(work)
    result = subprocess.run(
        [python, "-c", "import contentcards; print(contentcards.library_version()); "
                       "print(contentcards.library_path())"],
        cwd=work, capture_output=True, text=True, timeout=60, env=outside_env())
    assert result.returncode == 0, result.stdout + result.stderr
    version, path = result.stdout.split()
    assert version == load_header_version()
    assert path == os.path.join(clone, "build", "lib", "libcontentcards.so.1")
    # The command line: the checkout's program beside that library.
    result = subprocess.run([python, "-m", "contentcards", "--version"], cwd=work,
                            capture_output=True, text=True, timeout=60, env=outside_env())
    assert (result.returncode, result.stdout) == (0, f"contentcards {version}\n"), result.stderr
