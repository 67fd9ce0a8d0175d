//! Safe Rust bindings to chainerc, Chainer's define-by-run engine behind a
//! C ABI. Thin over the C API (`chainerc-sys`): every handle type owns one
//! reference (Clone retains, Drop releases), every fallible call returns
//! `Result<T, Error>` with the status kind and the library's message, and
//! custom functions are Rust types implementing [`FunctionImpl`].
//!
//! ```no_run
//! use chainerc::{Variable, functions as F};
//! let x = Variable::from_slice(&[1.0f32, 2.0, 3.0], &[3])?;
//! let y = F::sum(&(&x * &x + 1.0))?;
//! y.backward()?;
//! assert_eq!(x.grad_vec::<f32>()?.unwrap(), vec![2.0, 4.0, 6.0]);
//! # Ok::<(), chainerc::Error>(())
//! ```
#![warn(missing_docs)]
pub mod array;
pub mod config;
pub mod device;
#[cfg(feature = "distributed")]
pub mod distributed;
pub mod error;
pub mod function;
pub mod function_set;
pub mod functions;
pub mod gradient_check;
pub mod kernel;
pub mod nn;
pub mod optimizer;
pub mod serializers;
pub mod variable;

pub use array::{empty_cache, memory_stats, Array, Device, Dtype, Element, MemoryStats};
pub use config::{debug, Mode};
pub use device::{CudaGraph, DeviceScope, Stream};
pub use error::{Cause, Error, ErrorKind, Result};
pub use function::{Context, Function, FunctionImpl, Parameter};
pub use function_set::{FunctionSet, NamedParameter};
pub use gradient_check::{check_backward, check_backward_graph, check_double_backward, numerical_grad, Tolerance};
pub use kernel::{ElementwiseKernel, ReductionKernel};
pub use optimizer::{AdamOptions, Optimizer, OptimizerImpl};
pub use serializers::{load_npz_array, read_idx, save_npz_arrays};
pub use variable::{
    backprop_mode_enabled, enable_backprop, grad, graph_dot, set_enable_backprop, GraphDotOptions, NoBackpropMode,
    Variable,
};

pub use chainerc_sys as sys;

/// Run-time version of the library (major * 10000 + minor * 100 + patch).
pub fn version() -> i32 {
    unsafe { sys::ch_version() }
}
/// Run-time version of the library as text ("0.1.0").
pub fn version_string() -> String {
    unsafe { std::ffi::CStr::from_ptr(sys::ch_version_string()).to_string_lossy().into_owned() }
}
