# Names of the build, each written once. In make's syntax (NAME = value), so that the Makefile
# includes this file; CMakeLists.txt, bindings/python/setup.py, Tests/readme/test_readme.py and
# scripts/install-deps.sh read the same lines. (The SONAME's number is CC_ABI_VERSION of
# include/contentcards.h, which the Makefile and CMake read there.)

# The export list of libcontentcards: the linker version script that keeps only the cc_
# functions global. A path from the top of the repository.
CC_EXPORTS_MAP = Sources/ContentCardsC/exports.map

# Where the Swift toolchain of these machines is installed: added to PATH (last) when no swift
# is on it.
CC_SWIFT_FALLBACK_BIN = /opt/swift/usr/bin
