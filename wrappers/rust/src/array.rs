//! n-dimensional arrays (`ch_array`).
use crate::error::{check, Error, ErrorKind, Result};
use chainerc_sys as sys;
use std::ffi::c_void;
use std::ptr::{self, NonNull};

/// Element types (`ch_dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// 32-bit floating point (`CH_FLOAT32`).
    F32,
    /// 64-bit floating point (`CH_FLOAT64`).
    F64,
    /// 32-bit signed integer (`CH_INT32`).
    I32,
}

impl Dtype {
    /// The C API's `ch_dtype` value.
    pub fn raw(self) -> sys::ch_dtype {
        match self {
            Dtype::F32 => sys::CH_FLOAT32,
            Dtype::F64 => sys::CH_FLOAT64,
            Dtype::I32 => sys::CH_INT32,
        }
    }
    /// The dtype of a C API `ch_dtype` value; `None` for an unknown one.
    pub fn from_raw(d: sys::ch_dtype) -> Option<Dtype> {
        match d {
            sys::CH_FLOAT32 => Some(Dtype::F32),
            sys::CH_FLOAT64 => Some(Dtype::F64),
            sys::CH_INT32 => Some(Dtype::I32),
            _ => None,
        }
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        unsafe { sys::ch_dtype_size(self.raw()) }
    }
    /// "float32", "float64" or "int32".
    pub fn name(self) -> &'static str {
        unsafe { std::ffi::CStr::from_ptr(sys::ch_dtype_name(self.raw())).to_str().unwrap_or("unknown") }
    }
}

/// Rust element types of arrays: f32, f64, i32.
pub trait Element: Copy + Send + Sync + 'static {
    /// The array dtype holding this Rust type.
    const DTYPE: Dtype;
}
impl Element for f32 {
    const DTYPE: Dtype = Dtype::F32;
}
impl Element for f64 {
    const DTYPE: Dtype = Dtype::F64;
}
impl Element for i32 {
    const DTYPE: Dtype = Dtype::I32;
}

/// A device is a value: the CPU or CUDA device n.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    /// The host (CPU).
    Cpu,
    /// The CUDA device with this index.
    Cuda(i32),
}

impl Device {
    /// The C API's `ch_device` value.
    pub fn raw(self) -> sys::ch_device {
        match self {
            Device::Cpu => sys::ch_device { type_: sys::CH_DEVICE_CPU, index: 0 },
            Device::Cuda(i) => sys::ch_device { type_: sys::CH_DEVICE_CUDA, index: i },
        }
    }
    /// The device a C API `ch_device` value names.
    pub fn from_raw(d: sys::ch_device) -> Device {
        if d.type_ == sys::CH_DEVICE_CUDA {
            Device::Cuda(d.index)
        } else {
            Device::Cpu
        }
    }
}

pub(crate) fn ndim_of(shape: &[i64]) -> Result<i32> {
    if shape.len() > sys::CH_MAX_NDIM as usize {
        return Err(Error::new(
            ErrorKind::Shape,
            format!("{} dimensions given, at most {} allowed", shape.len(), sys::CH_MAX_NDIM),
        ));
    }
    Ok(shape.len() as i32)
}

fn element_count(shape: &[i64]) -> i64 {
    shape.iter().product()
}

/// An n-dimensional, C-contiguous array: a reference-counted handle.
/// `clone()` makes another handle to the same memory (ch_array_retain);
/// `Drop` releases the handle. Several handles and variables may share one
/// array's memory; use `copy()` for a deep copy.
#[repr(transparent)]
pub struct Array {
    raw: NonNull<sys::ch_array>,
}

// The C API allows every handle to be used, retained and released from any
// thread; concurrent reads are safe.
unsafe impl Send for Array {}
unsafe impl Sync for Array {}

impl Array {
    /// Takes ownership of a new reference (returned by the C API).
    /// # Safety
    /// `raw` must be a live ch_array reference that the caller owns.
    pub unsafe fn from_raw(raw: *mut sys::ch_array) -> Array {
        Array { raw: NonNull::new(raw).expect("a non-NULL ch_array") }
    }
    /// Hands the reference to the caller (who must release it).
    pub fn into_raw(self) -> *mut sys::ch_array {
        let p = self.raw.as_ptr();
        std::mem::forget(self);
        p
    }
    /// The handle, borrowed for as long as `self` lives.
    pub fn as_ptr(&self) -> *mut sys::ch_array {
        self.raw.as_ptr()
    }

    /// New CPU array holding a copy of `data` with the given shape.
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64]) -> Result<Array> {
        Array::from_slice_on(data, shape, Device::Cpu)
    }
    /// As `from_slice`, on `device`.
    pub fn from_slice_on<T: Element>(data: &[T], shape: &[i64], device: Device) -> Result<Array> {
        let ndim = ndim_of(shape)?;
        if element_count(shape) != data.len() as i64 {
            return Err(Error::new(ErrorKind::Shape, format!("{} elements given for shape {:?}", data.len(), shape)));
        }
        let mut out = ptr::null_mut();
        check(unsafe {
            sys::ch_array_new(&mut out, T::DTYPE.raw(), shape.as_ptr(), ndim, data.as_ptr() as *const _, device.raw())
        })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// A 0-d array holding `value`.
    pub fn scalar<T: Element>(value: T) -> Result<Array> {
        Array::from_slice(&[value], &[])
    }
    /// Every element equal to `value` (converted to `dtype`).
    pub fn full(dtype: Dtype, shape: &[i64], value: f64) -> Result<Array> {
        Array::full_on(dtype, shape, value, Device::Cpu)
    }
    /// Every element equal to `value` (converted to `dtype`), on `device`.
    pub fn full_on(dtype: Dtype, shape: &[i64], value: f64, device: Device) -> Result<Array> {
        let ndim = ndim_of(shape)?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_array_new_full(&mut out, dtype.raw(), shape.as_ptr(), ndim, value, device.raw()) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// Every element zero.
    pub fn zeros(dtype: Dtype, shape: &[i64]) -> Result<Array> {
        Array::full(dtype, shape, 0.0)
    }
    /// Every element one.
    pub fn ones(dtype: Dtype, shape: &[i64]) -> Result<Array> {
        Array::full(dtype, shape, 1.0)
    }
    /// Elements not initialized (ch_array_new_empty): `write` or `fill`
    /// them before reading.
    pub fn empty(dtype: Dtype, shape: &[i64]) -> Result<Array> {
        let ndim = ndim_of(shape)?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_array_new_empty(&mut out, dtype.raw(), shape.as_ptr(), ndim, Device::Cpu.raw()) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// Elements not initialized, with `other`'s dtype and shape (CPU).
    pub fn empty_like(other: &Array) -> Result<Array> {
        Array::empty(other.dtype(), other.shape())
    }
    /// Every element `value`, with `other`'s dtype and shape (CPU).
    pub fn full_like(other: &Array, value: f64) -> Result<Array> {
        Array::full(other.dtype(), other.shape(), value)
    }
    /// Zero-copy: the array uses `data`'s buffer; the Vec is dropped when
    /// chainerc no longer uses it.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[i64]) -> Result<Array> {
        let ndim = ndim_of(shape)?;
        if element_count(shape) != data.len() as i64 {
            return Err(Error::new(ErrorKind::Shape, format!("{} elements given for shape {:?}", data.len(), shape)));
        }
        unsafe extern "C" fn release_vec<T>(_data: *mut std::ffi::c_void, user: *mut std::ffi::c_void) {
            let _ = std::panic::catch_unwind(|| drop(Box::from_raw(user as *mut Vec<T>)));
        }
        let mut boxed = Box::new(data);
        let ptr_data = boxed.as_mut_ptr() as *mut std::ffi::c_void;
        let user = Box::into_raw(boxed);
        let mut out = ptr::null_mut();
        let st = unsafe {
            sys::ch_array_wrap(
                &mut out,
                T::DTYPE.raw(),
                shape.as_ptr(),
                ndim,
                ptr_data,
                Device::Cpu.raw(),
                Some(release_vec::<T>),
                user as *mut _,
            )
        };
        if st != sys::CH_OK {
            drop(unsafe { Box::from_raw(user) }); // on failure release is not called
            return Err(crate::error::last_error(st));
        }
        Ok(unsafe { Array::from_raw(out) })
    }

    /// Deep copy.
    pub fn copy(&self) -> Result<Array> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_array_copy(&mut out, self.as_ptr()) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// Same memory, another shape of the same size.
    pub fn reshape(&self, shape: &[i64]) -> Result<Array> {
        let ndim = ndim_of(shape)?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_array_reshape(&mut out, self.as_ptr(), shape.as_ptr(), ndim) })?;
        Ok(unsafe { Array::from_raw(out) })
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        Dtype::from_raw(unsafe { sys::ch_array_dtype(self.as_ptr()) }).expect("a known dtype")
    }
    /// Number of dimensions (0 for a scalar).
    pub fn ndim(&self) -> usize {
        unsafe { sys::ch_array_ndim(self.as_ptr()) as usize }
    }
    /// The extents, borrowed from the array.
    pub fn shape(&self) -> &[i64] {
        let n = self.ndim();
        if n == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(sys::ch_array_shape(self.as_ptr()), n) }
    }
    /// Number of elements (the product of the shape).
    pub fn size(&self) -> usize {
        unsafe { sys::ch_array_size(self.as_ptr()) as usize }
    }
    /// Size of the elements in bytes.
    pub fn nbytes(&self) -> usize {
        unsafe { sys::ch_array_nbytes(self.as_ptr()) }
    }
    /// The device the elements live on.
    pub fn device(&self) -> Device {
        Device::from_raw(unsafe { sys::ch_array_device(self.as_ptr()) })
    }

    fn check_view<T: Element>(&self) -> Result<()> {
        if self.dtype() != T::DTYPE {
            return Err(Error::new(ErrorKind::Dtype, format!("array of {:?} viewed as {:?}", self.dtype(), T::DTYPE)));
        }
        if self.device() != Device::Cpu {
            return Err(Error::new(ErrorKind::Device, format!("array on {:?} viewed from the host", self.device())));
        }
        Ok(())
    }
    /// The elements without copying, borrowing the array (CPU arrays; T must
    /// be the dtype). The memory may be shared with other handles and
    /// variables: do not write it through them while the slice is alive.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.check_view::<T>()?;
        let n = self.size();
        let p = unsafe { sys::ch_array_data(self.as_ptr()) } as *const T;
        if n == 0 || p.is_null() {
            return Ok(&[]);
        }
        Ok(unsafe { std::slice::from_raw_parts(p, n) })
    }
    /// Mutable view of the elements without copying.
    /// # Safety
    /// No other handle, variable or slice may read or write this memory while
    /// the returned slice is alive, and arrays passed to callbacks (inputs,
    /// grad_outputs) must never be written.
    pub unsafe fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        self.check_view::<T>()?;
        let n = self.size();
        let p = sys::ch_array_data(self.as_ptr()) as *mut T;
        if n == 0 || p.is_null() {
            return Ok(&mut []);
        }
        Ok(std::slice::from_raw_parts_mut(p, n))
    }
    /// Pointer to the first element on the array's device: a DEVICE pointer
    /// for an array on a CUDA device (for the host's own kernels in a GPU
    /// callback, see `Context::device` and `Context::stream`); null for an
    /// empty array. Valid while the array is alive; never dereference a
    /// device pointer on the host.
    pub fn data_ptr(&self) -> *mut c_void {
        unsafe { sys::ch_array_data(self.as_ptr()) }
    }
    /// Copy of the elements (any device).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(Error::new(ErrorKind::Dtype, format!("array of {:?} read as {:?}", self.dtype(), T::DTYPE)));
        }
        let mut v: Vec<T> = Vec::with_capacity(self.size());
        check(unsafe {
            sys::ch_array_read(self.as_ptr(), v.as_mut_ptr() as *mut _, self.size() * std::mem::size_of::<T>())
        })?;
        unsafe { v.set_len(self.size()) };
        Ok(v)
    }
    /// Overwrite the elements from `src` (same count and dtype).
    pub fn write<T: Element>(&self, src: &[T]) -> Result<()> {
        if self.dtype() != T::DTYPE {
            return Err(Error::new(
                ErrorKind::Dtype,
                format!("{:?} elements written to an array of {:?}", T::DTYPE, self.dtype()),
            ));
        }
        check(unsafe { sys::ch_array_write(self.as_ptr(), src.as_ptr() as *const _, std::mem::size_of_val(src)) })
    }
    /// Set every element to `value`.
    pub fn fill(&self, value: f64) -> Result<()> {
        check(unsafe { sys::ch_array_fill(self.as_ptr(), value) })
    }
    /// Element at flat index `index` as f64.
    pub fn get(&self, index: i64) -> Result<f64> {
        let mut v = 0.0;
        check(unsafe { sys::ch_array_get(&mut v, self.as_ptr(), index) })?;
        Ok(v)
    }
    /// numpy.allclose: Ok if |self - expected| <= atol + rtol |expected|
    /// everywhere; else a NotClose error naming the worst element.
    pub fn allclose(&self, expected: &Array, atol: f64, rtol: f64) -> Result<()> {
        check(unsafe { sys::ch_allclose(self.as_ptr(), expected.as_ptr(), atol, rtol, ptr::null_mut()) })
    }
}

impl Clone for Array {
    /// Another handle to the same memory (not a copy: see `copy`).
    fn clone(&self) -> Array {
        unsafe { Array::from_raw(sys::ch_array_retain(self.as_ptr())) }
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        unsafe {
            sys::ch_array_release(self.raw.as_ptr());
        }
    }
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Array({:?}, shape {:?}, {:?})", self.dtype(), self.shape(), self.device())
    }
}

/// Host memory statistics of a device's caching allocator.
pub use sys::ch_memory_stats as MemoryStats;

/// Memory use of `device`'s caching allocator (`ch_memory_stats`).
pub fn memory_stats(device: Device) -> Result<MemoryStats> {
    let mut s = MemoryStats { bytes_in_use: 0, bytes_cached: 0, peak_bytes_in_use: 0, allocations: 0, cache_misses: 0 };
    check(unsafe { sys::ch_memory_stats_get(&mut s, device.raw()) })?;
    Ok(s)
}

/// Return the cached blocks of `device` to the system.
pub fn empty_cache(device: Device) -> Result<()> {
    check(unsafe { sys::ch_memory_empty_cache(device.raw()) })
}
