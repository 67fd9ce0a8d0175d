//! Finds libchainerc: the directory named by CHAINERC_LIB_DIR, else what
//! `pkg-config --libs chainerc` says (set PKG_CONFIG_PATH for an uninstalled
//! build, e.g. build/meson-uninstalled), else the repository's build/src.
//! CHAINERC_STATIC=1 links libchainerc.a (with the C++ runtime, OpenBLAS, oneDNN, libmvec, libzip and zlib).
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn pkg_config_dirs() -> Option<Vec<String>> {
    let out = Command::new("pkg-config").args(["--libs-only-L", "chainerc"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.split_whitespace().filter_map(|s| s.strip_prefix("-L")).map(String::from).collect())
}

fn main() {
    println!("cargo:rerun-if-env-changed=CHAINERC_LIB_DIR");
    println!("cargo:rerun-if-env-changed=CHAINERC_STATIC");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let mut dirs: Vec<String> = Vec::new();
    if let Ok(d) = env::var("CHAINERC_LIB_DIR") {
        if !d.is_empty() {
            dirs.push(d);
        }
    }
    if dirs.is_empty() {
        if let Some(d) = pkg_config_dirs() {
            dirs = d;
        }
    }
    if dirs.is_empty() {
        let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
        let repo_build = manifest.join("../../../build/src");
        if repo_build.exists() {
            dirs.push(repo_build.canonicalize().unwrap().display().to_string());
        }
    }
    for d in &dirs {
        println!("cargo:rustc-link-search=native={d}");
    }
    if let Some(d) = dirs.first() {
        println!("cargo:lib_dir={d}");
        // This package's own tests find the shared library through an rpath.
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{d}");
    }
    if env::var("CHAINERC_STATIC").map(|v| v == "1").unwrap_or(false) {
        // The static library's own dependencies in the default Debian build
        // (`pkg-config --static --libs chainerc` lists them).
        println!("cargo:rustc-link-lib=static=chainerc");
        for lib in ["stdc++", "openblas", "dnnl", "gomp", "mvec", "zip", "z"] {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    } else {
        println!("cargo:rustc-link-lib=dylib=chainerc");
    }
}
