package chainerc

// CUDA devices, device memory, streams and pinned host memory (<ch/cuda.h>,
// the device part of <ch/array.h>). Without a GPU, a driver or the CUDA
// backend, DeviceCount is 0 and every CUDA request is an error with
// ErrDevice, never a silent CPU fallback.

/*
#include <stdlib.h>
#include "capi_gen.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// DeviceCount is the number of usable CUDA devices (0 without a GPU, a driver
// or the backend).
func DeviceCount() int { return int(C.ch_cuda_device_count()) }

// UnavailableReason says why DeviceCount is 0 ("" when devices are there).
func UnavailableReason() string { return C.GoString(C.ch_cuda_unavailable_reason()) }

// CurrentDevice is the calling OS thread's current CUDA device. A goroutine
// may move between OS threads: lock it (runtime.LockOSThread) around a
// PushDevice/PopDevice pair, or pass devices explicitly.
func CurrentDevice() (int32, error) {
	var out C.int32_t
	if err := errOf(C.g_ch_cuda_current_device(&out)); err != nil {
		return 0, err
	}
	return int32(out), nil
}

// PushDevice makes device i current on this OS thread until PopDevice (the
// seed's cuda.using_device).
func PushDevice(i int32) error { return errOf(C.g_ch_cuda_device_push(C.int32_t(i))) }

// PopDevice restores the device current before the matching PushDevice.
func PopDevice() error { return errOf(C.g_ch_cuda_device_pop()) }

// Synchronize waits for all work on CUDA device i.
func Synchronize(i int32) error { return errOf(C.g_ch_cuda_synchronize(C.int32_t(i))) }

// SeedDevice reseeds device i's generator as CH_SEED=seed would (i = -1: every device).
func SeedDevice(i int32, seed uint64) error {
	return errOf(C.g_ch_cuda_seed(C.int32_t(i), C.uint64_t(seed)))
}

// ToDevice copies a to device d (the seed's to_gpu / to_cpu).
func (a *Array) ToDevice(d Device) (*Array, error) {
	r := C.g_ch_array_to_device(a.p, d.c())
	runtime.KeepAlive(a)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// CopyFrom copies src's elements into a (same dtype and size, any devices).
func (a *Array) CopyFrom(src *Array) error {
	r := C.g_ch_array_copy_from(a.p, src.p)
	runtime.KeepAlive(a)
	runtime.KeepAlive(src)
	return errOf(r)
}

// FillUniform fills a float array with samples of U[low, high).
func (a *Array) FillUniform(low, high float64) error {
	r := C.g_ch_array_fill_uniform(a.p, C.double(low), C.double(high))
	runtime.KeepAlive(a)
	return errOf(r)
}

// FillNormal fills a float array with samples of N(mean, stddev^2).
func (a *Array) FillNormal(mean, stddev float64) error {
	r := C.g_ch_array_fill_normal(a.p, C.double(mean), C.double(stddev))
	runtime.KeepAlive(a)
	return errOf(r)
}

// SetMemoryLimit caps the bytes chainerc holds from device d (0: no cap).
func SetMemoryLimit(d Device, bytes uint64) error {
	return errOf(C.g_ch_memory_set_limit(d.c(), C.size_t(bytes)))
}

// MemoryLimit is the cap set by SetMemoryLimit (0: none).
func MemoryLimit(d Device) (uint64, error) {
	var out C.size_t
	if err := errOf(C.g_ch_memory_limit(&out, d.c())); err != nil {
		return 0, err
	}
	return uint64(out), nil
}

// NewPinnedArray makes a CPU array in page-locked memory (for asynchronous
// copies); without CUDA it is an error.
func NewPinnedArray(dtype Dtype, shape ...int64) (*Array, error) {
	r := C.g_ch_array_new_pinned(C.ch_dtype(dtype), shapePtr(shape), C.int32_t(len(shape)))
	runtime.KeepAlive(shape)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// IsPinned reports whether a lives in page-locked host memory.
func (a *Array) IsPinned() bool {
	v := C.ch_array_is_pinned(a.p)
	runtime.KeepAlive(a)
	return v != 0
}

// Stream is a CUDA stream of one device.
type Stream struct{ p *C.ch_stream }

// NewStream makes a stream on CUDA device d. Close it when done.
func NewStream(d Device) (*Stream, error) {
	r := C.g_ch_stream_new(d.c())
	if err := errOf(r); err != nil {
		return nil, err
	}
	s := &Stream{p: (*C.ch_stream)(r.out)}
	runtime.SetFinalizer(s, (*Stream).Close)
	return s, nil
}

// Synchronize waits for the work queued on s.
func (s *Stream) Synchronize() error {
	r := C.g_ch_stream_synchronize(s.p)
	runtime.KeepAlive(s)
	return errOf(r)
}

// Device is the stream's device.
func (s *Stream) Device() Device {
	d := deviceOf(C.ch_stream_device(s.p))
	runtime.KeepAlive(s)
	return d
}

// Native is the cudaStream_t, for the host's own CUDA calls.
func (s *Stream) Native() unsafe.Pointer {
	p := C.ch_stream_native(s.p)
	runtime.KeepAlive(s)
	return p
}

// Retain returns another handle to the same stream.
func (s *Stream) Retain() *Stream {
	t := &Stream{p: C.ch_stream_retain(s.p)}
	runtime.KeepAlive(s)
	runtime.SetFinalizer(t, (*Stream).Close)
	return t
}

// Close waits for the stream and releases this handle (nil-safe, idempotent).
func (s *Stream) Close() error {
	if s == nil || s.p == nil {
		return nil
	}
	err := errOf(C.g_ch_stream_release(s.p))
	s.p = nil
	runtime.SetFinalizer(s, nil)
	return err
}

// ToDeviceAsync queues a copy of a to device d on s and returns at once; the
// result is complete after s.Synchronize.
func (a *Array) ToDeviceAsync(d Device, s *Stream) (*Array, error) {
	r := C.g_ch_array_to_device_async(a.p, d.c(), s.p)
	runtime.KeepAlive(a)
	runtime.KeepAlive(s)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// CopyFromAsync queues a copy of src into a on s.
func (a *Array) CopyFromAsync(src *Array, s *Stream) error {
	r := C.g_ch_array_copy_from_async(a.p, src.p, s.p)
	runtime.KeepAlive(a)
	runtime.KeepAlive(src)
	runtime.KeepAlive(s)
	return errOf(r)
}

// EngineStream is the cudaStream_t that all of chainerc's work on CUDA device
// i is queued on, for the host's own CUDA calls; nil when there is no such
// device.
func EngineStream(i int32) unsafe.Pointer { return C.ch_cuda_engine_stream(C.int32_t(i)) }

// CudaGraph is work captured on one CUDA device (a training step of fixed
// shapes) and replayed as a CUDA graph; the rules are in <ch/cuda.h> and
// docs/gpu.md.
type CudaGraph struct{ p *C.ch_cuda_graph }

// BeginCapture begins capturing device d's work on the calling goroutine's
// thread (call runtime.LockOSThread first: the capture belongs to the thread).
func BeginCapture(d Device) error { return errOf(C.g_ch_cuda_graph_begin_capture(d.c())) }

// EndCapture ends the capture begun on this thread for d and returns the
// graph. Close it when done.
func EndCapture(d Device) (*CudaGraph, error) {
	r := C.g_ch_cuda_graph_end_capture(d.c())
	if err := errOf(r); err != nil {
		return nil, err
	}
	g := &CudaGraph{p: (*C.ch_cuda_graph)(r.out)}
	runtime.SetFinalizer(g, (*CudaGraph).Close)
	return g, nil
}

// Capture captures what body queues on d, on one locked OS thread; the
// capture is ended even when body fails, and body's error wins.
func Capture(d Device, body func() error) (*CudaGraph, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := BeginCapture(d); err != nil {
		return nil, err
	}
	ran := body()
	g, err := EndCapture(d)
	if ran != nil {
		if g != nil {
			g.Close()
		}
		return nil, ran
	}
	return g, err
}

// Replay queues the captured work once more (no host synchronisation).
func (g *CudaGraph) Replay() error {
	err := errOf(C.g_ch_cuda_graph_replay(g.p))
	runtime.KeepAlive(g)
	return err
}

// ReplayWith copies values[i] into targets[i] (same dtype and shape), then
// replays.
func (g *CudaGraph) ReplayWith(targets, values []*Array) error {
	if len(targets) != len(values) {
		return NewError(ErrInvalidArgument, "ReplayWith: %d targets but %d values", len(targets), len(values))
	}
	if len(targets) == 0 {
		return g.Replay()
	}
	t := make([]*C.ch_array, len(targets))
	v := make([]*C.ch_array, len(values))
	for i := range targets {
		t[i], v[i] = targets[i].p, values[i].p
	}
	err := errOf(C.g_ch_cuda_graph_replay_with(g.p, &t[0], &v[0], C.int32_t(len(t))))
	runtime.KeepAlive(g)
	runtime.KeepAlive(targets)
	runtime.KeepAlive(values)
	return err
}

// Device is the graph's device.
func (g *CudaGraph) Device() Device {
	d := deviceOf(C.ch_cuda_graph_device(g.p))
	runtime.KeepAlive(g)
	return d
}

// Size is the number of kernels and cuBLAS calls the graph recorded.
func (g *CudaGraph) Size() int64 {
	n := int64(C.ch_cuda_graph_size(g.p))
	runtime.KeepAlive(g)
	return n
}

// Close releases the graph (nil-safe, idempotent).
func (g *CudaGraph) Close() error {
	if g == nil || g.p == nil {
		return nil
	}
	err := errOf(C.g_ch_cuda_graph_release(g.p))
	g.p = nil
	runtime.SetFinalizer(g, nil)
	return err
}
