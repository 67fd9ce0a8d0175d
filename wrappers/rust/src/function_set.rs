//! Function sets (include/ch/function_set.h): named, nested collections of
//! parameterized functions with their parameters in Chainer's order.
use crate::array::{Array, Device};
use crate::error::{check, Error, ErrorKind, Result};
use crate::function::Function;
use chainerc_sys as sys;
use std::ffi::{CStr, CString};
use std::ptr::{self, NonNull};

pub(crate) fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{what} {s:?} contains NUL")))
}

/// A parameter with its path ("l1/W") in a set or optimizer.
#[derive(Debug, Clone)]
pub struct NamedParameter {
    /// The parameter's path in the set ("l1/W").
    pub path: String,
    /// The parameter array.
    pub param: Array,
    /// Its gradient array.
    pub grad: Array,
}

/// A FunctionSet: one reference (Clone retains, Drop releases). It keeps its
/// members alive.
#[repr(transparent)]
pub struct FunctionSet {
    raw: NonNull<sys::ch_function_set>,
}

unsafe impl Send for FunctionSet {}
unsafe impl Sync for FunctionSet {}

impl FunctionSet {
    /// # Safety
    /// `raw` must be a live ch_function_set reference the caller owns.
    pub unsafe fn from_raw(raw: *mut sys::ch_function_set) -> FunctionSet {
        FunctionSet { raw: NonNull::new(raw).expect("a non-NULL ch_function_set") }
    }
    /// The raw `ch_function_set` handle (still owned by `self`).
    pub fn as_ptr(&self) -> *mut sys::ch_function_set {
        self.raw.as_ptr()
    }
    /// An empty set.
    pub fn new() -> Result<FunctionSet> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_function_set_new(&mut out) })?;
        Ok(unsafe { FunctionSet::from_raw(out) })
    }
    /// Add or replace the member `name` (a function object).
    pub fn add(&self, name: &str, f: &Function) -> Result<()> {
        let n = cstring(name, "member name")?;
        check(unsafe { sys::ch_function_set_add_function(self.as_ptr(), n.as_ptr(), f.as_ptr()) })
    }
    /// Builder form of `add`.
    pub fn with(self, name: &str, f: &Function) -> Result<FunctionSet> {
        self.add(name, f)?;
        Ok(self)
    }
    /// Add or replace the member `name` (a nested set).
    pub fn add_set(&self, name: &str, s: &FunctionSet) -> Result<()> {
        let n = cstring(name, "member name")?;
        check(unsafe { sys::ch_function_set_add_set(self.as_ptr(), n.as_ptr(), s.as_ptr()) })
    }
    /// Removes member `name`.
    pub fn remove(&self, name: &str) -> Result<()> {
        let n = cstring(name, "member name")?;
        check(unsafe { sys::ch_function_set_remove(self.as_ptr(), n.as_ptr()) })
    }
    /// Number of members.
    pub fn member_count(&self) -> usize {
        unsafe { sys::ch_function_set_member_count(self.as_ptr()) }
    }
    /// Member names in sorted order.
    pub fn member_names(&self) -> Result<Vec<String>> {
        (0..self.member_count())
            .map(|i| {
                let mut p = ptr::null();
                check(unsafe { sys::ch_function_set_member_name(&mut p, self.as_ptr(), i) })?;
                Ok(unsafe { CStr::from_ptr(p).to_string_lossy().into_owned() })
            })
            .collect()
    }
    /// The member function `name`.
    pub fn get(&self, name: &str) -> Result<Function> {
        let n = cstring(name, "member name")?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_function_set_get_function(&mut out, self.as_ptr(), n.as_ptr()) })?;
        Ok(unsafe { Function::from_raw(out) })
    }
    /// The nested set `name`.
    pub fn get_set(&self, name: &str) -> Result<FunctionSet> {
        let n = cstring(name, "member name")?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_function_set_get_set(&mut out, self.as_ptr(), n.as_ptr()) })?;
        Ok(unsafe { FunctionSet::from_raw(out) })
    }
    /// Number of parameters of every member.
    pub fn parameter_count(&self) -> usize {
        unsafe { sys::ch_function_set_parameter_count(self.as_ptr()) }
    }
    /// Parameter i in the set's order with its path.
    pub fn parameter(&self, index: usize) -> Result<NamedParameter> {
        let (mut p, mut g, mut path) = (ptr::null_mut(), ptr::null_mut(), ptr::null());
        check(unsafe { sys::ch_function_set_parameter(&mut p, &mut g, &mut path, self.as_ptr(), index) })?;
        let path = unsafe { CStr::from_ptr(path).to_string_lossy().into_owned() };
        Ok(NamedParameter { path, param: unsafe { Array::from_raw(p) }, grad: unsafe { Array::from_raw(g) } })
    }
    /// Every parameter with its path, in member order.
    pub fn parameters(&self) -> Result<Vec<NamedParameter>> {
        (0..self.parameter_count()).map(|i| self.parameter(i)).collect()
    }
    /// The seed's collect_parameters(): (params, grads).
    pub fn collect_parameters(&self) -> Result<(Vec<Array>, Vec<Array>)> {
        let mut n = 0usize;
        check(unsafe {
            sys::ch_function_set_collect_parameters(ptr::null_mut(), ptr::null_mut(), 0, &mut n, self.as_ptr())
        })?;
        let mut ps = vec![ptr::null_mut(); n];
        let mut gs = vec![ptr::null_mut(); n];
        let mut m = 0usize;
        check(unsafe {
            sys::ch_function_set_collect_parameters(ps.as_mut_ptr(), gs.as_mut_ptr(), n, &mut m, self.as_ptr())
        })?;
        let k = m.min(n);
        let params = ps[..k].iter().map(|p| unsafe { Array::from_raw(*p) }).collect();
        let grads = gs[..k].iter().map(|p| unsafe { Array::from_raw(*p) }).collect();
        Ok((params, grads))
    }
    /// Copy parameter values from another set of the same structure.
    pub fn copy_parameters_from(&self, source: &FunctionSet) -> Result<()> {
        check(unsafe { sys::ch_function_set_copy_parameters_from(self.as_ptr(), source.as_ptr()) })
    }
    /// Copy parameter values from arrays in the set's order.
    pub fn copy_parameters_from_arrays(&self, params: &[&Array]) -> Result<()> {
        let ps: Vec<*mut sys::ch_array> = params.iter().map(|a| a.as_ptr()).collect();
        check(unsafe { sys::ch_function_set_copy_parameters_from_arrays(self.as_ptr(), ps.as_ptr(), ps.len()) })
    }
    /// Moves every parameter to the CPU.
    pub fn to_cpu(&self) -> Result<()> {
        check(unsafe { sys::ch_function_set_to_cpu(self.as_ptr()) })
    }
    /// Moves every parameter to `device`.
    pub fn to_gpu(&self, device: Device) -> Result<()> {
        check(unsafe { sys::ch_function_set_to_gpu(self.as_ptr(), device.raw()) })
    }
    /// Save the parameters as .npz (compressed or stored).
    pub fn save_npz(&self, path: &str, compressed: bool) -> Result<()> {
        let p = cstring(path, "path")?;
        let flags = if compressed { sys::CH_NPZ_COMPRESSED } else { sys::CH_NPZ_STORED };
        check(unsafe { sys::ch_function_set_save_npz(self.as_ptr(), p.as_ptr(), flags) })
    }
    /// Load the parameters from .npz (all checked before any is written).
    pub fn load_npz(&self, path: &str) -> Result<()> {
        let p = cstring(path, "path")?;
        check(unsafe { sys::ch_function_set_load_npz(self.as_ptr(), p.as_ptr()) })
    }
}

impl Clone for FunctionSet {
    fn clone(&self) -> FunctionSet {
        unsafe { FunctionSet::from_raw(sys::ch_function_set_retain(self.as_ptr())) }
    }
}

impl Drop for FunctionSet {
    fn drop(&mut self) {
        unsafe {
            sys::ch_function_set_release(self.raw.as_ptr());
        }
    }
}

impl std::fmt::Debug for FunctionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FunctionSet({:?})", self.member_names().unwrap_or_default())
    }
}
