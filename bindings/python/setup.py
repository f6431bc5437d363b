"""Build hook of the contentcards package: puts libcontentcards into the wheel.

The metadata is in pyproject.toml. This file only adds:

* the version, read from the ``CC_VERSION_STRING`` macro of the repository's
  ``include/contentcards.h``: the header is the one place the version is written (see
  CHANGELOG.md, "Versions"), and the package carries the library of that version.

* ``build_py`` copies the built library into the package as ``contentcards/libcontentcards.so.1``.
  It takes, in order: ``$CONTENTCARDS_LIB_BUILD`` (a path to a built library; the Makefile sets
  it to a fresh build before calling pip), ``build/lib/libcontentcards.so.1`` (CMake) and
  ``.build/release/libcontentcards.so`` (SwiftPM) of the repository, and otherwise runs
  ``make -C <repo> lib`` and takes ``.build/release/libcontentcards.so``. The repository is
  ``$CONTENTCARDS_REPO``, else found by walking up from this file (pip builds in place, so
  ``../..`` is the checkout). With none of those it stops with a message naming ``make lib``.
* The wheel is platform-specific (``py3-none-<platform>``): it carries a native library.

``pip install -e`` copies nothing: the package then loads the library from the checkout's
build trees (see ``contentcards/_library.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "contentcards"
TARGET_NAME = "libcontentcards.so.1"
REPO_BUILDS = (os.path.join("build", "lib", "libcontentcards.so.1"),
               os.path.join(".build", "release", "libcontentcards.so"))
MAKE_OUTPUT = os.path.join(".build", "release", "libcontentcards.so")


class LibraryNotFound(RuntimeError):
    pass


def repo_roots() -> list[str]:
    """The repository checkouts this source tree may belong to, most specific first."""
    roots: list[str] = []
    env = os.environ.get("CONTENTCARDS_REPO")
    if env:
        roots.append(os.path.abspath(env))
    path = HERE
    while True:
        if os.path.isfile(os.path.join(path, "include", "contentcards.h")):
            roots.append(path)
            break
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return list(dict.fromkeys(roots))


def find_library(allow_make: bool = True) -> str:
    """The built library to put into the package (see the module docstring)."""
    env = os.environ.get("CONTENTCARDS_LIB_BUILD")
    if env:
        if not os.path.isfile(env):
            raise LibraryNotFound(f"CONTENTCARDS_LIB_BUILD={env} does not exist; run `make lib` "
                                  "at the repository root")
        return os.path.abspath(env)
    roots = repo_roots()
    for root in roots:
        for relative in REPO_BUILDS:
            candidate = os.path.join(root, relative)
            if os.path.isfile(candidate):
                return candidate
    if allow_make and roots and os.path.isfile(os.path.join(roots[0], "Makefile")):
        root = roots[0]
        print(f"contentcards: no built library found; running `make -C {root} lib`")
        subprocess.run(["make", "-C", root, "lib"], check=True)
        candidate = os.path.join(root, MAKE_OUTPUT)
        if os.path.isfile(candidate):
            return candidate
        raise LibraryNotFound(f"`make -C {root} lib` did not produce {candidate}")
    raise LibraryNotFound(
        "libcontentcards not found: build it with `make lib` at the repository root, or set "
        "CONTENTCARDS_LIB_BUILD to the path of a built libcontentcards.so.1 (searched: "
        + (", ".join(os.path.join(r, p) for r in roots for p in REPO_BUILDS) or "no checkout "
           f"found above {HERE}; set CONTENTCARDS_REPO") + ")")


def header_version() -> str:
    """CC_VERSION_STRING of the checkout's include/contentcards.h (the one copy of the version)."""
    for root in repo_roots():
        header = os.path.join(root, "include", "contentcards.h")
        with open(header, encoding="utf-8") as f:
            match = re.search(r'^#define CC_VERSION_STRING "([^"]+)"', f.read(), re.MULTILINE)
        if match:
            return match.group(1)
    raise LibraryNotFound("include/contentcards.h with CC_VERSION_STRING not found above "
                          f"{HERE}; build from a checkout or set CONTENTCARDS_REPO")


class BuildPyWithLibrary(build_py):
    """build_py, then the library copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install loads the library from the checkout
        source = find_library()
        target_dir = os.path.join(self.build_lib, PACKAGE)
        os.makedirs(target_dir, exist_ok=True)
        target = os.path.join(target_dir, TARGET_NAME)
        shutil.copyfile(source, target)  # follows the SONAME symlink to the real file
        os.chmod(target, 0o755)
        print(f"contentcards: packaged {source} as {target}")


class BinaryDistribution(Distribution):
    """A distribution with a native part: platform wheels, installed to platlib."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass: dict[str, Any] = {"build_py": BuildPyWithLibrary}

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1
    try:
        from wheel.bdist_wheel import bdist_wheel as _bdist_wheel  # type: ignore[no-redef]
    except ImportError:
        _bdist_wheel = None  # type: ignore[assignment,misc]

if _bdist_wheel is not None:
    class BdistWheel(_bdist_wheel):  # type: ignore[misc,valid-type]
        """Tags the wheel py3-none-<platform>: no CPython extension, one native library."""

        def finalize_options(self) -> None:
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self) -> tuple[str, str, str]:
            _python, _abi, platform = super().get_tag()
            return "py3", "none", platform

    cmdclass["bdist_wheel"] = BdistWheel

if __name__ == "__main__":
    setup(version=header_version(), distclass=BinaryDistribution, cmdclass=cmdclass)
