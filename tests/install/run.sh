#!/usr/bin/env bash
# Installs the CMake build into a temporary prefix, then builds an outside program against it
# twice: with pkg-config, and with CMake's find_package. Both must link and run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
prefix=$(mktemp -d /tmp/cc-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
libdir=$(dirname "$(find "$prefix" -name 'libcontentcards.so.1' | head -n 1)")
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"
feed=$root/examples/data/sample_feed.json

# pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc "$root/tests/install/consumer.c" $(pkg-config --cflags --libs contentcards) -Wl,-rpath,"$libdir" -o "$prefix/consumer-pkgconfig"
"$prefix/consumer-pkgconfig" "$feed"

# find_package
cmake -S "$root/tests/install" -B "$prefix/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" > /dev/null
cmake --build "$prefix/consumer-build" > /dev/null
"$prefix/consumer-build/consumer" "$feed"
echo "install: 2 passed, 0 failed"
