package chainerc

// User kernels from source strings (<ch/kernel.h>): the seed's
// cuda.elementwise and cuda.reduce. The same kernel runs on the CPU (compiled
// in memory by libtcc) and on CUDA devices (NVRTC).

/*
#include <stdlib.h>
#include "capi_gen.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// KernelCPUSupported reports whether user kernels run on the CPU in this build.
func KernelCPUSupported() bool { return C.ch_kernel_cpu_supported() != 0 }

// KernelCUDASupported reports whether user kernels can be compiled for CUDA.
func KernelCUDASupported() bool { return C.ch_kernel_cuda_supported() != 0 }

// ElementwiseKernel is a compiled-on-demand elementwise kernel.
type ElementwiseKernel struct{ p *C.ch_elementwise_kernel }

// NewElementwiseKernel parses a kernel such as ("T x, T y, T z", "T w",
// "w = x * y + z", "muladd"). Close it when done.
func NewElementwiseKernel(inParams, outParams, operation, name string) (*ElementwiseKernel, error) {
	cin, cout, cop, cname := C.CString(inParams), C.CString(outParams), C.CString(operation), C.CString(name)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	defer C.free(unsafe.Pointer(cop))
	defer C.free(unsafe.Pointer(cname))
	r := C.g_ch_elementwise_kernel_new(cin, cout, cop, cname)
	if err := errOf(r); err != nil {
		return nil, err
	}
	k := &ElementwiseKernel{p: (*C.ch_elementwise_kernel)(r.out)}
	runtime.SetFinalizer(k, (*ElementwiseKernel).Close)
	return k, nil
}

// Inputs and Outputs are the numbers of parameters.
func (k *ElementwiseKernel) Inputs() int {
	n := int(C.ch_elementwise_kernel_input_count(k.p))
	runtime.KeepAlive(k)
	return n
}
func (k *ElementwiseKernel) Outputs() int {
	n := int(C.ch_elementwise_kernel_output_count(k.p))
	runtime.KeepAlive(k)
	return n
}

// Call runs the kernel. outputs may be nil (all allocated) or hold one entry
// per output: a nil entry is allocated, a given array is written in place.
// The result has every output; allocated ones are new arrays to Close.
func (k *ElementwiseKernel) Call(inputs []*Array, outputs []*Array) ([]*Array, error) {
	ins, outs, err := kernelArgs(inputs, outputs, k.Outputs())
	if err != nil {
		return nil, err
	}
	r := C.g_ch_elementwise_kernel_call(k.p, firstArray(ins), C.size_t(len(ins)), firstArray(outs), C.size_t(len(outs)))
	runtime.KeepAlive(k)
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(outputs)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return kernelResults(outs, outputs), nil
}

// Retain returns another handle to the same kernel.
func (k *ElementwiseKernel) Retain() *ElementwiseKernel {
	t := &ElementwiseKernel{p: C.ch_elementwise_kernel_retain(k.p)}
	runtime.KeepAlive(k)
	runtime.SetFinalizer(t, (*ElementwiseKernel).Close)
	return t
}

// Close releases this handle (nil-safe, idempotent).
func (k *ElementwiseKernel) Close() {
	if k == nil || k.p == nil {
		return
	}
	C.g_ch_elementwise_kernel_release(k.p)
	k.p = nil
	runtime.SetFinalizer(k, nil)
}

// ReductionKernel is CuPy's ReductionKernel (map, reduce, post-map, identity).
type ReductionKernel struct{ p *C.ch_reduction_kernel }

// NewReductionKernel parses a reduction such as ("T x", "T y", "x * x",
// "a + b", "y = a", "0", "sum_sq", ""). identity "" means none; reduceType ""
// means the first output's type.
func NewReductionKernel(inParams, outParams, mapExpr, reduceExpr, postMapExpr, identity, name, reduceType string) (*ReductionKernel, error) {
	strs := []string{inParams, outParams, mapExpr, reduceExpr, postMapExpr, identity, name, reduceType}
	cs := make([]*C.char, len(strs))
	for i, s := range strs {
		if (i == 5 || i == 7) && s == "" {
			continue // NULL: no identity / default reduce type
		}
		cs[i] = C.CString(s)
		defer C.free(unsafe.Pointer(cs[i]))
	}
	r := C.g_ch_reduction_kernel_new(cs[0], cs[1], cs[2], cs[3], cs[4], cs[5], cs[6], cs[7])
	if err := errOf(r); err != nil {
		return nil, err
	}
	k := &ReductionKernel{p: (*C.ch_reduction_kernel)(r.out)}
	runtime.SetFinalizer(k, (*ReductionKernel).Close)
	return k, nil
}

// Inputs and Outputs are the numbers of parameters.
func (k *ReductionKernel) Inputs() int {
	n := int(C.ch_reduction_kernel_input_count(k.p))
	runtime.KeepAlive(k)
	return n
}
func (k *ReductionKernel) Outputs() int {
	n := int(C.ch_reduction_kernel_output_count(k.p))
	runtime.KeepAlive(k)
	return n
}

// Call reduces over axes (nil: every axis), keeping them as extent 1 when
// keepdims. outputs as in ElementwiseKernel.Call.
func (k *ReductionKernel) Call(inputs []*Array, outputs []*Array, axes []int32, keepdims bool) ([]*Array, error) {
	ins, outs, err := kernelArgs(inputs, outputs, k.Outputs())
	if err != nil {
		return nil, err
	}
	nAxes := C.int32_t(C.CH_REDUCE_ALL_AXES)
	var axesPtr *C.int32_t
	if axes != nil {
		nAxes = C.int32_t(len(axes))
		if len(axes) > 0 {
			axesPtr = (*C.int32_t)(unsafe.Pointer(&axes[0]))
		}
	}
	keep := C.int32_t(0)
	if keepdims {
		keep = 1
	}
	r := C.g_ch_reduction_kernel_call(k.p, firstArray(ins), C.size_t(len(ins)), firstArray(outs), C.size_t(len(outs)), axesPtr, nAxes, keep)
	runtime.KeepAlive(k)
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(outputs)
	runtime.KeepAlive(axes)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return kernelResults(outs, outputs), nil
}

// Retain returns another handle to the same kernel.
func (k *ReductionKernel) Retain() *ReductionKernel {
	t := &ReductionKernel{p: C.ch_reduction_kernel_retain(k.p)}
	runtime.KeepAlive(k)
	runtime.SetFinalizer(t, (*ReductionKernel).Close)
	return t
}

// Close releases this handle (nil-safe, idempotent).
func (k *ReductionKernel) Close() {
	if k == nil || k.p == nil {
		return
	}
	C.g_ch_reduction_kernel_release(k.p)
	k.p = nil
	runtime.SetFinalizer(k, nil)
}

// kernelArgs turns Go arrays into C handle slices; outputs nil means all
// allocated, else it must have one entry per output.
func kernelArgs(inputs, outputs []*Array, nOut int) ([]*C.ch_array, []*C.ch_array, error) {
	ins := make([]*C.ch_array, len(inputs))
	for i, a := range inputs {
		if a == nil || a.p == nil {
			return nil, nil, &Error{Status: ErrInvalidArgument, Message: "kernel input is nil or closed"}
		}
		ins[i] = a.p
	}
	if outputs == nil {
		outputs = make([]*Array, nOut)
	}
	outs := make([]*C.ch_array, len(outputs))
	for i, a := range outputs {
		if a != nil {
			outs[i] = a.p
		}
	}
	return ins, outs, nil
}

// kernelResults wraps the output slots: given arrays are returned as they
// are, allocated ones as new arrays.
func kernelResults(outs []*C.ch_array, given []*Array) []*Array {
	res := make([]*Array, len(outs))
	for i, p := range outs {
		if i < len(given) && given[i] != nil {
			res[i] = given[i]
		} else {
			res[i] = newArray(unsafe.Pointer(p))
		}
	}
	return res
}

func firstArray(ps []*C.ch_array) **C.ch_array {
	if len(ps) == 0 {
		return nil
	}
	return &ps[0]
}
