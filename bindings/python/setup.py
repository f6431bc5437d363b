"""Build hook of the contentcards package: builds libcontentcards and the contentcards program
and puts them into the wheel.

The metadata is in pyproject.toml. This file only adds:

* the version, read from the ``CC_VERSION_STRING`` macro of ``include/contentcards.h``: the
  header is the one place the version is written (see CHANGELOG.md, "Versions"), and the
  package carries the library of that version.
* ``sdist`` puts the sources of the library into the source distribution, under ``native/``:
  ``CMakeLists.txt``, ``Package.swift``, ``include/``, ``cmake/``, ``Sources/`` (the Swift core,
  the C exports and the C parts), ``Tests/swift/`` (so that ``Package.swift`` is whole), ``tools/``
  (the command-line program), ``share/`` and the license (``NATIVE_FILES``). A wheel can then
  be built from the sdist alone.
* ``build_py`` builds the library and copies it into the package as
  ``contentcards/libcontentcards.so.1`` (stripped). The library comes from, in order:

  1. ``$CONTENTCARDS_LIB_BUILD``: a path to a built library, taken as it is (the Makefile sets
     it to the build it has just made before calling pip);
  2. the CMake build of the library's sources: ``native/`` of an sdist, else the repository
     checkout this file is in (found by walking up; or ``$CONTENTCARDS_REPO``). It always runs
     ``cmake --build <root>/build --target contentcards contentcards_cli
     contentcards_cli_package`` (configuring ``<root>/build`` first when it is not), which
     recompiles what changed and is a no-op otherwise: a library older than its sources is
     never packaged.

  The command-line tool goes in with it as ``contentcards/bin/contentcards`` (stripped): the C
  program (tools/contentcards.c, docs/CLI.md) as CMake's target ``contentcards_cli_package``
  builds it, ``<build>/package/bin/contentcards`` beside the library's ``<build>/lib``, with the
  RUNPATH ``$ORIGIN/..`` that finds the package's library. The package's ``contentcards``
  script and ``python -m contentcards`` exec it (``contentcards/cli.py``).

  Building needs cmake, ninja and a Swift 6 toolchain (``swiftc`` on PATH, or in the folder
  ``CC_SWIFT_FALLBACK_BIN`` of the sources' ``cmake/build.mk`` names); without them it stops
  with a message naming what is missing.
* ``pip install -e`` builds the library and the program the same way but copies nothing: the
  package then loads the library from the checkout's ``build/lib`` (see
  ``contentcards/_library.py``) and runs the program ``build/bin/contentcards`` beside it, so
  ``make cmake`` updates what an editable install uses.
* The wheel is platform-specific (``py3-none-<platform>``): it carries a native library.
  ``make wheel`` then runs ``auditwheel repair --plat manylinux_2_28_x86_64``, which checks every
  symbol version of the library and of the program against that policy and tags the wheel
  (the newest glibc symbol version either uses is ``GLIBC_2.28``, whatever glibc built them:
  README, "Dependencies"); SQLite is linked into the library. ``make compat-test`` installs the
  wheel on Debian 11 (glibc 2.31, Python 3.9) and runs the tests there.

Stage lines go to stderr (``pip install -v`` shows them, with CMake's own progress).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from typing import Any

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "contentcards"
TARGET_NAME = "libcontentcards.so.1"
#: The command-line program in the package (contentcards/bin/contentcards), and the CMake
#: targets that build it: for the package (RUNPATH $ORIGIN/..) and for the build tree's bin/.
PROGRAM_NAME = os.path.join("bin", "contentcards")
PROGRAM_TARGETS = ("contentcards_cli_package", "contentcards_cli")
#: In an sdist: the folder with the library's sources (a copy of NATIVE_FILES of the repository).
NATIVE = "native"
#: What of the repository the sdist carries to build the library (relative to its root).
NATIVE_FILES = ("CMakeLists.txt", "Package.swift", "LICENSE", "README.md", "CHANGELOG.md",
                "include", "cmake", "Sources", "Tests/swift", "tools", "share")
#: Optional parts of the CMake project, each switched off when its folder is absent (an sdist).
CMAKE_OPTIONAL = {"CC_BUILD_TESTS": "Tests/c", "CC_BUILD_EXAMPLES": "examples/c",
                  "CC_BUILD_BENCH": "bench", "CC_BUILD_TOOLS": "tools"}
#: The file of the build's names (NAME = value lines, read by the Makefile and CMake too), in
#: the sources' root: it says where the Swift toolchain is when it is not on PATH.
BUILD_NAMES = os.path.join("cmake", "build.mk")


class LibraryNotFound(RuntimeError):
    pass


def stage(message: str) -> None:
    """A progress line on stderr (pip shows it with -v)."""
    print(f"contentcards: {message}", file=sys.stderr, flush=True)


def is_root(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "include", "contentcards.h"))


def repo_roots() -> list[str]:
    """The source trees of the library this package may be built from, most specific first:
    $CONTENTCARDS_REPO, native/ of an sdist, the checkout this file is in."""
    roots: list[str] = []
    env = os.environ.get("CONTENTCARDS_REPO")
    if env:
        roots.append(os.path.abspath(env))
    native = os.path.join(HERE, NATIVE)
    if is_root(native):
        roots.append(native)
    path = HERE
    while True:
        if is_root(path):
            roots.append(path)
            break
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return list(dict.fromkeys(roots))


def build_name(name: str) -> str | None:
    """The value of `name` in cmake/build.mk of the first of repo_roots() that has one, or None."""
    for root in repo_roots():
        try:
            with open(os.path.join(root, BUILD_NAMES), encoding="utf-8") as f:
                for line in f:
                    key, equals, value = line.partition(" = ")
                    if equals and key == name:
                        return value.strip()
        except OSError:
            continue
    return None


#: Where the Swift toolchain is installed when it is not on PATH (as the Makefile does): the
#: sources' CC_SWIFT_FALLBACK_BIN.
SWIFT_FALLBACK = build_name("CC_SWIFT_FALLBACK_BIN")


def build_tools() -> tuple[dict[str, str], list[str]]:
    """The environment to build in (PATH with the Swift fallback) and the tools missing."""
    env = dict(os.environ)
    path = env.get("PATH", os.defpath)
    if shutil.which("swiftc", path=path) is None and SWIFT_FALLBACK and os.path.isdir(SWIFT_FALLBACK):
        path = os.pathsep.join([path, SWIFT_FALLBACK])
    env["PATH"] = path
    missing = [tool for tool in ("cmake", "ninja", "swiftc") if shutil.which(tool, path=path) is None]
    return env, missing


def cmake_build(root: str) -> str:
    """Builds (or brings up to date) the library and the program with CMake in <root>/build;
    returns the library's path."""
    build = os.path.join(root, "build")
    target = os.path.join(build, "lib", TARGET_NAME)
    env, missing = build_tools()
    if missing:
        raise LibraryNotFound(
            f"building libcontentcards needs cmake, ninja and a Swift 6 toolchain; not found on "
            f"PATH: {', '.join(missing)}. On Debian/Ubuntu: apt-get install cmake ninja-build "
            "libsqlite3-dev pkg-config, and Swift from swift.org (swiftc on PATH). Or build "
            "the library yourself and set CONTENTCARDS_LIB_BUILD to its path.")
    started = time.monotonic()
    fresh = not os.path.isfile(os.path.join(build, "build.ninja"))
    if fresh:
        stage("building libcontentcards with CMake (1–2 minutes)…")
        options = [f"-D{option}=OFF" for option, folder in CMAKE_OPTIONAL.items()
                   if not os.path.isdir(os.path.join(root, folder))]
        stage(f"configuring {build}")
        run(["cmake", "-S", root, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
             *options], env)
    else:
        stage(f"bringing libcontentcards up to date in {build} (a no-op when no source changed; "
              "1–2 minutes after a change)…")
    run(["cmake", "--build", build, "--target", "contentcards", *PROGRAM_TARGETS], env)
    if not os.path.isfile(target):
        raise LibraryNotFound(f"the CMake build in {build} did not produce {target}")
    stage(f"libcontentcards ready in {time.monotonic() - started:.0f} s: {target}")
    return target


def run(command: list[str], env: dict[str, str]) -> None:
    """Runs a build step with its output on stderr (so that pip -v shows it as it goes)."""
    stage("$ " + " ".join(command))
    sys.stderr.flush()
    result = subprocess.run(command, env=env, stdout=sys.stderr.fileno(), stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise LibraryNotFound(f"{' '.join(command)} failed (exit {result.returncode}); "
                              "its output is above (pip install -v shows it)")


def find_library() -> str:
    """The built library to put into the package (see the module docstring)."""
    env = os.environ.get("CONTENTCARDS_LIB_BUILD")
    if env:
        if not os.path.isfile(env):
            raise LibraryNotFound(f"CONTENTCARDS_LIB_BUILD={env} does not exist; build the "
                                  "library (make cmake) or unset it")
        stage(f"using CONTENTCARDS_LIB_BUILD={env}")
        return os.path.abspath(env)
    roots = repo_roots()
    if not roots:
        raise LibraryNotFound(
            f"the sources of libcontentcards were not found: no include/contentcards.h in "
            f"{os.path.join(HERE, NATIVE)} or above {HERE}. Build from a checkout of the "
            "repository or from the sdist, set CONTENTCARDS_REPO to a checkout, or set "
            "CONTENTCARDS_LIB_BUILD to a built libcontentcards.so.1")
    return cmake_build(roots[0])


def find_program(library: str) -> str:
    """The program to put into the package: <build>/package/bin/contentcards, beside the
    library's <build>/lib (see the module docstring)."""
    program = os.path.join(os.path.dirname(os.path.dirname(library)), "package", "bin",
                           "contentcards")
    if not os.path.isfile(program):
        raise LibraryNotFound(
            f"the contentcards program for the package is not beside {library}: {program} does "
            "not exist. Build it with the library (CMake target contentcards_cli_package: "
            "make cmake)")
    return program


def header_version() -> str:
    """CC_VERSION_STRING of include/contentcards.h (the one copy of the version)."""
    for root in repo_roots():
        header = os.path.join(root, "include", "contentcards.h")
        with open(header, encoding="utf-8") as f:
            match = re.search(r'^#define CC_VERSION_STRING "([^"]+)"', f.read(), re.MULTILINE)
        if match:
            return match.group(1)
    raise LibraryNotFound("include/contentcards.h with CC_VERSION_STRING not found in "
                          f"{os.path.join(HERE, NATIVE)} or above {HERE}; build from a "
                          "checkout or the sdist, or set CONTENTCARDS_REPO")


class BuildPyWithLibrary(build_py):
    """build_py, then the library and the program built and copied into the built package."""

    def run(self) -> None:
        super().run()
        source = find_library()
        if getattr(self, "editable_mode", False):
            stage("editable install: the package loads the library from the checkout's build")
            return
        program = find_program(source)
        target_dir = os.path.join(self.build_lib, PACKAGE)
        strip = shutil.which("strip")
        for built, name in ((source, TARGET_NAME), (program, PROGRAM_NAME)):
            target = os.path.join(target_dir, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(built, target)  # follows the SONAME symlink to the real file
            os.chmod(target, 0o755)
            if strip:  # as `cmake --install --strip` does: 12.2 MB -> 8.8 MB for the library
                subprocess.run([strip, target], check=True)
            stage(f"packaged {built} as {target}{' (stripped)' if strip else ''}")


class SdistWithSources(sdist):
    """sdist, with the library's sources under native/ so that a wheel builds from it alone."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        roots = repo_roots()
        if not roots:
            raise LibraryNotFound(f"no checkout of the repository above {HERE}: the sdist "
                                  "needs the library's sources")
        root = roots[0]
        native = os.path.join(base_dir, NATIVE)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".build*", "build")
        for name in NATIVE_FILES:
            source = os.path.join(root, name)
            if not os.path.exists(source):
                raise LibraryNotFound(f"{source} is missing: the sdist needs it to build the library")
            destination = os.path.join(native, name)
            if os.path.isdir(source):
                shutil.copytree(source, destination, ignore=ignore)
            else:
                os.makedirs(native, exist_ok=True)
                shutil.copyfile(source, destination)
        stage(f"sdist: the library's sources from {root} in {NATIVE}/")


class BinaryDistribution(Distribution):
    """A distribution with a native part: platform wheels, installed to platlib."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass: dict[str, Any] = {"build_py": BuildPyWithLibrary, "sdist": SdistWithSources}

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
