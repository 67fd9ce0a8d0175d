//! Gradient checking through the engine (include/ch/gradient_check.h).
use crate::array::Array;
use crate::error::{check, guard, Error, ErrorKind, Result};
use crate::function::Function;
use crate::variable::Variable;
use chainerc_sys as sys;
use std::ffi::c_void;
use std::ptr;

/// Tolerances and step of a gradient check (Chainer's defaults).
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    /// Step of the central differences.
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance { eps: 1e-3, atol: 1e-5, rtol: 1e-4 }
    }
}

fn ptrs(a: &[&Array]) -> Vec<*mut sys::ch_array> {
    a.iter().map(|x| x.as_ptr()).collect()
}

/// Check `function`'s backward against numerical gradients (Chainer's
/// check_backward). `grad_outputs`: one per output, None for ones.
pub fn check_backward(
    function: &Function,
    inputs: &[&Array],
    grad_outputs: Option<&[&Array]>,
    tol: Tolerance,
) -> Result<()> {
    let ins = ptrs(inputs);
    let gos = grad_outputs.map(ptrs);
    let (gp, gn) = match &gos {
        Some(g) => (g.as_ptr(), g.len()),
        None => (ptr::null(), 0),
    };
    check(unsafe {
        sys::ch_check_backward(function.as_ptr(), ins.as_ptr(), ins.len(), gp, gn, tol.eps, tol.atol, tol.rtol)
    })
}

type GraphFn<'a> = dyn Fn(&[Variable]) -> Result<Vec<Variable>> + 'a;

unsafe extern "C" fn graph_trampoline(
    user: *mut c_void,
    inputs: *const *mut sys::ch_variable,
    n_in: usize,
    outputs: *mut *mut sys::ch_variable,
    n_out: usize,
) -> sys::ch_status {
    guard(|| {
        let f = &*(user as *const &GraphFn);
        let ins: &[Variable] =
            if n_in == 0 { &[] } else { std::slice::from_raw_parts(inputs as *const Variable, n_in) };
        let outs = f(ins)?;
        if outs.len() != n_out {
            return Err(Error::new(
                ErrorKind::Callback,
                format!("graph built {} outputs, {} expected", outs.len(), n_out),
            ));
        }
        for (k, o) in outs.into_iter().enumerate() {
            *outputs.add(k) = o.into_raw();
        }
        Ok(())
    })
}

/// The engine's pointers for optional arrays: NULL (ones) for None.
fn optional_ptrs(a: &[Option<&Array>]) -> Vec<*mut sys::ch_array> {
    a.iter().map(|g| g.map_or(ptr::null_mut(), |x| x.as_ptr())).collect()
}

/// Runs `call` with the callback and user data through which the engine
/// builds `build`'s graph on the inputs it lends (both checkers take them).
fn with_graph_callback<F>(
    build: F,
    call: impl FnOnce(sys::ch_graph_callback, *mut c_void) -> sys::ch_status,
) -> Result<()>
where
    F: Fn(&[Variable]) -> Result<Vec<Variable>>,
{
    let f: &GraphFn = &build;
    let user = &f as *const &GraphFn as *mut c_void;
    check(call(Some(graph_trampoline), user))
}

/// As check_backward, for a graph built by `build` from the input variables
/// (one output per entry of `grad_outputs`; None entries mean ones).
pub fn check_backward_graph<F>(
    build: F,
    inputs: &[&Array],
    grad_outputs: &[Option<&Array>],
    tol: Tolerance,
) -> Result<()>
where
    F: Fn(&[Variable]) -> Result<Vec<Variable>>,
{
    let ins = ptrs(inputs);
    let gos = optional_ptrs(grad_outputs);
    with_graph_callback(build, |cb, user| unsafe {
        sys::ch_check_backward_graph(
            cb,
            user,
            ins.as_ptr(),
            ins.len(),
            gos.as_ptr(),
            gos.len(),
            tol.eps,
            tol.atol,
            tol.rtol,
        )
    })
}

/// Chainer's check_double_backward: the first backward of the graph `build`
/// makes (taken with double backprop) is checked against numerical gradients,
/// then as a function of (inputs, output gradients) its own backward, with
/// `grad_grad_inputs` (empty, or one per input; None means ones) as the
/// gradients of the input gradients. Use f64 inputs.
pub fn check_double_backward<F>(
    build: F,
    inputs: &[&Array],
    grad_outputs: &[Option<&Array>],
    grad_grad_inputs: &[Option<&Array>],
    tol: Tolerance,
) -> Result<()>
where
    F: Fn(&[Variable]) -> Result<Vec<Variable>>,
{
    let ins = ptrs(inputs);
    let gos = optional_ptrs(grad_outputs);
    let ggs = optional_ptrs(grad_grad_inputs);
    let ggp = if ggs.is_empty() { ptr::null() } else { ggs.as_ptr() };
    with_graph_callback(build, |cb, user| unsafe {
        sys::ch_check_double_backward(
            cb,
            user,
            ins.as_ptr(),
            ins.len(),
            gos.as_ptr(),
            gos.len(),
            ggp,
            ggs.len(),
            tol.eps,
            tol.atol,
            tol.rtol,
        )
    })
}

type EvalFn<'a> = dyn Fn() -> Result<Vec<Array>> + 'a;

unsafe extern "C" fn eval_trampoline(user: *mut c_void, ctx: *mut sys::ch_context) -> sys::ch_status {
    guard(|| {
        let f = &*(user as *const &EvalFn);
        for o in f()? {
            check(sys::ch_context_add_output(ctx, o.as_ptr()))?;
        }
        Ok(())
    })
}

/// Numerical gradients by central differences: `f` evaluates the function
/// on the current contents of `inputs` (which are moved by ±eps in place).
pub fn numerical_grad<F>(f: F, inputs: &[&Array], grad_outputs: &[&Array], eps: f64) -> Result<Vec<Array>>
where
    F: Fn() -> Result<Vec<Array>>,
{
    let ins = ptrs(inputs);
    let gos = ptrs(grad_outputs);
    let fr: &EvalFn = &f;
    let user = &fr as *const &EvalFn as *mut c_void;
    let mut out = vec![ptr::null_mut(); ins.len()];
    check(unsafe {
        sys::ch_numerical_grad(
            out.as_mut_ptr(),
            Some(eval_trampoline),
            user,
            ins.as_ptr(),
            ins.len(),
            gos.as_ptr(),
            gos.len(),
            eps,
        )
    })?;
    Ok(out.into_iter().map(|p| unsafe { Array::from_raw(p) }).collect())
}
