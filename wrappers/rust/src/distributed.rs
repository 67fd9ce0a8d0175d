//! Data-parallel training over processes (ChainerMN's API) on libchainerc_mpi
//! (include/ch/distributed.h); cargo feature `distributed`. Run the program
//! under `mpirun`. Collective calls must be made by every rank in the same
//! order.
//!
//! ```no_run
//! # use chainerc::{distributed as dist, FunctionSet, Optimizer};
//! # fn f(model: &FunctionSet) -> chainerc::Result<()> {
//! let comm = dist::Communicator::new_mpi()?;
//! let opt = dist::create_multi_node_optimizer(&Optimizer::adam_default()?, &comm)?;
//! opt.setup(model)?;
//! comm.bcast_data(model)?; // rank 0's initial parameters
//! let mine = comm.scatter_indices(60000, true, 0)?; // this rank's samples
//! // ... zero_grads, forward, backward, opt.update() averages the gradients first
//! # Ok(()) }
//! ```
use std::ffi::c_void;
use std::ptr::{self, NonNull};

use crate::error::check;
use crate::{sys, Array, FunctionSet, Optimizer, Result};

#[allow(non_camel_case_types)]
type ch_communicator = c_void;

// libchainerc_mpi's functions (not in chainerc-sys, which binds libchainerc).
extern "C" {
    fn ch_communicator_new_mpi(out: *mut *mut ch_communicator) -> sys::ch_status;
    fn ch_communicator_release(comm: *mut ch_communicator) -> sys::ch_status;
    fn ch_communicator_retain(comm: *mut ch_communicator) -> *mut ch_communicator;
    fn ch_communicator_rank(comm: *const ch_communicator) -> i32;
    fn ch_communicator_size(comm: *const ch_communicator) -> i32;
    fn ch_communicator_intra_rank(comm: *const ch_communicator) -> i32;
    fn ch_communicator_intra_size(comm: *const ch_communicator) -> i32;
    fn ch_communicator_barrier(comm: *mut ch_communicator) -> sys::ch_status;
    fn ch_communicator_bcast_data(comm: *mut ch_communicator, set: *mut sys::ch_function_set) -> sys::ch_status;
    fn ch_communicator_allreduce_grads(comm: *mut ch_communicator, set: *mut sys::ch_function_set) -> sys::ch_status;
    fn ch_communicator_allreduce_array(
        comm: *mut ch_communicator,
        array: *mut sys::ch_array,
        op: i32,
    ) -> sys::ch_status;
    fn ch_optimizer_new_multi_node(
        out: *mut *mut sys::ch_optimizer,
        optimizer: *mut sys::ch_optimizer,
        comm: *mut ch_communicator,
    ) -> sys::ch_status;
    fn ch_communicator_scatter_indices(
        out: *mut i64,
        capacity: i64,
        count: *mut i64,
        comm: *mut ch_communicator,
        n: i64,
        shuffle: i32,
        seed: u64,
    ) -> sys::ch_status;
    fn ch_communicator_has_nccl() -> i32;
    fn ch_communicator_finalize() -> sys::ch_status;
}

/// Finalize MPI now if `Communicator::new_mpi` initialised it (else a no-op).
/// Only for hosts whose exit skips C exit handlers; call it last.
pub fn finalize_mpi() -> Result<()> {
    check(unsafe { ch_communicator_finalize() })
}

/// How `allreduce_array` combines the ranks' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum over the ranks.
    Sum = 0,
    /// The mean over the ranks.
    Mean = 1,
}

/// A communicator over every process of the MPI job: one reference (Clone
/// retains, Drop releases).
pub struct Communicator {
    raw: NonNull<ch_communicator>,
}

// The handle may be released from any thread; calls are serialized by &self
// users as MPI_THREAD_SERIALIZED requires (one thread at a time).
unsafe impl Send for Communicator {}

impl Communicator {
    /// Initialises MPI if the process has not (finalized at exit).
    pub fn new_mpi() -> Result<Communicator> {
        let mut out = ptr::null_mut();
        check(unsafe { ch_communicator_new_mpi(&mut out) })?;
        Ok(Communicator { raw: NonNull::new(out).expect("a communicator") })
    }
    /// The raw `ch_communicator` handle (still owned by `self`).
    pub fn as_ptr(&self) -> *mut c_void {
        self.raw.as_ptr()
    }
    /// This process's rank in the job.
    pub fn rank(&self) -> i32 {
        unsafe { ch_communicator_rank(self.as_ptr()) }
    }
    /// Number of processes in the job.
    pub fn size(&self) -> i32 {
        unsafe { ch_communicator_size(self.as_ptr()) }
    }
    /// This process's rank among the processes on its node.
    pub fn intra_rank(&self) -> i32 {
        unsafe { ch_communicator_intra_rank(self.as_ptr()) }
    }
    /// Number of processes on this node.
    pub fn intra_size(&self) -> i32 {
        unsafe { ch_communicator_intra_size(self.as_ptr()) }
    }
    /// Whether CUDA gradients can be reduced with NCCL here: built with NCCL
    /// support and libnccl.so.2 loadable (opened on first use, never linked;
    /// `CH_NCCL=auto|0|1` chooses, see `<ch/distributed.h>`).
    pub fn has_nccl() -> bool {
        unsafe { ch_communicator_has_nccl() != 0 }
    }
    /// Waits until every rank has reached the barrier.
    pub fn barrier(&self) -> Result<()> {
        check(unsafe { ch_communicator_barrier(self.as_ptr()) })
    }
    /// Every parameter of `set` from rank 0.
    pub fn bcast_data(&self, set: &FunctionSet) -> Result<()> {
        check(unsafe { ch_communicator_bcast_data(self.as_ptr(), set.as_ptr()) })
    }
    /// The gradients of `set` averaged over the ranks, in place.
    pub fn allreduce_grads(&self, set: &FunctionSet) -> Result<()> {
        check(unsafe { ch_communicator_allreduce_grads(self.as_ptr(), set.as_ptr()) })
    }
    /// Sum or mean of `array` over the ranks, in place.
    pub fn allreduce_array(&self, array: &Array, op: ReduceOp) -> Result<()> {
        check(unsafe { ch_communicator_allreduce_array(self.as_ptr(), array.as_ptr(), op as i32) })
    }
    /// This rank's share of 0..n (ChainerMN's scatter_dataset): ceil(n / size)
    /// indices, shuffled by rank 0's seed when `shuffle`.
    pub fn scatter_indices(&self, n: i64, shuffle: bool, seed: u64) -> Result<Vec<i64>> {
        let mut count = 0i64;
        check(unsafe {
            ch_communicator_scatter_indices(ptr::null_mut(), 0, &mut count, self.as_ptr(), n, shuffle as i32, seed)
        })?;
        let mut out = vec![0i64; count as usize];
        check(unsafe {
            ch_communicator_scatter_indices(
                out.as_mut_ptr(),
                count,
                ptr::null_mut(),
                self.as_ptr(),
                n,
                shuffle as i32,
                seed,
            )
        })?;
        Ok(out)
    }
}

impl Clone for Communicator {
    fn clone(&self) -> Communicator {
        Communicator { raw: NonNull::new(unsafe { ch_communicator_retain(self.as_ptr()) }).expect("retain") }
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        unsafe {
            ch_communicator_release(self.as_ptr());
        }
    }
}

/// ChainerMN's create_multi_node_optimizer: from now on every update of
/// `optimizer` averages the gradients over the ranks first. Returns the same
/// optimizer (another reference); it keeps a reference to the communicator.
pub fn create_multi_node_optimizer(optimizer: &Optimizer, comm: &Communicator) -> Result<Optimizer> {
    let mut out = ptr::null_mut();
    check(unsafe { ch_optimizer_new_multi_node(&mut out, optimizer.as_ptr(), comm.as_ptr()) })?;
    unsafe {
        sys::ch_optimizer_release(out); // `out` is `optimizer`: keep the clone's reference
    }
    Ok(optimizer.clone())
}
