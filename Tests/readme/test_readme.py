"""The README's quick starts run as written, from a directory outside the repository.

Each code block the README marks with ``<!-- quickstart: NAME -->`` is taken verbatim, written
to a temporary directory outside the repository and run there:

c, c-run        the library installed from the CMake build (as ``make install`` does) under
                ``$HOME/.local`` of a temporary HOME; ``cards.c`` compiled and run by the shell
                block, with pkg-config, against that installation.
c-valgrind      the valgrind command of "Checking a program with valgrind", as written, on
                that ``cards`` program, with the installed suppressions: no error, no leak.
python          run by this interpreter (the venv of ``make python``, where the package is
                installed), with no PYTHONPATH: the installed package, not the checkout.
swift-package,  a package next to a ``contentcards`` folder that is the repository (a symbolic
swift           link), built with ``swift run``. 1-2 minutes: only with
                CONTENTCARDS_TEST_SWIFT_QUICKSTART=1 (``make package-test`` sets it).

No quick start may draw a control card: the output never names ``coupon-control``.

    python -m pytest Tests/readme          # CONTENTCARDS_BUILD: the CMake build (default build/)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
BUILD = os.environ.get("CONTENTCARDS_BUILD") or os.path.join(REPO, "build")
CONTROL_ID = "coupon-control"
MARKER = re.compile(r"^<!-- quickstart: ([\w-]+) -->\n```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def quickstarts() -> dict[str, str]:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    blocks = {m.group(1): m.group(3) for m in MARKER.finditer(text)}
    assert text.count("<!-- quickstart:") == len(blocks), "a quickstart marker not followed by a block"
    return blocks


@pytest.fixture
def outside() -> Iterator[str]:
    """A temporary directory that is not inside the repository."""
    path = tempfile.mkdtemp(prefix="cc-quickstart-")
    assert not os.path.realpath(path).startswith(os.path.realpath(REPO) + os.sep)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def swift_fallback_bin() -> str:
    """Where the Swift toolchain of these machines is when it is not on PATH: the
    CC_SWIFT_FALLBACK_BIN line of cmake/build.mk, which the Makefile and setup.py read too."""
    with open(os.path.join(REPO, "cmake", "build.mk"), encoding="utf-8") as f:
        for line in f:
            key, equals, value = line.partition(" = ")
            if equals and key == "CC_SWIFT_FALLBACK_BIN":
                return value.strip()
    raise AssertionError("cmake/build.mk has no CC_SWIFT_FALLBACK_BIN line")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "CONTENTCARDS_LIBRARY", "PKG_CONFIG_PATH")}
    env.update(extra)
    return env


def test_every_quickstart_is_marked() -> None:
    assert set(quickstarts()) == {"c", "c-run", "c-valgrind", "python", "swift-package", "swift"}


def test_c(outside: str) -> None:
    blocks = quickstarts()
    if not os.path.isfile(os.path.join(BUILD, "build.ninja")):
        pytest.fail(f"no CMake build in {BUILD}: run `make cmake` (or set CONTENTCARDS_BUILD)")
    home = os.path.join(outside, "home")
    os.makedirs(home)
    # What `make install PREFIX=$HOME/.local` does, from the existing build.
    subprocess.run(["cmake", "--install", BUILD, "--prefix", os.path.join(home, ".local"),
                    "--strip"], check=True, capture_output=True)
    work = os.path.join(outside, "work")
    os.makedirs(work)
    with open(os.path.join(work, "cards.c"), "w", encoding="utf-8") as f:
        f.write(blocks["c"])
    result = subprocess.run(["bash", "-euc", blocks["c-run"]], cwd=work, env=clean_env(HOME=home),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert re.search(r"^tile-2 +Pour-over bundle$", out, re.MULTILINE), out
    assert re.search(r"^coupon-1 +.* -20$", out, re.MULTILINE), out
    assert CONTROL_ID not in out, "the quick start drew a control card"
    assert re.search(r"^badge: \d+ unviewed of \d+$", out, re.MULTILINE), out

    # The README's valgrind command, as written, on the program just built.
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (make deps installs it)")
    result = subprocess.run(["bash", "-euc", blocks["c-valgrind"]], cwd=work,
                            env=clean_env(HOME=home), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^badge: \d+ unviewed of \d+$", result.stdout, re.MULTILINE), result.stdout
    assert "ERROR SUMMARY: 0 errors" in result.stderr, result.stderr


def test_python(outside: str) -> None:
    script = os.path.join(outside, "quickstart.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(quickstarts()["python"])
    # The quick start writes its feed into a temporary folder of its own: in this one, removed
    # with it.
    result = subprocess.run([sys.executable, "-I", script], cwd=outside,
                            env=clean_env(TMPDIR=outside), capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout.splitlines()
    assert out[:2] == ["coupon-1 20% off 20", "tile-1 Espresso kit None"], out
    assert CONTROL_ID not in result.stdout, "the quick start drew a control card"
    assert out[2] == "badge: 1 unviewed of 4", out
    assert out[3].startswith("False ") and "no url" in out[3], out


@pytest.mark.skipif(not os.environ.get("CONTENTCARDS_TEST_SWIFT_QUICKSTART"),
                    reason="set CONTENTCARDS_TEST_SWIFT_QUICKSTART=1 (builds the Swift core: 1-2 min)")
def test_swift(outside: str) -> None:
    blocks = quickstarts()
    # "cloned next to your package": a link named contentcards to this checkout, whose own
    # folder may have any name (the snippet's name: argument is what makes that work).
    os.symlink(REPO, os.path.join(outside, "contentcards"))
    app = os.path.join(outside, "cards")
    os.makedirs(os.path.join(app, "Sources", "cards"))
    with open(os.path.join(app, "Package.swift"), "w", encoding="utf-8") as f:
        f.write(blocks["swift-package"])
    with open(os.path.join(app, "Sources", "cards", "main.swift"), "w", encoding="utf-8") as f:
        f.write(blocks["swift"])
    env = clean_env(TMPDIR=outside)  # its feed file (and the toolchain's files): removed with it
    fallback = swift_fallback_bin()
    if shutil.which("swift", path=env.get("PATH")) is None and os.path.isdir(fallback):
        env["PATH"] = env.get("PATH", os.defpath) + os.pathsep + fallback
    result = subprocess.run(["swift", "run", "cards"], cwd=app, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["tile-1 Espresso kit"], result.stdout
