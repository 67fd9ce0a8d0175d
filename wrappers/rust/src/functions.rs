//! Built-in differentiable functions (include/ch/functions.h). Each returns a
//! new variable; inputs are borrowed for the call. The functions are generated
//! from src/ops/manifest.py into functions_gen.rs (scripts/gen_functions.py).
use crate::error::{check, Result};
use crate::variable::Variable;
use chainerc_sys as sys;

#[inline]
pub(crate) fn wrap_out(st: sys::ch_status, out: *mut sys::ch_variable) -> Result<Variable> {
    check(st)?;
    Ok(unsafe { Variable::from_raw(out) })
}

include!("functions_gen.rs");

/// x where `condition` is nonzero, else y, with NumPy broadcasting (Chainer's
/// where; `condition` an int32 or float array, not differentiated).
pub fn where_(condition: &crate::array::Array, x: &Variable, y: &Variable) -> Result<Variable> {
    let mut out = std::ptr::null_mut();
    wrap_out(unsafe { sys::ch_functions_where(&mut out, condition.as_ptr(), x.as_ptr(), y.as_ptr()) }, out)
}
