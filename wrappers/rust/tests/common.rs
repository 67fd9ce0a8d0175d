// Shared test helpers.
#![allow(dead_code)]
use chainerc::*;

pub fn arr64(v: &[f64], shape: &[i64]) -> Array {
    Array::from_slice(v, shape).unwrap()
}
pub fn arr32(v: &[f32], shape: &[i64]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

/// Deterministic values in [lo, hi) (a small LCG; no crates).
pub fn values(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

pub fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol * (1.0 + y.abs()))
}

/// Live handles of the library (tests of one binary run in parallel threads,
/// so leak checks use a lock and compare before/after).
pub static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Serialize a test that creates handles with the leak-checked ones.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn no_leak<F: FnOnce()>(f: F) {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let before = debug::live_handles();
    f();
    let after = debug::live_handles();
    assert_eq!(before, after, "live handles before {before}, after {after}");
}
