//! Links the library built by CMake: CONTENTCARDS_LIB_DIR names the folder of
//! libcontentcards.so (default: ../../build/lib, the repository's `make cmake`), and the
//! programs find it there at run time too (rpath), as the C examples do.
use std::env;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = env::var("CONTENTCARDS_LIB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| manifest.join("../../build/lib"));
    let dir = dir.canonicalize().unwrap_or(dir);
    println!("cargo:rerun-if-env-changed=CONTENTCARDS_LIB_DIR");
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=contentcards");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    let feed = manifest.join("../data/sample_feed.json");
    println!("cargo:rustc-env=CC_SAMPLE_FEED={}", feed.canonicalize().unwrap_or(feed).display());
}
