//! Built-in differentiable functions (include/ch/functions.h). Each returns a
//! new variable; inputs are borrowed for the call.
use crate::error::{check, Result};
use crate::variable::Variable;
use chainerc_sys as sys;
use std::ptr;

#[inline]
pub(crate) fn wrap_out(st: sys::ch_status, out: *mut sys::ch_variable) -> Result<Variable> {
    check(st)?;
    Ok(unsafe { Variable::from_raw(out) })
}

macro_rules! unary {
    ($(#[$doc:meta])* $name:ident, $c:ident) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(x: &Variable) -> Result<Variable> {
            let mut out = ptr::null_mut();
            wrap_out(unsafe { sys::$c(&mut out, x.as_ptr()) }, out)
        }
    };
}
macro_rules! binary {
    ($(#[$doc:meta])* $name:ident, $c:ident) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(a: &Variable, b: &Variable) -> Result<Variable> {
            let mut out = ptr::null_mut();
            wrap_out(unsafe { sys::$c(&mut out, a.as_ptr(), b.as_ptr()) }, out)
        }
    };
}
macro_rules! scalar {
    ($(#[$doc:meta])* $name:ident, $c:ident) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(x: &Variable, s: f64) -> Result<Variable> {
            let mut out = ptr::null_mut();
            wrap_out(unsafe { sys::$c(&mut out, x.as_ptr(), s) }, out)
        }
    };
}

binary!(/// a + b with broadcasting.
    add, ch_functions_add);
binary!(/// a - b with broadcasting.
    sub, ch_functions_sub);
binary!(/// a * b with broadcasting.
    mul, ch_functions_mul);
binary!(/// a / b with broadcasting.
    div, ch_functions_div);
scalar!(/// x + s
    add_scalar, ch_functions_add_scalar);
scalar!(/// x - s
    sub_scalar, ch_functions_sub_scalar);
scalar!(/// s - x
    rsub_scalar, ch_functions_rsub_scalar);
scalar!(/// x * s
    mul_scalar, ch_functions_mul_scalar);
scalar!(/// x / s
    div_scalar, ch_functions_div_scalar);
scalar!(/// s / x
    rdiv_scalar, ch_functions_rdiv_scalar);
scalar!(/// x ** p
    pow_scalar, ch_functions_pow_scalar);
scalar!(/// s ** x (s > 0)
    rpow_scalar, ch_functions_rpow_scalar);
unary!(/// -x
    neg, ch_functions_neg);
unary!(/// e ** x
    exp, ch_functions_exp);
unary!(/// natural logarithm
    log, ch_functions_log);
unary!(/// Sum of all elements (0-d).
    sum, ch_functions_sum);
unary!(/// Same data as a new variable; the gradient passes through.
    identity, ch_functions_identity);

/// Sum along `axis` (negative counts from the end).
pub fn sum_axis(x: &Variable, axis: i32, keepdims: bool) -> Result<Variable> {
    let mut out = ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_sum_axis(&mut out, x.as_ptr(), axis, keepdims as i32) }, out)
}
/// Same data, another shape (one extent may be -1).
pub fn reshape(x: &Variable, shape: &[i64]) -> Result<Variable> {
    let mut out = ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_reshape(&mut out, x.as_ptr(), shape.as_ptr(), shape.len() as i32) }, out)
}
/// Broadcast to `shape`.
pub fn broadcast_to(x: &Variable, shape: &[i64]) -> Result<Variable> {
    let mut out = ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_broadcast_to(&mut out, x.as_ptr(), shape.as_ptr(), shape.len() as i32) }, out)
}
