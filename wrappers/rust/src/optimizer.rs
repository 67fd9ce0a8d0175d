//! Optimizers (include/ch/optimizer.h): SGD, MomentumSGD, AdaGrad, AdaDelta,
//! Adam (with Chainer 7's AdamW and AMSGrad), RMSprop, NesterovAG and optimizers
//! written in Rust.
use crate::array::Array;
use crate::error::{check, guard, Result};
use crate::function_set::{cstring, FunctionSet, NamedParameter};
use chainerc_sys as sys;
use std::ffi::{c_void, CStr, CString};
use std::ptr::{self, NonNull};

/// Chainer 7's Adam hyperparameters (include/ch/optimizer.h's ch_adam_options);
/// `Default` gives Chainer 7's defaults (lam = 1: no decay of beta1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamOptions {
    /// Step size (0.001).
    pub alpha: f64,
    /// First moment decay (0.9).
    pub beta1: f64,
    /// Second moment decay (0.999).
    pub beta2: f64,
    /// Added to sqrt(v) (1e-8).
    pub eps: f64,
    /// Multiplier of the whole step, for schedules (1).
    pub eta: f64,
    /// Decoupled weight decay, AdamW (0).
    pub weight_decay_rate: f64,
    /// Divide by the running maximum of v (state "vhat"); fixed for the optimizer's life.
    pub amsgrad: bool,
    /// The seed's decay of beta1 per step (1: none).
    pub lam: f64,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            alpha: 0.001,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            eta: 1.0,
            weight_decay_rate: 0.0,
            amsgrad: false,
            lam: 1.0,
        }
    }
}

/// An optimizer: one reference (Clone retains, Drop releases).
#[repr(transparent)]
pub struct Optimizer {
    raw: NonNull<sys::ch_optimizer>,
}

unsafe impl Send for Optimizer {}

fn wrap(st: sys::ch_status, out: *mut sys::ch_optimizer) -> Result<Optimizer> {
    check(st)?;
    Ok(Optimizer { raw: NonNull::new(out).expect("a non-NULL ch_optimizer") })
}

/// A user-defined optimizer rule (the seed's Optimizer subclass): state
/// names, optional state initialisation, and the per-parameter update.
pub trait OptimizerImpl: Send + 'static {
    /// Names of the state arrays of each parameter (checkpoint keys).
    fn state_names(&self) -> Vec<String> {
        Vec::new()
    }
    /// The state arrays of one parameter (default: zeros like the parameter).
    fn init_state(&self, param: &Array, grad: &Array) -> Result<Vec<Array>> {
        let _ = grad;
        self.state_names().iter().map(|_| Array::zeros(param.dtype(), param.shape())).collect()
    }
    /// Update `param` in place from `grad` and `states` at step t.
    fn update_one(&self, param: &Array, grad: &Array, states: &[Array], t: i64) -> Result<()>;
}

unsafe extern "C" fn opt_init(
    user: *mut c_void,
    param: *mut sys::ch_array,
    grad: *mut sys::ch_array,
    states: *mut *mut sys::ch_array,
    n: usize,
) -> sys::ch_status {
    guard(|| {
        let imp = &**(user as *const Box<dyn OptimizerImpl>);
        if param.is_null() || grad.is_null() {
            return Err(crate::Error::new(crate::ErrorKind::Callback, "the engine passed a NULL array"));
        }
        let p = &*(&param as *const *mut sys::ch_array as *const Array);
        let g = &*(&grad as *const *mut sys::ch_array as *const Array);
        let st = imp.init_state(p, g)?;
        if st.len() != n {
            return Err(crate::Error::new(
                crate::ErrorKind::Callback,
                format!("init_state made {} arrays, {} expected", st.len(), n),
            ));
        }
        for (k, a) in st.into_iter().enumerate() {
            *states.add(k) = a.into_raw();
        }
        Ok(())
    })
}

unsafe extern "C" fn opt_update(
    user: *mut c_void,
    param: *mut sys::ch_array,
    grad: *mut sys::ch_array,
    states: *const *mut sys::ch_array,
    n: usize,
    t: i64,
) -> sys::ch_status {
    guard(|| {
        let imp = &**(user as *const Box<dyn OptimizerImpl>);
        if param.is_null()
            || grad.is_null()
            || (n > 0 && std::slice::from_raw_parts(states, n).iter().any(|p| p.is_null()))
        {
            return Err(crate::Error::new(crate::ErrorKind::Callback, "the engine passed a NULL array"));
        }
        let p = &*(&param as *const *mut sys::ch_array as *const Array);
        let g = &*(&grad as *const *mut sys::ch_array as *const Array);
        let s: &[Array] = if n == 0 { &[] } else { std::slice::from_raw_parts(states as *const Array, n) };
        imp.update_one(p, g, s, t)
    })
}

unsafe extern "C" fn opt_destroy(user: *mut c_void) {
    if !user.is_null() {
        let _ = std::panic::catch_unwind(|| drop(Box::from_raw(user as *mut Box<dyn OptimizerImpl>)));
    }
}

impl Optimizer {
    /// The raw `ch_optimizer` handle (still owned by `self`).
    pub fn as_ptr(&self) -> *mut sys::ch_optimizer {
        self.raw.as_ptr()
    }
    /// SGD (Chainer's default lr = 0.01).
    pub fn sgd(lr: f64) -> Result<Optimizer> {
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_sgd_new(&mut out, lr) }, out)
    }
    /// MomentumSGD (lr = 0.01, momentum = 0.9).
    pub fn momentum_sgd(lr: f64, momentum: f64) -> Result<Optimizer> {
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_momentum_sgd_new(&mut out, lr, momentum) }, out)
    }
    /// AdaGrad (lr = 0.001, eps = 1e-8).
    pub fn adagrad(lr: f64, eps: f64) -> Result<Optimizer> {
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_adagrad_new(&mut out, lr, eps) }, out)
    }
    /// AdaDelta (rho = 0.95, eps = 1e-6).
    pub fn adadelta(rho: f64, eps: f64) -> Result<Optimizer> {
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_adadelta_new(&mut out, rho, eps) }, out)
    }
    /// Adam (alpha = 0.001, beta1 = 0.9, beta2 = 0.999, lam = 1 - 1e-8, eps = 1e-8).
    pub fn adam(alpha: f64, beta1: f64, beta2: f64, lam: f64, eps: f64) -> Result<Optimizer> {
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_adam_new(&mut out, alpha, beta1, beta2, lam, eps) }, out)
    }
    /// Adam with the seed's defaults.
    pub fn adam_default() -> Result<Optimizer> {
        Optimizer::adam(
            sys::CH_ADAM_DEFAULT_ALPHA,
            sys::CH_ADAM_DEFAULT_BETA1,
            sys::CH_ADAM_DEFAULT_BETA2,
            sys::CH_ADAM_DEFAULT_LAM,
            sys::CH_ADAM_DEFAULT_EPS,
        )
    }
    /// RMSprop (lr = 0.01, alpha = 0.99, eps = 1e-8).
    pub fn rmsprop(lr: f64, alpha: f64, eps: f64) -> Result<Optimizer> {
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_rmsprop_new(&mut out, lr, alpha, eps) }, out)
    }
    /// NesterovAG (Chainer 7; lr = 0.01, momentum = 0.9).
    pub fn nesterov_ag(lr: f64, momentum: f64) -> Result<Optimizer> {
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_nesterov_ag_new(&mut out, lr, momentum) }, out)
    }
    /// Chainer 7's Adam: decoupled weight decay (AdamW), eta, AMSGrad
    /// (`Optimizer::adam_with(&AdamOptions { weight_decay_rate: 0.01, ..Default::default() })`).
    pub fn adam_with(options: &AdamOptions) -> Result<Optimizer> {
        let o = sys::ch_adam_options {
            version: 1,
            alpha: options.alpha,
            beta1: options.beta1,
            beta2: options.beta2,
            eps: options.eps,
            eta: options.eta,
            weight_decay_rate: options.weight_decay_rate,
            amsgrad: options.amsgrad as i32,
            lam: options.lam,
        };
        let mut out = ptr::null_mut();
        wrap(unsafe { sys::ch_optimizer_adam_new_ex(&mut out, &o) }, out)
    }
    /// A user-defined optimizer.
    pub fn custom<T: OptimizerImpl>(name: &str, imp: T) -> Result<Optimizer> {
        let cname = cstring(name, "optimizer name")?;
        let names: Vec<CString> = imp.state_names().iter().map(|s| cstring(s, "state name")).collect::<Result<_>>()?;
        let name_ptrs: Vec<*const std::os::raw::c_char> = names.iter().map(|s| s.as_ptr()).collect();
        let user = Box::into_raw(Box::new(Box::new(imp) as Box<dyn OptimizerImpl>)) as *mut c_void;
        let def = sys::ch_optimizer_def {
            version: sys::CH_OPTIMIZER_DEF_VERSION as u32,
            name: cname.as_ptr(),
            n_states: name_ptrs.len(),
            state_names: if name_ptrs.is_empty() { ptr::null() } else { name_ptrs.as_ptr() },
            init_state: Some(opt_init),
            update_one: Some(opt_update),
            user_data: user,
            destroy: Some(opt_destroy),
        };
        let mut out = ptr::null_mut();
        let st = unsafe { sys::ch_optimizer_new(&mut out, &def) };
        if st != sys::CH_OK {
            unsafe { opt_destroy(user) };
            return Err(crate::error::last_error(st));
        }
        wrap(st, out)
    }
    /// The optimizer's name ("SGD", "Adam", ...).
    pub fn name(&self) -> String {
        unsafe { CStr::from_ptr(sys::ch_optimizer_name(self.as_ptr())).to_string_lossy().into_owned() }
    }
    /// A hyperparameter by name ("lr", "momentum", "eps", ...).
    pub fn hyperparam(&self, name: &str) -> Result<f64> {
        let n = cstring(name, "hyperparameter")?;
        let mut v = 0.0;
        check(unsafe { sys::ch_optimizer_get_hyperparam(&mut v, self.as_ptr(), n.as_ptr()) })?;
        Ok(v)
    }
    /// Sets hyperparameter `name` ("lr", "momentum", ...).
    pub fn set_hyperparam(&self, name: &str, value: f64) -> Result<()> {
        let n = cstring(name, "hyperparameter")?;
        check(unsafe { sys::ch_optimizer_set_hyperparam(self.as_ptr(), n.as_ptr(), value) })
    }
    /// Set up with every parameter of `set`.
    pub fn setup(&self, set: &FunctionSet) -> Result<()> {
        check(unsafe { sys::ch_optimizer_setup(self.as_ptr(), set.as_ptr()) })
    }
    /// Set up with parameter and gradient arrays.
    pub fn setup_arrays(&self, params: &[&Array], grads: &[&Array]) -> Result<()> {
        let ps: Vec<*mut sys::ch_array> = params.iter().map(|a| a.as_ptr()).collect();
        let gs: Vec<*mut sys::ch_array> = grads.iter().map(|a| a.as_ptr()).collect();
        if ps.len() != gs.len() {
            return Err(crate::Error::new(
                crate::ErrorKind::InvalidArgument,
                format!("{} parameters and {} gradients", ps.len(), gs.len()),
            ));
        }
        check(unsafe { sys::ch_optimizer_setup_arrays(self.as_ptr(), ps.as_ptr(), gs.as_ptr(), ps.len()) })
    }
    /// Number of parameters being optimized.
    pub fn parameter_count(&self) -> usize {
        unsafe { sys::ch_optimizer_parameter_count(self.as_ptr()) }
    }
    /// Parameter `index` with its path.
    pub fn parameter(&self, index: usize) -> Result<NamedParameter> {
        let (mut p, mut g, mut path) = (ptr::null_mut(), ptr::null_mut(), ptr::null());
        check(unsafe { sys::ch_optimizer_parameter(&mut p, &mut g, &mut path, self.as_ptr(), index) })?;
        let path = unsafe { CStr::from_ptr(path).to_string_lossy().into_owned() };
        Ok(NamedParameter { path, param: unsafe { Array::from_raw(p) }, grad: unsafe { Array::from_raw(g) } })
    }
    /// Steps done (the seed's t).
    pub fn t(&self) -> i64 {
        unsafe { sys::ch_optimizer_t(self.as_ptr()) }
    }
    /// Epochs finished (Chainer's Optimizer.epoch; saved in checkpoints).
    pub fn epoch(&self) -> i64 {
        unsafe { sys::ch_optimizer_epoch(self.as_ptr()) }
    }
    /// epoch += 1 (Chainer's new_epoch).
    pub fn new_epoch(&self) -> Result<()> {
        check(unsafe { sys::ch_optimizer_new_epoch(self.as_ptr()) })
    }
    /// Sets the update count t (e.g. after loading a model).
    pub fn set_t(&self, t: i64) -> Result<()> {
        check(unsafe { sys::ch_optimizer_set_t(self.as_ptr(), t) })
    }
    /// Sets every gradient to zero.
    pub fn zero_grads(&self) -> Result<()> {
        check(unsafe { sys::ch_optimizer_zero_grads(self.as_ptr()) })
    }
    /// Plain SGD's step taken inside backward (`ch_optimizer_set_step_in_backward`):
    /// in a step with `zero_grads` before backward, each Linear weight applied once is stepped
    /// by one GEMM into W and its gradient is not written, so the gradient
    /// utilities fail until `update`. Errors for other optimizers.
    pub fn set_step_in_backward(&self, enable: bool) -> Result<()> {
        check(unsafe { sys::ch_optimizer_set_step_in_backward(self.as_ptr(), enable as i32) })
    }
    /// Whether the step is taken inside backward (see `set_step_in_backward`).
    pub fn step_in_backward(&self) -> bool {
        unsafe { sys::ch_optimizer_step_in_backward(self.as_ptr()) != 0 }
    }
    /// t += 1, then update every parameter.
    pub fn update(&self) -> Result<()> {
        check(unsafe { sys::ch_optimizer_update(self.as_ptr()) })
    }
    /// Adds `grads` (one per parameter, in order) to the gradients.
    pub fn accumulate_grads(&self, grads: &[&Array]) -> Result<()> {
        let gs: Vec<*mut sys::ch_array> = grads.iter().map(|a| a.as_ptr()).collect();
        check(unsafe { sys::ch_optimizer_accumulate_grads(self.as_ptr(), gs.as_ptr(), gs.len()) })
    }
    /// The L2 norm of every gradient together.
    pub fn compute_grads_norm(&self) -> Result<f64> {
        let mut v = 0.0;
        check(unsafe { sys::ch_optimizer_compute_grads_norm(&mut v, self.as_ptr()) })?;
        Ok(v)
    }
    /// Scales the gradients down so that their L2 norm is at most `maxnorm`.
    pub fn clip_grads(&self, maxnorm: f64) -> Result<()> {
        check(unsafe { sys::ch_optimizer_clip_grads(self.as_ptr(), maxnorm) })
    }
    /// Adds `decay` times each parameter to its gradient.
    pub fn weight_decay(&self, decay: f64) -> Result<()> {
        check(unsafe { sys::ch_optimizer_weight_decay(self.as_ptr(), decay) })
    }
    /// Number of state arrays.
    pub fn state_count(&self) -> usize {
        unsafe { sys::ch_optimizer_state_count(self.as_ptr()) }
    }
    /// State array i with its key ("l1/W/v").
    pub fn state(&self, index: usize) -> Result<(String, Array)> {
        let (mut a, mut key) = (ptr::null_mut(), ptr::null());
        check(unsafe { sys::ch_optimizer_state(&mut a, &mut key, self.as_ptr(), index) })?;
        Ok((unsafe { CStr::from_ptr(key).to_string_lossy().into_owned() }, unsafe { Array::from_raw(a) }))
    }
    /// Save t and the state as .npz.
    pub fn save_npz(&self, path: &str, compressed: bool) -> Result<()> {
        let p = cstring(path, "path")?;
        let flags = if compressed { sys::CH_NPZ_COMPRESSED } else { sys::CH_NPZ_STORED };
        check(unsafe { sys::ch_optimizer_save_npz(self.as_ptr(), p.as_ptr(), flags) })
    }
    /// Loads t and the state from .npz (as `save_npz` wrote it).
    pub fn load_npz(&self, path: &str) -> Result<()> {
        let p = cstring(path, "path")?;
        check(unsafe { sys::ch_optimizer_load_npz(self.as_ptr(), p.as_ptr()) })
    }
}

impl Clone for Optimizer {
    fn clone(&self) -> Optimizer {
        Optimizer { raw: NonNull::new(unsafe { sys::ch_optimizer_retain(self.as_ptr()) }).expect("retain") }
    }
}

impl Drop for Optimizer {
    fn drop(&mut self) {
        unsafe {
            sys::ch_optimizer_release(self.raw.as_ptr());
        }
    }
}

impl std::fmt::Debug for Optimizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Optimizer({:?}, t = {})", self.name(), self.t())
    }
}
