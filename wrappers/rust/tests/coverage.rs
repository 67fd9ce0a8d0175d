// Every function declared in chainerc-sys (so every CH_API function, see
// chainerc-sys/tests/header_match.rs) is called somewhere in the safe crate,
// or listed here with the reason it is not.
use std::fs;
use std::path::PathBuf;

const NOT_WRAPPED: &[(&str, &str)] = &[
    ("ch_error_status", "Error is built from the status the call returned"),
    (
        "ch_context_set_user_data",
        "Rust functions keep per-application state in their FunctionImpl or with Context::save",
    ),
    ("ch_context_user_data", "as ch_context_set_user_data"),
    ("ch_device_cpu", "Device::Cpu is a value"),
    (
        "ch_optimizer_set_update_hook",
        "a C hook for C libraries (libchainerc_mpi's multi-node optimizer); Rust code runs its own step before Optimizer::update",
    ),
];

#[test]
fn every_sys_function_is_wrapped() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bindings = fs::read_to_string(root.join("chainerc-sys/src/bindings.rs")).unwrap();
    let mut src = String::new();
    for e in fs::read_dir(root.join("src")).unwrap() {
        src += &fs::read_to_string(e.unwrap().path()).unwrap();
    }
    let mut missing = Vec::new();
    let mut n = 0;
    for line in bindings.lines() {
        let Some(rest) = line.trim().strip_prefix("pub fn ") else { continue };
        let name = &rest[..rest.find('(').unwrap()];
        n += 1;
        if NOT_WRAPPED.iter().any(|(m, _)| *m == name) {
            continue;
        }
        // direct calls, or names given to the wrapper macros of functions.rs / nn.rs
        if !src.contains(&format!("sys::{name}(")) && !src.contains(&format!(" {name})")) {
            missing.push(name.to_string());
        }
    }
    assert!(n >= 90, "parsed {n} declarations");
    assert!(missing.is_empty(), "not wrapped: {missing:?}");
}
