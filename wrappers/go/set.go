package chainerc

/*
#include <stdlib.h>
#include "capi_gen.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// FunctionSet is a named, nested collection of parameterized functions (the
// seed's FunctionSet); it keeps its members alive.
type FunctionSet struct {
	p *C.ch_function_set
}

func newSet(p unsafe.Pointer) *FunctionSet {
	s := &FunctionSet{p: (*C.ch_function_set)(p)}
	runtime.SetFinalizer(s, (*FunctionSet).Close)
	return s
}

// NewFunctionSet makes an empty set.
func NewFunctionSet() (*FunctionSet, error) {
	r := C.g_ch_function_set_new()
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newSet(r.out), nil
}

// Close releases the handle (idempotent).
func (s *FunctionSet) Close() {
	if s == nil || s.p == nil {
		return
	}
	C.ch_function_set_release(s.p)
	s.p = nil
	runtime.SetFinalizer(s, nil)
}

func withCString(s string, f func(*C.char) C.gres) error {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return errOf(f(cs))
}

// Add adds or replaces the member name (a function object).
func (s *FunctionSet) Add(name string, f *Function) error {
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(f)
	return withCString(name, func(n *C.char) C.gres { return C.g_ch_function_set_add_function(s.p, n, f.p) })
}

// AddSet adds or replaces the member name (a nested set).
func (s *FunctionSet) AddSet(name string, m *FunctionSet) error {
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(m)
	return withCString(name, func(n *C.char) C.gres { return C.g_ch_function_set_add_set(s.p, n, m.p) })
}

// Remove removes the member name.
func (s *FunctionSet) Remove(name string) error {
	defer runtime.KeepAlive(s)
	return withCString(name, func(n *C.char) C.gres { return C.g_ch_function_set_remove(s.p, n) })
}

// MemberNames in sorted order.
func (s *FunctionSet) MemberNames() ([]string, error) {
	defer runtime.KeepAlive(s)
	n := int(C.ch_function_set_member_count(s.p))
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		var name *C.char
		if err := errOf(C.g_ch_function_set_member_name(&name, s.p, C.size_t(i))); err != nil {
			return nil, err
		}
		out = append(out, C.GoString(name))
	}
	return out, nil
}

// Get returns the member function name (an owned handle).
func (s *FunctionSet) Get(name string) (*Function, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	r := C.g_ch_function_set_get_function(s.p, cs)
	runtime.KeepAlive(s)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newFunction(r.out), nil
}

// GetSet returns the nested set name (an owned handle).
func (s *FunctionSet) GetSet(name string) (*FunctionSet, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	r := C.g_ch_function_set_get_set(s.p, cs)
	runtime.KeepAlive(s)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newSet(r.out), nil
}

// ParameterCount counts the parameters of every member, nested ones included.
func (s *FunctionSet) ParameterCount() int {
	n := int(C.ch_function_set_parameter_count(s.p))
	runtime.KeepAlive(s)
	return n
}

// Parameters lists the parameters in Chainer's order with their paths
// ("l1/W"); Close each (or let finalizers do it).
func (s *FunctionSet) Parameters() ([]Parameter, error) {
	defer runtime.KeepAlive(s)
	n := s.ParameterCount()
	out := make([]Parameter, 0, n)
	for i := 0; i < n; i++ {
		var p, g *C.ch_array
		var path *C.char
		if err := errOf(C.g_ch_function_set_parameter(&p, &g, &path, s.p, C.size_t(i))); err != nil {
			for _, q := range out {
				q.Close()
			}
			return nil, err
		}
		out = append(out, Parameter{Name: C.GoString(path), Param: newArray(unsafe.Pointer(p)), Grad: newArray(unsafe.Pointer(g))})
	}
	return out, nil
}

// CollectParameters is the seed's collect_parameters(): params and grads.
func (s *FunctionSet) CollectParameters() (params, grads []*Array, err error) {
	defer runtime.KeepAlive(s)
	var n C.size_t
	if err := errOf(C.g_ch_function_set_collect_parameters(nil, nil, 0, &n, s.p)); err != nil {
		return nil, nil, err
	}
	if n == 0 {
		return nil, nil, nil
	}
	ps := make([]*C.ch_array, int(n))
	gs := make([]*C.ch_array, int(n))
	var m C.size_t
	if err := errOf(C.g_ch_function_set_collect_parameters(&ps[0], &gs[0], n, &m, s.p)); err != nil {
		return nil, nil, err
	}
	for i := 0; i < int(n); i++ {
		params = append(params, newArray(unsafe.Pointer(ps[i])))
		grads = append(grads, newArray(unsafe.Pointer(gs[i])))
	}
	return params, grads, nil
}

// CopyParametersFrom copies parameter values from a set of the same structure.
func (s *FunctionSet) CopyParametersFrom(src *FunctionSet) error {
	r := C.g_ch_function_set_copy_parameters_from(s.p, src.p)
	runtime.KeepAlive(s)
	runtime.KeepAlive(src)
	return errOf(r)
}

// CopyParametersFromArrays copies parameter values from arrays in order.
func (s *FunctionSet) CopyParametersFromArrays(params []*Array) error {
	ps := arrayPtrs(params)
	r := C.g_ch_function_set_copy_parameters_from_arrays(s.p, firstArr(ps), C.size_t(len(ps)))
	runtime.KeepAlive(s)
	runtime.KeepAlive(params)
	return errOf(r)
}

// ToCPU and ToGPU migrate every parameter and gradient.
func (s *FunctionSet) ToCPU() error {
	r := C.g_ch_function_set_to_cpu(s.p)
	runtime.KeepAlive(s)
	return errOf(r)
}

func (s *FunctionSet) ToGPU(dev Device) error {
	r := C.g_ch_function_set_to_gpu(s.p, dev.c())
	runtime.KeepAlive(s)
	return errOf(r)
}

func npzFlags(compressed bool) C.int32_t {
	if compressed {
		return C.CH_NPZ_COMPRESSED
	}
	return C.CH_NPZ_STORED
}

// SaveNPZ writes the parameters to an .npz keyed by their paths.
func (s *FunctionSet) SaveNPZ(path string, compressed bool) error {
	defer runtime.KeepAlive(s)
	return withCString(path, func(p *C.char) C.gres { return C.g_ch_function_set_save_npz(s.p, p, npzFlags(compressed)) })
}

// LoadNPZ reads the parameters (all checked before any is written).
func (s *FunctionSet) LoadNPZ(path string) error {
	defer runtime.KeepAlive(s)
	return withCString(path, func(p *C.char) C.gres { return C.g_ch_function_set_load_npz(s.p, p) })
}

func (s *FunctionSet) String() string {
	names, _ := s.MemberNames()
	return fmt.Sprintf("FunctionSet(%v)", names)
}

// SaveNPZArrays writes arrays to an .npz under keys.
func SaveNPZArrays(path string, keys []string, arrays []*Array, compressed bool) error {
	if len(keys) != len(arrays) {
		return NewError(ErrInvalidArgument, "%d keys for %d arrays", len(keys), len(arrays))
	}
	ck := make([]*C.char, len(keys))
	for i, k := range keys {
		ck[i] = C.CString(k)
		defer C.free(unsafe.Pointer(ck[i]))
	}
	ps := arrayPtrs(arrays)
	var kp **C.char
	if len(ck) > 0 {
		kp = &ck[0]
	}
	defer runtime.KeepAlive(arrays)
	return withCString(path, func(p *C.char) C.gres {
		return C.g_ch_serializers_save_npz_arrays(p, kp, firstArr(ps), C.size_t(len(ps)), npzFlags(compressed))
	})
}

// LoadNPZArray reads the entry key of an .npz.
func LoadNPZArray(path, key string) (*Array, error) {
	cp, ck := C.CString(path), C.CString(key)
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(ck))
	r := C.g_ch_serializers_load_npz_array(cp, ck)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// ReadIDX reads an IDX file (MNIST format, plain or .gz); floating dtypes
// are multiplied by scale (e.g. 1/255), Int32 (labels) needs scale 1.
func ReadIDX(path string, dtype Dtype, scale float64) (*Array, error) {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	r := C.g_ch_datasets_read_idx(cp, C.ch_dtype(dtype), C.double(scale))
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newArray(r.out), nil
}

// Retain returns another owned handle to the same set.
func (s *FunctionSet) Retain() *FunctionSet {
	p := C.ch_function_set_retain(s.p)
	runtime.KeepAlive(s)
	return newSet(unsafe.Pointer(p))
}
