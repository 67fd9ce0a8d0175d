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
	"runtime/cgo"
	"unsafe"
)

// Function is a function object (a built-in parameterized function such as
// Linear, or a custom function) or a recorded application (a variable's
// creator): one reference to a chainerc function.
type Function struct {
	p *C.ch_function
}

func newFunction(p unsafe.Pointer) *Function {
	f := &Function{p: (*C.ch_function)(p)}
	runtime.SetFinalizer(f, (*Function).Close)
	return f
}

// Close releases the handle (idempotent).
func (f *Function) Close() {
	if f == nil || f.p == nil {
		return
	}
	C.ch_function_release(f.p)
	f.p = nil
	runtime.SetFinalizer(f, nil)
}

// Ptr is the C handle, valid while f is alive.
func (f *Function) Ptr() unsafe.Pointer { return unsafe.Pointer(f.p) }

// Retain returns another owned handle to the same function.
func (f *Function) Retain() *Function {
	p := C.ch_function_retain(f.p)
	runtime.KeepAlive(f)
	return newFunction(unsafe.Pointer(p))
}

func varPtrs(vs []*Variable) []*C.ch_variable {
	ps := make([]*C.ch_variable, len(vs))
	for i, v := range vs {
		ps[i] = v.p
	}
	return ps
}

func firstVar(ps []*C.ch_variable) **C.ch_variable {
	if len(ps) == 0 {
		return nil
	}
	return &ps[0]
}

// Apply applies f to inputs (all volatile or none) and returns every output.
func (f *Function) Apply(inputs ...*Variable) ([]*Variable, error) {
	ins := varPtrs(inputs)
	outs, err := callWithOutputs(func(out **C.ch_variable, room C.size_t, n *C.size_t) C.gres {
		return C.g_ch_function_apply(f.p, firstVar(ins), C.size_t(len(ins)), out, room, n)
	}, func(p *C.ch_variable) { C.ch_variable_release(p) })
	runtime.KeepAlive(f)
	runtime.KeepAlive(inputs)
	if err != nil {
		return nil, err
	}
	res := make([]*Variable, len(outs))
	for i := range res {
		res[i] = newVariable(unsafe.Pointer(outs[i]))
	}
	return res, nil
}

// Forward runs f's forward computation again on plain arrays, recording
// nothing (the seed's `func = y.creator; func.forward((x.data,))`, e.g. inside
// NumericalGrad), and returns every output. The graph f belongs to stays
// usable (see ch_function_forward).
func (f *Function) Forward(inputs ...*Array) ([]*Array, error) {
	ins := arrayPtrs(inputs)
	outs, err := callWithOutputs(func(out **C.ch_array, room C.size_t, n *C.size_t) C.gres {
		return C.g_ch_function_forward(f.p, firstArr(ins), C.size_t(len(ins)), out, room, n)
	}, func(p *C.ch_array) { C.ch_array_release(p) })
	runtime.KeepAlive(f)
	runtime.KeepAlive(inputs)
	if err != nil {
		return nil, err
	}
	res := make([]*Array, len(outs))
	for i := range res {
		res[i] = newArray(unsafe.Pointer(outs[i]))
	}
	return res, nil
}

// callWithOutputs runs a C call that writes up to `room` output handles and
// says in *n how many there are; when there were more than room for, it
// releases what it got and calls again with enough.
func callWithOutputs[P any](call func(out *P, room C.size_t, n *C.size_t) C.gres, release func(P)) ([]P, error) {
	outs := make([]P, 8)
	var n C.size_t
	if err := errOf(call(&outs[0], C.size_t(len(outs)), &n)); err != nil {
		return nil, err
	}
	if int(n) > len(outs) { // more outputs than room: call again with enough
		for _, p := range outs {
			release(p)
		}
		outs = make([]P, int(n))
		if err := errOf(call(&outs[0], C.size_t(len(outs)), &n)); err != nil {
			return nil, err
		}
	}
	return outs[:int(n)], nil
}

// Apply1 applies f and returns its first output.
func (f *Function) Apply1(inputs ...*Variable) (*Variable, error) {
	ins := varPtrs(inputs)
	r := C.gch_apply1(f.p, firstVar(ins), C.size_t(len(ins)))
	runtime.KeepAlive(f)
	runtime.KeepAlive(inputs)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newVariable(r.out), nil
}

// Name is e.g. "MulAdd" or "Exp".
func (f *Function) Name() string {
	s := C.GoString(C.ch_function_name(f.p))
	runtime.KeepAlive(f)
	return s
}

func (f *Function) InputCount() int {
	n := int(C.ch_function_input_count(f.p))
	runtime.KeepAlive(f)
	return n
}

func (f *Function) OutputCount() int {
	n := int(C.ch_function_output_count(f.p))
	runtime.KeepAlive(f)
	return n
}

// Input i of an application (nil once unchained).
func (f *Function) Input(i int) (*Variable, error) {
	r := C.g_ch_function_input(f.p, C.size_t(i))
	runtime.KeepAlive(f)
	if err := errOf(r); err != nil || r.out == nil {
		return nil, err
	}
	return newVariable(r.out), nil
}

// Output i of an application (nil once freed).
func (f *Function) Output(i int) (*Variable, error) {
	r := C.g_ch_function_output(f.p, C.size_t(i))
	runtime.KeepAlive(f)
	if err := errOf(r); err != nil || r.out == nil {
		return nil, err
	}
	return newVariable(r.out), nil
}

// Unchain removes this application from the graph.
func (f *Function) Unchain() error {
	r := C.g_ch_function_unchain(f.p)
	runtime.KeepAlive(f)
	return errOf(r)
}

// AddParameter gives f a parameter and its gradient (shared, not copied).
func (f *Function) AddParameter(name string, param, grad *Array) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	r := C.g_ch_function_add_parameter(f.p, cname, param.p, grad.p)
	runtime.KeepAlive(f)
	runtime.KeepAlive(param)
	runtime.KeepAlive(grad)
	return errOf(r)
}

// Parameter is a parameter of a function (or a function set's, with its path).
type Parameter struct {
	Name        string
	Param, Grad *Array
}

// Close releases the two arrays.
func (p Parameter) Close() {
	p.Param.Close()
	p.Grad.Close()
}

func (f *Function) ParameterCount() int {
	n := int(C.ch_function_parameter_count(f.p))
	runtime.KeepAlive(f)
	return n
}

// Parameter i, its gradient and its name.
func (f *Function) Parameter(i int) (Parameter, error) {
	var p, g *C.ch_array
	var name *C.char
	r := C.g_ch_function_parameter(&p, &g, &name, f.p, C.size_t(i))
	if err := errOf(r); err != nil {
		runtime.KeepAlive(f)
		return Parameter{}, err
	}
	n := C.GoString(name)
	runtime.KeepAlive(f)
	return Parameter{Name: n, Param: newArray(unsafe.Pointer(p)), Grad: newArray(unsafe.Pointer(g))}, nil
}

// Param is the parameter named name.
func (f *Function) Param(name string) (Parameter, error) {
	for i := 0; i < f.ParameterCount(); i++ {
		p, err := f.Parameter(i)
		if err != nil {
			return Parameter{}, err
		}
		if p.Name == name {
			return p, nil
		}
		p.Close()
	}
	return Parameter{}, &Error{Status: ErrInvalidArgument, Message: fmt.Sprintf("function '%s' has no parameter '%s'", f.Name(), name)}
}

// --- custom functions -------------------------------------------------------

// Context is the per-application context of a callback (valid during it).
type Context struct {
	p *C.ch_context
}

// Save keeps a (retained) for backward.
func (c *Context) Save(a *Array) error {
	r := C.g_ch_context_save(c.p, a.p)
	runtime.KeepAlive(a)
	return errOf(r)
}

// NeedsInputGrad is false in backward when input i needs no gradient (its
// variable does not require one), so the callback may skip computing it.
func (c *Context) NeedsInputGrad(i int) bool {
	return C.ch_context_needs_input_grad(c.p, C.size_t(i)) != 0
}

func (c *Context) SavedCount() int { return int(C.ch_context_saved_count(c.p)) }

// Saved is saved array i (an owned handle: Close it).
func (c *Context) Saved(i int) (*Array, error) {
	r := C.g_ch_context_saved(c.p, C.size_t(i))
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// Device is the device the callback runs for: the device of the first input
// (in backward, or output gradient) not on the CPU, else the CPU. In a GPU
// callback it is the thread's current CUDA device and the arrays' data
// pointers are device pointers.
func (c *Context) Device() Device { return deviceOf(C.ch_context_device(c.p)) }

// Stream is the cudaStream_t a GPU callback queues its own device work on
// (the stream chainerc's kernels use; today CUDA's default stream, nil).
func (c *Context) Stream() unsafe.Pointer { return unsafe.Pointer(C.ch_context_stream(c.p)) }

// Function is the function object being applied (an owned handle).
func (c *Context) Function() (*Function, error) {
	r := C.g_ch_context_function(c.p)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newFunction(r.out), nil
}

// FunctionImpl is a differentiable function written in Go. The engine calls
// its methods through C callbacks, on the goroutine that called forward or
// backward. Arrays arrive without copying as borrowed handles (valid during
// the call; Retain one to keep it; never write inputs, outputs or
// grad_outputs). Arrays returned are handed to the engine, which releases
// the returned handles (a returned borrowed handle is simply shared).
// Backward returns one gradient per input at most (nil: no gradient).
// A returned error or a panic fails the API call; its *Error has the
// callback's error (or a *PanicError) as Cause.
type FunctionImpl interface {
	Forward(ctx *Context, inputs []*Array) ([]*Array, error)
	Backward(ctx *Context, inputs, outputs, gradOutputs []*Array) ([]*Array, error)
}

// Optional device-specific methods, used when implemented.
type (
	ForwardCPUer interface {
		ForwardCPU(ctx *Context, inputs []*Array) ([]*Array, error)
	}
	ForwardGPUer interface {
		ForwardGPU(ctx *Context, inputs []*Array) ([]*Array, error)
	}
	BackwardCPUer interface {
		BackwardCPU(ctx *Context, inputs, outputs, gradOutputs []*Array) ([]*Array, error)
	}
	BackwardGPUer interface {
		BackwardGPU(ctx *Context, inputs, outputs, gradOutputs []*Array) ([]*Array, error)
	}
	// BackwardGrapher makes a function twice differentiable: its backward
	// over variables (Chainer 7's FunctionNode.backward), built with chainerc
	// functions, used by double backprop. The variables passed are borrowed
	// for the call; the returned ones (nil for no gradient) are the caller's
	// to give away: the engine takes them (do not Close them).
	BackwardGrapher interface {
		BackwardGraph(inputs, outputs, gradOutputs []*Variable) ([]*Variable, error)
	}
)

// NewFunction makes a function object from a Go implementation. impl stays
// reachable (through a cgo.Handle) until the object and every application of
// it are gone.
func NewFunction(name string, impl FunctionImpl) (*Function, error) {
	flags := C.int(0)
	if _, ok := impl.(ForwardCPUer); ok {
		flags |= C.GCH_HAS_FORWARD_CPU
	}
	if _, ok := impl.(ForwardGPUer); ok {
		flags |= C.GCH_HAS_FORWARD_GPU
	}
	if _, ok := impl.(BackwardCPUer); ok {
		flags |= C.GCH_HAS_BACKWARD_CPU
	}
	if _, ok := impl.(BackwardGPUer); ok {
		flags |= C.GCH_HAS_BACKWARD_GPU
	}
	if _, ok := impl.(BackwardGrapher); ok {
		flags |= C.GCH_HAS_BACKWARD_GRAPH
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h := cgo.NewHandle(impl)
	r := C.gch_function_new(cname, C.uintptr_t(h), flags) // deletes h on failure
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newFunction(r.out), nil
}

func borrowedArrays(p **C.ch_array, n C.size_t) []*Array {
	if n == 0 || p == nil {
		return nil
	}
	ps := unsafe.Slice(p, int(n))
	out := make([]*Array, int(n))
	for i, q := range ps {
		out[i] = borrowedArray(q)
	}
	return out
}

// consume releases handles returned by a callback (not borrowed ones).
func consume(as []*Array) {
	for _, a := range as {
		if a != nil {
			a.Close()
		}
	}
}

//export chainercGoForward
func chainercGoForward(user C.uintptr_t, which C.int, ctx *C.ch_context, inputs **C.ch_array, n C.size_t) C.ch_status {
	return guard(func() error {
		impl := cgo.Handle(user).Value().(FunctionImpl)
		c := &Context{p: ctx}
		in := borrowedArrays(inputs, n)
		var outs []*Array
		var err error
		switch which {
		case 1:
			outs, err = impl.(ForwardCPUer).ForwardCPU(c, in)
		case 2:
			outs, err = impl.(ForwardGPUer).ForwardGPU(c, in)
		default:
			outs, err = impl.Forward(c, in)
		}
		if err != nil {
			consume(outs)
			return err
		}
		for i, o := range outs {
			if o == nil || o.p == nil {
				consume(outs)
				return NewError(ErrCallback, "forward returned a nil or closed output %d", i)
			}
		}
		return report(ctx, outs, false)
	})
}

// report hands a callback's arrays to the engine and releases the owned
// handles, all in one cgo call; the Go handles are then closed.
func report(ctx *C.ch_context, as []*Array, grads bool) error {
	if len(as) == 0 {
		return nil
	}
	ps := make([]*C.ch_array, len(as))
	rel := make([]C.uint8_t, len(as))
	for i, a := range as {
		if a == nil {
			continue
		}
		ps[i] = a.p
		if !a.borrowed && a.p != nil {
			rel[i] = 1
			for j := 0; j < i; j++ { // the same array returned twice is released once
				if as[j] == a {
					rel[i] = 0
				}
			}
		}
	}
	var r C.gres
	if grads {
		r = C.gch_set_grads(ctx, &ps[0], C.size_t(len(ps)), &rel[0])
	} else {
		r = C.gch_add_outputs(ctx, &ps[0], C.size_t(len(ps)), &rel[0])
	}
	for i, a := range as {
		if rel[i] == 1 && a.p != nil {
			a.p = nil // released by the helper
			if a.fin {
				a.fin = false
				runtime.SetFinalizer(a, nil)
			}
		}
	}
	return errOf(r)
}

func borrowedVariables(p **C.ch_variable, n C.size_t) []*Variable {
	var vs []*Variable
	if n > 0 && p != nil {
		for _, q := range unsafe.Slice(p, int(n)) {
			vs = append(vs, &Variable{p: q, borrowed: true})
		}
	}
	return vs
}

//export chainercGoBackwardGraph
func chainercGoBackwardGraph(user C.uintptr_t, inputs **C.ch_variable, nIn C.size_t, outputs **C.ch_variable,
	nOut C.size_t, gouts **C.ch_variable, nGout C.size_t, gradInputs **C.ch_variable) C.ch_status {
	return guard(func() error {
		impl := cgo.Handle(user).Value().(BackwardGrapher)
		grads, err := impl.BackwardGraph(borrowedVariables(inputs, nIn), borrowedVariables(outputs, nOut),
			borrowedVariables(gouts, nGout))
		if err == nil && len(grads) > int(nIn) {
			err = NewError(ErrCallback, "BackwardGraph returned %d gradients for %d inputs", len(grads), int(nIn))
		}
		if err != nil {
			for _, g := range grads {
				if g != nil {
					g.Close()
				}
			}
			return err
		}
		dst := unsafe.Slice(gradInputs, int(nIn))
		for i, g := range grads {
			if g == nil {
				continue
			}
			if g.borrowed {
				dst[i] = C.ch_variable_retain(g.p)
			} else {
				dst[i] = g.p
				g.p = nil
				runtime.SetFinalizer(g, nil)
			}
		}
		return nil
	})
}

//export chainercGoBackward
func chainercGoBackward(user C.uintptr_t, which C.int, ctx *C.ch_context, inputs **C.ch_array, nIn C.size_t,
	outputs **C.ch_array, nOut C.size_t, gouts **C.ch_array, nGout C.size_t) C.ch_status {
	return guard(func() error {
		impl := cgo.Handle(user).Value().(FunctionImpl)
		c := &Context{p: ctx}
		in, out, g := borrowedArrays(inputs, nIn), borrowedArrays(outputs, nOut), borrowedArrays(gouts, nGout)
		var grads []*Array
		var err error
		switch which {
		case 1:
			grads, err = impl.(BackwardCPUer).BackwardCPU(c, in, out, g)
		case 2:
			grads, err = impl.(BackwardGPUer).BackwardGPU(c, in, out, g)
		default:
			grads, err = impl.Backward(c, in, out, g)
		}
		if err != nil {
			consume(grads)
			return err
		}
		if len(grads) > int(nIn) {
			consume(grads)
			return NewError(ErrCallback, "backward returned %d gradients for %d inputs", len(grads), int(nIn))
		}
		return report(ctx, grads, true)
	})
}
