//! Process-wide settings (include/ch/config.h) and debugging counters.
use crate::error::{check, Error, ErrorKind, Result};
use chainerc_sys as sys;
use std::ffi::{CStr, CString};

/// Train/test flag for functions that behave differently (dropout, batch
/// normalization).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Inference: dropout passes through, batch normalization uses its running averages.
    Test,
    /// Training (the default).
    Train,
    /// Whatever `set_train` last set.
    Default,
}

impl Mode {
    /// The C API's value of the mode.
    pub fn raw(self) -> i32 {
        match self {
            Mode::Test => sys::CH_MODE_TEST,
            Mode::Train => sys::CH_MODE_TRAIN,
            Mode::Default => sys::CH_MODE_DEFAULT,
        }
    }
}

/// Switches the thread's mode between training (`true`) and test (`false`).
pub fn set_train(train: bool) {
    unsafe { sys::ch_config_set_train(train as i32) }
}
/// Whether the thread is in training mode.
pub fn train() -> bool {
    unsafe { sys::ch_config_train() != 0 }
}
/// Threads the CPU kernels and BLAS use, the calling thread included (n >= 1;
/// default: CH_NUM_THREADS, else the number of cores).
pub fn set_num_threads(n: i32) -> Result<()> {
    check(unsafe { sys::ch_config_set_num_threads(n) })
}
/// Threads the CPU kernels and BLAS use.
pub fn num_threads() -> i32 {
    unsafe { sys::ch_config_num_threads() }
}
/// Reseed the CPU random generator.
pub fn seed(seed: u64) {
    unsafe { sys::ch_config_seed(seed) }
}
/// The CPU's GEMM: the candidate libraries, the mode, and the library chosen
/// per shape class (include/ch/config.h, ch_config_blas).
pub fn blas() -> String {
    unsafe { CStr::from_ptr(sys::ch_config_blas()).to_string_lossy().into_owned() }
}
/// Fixes the library of the CPU's matrix products ("openblas", "onednn",
/// "blis", "libxsmm", "onednn-matmul"), or "auto" (the default): the fastest measured per shape class.
/// An error names the candidates when the library is not available.
pub fn set_gemm(library: &str) -> Result<()> {
    let c = CString::new(library)
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("set_gemm: {library:?} contains NUL")))?;
    check(unsafe { sys::ch_config_set_gemm(c.as_ptr()) })
}
/// "auto" or the library set by set_gemm or CH_GEMM.
pub fn gemm() -> String {
    unsafe { CStr::from_ptr(sys::ch_config_gemm()).to_string_lossy().into_owned() }
}
/// Where the GEMM choices are kept on disk for later processes: `Some(dir)`,
/// `Some("")` (kept in this process only: nothing read or written), or `None`
/// (the environment's: $CH_GEMM_CACHE_DIR, else ~/.cache/chainerc/gemm; none
/// with CH_GEMM_CACHE=0). Clears the choices made so far.
pub fn set_gemm_cache(directory: Option<&str>) -> Result<()> {
    match directory {
        None => check(unsafe { sys::ch_config_set_gemm_cache(std::ptr::null()) }),
        Some(d) => {
            let c = CString::new(d)
                .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("set_gemm_cache: {d:?} contains NUL")))?;
            check(unsafe { sys::ch_config_set_gemm_cache(c.as_ptr()) })
        }
    }
}
/// The directory of the GEMM choices; "" when they are not kept on disk.
pub fn gemm_cache() -> String {
    unsafe { CStr::from_ptr(sys::ch_config_gemm_cache()).to_string_lossy().into_owned() }
}
/// Whether the CUDA backend may use cuDNN (the seed's use_cudnn; on at start).
/// Off, or where cuDNN is absent, chainerc's own CUDA kernels run.
pub fn set_use_cudnn(on: bool) {
    unsafe { sys::ch_config_set_use_cudnn(on as i32) }
}
/// Whether the CUDA backend may use cuDNN.
pub fn use_cudnn() -> bool {
    unsafe { sys::ch_config_use_cudnn() != 0 }
}
/// Whether cuDNN is in use (`ch_config_cudnn`): the state (`sys::CH_CUDNN_IN_USE`,
/// `CH_CUDNN_SWITCHED_OFF`, `CH_CUDNN_NOT_BUILT`, `CH_CUDNN_NOT_FOUND`, ...), why
/// not ("" when in use) and `cudnnGetVersion()` (0 where not loaded).
pub fn cudnn_state() -> (i32, String, i32) {
    let mut reason: *const std::os::raw::c_char = std::ptr::null();
    let mut version = 0i32;
    let st = unsafe { sys::ch_config_cudnn(&mut reason, &mut version) };
    let why =
        if reason.is_null() { String::new() } else { unsafe { CStr::from_ptr(reason).to_string_lossy().into_owned() } };
    (st, why, version)
}
/// Calls into cuDNN for chainerc's kernel `function` ("conv2d_forward", "relu",
/// ...), or for all kernels with `None`.
pub fn cudnn_calls(function: Option<&str>) -> i64 {
    match function {
        Some(f) => {
            let c = CString::new(f).unwrap_or_default();
            unsafe { sys::ch_config_cudnn_calls(c.as_ptr()) }
        }
        None => unsafe { sys::ch_config_cudnn_calls(std::ptr::null()) },
    }
}
/// Sets every count of [`cudnn_calls`] back to zero.
pub fn reset_cudnn_calls() {
    unsafe { sys::ch_config_reset_cudnn_calls() }
}
/// Whether float32 GEMMs and convolutions on CUDA may use TF32 tensor cores
/// (off at start).
pub fn set_allow_tf32(on: bool) {
    unsafe { sys::ch_config_set_allow_tf32(on as i32) }
}
/// Whether float32 work on CUDA may use TF32 tensor cores.
pub fn allow_tf32() -> bool {
    unsafe { sys::ch_config_allow_tf32() != 0 }
}
/// Whether work on CUDA devices must give bit-identical results from run to
/// run (off at start; cuDNN then uses deterministic algorithms only).
pub fn set_deterministic(on: bool) {
    unsafe { sys::ch_config_set_deterministic(on as i32) }
}
/// Whether work on CUDA devices must be bit-reproducible.
pub fn deterministic() -> bool {
    unsafe { sys::ch_config_deterministic() != 0 }
}

/// Live handle counts, for leak checks.
pub mod debug {
    use chainerc_sys as sys;
    /// Live handles of every kind.
    pub fn live_handles() -> i64 {
        unsafe { sys::ch_debug_live_handles() }
    }
    /// Live array handles.
    pub fn live_arrays() -> i64 {
        unsafe { sys::ch_debug_live_arrays() }
    }
    /// Live variable handles.
    pub fn live_variables() -> i64 {
        unsafe { sys::ch_debug_live_variables() }
    }
    /// Live function handles.
    pub fn live_functions() -> i64 {
        unsafe { sys::ch_debug_live_functions() }
    }
    /// Prints the live handles to standard error (for leak hunting).
    pub fn report_live_handles() {
        unsafe { sys::ch_debug_report_live_handles() }
    }
}
