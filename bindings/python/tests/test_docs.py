"""What a new user meets first, followed as written: the docs' first CLI example from any
directory, the man page in step with docs/CLI.md, the status table of docs/C-API.md, the
binding README's word on what the wheel's library needs, the ContentCards docstring's keyword
arguments, and the package's classifiers."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

import contentcards
from contentcards import _ffi
from contentcards.errors import STATUS_NAMES
from conftest import BINDING, HEADER, REPO

CLI_MD = os.path.join(REPO, "docs/CLI.md")
C_API_MD = os.path.join(REPO, "docs/C-API.md")
MAN_PAGE = os.path.join(REPO, "share", "man", "man1", "contentcards.1")


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```\w*\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_the_first_cli_example_runs_in_any_directory() -> None:
    """docs/CLI.md's first example, as written, in an empty folder outside the repository,
    with the contentcards program on PATH: it gives the output the page shows."""
    from contentcards import cli

    try:
        program = cli.program_path()
    except cli.ProgramNotFound as exc:
        pytest.fail(f"no contentcards program beside the library: {exc}")
    examples = read(CLI_MD).split("\n## Examples\n", 1)[1]
    commands, output = fenced_blocks(examples)[:2]
    assert "contentcards validate" in commands
    folder = tempfile.mkdtemp(prefix="cc-cli-example-")
    try:
        assert not os.path.realpath(folder).startswith(os.path.realpath(REPO) + os.sep)
        env = {k: v for k, v in os.environ.items() if k not in ("CONTENTCARDS_LIBRARY", "PYTHONPATH")}
        env["PATH"] = os.path.dirname(program) + os.pathsep + env.get("PATH", os.defpath)
        result = subprocess.run(["bash", "-euc", commands], cwd=folder, env=env,
                                capture_output=True, text=True, timeout=60)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == output


def test_the_man_page_names_every_command_and_option_of_docs_cli() -> None:
    page = read(MAN_PAGE)
    text = page.replace("\\-", "-")
    cli = read(CLI_MD)
    commands = re.findall(r"^\| `((?:events )?[a-z]+)[ `]", cli.split("## Usage", 1)[1]
                          .split("Options, anywhere", 1)[0], flags=re.MULTILINE)
    assert {"validate", "feed", "counts", "events list", "events flush", "refresh",
            "diagnostics"} <= set(commands)
    for command in commands:
        assert re.search(rf"^\.BI? \"?{re.escape(command)}\b", text, flags=re.MULTILINE), command
    options = set(re.findall(r"`(--[a-z-]+)", cli.split("Options, anywhere", 1)[1]
                             .split("`--` ends the options", 1)[0]))
    assert {"--json", "--log-level", "--user", "--timeout", "--limit"} <= options
    for option in options:
        assert option in text, option
    for status in re.findall(r"^\| (\d+) \|", cli.split("## Exit codes", 1)[1].split("##", 1)[0],
                             flags=re.MULTILINE):
        if status != "127":  # the Python entry points only
            assert f".B {status}\n" in text, status
    if shutil.which("groff"):
        result = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", MAN_PAGE],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and result.stderr == "", result.stderr


def test_the_status_table_of_docs_c_api_describes_every_code_as_the_header_does() -> None:
    """Every code in its number, and none that a function returns called "reserved"."""
    rows = dict(re.findall(r"^\| `(CC_[A-Z_]+)` \| (-?\d+) \|", read(C_API_MD), flags=re.MULTILINE))
    assert {name: int(value) for name, value in rows.items()} == {
        name: code for code, name in STATUS_NAMES.items()}
    header = read(HEADER)
    clauses = "".join(re.findall(r"Errors:(.*?)\*/", header, flags=re.DOTALL))
    returned = set(re.findall(r"\b(CC_E_[A-Z_]+)\b", clauses))
    assert "CC_E_CLOSED" in returned
    for line in read(C_API_MD).splitlines():
        found = re.match(r"^\| `(CC_E_[A-Z_]+)` \| -?\d+ \| (.*) \|$", line)
        if found and found.group(1) in returned:
            assert "reserved" not in found.group(2), line


def test_the_binding_readme_says_what_the_library_needs() -> None:
    """bindings/python/README.md: the library needs glibc's own shared libraries and no other
    (the C++ standard library, GCC's unwinder and SQLite are linked in)."""
    readme = read(os.path.join(BINDING, "README.md"))
    assert "needs only glibc's own shared libraries" in readme
    assert not re.search(r"libstdc\+\+ and\s+libgcc_s, which", readme)
    if not shutil.which("readelf"):
        pytest.skip("readelf is not installed")
    dynamic = subprocess.run(["readelf", "-d", _ffi.library_path], capture_output=True, text=True,
                             check=True, timeout=60).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    glibc = re.compile(r"^(libc|libm|libdl|libpthread|librt|ld-linux[-\w.]*)\.so")
    assert needed and [n for n in needed if not glibc.match(n)] == [], needed


def test_the_docstring_lists_every_keyword_argument() -> None:
    parameters = inspect.signature(contentcards.ContentCards).parameters
    keywords = {name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    listed = set(re.findall(r"``(\w+)=``", contentcards.ContentCards.__doc__ or ""))
    assert keywords == set(contentcards.CONFIG_KEYS)
    assert listed == keywords, (keywords - listed, listed - keywords)


def test_the_classifiers_say_what_the_package_is() -> None:
    text = read(os.path.join(BINDING, "pyproject.toml"))
    block = re.search(r"^classifiers = \[\n(.*?)^\]", text, flags=re.MULTILINE | re.DOTALL)
    assert block is not None
    classifiers = re.findall(r'^\s*"([^"]+)",', block.group(1), flags=re.MULTILINE)
    required = re.search(r'^requires-python = ">=3\.(\d+)"', text, flags=re.MULTILINE)
    assert required is not None
    versions = sorted(int(c.rsplit(".", 1)[1]) for c in classifiers
                      if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    # Every Python 3 from the oldest supported one (3.9) to 3.13, requires-python's included.
    assert versions == list(range(9, 14)) and int(required.group(1)) in versions, versions
    for expected in ("Operating System :: POSIX :: Linux", "Programming Language :: C",
                     "Programming Language :: Swift", "Typing :: Typed"):
        assert expected in classifiers
    assert any(c.startswith("Topic :: ") for c in classifiers)
    assert len(set(classifiers)) == len(classifiers)
    try:
        import trove_classifiers
    except ImportError:
        return
    assert [c for c in classifiers if c not in trove_classifiers.classifiers] == []


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
