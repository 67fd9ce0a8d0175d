package chainerc

/*
#include "capi_gen.h"
*/
import "C"

import (
	"runtime"
)

// Built-in differentiable functions (include/ch/functions.h). Each returns a
// new variable (an owned handle).

func out1(r C.gres, keep ...*Variable) (*Variable, error) {
	runtime.KeepAlive(keep)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newVariable(r.out), nil
}

// Add, Sub, Mul, Div: a op b with NumPy broadcasting.
func Add(a, b *Variable) (*Variable, error) { return out1(C.g_ch_functions_add(a.p, b.p), a, b) }
func Sub(a, b *Variable) (*Variable, error) { return out1(C.g_ch_functions_sub(a.p, b.p), a, b) }
func Mul(a, b *Variable) (*Variable, error) { return out1(C.g_ch_functions_mul(a.p, b.p), a, b) }
func Div(a, b *Variable) (*Variable, error) { return out1(C.g_ch_functions_div(a.p, b.p), a, b) }

// AddScalar x+s, SubScalar x-s, RSubScalar s-x, MulScalar x*s, DivScalar
// x/s, RDivScalar s/x, PowScalar x**p, RPowScalar s**x.
func AddScalar(x *Variable, s float64) (*Variable, error) {
	return out1(C.g_ch_functions_add_scalar(x.p, C.double(s)), x)
}
func SubScalar(x *Variable, s float64) (*Variable, error) {
	return out1(C.g_ch_functions_sub_scalar(x.p, C.double(s)), x)
}
func RSubScalar(x *Variable, s float64) (*Variable, error) {
	return out1(C.g_ch_functions_rsub_scalar(x.p, C.double(s)), x)
}
func MulScalar(x *Variable, s float64) (*Variable, error) {
	return out1(C.g_ch_functions_mul_scalar(x.p, C.double(s)), x)
}
func DivScalar(x *Variable, s float64) (*Variable, error) {
	return out1(C.g_ch_functions_div_scalar(x.p, C.double(s)), x)
}
func RDivScalar(x *Variable, s float64) (*Variable, error) {
	return out1(C.g_ch_functions_rdiv_scalar(x.p, C.double(s)), x)
}
func PowScalar(x *Variable, p float64) (*Variable, error) {
	return out1(C.g_ch_functions_pow_scalar(x.p, C.double(p)), x)
}
func RPowScalar(x *Variable, s float64) (*Variable, error) {
	return out1(C.g_ch_functions_rpow_scalar(x.p, C.double(s)), x)
}

// Neg -x, Exp e**x, Log ln x, Sum (0-d), Identity.
func Neg(x *Variable) (*Variable, error)      { return out1(C.g_ch_functions_neg(x.p), x) }
func Exp(x *Variable) (*Variable, error)      { return out1(C.g_ch_functions_exp(x.p), x) }
func Log(x *Variable) (*Variable, error)      { return out1(C.g_ch_functions_log(x.p), x) }
func Sum(x *Variable) (*Variable, error)      { return out1(C.g_ch_functions_sum(x.p), x) }
func Identity(x *Variable) (*Variable, error) { return out1(C.g_ch_functions_identity(x.p), x) }

// SumAxis sums along axis (negative counts from the end).
func SumAxis(x *Variable, axis int, keepdims bool) (*Variable, error) {
	k := C.int32_t(0)
	if keepdims {
		k = 1
	}
	return out1(C.g_ch_functions_sum_axis(x.p, C.int32_t(axis), k), x)
}

// Reshape to shape (one extent may be -1).
func Reshape(x *Variable, shape ...int64) (*Variable, error) {
	r := C.g_ch_functions_reshape(x.p, shapePtr(shape), C.int32_t(len(shape)))
	runtime.KeepAlive(shape)
	return out1(r, x)
}

// BroadcastTo shape by NumPy's rules.
func BroadcastTo(x *Variable, shape ...int64) (*Variable, error) {
	r := C.g_ch_functions_broadcast_to(x.p, shapePtr(shape), C.int32_t(len(shape)))
	runtime.KeepAlive(shape)
	return out1(r, x)
}
