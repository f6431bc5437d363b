"""Finds and loads libcontentcards, and checks its ABI version.

Search order:

1. ``$CONTENTCARDS_LIBRARY``: a path to the library. When set it is the only candidate: if it
   cannot be loaded, importing contentcards fails (no fallback to another copy).
2. The package directory: ``contentcards/libcontentcards.so.1`` (put there by ``pip install``).
3. When running from a checkout of the repository: ``<repo>/build/lib/libcontentcards.so.1``
   (CMake) and ``<repo>/.build/release/libcontentcards.so`` (SwiftPM, ``make lib``).
4. The system: ``ctypes.util.find_library("contentcards")``, then ``libcontentcards.so.1``.

A candidate file that exists but fails to load is an error, never skipped silently.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator

__all__ = ["ABI_VERSION", "ENV_VAR", "LibraryLoadError", "candidates", "load"]

#: The ABI version this package is written for (CC_ABI_VERSION of contentcards.h).
ABI_VERSION = 1
ENV_VAR = "CONTENTCARDS_LIBRARY"
LIBRARY_NAME = "libcontentcards.so.1"

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class LibraryLoadError(ImportError):
    """libcontentcards was not found, could not be loaded, or has another ABI version."""


def _repo_root() -> str | None:
    """The repository root when this package runs from a checkout (bindings/python/contentcards)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(PACKAGE_DIR)))
    if os.path.isfile(os.path.join(root, "include", "contentcards.h")):
        return root
    return None


def candidates() -> Iterator[tuple[str, str]]:
    """The places searched, in order, as (path or name, where it comes from). Lazy: the system
    search (which may run ldconfig) only happens when the earlier places have nothing."""
    env = os.environ.get(ENV_VAR)
    if env:
        yield env, f"${ENV_VAR}"
        return
    yield os.path.join(PACKAGE_DIR, LIBRARY_NAME), "package"
    root = _repo_root()
    if root is not None:
        yield os.path.join(root, "build", "lib", LIBRARY_NAME), "checkout (CMake build)"
        yield os.path.join(root, ".build", "release", "libcontentcards.so"), \
            "checkout (SwiftPM build)"
    import ctypes.util   # here: it imports subprocess, which an import should not pay for

    system = ctypes.util.find_library("contentcards")
    if system:
        yield system, "system (find_library)"
    yield LIBRARY_NAME, "system (dynamic linker)"


def _check_abi(lib: ctypes.CDLL, path: str) -> None:
    try:
        abi_version = lib.cc_abi_version
    except AttributeError:
        raise LibraryLoadError(
            f"{path} is not libcontentcards (it has no cc_abi_version)") from None
    abi_version.argtypes = []
    abi_version.restype = ctypes.c_int
    found = int(abi_version())
    if found != ABI_VERSION:
        raise LibraryLoadError(
            f"libcontentcards ABI mismatch: found ABI {found} at {path}, "
            f"this package needs {ABI_VERSION}")


def load() -> tuple[ctypes.CDLL, str]:
    """Loads the library and returns it with the path (or name) it was loaded from."""
    tried: list[str] = []
    for path, origin in candidates():
        is_file = os.sep in path
        if origin == f"${ENV_VAR}":
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                raise LibraryLoadError(
                    f"cannot load libcontentcards from ${ENV_VAR}={path}: {exc}") from exc
        elif is_file:
            if not os.path.exists(path):
                tried.append(f"{path} ({origin}): not found")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                raise LibraryLoadError(
                    f"cannot load libcontentcards from {path} ({origin}): {exc}") from exc
        else:
            try:
                lib = ctypes.CDLL(path)
            except OSError as exc:
                tried.append(f"{path} ({origin}): {exc}")
                continue
        _check_abi(lib, path)
        return lib, path
    raise LibraryLoadError(
        "libcontentcards not found. Build it with `make lib` at the repository root, install "
        f"the package with pip, or set ${ENV_VAR} to the library's path. Tried:\n  "
        + "\n  ".join(tried))
