//! User kernels from source strings (`<ch/kernel.h>`): the seed's
//! `cuda.elementwise` and `cuda.reduce`. The same kernel runs on the CPU
//! (compiled in memory by libtcc) and on CUDA devices (NVRTC).
use crate::array::Array;
use crate::error::{check, Error, ErrorKind, Result};
use chainerc_sys as sys;
use std::ffi::CString;
use std::ptr::{self, NonNull};

/// Whether user kernels run on the CPU in this build.
pub fn cpu_supported() -> bool {
    unsafe { sys::ch_kernel_cpu_supported() != 0 }
}

/// Whether user kernels can be compiled for CUDA in this build.
pub fn cuda_supported() -> bool {
    unsafe { sys::ch_kernel_cuda_supported() != 0 }
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{s:?} contains a NUL byte")))
}

/// Input handles, and output slots (NULL: allocate) for one output count.
fn slots(
    inputs: &[&Array],
    outputs: Option<&[&Array]>,
    n_out: usize,
) -> (Vec<*mut sys::ch_array>, Vec<*mut sys::ch_array>) {
    let ins = inputs.iter().map(|a| a.as_ptr()).collect();
    let outs = match outputs {
        Some(o) => o.iter().map(|a| a.as_ptr()).collect(),
        None => vec![ptr::null_mut(); n_out],
    };
    (ins, outs)
}

/// The outputs: given ones as new handles to the same arrays, allocated ones adopted.
fn results(outs: Vec<*mut sys::ch_array>, given: Option<&[&Array]>) -> Vec<Array> {
    outs.into_iter()
        .enumerate()
        .map(|(i, p)| match given {
            Some(g) => g[i].clone(),
            None => unsafe { Array::from_raw(p) },
        })
        .collect()
}

/// An elementwise kernel, e.g. `("T x, T y, T z", "T w", "w = x * y + z", "muladd")`.
pub struct ElementwiseKernel {
    raw: NonNull<sys::ch_elementwise_kernel>,
}

unsafe impl Send for ElementwiseKernel {}
unsafe impl Sync for ElementwiseKernel {}

impl ElementwiseKernel {
    /// Compiles an elementwise kernel (CuPy's ElementwiseKernel: parameter lists, the operation, a name).
    pub fn new(in_params: &str, out_params: &str, operation: &str, name: &str) -> Result<ElementwiseKernel> {
        let (i, o, op, n) = (cstring(in_params)?, cstring(out_params)?, cstring(operation)?, cstring(name)?);
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_elementwise_kernel_new(&mut out, i.as_ptr(), o.as_ptr(), op.as_ptr(), n.as_ptr()) })?;
        Ok(ElementwiseKernel { raw: NonNull::new(out).expect("a non-NULL kernel") })
    }
    /// Number of input parameters.
    pub fn inputs(&self) -> usize {
        unsafe { sys::ch_elementwise_kernel_input_count(self.raw.as_ptr()) }
    }
    /// Number of output parameters.
    pub fn outputs(&self) -> usize {
        unsafe { sys::ch_elementwise_kernel_output_count(self.raw.as_ptr()) }
    }
    /// Runs the kernel; `outputs`: `None` allocates every output, else one
    /// array per output is written in place.
    pub fn call(&self, inputs: &[&Array], outputs: Option<&[&Array]>) -> Result<Vec<Array>> {
        let (ins, mut outs) = slots(inputs, outputs, self.outputs());
        check(unsafe {
            sys::ch_elementwise_kernel_call(self.raw.as_ptr(), ins.as_ptr(), ins.len(), outs.as_mut_ptr(), outs.len())
        })?;
        Ok(results(outs, outputs))
    }
}

impl Clone for ElementwiseKernel {
    fn clone(&self) -> ElementwiseKernel {
        let p = unsafe { sys::ch_elementwise_kernel_retain(self.raw.as_ptr()) };
        ElementwiseKernel { raw: NonNull::new(p).expect("a live kernel") }
    }
}

impl Drop for ElementwiseKernel {
    fn drop(&mut self) {
        unsafe {
            sys::ch_elementwise_kernel_release(self.raw.as_ptr());
        }
    }
}

/// CuPy's ReductionKernel: map, reduce (`a`, `b`), post-map, identity.
pub struct ReductionKernel {
    raw: NonNull<sys::ch_reduction_kernel>,
}

unsafe impl Send for ReductionKernel {}
unsafe impl Sync for ReductionKernel {}

impl ReductionKernel {
    /// `identity` and `reduce_type` may be `None` (no identity; the first output's type).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_params: &str,
        out_params: &str,
        map_expr: &str,
        reduce_expr: &str,
        post_map_expr: &str,
        identity: Option<&str>,
        name: &str,
        reduce_type: Option<&str>,
    ) -> Result<ReductionKernel> {
        let strs = [
            cstring(in_params)?,
            cstring(out_params)?,
            cstring(map_expr)?,
            cstring(reduce_expr)?,
            cstring(post_map_expr)?,
            cstring(name)?,
        ];
        let ident = identity.map(cstring).transpose()?;
        let rtype = reduce_type.map(cstring).transpose()?;
        let mut out = ptr::null_mut();
        check(unsafe {
            sys::ch_reduction_kernel_new(
                &mut out,
                strs[0].as_ptr(),
                strs[1].as_ptr(),
                strs[2].as_ptr(),
                strs[3].as_ptr(),
                strs[4].as_ptr(),
                ident.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                strs[5].as_ptr(),
                rtype.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            )
        })?;
        Ok(ReductionKernel { raw: NonNull::new(out).expect("a non-NULL kernel") })
    }
    /// Number of input parameters.
    pub fn inputs(&self) -> usize {
        unsafe { sys::ch_reduction_kernel_input_count(self.raw.as_ptr()) }
    }
    /// Number of output parameters.
    pub fn outputs(&self) -> usize {
        unsafe { sys::ch_reduction_kernel_output_count(self.raw.as_ptr()) }
    }
    /// Reduces over `axes` (`None`: every axis), keeping them as extent 1 when `keepdims`.
    pub fn call(
        &self,
        inputs: &[&Array],
        outputs: Option<&[&Array]>,
        axes: Option<&[i32]>,
        keepdims: bool,
    ) -> Result<Vec<Array>> {
        let (ins, mut outs) = slots(inputs, outputs, self.outputs());
        let (axes_ptr, n_axes) = match axes {
            Some(a) => (a.as_ptr(), a.len() as i32),
            None => (ptr::null(), -1), // CH_REDUCE_ALL_AXES
        };
        check(unsafe {
            sys::ch_reduction_kernel_call(
                self.raw.as_ptr(),
                ins.as_ptr(),
                ins.len(),
                outs.as_mut_ptr(),
                outs.len(),
                axes_ptr,
                n_axes,
                keepdims as i32,
            )
        })?;
        Ok(results(outs, outputs))
    }
}

impl Clone for ReductionKernel {
    fn clone(&self) -> ReductionKernel {
        let p = unsafe { sys::ch_reduction_kernel_retain(self.raw.as_ptr()) };
        ReductionKernel { raw: NonNull::new(p).expect("a live kernel") }
    }
}

impl Drop for ReductionKernel {
    fn drop(&mut self) {
        unsafe {
            sys::ch_reduction_kernel_release(self.raw.as_ptr());
        }
    }
}
