#!/usr/bin/env bash
# Installs the CMake build into a temporary prefix, then builds an outside program against it
# twice: with pkg-config, and with CMake's find_package. Both must link and run. Also checks
# what else the install holds: the command-line tool, a stripped library, the license, the valgrind suppressions, and
# package versions equal to the installed header's.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
prefix=$(mktemp -d "${TMPDIR:-/tmp}/cc-install-XXXXXX")
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
libdir=$(dirname "$(find "$prefix" -name 'libcontentcards.so.1' | head -n 1)")
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"
feed=$root/examples/data/sample_feed.json
version=$(sed -n 's/^#define CC_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/contentcards.h")
passed=0

# The library is stripped (CC_INSTALL_STRIP), the license, the suppressions and the sample feed
# (the README's C quick start reads it) are there.
if readelf -S "$libdir/libcontentcards.so.1" | grep -q '\.symtab'; then
    echo "the installed library is not stripped"; exit 1
fi
for f in share/doc/contentcards/LICENSE share/contentcards/{contentcards.supp,sample_feed.json}; do
    [ -f "$prefix/$f" ] || { echo "$f not installed"; exit 1; }
done
passed=$((passed + 1))

# pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion contentcards)" = "$version" ] || { echo "pkg-config version is not $version"; exit 1; }
cc "$root/tests/install/consumer.c" $(pkg-config --cflags --libs contentcards) -Wl,-rpath,"$libdir" -o "$prefix/consumer-pkgconfig"
"$prefix/consumer-pkgconfig" "$feed"
passed=$((passed + 1))

# find_package, asking for exactly the header's version
cmake -S "$root/tests/install" -B "$prefix/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" -DCC_EXPECT_VERSION="$version" > /dev/null
cmake --build "$prefix/consumer-build" > /dev/null
"$prefix/consumer-build/consumer" "$feed"
passed=$((passed + 1))
# The command-line tool, installed to bin/, runs from there (RUNPATH $ORIGIN/../lib...).
[ "$("$prefix/bin/contentcards" --version)" = "contentcards $version" ] || { echo "bin/contentcards --version failed"; exit 1; }
"$prefix/bin/contentcards" validate "$feed" | grep -q '^accepted 11 cards, left out 3$' || { echo "bin/contentcards validate failed"; exit 1; }
passed=$((passed + 1))
echo "install: $passed passed, 0 failed"
