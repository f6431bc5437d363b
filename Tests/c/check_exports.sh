#!/bin/sh
# The header and the library in step: every function declared in the header is exported by the
# library, and no undeclared cc_ symbol is (docs/C-API.md, "Names"); every
# declaration starts with CC_API. Also checks the SONAME and that the Swift
# runtime is linked in (no libswift*.so needed). (The version node CONTENTCARDS_1 is an 'A' symbol.)
# GNU unique symbols (u) count as global too: libstdc++ has them, and one would also keep the
# library from being unloaded.
# A third argument, static-cxx, also requires the C++ standard library linked in (CMake's
# build, where the compiler has libstdc++.a: no libstdc++.so to load, docs/PERFORMANCE.md).
# A fourth, static-sqlite, requires SQLite linked in (CMake's build where libsqlite3.a is
# installed: no libsqlite3.so to load and bind, docs/BEHAVIOUR.md, "The store"), its symbols
# hidden like every other non-cc_ one.
# Any further arguments are programs that ship with the library (the contentcards tool), held
# to the same glibc floor as the library.
set -eu
lib=$1
header=$2
want_static_cxx=${3:-}
want_static_sqlite=${4:-}
programs=""
if [ $# -gt 4 ]; then shift 4; programs="$*"; fi
declared=$(grep -oE '\bcc_[a-z0-9_]+[[:space:]]*\(' "$header" | tr -d ' (' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TW]$/ {print $3}' | sed 's/@.*//' | grep '^cc_' | sort -u)
status=0
# comm compares two files: in a folder of our own under $TMPDIR, removed however the script ends.
lists=$(mktemp -d "${TMPDIR:-/tmp}/cc-exports-XXXXXX")
trap 'rm -rf "$lists"' EXIT
trap 'exit 1' HUP INT TERM
printf '%s\n' "$declared" > "$lists/declared"
printf '%s\n' "$exported" > "$lists/exported"
missing=$(comm -23 "$lists/declared" "$lists/exported")
extra=$(comm -23 "$lists/exported" "$lists/declared")
if [ -n "$missing" ]; then echo "declared but not exported: $missing"; status=1; fi
if [ -n "$extra" ]; then echo "exported but not declared: $extra"; status=1; fi
unmarked=$(grep -E '^[a-z].*\bcc_[a-z0-9_]+\(' "$header" | grep -v '^typedef' || true)
if [ -n "$unmarked" ]; then echo "declarations without CC_API: $unmarked"; status=1; fi
others=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[B-Zu]$/ {print $3}' | sed 's/@.*//' | grep -v '^cc_' || true)
if [ -n "$others" ]; then echo "global symbols other than cc_: $(echo $others | head -c 400)"; status=1; fi
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
# The SONAME's number is the header's CC_ABI_VERSION (libcontentcards.so.1).
expected_soname=libcontentcards.so.$(sed -n 's/^#define CC_ABI_VERSION \([0-9][0-9]*\)$/\1/p' "$header")
if [ "$soname" != "$expected_soname" ]; then echo "SONAME is '$soname', expected $expected_soname"; status=1; fi
if readelf -d "$lib" | grep NEEDED | grep -q 'libswift\|libFoundation\|libdispatch'; then
    echo "the library needs Swift runtime libraries:"; readelf -d "$lib" | grep NEEDED; status=1
fi
if [ "$want_static_cxx" = static-cxx ] && readelf -d "$lib" | grep NEEDED | grep -q 'libstdc++'; then
    echo "the library needs libstdc++.so (expected it linked in)"; status=1
fi
if [ "$want_static_sqlite" = static-sqlite ] && readelf -d "$lib" | grep NEEDED | grep -q 'libsqlite3'; then
    echo "the library needs libsqlite3.so (expected SQLite linked in)"; status=1
fi
if [ "$want_static_sqlite" = static-sqlite ] && ! strings -a "$lib" | grep -q sqlite_master; then
    echo "no SQLite inside the library"; status=1
fi
# Nothing of the Swift runtime that the C ABI does not use: its regular expression engine
# (`_StringProcessing`, 0.9 MB, brought in by one call of its `firstRange(of:)`), and, in
# CMake's build (CC_CMAKE_BUILD=1, which its ctest sets), the concurrency runtime and
# libdispatch, brought in by the Swift API's async functions, which CMake leaves out and
# SwiftPM's target keeps. Each was paid for at every load (docs/PERFORMANCE.md, "Cold start").
# Read from the symbol table, so a stripped library is not checked (nm says "no symbols" and
# succeeds: the table's section is looked for instead).
symtab=no
if readelf -S -W "$lib" | grep -q ' \.symtab '; then symtab=yes; fi
unused_pattern='17_StringProcessing'
if [ "${CC_CMAKE_BUILD:-}" = 1 ]; then unused_pattern="$unused_pattern|swift_task_create|dispatch_async_f"; fi
unused=""
if [ $symtab = yes ]; then unused=$(nm "$lib" | grep -oE "$unused_pattern" | sort -u || true); fi
if [ -n "$unused" ]; then
    echo "the library links in Swift runtime parts the C ABI does not use: $(echo $unused)"
    echo "  (String.firstRange(of:), for one, is _StringProcessing's: see Redact.swift)"
    status=1
fi
# The list of the cold start's functions (cmake/cold-start-symbols.txt, laid out together by the
# link) still names the library's functions: a new toolchain's mangling, or a rewrite of the
# open, leaves most of it naming nothing, and the cold start slower without a test failing.
# Regenerate it with `make cold-start-order`. CMake's build only, the one that uses the list
# (SwiftPM's compiles other specializations); a stripped library is not checked.
order="$(dirname "$header")/../cmake/cold-start-symbols.txt"
if [ "${CC_CMAKE_BUILD:-}" = 1 ] && [ -f "$order" ] && [ $symtab = yes ]; then
    nm "$lib" | awk '{print $NF}' | sort -u > "$lists/symbols"
    grep -v '^#' "$order" | sort -u > "$lists/order"
    listed=$(grep -c . "$lists/order" || true)
    present=$(comm -12 "$lists/order" "$lists/symbols" | grep -c . || true)
    if [ "$listed" -gt 0 ] && [ $((present * 2)) -lt "$listed" ]; then
        echo "cmake/cold-start-symbols.txt: only $present of its $listed functions are in the library: run make cold-start-order"
        status=1
    fi
fi
# The oldest glibc the library and the programs run on is the README's promise (2.28: RHEL 8,
# Debian 11, Ubuntu 20.04), whatever glibc built them: no symbol of a newer version may come in.
# Sources/CGlibcFloor/glibc_floor.c keeps the library's functions that got a newer
# version at their old one (and glibc_compat.c replaces arc4random, 2.36), tools/glibc_start.c
# the programs' start; a function this names goes into glibc_floor.c's list.
floor=28
for file in "$lib" $programs; do
    newer=$(objdump -T "$file" | awk -v floor=$floor 'match($0, /GLIBC_2\.[0-9]+/) {
        minor = substr($0, RSTART + 8, RLENGTH - 8); if (minor + 0 > floor) print "  " substr($0, RSTART, RLENGTH) " " $NF }')
    if [ -n "$newer" ]; then
        echo "$file needs a glibc newer than 2.$floor (README: 2.$floor or later):"; echo "$newer"; status=1
    fi
done
newest=$(objdump -T "$lib" $programs | grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_2\.//' | sort -n | tail -1)
count=$(printf '%s\n' "$exported" | grep -c .)
if [ $status -eq 0 ]; then echo "exports: $count cc_ functions, all declared; SONAME $soname; Swift runtime linked in; newest glibc symbol version GLIBC_2.$newest"; echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $status
