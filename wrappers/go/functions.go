package chainerc

/*
#include "capi_gen.h"
*/
import "C"

import "runtime"

// Built-in differentiable functions (include/ch/functions.h). Each returns a
// new variable (an owned handle). The plain ones are generated from
// src/ops/manifest.py into functions_gen.go (scripts/gen_functions.py).

func out1(r C.gres, keep ...*Variable) (*Variable, error) {
	runtime.KeepAlive(keep)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return newVariable(r.out), nil
}

// Where returns x where condition is nonzero, else y, with NumPy broadcasting
// (Chainer's where; condition an int32 or float Array, not differentiated).
func Where(condition *Array, x, y *Variable) (*Variable, error) {
	r := C.g_ch_functions_where(condition.p, x.p, y.p)
	runtime.KeepAlive(condition)
	return out1(r, x, y)
}
