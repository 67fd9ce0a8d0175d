//! Variables (`ch_variable`) and their operators.
use crate::array::Array;
use crate::error::{check, Result};
use crate::function::Function;
use crate::functions as F;
use chainerc_sys as sys;
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::ptr::{self, NonNull};

/// An array with the history of the computation that produced it: a
/// reference-counted handle. `clone()` is another handle to the same
/// variable; `Drop` releases it, and the graph behind a variable is freed
/// when no variable references it.
#[repr(transparent)]
pub struct Variable {
    raw: NonNull<sys::ch_variable>,
}

// Handles may be retained and released from any thread; a graph must not be
// used from two threads at once, which `&mut`-free sharing cannot express, so
// Variable is Send (move a graph to another thread) but not Sync.
unsafe impl Send for Variable {}

impl Variable {
    /// # Safety
    /// `raw` must be a live ch_variable reference that the caller owns.
    pub unsafe fn from_raw(raw: *mut sys::ch_variable) -> Variable {
        Variable { raw: NonNull::new(raw).expect("a non-NULL ch_variable") }
    }
    /// Gives up ownership: the raw handle, which the caller must release.
    pub fn into_raw(self) -> *mut sys::ch_variable {
        let p = self.raw.as_ptr();
        std::mem::forget(self);
        p
    }
    /// The raw `ch_variable` handle (still owned by `self`).
    pub fn as_ptr(&self) -> *mut sys::ch_variable {
        self.raw.as_ptr()
    }

    /// A root variable holding `data` (shared, not copied).
    pub fn new(data: &Array) -> Result<Variable> {
        Variable::with_volatile(data, false)
    }
    /// A volatile variable records no history (inference).
    pub fn new_volatile(data: &Array) -> Result<Variable> {
        Variable::with_volatile(data, true)
    }
    /// A root variable, volatile (no history) or not.
    pub fn with_volatile(data: &Array, is_volatile: bool) -> Result<Variable> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_variable_new(&mut out, data.as_ptr(), is_volatile as i32) })?;
        Ok(unsafe { Variable::from_raw(out) })
    }
    /// A root variable holding a copy of `values` with `shape`.
    pub fn from_slice<T: crate::Element>(values: &[T], shape: &[i64]) -> Result<Variable> {
        Variable::new(&Array::from_slice(values, shape)?)
    }

    /// The data array (shared).
    pub fn data(&self) -> Result<Array> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_variable_data(&mut out, self.as_ptr()) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// Replaces the data array (shared, not copied).
    pub fn set_data(&self, data: &Array) -> Result<()> {
        check(unsafe { sys::ch_variable_set_data(self.as_ptr(), data.as_ptr()) })
    }
    /// The gradient, or None before backward reached it.
    pub fn grad(&self) -> Result<Option<Array>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_variable_grad(&mut out, self.as_ptr()) })?;
        Ok(if out.is_null() { None } else { Some(unsafe { Array::from_raw(out) }) })
    }
    /// Set (Some) or clear (None) the gradient, e.g. the initial error.
    pub fn set_grad(&self, grad: Option<&Array>) -> Result<()> {
        check(unsafe { sys::ch_variable_set_grad(self.as_ptr(), grad.map_or(ptr::null_mut(), |g| g.as_ptr())) })
    }
    /// The function application that created this variable (None for a root).
    pub fn creator(&self) -> Result<Option<Function>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_variable_creator(&mut out, self.as_ptr()) })?;
        Ok(if out.is_null() { None } else { Some(unsafe { Function::from_raw(out) }) })
    }
    /// The graph behind this variable as Graphviz DOT text (see [`graph_dot`]).
    pub fn graph_dot(&self) -> Result<String> {
        graph_dot(&[self], &GraphDotOptions::default())
    }
    /// Whether the variable records no history.
    pub fn is_volatile(&self) -> bool {
        unsafe { sys::ch_variable_is_volatile(self.as_ptr()) != 0 }
    }
    /// Whether backward computes a gradient for this variable (default true;
    /// set false on inputs such as training data to skip their gradients).
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        check(unsafe { sys::ch_variable_set_requires_grad(self.as_ptr(), requires_grad as i32) })
    }
    /// Whether backward computes a gradient for this variable.
    pub fn requires_grad(&self) -> bool {
        unsafe { sys::ch_variable_requires_grad(self.as_ptr()) != 0 }
    }
    /// Number of elements of the data.
    pub fn size(&self) -> usize {
        unsafe { sys::ch_variable_size(self.as_ptr()) as usize }
    }
    /// Error backpropagation from this variable (its grad, or ones for a
    /// one-element variable, is the initial error). Intermediate grads are
    /// freed as they are used.
    pub fn backward(&self) -> Result<()> {
        check(unsafe { sys::ch_variable_backward(self.as_ptr(), 0) })
    }
    /// Backward keeping the grads of intermediate variables.
    pub fn backward_retain_grad(&self) -> Result<()> {
        check(unsafe { sys::ch_variable_backward(self.as_ptr(), 1) })
    }
    /// Backward with gradients built as graphs (Chainer's
    /// backward(enable_double_backprop=True)): read them with grad_var() and
    /// differentiate them again. Clear a root's grad (set_grad(None)) when
    /// done: its grad_var may reference it.
    pub fn backward_double(&self, retain_grad: bool) -> Result<()> {
        let o = sys::ch_backward_options {
            version: sys::CH_BACKWARD_OPTIONS_VERSION as u32,
            retain_grad: retain_grad as i32,
            enable_double_backprop: 1,
        };
        check(unsafe { sys::ch_variable_backward_ex(self.as_ptr(), &o) })
    }
    /// The gradient as a variable (Chainer's grad_var), None when there is none.
    pub fn grad_var(&self) -> Result<Option<Variable>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_variable_grad_var(&mut out, self.as_ptr()) })?;
        Ok(if out.is_null() { None } else { Some(unsafe { Variable::from_raw(out) }) })
    }
    /// Cut the graph behind this variable (truncated BPTT).
    pub fn unchain_backward(&self) -> Result<()> {
        check(unsafe { sys::ch_variable_unchain_backward(self.as_ptr()) })
    }
    /// The data copied to a Vec.
    pub fn to_vec<T: crate::Element>(&self) -> Result<Vec<T>> {
        self.data()?.to_vec()
    }
    /// The gradient copied to a Vec (None when there is none).
    pub fn grad_vec<T: crate::Element>(&self) -> Result<Option<Vec<T>>> {
        match self.grad()? {
            Some(g) => Ok(Some(g.to_vec()?)),
            None => Ok(None),
        }
    }
    /// The shape of the data.
    pub fn shape(&self) -> Result<Vec<i64>> {
        Ok(self.data()?.shape().to_vec())
    }

    // Method forms of common functions.
    /// Elementwise e^x.
    pub fn exp(&self) -> Result<Variable> {
        F::exp(self)
    }
    /// Elementwise natural logarithm.
    pub fn log(&self) -> Result<Variable> {
        F::log(self)
    }
    /// Sum of every element (a scalar).
    pub fn sum(&self) -> Result<Variable> {
        F::sum(self)
    }
    /// Elementwise x^p.
    pub fn powf(&self, p: f64) -> Result<Variable> {
        F::pow_scalar(self, p)
    }
    /// The same data in another shape.
    pub fn reshape(&self, shape: &[i64]) -> Result<Variable> {
        F::reshape(self, shape)
    }
    /// Elementwise max(x, 0).
    pub fn relu(&self) -> Result<Variable> {
        crate::nn::relu(self)
    }
    /// Elementwise logistic sigmoid.
    pub fn sigmoid(&self) -> Result<Variable> {
        crate::nn::sigmoid(self)
    }
    /// Elementwise tanh.
    pub fn tanh(&self) -> Result<Variable> {
        crate::nn::tanh(self)
    }
    /// Matrix product self @ other.
    pub fn matmul(&self, other: &Variable) -> Result<Variable> {
        crate::nn::matmul(self, other, false, false)
    }
}

impl Clone for Variable {
    fn clone(&self) -> Variable {
        unsafe { Variable::from_raw(sys::ch_variable_retain(self.as_ptr())) }
    }
}

impl Drop for Variable {
    fn drop(&mut self) {
        unsafe {
            sys::ch_variable_release(self.raw.as_ptr());
        }
    }
}

impl std::fmt::Debug for Variable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.data() {
            Ok(d) => write!(f, "Variable({d:?}, volatile: {})", self.is_volatile()),
            Err(e) => write!(f, "Variable(<{e}>)"),
        }
    }
}

// --- operators ------------------------------------------------------------------
// Operators panic with the library's message on failure (e.g. shapes that do
// not broadcast), as slice indexing does; use the functions module for a
// Result.

#[track_caller]
fn ok(r: Result<Variable>) -> Variable {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

macro_rules! binop {
    ($tr:ident, $m:ident, $f:path, $fs:path, $frs:path) => {
        impl $tr<&Variable> for &Variable {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: &Variable) -> Variable {
                ok($f(self, rhs))
            }
        }
        impl $tr<Variable> for Variable {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: Variable) -> Variable {
                ok($f(&self, &rhs))
            }
        }
        impl $tr<&Variable> for Variable {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: &Variable) -> Variable {
                ok($f(&self, rhs))
            }
        }
        impl $tr<Variable> for &Variable {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: Variable) -> Variable {
                ok($f(self, &rhs))
            }
        }
        impl $tr<f64> for &Variable {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: f64) -> Variable {
                ok($fs(self, rhs))
            }
        }
        impl $tr<f64> for Variable {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: f64) -> Variable {
                ok($fs(&self, rhs))
            }
        }
        impl $tr<&Variable> for f64 {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: &Variable) -> Variable {
                ok($frs(rhs, self))
            }
        }
        impl $tr<Variable> for f64 {
            type Output = Variable;
            #[track_caller]
            fn $m(self, rhs: Variable) -> Variable {
                ok($frs(&rhs, self))
            }
        }
    };
}

binop!(Add, add, F::add, F::add_scalar, F::add_scalar);
binop!(Sub, sub, F::sub, F::sub_scalar, F::rsub_scalar);
binop!(Mul, mul, F::mul, F::mul_scalar, F::mul_scalar);
binop!(Div, div, F::div, F::div_scalar, F::rdiv_scalar);

impl Neg for &Variable {
    type Output = Variable;
    #[track_caller]
    fn neg(self) -> Variable {
        ok(F::neg(self))
    }
}
impl Neg for Variable {
    type Output = Variable;
    #[track_caller]
    fn neg(self) -> Variable {
        ok(F::neg(&self))
    }
}

/// Options of [`graph_dot`].
#[derive(Debug, Clone)]
pub struct GraphDotOptions {
    /// Labels of the outputs, in order (may be shorter than the outputs).
    pub output_names: Vec<String>,
    /// Parameters (W, b) as named nodes.
    pub show_parameters: bool,
    /// Graphviz rankdir: "TB", "BT", "LR" or "RL".
    pub rankdir: String,
}

impl Default for GraphDotOptions {
    fn default() -> Self {
        GraphDotOptions { output_names: Vec::new(), show_parameters: true, rankdir: "TB".into() }
    }
}

/// The computational graph behind `outputs` as Graphviz DOT text (Chainer's
/// `build_computational_graph`): variables as ovals "(shape), dtype",
/// functions as boxes, edges input -> function -> output.
pub fn graph_dot(outputs: &[&Variable], options: &GraphDotOptions) -> Result<String> {
    use std::ffi::{CStr, CString};
    use std::os::raw::c_char;
    let vs: Vec<*mut sys::ch_variable> = outputs.iter().map(|v| v.as_ptr()).collect();
    let to_c = |s: &str| {
        CString::new(s).map_err(|_| {
            crate::error::Error::new(
                crate::error::ErrorKind::InvalidArgument,
                "graph_dot: a name or rankdir contains a NUL byte",
            )
        })
    };
    let names: Vec<CString> = options.output_names.iter().map(|s| to_c(s)).collect::<Result<_>>()?;
    let mut name_ptrs: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
    name_ptrs.resize(vs.len().max(name_ptrs.len()), ptr::null());
    let rankdir = to_c(&options.rankdir)?;
    let o = sys::ch_graph_dot_options {
        version: sys::CH_GRAPH_DOT_OPTIONS_VERSION as u32,
        hide_parameters: (!options.show_parameters) as i32,
        rankdir: rankdir.as_ptr(),
        output_names: name_ptrs.as_ptr(),
    };
    let mut out: *mut c_char = ptr::null_mut();
    check(unsafe { sys::ch_variable_graph_dot(&mut out, vs.as_ptr(), vs.len(), &o) })?;
    let text = unsafe { CStr::from_ptr(out) }.to_string_lossy().into_owned();
    unsafe { sys::ch_string_free(out) };
    Ok(text)
}

/// Chainer's chainer.grad: the gradients of `outputs` with respect to
/// `inputs` as new variables (None where none reaches an input); no grad field
/// changes. With `enable_double_backprop` they can be differentiated again.
pub fn grad(
    outputs: &[&Variable],
    inputs: &[&Variable],
    enable_double_backprop: bool,
) -> Result<Vec<Option<Variable>>> {
    let ys: Vec<*mut sys::ch_variable> = outputs.iter().map(|v| v.as_ptr()).collect();
    let xs: Vec<*mut sys::ch_variable> = inputs.iter().map(|v| v.as_ptr()).collect();
    let mut out: Vec<*mut sys::ch_variable> = vec![ptr::null_mut(); xs.len()];
    let o = sys::ch_backward_options {
        version: sys::CH_BACKWARD_OPTIONS_VERSION as u32,
        retain_grad: 0,
        enable_double_backprop: enable_double_backprop as i32,
    };
    check(unsafe { sys::ch_grad(out.as_mut_ptr(), ys.as_ptr(), ys.len(), xs.as_ptr(), xs.len(), ptr::null(), &o) })?;
    Ok(out.into_iter().map(|p| if p.is_null() { None } else { Some(unsafe { Variable::from_raw(p) }) }).collect())
}

/// A scope in which functions record no graph on this thread (Chainer's
/// no_backprop_mode); ended when dropped.
pub struct NoBackpropMode(());

impl NoBackpropMode {
    /// Enters the scope: until the value is dropped, functions applied on
    /// this thread record no graph.
    pub fn new() -> Result<NoBackpropMode> {
        check(unsafe { sys::ch_backprop_mode_push(0) })?;
        Ok(NoBackpropMode(()))
    }
}

impl Drop for NoBackpropMode {
    fn drop(&mut self) {
        unsafe {
            sys::ch_backprop_mode_pop();
        }
    }
}

/// Switch graph recording process-wide (Chainer's config.enable_backprop);
/// NoBackpropMode scopes take precedence on their thread.
pub fn set_enable_backprop(enable: bool) {
    unsafe { sys::ch_config_set_enable_backprop(enable as i32) }
}
/// The process-wide switch.
pub fn enable_backprop() -> bool {
    unsafe { sys::ch_config_enable_backprop() != 0 }
}
/// Whether recording is on for the calling thread now.
pub fn backprop_mode_enabled() -> bool {
    unsafe { sys::ch_backprop_mode_enabled() != 0 }
}
