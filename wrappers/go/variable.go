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
	"unsafe"
)

// Variable is an array with the history of the computation that produced
// it: one reference to a chainerc variable. The graph behind a variable is
// freed when no variable references it. A graph must not be used from two
// goroutines at once; handles may be closed from any goroutine.
type Variable struct {
	p        *C.ch_variable
	borrowed bool
	fin      bool // a finalizer is set (see SetFinalizers)
}

func newVariable(p unsafe.Pointer) *Variable {
	v := &Variable{p: (*C.ch_variable)(p)}
	if finalizers.Load() {
		v.fin = true
		runtime.SetFinalizer(v, (*Variable).Close)
	}
	return v
}

// NewVariable makes a root variable holding data (shared, not copied).
func NewVariable(data *Array) (*Variable, error) { return newVar(data, false) }

// NewVolatile makes a volatile variable: functions applied to it record no
// history.
func NewVolatile(data *Array) (*Variable, error) { return newVar(data, true) }

func newVar(data *Array, volatile bool) (*Variable, error) {
	vol := C.int32_t(0)
	if volatile {
		vol = 1
	}
	r := C.g_ch_variable_new(data.p, vol)
	runtime.KeepAlive(data)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newVariable(r.out), nil
}

// VariableOf makes a root variable from a copy of values.
func VariableOf[T Elem](values []T, shape ...int64) (*Variable, error) {
	a, err := NewArray(values, shape...)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return NewVariable(a)
}

// Close releases the handle (idempotent).
func (v *Variable) Close() {
	if v == nil || v.p == nil || v.borrowed {
		return
	}
	C.ch_variable_release(v.p)
	v.p = nil
	if v.fin {
		v.fin = false
		runtime.SetFinalizer(v, nil)
	}
}

// Retain returns another owned handle to the same variable.
func (v *Variable) Retain() *Variable {
	p := C.ch_variable_retain(v.p)
	runtime.KeepAlive(v)
	return newVariable(unsafe.Pointer(p))
}

// Ptr is the C handle, valid while v is alive.
func (v *Variable) Ptr() unsafe.Pointer { return unsafe.Pointer(v.p) }

// Data is the data array (shared).
func (v *Variable) Data() (*Array, error) {
	r := C.g_ch_variable_data(v.p)
	runtime.KeepAlive(v)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// SetData replaces the data array (shared, not copied).
func (v *Variable) SetData(a *Array) error {
	r := C.g_ch_variable_set_data(v.p, a.p)
	runtime.KeepAlive(v)
	runtime.KeepAlive(a)
	return errOf(r)
}

// Grad is the gradient, or nil before backward reached it.
func (v *Variable) Grad() (*Array, error) {
	r := C.g_ch_variable_grad(v.p)
	runtime.KeepAlive(v)
	if err := errOf(r); err != nil {
		return nil, err
	}
	if r.out == nil {
		return nil, nil
	}
	return newArray(r.out), nil
}

// SetGrad sets (nil clears) the gradient, e.g. the initial error.
func (v *Variable) SetGrad(g *Array) error {
	var p *C.ch_array
	if g != nil {
		p = g.p
	}
	r := C.g_ch_variable_set_grad(v.p, p)
	runtime.KeepAlive(v)
	runtime.KeepAlive(g)
	return errOf(r)
}

// Creator is the function application that made v (nil for a root).
func (v *Variable) Creator() (*Function, error) {
	r := C.g_ch_variable_creator(v.p)
	runtime.KeepAlive(v)
	if err := errOf(r); err != nil {
		return nil, err
	}
	if r.out == nil {
		return nil, nil
	}
	return newFunction(r.out), nil
}

func (v *Variable) IsVolatile() bool {
	b := C.ch_variable_is_volatile(v.p) != 0
	runtime.KeepAlive(v)
	return b
}

// SetRequiresGrad sets whether backward computes a gradient for v (default
// true; false on inputs such as training data skips their gradients).
func (v *Variable) SetRequiresGrad(requiresGrad bool) error {
	r := C.g_ch_variable_set_requires_grad(v.p, b32(requiresGrad))
	runtime.KeepAlive(v)
	return errOf(r)
}

// RequiresGrad reports the flag.
func (v *Variable) RequiresGrad() bool {
	b := C.ch_variable_requires_grad(v.p) != 0
	runtime.KeepAlive(v)
	return b
}

// Size is the number of elements.
func (v *Variable) Size() int {
	n := int(C.ch_variable_size(v.p))
	runtime.KeepAlive(v)
	return n
}

// Backward backpropagates from v (its grad, or ones for one element, is the
// initial error); intermediate grads are freed as they are used.
func (v *Variable) Backward() error { return v.backward(0) }

// BackwardRetainGrad keeps the grads of intermediate variables.
func (v *Variable) BackwardRetainGrad() error { return v.backward(1) }

func (v *Variable) backward(retain C.int32_t) error {
	r := C.g_ch_variable_backward(v.p, retain)
	runtime.KeepAlive(v)
	return errOf(r)
}

// UnchainBackward cuts the graph behind v (truncated BPTT).
func (v *Variable) UnchainBackward() error {
	r := C.g_ch_variable_unchain_backward(v.p)
	runtime.KeepAlive(v)
	return errOf(r)
}

// Float32s, Float64s copy the data; GradFloat32s, GradFloat64s the gradient
// (nil when there is none).
func (v *Variable) Float32s() ([]float32, error)     { return varValues[float32](v) }
func (v *Variable) Float64s() ([]float64, error)     { return varValues[float64](v) }
func (v *Variable) GradFloat32s() ([]float32, error) { return gradValues[float32](v) }
func (v *Variable) GradFloat64s() ([]float64, error) { return gradValues[float64](v) }

func varValues[T Elem](v *Variable) ([]T, error) {
	d, err := v.Data()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return Values[T](d)
}

func gradValues[T Elem](v *Variable) ([]T, error) {
	g, err := v.Grad()
	if err != nil || g == nil {
		return nil, err
	}
	defer g.Close()
	return Values[T](g)
}

// Shape of the data.
func (v *Variable) Shape() ([]int64, error) {
	d, err := v.Data()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Shape(), nil
}

func (v *Variable) String() string {
	if v == nil || v.p == nil {
		return "Variable(<closed>)"
	}
	d, err := v.Data()
	if err != nil {
		return "Variable(<" + err.Error() + ">)"
	}
	defer d.Close()
	return fmt.Sprintf("Variable(%v, volatile %v)", d, v.IsVolatile())
}

// GraphDotOptions are the options of GraphDot.
type GraphDotOptions struct {
	OutputNames    []string // labels of the outputs, in order (may be shorter)
	HideParameters bool     // no nodes for function parameters (W, b)
	Rankdir        string   // Graphviz rankdir: "TB" (""), "BT", "LR" or "RL"
}

// GraphDot returns the computational graph behind outputs as Graphviz DOT
// text (Chainer's build_computational_graph): variables as ovals
// "(shape), dtype", functions as boxes, edges input -> function -> output.
func GraphDot(outputs []*Variable, o GraphDotOptions) (string, error) {
	vs := varPtrs(outputs)
	// C memory for the strings and the name list (cgo: no Go pointers in C-held memory).
	var opts *C.ch_graph_dot_options = (*C.ch_graph_dot_options)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ch_graph_dot_options{}))))
	defer C.free(unsafe.Pointer(opts))
	opts.version = C.CH_GRAPH_DOT_OPTIONS_VERSION
	if o.HideParameters {
		opts.hide_parameters = 1
	}
	if o.Rankdir != "" {
		opts.rankdir = C.CString(o.Rankdir)
		defer C.free(unsafe.Pointer(opts.rankdir))
	}
	if len(o.OutputNames) > 0 && len(vs) > 0 {
		n := len(vs)
		names := unsafe.Slice((**C.char)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.char)(nil))))), n)
		defer C.free(unsafe.Pointer(&names[0]))
		for i := 0; i < n && i < len(o.OutputNames); i++ {
			names[i] = C.CString(o.OutputNames[i])
			defer C.free(unsafe.Pointer(names[i]))
		}
		opts.output_names = &names[0]
	}
	out := (**C.char)(C.calloc(1, C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(out))
	r := C.g_ch_variable_graph_dot(out, firstVar(vs), C.size_t(len(vs)), opts)
	runtime.KeepAlive(outputs)
	if err := errOf(r); err != nil {
		return "", err
	}
	text := C.GoString(*out)
	C.ch_string_free(*out)
	return text, nil
}

// GraphDot returns the graph behind v as Graphviz DOT text (see GraphDot).
func (v *Variable) GraphDot() (string, error) {
	return GraphDot([]*Variable{v}, GraphDotOptions{})
}

func backwardOptions(retainGrad, doubleBackprop bool) C.ch_backward_options {
	var o C.ch_backward_options
	o.version = C.CH_BACKWARD_OPTIONS_VERSION
	if retainGrad {
		o.retain_grad = 1
	}
	if doubleBackprop {
		o.enable_double_backprop = 1
	}
	return o
}

// BackwardDouble back-propagates with the gradients built as graphs
// (Chainer's backward(enable_double_backprop=True)): read them with GradVar
// and differentiate them again. Clear a root's grad (SetGrad(nil)) when done:
// its GradVar may reference it.
func (v *Variable) BackwardDouble(retainGrad bool) error {
	o := backwardOptions(retainGrad, true)
	r := C.g_ch_variable_backward_ex(v.p, &o)
	runtime.KeepAlive(v)
	return errOf(r)
}

// GradVar is the gradient as a variable (Chainer's grad_var), nil when there is none.
func (v *Variable) GradVar() (*Variable, error) {
	r := C.g_ch_variable_grad_var(v.p)
	runtime.KeepAlive(v)
	if err := errOf(r); err != nil {
		return nil, err
	}
	if r.out == nil {
		return nil, nil
	}
	return newVariable(r.out), nil
}

// Grad is Chainer's chainer.grad: the gradients of outputs with respect to
// inputs as new variables (nil where none reaches an input); no grad field
// changes. With doubleBackprop they can be differentiated again.
func Grad(outputs, inputs []*Variable, doubleBackprop bool) ([]*Variable, error) {
	ys, xs := varPtrs(outputs), varPtrs(inputs)
	out := make([]*C.ch_variable, len(inputs))
	o := backwardOptions(false, doubleBackprop)
	r := C.g_ch_grad(firstVar(out), firstVar(ys), C.size_t(len(ys)), firstVar(xs), C.size_t(len(xs)), nil, &o)
	runtime.KeepAlive(outputs)
	runtime.KeepAlive(inputs)
	if err := errOf(r); err != nil {
		return nil, err
	}
	res := make([]*Variable, len(out))
	for i, p := range out {
		if p != nil {
			res[i] = newVariable(unsafe.Pointer(p))
		}
	}
	return res, nil
}

// NoBackpropMode runs f with graph recording off (Chainer's no_backprop_mode).
// The scope belongs to an OS thread, so f runs with the goroutine locked to it.
func NoBackpropMode(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := errOf(C.g_ch_backprop_mode_push(0)); err != nil {
		return err
	}
	defer C.g_ch_backprop_mode_pop()
	return f()
}

// SetEnableBackprop switches graph recording process-wide (Chainer's
// config.enable_backprop); NoBackpropMode scopes take precedence on their thread.
func SetEnableBackprop(enable bool) {
	var e C.int32_t
	if enable {
		e = 1
	}
	C.ch_config_set_enable_backprop(e)
}

// EnableBackprop is the process-wide switch.
func EnableBackprop() bool { return C.ch_config_enable_backprop() != 0 }

// BackpropModeEnabled says whether recording is on for the calling OS thread now.
func BackpropModeEnabled() bool { return C.ch_backprop_mode_enabled() != 0 }
