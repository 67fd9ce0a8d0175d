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
