//go:build chainerc_mpi

// Data-parallel training over processes (ChainerMN's API) on libchainerc_mpi
// (include/ch/distributed.h). Built with the tag chainerc_mpi (go test
// -tags chainerc_mpi), which links libchainerc_mpi through pkg-config
// (chainerc_mpi.pc, as cgo.go does chainerc.pc). Run the
// program under mpirun; collective calls must be made by every rank in the
// same order. A Communicator is used by one goroutine at a time.

package chainerc

/*
#cgo pkg-config: chainerc_mpi
#include <stdlib.h>
#include <string.h>
#include <ch/distributed.h>
#include "capi_gen.h"

// The status and, on failure, the message copied inside the same cgo call
// (the message is thread-local; see cgo.go).
static gres gd_res(ch_status st) {
  gres r;
  memset(&r, 0, sizeof r);
  r.st = st;
  if (st != CH_OK) {
    const char* m = ch_error_message();
    r.msg = strdup(m ? m : "");
    r.payload = ch_error_take_payload();
  }
  return r;
}
static gres gd_new(void) {
  ch_communicator* c = NULL;
  gres r = gd_res(ch_communicator_new_mpi(&c));
  r.out = c;
  return r;
}
static gres gd_release(void* c) { return gd_res(ch_communicator_release(c)); }
static gres gd_barrier(void* c) { return gd_res(ch_communicator_barrier(c)); }
static gres gd_bcast(void* c, ch_function_set* s) { return gd_res(ch_communicator_bcast_data(c, s)); }
static gres gd_allreduce_grads(void* c, ch_function_set* s) {
  return gd_res(ch_communicator_allreduce_grads(c, s));
}
static gres gd_allreduce_array(void* c, ch_array* a, int op) {
  return gd_res(ch_communicator_allreduce_array(c, a, (ch_reduce_op)op));
}
static gres gd_multi_node(ch_optimizer* o, void* c) {
  ch_optimizer* out = NULL;
  gres r = gd_res(ch_optimizer_new_multi_node(&out, o, c));
  if (out) ch_optimizer_release(out);  // the same optimizer: Go keeps its own reference
  return r;
}
static gres gd_scatter(int64_t* out, int64_t cap, void* c, int64_t n, int shuffle, uint64_t seed) {
  int64_t count = 0;
  gres r = gd_res(ch_communicator_scatter_indices(out, cap, &count, c, n, shuffle, seed));
  r.d = (double)count;
  return r;
}
static int32_t gd_rank(void* c) { return ch_communicator_rank(c); }
static int32_t gd_size(void* c) { return ch_communicator_size(c); }
static int32_t gd_intra_rank(void* c) { return ch_communicator_intra_rank(c); }
static int32_t gd_intra_size(void* c) { return ch_communicator_intra_size(c); }
static int32_t gd_has_nccl(void) { return ch_communicator_has_nccl(); }
static gres gd_finalize(void) { return gd_res(ch_communicator_finalize()); }
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ReduceOp says how AllreduceArray combines the ranks' values.
type ReduceOp int

const (
	ReduceSum  ReduceOp = 0
	ReduceMean ReduceOp = 1
)

// Communicator is a communicator over every process of the MPI job.
type Communicator struct {
	p unsafe.Pointer
}

// NewCommunicator initialises MPI if the process has not (finalized at exit)
// and makes a communicator over all ranks (ChainerMN's create_communicator).
func NewCommunicator() (*Communicator, error) {
	r := C.gd_new()
	if err := errOf(r); err != nil {
		return nil, err
	}
	c := &Communicator{p: r.out}
	runtime.SetFinalizer(c, (*Communicator).Close)
	return c, nil
}

// Close releases the handle (idempotent).
func (c *Communicator) Close() {
	if c == nil || c.p == nil {
		return
	}
	C.gd_release(c.p)
	c.p = nil
	runtime.SetFinalizer(c, nil)
}

func (c *Communicator) Rank() int      { return int(C.gd_rank(c.p)) }
func (c *Communicator) Size() int      { return int(C.gd_size(c.p)) }
func (c *Communicator) IntraRank() int { return int(C.gd_intra_rank(c.p)) }
func (c *Communicator) IntraSize() int { return int(C.gd_intra_size(c.p)) }

// FinalizeMPI finalizes MPI if NewCommunicator initialised it. Call it last:
// os.Exit (and so the end of a Go test binary) skips the C exit handler that
// would otherwise finalize, and Open MPI then reports the rank as failed.
func FinalizeMPI() error { return errOf(C.gd_finalize()) }

// HasNCCL says whether CUDA gradients can be reduced with NCCL here: built with
// NCCL support and libnccl.so.2 loadable (opened on first use, never linked;
// the environment variable CH_NCCL=auto|0|1 chooses, see <ch/distributed.h>).
func HasNCCL() bool { return C.gd_has_nccl() != 0 }

// Barrier waits for every rank.
func (c *Communicator) Barrier() error { return errOf(C.gd_barrier(c.p)) }

// BcastData copies every parameter of s from rank 0.
func (c *Communicator) BcastData(s *FunctionSet) error {
	r := C.gd_bcast(c.p, s.p)
	runtime.KeepAlive(s)
	return errOf(r)
}

// AllreduceGrads averages the gradients of s over the ranks, in place.
func (c *Communicator) AllreduceGrads(s *FunctionSet) error {
	r := C.gd_allreduce_grads(c.p, s.p)
	runtime.KeepAlive(s)
	return errOf(r)
}

// AllreduceArray sums or averages a over the ranks, in place.
func (c *Communicator) AllreduceArray(a *Array, op ReduceOp) error {
	r := C.gd_allreduce_array(c.p, a.p, C.int(op))
	runtime.KeepAlive(a)
	return errOf(r)
}

// ScatterIndices is this rank's share of 0..n-1 (ChainerMN's
// scatter_dataset): ceil(n / size) indices, shuffled by rank 0's seed.
func (c *Communicator) ScatterIndices(n int64, shuffle bool, seed uint64) ([]int64, error) {
	sh := C.int(0)
	if shuffle {
		sh = 1
	}
	r := C.gd_scatter(nil, 0, c.p, C.int64_t(n), sh, C.uint64_t(seed))
	if err := errOf(r); err != nil {
		return nil, err
	}
	out := make([]int64, int64(r.d))
	if len(out) == 0 {
		return out, nil
	}
	buf := (*C.int64_t)(C.malloc(C.size_t(len(out)) * 8))
	defer C.free(unsafe.Pointer(buf))
	if err := errOf(C.gd_scatter(buf, C.int64_t(len(out)), c.p, C.int64_t(n), sh, C.uint64_t(seed))); err != nil {
		return nil, err
	}
	copy(out, unsafe.Slice((*int64)(unsafe.Pointer(buf)), len(out)))
	return out, nil
}

// MultiNodeOptimizer makes o a multi-node optimizer (ChainerMN's
// create_multi_node_optimizer): every Update averages the gradients over the
// ranks first. Returns o itself; it keeps a reference to the communicator.
func MultiNodeOptimizer(o *Optimizer, c *Communicator) (*Optimizer, error) {
	r := C.gd_multi_node(o.p, c.p)
	runtime.KeepAlive(c)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return o, nil
}
