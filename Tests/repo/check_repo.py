#!/usr/bin/env python3
"""Checks of the repository itself (Python standard library only).

    python3 Tests/repo/check_repo.py [BUILD_DIR]

version   The version is written once, in include/contentcards.h (CC_VERSION_MAJOR/MINOR/PATCH
          and CC_VERSION_STRING). Fails when the four macros disagree, when another file of the
          repository writes the version literally, when a package file sets it instead of reading
          it, when CHANGELOG.md has a released section newer than the header or no Unreleased
          section, and, given a CMake build directory, when what CMake made from it disagrees
          (the library's file name, the pkg-config file, the CMake package version file).
links     The repository is self-contained: every repository path it names under docs/ (and
          the other top-level folders, for paths with a file extension) exists, and nothing
          points at design documents that are not part of it.
code-map  docs/CODE-MAP.md is in step with the tree: every path and file name it writes in
          backquotes exists (a bare file name somewhere in the source folders, a path from
          the top or from Sources/ContentCards); every folder under Sources/ and every module
          of the Python package (bindings/python/contentcards) is named in it; and every Swift
          file of the core (Sources/ContentCards/<Folder>/) is named by its file name in the
          map's section for its folder (a "###" heading naming `Sources/ContentCards/<Folder>`),
          where no file of another folder is named.
long-files  No source file (.swift, .c, .h, .py, .rs, .sh) of Sources, bindings/python/contentcards,
          tools, bench, examples or tests is over 400 lines unless docs/CODE-MAP.md's section
          "Long files, and why" names it (with its reason); a file named there is over 400
          lines (a file split since leaves the list).

Prints "N passed, M failed"; exits 1 on a failure.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = "include/contentcards.h"
TEXT_SUFFIXES = (".md", ".h", ".c", ".py", ".swift", ".txt", ".sh", ".toml", ".in", ".cmake",
                 ".supp", ".map", ".modulemap", "Makefile", ".mk", "run", ".json", ".cfg", ".yml")
# Where the version may be written literally: the header, and the changelog's history.
VERSION_ALLOWED = {HEADER, "CHANGELOG.md"}
# Top-level folders whose paths are checked when a file names them.
PATH_ROOTS = ("docs", "examples", "include", "Tests", "bindings", "cmake", "share",
              "scripts", "bench", "fuzz", "Sources", ".ci")
PATH_RE = re.compile(r"(?<![\w./-])((?:%s)/[\w./+-]*[\w])" % "|".join(re.escape(r) for r in PATH_ROOTS))
# Documents of the original design, which was never part of the repository (spelled with [x]
# so that this file does not name them itself). The wire document is named by its path, docs/...
OUTSIDE_RE = re.compile(r"SEMANTIC[S]\.md|ARCHITECTUR[E]\.md|(?<![\w-])AB[I]\.md|shared/desig[n]|"
                        r"\.\./share[d]/|(?<![\w/])WIR[E]\.md")

failures: list[str] = []
passed = 0


def check(ok: bool, what: str, count: bool = True) -> None:
    """One check; count=False for a check of one line among many (counted by its caller)."""
    global passed
    if ok:
        passed += count
    else:
        failures.append(what)
        print(f"FAIL: {what}")


def tracked_files() -> list[str]:
    """The repository's text files: git's list in a checkout, else a walk of the tree."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        files = [f for f in out.stdout.decode("utf-8").split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            dirnames[:] = [d for d in dirnames if not d.startswith((".build", "build", ".git"))]
            files += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in filenames]
    return [f for f in files if f.endswith(TEXT_SUFFIXES) and not f.startswith("fuzz/corpus/")
            and os.path.isfile(os.path.join(ROOT, f)) and not os.path.islink(os.path.join(ROOT, f))]


def read(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def header_version() -> tuple[int, int, int, str]:
    text = read(HEADER)
    values = {}
    for name in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define CC_VERSION_{name} (\d+)$", text, re.MULTILINE)
        check(m is not None, f"{HEADER}: #define CC_VERSION_{name} <number> not found")
        values[name] = int(m.group(1)) if m else -1
    m = re.search(r'^#define CC_VERSION_STRING "([^"]*)"$', text, re.MULTILINE)
    check(m is not None, f'{HEADER}: #define CC_VERSION_STRING "..." not found')
    string = m.group(1) if m else ""
    expected = f"{values['MAJOR']}.{values['MINOR']}.{values['PATCH']}"
    check(string == expected,
          f'{HEADER}: CC_VERSION_STRING "{string}" is not MAJOR.MINOR.PATCH "{expected}"')
    return values["MAJOR"], values["MINOR"], values["PATCH"], string


def check_version(files: list[str], build: str | None) -> None:
    major, minor, patch, version = header_version()
    literal = re.compile(r"(?<![\d.])%s(?![\d.])" % re.escape(version))
    for path in files:
        if path in VERSION_ALLOWED:
            continue
        for number, line in enumerate(read(path).splitlines(), 1):
            check(not literal.search(line),
                  f"{path}:{number}: writes the version {version} (write it only in {HEADER}): "
                  f"{line.strip()[:100]}", count=False)
    check(True, "")  # the version is written nowhere else

    cmake = read("CMakeLists.txt")
    check(re.search(r"project\(contentcards VERSION \$\{", cmake) is not None,
          "CMakeLists.txt: project() must take its VERSION from the header, not a literal")
    pyproject = read("bindings/python/pyproject.toml")
    check(re.search(r'^dynamic = \["version"\]', pyproject, re.MULTILINE) is not None
          and re.search(r"^version\s*=", pyproject, re.MULTILINE) is None,
          'bindings/python/pyproject.toml: the version must be dynamic (setup.py reads the header)')
    init = read("bindings/python/contentcards/__init__.py")
    check(re.search(r"^__version__\b.*=\s*_ffi\.version\(\)", init, re.MULTILINE) is not None,
          "bindings/python/contentcards/__init__.py: __version__ must come from the library")

    changelog = read("CHANGELOG.md")
    check(re.search(r"^## \[Unreleased\]$", changelog, re.MULTILINE) is not None,
          "CHANGELOG.md: no '## [Unreleased]' section")
    current = (major, minor, patch)
    for m in re.finditer(r"^## \[(\d+)\.(\d+)\.(\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.MULTILINE):
        released = tuple(int(g) for g in m.groups())
        check(released <= current,
              f"CHANGELOG.md: release {'.'.join(map(str, released))} is newer than the header's "
              f"{version}: set the CC_VERSION_* macros of {HEADER}")

    if build:
        check(os.path.isfile(os.path.join(build, "lib", f"libcontentcards.so.{version}")),
              f"{build}/lib/libcontentcards.so.{version} missing: CMake did not take the header's version")
        pc = os.path.join(build, "contentcards.pc")
        if os.path.isfile(pc):
            with open(pc, encoding="utf-8") as f:
                check(f"\nVersion: {version}\n" in f.read(), f"{pc}: Version is not {version}")
        cv = os.path.join(build, "ContentCardsConfigVersion.cmake")
        if os.path.isfile(cv):
            with open(cv, encoding="utf-8") as f:
                check(f'set(PACKAGE_VERSION "{version}")' in f.read(), f"{cv}: PACKAGE_VERSION is not {version}")


def check_links(files: list[str]) -> None:
    before = len(failures)
    for path in files:
        for number, line in enumerate(read(path).splitlines(), 1):
            for m in OUTSIDE_RE.finditer(line):
                check(False, f"{path}:{number}: points at a document outside the repository "
                             f"({m.group(0)}): {line.strip()[:100]}", count=False)
            for named in PATH_RE.findall(line):
                named = named.rstrip(".")
                if not (named.startswith("docs/") or os.path.splitext(named)[1]):
                    continue  # a folder or a name without an extension: not checked
                check(os.path.exists(os.path.join(ROOT, named)),
                      f"{path}:{number}: names {named}, which does not exist", count=False)
    if len(failures) == before:
        check(True, "")  # every named path exists, nothing points outside


CODE_MAP = "docs/CODE-MAP.md"
CORE = "Sources/ContentCards"
PYTHON_PACKAGE = "bindings/python/contentcards"
# Where a bare file name of the map may be (the file system's, not git's: a file added and not
# yet committed counts).
SOURCE_FOLDERS = ("Sources", "include", PYTHON_PACKAGE, "tools", "bench")
BARE_FILE_RE = re.compile(r"^[\w+.-]+\.(?:swift|c|h|py|map|modulemap|txt)$")


def source_files(folder: str, suffix: str = "") -> list[str]:
    """Files under a folder of the working tree, relative to the repository, hidden ones left out."""
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in sorted(filenames)
                  if f.endswith(suffix) and not f.startswith(".")]
    return found


def check_code_map() -> None:
    before = len(failures)
    if not os.path.isfile(os.path.join(ROOT, CODE_MAP)):
        check(False, f"{CODE_MAP} is missing")
        return
    text = read(CODE_MAP)
    # The backquoted spans, with the line each is on (the map has no code blocks).
    spans: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        spans += [(number, span) for span in line.split("`")[1::2]]
    names = {span for _, span in spans}

    # 1. What it names exists.
    basenames = {os.path.basename(f) for folder in SOURCE_FOLDERS for f in source_files(folder)}
    basenames |= {f for f in os.listdir(ROOT) if os.path.isfile(os.path.join(ROOT, f))}
    for number, span in spans:
        if " " in span:
            continue
        if "/" in span:
            candidates = [span, os.path.join(CORE, span)]
            ok = any(glob.glob(os.path.join(ROOT, c)) for c in candidates)
            check(ok, f"{CODE_MAP}:{number}: names {span}, which does not exist", count=False)
        elif "*" in span and "." in span:
            ok = any(fnmatch.fnmatch(b, span) for b in basenames)
            check(ok, f"{CODE_MAP}:{number}: names {span}, which matches no file", count=False)
        elif BARE_FILE_RE.match(span):
            check(span in basenames, f"{CODE_MAP}:{number}: names {span}, which is no file of "
                                     f"{', '.join(SOURCE_FOLDERS)} or the top", count=False)

    # 2. Every folder of Sources/ is named.
    for entry in sorted(os.listdir(os.path.join(ROOT, "Sources"))):
        folder = f"Sources/{entry}"
        if entry.startswith(".") or not os.path.isdir(os.path.join(ROOT, folder)):
            continue
        named = any(n == folder or n.startswith(folder + "/") for n in names)
        check(named, f"{CODE_MAP}: does not name {folder} (say what the folder is)", count=False)

    # 3. Every module of the Python package is named.
    for module in source_files(PYTHON_PACKAGE, ".py"):
        check(os.path.basename(module) in names, f"{CODE_MAP}: does not name {module} (say what it is)",
              count=False)

    # 4. Every Swift file of the core is named in its folder's section, and only there.
    sections: dict[str, str] = {}
    for m in re.finditer(r"^### .*`%s/([^`/]+)`.*\n((?:(?!#{1,3} ).*\n?)*)" % re.escape(CORE), text, re.MULTILINE):
        sections[m.group(1)] = m.group(2)
    core_folders = sorted(e for e in os.listdir(os.path.join(ROOT, CORE))
                          if os.path.isdir(os.path.join(ROOT, CORE, e)) and not e.startswith("."))
    for loose in source_files(CORE, ".swift"):
        if os.path.dirname(loose) == CORE:
            check(False, f"{loose}: a Swift file of the core outside a folder (put it in one of "
                         f"{', '.join(core_folders)}, and in {CODE_MAP})", count=False)
    for folder in core_folders:
        if folder not in sections:
            check(False, f"{CODE_MAP}: no section (a \"###\" heading naming `{CORE}/{folder}`) "
                         f"for the core's folder {folder}", count=False)
            continue
        section = set(sections[folder].split("`")[1::2])
        files = {os.path.basename(f) for f in source_files(f"{CORE}/{folder}", ".swift")}
        for name in sorted(files - section):
            check(False, f"{CORE}/{folder}/{name} is not named in {CODE_MAP}, section {folder}: "
                         f"say there what it is", count=False)
        for name in sorted(n for n in section - files if n.endswith(".swift") and "/" not in n):
            check(False, f"{CODE_MAP}, section {folder}, names {name}, which is not in "
                         f"{CORE}/{folder}", count=False)
    if len(failures) == before:
        check(True, "")  # the code map is in step with the tree


LONG_LINES = 400
LONG_SECTION = "Long files, and why"
LONG_FOLDERS = ("Sources", PYTHON_PACKAGE, "tools", "bench", "examples", "Tests")
LONG_SUFFIXES = (".swift", ".c", ".h", ".py", ".rs", ".sh")


def line_count(path: str) -> int:
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read().count(b"\n")


def check_long_files() -> None:
    before = len(failures)
    text = read(CODE_MAP) if os.path.isfile(os.path.join(ROOT, CODE_MAP)) else ""
    m = re.search(r"^## %s\n((?:(?!## ).*\n?)*)" % re.escape(LONG_SECTION), text, re.MULTILINE)
    if not m:
        check(False, f"{CODE_MAP}: no section \"## {LONG_SECTION}\" (the files over {LONG_LINES} lines, "
                     f"each with its reason)")
        return
    listed = {span for span in m.group(1).split("`")[1::2] if "/" in span and " " not in span}
    for folder in LONG_FOLDERS:
        for path in source_files(folder):
            parts = path.split(os.sep)
            if not path.endswith(LONG_SUFFIXES) or any(p in ("build", "target", "__pycache__") for p in parts):
                continue
            lines = line_count(path)
            check(lines <= LONG_LINES or path in listed,
                  f"{path} is {lines} lines, over {LONG_LINES}: split it along its seams, or name it "
                  f"with its reason in {CODE_MAP}, section \"{LONG_SECTION}\"", count=False)
    for path in sorted(listed):
        if os.path.isfile(os.path.join(ROOT, path)):
            lines = line_count(path)
            check(lines > LONG_LINES, f"{CODE_MAP}, section \"{LONG_SECTION}\", names {path}, which is "
                                      f"{lines} lines: take it off the list", count=False)
    if len(failures) == before:
        check(True, "")  # every long file has its reason


def main() -> int:
    build = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    files = tracked_files()
    check_version(files, build)
    check_links(files)
    check_code_map()
    check_long_files()
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
