package chainerc

/*
#include <stdlib.h>
#include "capi_gen.h"
#include "capi_extra.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Dtype is an element type.
type Dtype int32

const (
	Float32 Dtype = C.CH_FLOAT32
	Float64 Dtype = C.CH_FLOAT64
	Int32   Dtype = C.CH_INT32
)

func (d Dtype) String() string { return C.GoString(C.ch_dtype_name(C.ch_dtype(d))) }

// Size is the size of one element in bytes.
func (d Dtype) Size() int { return int(C.ch_dtype_size(C.ch_dtype(d))) }

// Elem is a Go element type of arrays.
type Elem interface{ float32 | float64 | int32 }

func dtypeOf[T Elem]() Dtype {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	default:
		return Int32
	}
}

// DeviceType is CPU or CUDA (DLPack's numbering).
type DeviceType int32

const (
	DeviceCPU  DeviceType = C.CH_DEVICE_CPU
	DeviceCUDA DeviceType = C.CH_DEVICE_CUDA
)

// Device is a value: a type and an index.
type Device struct {
	Type  DeviceType
	Index int32
}

// CPU is the CPU device.
var CPU = Device{Type: DeviceCPU}

// CUDA returns CUDA device i.
func CUDA(i int32) Device { return deviceOf(C.ch_device_cuda(C.int32_t(i))) }

func (d Device) c() C.ch_device {
	return C.ch_device{_type: C.int32_t(d.Type), index: C.int32_t(d.Index)}
}
func deviceOf(d C.ch_device) Device {
	return Device{Type: DeviceType(d._type), Index: int32(d.index)}
}

func (d Device) String() string {
	if d.Type == DeviceCUDA {
		return fmt.Sprintf("cuda:%d", d.Index)
	}
	return "cpu"
}

// Array is an n-dimensional C-contiguous array: one reference to a chainerc
// array. Several handles and variables may share its memory.
type Array struct {
	p        *C.ch_array
	borrowed bool // handed to a callback: not ours to release
	fin      bool // a finalizer is set
}

func newArray(p unsafe.Pointer) *Array {
	a := &Array{p: (*C.ch_array)(p)}
	if finalizers.Load() {
		a.fin = true
		runtime.SetFinalizer(a, (*Array).Close)
	}
	return a
}

// finalizers: whether new arrays and variables get a finalizer.
var finalizers atomic.Bool

func init() { finalizers.Store(true) }

// SetFinalizers chooses whether arrays and variables made from now on get a
// finalizer that releases them if Close is never called (the default: on).
// A finalizer costs two runtime.SetFinalizer calls per handle (set, then
// cleared by Close); code that closes every handle itself (hot loops, the
// overhead benchmark) can turn them off. Handles without a finalizer that
// are never closed leak (LiveHandles shows them).
func SetFinalizers(on bool) { finalizers.Store(on) }

// borrowedArray wraps a handle valid during a callback (no reference taken).
func borrowedArray(p *C.ch_array) *Array { return &Array{p: p, borrowed: true} }

func shapePtr(shape []int64) *C.int64_t {
	if len(shape) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&shape[0]))
}

// axesPtr: the C view of an axes slice (nil when empty: every axis).
func axesPtr(axes []int32) *C.int32_t {
	if len(axes) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&axes[0]))
}

func prod(shape []int64) int64 {
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	return n
}

// NewArray makes a CPU array holding a copy of data with the given shape (no
// shape: a 1-d array of len(data); use NewScalar for 0-d).
func NewArray[T Elem](data []T, shape ...int64) (*Array, error) {
	if shape == nil {
		shape = []int64{int64(len(data))}
	}
	if prod(shape) != int64(len(data)) {
		return nil, &Error{Status: ErrShape, Message: fmt.Sprintf("%d elements given for shape %v", len(data), shape)}
	}
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	r := C.g_ch_array_new(C.ch_dtype(dtypeOf[T]()), shapePtr(shape), C.int32_t(len(shape)), p, CPU.c())
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// NewScalar makes a 0-d array.
func NewScalar[T Elem](v T) (*Array, error) {
	data := []T{v}
	r := C.g_ch_array_new(C.ch_dtype(dtypeOf[T]()), nil, 0, unsafe.Pointer(&data[0]), CPU.c())
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// Full makes an array with every element equal to value (on the CPU).
func Full(dtype Dtype, value float64, shape ...int64) (*Array, error) {
	return FullOn(CPU, dtype, value, shape...)
}

// FullOn is Full on a device.
func FullOn(dev Device, dtype Dtype, value float64, shape ...int64) (*Array, error) {
	r := C.g_ch_array_new_full(C.ch_dtype(dtype), shapePtr(shape), C.int32_t(len(shape)), C.double(value), dev.c())
	runtime.KeepAlive(shape)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// Zeros and Ones are Full with 0 and 1.
func Zeros(dtype Dtype, shape ...int64) (*Array, error) { return Full(dtype, 0, shape...) }
func Ones(dtype Dtype, shape ...int64) (*Array, error)  { return Full(dtype, 1, shape...) }

// Empty makes an array whose elements are not initialized.
func Empty(dtype Dtype, shape ...int64) (*Array, error) {
	r := C.g_ch_array_new_empty(C.ch_dtype(dtype), shapePtr(shape), C.int32_t(len(shape)), CPU.c())
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// EmptyLike makes an array of a's dtype, shape and device whose elements are
// not initialized (one cgo call; for callbacks making outputs and gradients).
func EmptyLike(a *Array) (*Array, error) { return newLike(a, true, 0) }

// FullLike makes an array of a's dtype, shape and device filled with value.
func FullLike(a *Array, value float64) (*Array, error) { return newLike(a, false, value) }

func newLike(a *Array, empty bool, value float64) (*Array, error) {
	e := C.int(0)
	if empty {
		e = 1
	}
	r := C.gch_array_new_like(a.p, e, C.double(value))
	runtime.KeepAlive(a)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// Close releases the handle (idempotent; arrays passed to callbacks are
// borrowed and Close does nothing for them).
func (a *Array) Close() {
	if a == nil || a.p == nil || a.borrowed {
		return
	}
	C.ch_array_release(a.p)
	a.p = nil
	if a.fin {
		a.fin = false
		runtime.SetFinalizer(a, nil)
	}
}

// Ptr is the C handle, valid while a is alive (use runtime.KeepAlive).
func (a *Array) Ptr() unsafe.Pointer { return unsafe.Pointer(a.p) }

// Retain returns another owned handle to the same array (e.g. to keep a
// borrowed callback input).
func (a *Array) Retain() *Array {
	p := C.ch_array_retain(a.p)
	runtime.KeepAlive(a)
	return newArray(unsafe.Pointer(p))
}

// Copy is a deep copy.
func (a *Array) Copy() (*Array, error) {
	r := C.g_ch_array_copy(a.p)
	runtime.KeepAlive(a)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// Reshape shares memory with another shape of the same size.
func (a *Array) Reshape(shape ...int64) (*Array, error) {
	r := C.g_ch_array_reshape(a.p, shapePtr(shape), C.int32_t(len(shape)))
	runtime.KeepAlive(a)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

func (a *Array) Dtype() Dtype {
	d := Dtype(C.ch_array_dtype(a.p))
	runtime.KeepAlive(a)
	return d
}

func (a *Array) Ndim() int {
	n := int(C.ch_array_ndim(a.p))
	runtime.KeepAlive(a)
	return n
}

// Shape returns a copy of the extents.
func (a *Array) Shape() []int64 {
	info := C.gch_array_info(a.p)
	n := int(info.ndim)
	out := make([]int64, n)
	if n > 0 {
		copy(out, unsafe.Slice((*int64)(unsafe.Pointer(info.shape)), n))
	}
	runtime.KeepAlive(a)
	return out
}

func (a *Array) Size() int {
	n := int(C.ch_array_size(a.p))
	runtime.KeepAlive(a)
	return n
}

func (a *Array) Nbytes() int {
	n := int(C.ch_array_nbytes(a.p))
	runtime.KeepAlive(a)
	return n
}

func (a *Array) Device() Device {
	d := deviceOf(C.ch_array_device(a.p))
	runtime.KeepAlive(a)
	return d
}

// DataPointer is the address of the first element on the array's device: a
// DEVICE pointer for an array on a CUDA device (for the host's own kernels
// in a GPU callback, see Context.Device and Context.Stream); nil for an
// empty array. Valid while the array is alive (keep it with
// runtime.KeepAlive); never dereference a device pointer on the host.
func (a *Array) DataPointer() unsafe.Pointer {
	p := C.ch_array_data(a.p)
	runtime.KeepAlive(a)
	return p
}

// Fill sets every element to value.
func (a *Array) Fill(value float64) error {
	r := C.g_ch_array_fill(a.p, C.double(value))
	runtime.KeepAlive(a)
	return errOf(r)
}

// At is the element at flat index i as float64.
func (a *Array) At(i int64) (float64, error) {
	r := C.g_ch_array_get(a.p, C.int64_t(i))
	runtime.KeepAlive(a)
	if err := errOf(r); err != nil {
		return 0, err
	}
	return float64(r.d), nil
}

// Values copies the elements out (T must be the dtype).
func Values[T Elem](a *Array) ([]T, error) {
	if d := a.Dtype(); d != dtypeOf[T]() {
		return nil, &Error{Status: ErrDtype, Message: fmt.Sprintf("array of %v read as %v", d, dtypeOf[T]())}
	}
	out := make([]T, a.Size())
	var p unsafe.Pointer
	if len(out) > 0 {
		p = unsafe.Pointer(&out[0])
	}
	r := C.g_ch_array_read(a.p, p, C.size_t(uintptr(len(out))*unsafe.Sizeof(out[0])))
	runtime.KeepAlive(a)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return out, nil
}

// Write overwrites the elements from src (same count and dtype).
func Write[T Elem](a *Array, src []T) error {
	if d := a.Dtype(); d != dtypeOf[T]() {
		return &Error{Status: ErrDtype, Message: fmt.Sprintf("%v elements written to an array of %v", dtypeOf[T](), d)}
	}
	var p unsafe.Pointer
	if len(src) > 0 {
		p = unsafe.Pointer(&src[0])
	}
	var z T
	r := C.g_ch_array_write(a.p, p, C.size_t(uintptr(len(src))*unsafe.Sizeof(z)))
	runtime.KeepAlive(a)
	return errOf(r)
}

// View returns the elements without copying (CPU arrays; T must be the
// dtype). The slice aliases chainerc memory: it is valid only while a is
// alive (keep a reachable, e.g. with runtime.KeepAlive(a), until the last
// use), and inputs and gradients passed to callbacks must not be written.
func View[T Elem](a *Array) ([]T, error) {
	info := C.gch_array_info(a.p) // one cgo call for dtype, device, size and data
	runtime.KeepAlive(a)
	if d := Dtype(info.dtype); d != dtypeOf[T]() {
		return nil, &Error{Status: ErrDtype, Message: fmt.Sprintf("array of %v viewed as %v", d, dtypeOf[T]())}
	}
	if DeviceType(info.device_type) != DeviceCPU {
		return nil, &Error{Status: ErrDevice, Message: fmt.Sprintf("array on %v viewed from the host", a.Device())}
	}
	n := int(info.size)
	p := info.data
	if n == 0 || p == nil {
		return []T{}, nil
	}
	return unsafe.Slice((*T)(p), n), nil
}

// AllClose is numpy.allclose: nil if |a - expected| <= atol + rtol|expected|
// everywhere, else an ErrNotClose error naming the worst element.
func (a *Array) AllClose(expected *Array, atol, rtol float64) error {
	r := C.g_ch_allclose(a.p, expected.p, C.double(atol), C.double(rtol), nil)
	runtime.KeepAlive(a)
	runtime.KeepAlive(expected)
	return errOf(r)
}

func (a *Array) String() string {
	if a == nil || a.p == nil {
		return "Array(<closed>)"
	}
	return fmt.Sprintf("Array(%v, shape %v, %v)", a.Dtype(), a.Shape(), a.Device())
}

// MemoryStats are a device's caching-allocator statistics.
type MemoryStats struct {
	BytesInUse, BytesCached, PeakBytesInUse, Allocations, CacheMisses int64
}

// GetMemoryStats reads the statistics of dev.
func GetMemoryStats(dev Device) (MemoryStats, error) {
	var s C.ch_memory_stats
	r := C.g_ch_memory_stats_get(&s, dev.c())
	if err := errOf(r); err != nil {
		return MemoryStats{}, err
	}
	return MemoryStats{int64(s.bytes_in_use), int64(s.bytes_cached), int64(s.peak_bytes_in_use), int64(s.allocations), int64(s.cache_misses)}, nil
}

// EmptyCache returns dev's cached blocks to the system.
func EmptyCache(dev Device) error { return errOf(C.g_ch_memory_empty_cache(dev.c())) }

// LiveHandles is the number of live chainerc handles (leak checks).
func LiveHandles() int64 { return int64(C.ch_debug_live_handles()) }

// LiveArrays, LiveVariables and LiveFunctions count handles by kind.
func LiveArrays() int64    { return int64(C.ch_debug_live_arrays()) }
func LiveVariables() int64 { return int64(C.ch_debug_live_variables()) }
func LiveFunctions() int64 { return int64(C.ch_debug_live_functions()) }

// ReportLiveHandles prints every live handle to stderr.
func ReportLiveHandles() { C.ch_debug_report_live_handles() }

// Version is the run-time version (major*10000 + minor*100 + patch).
func Version() int { return int(C.ch_version()) }

// VersionString is e.g. "0.1.0".
func VersionString() string { return C.GoString(C.ch_version_string()) }
