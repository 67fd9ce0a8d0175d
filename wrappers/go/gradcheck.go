package chainerc

/*
#include "capi_gen.h"
#include "capi_extra.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// Tolerance of a gradient check.
type Tolerance struct {
	Eps, Atol, Rtol float64
}

// DefaultTolerance is Chainer's (eps 1e-3, atol 1e-5, rtol 1e-4).
var DefaultTolerance = Tolerance{Eps: 1e-3, Atol: 1e-5, Rtol: 1e-4}

func arrayPtrs(as []*Array) []*C.ch_array {
	ps := make([]*C.ch_array, len(as))
	for i, a := range as {
		if a != nil {
			ps[i] = a.p
		}
	}
	return ps
}

func firstArr(ps []*C.ch_array) **C.ch_array {
	if len(ps) == 0 {
		return nil
	}
	return &ps[0]
}

// CheckBackward checks f's backward against numerical gradients (Chainer's
// check_backward). gradOutputs: one per output (nil entries or a nil list:
// ones).
func CheckBackward(f *Function, inputs, gradOutputs []*Array, tol Tolerance) error {
	ins, gos := arrayPtrs(inputs), arrayPtrs(gradOutputs)
	r := C.g_ch_check_backward(f.p, firstArr(ins), C.size_t(len(ins)), firstArr(gos), C.size_t(len(gos)),
		C.double(tol.Eps), C.double(tol.Atol), C.double(tol.Rtol))
	runtime.KeepAlive(f)
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(gradOutputs)
	return errOf(r)
}

// GraphFunc builds outputs from input variables (borrowed during the call).
// Returned variables are handed to the engine.
type GraphFunc func(inputs []*Variable) ([]*Variable, error)

// CheckBackwardGraph is CheckBackward for a graph built by build, with one
// output per entry of gradOutputs (nil entries: ones).
func CheckBackwardGraph(build GraphFunc, inputs, gradOutputs []*Array, tol Tolerance) error {
	h := cgo.NewHandle(build)
	defer h.Delete()
	ins, gos := arrayPtrs(inputs), arrayPtrs(gradOutputs)
	r := C.gch_check_backward_graph(C.uintptr_t(h), firstArr(ins), C.size_t(len(ins)), firstArr(gos), C.size_t(len(gos)),
		C.double(tol.Eps), C.double(tol.Atol), C.double(tol.Rtol))
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(gradOutputs)
	return errOf(r)
}

// CheckDoubleBackward is Chainer's check_double_backward: the first backward
// of build (taken with double backprop) is checked as a function of the inputs
// and the output gradients against numerical gradients, with gradGradInputs
// (nil, or one per input; nil entries mean ones) as the gradients of the input
// gradients. Use float64 inputs.
func CheckDoubleBackward(build GraphFunc, inputs, gradOutputs, gradGradInputs []*Array, tol Tolerance) error {
	h := cgo.NewHandle(build)
	defer h.Delete()
	ins, gos, ggs := arrayPtrs(inputs), arrayPtrs(gradOutputs), arrayPtrs(gradGradInputs)
	r := C.gch_check_double_backward(C.uintptr_t(h), firstArr(ins), C.size_t(len(ins)), firstArr(gos), C.size_t(len(gos)),
		firstArr(ggs), C.size_t(len(ggs)), C.double(tol.Eps), C.double(tol.Atol), C.double(tol.Rtol))
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(gradOutputs)
	runtime.KeepAlive(gradGradInputs)
	return errOf(r)
}

//export chainercGoGraph
func chainercGoGraph(user C.uintptr_t, inputs **C.ch_variable, nIn C.size_t, outputs **C.ch_variable, nOut C.size_t) C.ch_status {
	return guard(func() error {
		build := cgo.Handle(user).Value().(GraphFunc)
		var in []*Variable
		if nIn > 0 {
			for _, p := range unsafe.Slice(inputs, int(nIn)) {
				in = append(in, &Variable{p: p, borrowed: true})
			}
		}
		outs, err := build(in)
		defer func() {
			for _, o := range outs {
				o.Close()
			}
		}()
		if err != nil {
			return err
		}
		if len(outs) != int(nOut) {
			return NewError(ErrCallback, "graph built %d outputs, %d expected", len(outs), int(nOut))
		}
		dst := unsafe.Slice(outputs, int(nOut))
		for i, o := range outs {
			dst[i] = C.ch_variable_retain(o.p)
		}
		return nil
	})
}

// EvalFunc evaluates the function under test on the current contents of the
// inputs given to NumericalGrad; returned arrays are handed to the engine.
type EvalFunc func() ([]*Array, error)

// NumericalGrad computes numerical gradients by central differences.
func NumericalGrad(f EvalFunc, inputs, gradOutputs []*Array, eps float64) ([]*Array, error) {
	h := cgo.NewHandle(f)
	defer h.Delete()
	ins, gos := arrayPtrs(inputs), arrayPtrs(gradOutputs)
	outs := make([]*C.ch_array, len(ins))
	r := C.gch_numerical_grad(firstArr(outs), C.uintptr_t(h), firstArr(ins), C.size_t(len(ins)), firstArr(gos), C.size_t(len(gos)), C.double(eps))
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(gradOutputs)
	if err := errOf(r); err != nil {
		return nil, err
	}
	res := make([]*Array, len(outs))
	for i, p := range outs {
		res[i] = newArray(unsafe.Pointer(p))
	}
	return res, nil
}

//export chainercGoEval
func chainercGoEval(user C.uintptr_t, ctx *C.ch_context) C.ch_status {
	return guard(func() error {
		f := cgo.Handle(user).Value().(EvalFunc)
		outs, err := f()
		defer consume(outs)
		if err != nil {
			return err
		}
		for _, o := range outs {
			if err := errOf(C.g_ch_context_add_output(ctx, o.p)); err != nil {
				return err
			}
		}
		return nil
	})
}
