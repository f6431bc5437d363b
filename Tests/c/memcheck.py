#!/usr/bin/env python3
"""make memcheck's C programs under valgrind, as ctest runs them (standard library only).

    python3 Tests/c/memcheck.py BUILD_DIR

Runs the tests of the CMake build in BUILD_DIR that carry one of two labels, each with its
command as ctest has it (arguments, the reference server's wrapper, the working directory) and
valgrind put before the program (the first argument in BUILD_DIR/bin):

memcheck-user  the C examples as a user runs them (README, "Checking a program with valgrind"):
               with the shipped suppressions, no "possibly lost" memory either
memcheck       the library's C tests: no invalid access, no "definitely lost" memory

Which programs those are is written once, where each test is added (Tests/c/CMakeLists.txt,
examples/c/CMakeLists.txt). Stops at the first program valgrind fails, and exits 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUPPRESSIONS = os.path.join(ROOT, "share", "contentcards", "contentcards.supp")
# --fair-sched=yes: valgrind runs one thread at a time, and its default lock goes to whichever
# thread asks first. test_badge's three threads read the counts without pause, each read with
# a clock_gettime (a system call under valgrind, which hands the lock round) once the feed holds
# a card that expired: the thread that logs was starved, for more than six minutes instead of
# six seconds. The fair lock serves the threads in turn.
VALGRIND = ["valgrind", "-q", "--error-exitcode=1", "--leak-check=full", "--fair-sched=yes"]
# Each label: valgrind's further options, and the line a clean run prints (with the program's name).
MODES = (
    ("memcheck-user", [f"--suppressions={SUPPRESSIONS}"],
     "valgrind: example {} clean with contentcards.supp"),
    ("memcheck", ["--errors-for-leak-kinds=definite", "--show-leak-kinds=definite"],
     "valgrind: {} clean"),
)


def labelled(build: str, label: str) -> list[dict]:
    """The tests of `build` labelled `label`, in ctest's order, as ctest's JSON gives them."""
    out = subprocess.run(["ctest", "--show-only=json-v1", "-L", f"^{label}$"], cwd=build,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["tests"]


def run(build: str, test: dict, options: list[str], clean: str) -> bool:
    command = test["command"]
    programs = os.path.realpath(os.path.join(build, "bin")) + os.sep
    at = next((i for i, arg in enumerate(command) if os.path.realpath(arg).startswith(programs)), None)
    if at is None:
        print(f"memcheck: {test['name']} runs no program of {programs}: {command}", file=sys.stderr)
        return False
    properties = {p["name"]: p["value"] for p in test.get("properties", [])}
    env = dict(os.environ)
    for setting in properties.get("ENVIRONMENT", []):
        name, _, value = setting.partition("=")
        env[name] = value
    result = subprocess.run(command[:at] + VALGRIND + options + command[at:], env=env,
                            cwd=properties.get("WORKING_DIRECTORY", build), stdout=subprocess.DEVNULL)
    if result.returncode != 0:
        print(f"memcheck: {test['name']} failed under valgrind (exit {result.returncode})", file=sys.stderr)
        return False
    print(clean.format(os.path.basename(command[at])), flush=True)
    return True


def main(build: str) -> int:
    count = 0
    for label, options, clean in MODES:
        tests = labelled(build, label)
        if not tests:
            print(f"memcheck: no test of {build} is labelled {label}", file=sys.stderr)
            return 1
        for test in tests:
            if not run(build, test, options, clean):
                return 1
            count += 1
    return 0 if count else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(os.path.abspath(sys.argv[1])))
