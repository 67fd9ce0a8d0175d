//! The Rust declarations must match the C headers: every `CH_API` function of
//! include/ch/*.h has an `extern "C"` declaration in src/bindings.rs with the
//! same number of parameters, and bindings.rs declares nothing the headers do
//! not. A new C function without a Rust declaration fails here (run
//! chainerc-sys/gen_bindings.py).
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

fn strip_comments(s: &str) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Name and parameter count of a declaration `... name(params)...`.
fn name_and_arity(decl: &str) -> (String, usize) {
    let open = decl.find('(').expect("a parameter list");
    let name: String = decl[..open]
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let mut depth = 0;
    let mut commas = 0;
    let mut end = open;
    for (i, c) in decl[open..].char_indices() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' if depth > 0 && !(c == '>' && decl[open..].as_bytes()[i - 1] == b'-') => {
                depth -= 1;
                if depth == 0 {
                    end = open + i;
                    break;
                }
            }
            ',' if depth == 1 => commas += 1,
            _ => {}
        }
    }
    let params = decl[open + 1..end].trim();
    let arity = if params.is_empty() || params == "void" { 0 } else { commas + 1 };
    (name, arity)
}

fn header_functions() -> BTreeMap<String, usize> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../include/ch");
    let mut map = BTreeMap::new();
    for entry in fs::read_dir(&dir).expect("include/ch") {
        let path = entry.unwrap().path();
        if path.extension().map(|e| e != "h").unwrap_or(true) {
            continue;
        }
        // libchainerc_mpi's header: its functions are not in libchainerc, which
        // this crate links; the Rust wrapper does not bind them yet.
        if path.file_name().map(|f| f == "distributed.h").unwrap_or(false) {
            continue;
        }
        let text: String = strip_comments(&fs::read_to_string(&path).unwrap())
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut rest = text.as_str();
        while let Some(p) = rest.find("CH_API ") {
            let decl_start = &rest[p + 7..];
            let end = decl_start.find(';').expect("declaration ends with ;");
            let (name, arity) = name_and_arity(&decl_start[..end]);
            map.insert(name, arity);
            rest = &decl_start[end..];
        }
    }
    map
}

fn rust_functions() -> BTreeMap<String, usize> {
    let text = include_str!("../src/bindings.rs");
    let mut map = BTreeMap::new();
    let mut rest = text;
    while let Some(p) = rest.find("pub fn ") {
        let decl = &rest[p + 7..];
        let end = decl.find(';').unwrap();
        let (name, arity) = name_and_arity(&decl[..end]);
        map.insert(name, arity);
        rest = &decl[end..];
    }
    map
}

#[test]
fn every_c_function_is_declared_with_its_arity() {
    let c = header_functions();
    let r = rust_functions();
    assert!(c.len() >= 90, "parsed only {} CH_API functions", c.len());
    let missing: Vec<_> = c.keys().filter(|k| !r.contains_key(*k)).collect();
    assert!(missing.is_empty(), "C functions without a Rust declaration (run gen_bindings.py): {missing:?}");
    let extra: Vec<_> = r.keys().filter(|k| !c.contains_key(*k)).collect();
    assert!(extra.is_empty(), "Rust declarations of functions not in the headers: {extra:?}");
    for (name, n) in &c {
        assert_eq!(r[name], *n, "parameter count of {name}: C {n}, Rust {}", r[name]);
    }
}

#[test]
fn declarations_link_and_run() {
    unsafe {
        assert_eq!(chainerc_sys::ch_version(), chainerc_sys::CH_VERSION);
        let name = std::ffi::CStr::from_ptr(chainerc_sys::ch_status_name(chainerc_sys::CH_ERR_SHAPE));
        assert_eq!(name.to_str().unwrap(), "CH_ERR_SHAPE");
    }
}
