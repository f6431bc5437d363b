#!/usr/bin/env bash
# Installs the CMake build into temporary prefixes, then builds an outside program against each
# installation twice: with pkg-config, and with CMake's find_package. Both must link and run.
#
# Four layouts, each a different CMAKE_INSTALL_LIBDIR / CMAKE_INSTALL_INCLUDEDIR:
#   default      what the build was configured with (lib, include)
#   multiarch    lib/x86_64-linux-gnu and a custom include/contentcards-1 (two levels each), the
#                installed tree then moved to another folder (relocatable: pkg-config finds it
#                from where contentcards.pc lies)
#   abs-libdir   an absolute LIBDIR outside the prefix, a relative INCLUDEDIR
#   abs-include  a relative lib64, an absolute INCLUDEDIR outside the prefix
# Every layout must give pkg-config --cflags/--libs and find_package's target paths that are the
# directories the header and the library were installed in, and an installed contentcards
# tool that finds the library.
#
# The other layouts reconfigure the build folder given (only its install rules and the
# installed tool's RUNPATH depend on them: a relink of one program, no rebuild), and the
# folder's own CMAKE_INSTALL_* values are put back when the script ends, also after a failure.
#
# Also checks what else the install holds: the command-line tool and its manual page, a stripped
# library, the license, the documents (docs/*.md and the wire format's JSON Schemas, under
# share/doc/contentcards), the valgrind suppressions, the sample feed, and package versions
# equal to the installed header's.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cc-install-XXXXXX")
feed=$root/examples/data/sample_feed.json
passed=0

cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
orig_libdir=$(cached CMAKE_INSTALL_LIBDIR)
orig_includedir=$(cached CMAKE_INSTALL_INCLUDEDIR)
reconfigured=0
reconfigure() {  # LIBDIR INCLUDEDIR
    cmake -S "$root" -B "$build" -DCMAKE_INSTALL_LIBDIR="$1" -DCMAKE_INSTALL_INCLUDEDIR="$2" > /dev/null
    cmake --build "$build" > /dev/null
}
finish() {
    status=$?
    if [ $reconfigured = 1 ]; then
        reconfigure "$orig_libdir" "$orig_includedir" || { echo "could not restore $build's install directories"; status=1; }
    fi
    rm -rf "$work"
    exit $status
}
trap finish EXIT
trap 'exit 1' HUP INT TERM

fail() { echo "install ($layout): $*"; exit 1; }

# Where a pkg-config variable points, resolved (it may be ${pcfiledir}/../.. and so on).
pc_dir() { realpath -m "$(pkg-config --variable="$1" contentcards)"; }

check_layout() {  # LAYOUT PREFIX LIBDIR_FULL INCLUDEDIR_FULL
    layout=$1 prefix=$2 libdir=$3 includedir=$4
    local version
    [ -f "$libdir/libcontentcards.so.1" ] || fail "no $libdir/libcontentcards.so.1"
    [ -f "$includedir/contentcards.h" ] || fail "no $includedir/contentcards.h"
    version=$(sed -n 's/^#define CC_VERSION_STRING "\(.*\)"$/\1/p' "$includedir/contentcards.h")

    # pkg-config: the variables point where the files are, and a program builds and runs.
    export PKG_CONFIG_PATH=$libdir/pkgconfig
    [ "$(pkg-config --modversion contentcards)" = "$version" ] || fail "pkg-config version is not $version"
    [ "$(pc_dir libdir)" = "$(realpath "$libdir")" ] || fail "pkg-config libdir $(pc_dir libdir), installed in $libdir"
    [ "$(pc_dir includedir)" = "$(realpath "$includedir")" ] || fail "pkg-config includedir $(pc_dir includedir), installed in $includedir"
    rm -f "$work/consumer-pkgconfig"
    # shellcheck disable=SC2046
    cc "$root/Tests/install/consumer.c" $(pkg-config --cflags --libs contentcards) \
        -Wl,-rpath,"$(pkg-config --variable=libdir contentcards)" -o "$work/consumer-pkgconfig"
    "$work/consumer-pkgconfig" "$feed" > /dev/null || fail "the pkg-config consumer failed"
    passed=$((passed + 1))

    # find_package, asking for exactly the header's version: the imported target's paths are
    # the installed ones.
    # CMake finds the package under the prefix in lib/ and lib/<arch>/ (Debian's CMake does not
    # look in lib64/); elsewhere it is named, as its user would.
    local hint=()
    case $libdir in
        "$prefix/lib"|"$prefix/lib/$(cc -dumpmachine)") ;;
        *) hint=(-DContentCards_DIR="$libdir/cmake/ContentCards");;
    esac
    rm -rf "$work/consumer-build"
    cmake -S "$root/Tests/install" -B "$work/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
          "${hint[@]}" -DCMAKE_BUILD_RPATH="$libdir" -DCC_EXPECT_VERSION="$version" \
          -DCC_EXPECT_INCLUDEDIR="$(realpath "$includedir")" -DCC_EXPECT_LIBRARY="$(realpath "$libdir")/libcontentcards.so.$version" \
          > "$work/consumer-cmake.log" || { cat "$work/consumer-cmake.log"; fail "find_package failed"; }
    cmake --build "$work/consumer-build" > /dev/null
    "$work/consumer-build/consumer" "$feed" > /dev/null || fail "the find_package consumer failed"
    passed=$((passed + 1))

    # The command-line tool, installed to bin/, finds the library (its RUNPATH), and its
    # manual page and the documents its help names are installed.
    [ "$("$prefix/bin/contentcards" --version)" = "contentcards $version" ] || fail "bin/contentcards --version failed"
    "$prefix/bin/contentcards" validate "$feed" | grep -q '^accepted 11 cards, left out 3$' || fail "bin/contentcards validate failed"
    local doc=share/doc/contentcards
    for f in share/man/man1/contentcards.1 $doc/docs/CLI.md $doc/docs/C-API.md $doc/docs/WIRE.md \
             $doc/docs/schema/{sync-request,sync-response,event-batch}.schema.json; do
        [ -f "$prefix/$f" ] || fail "$f not installed"
    done
    passed=$((passed + 1))
    echo "install ($layout): pkg-config, find_package and bin/contentcards: libdir $libdir, includedir $includedir"
}

# 1. The build's own layout.
prefix=$work/default
cmake --install "$build" --prefix "$prefix" > /dev/null
layout=default
libdir=$prefix/$orig_libdir
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"
# The library is stripped (CC_INSTALL_STRIP); the license, the suppressions and the sample feed
# (the README's C quick start reads it) are there.
if readelf -S "$libdir/libcontentcards.so.1" | grep -q '\.symtab'; then
    fail "the installed library is not stripped"
fi
for f in share/doc/contentcards/{LICENSE,README.md} share/contentcards/{contentcards.supp,sample_feed.json}; do
    [ -f "$prefix/$f" ] || fail "$f not installed"
done
for doc in "$root"/docs/*.md; do
    [ -f "$prefix/share/doc/contentcards/docs/$(basename "$doc")" ] || fail "docs/$(basename "$doc") not installed"
done
passed=$((passed + 1))
check_layout default "$prefix" "$libdir" "$prefix/$orig_includedir"

# 2. Multiarch: two-level LIBDIR and INCLUDEDIR; then the installed tree is moved.
reconfigured=1
reconfigure lib/x86_64-linux-gnu include/contentcards-1
cmake --install "$build" --prefix "$work/multiarch" > /dev/null
mv "$work/multiarch" "$work/moved"
check_layout multiarch-moved "$work/moved" "$work/moved/lib/x86_64-linux-gnu" "$work/moved/include/contentcards-1"

# 3. An absolute LIBDIR (outside the prefix), a relative INCLUDEDIR.
reconfigure "$work/abs/lib" include
cmake --install "$build" --prefix "$work/abs-libdir" > /dev/null
check_layout abs-libdir "$work/abs-libdir" "$work/abs/lib" "$work/abs-libdir/include"

# 4. A relative LIBDIR, an absolute INCLUDEDIR (outside the prefix).
reconfigure lib64 "$work/abs/include"
cmake --install "$build" --prefix "$work/abs-include" > /dev/null
check_layout abs-include "$work/abs-include" "$work/abs-include/lib64" "$work/abs/include"

echo "install: $passed passed, 0 failed"
