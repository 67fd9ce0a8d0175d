// Tests, examples and benches of this package find libchainerc.so at run time
// through an rpath to the directory chainerc-sys linked against.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_CHAINERC_LIB_DIR");
    if let Ok(dir) = std::env::var("DEP_CHAINERC_LIB_DIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
