//! Function objects (`ch_function`): built-in parameterized functions,
//! recorded applications (a variable's creator) and custom functions written
//! in Rust.
use crate::array::{Array, Device};
use crate::error::{check, guard, Error, ErrorKind, Result};
use crate::variable::Variable;
use chainerc_sys as sys;
use std::ffi::{c_void, CStr, CString};
use std::ptr::{self, NonNull};

/// A function object or a recorded application: a reference-counted handle.
#[repr(transparent)]
pub struct Function {
    raw: NonNull<sys::ch_function>,
}

unsafe impl Send for Function {}
unsafe impl Sync for Function {}

/// A parameter of a function: its array, its gradient and its name.
#[derive(Debug, Clone)]
pub struct Parameter {
    /// The parameter's name ("W", "b").
    pub name: String,
    /// The parameter array.
    pub param: Array,
    /// Its gradient array.
    pub grad: Array,
}

impl Function {
    /// # Safety
    /// `raw` must be a live ch_function reference that the caller owns.
    pub unsafe fn from_raw(raw: *mut sys::ch_function) -> Function {
        Function { raw: NonNull::new(raw).expect("a non-NULL ch_function") }
    }
    /// Gives up ownership: the raw handle, which the caller must release.
    pub fn into_raw(self) -> *mut sys::ch_function {
        let p = self.raw.as_ptr();
        std::mem::forget(self);
        p
    }
    /// The raw `ch_function` handle (still owned by `self`).
    pub fn as_ptr(&self) -> *mut sys::ch_function {
        self.raw.as_ptr()
    }

    /// A function object whose forward and backward are `imp`'s methods.
    /// `imp` is moved into the object and dropped when the object and every
    /// application of it are gone.
    pub fn new<T: FunctionImpl>(name: &str, imp: T) -> Result<Function> {
        let cname = CString::new(name)
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("function name {name:?} contains NUL")))?;
        let graph = imp.has_graph_backward();
        let user: Box<Box<dyn FunctionImpl>> = Box::new(Box::new(imp));
        let user = Box::into_raw(user) as *mut c_void;
        let def = sys::ch_function_def {
            version: sys::CH_FUNCTION_DEF_VERSION as u32,
            name: cname.as_ptr(),
            forward: Some(forward_trampoline::<0>),
            backward: Some(backward_trampoline::<0>),
            forward_cpu: Some(forward_trampoline::<1>),
            backward_cpu: Some(backward_trampoline::<1>),
            forward_gpu: Some(forward_trampoline::<2>),
            backward_gpu: Some(backward_trampoline::<2>),
            user_data: user,
            destroy: Some(destroy_impl),
            graph_backward: if graph { Some(graph_backward_trampoline) } else { None },
        };
        let mut out = ptr::null_mut();
        let st = unsafe { sys::ch_function_new(&mut out, &def) };
        if st != sys::CH_OK {
            unsafe { destroy_impl(user) }; // on failure destroy is not called
            return Err(crate::error::last_error(st));
        }
        Ok(unsafe { Function::from_raw(out) })
    }

    /// Apply to `inputs` (all volatile or none); returns every output.
    pub fn apply(&self, inputs: &[&Variable]) -> Result<Vec<Variable>> {
        let ins: Vec<*mut sys::ch_variable> = inputs.iter().map(|v| v.as_ptr()).collect();
        let mut outs: [*mut sys::ch_variable; 8] = [ptr::null_mut(); 8];
        let mut n = 0usize;
        check(unsafe {
            sys::ch_function_apply(self.as_ptr(), ins.as_ptr(), ins.len(), outs.as_mut_ptr(), outs.len(), &mut n)
        })?;
        let mut result: Vec<Variable> = outs[..n.min(8)].iter().map(|p| unsafe { Variable::from_raw(*p) }).collect();
        if n > 8 {
            // More outputs than the first try could hold: apply once more with room for all.
            drop(result);
            let mut big = vec![ptr::null_mut(); n];
            check(unsafe {
                sys::ch_function_apply(self.as_ptr(), ins.as_ptr(), ins.len(), big.as_mut_ptr(), n, &mut n)
            })?;
            result = big.into_iter().map(|p| unsafe { Variable::from_raw(p) }).collect();
        }
        Ok(result)
    }
    /// Apply and return the single (first) output.
    pub fn apply1(&self, inputs: &[&Variable]) -> Result<Variable> {
        let mut out = ptr::null_mut();
        let st = with_handles(inputs, |ins, n| unsafe {
            sys::ch_function_apply(self.as_ptr(), ins, n, &mut out, 1, ptr::null_mut())
        });
        check(st)?;
        Ok(unsafe { Variable::from_raw(out) })
    }

    /// The function's name ("Linear", a custom function's own).
    pub fn name(&self) -> String {
        unsafe { CStr::from_ptr(sys::ch_function_name(self.as_ptr())).to_string_lossy().into_owned() }
    }
    /// Number of inputs of this application (0 for an unapplied function object).
    pub fn input_count(&self) -> usize {
        unsafe { sys::ch_function_input_count(self.as_ptr()) }
    }
    /// Number of outputs of this application (0 for an unapplied function object).
    pub fn output_count(&self) -> usize {
        unsafe { sys::ch_function_output_count(self.as_ptr()) }
    }
    /// Input i of an application (None once unchained).
    pub fn input(&self, index: usize) -> Result<Option<Variable>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_function_input(&mut out, self.as_ptr(), index) })?;
        Ok(if out.is_null() { None } else { Some(unsafe { Variable::from_raw(out) }) })
    }
    /// Output i of an application (None once freed).
    pub fn output(&self, index: usize) -> Result<Option<Variable>> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_function_output(&mut out, self.as_ptr(), index) })?;
        Ok(if out.is_null() { None } else { Some(unsafe { Variable::from_raw(out) }) })
    }
    /// Remove this application from the graph.
    pub fn unchain(&self) -> Result<()> {
        check(unsafe { sys::ch_function_unchain(self.as_ptr()) })
    }
    /// Run the forward computation again on plain arrays, recording nothing
    /// (the seed's `func = y.creator; func.forward((x.data,))`, e.g. inside
    /// `numerical_grad`). The graph stays usable (see `ch_function_forward`).
    pub fn forward(&self, inputs: &[&Array]) -> Result<Vec<Array>> {
        let ins: Vec<*mut sys::ch_array> = inputs.iter().map(|a| a.as_ptr()).collect();
        let mut outs: [*mut sys::ch_array; 8] = [ptr::null_mut(); 8];
        let mut n = 0usize;
        check(unsafe {
            sys::ch_function_forward(self.as_ptr(), ins.as_ptr(), ins.len(), outs.as_mut_ptr(), outs.len(), &mut n)
        })?;
        let mut result: Vec<Array> = outs[..n.min(8)].iter().map(|p| unsafe { Array::from_raw(*p) }).collect();
        if n > 8 {
            drop(result);
            let mut big = vec![ptr::null_mut(); n];
            check(unsafe {
                sys::ch_function_forward(self.as_ptr(), ins.as_ptr(), ins.len(), big.as_mut_ptr(), n, &mut n)
            })?;
            result = big.into_iter().map(|p| unsafe { Array::from_raw(p) }).collect();
        }
        Ok(result)
    }

    /// Give the function a parameter and its gradient (shared, not copied).
    pub fn add_parameter(&self, name: &str, param: &Array, grad: &Array) -> Result<()> {
        let cname = CString::new(name)
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("parameter name {name:?} contains NUL")))?;
        check(unsafe { sys::ch_function_add_parameter(self.as_ptr(), cname.as_ptr(), param.as_ptr(), grad.as_ptr()) })
    }
    /// Number of parameters.
    pub fn parameter_count(&self) -> usize {
        unsafe { sys::ch_function_parameter_count(self.as_ptr()) }
    }
    /// Parameter `index` (in the order they were added).
    pub fn parameter(&self, index: usize) -> Result<Parameter> {
        let (mut p, mut g, mut n) = (ptr::null_mut(), ptr::null_mut(), ptr::null());
        check(unsafe { sys::ch_function_parameter(&mut p, &mut g, &mut n, self.as_ptr(), index) })?;
        let name = unsafe { CStr::from_ptr(n).to_string_lossy().into_owned() };
        Ok(Parameter { name, param: unsafe { Array::from_raw(p) }, grad: unsafe { Array::from_raw(g) } })
    }
    /// Every parameter, in order.
    pub fn parameters(&self) -> Result<Vec<Parameter>> {
        (0..self.parameter_count()).map(|i| self.parameter(i)).collect()
    }
    /// The parameter named `name`.
    pub fn param(&self, name: &str) -> Result<Parameter> {
        for p in self.parameters()? {
            if p.name == name {
                return Ok(p);
            }
        }
        Err(Error::new(ErrorKind::InvalidArgument, format!("function '{}' has no parameter '{name}'", self.name())))
    }
}

impl Clone for Function {
    fn clone(&self) -> Function {
        unsafe { Function::from_raw(sys::ch_function_retain(self.as_ptr())) }
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        unsafe {
            sys::ch_function_release(self.raw.as_ptr());
        }
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Function({:?})", self.name())
    }
}

/// The raw handles of `inputs` as a C array: on the stack for up to 8 inputs
/// (no allocation on the common path), else in a Vec.
fn with_handles<R>(inputs: &[&Variable], f: impl FnOnce(*const *mut sys::ch_variable, usize) -> R) -> R {
    if inputs.len() <= 8 {
        let mut buf: [*mut sys::ch_variable; 8] = [ptr::null_mut(); 8];
        for (b, v) in buf.iter_mut().zip(inputs) {
            *b = v.as_ptr();
        }
        f(buf.as_ptr(), inputs.len())
    } else {
        let v: Vec<*mut sys::ch_variable> = inputs.iter().map(|v| v.as_ptr()).collect();
        f(v.as_ptr(), v.len())
    }
}

// --- custom functions ----------------------------------------------------------------

/// Per-application context passed to the callbacks: keep arrays from forward
/// to backward. Borrowed for the duration of one callback.
pub struct Context<'a> {
    raw: *mut sys::ch_context,
    _p: std::marker::PhantomData<&'a mut sys::ch_context>,
}

impl<'a> Context<'a> {
    /// Keep `array` (retained) for backward.
    pub fn save(&mut self, array: &Array) -> Result<()> {
        check(unsafe { sys::ch_context_save(self.raw, array.as_ptr()) })
    }
    /// Number of arrays saved for backward.
    pub fn saved_count(&self) -> usize {
        unsafe { sys::ch_context_saved_count(self.raw) }
    }
    /// Saved array i (in save order).
    pub fn saved(&self, index: usize) -> Result<Array> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_context_saved(&mut out, self.raw, index) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// The function object being applied (e.g. to read its parameters).
    pub fn function(&self) -> Result<Function> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_context_function(&mut out, self.raw) })?;
        Ok(unsafe { Function::from_raw(out) })
    }
    /// In backward: false when input `index` needs no gradient (its variable
    /// does not require one), so the callback may skip computing it.
    pub fn needs_input_grad(&self, index: usize) -> bool {
        unsafe { sys::ch_context_needs_input_grad(self.raw, index) != 0 }
    }
    /// The device this callback runs for: the device of the first input (in
    /// backward, or output gradient) not on the CPU, else the CPU. In a GPU
    /// callback it is the thread's current CUDA device, and the arrays'
    /// `data_ptr()` are device pointers.
    pub fn device(&self) -> Device {
        Device::from_raw(unsafe { sys::ch_context_device(self.raw) })
    }
    /// The cudaStream_t to queue a GPU callback's own device work on (the
    /// stream chainerc's kernels use; today CUDA's default stream, null).
    pub fn stream(&self) -> *mut std::ffi::c_void {
        unsafe { sys::ch_context_stream(self.raw) }
    }
    /// The raw `ch_context` handle (valid during the callback only).
    pub fn as_ptr(&self) -> *mut sys::ch_context {
        self.raw
    }
}

/// A differentiable function written in Rust. The engine calls the methods
/// through the C callbacks: arrays arrive without copying, as a slice of
/// borrowed handles (`inputs[i].as_slice::<f32>()` views the memory; clone a
/// handle to keep it past the call). Inputs, outputs and grad_outputs must
/// not be written. An `Err` or a panic fails the API call that ran the
/// callback; its caller gets an `Error` whose `cause()` is the original error
/// or panic payload.
pub trait FunctionImpl: Send + Sync + 'static {
    /// Compute the outputs (at least one).
    fn forward(&self, ctx: &mut Context<'_>, inputs: &[Array]) -> Result<Vec<Array>>;
    /// Gradients of the inputs: one entry per input at most, None for no
    /// gradient (a grad_outputs handle may be returned as it is, cloned).
    fn backward(
        &self,
        ctx: &mut Context<'_>,
        inputs: &[Array],
        outputs: &[Array],
        grad_outputs: &[Array],
    ) -> Result<Vec<Option<Array>>>;
    /// Forward for CPU inputs (defaults to `forward`).
    fn forward_cpu(&self, ctx: &mut Context<'_>, inputs: &[Array]) -> Result<Vec<Array>> {
        self.forward(ctx, inputs)
    }
    /// Forward for GPU inputs (defaults to `forward`).
    fn forward_gpu(&self, ctx: &mut Context<'_>, inputs: &[Array]) -> Result<Vec<Array>> {
        self.forward(ctx, inputs)
    }
    /// Backward for CPU inputs (defaults to `backward`).
    fn backward_cpu(
        &self,
        ctx: &mut Context<'_>,
        inputs: &[Array],
        outputs: &[Array],
        grad_outputs: &[Array],
    ) -> Result<Vec<Option<Array>>> {
        self.backward(ctx, inputs, outputs, grad_outputs)
    }
    /// Backward for GPU inputs (defaults to `backward`).
    fn backward_gpu(
        &self,
        ctx: &mut Context<'_>,
        inputs: &[Array],
        outputs: &[Array],
        grad_outputs: &[Array],
    ) -> Result<Vec<Option<Array>>> {
        self.backward(ctx, inputs, outputs, grad_outputs)
    }
    /// Whether `backward_graph` is implemented (asked once, by Function::new):
    /// without it double backprop through the function is a Graph error.
    fn has_graph_backward(&self) -> bool {
        false
    }
    /// Backward over variables for double backprop (Chainer 7's
    /// FunctionNode.backward): the input gradients built with chainerc
    /// functions, so that they can be differentiated again.
    fn backward_graph(
        &self,
        _inputs: &[Variable],
        _outputs: &[Variable],
        _grad_outputs: &[Variable],
    ) -> Result<Vec<Option<Variable>>> {
        Err(Error::new(ErrorKind::Graph, "backward_graph is not implemented".to_string()))
    }
}

unsafe fn retained_variables(p: *const *mut sys::ch_variable, n: usize) -> Vec<Variable> {
    if n == 0 || p.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(p, n).iter().map(|&q| Variable::from_raw(sys::ch_variable_retain(q))).collect()
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn graph_backward_trampoline(
    user: *mut c_void,
    _ctx: *mut sys::ch_context,
    inputs: *const *mut sys::ch_variable,
    n_in: usize,
    outputs: *const *mut sys::ch_variable,
    n_out: usize,
    gouts: *const *mut sys::ch_variable,
    n_gout: usize,
    grad_inputs: *mut *mut sys::ch_variable,
) -> sys::ch_status {
    guard(|| {
        let imp = &**(user as *const Box<dyn FunctionImpl>);
        let (i, o, g) =
            (retained_variables(inputs, n_in), retained_variables(outputs, n_out), retained_variables(gouts, n_gout));
        let grads = imp.backward_graph(&i, &o, &g)?;
        if grads.len() > n_in {
            return Err(Error::new(
                ErrorKind::Callback,
                format!("backward_graph returned {} gradients for {} inputs", grads.len(), n_in),
            ));
        }
        for (k, gr) in grads.into_iter().enumerate() {
            if let Some(gr) = gr {
                *grad_inputs.add(k) = gr.into_raw();
            }
        }
        Ok(())
    })
}

/// The borrowed handles as `&[Array]` without copying: Array is a
/// transparent non-NULL pointer, and a slice never drops its elements. A NULL
/// entry (never passed by the engine) is refused rather than turned into an
/// invalid `Array`.
unsafe fn borrowed<'a>(p: *const *mut sys::ch_array, n: usize) -> Result<&'a [Array]> {
    if n == 0 || p.is_null() {
        return Ok(&[]);
    }
    let raw = std::slice::from_raw_parts(p, n);
    if let Some(i) = raw.iter().position(|q| q.is_null()) {
        return Err(Error::new(ErrorKind::Callback, format!("the engine passed a NULL array at position {i}")));
    }
    Ok(std::slice::from_raw_parts(p as *const Array, n))
}

unsafe extern "C" fn forward_trampoline<const WHICH: u8>(
    user: *mut c_void,
    ctx: *mut sys::ch_context,
    inputs: *const *mut sys::ch_array,
    n: usize,
) -> sys::ch_status {
    guard(|| {
        let imp = &**(user as *const Box<dyn FunctionImpl>);
        let mut c = Context { raw: ctx, _p: std::marker::PhantomData };
        let ins = borrowed(inputs, n)?;
        let outs = match WHICH {
            1 => imp.forward_cpu(&mut c, ins)?,
            2 => imp.forward_gpu(&mut c, ins)?,
            _ => imp.forward(&mut c, ins)?,
        };
        for o in &outs {
            check(sys::ch_context_add_output(ctx, o.as_ptr()))?;
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn backward_trampoline<const WHICH: u8>(
    user: *mut c_void,
    ctx: *mut sys::ch_context,
    inputs: *const *mut sys::ch_array,
    n_in: usize,
    outputs: *const *mut sys::ch_array,
    n_out: usize,
    gouts: *const *mut sys::ch_array,
    n_gout: usize,
) -> sys::ch_status {
    guard(|| {
        let imp = &**(user as *const Box<dyn FunctionImpl>);
        let mut c = Context { raw: ctx, _p: std::marker::PhantomData };
        let (i, o, g) = (borrowed(inputs, n_in)?, borrowed(outputs, n_out)?, borrowed(gouts, n_gout)?);
        let grads = match WHICH {
            1 => imp.backward_cpu(&mut c, i, o, g)?,
            2 => imp.backward_gpu(&mut c, i, o, g)?,
            _ => imp.backward(&mut c, i, o, g)?,
        };
        if grads.len() > n_in {
            return Err(Error::new(
                ErrorKind::Callback,
                format!("backward returned {} gradients for {} inputs", grads.len(), n_in),
            ));
        }
        for (k, gr) in grads.iter().enumerate() {
            if let Some(gr) = gr {
                check(sys::ch_context_set_grad_input(ctx, k, gr.as_ptr()))?;
            }
        }
        Ok(())
    })
}

unsafe extern "C" fn destroy_impl(user: *mut c_void) {
    if !user.is_null() {
        let _ = std::panic::catch_unwind(|| drop(Box::from_raw(user as *mut Box<dyn FunctionImpl>)));
    }
}
