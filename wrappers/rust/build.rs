// Tests, examples and benches of this package find libchainerc.so at run time
// through an rpath to the directory chainerc-sys linked against.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_CHAINERC_LIB_DIR");
    println!("cargo:rerun-if-env-changed=CHAINERC_MPI_LIB_DIR");
    if std::env::var("CARGO_FEATURE_DISTRIBUTED").is_ok() {
        // libchainerc_mpi: CHAINERC_MPI_LIB_DIR, else the build tree's
        // src/distributed next to libchainerc, else the linker's default paths.
        let dir = std::env::var("CHAINERC_MPI_LIB_DIR")
            .ok()
            .filter(|d| !d.is_empty())
            .or_else(|| std::env::var("DEP_CHAINERC_LIB_DIR").ok().map(|d| format!("{d}/distributed")));
        if let Some(d) = dir {
            println!("cargo:rustc-link-search=native={d}");
            println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
        }
        println!("cargo:rustc-link-lib=dylib=chainerc_mpi");
    }
    if let Ok(dir) = std::env::var("DEP_CHAINERC_LIB_DIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
