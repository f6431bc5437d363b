"""``mypy --strict`` over the package's types: misuse is rejected (every
line of typing/misuse.py whose comment starts with "error" gets an error, and no other line does), and the
package and the examples check clean. mypy is installed into the venv by ``make python``."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import BINDING, REPO

TESTS = os.path.dirname(os.path.abspath(__file__))


def run_mypy(*paths: str, follow: str = "normal") -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is installed by `make python`")
    env = dict(os.environ, MYPYPATH=os.pathsep.join([BINDING, os.path.join(REPO, "examples",
                                                                           "server")]))
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--cache-dir", os.devnull, "--hide-error-context",
                           "--no-error-summary", f"--follow-imports={follow}", *paths],
                          capture_output=True, text=True, timeout=600, cwd=BINDING, env=env)


def test_mypy_rejects_misuse() -> None:
    misuse = os.path.join(TESTS, "typing", "misuse.py")
    with open(misuse) as f:
        expected = {i for i, line in enumerate(f, 1) if "# error:" in line}
    result = run_mypy(misuse)
    lines = {int(m.group(1)) for m in re.finditer(r"misuse\.py:(\d+): error:", result.stdout)}
    assert lines == expected, result.stdout
    assert len(expected) == 14


def test_the_package_and_examples_type_check() -> None:
    # The reference server the demo imports is checked by nothing here (silent).
    result = run_mypy(os.path.join(BINDING, "contentcards"),
                      os.path.join(REPO, "examples", "python"), follow="silent")
    assert result.returncode == 0, result.stdout + result.stderr
