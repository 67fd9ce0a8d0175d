package chainerc

/*
#include "capi_gen.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// The array functions of issue 42 whose Go signature is not the C one
// (Chainer 7's squeeze, repeat, tile, pad, stack, split_axis, get_item,
// scatter_add); the plain ones are in functions_gen.go.

func i32Ptr(v []int32) *C.int32_t {
	if len(v) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&v[0]))
}

// Squeeze removes axes of extent 1: all of them (no axes) or the listed ones.
func Squeeze(x *Variable, axes ...int32) (*Variable, error) {
	r := C.g_ch_functions_squeeze(x.p, i32Ptr(axes), C.int32_t(len(axes)))
	runtime.KeepAlive(axes)
	return out1(r, x)
}

// Repeat repeats each element along axis (NumPy's repeat): repeats is one
// count or one per element; axis nil repeats the flattened x.
func Repeat(x *Variable, repeats []int32, axis *int32) (*Variable, error) {
	var ap *C.int32_t
	n := 0
	if axis != nil {
		a := []int32{*axis}
		ap = i32Ptr(a)
		n = 1
		defer runtime.KeepAlive(a)
	}
	r := C.g_ch_functions_repeat(x.p, i32Ptr(repeats), C.int32_t(len(repeats)), ap, C.int32_t(n))
	runtime.KeepAlive(repeats)
	return out1(r, x)
}

// Tile repeats x reps[i] times along each axis (NumPy's tile).
func Tile(x *Variable, reps ...int32) (*Variable, error) {
	r := C.g_ch_functions_tile(x.p, i32Ptr(reps), C.int32_t(len(reps)))
	runtime.KeepAlive(reps)
	return out1(r, x)
}

// Pad pads x with constantValues (mode 'constant'): padWidth holds (before,
// after) per axis, or one pair for all, or one width.
func Pad(x *Variable, padWidth []int32, constantValues float64) (*Variable, error) {
	r := C.g_ch_functions_pad(x.p, i32Ptr(padWidth), C.int32_t(len(padWidth)), C.double(constantValues))
	runtime.KeepAlive(padWidth)
	return out1(r, x)
}

// Stack joins variables of one shape along a new axis (Chainer 7's stack).
func Stack(xs []*Variable, axis int) (*Variable, error) {
	ps := varPtrs(xs)
	r := C.g_ch_functions_stack(firstVar(ps), C.size_t(len(ps)), C.int32_t(axis))
	runtime.KeepAlive(xs)
	return out1(r)
}

func splitAxis(x *Variable, indices []int64, sections, axis int) ([]*Variable, error) {
	n := sections
	var ip *C.int64_t
	if indices != nil {
		n = len(indices) + 1
		if len(indices) > 0 {
			ip = (*C.int64_t)(unsafe.Pointer(&indices[0]))
		}
	}
	if n < 1 {
		n = 1
	}
	ps := make([]*C.ch_variable, n)
	r := C.g_ch_functions_split_axis(&ps[0], C.size_t(n), x.p, ip, C.int32_t(len(indices)),
		C.int32_t(sections), C.int32_t(axis))
	runtime.KeepAlive(x)
	runtime.KeepAlive(indices)
	if err := errOf(r); err != nil {
		return nil, err
	}
	out := make([]*Variable, n)
	for i, p := range ps {
		out[i] = newVariable(unsafe.Pointer(p))
	}
	return out, nil
}

// SplitAxis cuts x along axis into sections equal pieces (Chainer 7's split_axis).
func SplitAxis(x *Variable, sections, axis int) ([]*Variable, error) {
	return splitAxis(x, nil, sections, axis)
}

// SplitAxisAt cuts x along axis at the sorted positions indices.
func SplitAxisAt(x *Variable, indices []int64, axis int) ([]*Variable, error) {
	if indices == nil {
		indices = []int64{}
	}
	return splitAxis(x, indices, 0, axis)
}

// Index is one item of a GetItem / ScatterAdd key (NumPy's x[...]): build it
// with At, Slice, NewAxis, Ellipsis or IndexArray.
type Index struct {
	c   C.ch_index
	arr *Array
}

func newIndex(kind C.int32_t) Index {
	return Index{c: C.ch_index{version: C.CH_INDEX_VERSION, kind: kind, step: 1}}
}

// At is x[i] (negative counts from the end).
func At(i int64) Index {
	ix := newIndex(C.CH_INDEX_INT)
	ix.c.start = C.int64_t(i)
	return ix
}

// Slice is x[start:stop:step]; nil bounds are Python's None.
func Slice(start, stop *int64, step int64) Index {
	ix := newIndex(C.CH_INDEX_SLICE)
	if start != nil {
		ix.c.flags |= C.CH_INDEX_HAS_START
		ix.c.start = C.int64_t(*start)
	}
	if stop != nil {
		ix.c.flags |= C.CH_INDEX_HAS_STOP
		ix.c.stop = C.int64_t(*stop)
	}
	ix.c.step = C.int64_t(step)
	return ix
}

// NewAxis is None: a new axis of extent 1.
func NewAxis() Index { return newIndex(C.CH_INDEX_NEWAXIS) }

// Ellipsis is `...`.
func Ellipsis() Index { return newIndex(C.CH_INDEX_ELLIPSIS) }

// IndexArray is an int32 index array along one axis.
func IndexArray(a *Array) Index {
	ix := newIndex(C.CH_INDEX_ARRAY)
	ix.c.array = a.p
	ix.arr = a
	return ix
}

func keyItems(key []Index) ([]C.ch_index, *C.ch_index) {
	items := make([]C.ch_index, len(key))
	for i, k := range key {
		items[i] = k.c
	}
	if len(items) == 0 {
		return items, nil
	}
	return items, &items[0]
}

// GetItem is x[key] (Chainer 7's get_item).
func GetItem(x *Variable, key ...Index) (*Variable, error) {
	items, p := keyItems(key)
	r := C.g_ch_functions_get_item(x.p, p, C.int32_t(len(items)))
	runtime.KeepAlive(key)
	runtime.KeepAlive(items)
	return out1(r, x)
}

// ScatterAdd is a copy of a with b added at a[key] (Chainer 7's scatter_add).
func ScatterAdd(a *Variable, key []Index, b *Variable) (*Variable, error) {
	items, p := keyItems(key)
	r := C.g_ch_functions_scatter_add(a.p, p, C.int32_t(len(items)), b.p)
	runtime.KeepAlive(key)
	runtime.KeepAlive(items)
	return out1(r, a, b)
}
