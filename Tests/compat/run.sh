#!/usr/bin/env bash
# `make compat-test`: what ships runs on the oldest systems the README promises (glibc 2.28 and
# later, Python 3.9 and later), proven on Debian 11 (glibc 2.31, Python 3.9), not assumed.
#
#   Tests/compat/run.sh WHEEL BUILD_DIR ROOT_DIR
#
# ROOT_DIR holds a Debian 11 root, made here with debootstrap the first time (a few hundred MB
# from the Debian archive; debootstrap is installed with apt-get when missing) and kept: a later
# run only reuses it (it is made again when the package list below changes). Inside it, through
# chroot (so this runs as root), with /proc and a fresh /dev/shm mounted and unmounted at the
# end, also after a failure:
#
#   1. the wheel (manylinux_2_28) installed into a venv of the root's Python 3.9, with pytest,
#      hypothesis and mypy for the tests (downloaded on this machine for Python 3.9, kept in
#      ROOT_DIR/../wheels: the root needs no network);
#   2. the README's Python quick start (Tests/readme, run by the venv's Python: the wheel's
#      package, not the checkout's);
#   3. the contentcards program, three copies: the wheel's (its console script and
#      python -m contentcards) and the one `cmake --install` installs;
#   4. the README's C quick start: the CMake build of BUILD_DIR installed under $HOME/.local in
#      the root (DESTDIR), cards.c compiled there by the root's gcc with pkg-config, and run;
#   5. the Python tests (bindings/python/tests, all but test_packaging.py, which builds the
#      library), against the installed package, on Python 3.9 (test_cli with the wheel's
#      contentcards program).
#
# Environment: COMPAT_MIRROR (the Debian archive; default http://deb.debian.org/debian),
# COMPAT_PYTEST_ARGS (more pytest arguments, e.g. -k or -x).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
wheel=$(realpath "$1")
build=$(cd "$2" && pwd)
root=$(realpath -m "$3")
wheels=$(dirname "$root")/wheels
mirror=${COMPAT_MIRROR:-http://deb.debian.org/debian}
suite=bullseye
packages=python3,python3-venv,gcc,libc6-dev,pkg-config,libcurl4
# What `make python` installs for the tests, with what they need on Python 3.9 only (pip
# download reads the dependencies' markers for the Python it runs on).
test_requirements="pytest hypothesis mypy jsonschema exceptiongroup tomli typing_extensions"
started=$(date +%s)

step() { echo "compat-test: $*"; }
fail() { echo "compat-test: $*" >&2; exit 1; }
unmount_under() {  # DIR: detach every mount under DIR, deepest first (a busy one lazily)
    awk -v dir="$1/" 'index($2, dir) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
        umount "$m" 2> /dev/null || umount -l "$m"
    done
}

[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap and chroot)"
[ -f "$wheel" ] || fail "no wheel at $wheel (make wheel)"
case $(basename "$wheel") in
    *-manylinux_2_28_x86_64.whl) ;;
    *) fail "$(basename "$wheel") is not tagged manylinux_2_28_x86_64" ;;
esac
[ -f "$build/build.ninja" ] || fail "no CMake build in $build (make cmake)"

# -- the Debian 11 root (once) ----------------------------------------------------------------
stamp="$suite $packages"
if [ "$(cat "$root/.contentcards-root" 2>/dev/null)" != "$stamp" ]; then
    if ! command -v debootstrap > /dev/null; then
        step "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null; }
    fi
    step "making a Debian 11 root in $root (debootstrap $suite from $mirror; once, a few minutes)"
    unmount_under "$root"; unmount_under "$root.partial"
    rm -rf "$root" "$root.partial"
    mkdir -p "$(dirname "$root")"
    status=0
    debootstrap --variant=minbase --include="$packages" "$suite" "$root.partial" "$mirror" \
        > "$root.log" 2>&1 || status=$?
    # debootstrap unmounts its /proc and /sys at the end, but not one that was busy then (a
    # process reading it: a recursive grep of the checkout is enough).
    unmount_under "$root.partial"
    [ $status -eq 0 ] || { tail -20 "$root.log" >&2; fail "debootstrap failed (log: $root.log)"; }
    echo "$stamp" > "$root.partial/.contentcards-root"
    mv "$root.partial" "$root"
fi
step "root: $(chroot "$root" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'), glibc $(chroot "$root" getconf GNU_LIBC_VERSION | cut -d' ' -f2), $(chroot "$root" python3 --version)"

# -- the test tools for Python 3.9, downloaded here (the root needs no network) ----------------
if [ "$(cat "$wheels/.requirements" 2>/dev/null)" != "$test_requirements" ]; then
    step "downloading $test_requirements for Python 3.9 into $wheels"
    rm -rf "$wheels" && mkdir -p "$wheels"
    python3 -m pip download --quiet --dest "$wheels" --only-binary=:all: --python-version 3.9 \
        --implementation cp --abi cp39 --abi abi3 --abi none --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform any $test_requirements
    echo "$test_requirements" > "$wheels/.requirements"
fi

# -- into the root: mounts, the files, a clean environment -------------------------------------
work=/tmp/contentcards-compat       # inside the root
finish() {
    status=$?
    unmount_under "$root"
    rm -rf "${root:?}$work"
    if [ $status -eq 0 ]; then
        step "passed in $(($(date +%s) - started)) s"
    else
        echo "compat-test: FAILED (exit $status)" >&2
    fi
    exit $status
}
trap finish EXIT
trap 'exit 1' HUP INT TERM
unmount_under "$root"   # what an interrupted run may have left
mount -t proc proc "$root/proc"
mkdir -p "$root/dev/shm"
mount -t tmpfs -o mode=1777,size=256m shm "$root/dev/shm"

rm -rf "${root:?}$work" && mkdir -p "$root$work/wheels" "$root$work/home" "$root$work/tmp"
cp "$wheel" "$root$work/"
cp "$wheels"/*.whl "$root$work/wheels/"
# The repository's files (the tests, the README, the examples and the reference server).
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$root$work/home" \
    --transform 's,^,repo/,'
# The CMake build installed as `make install PREFIX=$HOME/.local` would, in the root's HOME.
DESTDIR="$root" cmake --install "$build" --prefix "$work/home/.local" --strip > /dev/null

in_root() {  # COMMAND...: run in the root, as root, with a clean environment
    chroot "$root" /usr/bin/env -i PATH="$work/venv/bin:/usr/bin:/bin" HOME="$work/home" \
        LANG=C.UTF-8 TMPDIR="$work/tmp" "$@"
}

# -- 1. the wheel into a venv of Python 3.9 ----------------------------------------------------
step "1. installing $(basename "$wheel") into a Python 3.9 venv"
in_root python3 -m venv "$work/venv"
in_root python -m pip install --quiet --no-index --find-links "$work/wheels" $test_requirements
in_root python -m pip install --quiet --no-index "$work/$(basename "$wheel")"
in_root python -c 'import contentcards as cc, sys; print("compat-test:   contentcards", cc.library_version(), "on Python", sys.version.split()[0], "from", cc.library_path())'

# -- 2. the README's Python quick start --------------------------------------------------------
step "2. the README's Python quick start"
in_root sh -c "cd $work/home/repo && python -m pytest -q -p no:cacheprovider Tests/readme -k 'python or marked'"

# -- 3. the contentcards program ---------------------------------------------------------------
step "3. the contentcards program (the wheel's, python -m contentcards, the installed one)"
feed=$work/home/repo/examples/data/sample_feed.json
for program in contentcards "python -m contentcards" "$work/home/.local/bin/contentcards"; do
    out=$(in_root $program --version)
    [[ $out == "contentcards "* ]] || fail "$program --version printed: $out"
    out=$(in_root $program --json validate "$feed")
    [[ $out == '{"accepted":11,'* ]] || fail "$program --json validate printed: $out"
    echo "compat-test:   $program: $(in_root $program --version), validate: 11 cards accepted"
done

# -- 4. the README's C quick start, built in the root ------------------------------------------
step "4. the README's C quick start, compiled by the root's gcc against the installed library"
python3 - "$repo/README.md" "$root$work/home/c" << 'EOF'
import os, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = dict(re.findall(r"^<!-- quickstart: ([\w-]+) -->\n```\w+\n(.*?)^```$", text, re.M | re.S))
os.makedirs(sys.argv[2])
for name, file in (("c", "cards.c"), ("c-run", "run.sh")):
    with open(os.path.join(sys.argv[2], file), "w", encoding="utf-8") as f:
        f.write(blocks[name])
EOF
out=$(in_root bash -euc "cd $work/home/c && . ./run.sh")
echo "$out" | sed 's/^/compat-test:   /'
grep -q '^badge: [0-9]* unviewed of [0-9]*$' <<< "$out" || fail "the C quick start printed no badge line"

# -- 5. the Python tests on Python 3.9 ---------------------------------------------------------
step "5. the Python tests on Python 3.9, against the installed package"
program=$(in_root python -c 'from contentcards import cli; print(cli.program_path())')
in_root sh -c "cd $work/home/repo && CONTENTCARDS_TEST_INSTALLED=1 CONTENTCARDS_CLI=$program \
    python -m pytest -q -p no:cacheprovider bindings/python/tests \
    --ignore=bindings/python/tests/test_packaging.py ${COMPAT_PYTEST_ARGS:-}"
