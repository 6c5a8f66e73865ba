// Where libloom_runtime (and, with the feature `compiler`, libloom_core)
// are: LOOM_LIB_DIR, else the build tree beside this crate (../../build/lib),
// else the system's library path.  Tests and examples of this crate get an
// rpath to it; a program of another crate sets LD_LIBRARY_PATH or links
// against an installed Loom.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=LOOM_LIB_DIR");
    let dir = match env::var("LOOM_LIB_DIR") {
        Ok(d) => Some(PathBuf::from(d)),
        Err(_) => {
            let tree = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../build/lib");
            if tree.join("libloom_runtime.so").exists() {
                Some(tree.canonicalize().unwrap_or(tree))
            } else {
                None
            }
        }
    };
    if let Some(dir) = dir {
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        println!("cargo:root={}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=loom_runtime");
    if env::var("CARGO_FEATURE_COMPILER").is_ok() {
        println!("cargo:rustc-link-lib=dylib=loom_core");
    }
}
