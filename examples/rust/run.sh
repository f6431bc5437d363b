#!/bin/sh
# Builds the Rust example crate against the CMake-built library and runs its tests and its three
# programs (ctest runs this: rust_examples). Without cargo it says so and exits 77, which ctest
# reports as skipped. Offline: the crate has no dependencies.
#   run.sh LIB_DIR [TARGET_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lib_dir=$1
target_dir=${2:-$here/target}
if ! command -v cargo > /dev/null 2>&1; then
    for d in "$HOME/.cargo/bin" /usr/local/cargo/bin; do
        [ -x "$d/cargo" ] && PATH=$d:$PATH && break
    done
fi
if ! command -v cargo > /dev/null 2>&1; then
    echo "rust_examples: skipped, cargo is not installed (https://rustup.rs)"
    exit 77
fi
export CONTENTCARDS_LIB_DIR=$lib_dir CARGO_TARGET_DIR=$target_dir
cd "$here"
cargo test --offline --quiet 2>&1
for program in supplemental_feed message_center coupon; do
    echo "--- $program"
    cargo run --offline --quiet --bin "$program"
done
