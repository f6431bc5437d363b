"""The ``contentcards`` command-line tool from Python: the package's ``contentcards`` script and
``python -m contentcards``.

The tool is one program, the C program of the library (tools/contentcards.c, docs/CLI.md).
These entry points do not implement it again: they exec that program, with the arguments as
they were given (bytes that are not UTF-8 included), so that its output, exit status and
signals are the program's own and there is nothing to keep in step.

The program is the one that goes with the library the package loaded (``library_path()``):

* ``contentcards/bin/contentcards`` when the library is the package's own
  (``contentcards/libcontentcards.so.1``, as a wheel installs it; the program finds that library
  through its RUNPATH ``$ORIGIN/..``);
* else ``bin/contentcards`` beside the library's folder: a CMake build (``build/lib`` and
  ``build/bin``, what ``pip install -e`` and a checkout use), an installed prefix, or the folder
  above ``$CONTENTCARDS_LIBRARY``.

When it is not there the entry point says so on stderr and exits 127, as a shell does for a
command it cannot find.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import NoReturn

from . import _ffi
from ._library import LIBRARY_NAME, PACKAGE_DIR

__all__ = ["EXIT_NOT_FOUND", "ProgramNotFound", "program_path", "run"]

PROGRAM_NAME = "contentcards"
#: The exit status when there is no program to run (a shell's "command not found").
EXIT_NOT_FOUND = 127


class ProgramNotFound(RuntimeError):
    """The contentcards program is not beside the library the package loaded."""


def _library_file() -> str:
    """The file of the library loaded (found in the process's mappings when the dynamic linker
    found it by name)."""
    path = _ffi.library_path
    if os.sep in path:
        return os.path.abspath(path)
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as maps:
            for line in maps:
                mapped = line.rstrip("\n").split(None, 5)
                if len(mapped) == 6 and os.path.basename(mapped[5]).startswith("libcontentcards.so"):
                    return mapped[5]
    except OSError:
        pass
    raise ProgramNotFound(f"the library was loaded as {path!r} and its file is unknown, so the "
                          "contentcards program beside it cannot be found")


def program_path() -> str:
    """The path of the contentcards program that goes with the library loaded (see above)."""
    library = _library_file()
    folder = os.path.dirname(library)
    if folder == PACKAGE_DIR and os.path.basename(library) == LIBRARY_NAME:
        program = os.path.join(PACKAGE_DIR, "bin", PROGRAM_NAME)
    else:
        program = os.path.join(os.path.dirname(folder), "bin", PROGRAM_NAME)
    if not os.access(program, os.X_OK):
        raise ProgramNotFound(
            f"the contentcards program is not beside the library {library}: {program} "
            f"{'is not executable' if os.path.exists(program) else 'does not exist'}. Install "
            "the package from its wheel, or build the program with the library (make cmake)")
    return program


def run() -> NoReturn:
    """The entry point of the ``contentcards`` script and of ``python -m contentcards``: replaces
    this process with the program, or exits 127 when there is none."""
    try:
        program = program_path()
    except ProgramNotFound as e:
        sys.stderr.write(f"contentcards: {e}\n")
        sys.exit(EXIT_NOT_FOUND)
    for stream in (sys.stdout, sys.stderr):  # None when the descriptor was closed
        if stream is not None:
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: give
    # the program the dispositions any program starts with.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    # sys.argv holds the arguments decoded with surrogateescape: os.execv encodes them back
    # to the bytes given.
    os.execv(program, [program, *sys.argv[1:]])
