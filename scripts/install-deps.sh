#!/usr/bin/env bash
# Installs what the build and the tests need, when it is missing: cmake and ninja (CMake builds
# Swift only with Ninja), SQLite's headers, libcurl (loaded at run time), pkg-config (the
# install test), valgrind (the memory check), zlib's header (gzip of event batches; zlib itself
# is found at run time through libcurl, which links it). Debian/Ubuntu packages; a no-op when all is there.
set -euo pipefail

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v valgrind >/dev/null || need+=(valgrind)
[ -f /usr/include/sqlite3.h ] || need+=(libsqlite3-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
ldconfig -p 2>/dev/null | grep -q 'libcurl.so.4 ' || need+=(libcurl4)

# Where the Swift toolchain of these machines is (the Makefile and CMake read the same line).
swift_bin=$(sed -n 's/^CC_SWIFT_FALLBACK_BIN = //p' "$(dirname "$0")/../cmake/build.mk")
if ! command -v swift >/dev/null && [ ! -x "$swift_bin/swift" ]; then
    echo "install-deps: no Swift toolchain found (swift on PATH or in $swift_bin); install Swift 6 first" >&2
    exit 1
fi

[ ${#need[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${need[*]}"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null; then
    sudo="sudo"
else
    echo "install-deps: missing ${need[*]} and not root: install them with apt-get" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}" >/dev/null
