#!/usr/bin/env python3
"""The last step of `make test`: the tests left nothing in their temporary folder.

    python3 Tests/leftovers.py DIR

`make test` runs every step with TMPDIR=DIR, a fresh folder of its own, and removes it at the
end. Every test removes what it makes there, also when it fails: Swift tests with
`defer { Fixtures.removeTree(dir) }`, the C tests through Tests/c/cc_test.h (removed at exit),
Python tests with pytest's tmp_path or tempfile.TemporaryDirectory, shell scripts with an EXIT
trap. What is not the tests' is left aside:

  pytest-of-USER/             pytest's own tmp_path folders (it keeps the last runs' on purpose)
  TemporaryDirectory.XXXXXX/  the Swift driver's, on every run: empty but for .keep-directory
  _PATH.lock                  SwiftPM's lock files (empty), one per build folder it locked
  swift-generated-sources/    the Swift compiler's macro expansions (@__swiftmacro_*)

Anything else is listed and the check fails (exit 1). Python standard library only.
"""

from __future__ import annotations

import os
import re
import sys


def toolchain_or_pytest(folder: str, name: str) -> bool:
    """Whether the entry `name` of `folder` is pytest's or the Swift toolchain's own."""
    path = os.path.join(folder, name)
    if os.path.islink(path):
        return False
    if os.path.isdir(path):
        inside = os.listdir(path)
        if re.fullmatch(r"pytest-of-.+", name):
            return True
        if re.fullmatch(r"TemporaryDirectory\.\w{6}", name):
            return set(inside) <= {".keep-directory"}
        if name == "swift-generated-sources":
            return all(n.startswith("@__swiftmacro_") for n in inside)
        return False
    return re.fullmatch(r"_.+\.lock", name) is not None and os.path.getsize(path) == 0


def leftovers(folder: str) -> list[str]:
    """What the tests left in `folder`: each entry, and a folder's files under it."""
    found = []
    for name in sorted(os.listdir(folder)):
        if toolchain_or_pytest(folder, name):
            continue
        path = os.path.join(folder, name)
        found.append(name + ("/" if os.path.isdir(path) and not os.path.islink(path) else ""))
        if os.path.isdir(path) and not os.path.islink(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames.sort()
                for f in sorted(filenames):
                    found.append("    " + os.path.relpath(os.path.join(dirpath, f), folder))
    return found


def main() -> int:
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    folder = sys.argv[1]
    found = leftovers(folder)
    entries = [f for f in found if not f.startswith(" ")]
    if not entries:
        print(f"leftovers: the tests left nothing in their TMPDIR ({folder})")
        print("1 passed, 0 failed")
        return 0
    print(f"leftovers: the tests left {len(entries)} entries in their TMPDIR ({folder}); "
          "a test must remove what it makes, also when it fails:")
    for line in found[:200]:
        print("  " + line)
    if len(found) > 200:
        print(f"  ... and {len(found) - 200} more")
    print("0 passed, 1 failed")
    return 1


if __name__ == "__main__":
    sys.exit(main())
