//! Finds or builds libchainerc.
//!
//! Without the `bundled` feature it links the system's library: the directory
//! named by CHAINERC_LIB_DIR, else what `pkg-config --libs chainerc` says (the
//! libchainerc-dev package, or PKG_CONFIG_PATH for another prefix or a build
//! tree's meson-uninstalled/), else the repository's build/src (a checkout).
//! CHAINERC_STATIC=1 links libchainerc.a with the libraries
//! `pkg-config --static --libs chainerc` lists.
//!
//! With `bundled` (libgit2-sys's pattern) it builds libchainerc from the C++
//! sources the crate carries (csrc/, copied there by scripts/packaging.sh
//! before `cargo package`; in a checkout, the repository itself) with Meson and
//! links it statically. That needs meson >= 1.1, ninja, a C++17 compiler,
//! pkg-config and the library's development packages (Debian:
//! libopenblas-dev zlib1g-dev libzip-dev; libdnnl-dev, libxsmm-dev optional).
//! The build folder lies at the depth of the repository's build/ below a
//! copy of the sources, so a ccache that compiled build/ (CCACHE_BASEDIR,
//! CCACHE_NOHASHDIR) serves every object. CHAINERC_MESON_ARGS adds `meson
//! setup` options (space separated, e.g. "-Dcuda=disabled").
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the library's build reads (the root meson.build's subdirectories with
/// tests, examples and benchmarks off); the same list as the Python sdist's.
const SOURCE_PARTS: [&str; 5] = ["meson.build", "meson.options", "include", "src", "cuda"];

fn pkg_config(args: &[&str], path: Option<&Path>) -> Option<Vec<String>> {
    let mut cmd = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()));
    cmd.args(args).arg("chainerc");
    if let Some(p) = path {
        cmd.env("PKG_CONFIG_PATH", p);
    }
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.split_whitespace().map(String::from).collect())
}

/// "/usr/lib/libxsmmgen.a" -> ("/usr/lib", "xsmmgen", "static"); likewise
/// "dylib" for a .so.
fn library_path(flag: &str) -> Option<(String, String, &'static str)> {
    let p = Path::new(flag);
    let file = p.file_name()?.to_str()?;
    let stem = file.strip_prefix("lib")?;
    let (name, kind) =
        if let Some(n) = stem.strip_suffix(".a") { (n, "static") } else { (stem.strip_suffix(".so")?, "dylib") };
    Some((p.parent()?.to_str()?.to_string(), name.to_string(), kind))
}

/// Links libchainerc.a and what `pkg-config --static --libs chainerc` lists
/// after it (OpenBLAS, oneDNN, libzip, the C++ runtime, ...).
fn link_static(static_libs: &[String]) {
    println!("cargo:rustc-link-lib=static=chainerc");
    for flag in static_libs {
        if let Some(d) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={d}");
        } else if flag == "-lchainerc" {
            continue;
        } else if let Some(l) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={l}");
        } else if let Some((dir, name, kind)) = library_path(flag) {
            // A library named by its path (libxsmmgen.a, CUDA's cudart_static).
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:rustc-link-lib={kind}={name}");
        } else {
            println!("cargo:rustc-link-arg={flag}"); // -pthread
        }
    }
}

fn is_source_root(d: &Path) -> bool {
    fs::read_to_string(d.join("meson.build")).map(|s| s.contains("project('chainerc'")).unwrap_or(false)
}

/// Copies `from` to `to`, leaving files whose bytes did not change untouched
/// (ninja then rebuilds only what changed).
fn sync(from: &Path, to: &Path) {
    let fail = |what: &str, p: &Path, e: std::io::Error| -> ! {
        panic!("chainerc-sys (bundled): cannot {what} {}: {e}", p.display())
    };
    if from.is_dir() {
        fs::create_dir_all(to).unwrap_or_else(|e| fail("create", to, e));
        for entry in fs::read_dir(from).unwrap_or_else(|e| fail("read", from, e)) {
            let entry = entry.unwrap_or_else(|e| fail("read", from, e));
            sync(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        let data = fs::read(from).unwrap_or_else(|e| fail("read", from, e));
        if fs::read(to).ok().as_deref() != Some(&data[..]) {
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).unwrap_or_else(|e| fail("create", parent, e));
            }
            fs::write(to, data).unwrap_or_else(|e| fail("write", to, e));
        }
    }
}

fn tool(name: &str, var: &str) -> String {
    env::var(var).unwrap_or_else(|_| name.to_string())
}

fn run(cmd: &mut Command) {
    let status = cmd.status().unwrap_or_else(|e| panic!("chainerc-sys: cannot run {cmd:?}: {e}"));
    if !status.success() {
        panic!("chainerc-sys: {cmd:?} failed ({status})");
    }
}

fn build_bundled() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let packaged = manifest.join("csrc");
    let root = if is_source_root(&packaged) {
        packaged
    } else {
        let repo = manifest.join("../../..");
        if !is_source_root(&repo) {
            panic!(
                "chainerc-sys (bundled): no sources in {} (scripts/packaging.sh copies them there)",
                packaged.display()
            );
        }
        repo.canonicalize().unwrap()
    };
    for part in SOURCE_PARTS {
        println!("cargo:rerun-if-changed={}", root.join(part).display());
    }
    println!("cargo:rerun-if-env-changed=CHAINERC_MESON_ARGS");
    let tree = PathBuf::from(env::var("OUT_DIR").unwrap()).join("chainerc");
    for part in SOURCE_PARTS {
        sync(&root.join(part), &tree.join(part));
    }
    let build = tree.join("build");
    let mut args: Vec<String> =
        ["-Dtests=false", "-Dexamples=false", "-Dbenchmarks=disabled"].iter().map(|s| s.to_string()).collect();
    args.extend(env::var("CHAINERC_MESON_ARGS").unwrap_or_default().split_whitespace().map(String::from));
    let stamp = build.join(".cargo-setup-args");
    let want = args.join("\n");
    let meson = tool("meson", "MESON");
    if !build.join("build.ninja").exists() || fs::read_to_string(&stamp).ok().as_deref() != Some(&want[..]) {
        let _ = fs::remove_dir_all(&build);
        run(Command::new(&meson).arg("setup").arg(&build).arg(&tree).args(&args));
        fs::write(&stamp, &want).unwrap();
    }
    let jobs = env::var("NUM_JOBS").unwrap_or_else(|_| "2".into());
    run(Command::new(tool("ninja", "NINJA")).arg("-C").arg(&build).arg("-j").arg(jobs).arg("src/libchainerc.a"));
    let lib_dir = build.join("src");
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    let static_libs = pkg_config(&["--static", "--libs"], Some(&build.join("meson-uninstalled")))
        .expect("chainerc-sys (bundled): pkg-config --static --libs chainerc failed on the build");
    link_static(&static_libs);
    println!("cargo:include={}", tree.join("include").display());
}

fn main() {
    println!("cargo:rerun-if-env-changed=CHAINERC_LIB_DIR");
    println!("cargo:rerun-if-env-changed=CHAINERC_STATIC");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    // docs.rs builds documentation only, with neither the library nor a
    // network: nothing to link.
    if env::var("DOCS_RS").is_ok() {
        return;
    }
    if env::var("CARGO_FEATURE_BUNDLED").is_ok() {
        build_bundled();
        return;
    }
    let mut dirs: Vec<String> = Vec::new();
    if let Ok(d) = env::var("CHAINERC_LIB_DIR") {
        if !d.is_empty() {
            dirs.push(d);
        }
    }
    if dirs.is_empty() {
        if let Some(flags) = pkg_config(&["--libs-only-L"], None) {
            dirs = flags.iter().filter_map(|s| s.strip_prefix("-L")).map(String::from).collect();
            if dirs.is_empty() {
                // pkg-config leaves out the system's own directories (the
                // package's /usr/lib/<triplet>): ask for the libdir itself.
                dirs = pkg_config(&["--variable=libdir"], None).unwrap_or_default();
            }
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
        // The static library's own dependencies: the installed chainerc.pc's, else
        // those of the default Debian build.
        let libs = pkg_config(&["--static", "--libs"], None).unwrap_or_else(|| {
            ["-lstdc++", "-lopenblas", "-ldnnl", "-lgomp", "-lmvec", "-lzip", "-lz"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        });
        link_static(&libs);
    } else {
        println!("cargo:rustc-link-lib=dylib=chainerc");
    }
}
