//! CUDA devices, device memory, streams and pinned host memory
//! (`<ch/cuda.h>` and the device part of `<ch/array.h>`). Without a GPU, a
//! driver or the CUDA backend, `device_count()` is 0 and every CUDA request
//! is an `ErrorKind::Device` error, never a silent CPU fallback.
use crate::array::{ndim_of, Array, Device, Dtype};
use crate::error::{check, Error, ErrorKind, Result};
use chainerc_sys as sys;
use std::ffi::CStr;
use std::ptr::{self, NonNull};

/// Number of usable CUDA devices (0 without a GPU, a driver or the backend).
pub fn device_count() -> i32 {
    unsafe { sys::ch_cuda_device_count() }
}

/// Why `device_count()` is 0 (empty when devices are there).
pub fn unavailable_reason() -> String {
    unsafe { CStr::from_ptr(sys::ch_cuda_unavailable_reason()) }.to_string_lossy().into_owned()
}

/// The CUDA device `index` as the C library builds it (same as `Device::Cuda(index)`).
pub fn cuda(index: i32) -> Device {
    Device::from_raw(unsafe { sys::ch_device_cuda(index) })
}

/// The calling thread's current CUDA device.
pub fn current_device() -> Result<i32> {
    let mut out = 0;
    check(unsafe { sys::ch_cuda_current_device(&mut out) })?;
    Ok(out)
}

/// Makes `index` the current device of this thread until the guard drops
/// (the seed's `cuda.using_device`).
pub struct DeviceScope(());

impl DeviceScope {
    /// Makes CUDA device `index` current (CH_ERR_DEVICE where there is none).
    pub fn new(index: i32) -> Result<DeviceScope> {
        check(unsafe { sys::ch_cuda_device_push(index) })?;
        Ok(DeviceScope(()))
    }
}

impl Drop for DeviceScope {
    fn drop(&mut self) {
        unsafe {
            sys::ch_cuda_device_pop();
        }
    }
}

/// Waits for all work on CUDA device `index`.
pub fn synchronize(index: i32) -> Result<()> {
    check(unsafe { sys::ch_cuda_synchronize(index) })
}

/// Reseeds device `index`'s generator as `CH_SEED=seed` would (-1: every device).
pub fn seed(index: i32, seed: u64) -> Result<()> {
    check(unsafe { sys::ch_cuda_seed(index, seed) })
}

/// Caps the bytes chainerc holds from `device` (0: no cap).
pub fn set_memory_limit(device: Device, bytes: usize) -> Result<()> {
    check(unsafe { sys::ch_memory_set_limit(device.raw(), bytes) })
}

/// The cap set by `set_memory_limit` (0: none).
pub fn memory_limit(device: Device) -> Result<usize> {
    let mut out = 0usize;
    check(unsafe { sys::ch_memory_limit(&mut out, device.raw()) })?;
    Ok(out)
}

/// The process-wide out-of-memory hook: called once when a device allocation
/// fails (a garbage-collected host frees memory there), then the allocation is
/// retried once. `None` removes it.
/// # Safety
/// `hook` runs on the allocating thread, inside a chainerc call; it must not
/// unwind and `user_data` must stay valid while it is set.
pub unsafe fn set_oom_hook(hook: sys::ch_oom_hook, user_data: *mut std::ffi::c_void) {
    sys::ch_memory_set_oom_hook(hook, user_data)
}

impl Array {
    /// A copy on `device` (the seed's `to_gpu` / `to_cpu`).
    pub fn to_device(&self, device: Device) -> Result<Array> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_array_to_device(&mut out, self.as_ptr(), device.raw()) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// Copies `src`'s elements into `self` (same dtype and size, any devices).
    pub fn copy_from(&self, src: &Array) -> Result<()> {
        check(unsafe { sys::ch_array_copy_from(self.as_ptr(), src.as_ptr()) })
    }
    /// Fills a float array with samples of U[low, high).
    pub fn fill_uniform(&self, low: f64, high: f64) -> Result<()> {
        check(unsafe { sys::ch_array_fill_uniform(self.as_ptr(), low, high) })
    }
    /// Fills a float array with samples of N(mean, stddev^2).
    pub fn fill_normal(&self, mean: f64, stddev: f64) -> Result<()> {
        check(unsafe { sys::ch_array_fill_normal(self.as_ptr(), mean, stddev) })
    }
    /// A CPU array in page-locked memory, for asynchronous copies.
    pub fn new_pinned(dtype: Dtype, shape: &[i64]) -> Result<Array> {
        let ndim = ndim_of(shape)?;
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_array_new_pinned(&mut out, dtype.raw(), shape.as_ptr(), ndim) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// Whether the array lives in page-locked host memory.
    pub fn is_pinned(&self) -> bool {
        unsafe { sys::ch_array_is_pinned(self.as_ptr()) != 0 }
    }
    /// Queues a copy to `device` on `stream`; complete after `stream.synchronize()`.
    pub fn to_device_async(&self, device: Device, stream: &Stream) -> Result<Array> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_array_to_device_async(&mut out, self.as_ptr(), device.raw(), stream.raw.as_ptr()) })?;
        Ok(unsafe { Array::from_raw(out) })
    }
    /// Queues a copy of `src` into `self` on `stream`.
    pub fn copy_from_async(&self, src: &Array, stream: &Stream) -> Result<()> {
        check(unsafe { sys::ch_array_copy_from_async(self.as_ptr(), src.as_ptr(), stream.raw.as_ptr()) })
    }
}

/// A CUDA stream of one device; dropping it waits for its work.
pub struct Stream {
    raw: NonNull<sys::ch_stream>,
}

unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream on `device`.
    pub fn new(device: Device) -> Result<Stream> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_stream_new(&mut out, device.raw()) })?;
        Ok(Stream { raw: NonNull::new(out).expect("a non-NULL ch_stream") })
    }
    /// Waits for the work queued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::ch_stream_synchronize(self.raw.as_ptr()) })
    }
    /// The stream's device.
    pub fn device(&self) -> Device {
        Device::from_raw(unsafe { sys::ch_stream_device(self.raw.as_ptr()) })
    }
    /// The `cudaStream_t`, for the host's own CUDA calls.
    pub fn native(&self) -> *mut std::ffi::c_void {
        unsafe { sys::ch_stream_native(self.raw.as_ptr()) }
    }
}

impl Clone for Stream {
    /// Another handle to the same stream.
    fn clone(&self) -> Stream {
        let p = unsafe { sys::ch_stream_retain(self.raw.as_ptr()) };
        Stream { raw: NonNull::new(p).expect("a live ch_stream") }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        unsafe {
            sys::ch_stream_release(self.raw.as_ptr());
        }
    }
}

/// The device's engine stream (the `cudaStream_t` all of chainerc's work on
/// CUDA device `index` is queued on), for the host's own CUDA calls; NULL
/// where there is no such device.
pub fn engine_stream(index: i32) -> *mut std::ffi::c_void {
    unsafe { sys::ch_cuda_engine_stream(index) }
}

/// A training step (or any fixed-shape work) captured on one CUDA device and
/// replayed as a CUDA graph (`ch_cuda_graph_*`; the rules are in
/// `<ch/cuda.h>` and docs/gpu.md).
pub struct CudaGraph {
    raw: NonNull<sys::ch_cuda_graph>,
}

unsafe impl Send for CudaGraph {}
unsafe impl Sync for CudaGraph {}

impl CudaGraph {
    /// Begins capturing `device`'s work on the calling thread.
    pub fn begin_capture(device: Device) -> Result<()> {
        check(unsafe { sys::ch_cuda_graph_begin_capture(device.raw()) })
    }
    /// Ends the capture begun on this thread for `device`; the graph.
    pub fn end_capture(device: Device) -> Result<CudaGraph> {
        let mut out = ptr::null_mut();
        check(unsafe { sys::ch_cuda_graph_end_capture(&mut out, device.raw()) })?;
        Ok(CudaGraph { raw: NonNull::new(out).expect("a non-NULL ch_cuda_graph") })
    }
    /// Captures what `body` queues on `device`; the capture is ended even when
    /// `body` fails, and `body`'s error wins.
    pub fn capture<F: FnOnce() -> Result<()>>(device: Device, body: F) -> Result<CudaGraph> {
        CudaGraph::begin_capture(device)?;
        let ran = body();
        let graph = CudaGraph::end_capture(device);
        ran?;
        graph
    }
    /// Queues the captured work once more (no host synchronisation).
    pub fn replay(&self) -> Result<()> {
        check(unsafe { sys::ch_cuda_graph_replay(self.raw.as_ptr()) })
    }
    /// Copies `values[i]` into `targets[i]` (same dtype and shape), then replays.
    pub fn replay_with(&self, targets: &[&Array], values: &[&Array]) -> Result<()> {
        if targets.len() != values.len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("replay_with: {} targets but {} values", targets.len(), values.len()),
            ));
        }
        let t: Vec<*mut sys::ch_array> = targets.iter().map(|a| a.as_ptr()).collect();
        let v: Vec<*const sys::ch_array> = values.iter().map(|a| a.as_ptr() as *const _).collect();
        let n = i32::try_from(t.len())
            .map_err(|_| Error::new(ErrorKind::InvalidArgument, "replay_with: too many arrays"))?;
        check(unsafe { sys::ch_cuda_graph_replay_with(self.raw.as_ptr(), t.as_ptr(), v.as_ptr(), n) })
    }
    /// The graph's device.
    pub fn device(&self) -> Device {
        Device::from_raw(unsafe { sys::ch_cuda_graph_device(self.raw.as_ptr()) })
    }
    /// The kernels and cuBLAS calls the graph recorded.
    pub fn size(&self) -> i64 {
        unsafe { sys::ch_cuda_graph_size(self.raw.as_ptr()) }
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        unsafe {
            sys::ch_cuda_graph_release(self.raw.as_ptr());
        }
    }
}
